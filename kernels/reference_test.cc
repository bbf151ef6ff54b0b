#include "kernels/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "kernels/random.h"

namespace moetune::kernels {
namespace {

// A = [[1, 2], [3, 4]], B = [[5, 6], [7, 8]]: A*B = [[19, 22], [43, 50]].
const float kA[] = {1, 2, 3, 4};
const float kB[] = {5, 6, 7, 8};

TEST(CheckGemmRows, ExactProductHasZeroError) {
  const float c[] = {19, 22, 43, 50};
  EXPECT_EQ(CheckGemmRows(false, false, 2, 2, 2, kA, 2, kB, 2, c, 2, {0, 1}, nullptr), 0.0);
}

TEST(CheckGemmRows, TransposesFollowBlasConvention) {
  // A^T * B = [[1*5+3*7, 1*6+3*8], [2*5+4*7, 2*6+4*8]] = [[26, 30], [38, 44]].
  const float c[] = {26, 30, 38, 44};
  EXPECT_EQ(CheckGemmRows(true, false, 2, 2, 2, kA, 2, kB, 2, c, 2, {0, 1}, nullptr), 0.0);
  // A * B^T = [[1*5+2*6, 1*7+2*8], [3*5+4*6, 3*7+4*8]] = [[17, 23], [39, 53]].
  const float d[] = {17, 23, 39, 53};
  EXPECT_EQ(CheckGemmRows(false, true, 2, 2, 2, kA, 2, kB, 2, d, 2, {0, 1}, nullptr), 0.0);
}

TEST(CheckGemmRows, ErrorIsRelativeToAbsoluteProductSum) {
  // Element (1,1): 51 instead of 50; scale 3*6 + 4*8 = 50, error 1/50.
  const float c[] = {19, 22, 43, 51};
  std::string worst;
  EXPECT_DOUBLE_EQ(CheckGemmRows(false, false, 2, 2, 2, kA, 2, kB, 2, c, 2, {0, 1}, &worst), 0.02);
  EXPECT_EQ(worst, "row 1 col 1: got 51, want 50");
}

TEST(CheckGemmRows, NanIsWrong) {
  const float c[] = {19, std::numeric_limits<float>::quiet_NaN(), 43, 50};
  EXPECT_GT(CheckGemmRows(false, false, 2, 2, 2, kA, 2, kB, 2, c, 2, {0}, nullptr), 1e100);
}

TEST(SampleRows, FirstLastMiddleDistinctAndBounded) {
  EXPECT_EQ(SampleRows(1, 4), (std::vector<int64_t>{0}));
  EXPECT_EQ(SampleRows(100, 4), (std::vector<int64_t>{0, 99, 50, 20}));
  EXPECT_TRUE(SampleRows(0, 4).empty());
}

// ---------------------------------------------------------------------------
// MX quantization. E4M3 codes: sign | exponent field (bias 7) << 3 | mantissa.

TEST(FloatToE4M3, EncodesExactValues) {
  EXPECT_EQ(FloatToE4M3(0.0f), 0x00);
  EXPECT_EQ(FloatToE4M3(-0.0f), 0x80);
  EXPECT_EQ(FloatToE4M3(1.0f), 0x38);     // exponent field 7, mantissa 0
  EXPECT_EQ(FloatToE4M3(0.75f), 0x34);    // 1.5 * 2^-1: field 6, mantissa 4
  EXPECT_EQ(FloatToE4M3(-2.0f), 0xC0);    // sign | field 8
  EXPECT_EQ(FloatToE4M3(448.0f), 0x7E);   // 1.75 * 2^8, the largest finite
  EXPECT_EQ(FloatToE4M3(0.015625f), 0x08);              // 2^-6, smallest normal
  EXPECT_EQ(FloatToE4M3(std::ldexp(1.0f, -9)), 0x01);   // smallest subnormal
}

TEST(FloatToE4M3, RoundsToNearestTiesToEven) {
  // 1.0625 is halfway between 1.0 (mantissa 0) and 1.125 (1): to even, 1.0.
  EXPECT_EQ(FloatToE4M3(1.0625f), 0x38);
  // 1.1875 is halfway between 1.125 (1) and 1.25 (2): to even, 1.25.
  EXPECT_EQ(FloatToE4M3(1.1875f), 0x3A);
  EXPECT_EQ(FloatToE4M3(1.3125f), 0x3A);  // between 1.25 (2) and 1.375 (3): 1.25
  EXPECT_EQ(FloatToE4M3(1.07f), 0x39);    // nearer 1.125
  // Subnormals: 2^-10 is halfway between 0 and 2^-9 -> 0; 3 * 2^-10 -> 2 * 2^-9.
  EXPECT_EQ(FloatToE4M3(std::ldexp(1.0f, -10)), 0x00);
  EXPECT_EQ(FloatToE4M3(3 * std::ldexp(1.0f, -10)), 0x02);
  // 7.75 * 2^-9 rounds up out of the subnormals into 2^-6.
  EXPECT_EQ(FloatToE4M3(7.75f * std::ldexp(1.0f, -9)), 0x08);
}

TEST(FloatToE4M3, SaturatesAndKeepsNaN) {
  EXPECT_EQ(FloatToE4M3(460.0f), 0x7E);
  EXPECT_EQ(FloatToE4M3(1e9f), 0x7E);
  EXPECT_EQ(FloatToE4M3(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(FloatToE4M3(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(FloatToE4M3(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_TRUE(std::isnan(E4M3ToFloat(0x7F)));
  EXPECT_TRUE(std::isnan(E4M3ToFloat(0xFF)));
}

TEST(E4M3ToFloat, EveryFiniteCodeRoundTrips) {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F) continue;  // NaN
    EXPECT_EQ(FloatToE4M3(E4M3ToFloat(static_cast<uint8_t>(code))), code) << code;
  }
  EXPECT_EQ(E4M3ToFloat(0x7E), 448.0f);
  EXPECT_EQ(E4M3ToFloat(0x01), std::ldexp(1.0f, -9));
}

TEST(MxScaleForAmax, IsTheSmallestPowerOfTwoThatFitsIn448) {
  EXPECT_EQ(MxScaleForAmax(448.0f), 127);         // 2^0
  EXPECT_EQ(MxScaleForAmax(448.0f * 32), 132);    // 448 * 2^5 -> 2^5
  EXPECT_EQ(MxScaleForAmax(448.0f / 8), 124);     // 448 * 2^-3 -> 2^-3
  EXPECT_EQ(MxScaleForAmax(449.0f), 128);         // just above 448: 2^1
  // 1.0: 448 * 2^-8 = 1.75 >= 1 > 448 * 2^-9 = 0.875 -> 2^-8.
  EXPECT_EQ(MxScaleForAmax(1.0f), 127 - 8);
  EXPECT_EQ(MxScaleForAmax(-1.0f), 127 - 8);
  // FLT_MAX ~ 2^128: 2^128 / 448 ~ 2^119.2 -> 2^120.
  EXPECT_EQ(MxScaleForAmax(std::numeric_limits<float>::max()), 127 + 120);
  EXPECT_EQ(MxScaleForAmax(1e-40f), 0);           // 2^-141.7 clamps to 2^-127
  EXPECT_EQ(MxScaleForAmax(0.0f), kUe8m0One);     // zero block: 2^0
  EXPECT_EQ(MxScaleForAmax(std::numeric_limits<float>::infinity()), kUe8m0NaN);
  EXPECT_EQ(MxScaleForAmax(std::numeric_limits<float>::quiet_NaN()), kUe8m0NaN);
  EXPECT_EQ(Ue8m0ToDouble(127 + 5), 32.0);
  EXPECT_EQ(Ue8m0ToDouble(0), std::ldexp(1.0, -127));
  EXPECT_TRUE(std::isnan(Ue8m0ToDouble(kUe8m0NaN)));
}

TEST(QuantizeMx, OneBlockScaleAndRounding) {
  // amax 1792 = 448 * 4 -> scale 2^2 (code 129); elements are v / 4.
  std::vector<float> v(32, 0.0f);
  v[0] = 1792.0f;   // 448    -> 0x7E
  v[1] = 3.0f;      // 0.75   -> 0x34, exact
  v[2] = 4.5f;      // 1.125  -> 0x39, exact
  v[3] = 4.25f;     // 1.0625 -> ties to even 1.0 -> dequantizes to 4.0
  v[4] = -1792.0f;  // -448   -> 0xFE
  const MxMatrix q = QuantizeMx(v.data(), 1, 32, 32, 1);
  ASSERT_EQ(q.scales.size(), 1u);
  EXPECT_EQ(q.scales[0], 129);
  EXPECT_EQ(q.elements[0], 0x7E);
  EXPECT_EQ(q.elements[1], 0x34);
  EXPECT_EQ(q.elements[2], 0x39);
  EXPECT_EQ(q.elements[3], 0x38);
  EXPECT_EQ(q.elements[4], 0xFE);
  EXPECT_EQ(q.elements[31], 0x00);
  EXPECT_EQ(q.Value(0, 0), 1792.0);
  EXPECT_EQ(q.Value(0, 1), 3.0);
  EXPECT_EQ(q.Value(0, 3), 4.0);
  EXPECT_EQ(q.Value(0, 4), -1792.0);
}

TEST(QuantizeMx, ShortLastBlockHasItsOwnScale) {
  // 40 columns: block 0 = 32 ones (scale 2^-8, element 256 = 0x78), block 1 =
  // 8 twos (2 / 448 -> 2^-7, element 256 again).
  std::vector<float> v(40, 1.0f);
  for (int c = 32; c < 40; ++c) v[c] = 2.0f;
  const MxMatrix q = QuantizeMx(v.data(), 1, 40, 40, 1);
  EXPECT_EQ(q.BlocksPerRow(), 2);
  EXPECT_EQ(q.scales, (std::vector<uint8_t>{127 - 8, 127 - 7}));
  EXPECT_EQ(q.elements[0], 0x78);
  EXPECT_EQ(q.elements[39], 0x78);
  EXPECT_EQ(q.Value(0, 39), 2.0);
}

TEST(QuantizeMx, ZeroBlockIsExact) {
  const std::vector<float> v(32, 0.0f);
  const MxMatrix q = QuantizeMx(v.data(), 1, 32, 32, 1);
  EXPECT_EQ(q.scales[0], kUe8m0One);
  for (int c = 0; c < 32; ++c) EXPECT_EQ(q.Value(0, c), 0.0);
}

TEST(QuantizeMx, NonFiniteInputPoisonsOnlyItsBlock) {
  std::vector<float> v(64, 1.0f);
  v[5] = std::numeric_limits<float>::quiet_NaN();
  v[40] = -std::numeric_limits<float>::infinity();
  const MxMatrix q = QuantizeMx(v.data(), 2, 32, 32, 1);  // rows: cols 0..31, 32..63
  EXPECT_EQ(q.scales[0], kUe8m0NaN);
  EXPECT_EQ(q.scales[1], kUe8m0NaN);
  for (int c = 0; c < 32; ++c) {
    EXPECT_TRUE(std::isnan(q.Value(0, c))) << c;
    EXPECT_TRUE(std::isnan(q.Value(1, c))) << c;
  }
  EXPECT_EQ(q.elements[40], 0xFF);  // the negative infinity: E4M3 NaN, sign kept
  v[5] = 1.0f;                      // a finite row next to a poisoned one
  const MxMatrix r = QuantizeMx(v.data(), 1, 64, 64, 1);
  EXPECT_EQ(r.scales[0], 127 - 8);
  EXPECT_EQ(r.scales[1], kUe8m0NaN);
  EXPECT_EQ(r.Value(0, 5), 1.0);
}

TEST(QuantizeMx, StridesChooseTheBlockedAxis) {
  // Row-major 2 x 3 [[1, 2, 3], [4, 5, 6]], quantized along its columns:
  // rows of the MX matrix are the 3 columns (row_stride 1), each of length 2
  // (col_stride 3): column 0 = {1, 4}, amax 4 -> 2^-6, elements 64 and 256.
  const float v[] = {1, 2, 3, 4, 5, 6};
  const MxMatrix q = QuantizeMx(v, 3, 2, 1, 3);
  const float t[] = {1, 4, 2, 5, 3, 6};  // the transpose, row-major
  const MxMatrix qt = QuantizeMx(t, 3, 2, 2, 1);
  EXPECT_EQ(q.elements, qt.elements);
  EXPECT_EQ(q.scales, qt.scales);
  EXPECT_EQ(q.scales[0], 127 - 6);
  float back[6] = {};
  DequantizeMx(q, back, 1, 3);  // small integers are exact in E4M3
  for (int i = 0; i < 6; ++i) EXPECT_EQ(back[i], v[i]) << i;
}

TEST(QuantizeMx, ElementErrorIsHalfAnE4M3Ulp) {
  // Normal elements carry 3 mantissa bits: |error| <= 2^-4 |v|. Elements in
  // the subnormal range (|v / X| < 2^-6) are off by at most half their step,
  // 2^-10 * X.
  const std::vector<float> v = UniformValues(7, 32 * 64);
  const MxMatrix q = QuantizeMx(v.data(), 64, 32, 32, 1);
  for (int64_t r = 0; r < 64; ++r) {
    const double x = Ue8m0ToDouble(q.scales[r]);
    for (int64_t c = 0; c < 32; ++c) {
      const double err = std::fabs(q.Value(r, c) - v[r * 32 + c]);
      EXPECT_LE(err, std::max(std::ldexp(std::fabs(double{v[r * 32 + c]}), -4), std::ldexp(x, -10)));
    }
  }
}

TEST(MxGemm, MultipliesDequantizedValues) {
  // a row 0: 32 ones; row 1: 1792 and 4.25 (dequantized 4.0, see above).
  // b: 32 twos. C = [[32 * 2], [(1792 + 4) * 2]] = [[64], [3592]] (the
  // unquantized product would be 3592.5).
  std::vector<float> a(64, 0.0f), b(32, 2.0f);
  for (int c = 0; c < 32; ++c) a[c] = 1.0f;
  a[32] = 1792.0f;
  a[33] = 4.25f;
  const MxMatrix qa = QuantizeMx(a.data(), 2, 32, 32, 1), qb = QuantizeMx(b.data(), 1, 32, 32, 1);
  EXPECT_EQ(MxGemm(qa, qb), (std::vector<double>{64.0, 3592.0}));
  const MxMatrix short_b = QuantizeMx(b.data(), 1, 16, 16, 1);
  EXPECT_TRUE(MxGemm(qa, short_b).empty());
}

}  // namespace
}  // namespace moetune::kernels
