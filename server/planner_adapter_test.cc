#include "server/planner_adapter.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/measurement_roles.h"
#include "server/internal/test_util.h"
#include "server/sqlite_store.h"
#include "testing/status_matchers.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;
namespace roles = ::moetune::kernels::roles;
using ::moetune::testing::StatusIs;
using ::moetune::server::testing::TempDbPath;
using ::testing::HasSubstr;
using ::testing::Not;

v1::SubmitPlanRequest Request(const std::string& model, const std::string& cluster, int gpus) {
  v1::SubmitPlanRequest r;
  r.mutable_model()->set_preset(model);
  r.mutable_cluster()->set_preset(cluster);
  r.mutable_shape()->set_gpus(gpus);
  r.mutable_shape()->set_seq_len(4096);
  r.mutable_shape()->set_global_batch_size(256);
  return r;
}

class PlannerAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = SqliteStore::Open(TempDbPath("adapter.db"));
    ASSERT_TRUE(s.ok());
    store_ = std::move(*s);
    adapter_ = std::make_unique<PlannerAdapter>(store_.get(), PlannerAdapterOptions{});
  }
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<PlannerAdapter> adapter_;
};

TEST_F(PlannerAdapterTest, BadInputsNameTheApiField) {
  v1::SubmitPlanRequest r = Request("deepseek-v3", "gb200-nvl72", 1024);
  r.mutable_model()->set_hf_config_json(R"({"model_type": "llama", "num_hidden_layers": -4})");
  EXPECT_THAT(adapter_->ValidatePlan(r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("model.hf_config_json: ")));
  r = Request("no-such-model", "gb200-nvl72", 1024);
  EXPECT_THAT(adapter_->ValidatePlan(r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("model.preset: ")));
  r = Request("deepseek-v3", "tpu-v5", 1024);
  EXPECT_THAT(adapter_->ValidatePlan(r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cluster.preset: ")));
  r = Request("deepseek-v3", "gb200-nvl72", 0);
  EXPECT_THAT(adapter_->ValidatePlan(r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shape.gpus must be in 1..")));
  r = Request("deepseek-v3", "gb200-nvl72", 1024);
  r.mutable_constraints()->set_top_k(500);
  EXPECT_THAT(adapter_->ValidatePlan(r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("constraints.top_k")));
  r = Request("deepseek-v3", "gb200-nvl72", 1024);
  r.mutable_constraints()->mutable_fixed()->set_tensor_parallel(-2);
  EXPECT_THAT(adapter_->ValidatePlan(r),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("constraints.fixed.tensor_parallel must be >= 0, got -2")));
  r = Request("deepseek-v3", "gb200-nvl72", 1024);
  r.mutable_constraints()->set_fix("tpp=2");
  EXPECT_THAT(adapter_->ValidatePlan(r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("constraints.fix: ")));
  r.mutable_constraints()->set_fix("tp=2,recompute=full");
  r.mutable_constraints()->mutable_fixed()->set_tensor_parallel(4);
  EXPECT_THAT(adapter_->ValidatePlan(r),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("constraints.fixed.tensor_parallel = 4 contradicts")));
  v1::SubmitPlanRequest empty;
  EXPECT_THAT(adapter_->ValidatePlan(empty),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("model: one of")));
  EXPECT_TRUE(adapter_->ValidatePlan(Request("deepseek-v3", "gb200-nvl72", 1024)).ok());
}

TEST_F(PlannerAdapterTest, PlanRendersItsFrameworksFormatsForEachPlan) {
  v1::SubmitPlanRequest r = Request("llama3-8b", "h100-sxm", 8);
  r.mutable_constraints()->set_top_k(2);
  r.mutable_constraints()->set_fix("tp=2");
  int64_t last_done = -1;
  auto out = adapter_->Plan(r, [&](int64_t done, int64_t) { last_done = done; });
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_GE(out->plans.size(), 1u);
  EXPECT_GT(last_done, 0);
  EXPECT_THAT(out->method, HasSubstr("planner search"));
  EXPECT_THAT(out->calibration_note, HasSubstr("datasheet priors"));
  for (size_t i = 1; i <= out->plans.size(); ++i) {
    const int rank = static_cast<int>(i);
    EXPECT_EQ(out->plans[i - 1].rank(), rank);
    EXPECT_THAT(out->configs.at({rank, v1::CONFIG_FORMAT_JSON}), HasSubstr("moetune.plan.v1"));
    EXPECT_THAT(out->configs.at({rank, v1::CONFIG_FORMAT_MEGATRON}),
                HasSubstr("--tensor-model-parallel-size"));
    // A Megatron plan is not a MaxText plan: no MaxText config.
    EXPECT_EQ(out->configs.count({rank, v1::CONFIG_FORMAT_MAXTEXT}), 0u);
  }
  const v1::Plan& best = out->plans[0];
  const v1::ParallelConfig& p = best.parallel();
  EXPECT_EQ(p.tensor_parallel(), 2);  // pinned by constraints.fix
  // The layout covers the 8 GPUs: tp x pp x cp x dp = 8.
  EXPECT_EQ(p.tensor_parallel() * p.pipeline_parallel() * p.context_parallel() * p.data_parallel(), 8);
  EXPECT_GT(best.prediction().tokens_per_sec_per_gpu(), 0);
  EXPECT_FALSE(best.prediction().planner_json().empty());
  // The 80% interval travels as typed fields, bracketing the prediction.
  const v1::PredictionInterval& iv = best.prediction().interval();
  EXPECT_DOUBLE_EQ(iv.coverage(), 0.8);
  EXPECT_LT(iv.tokens_per_sec_per_gpu_low(), best.prediction().tokens_per_sec_per_gpu());
  EXPECT_GT(iv.tokens_per_sec_per_gpu_high(), best.prediction().tokens_per_sec_per_gpu());
  EXPECT_FALSE(iv.basis().empty());
  for (const auto& [term, source] : best.prediction().term_sources()) {
    EXPECT_EQ(source, v1::TERM_SOURCE_DATASHEET) << term;
  }
}

// PlanConstraints.optimizer_states: the Adam state's precision every plan
// runs with (never searched), echoed in each plan's knobs and written as
// Megatron's precision-aware optimizer flags; an unknown value names the
// field.
TEST_F(PlannerAdapterTest, OptimizerStatesIsAnInput) {
  const ProgressFn kNoProgress = [](int64_t, int64_t) {};
  v1::SubmitPlanRequest r = Request("llama3-8b", "h100-sxm", 8);
  r.mutable_constraints()->set_top_k(2);
  r.mutable_constraints()->set_optimizer_states(v1::OPTIMIZER_STATES_BF16);
  auto out = adapter_->Plan(r, kNoProgress);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_GE(out->plans.size(), 1u);
  for (size_t i = 1; i <= out->plans.size(); ++i) {
    EXPECT_EQ(out->plans[i - 1].knobs().at("optimizer_states"), "bf16") << i;
    EXPECT_THAT(out->configs.at({static_cast<int>(i), v1::CONFIG_FORMAT_MEGATRON}),
                HasSubstr("  --use-precision-aware-optimizer\n"));
  }
  v1::SubmitPlanRequest plain = Request("llama3-8b", "h100-sxm", 8);
  auto def = adapter_->Plan(plain, kNoProgress);
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->plans[0].knobs().at("optimizer_states"), "fp32");
  EXPECT_THAT(def->configs.at({1, v1::CONFIG_FORMAT_MEGATRON}),
              Not(HasSubstr("--use-precision-aware-optimizer")));
  r.mutable_constraints()->set_optimizer_states(static_cast<v1::OptimizerStates>(7));
  EXPECT_THAT(adapter_->ValidatePlan(r),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("constraints.optimizer_states: unknown value 7")));
}

// PlanConstraints.optimizer_offload_fraction / _overlap: every plan runs
// with the host-stepped optimizer share (echoed in its knobs and written as
// Megatron's flags); out-of-range values and an overlap without a fraction
// name the field.
TEST_F(PlannerAdapterTest, OptimizerOffloadIsAnInput) {
  const ProgressFn kNoProgress = [](int64_t, int64_t) {};
  v1::SubmitPlanRequest r = Request("llama3-8b", "h100-sxm", 8);
  r.mutable_constraints()->set_top_k(2);
  r.mutable_constraints()->set_optimizer_offload_fraction(0.5);
  r.mutable_constraints()->set_optimizer_offload_overlap(true);
  auto out = adapter_->Plan(r, kNoProgress);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_GE(out->plans.size(), 1u);
  for (size_t i = 1; i <= out->plans.size(); ++i) {
    EXPECT_EQ(out->plans[i - 1].knobs().at("optimizer_offload_fraction"), "0.5") << i;
    const std::string& megatron =
        out->configs.at({static_cast<int>(i), v1::CONFIG_FORMAT_MEGATRON});
    EXPECT_THAT(megatron, HasSubstr("  --optimizer-cpu-offload\n"));
    EXPECT_THAT(megatron, HasSubstr("  --optimizer-offload-fraction 0.5\n"));
    EXPECT_THAT(megatron, HasSubstr("  --overlap-cpu-optimizer-d2h-h2d\n"));
    EXPECT_THAT(megatron, HasSubstr("  --use-precision-aware-optimizer\n"));
  }
  r.mutable_constraints()->set_optimizer_offload_fraction(1.5);
  EXPECT_THAT(adapter_->ValidatePlan(r),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("constraints.optimizer_offload_fraction must be in [0, 1], got 1.5")));
  r.mutable_constraints()->set_optimizer_offload_fraction(0);
  EXPECT_THAT(adapter_->ValidatePlan(r),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("optimizer_offload_overlap needs")));
}

// Layer-wise host offload through the API: constraints.fix
// "offload_layers=N" (the plan command's syntax) reaches every plan's knobs
// and the Megatron file, each plan at pp 1 without recompute or CUDA
// graphs; a pipeline pinned beside it names Megatron's rule.
TEST_F(PlannerAdapterTest, OffloadLayersThroughFix) {
  const ProgressFn kNoProgress = [](int64_t, int64_t) {};
  v1::SubmitPlanRequest r = Request("llama3-8b", "h100-sxm", 8);
  r.mutable_constraints()->set_top_k(2);
  r.mutable_constraints()->set_fix("offload_layers=8");
  auto out = adapter_->Plan(r, kNoProgress);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_GE(out->plans.size(), 1u);
  for (size_t i = 1; i <= out->plans.size(); ++i) {
    const v1::Plan& plan = out->plans[i - 1];
    EXPECT_EQ(plan.knobs().at("offload_layers"), "8") << i;
    EXPECT_EQ(plan.parallel().pipeline_parallel(), 1) << i;
    const std::string& megatron = out->configs.at({static_cast<int>(i), v1::CONFIG_FORMAT_MEGATRON});
    EXPECT_THAT(megatron, HasSubstr("  --cpu-offloading-num-layers 8\n"));
    EXPECT_THAT(megatron, HasSubstr("  --cuda-graph-impl none\n"));
    EXPECT_THAT(megatron, Not(HasSubstr("--recompute-granularity")));
  }
  r.mutable_constraints()->set_fix("offload_layers=8,pp=2");
  auto piped = adapter_->Plan(r, kNoProgress);
  EXPECT_FALSE(piped.ok());
  EXPECT_THAT(piped.status().message(), HasSubstr("needs pp = 1"));
}

// ParallelConfig.data_parallel_outermost: a pin of the rank order in
// constraints.fixed, echoed in each plan's layout, written as
// --use-tp-pp-dp-mapping; it and constraints.fix must agree.
TEST_F(PlannerAdapterTest, DataParallelOutermostIsAPin) {
  const ProgressFn kNoProgress = [](int64_t, int64_t) {};
  v1::SubmitPlanRequest r = Request("llama3-8b", "h100-sxm", 16);
  r.mutable_constraints()->set_fix("pp=2");
  r.mutable_constraints()->mutable_fixed()->set_data_parallel_outermost(true);
  auto out = adapter_->Plan(r, kNoProgress);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_GE(out->plans.size(), 1u);
  for (size_t i = 1; i <= out->plans.size(); ++i) {
    EXPECT_TRUE(out->plans[i - 1].parallel().data_parallel_outermost()) << i;
    EXPECT_THAT(out->configs.at({static_cast<int>(i), v1::CONFIG_FORMAT_MEGATRON}),
                HasSubstr("  --use-tp-pp-dp-mapping\n"));
  }
  v1::SubmitPlanRequest plain = Request("llama3-8b", "h100-sxm", 16);
  plain.mutable_constraints()->set_fix("pp=2");
  auto def = adapter_->Plan(plain, kNoProgress);
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_FALSE(def->plans[0].parallel().data_parallel_outermost());
  EXPECT_THAT(def->configs.at({1, v1::CONFIG_FORMAT_MEGATRON}),
              Not(HasSubstr("--use-tp-pp-dp-mapping")));
  r.mutable_constraints()->set_fix("pp=2,dp_outermost=false");
  EXPECT_THAT(adapter_->Plan(r, kNoProgress).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("constraints.fixed.data_parallel_outermost = true contradicts")));
}

TEST_F(PlannerAdapterTest, FrameworkMaxTextPlansAndEmitsMaxText) {
  v1::SubmitPlanRequest bad = Request("llama3-8b", "h100-sxm", 8);
  bad.set_framework("nemo");
  EXPECT_THAT(adapter_->ValidatePlan(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("framework: ")));
  v1::SubmitPlanRequest r = Request("llama3-8b", "h100-sxm", 8);
  r.set_framework("maxtext");
  r.set_software_stack("maxtext-2026-09-10");
  auto out = adapter_->Plan(r, [](int64_t, int64_t) {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->configs.at({1, v1::CONFIG_FORMAT_MAXTEXT}),
              HasSubstr("software stack MaxText maxtext-2026-09-10"));
  EXPECT_THAT(out->configs.at({1, v1::CONFIG_FORMAT_JSON}), HasSubstr("\"framework\": \"maxtext\""));
  EXPECT_EQ(out->configs.count({1, v1::CONFIG_FORMAT_MEGATRON}), 0u);
  // A Megatron container version is no MaxText stack.
  r.set_software_stack("26.04.01");
  EXPECT_THAT(adapter_->ValidatePlan(r),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("maxtext-YYYY-MM-DD")));
}

TEST_F(PlannerAdapterTest, SoftwareStackIsAnInput) {
  // A bad container version names the field; a good one is in the emitted
  // Megatron header and selects the generation: Qwen3-30B-A3B on 8 GB300
  // (measured 31,744 tokens/s/GPU in 26.04.01, 45,275 in 26.06) is predicted
  // slower under 26.04.01 than under the latest.
  v1::SubmitPlanRequest bad = Request("llama3-8b", "h100-sxm", 8);
  bad.set_software_stack("nemo-24.07");
  EXPECT_THAT(adapter_->ValidatePlan(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("software_stack: ")));
  v1::SubmitPlanRequest r = Request("llama3-8b", "h100-sxm", 8);
  r.set_software_stack("26.04.01");
  auto out = adapter_->Plan(r, [](int64_t, int64_t) {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->configs.at({1, v1::CONFIG_FORMAT_MEGATRON}),
              HasSubstr("software stack 26.04.01 (modelled as generation 26.02)"));

  v1::PredictRequest pr;
  pr.mutable_model()->set_preset("qwen3-30b-a3b");
  pr.mutable_cluster()->set_preset("gb300-nvl72");
  pr.mutable_shape()->set_gpus(16);
  pr.mutable_shape()->set_seq_len(4096);
  pr.mutable_shape()->set_global_batch_size(512);
  pr.mutable_parallel()->set_expert_parallel(8);
  pr.mutable_parallel()->set_micro_batch_size(8);
  pr.set_precision(v1::PRECISION_MXFP8);
  // As the 26.06 row ran: the performance recipe's full-iteration graphs.
  pr.set_cuda_graph_scope("full_iteration");
  auto latest = adapter_->Predict(pr);
  pr.set_software_stack("26.04.01");
  auto old = adapter_->Predict(pr);
  ASSERT_TRUE(latest.ok() && old.ok());
  EXPECT_LT(old->tokens_per_sec_per_gpu(), latest->tokens_per_sec_per_gpu());
  pr.set_cuda_graph_scope("all");
  EXPECT_THAT(adapter_->Predict(pr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cuda_graph_scope: ")));
  pr.set_cuda_graph_scope("");
  // A container older than every generation described: the same step as
  // 26.02's, its interval naming the container among the unmeasured settings.
  pr.set_software_stack("26.02");
  auto first = adapter_->Predict(pr);
  pr.set_software_stack("25.11");
  auto older = adapter_->Predict(pr);
  ASSERT_TRUE(first.ok() && older.ok());
  EXPECT_DOUBLE_EQ(older->tokens_per_sec_per_gpu(), first->tokens_per_sec_per_gpu());
  EXPECT_THAT(older->interval().unmeasured(),
              ::testing::Contains("container 25.11 older than 26.02 (priced as generation 26.02)"));
  EXPECT_THAT(first->interval().unmeasured(),
              ::testing::Not(::testing::Contains(HasSubstr("older than 26.02"))));
  pr.set_software_stack("2604");
  EXPECT_THAT(adapter_->Predict(pr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("software_stack: ")));
}

TEST_F(PlannerAdapterTest, RoutingUnspecifiedWidensThePredictInterval) {
  // ROUTING_UNSPECIFIED prices natural routing (real training), as
  // ROUTING_NATURAL does, but the interval also spans forced balancing;
  // stating either routing, or an imbalance, leaves it out.
  v1::PredictRequest pr;
  pr.mutable_model()->set_preset("qwen3-30b-a3b");
  pr.mutable_cluster()->set_preset("h100-sxm");
  pr.mutable_shape()->set_gpus(16);
  pr.mutable_shape()->set_seq_len(4096);
  pr.mutable_shape()->set_global_batch_size(256);
  pr.mutable_parallel()->set_tensor_parallel(1);
  pr.mutable_parallel()->set_pipeline_parallel(1);
  pr.mutable_parallel()->set_expert_parallel(16);
  pr.mutable_parallel()->set_micro_batch_size(1);
  auto unsaid = adapter_->Predict(pr);
  pr.mutable_constraints()->set_routing(v1::ROUTING_NATURAL);
  auto natural = adapter_->Predict(pr);
  pr.mutable_constraints()->set_routing(v1::ROUTING_BALANCED);
  auto balanced = adapter_->Predict(pr);
  pr.mutable_constraints()->set_routing(v1::ROUTING_UNSPECIFIED);
  pr.mutable_constraints()->set_moe_load_imbalance(1.2);
  auto imbalance = adapter_->Predict(pr);
  ASSERT_TRUE(unsaid.ok()) << unsaid.status();
  ASSERT_TRUE(natural.ok() && balanced.ok() && imbalance.ok());
  EXPECT_DOUBLE_EQ(unsaid->tokens_per_sec_per_gpu(), natural->tokens_per_sec_per_gpu());
  EXPECT_DOUBLE_EQ(unsaid->interval().tokens_per_sec_per_gpu_high(),
                   balanced->interval().tokens_per_sec_per_gpu_high());
  EXPECT_GT(unsaid->interval().tokens_per_sec_per_gpu_high(),
            natural->interval().tokens_per_sec_per_gpu_high());
  EXPECT_THAT(unsaid->interval().unmeasured(), ::testing::Contains("routing not given (--routing)"));
  for (const auto* said : {&*natural, &*balanced, &*imbalance}) {
    EXPECT_THAT(said->interval().unmeasured(),
                ::testing::Not(::testing::Contains("routing not given (--routing)")));
  }
}

TEST_F(PlannerAdapterTest, CalibrationIsUsedOnlyForTheSameGpuModel) {
  // Grouped-GEMM results measured by cluster "pod-a" on a device CUDA names
  // "NVIDIA H100 80GB HBM3": the h100-sxm preset's GPU model.
  for (int i = 0; i < 2; ++i) {
    v1::ProbeResult r;
    r.set_result_id("r" + std::to_string(i));
    r.set_kind(v1::PROBE_KIND_GROUPED_GEMM);
    r.set_params_json(R"({"kind":"grouped_gemm","dtype":"bf16"})");
    r.mutable_provenance()->set_cluster("pod-a");
    r.mutable_provenance()->set_device_name("NVIDIA H100 80GB HBM3");  // CUDA's name
    r.mutable_provenance()->set_world_size(1);
    v1::Measurement* m = r.add_measurements();
    // As the probes write it (kernels/measurement_roles.h): 8 experts of
    // [t x 4096] x [4096 x 14336], t = 1024 or 2048 tokens per expert.
    m->set_name(roles::GroupedGemmName(roles::GemmPass::kFwd, roles::GemmImpl::kGrouped));
    std::map<std::string, std::string> labels;
    const int64_t tokens = 8 * 1024 * (i + 1);
    roles::SetGemmShapeLabels(
        roles::GroupedGemmShape(roles::GemmPass::kFwd, roles::GemmImpl::kGrouped, 8, tokens, tokens / 8, 4096, 14336),
        &labels);
    for (const auto& [k, v] : labels) (*m->mutable_labels())[k] = v;
    m->set_flops(2.0 * tokens * 4096 * 14336);
    m->set_median_seconds(m->flops() / 500e12);  // 500 TFLOPS
    ASSERT_TRUE(store_->PutResult(r, std::nullopt).ok());
  }
  v1::PredictRequest pr;
  pr.mutable_model()->set_preset("qwen3-30b-a3b");
  pr.mutable_cluster()->set_preset("h100-sxm");
  pr.mutable_cluster()->set_calibration_cluster("pod-a");
  pr.mutable_shape()->set_gpus(16);
  pr.mutable_shape()->set_seq_len(4096);
  pr.mutable_shape()->set_global_batch_size(64);
  pr.mutable_parallel()->set_expert_parallel(8);
  // The grouped GEMM pinned: the search may otherwise pick the per-expert
  // loop, which the table does not price.
  pr.mutable_constraints()->set_fix("grouped_gemm=true");
  auto pred = adapter_->Predict(pr);
  ASSERT_TRUE(pred.ok()) << pred.status();
  int calibrated = 0;
  for (const auto& [term, source] : pred->term_sources()) calibrated += source == v1::TERM_SOURCE_CALIBRATED;
  EXPECT_GT(calibrated, 0) << "the grouped-GEMM terms should come from pod-a's table";

  v1::SubmitPlanRequest other = Request("mixtral-8x7b", "b200", 8);
  other.mutable_cluster()->set_calibration_cluster("pod-a");
  other.mutable_constraints()->set_top_k(1);
  auto out = adapter_->Plan(other, [](int64_t, int64_t) {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->calibration_note, HasSubstr("has calibration for [NVIDIA H100 80GB HBM3]"));
}

}  // namespace
}  // namespace moetune::server

namespace moetune::server {
namespace {

TEST_F(PlannerAdapterTest, StragglerFitFollowsNewResults) {
  auto put = [&](const std::string& agent, double seconds) {
    v1::ProbeResult r;
    r.set_result_id(agent + "/" + std::to_string(seconds));
    r.set_kind(v1::PROBE_KIND_OFFLOAD);
    r.set_params_json(R"({"kind":"offload"})");
    r.mutable_provenance()->set_cluster("pod");
    r.mutable_provenance()->set_agent_id(agent);
    r.mutable_provenance()->set_world_size(1);
    v1::Measurement* m = r.add_measurements();
    m->set_name("h2d/pinned/1048576");
    m->set_min_seconds(seconds);
    m->set_median_seconds(seconds);
    ASSERT_TRUE(store_->PutResult(r, std::nullopt).ok());
  };
  put("pod/a", 0.001);
  put("pod/b", 0.001);
  EXPECT_TRUE(adapter_->Stragglers("pod").empty());  // cached with 2 results
  put("pod/c", 0.004);                               // 4x its peers
  auto flags = adapter_->Stragglers("pod");
  ASSERT_EQ(flags.count("pod/c"), 1u);
  EXPECT_DOUBLE_EQ(flags["pod/c"][0].ratio(), 4.0);
}

}  // namespace
}  // namespace moetune::server

namespace moetune::server {
namespace {

// The plan report states how old the calibration is: the fit dates from the
// newest successful result it uses (received_unix_ms, the server's clock);
// a failed result does not change the tables, so it does not count.
TEST_F(PlannerAdapterTest, ReportStatesWhenTheCalibrationWasFitted) {
  auto put = [&](const std::string& id, int64_t received_unix_ms, int error_code) {
    v1::ProbeResult r;
    r.set_result_id(id);
    r.set_kind(v1::PROBE_KIND_OFFLOAD);
    r.set_params_json(R"({"kind":"offload"})");
    r.set_error_code(error_code);
    r.set_received_unix_ms(received_unix_ms);
    r.mutable_provenance()->set_cluster("pod-f");
    r.mutable_provenance()->set_agent_id("pod-f/a");
    r.mutable_provenance()->set_world_size(1);
    v1::Measurement* m = r.add_measurements();
    m->set_name("h2d/pinned/1048576");
    m->set_median_seconds(0.001);
    ASSERT_TRUE(store_->PutResult(r, std::nullopt).ok());
  };
  put("a", 1'700'000'000'000, 0);  // 2023-11-14T22:13:20Z
  put("b", 1'700'086'400'000, 0);  // one day later: the newest that counts
  put("c", 1'700'172'800'000, 14);  // failed (UNAVAILABLE), a day later still
  v1::SubmitPlanRequest r = Request("llama3-8b", "h100-sxm", 8);
  r.mutable_cluster()->set_calibration_cluster("pod-f");
  r.mutable_constraints()->set_top_k(1);
  auto out = adapter_->Plan(r, [](int64_t, int64_t) {});
  ASSERT_TRUE(out.ok()) << out.status();
  // The cost-source paragraph of the page (planner/report/report.cc).
  auto provenance = [](const std::string& html) {
    const size_t begin = html.find("<div class=\"provenance");
    return begin == std::string::npos ? html : html.substr(begin, html.find("</div>", begin) - begin);
  };
  const std::string html = provenance(out->configs.at({1, v1::CONFIG_FORMAT_HTML}));
  EXPECT_THAT(html, HasSubstr("Calibration of cluster <code>pod-f</code>, fitted "
                              "2023-11-15T22:13:20Z, "));
  EXPECT_THAT(html, HasSubstr("days before this report"));
  EXPECT_THAT(html, HasSubstr("data-calibration-age-days=\""));
  EXPECT_THAT(html, ::testing::Not(HasSubstr("fitting time unknown")));

  // Without a calibration cluster there is no fit and no age.
  auto priors = adapter_->Plan(Request("llama3-8b", "h100-sxm", 8), [](int64_t, int64_t) {});
  ASSERT_TRUE(priors.ok()) << priors.status();
  EXPECT_THAT(provenance(priors->configs.at({1, v1::CONFIG_FORMAT_HTML})),
              ::testing::AllOf(HasSubstr("data-calibration-cluster=\"\""),
                    ::testing::Not(HasSubstr("data-calibration-age-days"))));
}

}  // namespace
}  // namespace moetune::server
