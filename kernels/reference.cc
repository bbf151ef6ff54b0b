#include "kernels/reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace moetune::kernels {

double CheckGemmRows(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                     int64_t lda, const float* b, int64_t ldb, const float* c, int64_t ldc,
                     const std::vector<int64_t>& rows, std::string* worst) {
  double max_err = 0;
  for (int64_t i : rows) {
    if (i < 0 || i >= m) continue;
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, scale = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = trans_a ? a[p * lda + i] : a[i * lda + p];
        const double bv = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        sum += av * bv;
        scale += std::fabs(av * bv);
      }
      const double got = c[i * ldc + j];
      double err = std::fabs(got - sum) / std::max(scale, 1e-30);
      if (!(err == err) || std::isinf(got)) err = 1e300;
      if (err > max_err) {
        max_err = err;
        if (worst != nullptr) {
          char buf[160];
          std::snprintf(buf, sizeof(buf), "row %lld col %lld: got %g, want %g",
                        static_cast<long long>(i), static_cast<long long>(j), got, sum);
          *worst = buf;
        }
      }
    }
  }
  return max_err;
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
