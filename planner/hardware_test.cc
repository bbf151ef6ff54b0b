#include "planner/hardware.h"
#include "planner/cost_model.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/units.h"
#include "testing/status_matchers.h"

namespace moetune::planner {
namespace {

using ::moetune::testing::StatusIs;
using ::testing::HasSubstr;
using units::kGB;
using units::kTFLOP;

TEST(HardwareTest, PresetsMatchDatasheets) {
  struct Row {
    const char* name;
    double bf16_tflops;
    double hbm_mib;  // what nvidia-smi reports (the datasheets' GB are binary)
    double nvlink_gb_s;
    int domain;
    double nic_gb_s;
  };
  // From ../shared/hardware/datasheets.json (NVIDIA MFU denominators;
  // NVLink per direction = bidirectional / 2; NIC Gbit/s / 8).
  const Row rows[] = {
      {"h100-sxm", 989, 81559, 450, 8, 50},      {"h800", 989, 81559, 200, 8, 50},
      {"h200", 989, 143771, 450, 8, 50},         {"b200", 2250, 183359, 900, 8, 50},
      {"b300", 2250, 275040, 900, 8, 100},       {"gb200-nvl72", 2450, 189471, 900, 72, 50},
      {"gb300-nvl72", 2450, 284208, 900, 72, 100},
  };
  for (const Row& r : rows) {
    absl::StatusOr<ClusterSpec> c = LoadClusterPreset(r.name);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->gpu.bf16_dense_flops_per_sec, r.bf16_tflops * kTFLOP) << r.name;
    EXPECT_EQ(c->gpu.hbm_bytes, r.hbm_mib * units::kMiB) << r.name;
    EXPECT_EQ(c->nvlink_bytes_per_sec, r.nvlink_gb_s * kGB) << r.name;
    EXPECT_EQ(c->nvlink_domain_gpus, r.domain) << r.name;
    EXPECT_EQ(c->scaleout_bytes_per_sec, r.nic_gb_s * kGB) << r.name;
    EXPECT_FALSE(c->sources.empty()) << r.name;
  }
}

TEST(HardwareTest, PrecisionSupport) {
  absl::StatusOr<ClusterSpec> h100 = LoadClusterPreset("h100-sxm");
  ASSERT_TRUE(h100.ok());
  EXPECT_FALSE(PeakDenseFlopsPerSec(h100->gpu, Precision::kMxfp8).has_value());
  EXPECT_FALSE(PeakDenseFlopsPerSec(h100->gpu, Precision::kNvfp4).has_value());
  EXPECT_EQ(*PeakDenseFlopsPerSec(h100->gpu, Precision::kFp8), 1979 * kTFLOP);
  absl::StatusOr<ClusterSpec> gb300 = LoadClusterPreset("GB300-NVL72");
  ASSERT_TRUE(gb300.ok());
  EXPECT_EQ(*PeakDenseFlopsPerSec(gb300->gpu, Precision::kNvfp4),
            14700 * kTFLOP);
}

TEST(HardwareTest, JsonRoundTrip) {
  for (const std::string& name : ClusterPresetNames()) {
    absl::StatusOr<ClusterSpec> c = LoadClusterPreset(name);
    ASSERT_TRUE(c.ok());
    absl::StatusOr<ClusterSpec> back = ParseClusterJson(ClusterSpecToJson(*c));
    ASSERT_TRUE(back.ok()) << name << ": " << back.status();
    EXPECT_EQ(back->gpu.fp8_dense_flops_per_sec, c->gpu.fp8_dense_flops_per_sec);
    EXPECT_EQ(back->gpu.nvfp4_dense_flops_per_sec,
              c->gpu.nvfp4_dense_flops_per_sec);
    EXPECT_EQ(back->scaleout_bytes_per_sec, c->scaleout_bytes_per_sec);
    EXPECT_EQ(back->host_link_bytes_per_sec, c->host_link_bytes_per_sec);
    EXPECT_EQ(back->gpu.generation, c->gpu.generation) << name;
  }
}

TEST(HardwareTest, PresetGenerations) {
  const std::pair<const char*, GpuGeneration> rows[] = {
      {"h100-sxm", GpuGeneration::kHopper},
      {"h800", GpuGeneration::kHopper},
      {"h200", GpuGeneration::kHopper},
      {"b200", GpuGeneration::kBlackwell},
      {"gb200-nvl72", GpuGeneration::kBlackwell},
      {"b300", GpuGeneration::kBlackwellUltra},
      {"gb300-nvl72", GpuGeneration::kBlackwellUltra},
  };
  for (const auto& [name, generation] : rows) {
    absl::StatusOr<ClusterSpec> c = LoadClusterPreset(name);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->gpu.generation, generation) << name;
  }
}

TEST(HardwareTest, GpuGenerationNames) {
  for (GpuGeneration g : kGpuGenerations) {
    absl::StatusOr<GpuGeneration> back = ParseGpuGeneration(GpuGenerationName(g));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, g);
  }
  EXPECT_EQ(GpuGenerationName(GpuGeneration::kBlackwellUltra), "blackwell_ultra");
  EXPECT_EQ(*ParseGpuGeneration("Hopper"), GpuGeneration::kHopper);
  EXPECT_THAT(ParseGpuGeneration("ampere"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown GPU generation 'ampere' (known: hopper, "
                                 "blackwell, blackwell_ultra)")));
}

// Before the enum, any generation but "hopper" (a typo, "ampere", none at
// all) silently got Blackwell priors; now the cluster JSON is refused.
TEST(HardwareTest, UnknownGpuGenerationIsRejected) {
  auto cluster = [](const std::string& generation_entry) {
    return absl::StrCat(R"({"name": "my-cluster", "gpu": {"name": "X100", )",
                        generation_entry, R"(
        "bf16_dense_flops_per_sec": 1e15, "fp8_dense_flops_per_sec": 2e15,
        "hbm_bytes": 8e10, "hbm_bytes_per_sec": 3e12},
      "gpus_per_node": 8, "nvlink_domain_gpus": 8,
      "nvlink_bytes_per_sec": 4.5e11, "scaleout_bytes_per_sec": 5e10})");
  };
  absl::StatusOr<ClusterSpec> ok = ParseClusterJson(cluster(R"("generation": "blackwell_ultra",)"));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->gpu.generation, GpuGeneration::kBlackwellUltra);
  EXPECT_THAT(ParseClusterJson(cluster(R"("generation": "hoper",)")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'generation' in cluster JSON: unknown GPU generation "
                                 "'hoper' (known: hopper, blackwell, blackwell_ultra)")));
  EXPECT_THAT(ParseClusterJson(cluster(R"("generation": 9,)")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'generation' in cluster JSON must be a string, got 9")));
  EXPECT_THAT(ParseClusterJson(cluster("")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("missing field 'generation'")));
  // A preset keeps its generation unless the JSON names another.
  absl::StatusOr<ClusterSpec> preset =
      ParseClusterJson(R"({"preset": "h100-sxm", "gpu": {"hbm_bytes": 9.6e10}})");
  ASSERT_TRUE(preset.ok()) << preset.status();
  EXPECT_EQ(preset->gpu.generation, GpuGeneration::kHopper);
  EXPECT_THAT(ParseClusterJson(R"({"preset": "b200", "gpu": {"generation": "rubin"}})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'rubin'")));
}

// Regression (cluster_fuzzer): a cluster JSON without the optional
// host_memory_bytes_per_gpu, sm_count and tdp_watts printed them as 0, which
// the parser then refused ("must be a positive number, got 0.0").
TEST(HardwareTest, RoundTripWithoutOptionalFields) {
  const std::string json = R"({"name": "my-cluster",
    "gpu": {"name": "H050 SXM", "generation": "hopper",
            "bf16_dense_flops_per_sec": 9.894e14, "fp8_dense_flops_per_sec": 1.979e15,
            "hbm_bytes": 8e10, "hbm_bytes_per_sec": 3.35e12},
    "gpus_per_node": 8, "nvlink_domain_gpus": 8,
    "nvlink_bytes_per_sec": 4.5e11, "scaleout_bytes_per_sec": 5e10})";
  absl::StatusOr<ClusterSpec> c = ParseClusterJson(json);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->host_memory_bytes_per_gpu, 0);
  absl::StatusOr<ClusterSpec> back = ParseClusterJson(ClusterSpecToJson(*c));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->gpu.hbm_bytes, 8e10);
  EXPECT_EQ(back->host_memory_bytes_per_gpu, 0);
}

TEST(HardwareTest, PresetOverride) {
  absl::StatusOr<ClusterSpec> c = ParseClusterJson(
      R"({"preset": "h100-sxm", "name": "slow-ib",
          "scaleout_bytes_per_sec": 25e9})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->name, "slow-ib");
  EXPECT_EQ(c->scaleout_bytes_per_sec, 25 * kGB);
  EXPECT_EQ(c->nvlink_bytes_per_sec, 450 * kGB);
}

TEST(HardwareTest, JsonErrorsNameTheField) {
  EXPECT_THAT(ParseClusterJson(R"({"name": "x"})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("missing field 'gpu'")));
  EXPECT_THAT(
      ParseClusterJson(R"({"preset": "h100-sxm", "nvlink_bytes_per_sec": -1})"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("'nvlink_bytes_per_sec'")));
  EXPECT_THAT(ParseClusterJson(R"({"preset": "tpu-v5"})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown cluster preset 'tpu-v5'")));
  // Found by fuzzing: a positive fraction of a GPU became 0 GPUs per node
  // and a division by zero (tests/fuzz/regressions/cluster/gpus-per-node-denormal).
  EXPECT_THAT(ParseClusterJson(R"({"preset": "h100-sxm", "gpus_per_node": 81e-308})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gpus_per_node=")));
  EXPECT_THAT(ParseClusterJson(R"({"preset": "h100-sxm", "nvlink_domain_gpus": 7.5})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nvlink_domain_gpus=7.5")));
  EXPECT_THAT(LoadClusterPreset("a100"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("h100-sxm")));
  // Found by fuzzing: an SM count beyond int overflowed the conversion
  // (tests/fuzz/regressions/cluster/sm-count-overflow).
  const std::string gpu_with_sms =
      R"({"name": "c", "gpu": {"name": "g", "generation": "hopper",
          "bf16_dense_flops_per_sec": 9.894e14, "fp8_dense_flops_per_sec": 1.979e15,
          "hbm_bytes": 8e10, "hbm_bytes_per_sec": 3.35e12, "sm_count": SMS},
          "gpus_per_node": 8, "nvlink_domain_gpus": 8, "nvlink_bytes_per_sec": 4.5e11,
          "scaleout_bytes_per_sec": 5e10})";
  auto with_sms = [&](const std::string& sms) {
    std::string j = gpu_with_sms;
    j.replace(j.find("SMS"), 3, sms);
    return ParseClusterJson(j);
  };
  EXPECT_THAT(with_sms("1.3e119"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gpu.sm_count=")));
  EXPECT_THAT(with_sms("131.5"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gpu.sm_count=131.5")));
  absl::StatusOr<ClusterSpec> ok = with_sms("132");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->gpu.sm_count, 132);
}

}  // namespace
}  // namespace moetune::planner

namespace moetune::planner {
namespace {

// The sustained tensor fraction: optional (1 = datasheet clocks), in (0, 1],
// and the cost model prices GEMMs and attention at peak x fraction.
TEST(HardwareTest, SustainedTensorFraction) {
  auto cluster = [](const std::string& entry) {
    return absl::StrCat(R"({"name": "my-cluster", "gpu": {"name": "X100", "generation": "blackwell", )",
                        entry, R"(
        "bf16_dense_flops_per_sec": 1e15, "fp8_dense_flops_per_sec": 2e15,
        "hbm_bytes": 8e10, "hbm_bytes_per_sec": 3e12},
      "gpus_per_node": 8, "nvlink_domain_gpus": 8,
      "nvlink_bytes_per_sec": 4.5e11, "scaleout_bytes_per_sec": 5e10})");
  };
  absl::StatusOr<ClusterSpec> plain = ParseClusterJson(cluster(""));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->gpu.sustained_tensor_fraction, 1.0);
  absl::StatusOr<ClusterSpec> capped = ParseClusterJson(cluster(R"("sustained_tensor_fraction": 0.8,)"));
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_EQ(capped->gpu.sustained_tensor_fraction, 0.8);
  EXPECT_THAT(ParseClusterJson(cluster(R"("sustained_tensor_fraction": 1.2,)")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("gpu.sustained_tensor_fraction must be in (0, 1], got 1.2")));
  EXPECT_THAT(ParseClusterJson(cluster(R"("sustained_tensor_fraction": 0,)")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'sustained_tensor_fraction' in cluster JSON must be a positive number")));
  // A large BF16 GEMM, compute-bound: 2 x 8192^3 FLOPs at 1e15 x eff takes
  // 1 / 0.8 as long on the capped GPU (same constants, same fixed time).
  const PriorConstants k = PriorConstantsFor(plain->gpu);
  const double fixed = k.gemm_fixed_s;
  const double t1 = DatasheetCostModel(*plain, k).DenseGemm(8192, 8192, 8192, Precision::kBf16).seconds - fixed;
  const double t2 = DatasheetCostModel(*capped, k).DenseGemm(8192, 8192, 8192, Precision::kBf16).seconds - fixed;
  EXPECT_NEAR(t2 / t1, 1 / 0.8, 1e-9);
}

}  // namespace
}  // namespace moetune::planner
