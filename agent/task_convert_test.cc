#include "agent/task_convert.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::agent {
namespace {

namespace v1 = ::moetune::v1;
namespace k = ::moetune::kernels;

TEST(TaskConvertTest, DispatchTakesEpSizeFromWorldSize) {
  v1::ProbeTask t;
  t.set_world_size(3);
  auto* p = t.mutable_dispatch_combine();
  p->set_tokens_per_rank(256);
  p->set_hidden(128);
  p->set_top_k(2);
  p->set_num_experts(6);
  p->set_mode(v1::DISPATCH_MODE_PER_EXPERT);
  p->set_dtype(v1::DTYPE_FP32);
  t.mutable_timing()->set_timed_iters(5);
  auto params = ToProbeParams(t);
  ASSERT_TRUE(params.ok()) << params.status();
  const auto& d = std::get<k::DispatchCombineParams>(*params);
  EXPECT_EQ(d.ep_size, 3);
  EXPECT_EQ(d.num_experts, 6);
  EXPECT_EQ(d.mode, k::DispatchMode::kPerExpert);
  EXPECT_EQ(d.dtype, k::DType::kFp32);
  EXPECT_EQ(d.timing.timed_iters, 5);
  EXPECT_EQ(d.timing.warmup_iters, k::TimingOptions().warmup_iters);  // 0 = default
}

TEST(TaskConvertTest, CollectiveOnLocalDevicesUsesThatGroupSize) {
  v1::ProbeTask t;
  t.set_local_devices(8);
  t.set_span(v1::SPAN_INTRA_NODE);
  t.mutable_collective()->set_op(v1::COLLECTIVE_OP_ALL_TO_ALL);
  t.mutable_collective()->add_sizes_bytes(1 << 20);
  auto params = ToProbeParams(t);
  ASSERT_TRUE(params.ok());
  const auto& c = std::get<k::CollectiveParams>(*params);
  EXPECT_EQ(c.group_size, 8);
  EXPECT_EQ(c.op, k::CollectiveOp::kAllToAll);
  EXPECT_EQ(c.span, k::Span::kIntraNode);
}

TEST(TaskConvertTest, MissingParamsOrBadEnumIsInvalid) {
  v1::ProbeTask t;
  t.set_task_id("c/t001");
  auto params = ToProbeParams(t);
  EXPECT_EQ(params.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(params.status().message()), ::testing::HasSubstr("c/t001"));
  t.mutable_collective()->set_op(static_cast<v1::CollectiveOp>(99));
  params = ToProbeParams(t);
  EXPECT_THAT(std::string(params.status().message()), ::testing::HasSubstr("collective.op"));
}

TEST(TaskConvertTest, ResultKeepsSamplesAndDerivedRates) {
  k::ProbeResult r;
  r.kind = k::ProbeKind::kCollective;
  r.params_json = "{\"kind\":\"collective\"}";
  k::Measurement m;
  m.name = "all_reduce";
  m.labels["size_bytes"] = "1048576";
  m.samples_seconds = {0.002, 0.001, 0.003};
  m.bytes = 1 << 20;
  m.bus_factor = 4.0 / 3.0;
  m.Finalize();
  r.measurements.push_back(m);
  r.provenance.backend = "cpu";
  r.provenance.rank = 2;
  r.provenance.world_size = 3;
  v1::ProbeResult out = ToResultProto(r);
  EXPECT_EQ(out.kind(), v1::PROBE_KIND_COLLECTIVE);
  ASSERT_EQ(out.measurements_size(), 1);
  const v1::Measurement& pm = out.measurements(0);
  EXPECT_EQ(pm.samples_seconds_size(), 3);
  EXPECT_DOUBLE_EQ(pm.median_seconds(), 0.002);
  ASSERT_TRUE(pm.has_alg_bw_gbps());
  EXPECT_DOUBLE_EQ(pm.alg_bw_gbps(), (1 << 20) / 0.002 / 1e9);
  EXPECT_EQ(pm.labels().at("size_bytes"), "1048576");
  EXPECT_EQ(out.provenance().rank(), 2);
  EXPECT_EQ(out.provenance().backend(), v1::BACKEND_CPU);
}

}  // namespace
}  // namespace moetune::agent
