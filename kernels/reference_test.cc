#include "kernels/reference.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

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

}  // namespace
}  // namespace moetune::kernels
