#include "kernels/reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace moetune::kernels {

double GemmCheckResult::RelativeErrorNorm() const {
  if (worst_ratio >= 1e300) return 1e300;
  if (exact_sq == 0) return error_sq == 0 ? 0.0 : 1e300;
  return std::sqrt(error_sq / exact_sq);
}

void GemmCheckResult::Merge(const GemmCheckResult& o) {
  checked += o.checked;
  bad += o.bad;
  error_sq += o.error_sq;
  exact_sq += o.exact_sq;
  if (o.worst_ratio > worst_ratio || worst.empty()) {
    worst_ratio = std::max(worst_ratio, o.worst_ratio);
    if (!o.worst.empty()) worst = o.worst;
  }
}

GemmCheckResult CheckGemmRows(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                              const float* a, int64_t lda, const float* b, int64_t ldb,
                              const float* c, int64_t ldc, const std::vector<int64_t>& rows,
                              const GemmTolerance& tolerance) {
  GemmCheckResult r;
  const double acc_term =
      tolerance.safety * std::sqrt(static_cast<double>(std::max<int64_t>(k, 1))) *
      tolerance.accumulate_unit_roundoff;
  for (int64_t i : rows) {
    if (i < 0 || i >= m) continue;
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, abs_sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = trans_a ? a[p * lda + i] : a[i * lda + p];
        const double bv = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        sum += av * bv;
        abs_sum += std::fabs(av * bv);
      }
      const double got = c[i * ldc + j];
      // The smallest normal float as a floor: an exact zero with zero inputs
      // must still be allowed to come out as zero (or a denormal).
      const double tol = std::max(tolerance.output_unit_roundoff * std::fabs(sum) + acc_term * abs_sum,
                                  1.17549435e-38);
      const double err = std::fabs(got - sum);
      ++r.checked;
      double ratio = err / tol;
      if (!std::isfinite(got) || !(ratio == ratio)) {
        ratio = 1e300;
      } else {
        r.error_sq += err * err;
      }
      r.exact_sq += sum * sum;
      if (ratio > 1) ++r.bad;
      if (ratio > r.worst_ratio || r.worst.empty()) {
        r.worst_ratio = std::max(r.worst_ratio, ratio);
        char buf[200];
        std::snprintf(buf, sizeof(buf), "row %lld col %lld: got %g, want %g (tolerance %.3g)",
                      static_cast<long long>(i), static_cast<long long>(j), got, sum, tol);
        r.worst = buf;
      }
    }
  }
  return r;
}

float RoundToBf16(float f) {
  if (std::isnan(f)) return f;
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

std::vector<int64_t> SampleRows(int64_t m, int count) {
  std::vector<int64_t> candidates = {0, m - 1, m / 2};
  for (int i = 1; i <= count; ++i) candidates.push_back(m * i / (count + 1));
  std::vector<int64_t> rows;
  for (int64_t r : candidates) {
    if (static_cast<int>(rows.size()) >= count) break;
    if (r >= 0 && r < m && std::find(rows.begin(), rows.end(), r) == rows.end()) rows.push_back(r);
  }
  return rows;
}

}  // namespace moetune::kernels

namespace moetune::kernels {

uint8_t FloatToE4M3(float v) {
  const uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  if (std::isnan(v)) return sign | 0x7F;
  const double a = std::fabs(static_cast<double>(v));
  if (a >= kE4M3MaxFinite) return sign | 0x7E;  // saturate (also +-inf)
  // Subnormal range [0, 2^-6): a = m * 2^-9. m == 8 rounds up into the
  // smallest normal, whose code 0x08 (exponent field 1, mantissa 0) is 8.
  if (a < std::ldexp(1.0, -6)) {
    return sign | static_cast<uint8_t>(std::nearbyint(std::ldexp(a, 9)));
  }
  // Normal: a = s * 2^e, s in [1, 2); mantissa = (s - 1) * 8 rounded to even.
  int exp2 = 0;
  const double f = std::frexp(a, &exp2);  // a = f * 2^exp2, f in [0.5, 1)
  int e = exp2 - 1;
  int mant = static_cast<int>(std::nearbyint((2.0 * f - 1.0) * 8.0));
  if (mant == 8) {  // rounded up to the next power of two
    mant = 0;
    ++e;
  }
  // a < 448 keeps e <= 8 and, at e = 8, mant <= 6: the NaN code
  // (e = 8, mant = 7, "480") is never produced.
  return sign | static_cast<uint8_t>(((e + 7) << 3) | mant);
}

float E4M3ToFloat(uint8_t bits) {
  const bool negative = (bits & 0x80) != 0;
  const int exp_field = (bits >> 3) & 0xF;
  const int mant = bits & 0x7;
  if (exp_field == 0xF && mant == 0x7) return std::numeric_limits<float>::quiet_NaN();
  const double magnitude = exp_field == 0 ? std::ldexp(mant, -9)
                                          : std::ldexp(1.0 + mant / 8.0, exp_field - 7);
  return static_cast<float>(negative ? -magnitude : magnitude);
}

double Ue8m0ToDouble(uint8_t bits) {
  if (bits == kUe8m0NaN) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, static_cast<int>(bits) - 127);
}

uint8_t MxScaleForAmax(float amax) {
  if (!std::isfinite(amax)) return kUe8m0NaN;
  if (amax == 0.0f) return kUe8m0One;
  // r = amax / 448 is exact enough in double: it is a power of two exactly
  // when amax = 448 * 2^k, and strictly above one when amax is above it.
  const double r = std::fabs(static_cast<double>(amax)) / kE4M3MaxFinite;
  int exp2 = 0;
  const double f = std::frexp(r, &exp2);        // r = f * 2^exp2, f in [0.5, 1)
  const int e = f == 0.5 ? exp2 - 1 : exp2;     // ceil(log2(r))
  return static_cast<uint8_t>(std::clamp(e, -127, 127) + 127);
}

double MxMatrix::Value(int64_t r, int64_t c) const {
  const uint8_t scale = scales[r * BlocksPerRow() + c / kMxBlockElems];
  return static_cast<double>(E4M3ToFloat(elements[r * cols + c])) * Ue8m0ToDouble(scale);
}

MxMatrix QuantizeMx(const float* values, int64_t rows, int64_t cols, int64_t row_stride,
                    int64_t col_stride) {
  MxMatrix q;
  q.rows = rows;
  q.cols = cols;
  q.elements.resize(static_cast<size_t>(rows * cols));
  q.scales.resize(static_cast<size_t>(rows * q.BlocksPerRow()));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < q.BlocksPerRow(); ++b) {
      const int64_t c0 = b * kMxBlockElems, c1 = std::min(cols, c0 + kMxBlockElems);
      auto at = [&](int64_t c) { return values[r * row_stride + c * col_stride]; };
      float amax = 0.0f;
      bool finite = true;
      for (int64_t c = c0; c < c1; ++c) {
        finite = finite && std::isfinite(at(c));
        amax = std::max(amax, std::fabs(at(c)));
      }
      const uint8_t scale = finite ? MxScaleForAmax(amax) : kUe8m0NaN;
      q.scales[r * q.BlocksPerRow() + b] = scale;
      for (int64_t c = c0; c < c1; ++c) {
        // Dividing by a power of two is exact in double (no float underflow).
        q.elements[r * cols + c] =
            finite ? FloatToE4M3(static_cast<float>(at(c) / Ue8m0ToDouble(scale)))
                   : static_cast<uint8_t>(std::signbit(at(c)) ? 0xFF : 0x7F);
      }
    }
  }
  return q;
}

void DequantizeMx(const MxMatrix& q, float* out, int64_t row_stride, int64_t col_stride) {
  for (int64_t r = 0; r < q.rows; ++r) {
    for (int64_t c = 0; c < q.cols; ++c) {
      out[r * row_stride + c * col_stride] = static_cast<float>(q.Value(r, c));
    }
  }
}

std::vector<double> MxGemm(const MxMatrix& a, const MxMatrix& b) {
  if (a.cols != b.cols) return {};
  std::vector<double> c(static_cast<size_t>(a.rows * b.rows), 0.0);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t j = 0; j < b.rows; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < a.cols; ++k) sum += a.Value(i, k) * b.Value(j, k);
      c[i * b.rows + j] = sum;
    }
  }
  return c;
}

}  // namespace moetune::kernels
