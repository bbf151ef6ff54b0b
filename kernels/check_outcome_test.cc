#include "kernels/check_outcome.h"

#include "gtest/gtest.h"

namespace moetune::kernels {
namespace {

GroupedGemmParams Gemm(DType dtype) {
  GroupedGemmParams g;
  g.dtype = dtype;
  return g;
}

TEST(ClassifyProbeStatus, NoAlgorithmOnASupportedDeviceIsAFailureNotASkip) {
  // What LtMatmul::Create answers when cuBLASLt's heuristic has nothing.
  const ProbeStatus no_algo = Unimplemented("cublasLtMatmulAlgoGetHeuristic: no algorithm for m=2048 n=17 k=7168");
  EXPECT_EQ(ClassifyProbeStatus(no_algo, Gemm(DType::kBf16), 90), CheckOutcome::kFailed);
  EXPECT_EQ(ClassifyProbeStatus(no_algo, Gemm(DType::kFp8E4M3), 90), CheckOutcome::kFailed);
  EXPECT_EQ(ClassifyProbeStatus(no_algo, Gemm(DType::kMxfp8), 100), CheckOutcome::kFailed);
  EXPECT_EQ(CheckExitCode(0, 1), 1);
}

TEST(ClassifyProbeStatus, MissingCapabilityIsASkip) {
  const ProbeStatus cc = Unimplemented("grouped_gemm (cuda): mxfp8 needs ... compute capability 9.0");
  EXPECT_EQ(ClassifyProbeStatus(cc, Gemm(DType::kMxfp8), 90), CheckOutcome::kSkipped);
  EXPECT_EQ(ClassifyProbeStatus(cc, Gemm(DType::kFp8E4M3), 80), CheckOutcome::kSkipped);
  EXPECT_EQ(CheckExitCode(0, 0), 0);
}

TEST(ClassifyProbeStatus, WrongAndOtherErrors) {
  EXPECT_EQ(ClassifyProbeStatus(ProbeStatus::Ok(), Gemm(DType::kBf16), 90), CheckOutcome::kOk);
  EXPECT_EQ(ClassifyProbeStatus(DataLoss("got 1, want 2"), Gemm(DType::kBf16), 90), CheckOutcome::kWrong);
  EXPECT_EQ(ClassifyProbeStatus(Internal("cudaMalloc"), Gemm(DType::kBf16), 90), CheckOutcome::kFailed);
  EXPECT_EQ(ClassifyProbeStatus(Unimplemented("x"), CollectiveParams{}, 90), CheckOutcome::kFailed);
  EXPECT_STREQ(CheckOutcomeName(CheckOutcome::kSkipped), "SKIPPED");
}

}  // namespace
}  // namespace moetune::kernels
