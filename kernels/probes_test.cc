#include "kernels/probes.h"

#include <iostream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cuda/cuda_probes.h"
#include "testing/status_matchers.h"

namespace moetune::kernels {
namespace {

using ::moetune::testing::StatusIs;
using ::testing::AnyOf;
using ::testing::HasSubstr;

TEST(RunProbe, CpuGroupedGemmReturnsResultWithProvenance) {
  GroupedGemmParams p;
  p.num_experts = 2;
  p.total_tokens = 64;
  p.hidden = 32;
  p.ffn_hidden = 16;
  p.timing.timed_iters = 2;
  ProbeRequest req;
  req.params = p;
  absl::StatusOr<ProbeResult> r = RunProbe(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->provenance.schema_version, kProbeResultSchemaVersion);
  EXPECT_THAT(r->params_json, HasSubstr("\"expert_tokens\":[32,32]"));
  EXPECT_EQ(r->measurements.size(), 9u);
}

TEST(RunProbe, InvalidParamsAreInvalidArgumentOnEveryBackend) {
  for (Backend b : {Backend::kCpu, Backend::kCuda}) {
    DispatchCombineParams p;
    p.num_experts = 0;
    ProbeRequest req;
    req.backend = b;
    req.params = p;
    EXPECT_THAT(RunProbe(req), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("num_experts must be > 0, got 0")));
  }
}

// This machine has no GPU: with the toolkit the CUDA backend must answer
// Unavailable naming cudaGetDeviceCount, without it Unimplemented. Where a GPU
// is present the probe runs for real instead.
TEST(RunProbe, CudaBackendWithoutGpuIsUnavailableOrUnimplemented) {
  int devices = 0;
  const ProbeStatus count = cuda::CudaDeviceCount(&devices);
  if (count.ok() && devices > 0) GTEST_SKIP() << devices << " CUDA device(s) present";
  GroupedGemmParams p;
  p.total_tokens = 64;
  p.hidden = 32;
  p.ffn_hidden = 32;
  ProbeRequest req;
  req.backend = Backend::kCuda;
  req.params = p;
  const auto r = RunProbe(req);
  std::cout << "cuda backend answered: " << r.status() << "\n";
  EXPECT_THAT(r, AnyOf(StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no CUDA device: cudaGetDeviceCount")),
                       StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("built without the CUDA toolkit"))));
  // Every probe kind, not only GEMM.
  for (ProbeParams params : {ProbeParams{CollectiveParams{}}, ProbeParams{OffloadParams{}},
                             ProbeParams{OverlapParams{}}}) {
    req.params = params;
    EXPECT_THAT(RunProbe(req), AnyOf(StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no CUDA device")),
                                     StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("without the CUDA"))));
  }
}

TEST(ToAbslStatus, KeepsCodeAndMessage) {
  const absl::Status s = ToAbslStatus(Unavailable("x"));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "x");
  EXPECT_TRUE(ToAbslStatus(ProbeStatus::Ok()).ok());
}

TEST(ParseBackend, KnownAndUnknown) {
  EXPECT_EQ(*ParseBackend("cuda"), Backend::kCuda);
  EXPECT_THAT(ParseBackend("tpu"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'tpu'")));
}

}  // namespace
}  // namespace moetune::kernels

namespace moetune::kernels {
namespace {

TEST(CudaDescribeDevices, WithoutGpuSaysWhy) {
  std::vector<cuda::CudaDeviceDescription> devices;
  const ProbeStatus s = cuda::CudaDescribeDevices(&devices);
  if (s.ok()) GTEST_SKIP() << devices.size() << " CUDA device(s) present";
  EXPECT_TRUE(devices.empty());
  EXPECT_THAT(s, ::testing::AnyOf(StatusIs(ProbeCode::kUnavailable, ::testing::HasSubstr("no CUDA device")),
                                  StatusIs(ProbeCode::kUnimplemented, ::testing::HasSubstr("without the CUDA"))));
}

}  // namespace
}  // namespace moetune::kernels
