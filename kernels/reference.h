// Reference checks shared by the CPU twins and tools/gpu_check (std-only):
// a sampled double-precision GEMM check, and the MX (OCP microscaling)
// quantization that the mxfp8 probes use (FP8 E4M3 elements, one UE8M0
// power-of-two scale per 32 consecutive elements along the reduction axis).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moetune::kernels {

// How far a correct GEMM may be from the exact product, element by element.
// For C = sum_k a_k b_k over K terms, accumulated in a type of unit roundoff
// u_acc and stored in one of unit roundoff u_out:
//   |got - exact| <= u_out |exact| + safety * sqrt(K) * u_acc * sum_k |a_k b_k|
// The first term is the rounding of the stored output; the second is the
// accumulation error with the probabilistic sqrt(K) growth of rounding errors
// (Higham & Mary, "A new approach to probabilistic rounding error analysis",
// 2019) instead of the worst case K, with a safety factor for tensor cores'
// truncating adders and blocked accumulation orders. The inputs are exactly
// the values the GEMM multiplied (already rounded to the input type), so input
// quantization is not part of the error.
struct GemmTolerance {
  double output_unit_roundoff = 0x1p-24;      // fp32 2^-24, fp16 2^-11, bf16 2^-8
  double accumulate_unit_roundoff = 0x1p-24;  // fp32 accumulation
  double safety = 8;
};
// Unit roundoff of a stored element type: 2^-p for p significand bits (fp32
// 24, fp16 11, bf16 8).
inline constexpr double kFp32UnitRoundoff = 0x1p-24;
inline constexpr double kFp16UnitRoundoff = 0x1p-11;
inline constexpr double kBf16UnitRoundoff = 0x1p-8;

// What a check found. Fails when any checked element is outside its
// tolerance; NaN and infinities always are.
struct GemmCheckResult {
  int64_t checked = 0;
  int64_t bad = 0;            // elements outside their tolerance
  double error_sq = 0;        // sum (got - exact)^2 over the checked elements
  double exact_sq = 0;        // sum exact^2
  double worst_ratio = 0;     // max |got - exact| / tolerance (> 1: outside; NaN: 1e300)
  std::string worst;          // "row 3 col 7: got nan, want 0.25 (tolerance 0.001)"
  bool ok() const { return bad == 0; }
  // ||got - exact||_2 / ||exact||_2 over the checked elements (1e300 when an
  // element was NaN or infinite).
  double RelativeErrorNorm() const;
  // Adds another check's counts (several GEMMs of one measurement).
  void Merge(const GemmCheckResult& other);
};

// Row-major C[m,n] = op(A) * op(B), op(A) [m,k], op(B) [k,n]; A is [m,k]
// (lda) or, transposed, [k,m]; B is [k,n] (ldb) or, transposed, [n,k].
// Checks every column of the listed rows of C against the product computed
// in double precision.
GemmCheckResult CheckGemmRows(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                              const float* a, int64_t lda, const float* b, int64_t ldb,
                              const float* c, int64_t ldc, const std::vector<int64_t>& rows,
                              const GemmTolerance& tolerance);

// f rounded to the nearest bf16 (ties to even), as a float; NaN stays NaN.
float RoundToBf16(float f);

// Up to `count` distinct rows of [0, m) to check: first, last, middle and
// evenly spaced ones.
std::vector<int64_t> SampleRows(int64_t m, int count);

// ---------------------------------------------------------------------------
// MX quantization (MXFP8 with E4M3 elements).
//
// FP8 E4M3 ("fn" variant of the OCP 8-bit formats): 1 sign, 4 exponent bits
// (bias 7), 3 mantissa bits; no infinities; S.1111.111 is NaN; largest finite
// 448 = 1.75 * 2^8; smallest normal 2^-6; subnormals m * 2^-9, m = 1..7.
// UE8M0: an unsigned 8-bit biased exponent, value 2^(bits - 127) for bits
// 0..254 (2^-127 .. 2^127), 255 is NaN; there is no zero.
inline constexpr int64_t kMxBlockElems = 32;
inline constexpr float kE4M3MaxFinite = 448.0f;
inline constexpr uint8_t kUe8m0One = 127;   // 2^0
inline constexpr uint8_t kUe8m0NaN = 255;

// Round to nearest, ties to even, saturating: |v| > 448 (and +-inf) give
// +-448, NaN gives 0x7F (0xFF when the sign bit is set).
uint8_t FloatToE4M3(float v);
float E4M3ToFloat(uint8_t bits);  // exact; NaN for 0x7F / 0xFF
double Ue8m0ToDouble(uint8_t bits);  // 2^(bits - 127); NaN for 255

// The scale of a block whose largest magnitude is `amax`: the smallest power
// of two X with amax / X <= 448, i.e. X = 2^ceil(log2(amax / 448)), so no
// element saturates (the round-up rule NVIDIA's MXFP8 recipe uses; the OCP
// MX v1.0 example rule 2^(floor(log2 amax) - 8) agrees when amax is 448 * 2^k
// and otherwise picks half this scale and saturates the largest elements).
// Clamped below at 2^-127 (bits 0). A zero block gets 2^0 (any scale encodes
// zeros exactly). NaN or +-inf amax gives the NaN scale (255).
uint8_t MxScaleForAmax(float amax);

// A rows x cols matrix quantized in blocks of kMxBlockElems consecutive
// columns of each row (the last block of a row is shorter when cols is not a
// multiple of 32). Element (r, c) is stored at elements[r * cols + c]; the
// scale of block b of row r at scales[r * BlocksPerRow() + b].
struct MxMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> elements;  // E4M3 codes
  std::vector<uint8_t> scales;    // UE8M0 codes
  int64_t BlocksPerRow() const { return (cols + kMxBlockElems - 1) / kMxBlockElems; }
  // Dequantized value E4M3ToFloat(element) * 2^(scale - 127), in double (a
  // value rounded up past FLT_MAX stays finite here).
  double Value(int64_t r, int64_t c) const;
};

// Quantizes the matrix whose element (r, c) is values[r * row_stride + c *
// col_stride]: the strides pick the axis the blocks run along (col_stride 1:
// along rows of a row-major array; row_stride 1, col_stride ld: along its
// columns). Each block: X = MxScaleForAmax(max |v|), element = FloatToE4M3(v / X).
// NaN / inf handling: a block holding a NaN or an infinity gets the NaN scale
// and every element of it is stored as E4M3 NaN, so the whole block
// dequantizes to NaN: a non-finite input is propagated, never hidden.
MxMatrix QuantizeMx(const float* values, int64_t rows, int64_t cols, int64_t row_stride,
                    int64_t col_stride);

// Writes Value(r, c) (as float; a value past FLT_MAX becomes inf) to
// out[r * row_stride + c * col_stride].
void DequantizeMx(const MxMatrix& q, float* out, int64_t row_stride, int64_t col_stride);

// C[i, j] = sum_k a.Value(i, k) * b.Value(j, k) in double, row-major [a.rows,
// b.rows]: the GEMM on dequantized values, with both operands quantized along
// the reduction axis k (a.cols == b.cols), as block-scaled tensor cores see
// them (cuBLASLt's "TN" form). Empty when a.cols != b.cols.
std::vector<double> MxGemm(const MxMatrix& a, const MxMatrix& b);

}  // namespace moetune::kernels
