#include "agent/discovery.h"

#include <algorithm>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::agent {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<std::vector<GpuDescription>> NoCuda() {
  return absl::UnavailableError("no CUDA device: cudaGetDeviceCount: 100");
}
absl::StatusOr<std::vector<GpuDescription>> FourGpus() {
  std::vector<GpuDescription> out;
  for (int i = 0; i < 4; ++i) {
    out.push_back({i, "NVIDIA H200", "GPU-" + std::to_string(i), "0000:1" + std::to_string(i) + ":00.0",
                   "9.0", 150'000'000'000});
  }
  return out;
}

TEST(DiscoveryTest, AutoFallsBackToCpuWithoutDevices) {
  auto info = Discover({"n1", "ci", "auto", "v"}, NoCuda);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->backend(), moetune::v1::BACKEND_CPU);
  ASSERT_EQ(info->devices_size(), 1);
  EXPECT_EQ(info->devices(0).name(), CpuModelName());
  EXPECT_EQ(info->node(), "n1");
  EXPECT_GT(info->topology().cpu_cores(), 0);
}

TEST(DiscoveryTest, AutoPicksCudaWithDevices) {
  auto info = Discover({"n1", "ci", "auto", "v"}, FourGpus);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->backend(), moetune::v1::BACKEND_CUDA);
  ASSERT_EQ(info->devices_size(), 4);
  EXPECT_EQ(info->devices(3).name(), "NVIDIA H200");
  EXPECT_EQ(info->devices(3).uuid(), "GPU-3");
  EXPECT_EQ(info->devices(3).compute_capability(), "9.0");
  EXPECT_EQ(info->devices(3).memory_bytes(), 150'000'000'000u);
}

TEST(DiscoveryTest, CpuBackendIgnoresDevices) {
  auto info = Discover({"n1", "ci", "cpu", "v"}, FourGpus);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->backend(), moetune::v1::BACKEND_CPU);
}

TEST(DiscoveryTest, CudaBackendWithoutDeviceSaysWhy) {
  auto info = Discover({"n1", "ci", "cuda", "v"}, NoCuda);
  EXPECT_EQ(info.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(info.status().message()), HasSubstr("cudaGetDeviceCount"));
}

TEST(DiscoveryTest, UnknownBackendIsInvalid) {
  auto info = Discover({"n1", "ci", "tpu", "v"}, NoCuda);
  EXPECT_EQ(info.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(info.status().message()), HasSubstr("'tpu'"));
}

TEST(DiscoveryTest, ProbesBindToLoopbackWhenTheServerIsLocal) {
  EXPECT_EQ(DefaultProbeBindAddress("127.0.0.1:7070"), "127.0.0.1");
  EXPECT_EQ(DefaultProbeBindAddress("localhost:7070"), "127.0.0.1");
  // A remote server: some IPv4 address of this host (loopback only if the
  // host has no other).
  std::string a = DefaultProbeBindAddress("planner.example.com:7070");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(std::count(a.begin(), a.end(), '.'), 3) << a;
}

}  // namespace
}  // namespace moetune::agent
