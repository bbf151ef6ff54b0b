#include "planner/precision.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace moetune::planner {
namespace {

using ::moetune::testing::StatusIs;
using ::testing::HasSubstr;

TEST(PrecisionTest, RoundTripsEveryName) {
  for (Precision p : {Precision::kBf16, Precision::kFp8, Precision::kMxfp8,
                      Precision::kNvfp4}) {
    absl::StatusOr<Precision> parsed = ParsePrecision(PrecisionName(p));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, p);
  }
  EXPECT_EQ(*ParsePrecision("MXFP8"), Precision::kMxfp8);
}

TEST(PrecisionTest, UnknownNameNamesTheValue) {
  EXPECT_THAT(ParsePrecision("fp16"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'fp16'")));
}

TEST(PrecisionTest, OperandBytes) {
  // BF16 2 bytes; FP8 1; MXFP8 1 + 1/32 scale byte; NVFP4 1/2 + 1/16.
  EXPECT_EQ(GemmOperandBytes(Precision::kBf16), 2.0);
  EXPECT_EQ(GemmOperandBytes(Precision::kFp8), 1.0);
  EXPECT_EQ(GemmOperandBytes(Precision::kMxfp8), 1.03125);
  EXPECT_EQ(GemmOperandBytes(Precision::kNvfp4), 0.5625);
}

TEST(PrecisionTest, TpCommOverlapHasNoNvfp4Path) {
  // Transformer Engine's userbuffers all-gather takes FP8 and MXFP8
  // quantizers (and BF16 tensors), not NVFP4 ones.
  EXPECT_TRUE(TpCommOverlapSupports(Precision::kBf16));
  EXPECT_TRUE(TpCommOverlapSupports(Precision::kFp8));
  EXPECT_TRUE(TpCommOverlapSupports(Precision::kMxfp8));
  EXPECT_FALSE(TpCommOverlapSupports(Precision::kNvfp4));
}

}  // namespace
}  // namespace moetune::planner
