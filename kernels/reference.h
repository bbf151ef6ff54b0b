// Reference checks shared by the CPU twins and tools/gpu_check (std-only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moetune::kernels {

// Row-major C[m,n] = op(A) * op(B), op(A) [m,k], op(B) [k,n]; A is [m,k]
// (lda) or, transposed, [k,m]; B is [k,n] (ldb) or, transposed, [n,k].
// Checks the listed rows of C in double precision and returns the largest
// error relative to sum_k |a_ik b_kj| (NaN counts as 1e300); *worst describes
// the worst element ("row 3 col 7: got nan, want 0.25").
double CheckGemmRows(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                     int64_t lda, const float* b, int64_t ldb, const float* c, int64_t ldc,
                     const std::vector<int64_t>& rows, std::string* worst);

// Up to `count` distinct rows of [0, m) to check: first, last, middle and
// evenly spaced ones.
std::vector<int64_t> SampleRows(int64_t m, int count);

}  // namespace moetune::kernels
