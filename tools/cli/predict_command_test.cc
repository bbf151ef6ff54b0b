// `moetune predict` through the command registry: one JSON object on
// stdout for a valid layout, exit 2 with one line on stderr otherwise.
#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/prediction.h"
#include "planner/search.h"
#include "tools/cli/command_registry.h"

namespace moetune::cli {
namespace {

using ::testing::HasSubstr;

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result RunPredict(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  std::streambuf* old_out = std::cout.rdbuf(out.rdbuf());
  std::streambuf* old_err = std::cerr.rdbuf(err.rdbuf());
  const int code = Commands().at("predict").run(args);
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  return {code, out.str(), err.str()};
}

// `args` followed by `extra`.
std::vector<std::string> With(std::vector<std::string> args,
                              const std::vector<std::string>& extra) {
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The JSON predict prints for `args` followed by `extra` (a failure is a test
// failure).
nlohmann::json PredictJson(const std::vector<std::string>& args,
                           const std::vector<std::string>& extra) {
  const Result r = RunPredict(With(args, extra));
  EXPECT_EQ(r.code, kExitOk) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(PredictCommandTest, PrintsOneJsonObject) {
  const Result r = RunPredict({"--model", "deepseek-v3", "--cluster", "gb200-nvl72", "--gpus", "1024",
                        "--seq", "4096", "--gbs", "8192", "--precision", "mxfp8", "--tp", "1", "--pp", "8",
                        "--vp", "4", "--ep", "64", "--cp", "1"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  for (const char* key : {"tokens_per_sec_per_gpu", "model_tflops_per_gpu", "step_time_s", "mfu",
                          "peak_memory_gib", "fits", "breakdown", "config"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  // dp derived: 1024 / (tp 1 x pp 8 x cp 1).
  EXPECT_EQ(j["config"]["parallel"]["dp"], 128);
  EXPECT_GT(j["tokens_per_sec_per_gpu"].get<double>(), 0);
}

TEST(PredictCommandTest, KnobsNotGivenAreTheAutotunersChoice) {
  // Only tp and the precision given: the rest is what the search picks with
  // tp=2 and fp8 fixed, so predict and the search agree on the whole config.
  const Result r = RunPredict({"--model", "qwen3-30b-a3b", "--cluster", "h100-sxm", "--gpus", "16",
                               "--seq", "4096", "--gbs", "256", "--precision", "fp8", "--tp", "2"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);

  namespace pl = ::moetune::planner;
  auto model = pl::LoadModelPreset("qwen3-30b-a3b");
  auto cluster = pl::LoadClusterPreset("h100-sxm");
  ASSERT_TRUE(model.ok() && cluster.ok());
  pl::SearchOptions options;
  options.top_k = 1;
  options.constraints.fixed.tp = 2;
  options.constraints.fixed.precision = pl::Precision::kFp8;
  options.constraints.precisions = {pl::Precision::kFp8};
  options.constraints.routing = pl::Routing::kNatural;  // the CLI's default: real training
  auto searched = pl::Search(pl::SearchProblem{*model, *cluster, pl::TrainingShape{16, 4096, 256}},
                             std::make_shared<pl::DatasheetCostModel>(*cluster), options);
  ASSERT_TRUE(searched.ok()) << searched.status();
  const nlohmann::json best = pl::ToJson(searched->best.prediction);
  EXPECT_EQ(j["config"], best["config"]);
  EXPECT_EQ(j["config"]["parallel"]["tp"], 2);
  EXPECT_DOUBLE_EQ(j["tokens_per_sec_per_gpu"].get<double>(),
                   best["tokens_per_sec_per_gpu"].get<double>());
}

// Qwen3-30B-A3B on 16 H100 with every layout flag and knob given (one
// candidate), and its JSON with `extra` flags appended.
const std::vector<std::string>& Qwen3AllGiven() {
  static const std::vector<std::string> args = {
      "--model", "qwen3-30b-a3b", "--cluster", "h100-sxm", "--gpus", "16", "--seq", "4096",
      "--gbs", "256", "--precision", "bf16", "--tp", "1", "--pp", "1", "--vp", "1", "--ep", "8",
      "--etp", "1", "--cp", "1", "--mbs", "1", "--recompute", "full", "--offload", "none",
      "--dispatcher", "alltoall", "--grouped-gemm", "true", "--cuda-graphs", "false",
      "--overlap", "none", "--comm-streams", "1"};
  return args;
}
nlohmann::json Qwen3AllGivenJson(const std::vector<std::string>& extra) {
  return PredictJson(Qwen3AllGiven(), extra);
}

// --routing: natural (default) prices the busiest EP rank; balanced is the
// benchmarks' forced balance; an explicit --moe-imbalance replaces both.
TEST(PredictCommandTest, RoutingIsAnInput) {
  const auto run = Qwen3AllGivenJson;
  const nlohmann::json natural = run({});
  const nlohmann::json balanced = run({"--routing", "balanced"});
  const nlohmann::json explicit_x = run({"--routing", "balanced", "--moe-imbalance", "1.5"});
  EXPECT_EQ(natural["config"]["knobs"]["routing"], "natural");
  EXPECT_EQ(balanced["config"]["knobs"]["routing"], "balanced");
  EXPECT_EQ(balanced["moe_load_imbalance_priced"].get<double>(), 1.0);
  EXPECT_GT(natural["moe_load_imbalance_priced"].get<double>(), 1.0);
  EXPECT_EQ(explicit_x["moe_load_imbalance_priced"].get<double>(), 1.5);
  EXPECT_LT(natural["tokens_per_sec_per_gpu"].get<double>(),
            balanced["tokens_per_sec_per_gpu"].get<double>());
  const Result bad = RunPredict({"--model", "qwen3-30b-a3b", "--cluster", "h100-sxm", "--gpus",
                                 "16", "--seq", "4096", "--gbs", "256", "--routing", "forced"});
  EXPECT_EQ(bad.code, kExitBadInput);
  EXPECT_THAT(bad.err, HasSubstr("--routing: unknown routing 'forced'"));
}

// --optimizer-offload-fraction F [--optimizer-offload-overlap]: F of the
// optimizer shard's state leaves HBM for host memory (16 B per offloaded
// parameter there), the step slows by the host's Adam and copies, and the
// overlap takes back part of that; bad values are named.
TEST(PredictCommandTest, OptimizerOffloadIsAnInput) {
  const auto run = Qwen3AllGivenJson;
  const nlohmann::json none = run({});
  const nlohmann::json half = run({"--optimizer-offload-fraction", "0.5"});
  const nlohmann::json overlap =
      run({"--optimizer-offload-fraction", "0.5", "--optimizer-offload-overlap"});
  EXPECT_EQ(half["config"]["knobs"]["optimizer_offload_fraction"].get<double>(), 0.5);
  EXPECT_EQ(overlap["config"]["knobs"]["optimizer_offload_overlap"], true);
  const double state = none["memory"]["optimizer_bytes"].get<double>();
  EXPECT_DOUBLE_EQ(half["memory"]["optimizer_bytes"].get<double>(), 0.5 * state);
  // fp32 state: 12 B per parameter on the GPU, 16 B per offloaded one on the host.
  EXPECT_NEAR(half["memory"]["host_optimizer_bytes"].get<double>(), 0.5 * state * 16.0 / 12.0,
              1.0);
  EXPECT_FALSE(none["memory"].contains("host_optimizer_bytes"));
  EXPECT_LT(half["tokens_per_sec_per_gpu"].get<double>(),
            none["tokens_per_sec_per_gpu"].get<double>());
  EXPECT_GT(overlap["tokens_per_sec_per_gpu"].get<double>(),
            half["tokens_per_sec_per_gpu"].get<double>());
  std::vector<std::string> text_args = Qwen3AllGiven();
  text_args.insert(text_args.end(), {"--optimizer-offload-fraction", "0.5", "--format", "text"});
  const Result text = RunPredict(text_args);
  EXPECT_EQ(text.code, kExitOk) << text.err;
  EXPECT_THAT(text.out, HasSubstr("host memory (offloaded optimizer state) "));
  EXPECT_THAT(text.out, HasSubstr("optimizer_offload=0.5"));
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--optimizer-offload-fraction", "1.5"},
        std::vector<std::string>{"--optimizer-offload-fraction", "-0.1"},
        std::vector<std::string>{"--optimizer-offload-overlap"}}) {
    const Result bad = RunPredict(With(Qwen3AllGiven(), extra));
    EXPECT_EQ(bad.code, kExitBadInput) << extra[0];
    EXPECT_THAT(bad.err, HasSubstr("--optimizer-offload-")) << extra[0];
  }
}

// --optimizer-states: fp32 (default) or bf16 Adam moments; the state is
// 8 B instead of 12 B per parameter, the rest of the memory the same, and
// MaxText refuses it by name.
TEST(PredictCommandTest, OptimizerStatesIsAnInput) {
  const std::vector<std::string>& base = Qwen3AllGiven();
  const auto run = Qwen3AllGivenJson;
  const nlohmann::json fp32 = run({});
  const nlohmann::json bf16 = run({"--optimizer-states", "bf16"});
  EXPECT_EQ(fp32["config"]["knobs"]["optimizer_states"], "fp32");
  EXPECT_EQ(bf16["config"]["knobs"]["optimizer_states"], "bf16");
  EXPECT_DOUBLE_EQ(bf16["memory"]["optimizer_bytes"].get<double>(),
                   fp32["memory"]["optimizer_bytes"].get<double>() * 8.0 / 12.0);
  EXPECT_EQ(bf16["memory"]["weights_bytes"], fp32["memory"]["weights_bytes"]);
  EXPECT_GE(bf16["tokens_per_sec_per_gpu"].get<double>(),
            fp32["tokens_per_sec_per_gpu"].get<double>());
  std::vector<std::string> bad = base;
  bad.insert(bad.end(), {"--optimizer-states", "fp8"});
  const Result b = RunPredict(bad);
  EXPECT_EQ(b.code, kExitBadInput);
  EXPECT_THAT(b.err, HasSubstr("--optimizer-states: unknown optimizer states 'fp8'"));
  const Result maxtext =
      RunPredict({"--model", "qwen3-30b-a3b", "--cluster", "h100-sxm", "--gpus", "16", "--seq",
                  "4096", "--gbs", "256", "--framework", "maxtext", "--optimizer-states", "bf16",
                  "--tp", "1", "--pp", "1", "--ep", "8", "--mbs", "1"});
  EXPECT_EQ(maxtext.code, kExitBadInput) << maxtext.out;
  EXPECT_THAT(maxtext.err, HasSubstr("optimizer_states=bf16"));
}

// --offload-layers N: Megatron-Bridge's Llama3-70B FSDP recipe shape on 64
// GB300 (tp 1, pp 1, mbs 2), the real CLI. The run defaults pick no
// recompute and no CUDA graphs (what Megatron runs it with), the N layers'
// activations leave the GPU, and a pinned pipeline is refused naming
// Megatron's rule.
TEST(PredictCommandTest, OffloadLayersIsAnInput) {
  const std::vector<std::string> base = {
      "--model", "llama3-70b", "--cluster", "gb300-nvl72", "--gpus", "64", "--seq", "8192",
      "--gbs", "256", "--precision", "fp8", "--tp", "1", "--pp", "1", "--mbs", "2",
      "--shard-params", "--recompute", "none", "--cuda-graphs", "false"};
  auto run = [&](const std::vector<std::string>& extra) { return PredictJson(base, extra); };
  const nlohmann::json none = run({});
  const nlohmann::json twenty = run({"--offload-layers", "20"});
  EXPECT_EQ(none["config"]["knobs"]["offload_layers"], 0);
  EXPECT_EQ(twenty["config"]["knobs"]["offload_layers"], 20);
  // 20 of 80 equal layers: a quarter of the layers' activations (the logits
  // stay: the difference is exactly a quarter of everything but them).
  const double a0 = none["memory"]["activations_bytes"].get<double>();
  const double a20 = twenty["memory"]["activations_bytes"].get<double>();
  EXPECT_GT(a0 - a20, 0.2 * a0);
  EXPECT_LT(a0 - a20, 0.25 * a0);
  // The host holds exactly what left the GPU (one micro-batch, pp 1).
  EXPECT_FALSE(none.contains("host_offload_gib"));
  EXPECT_DOUBLE_EQ(twenty["host_offload_gib"].get<double>() * 1024 * 1024 * 1024, a0 - a20);
  // Without recompute or graphs given, the run defaults still pick none.
  std::vector<std::string> bare(base.begin(), base.end() - 4);
  bare.insert(bare.end(), {"--offload-layers", "20"});
  const Result d = RunPredict(bare);
  ASSERT_EQ(d.code, kExitOk) << d.err;
  const nlohmann::json dj = nlohmann::json::parse(d.out);
  EXPECT_EQ(dj["config"]["knobs"]["recompute"], "none");
  EXPECT_EQ(dj["config"]["knobs"]["cuda_graphs"], false);
  std::vector<std::string> piped = base;
  piped[15] = "4";  // --pp 4
  piped.insert(piped.end(), {"--offload-layers", "20"});
  const Result p = RunPredict(piped);
  EXPECT_EQ(p.code, kExitBadInput) << p.out;
  EXPECT_THAT(p.err, HasSubstr("Megatron-Core: --cpu-offloading-num-layers (layer-wise CPU "
                               "offloading) needs pp = 1"));
  std::vector<std::string> negative = base;
  negative.insert(negative.end(), {"--offload-layers", "-3"});
  const Result n = RunPredict(negative);
  EXPECT_EQ(n.code, kExitBadInput);
  EXPECT_THAT(n.err, HasSubstr("--offload-layers must be a non-negative integer"));
}

TEST(PredictCommandTest, EveryKnobGivenSkipsTheSearch) {
  const Result r = RunPredict(
      {"--model", "qwen3-30b-a3b", "--cluster", "h100-sxm", "--gpus", "16", "--seq", "4096",
       "--gbs", "256", "--precision", "bf16", "--tp", "1", "--pp", "1", "--vp", "1", "--ep", "4",
       "--etp", "1", "--cp", "1", "--mbs", "1", "--recompute", "full", "--offload", "none",
       "--dispatcher", "alltoall", "--grouped-gemm", "false", "--cuda-graphs", "false",
       "--overlap", "none", "--comm-streams", "1"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["config"]["parallel"]["ep"], 4);
  EXPECT_EQ(j["config"]["knobs"]["dispatcher"], "alltoall");
  EXPECT_EQ(j["config"]["knobs"]["grouped_gemm"], false);
}

TEST(PredictCommandTest, StackSelectsTheSoftwareGeneration) {
  // Qwen3-30B-A3B on 8 GB300 with the Megatron-Bridge layout (tp1 pp1 ep8
  // mbs8): measured 31,744 tokens/s/GPU in container 26.04.01 and 45,275 in
  // 26.06 (shared/validation/runs.json). --stack 26.04.01 predicts the
  // 26.02 generation (MoE host time not hidden), slower than 26.06 with
  // full-iteration graphs; no --stack is the latest.
  const std::vector<std::string> base = {
      "--model", "qwen3-30b-a3b", "--cluster", "gb300-nvl72", "--gpus", "8", "--seq", "4096",
      "--gbs", "512", "--precision", "mxfp8", "--tp", "1", "--pp", "1", "--vp", "1", "--ep",
      "8", "--etp", "1", "--cp", "1", "--mbs", "8", "--recompute", "none", "--offload", "none",
      "--dispatcher", "fused_dedup", "--grouped-gemm", "true", "--cuda-graphs", "true",
      "--overlap", "tp,ep,dp,pp", "--comm-streams", "2"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return RunPredict(a);
  };
  // The 26.06 row ran the performance recipe's full-iteration graphs.
  const Result old = with({"--stack", "26.04.01", "--cuda-graph-scope", "full_iteration"});
  const Result current = with({"--stack", "26.06", "--cuda-graph-scope", "full_iteration"});
  const Result latest = with({"--cuda-graph-scope", "full_iteration"});
  // With the graphs moetune's Megatron file captures, 26.06 hides no MoE
  // host time either: as 26.04.01.
  const Result as_emitted = with({"--stack", "26.06", "--cuda-graph-scope", "modules"});
  const Result as_emitted_old = with({"--stack", "26.04.01"});
  ASSERT_EQ(as_emitted.code, kExitOk) << as_emitted.err;
  ASSERT_EQ(as_emitted_old.code, kExitOk) << as_emitted_old.err;
  const nlohmann::json e = nlohmann::json::parse(as_emitted.out);
  EXPECT_EQ(e["software_stack"]["cuda_graph_scope"], "modules");
  EXPECT_LT(e["tokens_per_sec_per_gpu"].get<double>(),
            nlohmann::json::parse(latest.out)["tokens_per_sec_per_gpu"].get<double>());
  // Not given, the scope is what a run of the stack captures: the whole
  // iteration for a MoE model from 26.06 on, the scoped graphs before.
  EXPECT_EQ(nlohmann::json::parse(as_emitted_old.out)["software_stack"]["cuda_graph_scope"],
            "modules");
  const Result run_default = with({"--stack", "26.06"});
  ASSERT_EQ(run_default.code, kExitOk) << run_default.err;
  EXPECT_EQ(nlohmann::json::parse(run_default.out)["software_stack"]["cuda_graph_scope"],
            "full_iteration");
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(run_default.out)["tokens_per_sec_per_gpu"].get<double>(),
                   nlohmann::json::parse(current.out)["tokens_per_sec_per_gpu"].get<double>());
  const Result bad_scope = with({"--cuda-graph-scope", "everything"});
  EXPECT_EQ(bad_scope.code, kExitBadInput);
  EXPECT_NE(bad_scope.err.find("--cuda-graph-scope"), std::string::npos) << bad_scope.err;
  ASSERT_EQ(old.code, kExitOk) << old.err;
  ASSERT_EQ(current.code, kExitOk) << current.err;
  ASSERT_EQ(latest.code, kExitOk) << latest.err;
  const nlohmann::json o = nlohmann::json::parse(old.out);
  const nlohmann::json c = nlohmann::json::parse(current.out);
  const nlohmann::json l = nlohmann::json::parse(latest.out);
  EXPECT_EQ(o["software_stack"]["container"], "26.04.01");
  EXPECT_EQ(o["software_stack"]["generation"], "26.02");
  EXPECT_EQ(l["software_stack"]["container"], "latest");
  EXPECT_LT(o["tokens_per_sec_per_gpu"].get<double>(), c["tokens_per_sec_per_gpu"].get<double>());
  EXPECT_DOUBLE_EQ(c["tokens_per_sec_per_gpu"].get<double>(),
                   l["tokens_per_sec_per_gpu"].get<double>());
  EXPECT_FALSE(o["software_stack"].contains("older_than_every_generation"));
  const Result bad = with({"--stack", "nemo-24"});
  EXPECT_EQ(bad.code, kExitBadInput);
  EXPECT_NE(bad.err.find("--stack"), std::string::npos) << bad.err;
  // A container older than 26.02 is priced as 26.02 and says so: the same
  // step as 26.02.01, the interval of settings no published run measured.
  const Result nemo2 =
      with({"--stack", "25.04.01", "--routing", "balanced", "--cuda-graph-scope", "modules"});
  const Result first =
      with({"--stack", "26.02.01", "--routing", "balanced", "--cuda-graph-scope", "modules"});
  ASSERT_EQ(nemo2.code, kExitOk) << nemo2.err;
  ASSERT_EQ(first.code, kExitOk) << first.err;
  const nlohmann::json n = nlohmann::json::parse(nemo2.out);
  const nlohmann::json f = nlohmann::json::parse(first.out);
  EXPECT_EQ(n["software_stack"]["generation"], "26.02");
  EXPECT_EQ(n["software_stack"]["older_than_every_generation"], true);
  EXPECT_DOUBLE_EQ(n["tokens_per_sec_per_gpu"].get<double>(),
                   f["tokens_per_sec_per_gpu"].get<double>());
  EXPECT_EQ(n["interval"]["unmeasured"],
            nlohmann::json::array({"container 25.04.01 older than 26.02 (priced as generation 26.02)"}));
  EXPECT_TRUE(f["interval"]["unmeasured"].empty());
  EXPECT_LT(n["interval"]["tokens_per_sec_per_gpu_low"].get<double>(),
            f["interval"]["tokens_per_sec_per_gpu_low"].get<double>());
}

TEST(PredictCommandTest, TextSaysWhereTheTermsCameFrom) {
  const std::vector<std::string> args = {"--model", "qwen3-30b-a3b", "--cluster", "h100-sxm",
                                         "--gpus", "16", "--seq", "4096", "--gbs", "256",
                                         "--tp", "2"};
  const Result json = RunPredict(args);
  ASSERT_EQ(json.code, kExitOk) << json.err;
  const size_t terms = nlohmann::json::parse(json.out)["breakdown"].size();
  ASSERT_GT(terms, 0u);
  std::vector<std::string> text_args = args;
  text_args.insert(text_args.end(), {"--format", "text"});
  const Result text = RunPredict(text_args);
  ASSERT_EQ(text.code, kExitOk) << text.err;
  // predict runs on the datasheet cost model: no term is calibrated.
  EXPECT_NE(text.out.find("cost source: 0 of " + std::to_string(terms) + " terms calibrated, " +
                          std::to_string(terms) + " from datasheet priors"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("unless marked calibrated"), std::string::npos) << text.out;
}

TEST(PredictCommandTest, HelpSaysWhatFillsWhatIsNotGiven) {
  const Result r = RunPredict({"--help"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("--recompute VALUE\n      none, selective or full (default: the run "
                       "default; see --search-knobs)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("--tp VALUE\n      tensor parallel (default: the search's choice)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the lightest recompute that fits"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--search-knobs"), std::string::npos) << r.out;
}

// --dp-outermost: Megatron's rank order tp-cp-ep-pp-dp. Llama 3 8B on 16
// H100 (8-GPU NVLink domains), tp 2 x pp 2 x dp 4: in the default order a
// pipeline group strides over gpus / pp = 8 ranks (the next node, InfiniBand),
// with DP outermost over tp x cp = 2 (the same node, NVLink); the DP group
// (4 ranks) then holds one rank per model replica of 4 GPUs, 2 per node, so
// its collectives cross nodes with 2 members per node instead of 4.
// With pp > 1 the last pipeline rank's memory is reported beside the peak
// (JSON last_stage_memory*, a text line): Megatron-Bridge's memory logs
// showed that rank alone. With pp 1 there is no such line or field.
TEST(PredictCommandTest, LastStageMemoryBesideThePeak) {
  const std::vector<std::string> base = {"--model", "llama3-8b", "--cluster", "h100-sxm",
                                         "--gpus", "16", "--seq", "8192", "--gbs", "64",
                                         "--tp", "2", "--mbs", "1"};
  auto with = [&](const std::vector<std::string>& extra) { return RunPredict(With(base, extra)); };
  const Result pp4 = with({"--pp", "4"});
  ASSERT_EQ(pp4.code, kExitOk) << pp4.err;
  const nlohmann::json j = nlohmann::json::parse(pp4.out);
  const double last = j["last_stage_memory_bytes"].get<double>();
  double parts = 0;
  for (const auto& [name, bytes] : j["last_stage_memory"].items()) parts += bytes.get<double>();
  EXPECT_DOUBLE_EQ(last, parts);
  // Rank 0 holds 4 in-flight micro-batches, the last rank one.
  EXPECT_LT(j["last_stage_memory"]["activations_bytes"].get<double>(),
            j["memory"]["activations_bytes"].get<double>());
  EXPECT_LE(last, j["peak_memory_bytes"].get<double>());
  EXPECT_THAT(with({"--pp", "4", "--format", "text"}).out, HasSubstr("\nlast pipeline stage "));
  const Result pp1 = with({"--pp", "1"});
  ASSERT_EQ(pp1.code, kExitOk) << pp1.err;
  EXPECT_FALSE(nlohmann::json::parse(pp1.out).contains("last_stage_memory_bytes"));
  EXPECT_THAT(with({"--pp", "1", "--format", "text"}).out,
              Not(HasSubstr("last pipeline stage")));
}

TEST(PredictCommandTest, DpOutermostIsAnInput) {
  const std::vector<std::string> base = {"--model", "llama3-8b", "--cluster", "h100-sxm",
                                         "--gpus", "16", "--seq", "8192", "--gbs", "64",
                                         "--tp", "2", "--pp", "2", "--mbs", "1"};
  auto with = [&](const std::vector<std::string>& extra) { return RunPredict(With(base, extra)); };
  const Result plain = with({});
  const Result outer = with({"--dp-outermost"});
  ASSERT_EQ(plain.code, kExitOk) << plain.err;
  ASSERT_EQ(outer.code, kExitOk) << outer.err;
  const nlohmann::json p = nlohmann::json::parse(plain.out);
  const nlohmann::json o = nlohmann::json::parse(outer.out);
  EXPECT_EQ(p["config"]["parallel"]["dp_outermost"], false);
  EXPECT_EQ(p["config"]["parallel"]["rank_order"], "tp-cp-ep-dp-pp");
  EXPECT_EQ(o["config"]["parallel"]["dp_outermost"], true);
  EXPECT_EQ(o["config"]["parallel"]["rank_order"], "tp-cp-ep-pp-dp");
  auto term = [](const nlohmann::json& j, const std::string& prefix) {
    double s = 0;
    for (const auto& t : j["breakdown"]) {
      if (t["name"].get<std::string>().rfind(prefix, 0) == 0) s += t["seconds"].get<double>();
    }
    return s;
  };
  // PP over NVLink instead of the NICs; DP with fewer members per node.
  EXPECT_GT(term(p, "pp.send_recv"), 0.0);
  EXPECT_LT(term(o, "pp.send_recv"), term(p, "pp.send_recv"));
  EXPECT_GT(term(o, "dp."), term(p, "dp."));
  const Result text = with({"--dp-outermost", "--format", "text"});
  ASSERT_EQ(text.code, kExitOk) << text.err;
  EXPECT_THAT(text.out, HasSubstr("rank order: tp-cp-ep-pp-dp (data parallel outermost"));
  EXPECT_THAT(with({"--format", "text"}).out,
              HasSubstr("rank order: tp-cp-ep-dp-pp (Megatron's default"));
  // What Megatron refuses with it: a MoE layout whose expert grid differs
  // from the dense one (ep 8 x etp 1 != tp 1 x cp 1) with pp > 1.
  const Result moe = RunPredict({"--model", "qwen3-30b-a3b", "--cluster", "h100-sxm", "--gpus",
                                 "16", "--seq", "4096", "--gbs", "256", "--tp", "1", "--pp", "2",
                                 "--ep", "8", "--mbs", "1", "--dp-outermost"});
  EXPECT_EQ(moe.code, kExitBadInput);
  EXPECT_THAT(moe.err, HasSubstr("Megatron-Core: --use-tp-pp-dp-mapping (dp_outermost) with pp > 1"));
  EXPECT_EQ(std::count(moe.err.begin(), moe.err.end(), '\n'), 1) << moe.err;
  // MaxText has no rank order: the pin is bad input naming the knob.
  const Result mt = RunPredict({"--model", "llama3-8b", "--cluster", "h100-sxm", "--gpus", "16",
                                "--seq", "8192", "--gbs", "64", "--framework", "maxtext",
                                "--dp-outermost"});
  EXPECT_EQ(mt.code, kExitBadInput);
  EXPECT_THAT(mt.err, HasSubstr("dp_outermost=true"));
  EXPECT_THAT(mt.err, HasSubstr("MaxText: dp_outermost"));
  // The help says what it is and its default.
  const Result help = RunPredict({"--help"});
  EXPECT_THAT(help.out, HasSubstr("--dp-outermost\n      Megatron rank order with data parallel "
                                  "outermost, tp-cp-ep-pp-dp (--use-tp-pp-dp-mapping"));
  EXPECT_THAT(help.out, HasSubstr("default: off, Megatron's default order tp-cp-ep-dp-pp"));
}

// The run layout given (tp, pp, ep, mbs) and no knob: what a run does with
// the knob flags unset -- the same prediction as every knob given at its run
// default by hand. Llama 3.1 405B on 256 GB200, FP8, Megatron-Bridge's 26.02
// layout TP4 PP16 VP4 (runs.json: 793 tokens/s/GPU measured; the validator,
// which prices its rows this way, 795): no recompute needs more than 84% of
// the 185 GiB nvidia-smi reports, so the recompute is the lightest rung of
// the ladder that fits (core_attn + layernorm + mlp; the prediction's own is pinned by hand
// below). --search-knobs gives the autotuner's best instead, at least as
// fast (it offloads activations: 1,001).
TEST(PredictCommandTest, KnobsNotGivenWithTheRunLayoutAreTheRunDefaults) {
  const std::vector<std::string> layout = {
      "--model", "llama3.1-405b", "--cluster", "gb200-nvl72", "--gpus", "256", "--seq", "8192",
      "--gbs", "1536", "--precision", "fp8", "--stack", "26.02", "--routing", "balanced",
      "--tp", "4", "--pp", "16", "--vp", "4", "--ep", "1", "--mbs", "1"};
  const Result defaults = RunPredict(layout);
  ASSERT_EQ(defaults.code, kExitOk) << defaults.err;
  const nlohmann::json d = nlohmann::json::parse(defaults.out);
  EXPECT_EQ(d["knobs_not_given"], "run_defaults");
  const nlohmann::json& knobs = d["config"]["knobs"];
  // No offload, the flex dispatcher, grouped GEMM, CUDA graphs, TP/DP/PP
  // overlap with two streams, no EP A2A overlap.
  std::vector<std::string> by_hand = layout;
  by_hand.insert(by_hand.end(),
                 {"--etp", "1", "--cp", "1", "--offload", "none", "--dispatcher", "fused_dedup",
                  "--grouped-gemm", "true", "--cuda-graphs", "true", "--overlap", "tp,dp,pp",
                  "--comm-streams", "2", "--recompute", knobs["recompute"].get<std::string>()});
  if (knobs["recompute"] == "selective") {
    by_hand.insert(by_hand.end(),
                   {"--recompute-modules", knobs["recompute_modules"].get<std::string>()});
  }
  const Result pinned = RunPredict(by_hand);
  ASSERT_EQ(pinned.code, kExitOk) << pinned.err;
  EXPECT_DOUBLE_EQ(d["tokens_per_sec_per_gpu"].get<double>(),
                   nlohmann::json::parse(pinned.out)["tokens_per_sec_per_gpu"].get<double>());
  EXPECT_EQ(knobs["offload_modules"], "");
  // Within the recipes' headroom (84% of the memory nvidia-smi reports),
  // and the lightest rung that is: no recompute does not fit there.
  EXPECT_LE(d["peak_memory_gib"].get<double>(), 0.84 * d["hbm_gib"].get<double>());
  std::vector<std::string> none = layout;
  none.insert(none.end(), {"--recompute", "none"});
  const Result no_recompute = RunPredict(none);
  ASSERT_EQ(no_recompute.code, kExitOk) << no_recompute.err;
  const nlohmann::json n = nlohmann::json::parse(no_recompute.out);
  EXPECT_GT(n["peak_memory_gib"].get<double>(), 0.84 * n["hbm_gib"].get<double>());
  std::vector<std::string> search = layout;
  search.push_back("--search-knobs");
  const Result searched = RunPredict(search);
  ASSERT_EQ(searched.code, kExitOk) << searched.err;
  EXPECT_GE(nlohmann::json::parse(searched.out)["tokens_per_sec_per_gpu"].get<double>(),
            d["tokens_per_sec_per_gpu"].get<double>());
  EXPECT_EQ(nlohmann::json::parse(searched.out)["knobs_not_given"], "search");
}

// Without --routing (or --moe-imbalance) a MoE run is priced with natural
// routing, predict's default, and its interval also spans forced balancing
// -- what benchmark runs use -- since the user did not say which ran.
TEST(PredictCommandTest, RoutingNotGivenWidensTheInterval) {
  const std::vector<std::string> layout = {
      "--model", "qwen3-30b-a3b", "--cluster", "h100-sxm", "--gpus", "16", "--seq", "4096",
      "--gbs", "256", "--tp", "1", "--pp", "1", "--ep", "16", "--mbs", "1"};
  auto with = [&](const std::vector<std::string>& extra) { return PredictJson(layout, extra); };
  const nlohmann::json unsaid = with({});
  const nlohmann::json natural = with({"--routing", "natural"});
  const nlohmann::json balanced = with({"--routing", "balanced"});
  const nlohmann::json imbalance = with({"--moe-imbalance", "1.2"});
  EXPECT_DOUBLE_EQ(unsaid["tokens_per_sec_per_gpu"].get<double>(),
                   natural["tokens_per_sec_per_gpu"].get<double>());
  EXPECT_DOUBLE_EQ(unsaid["interval"]["tokens_per_sec_per_gpu_high"].get<double>(),
                   balanced["interval"]["tokens_per_sec_per_gpu_high"].get<double>());
  EXPECT_GT(unsaid["interval"]["tokens_per_sec_per_gpu_high"].get<double>(),
            natural["interval"]["tokens_per_sec_per_gpu_high"].get<double>());
  EXPECT_THAT(unsaid["interval"]["unmeasured"].dump(), HasSubstr("routing not given (--routing)"));
  for (const nlohmann::json* said : {&natural, &balanced, &imbalance}) {
    EXPECT_THAT((*said)["interval"]["unmeasured"].dump(),
                ::testing::Not(HasSubstr("routing not given")));
  }
}

TEST(PredictCommandTest, LayoutNotGivenIsTheSearchsWhereOnesWouldNotDivideTheBatch) {
  // 96 GPUs at global batch 64: tp = pp = cp = mbs = 1 would give dp 96,
  // which does not divide 64, but layouts with dp 2, 4, 8, 16 or 32 do; with
  // no layout flag given the search chooses one (as `plan` does) rather
  // than the placeholder layout being refused.
  const nlohmann::json j =
      PredictJson({"--model", "llama3-70b", "--cluster", "h100-sxm", "--gpus", "96", "--seq",
                   "8192", "--gbs", "64"},
                  {});
  const nlohmann::json& par = j["config"]["parallel"];
  const int dp = par["dp"].get<int>();
  EXPECT_EQ(96, par["tp"].get<int>() * par["pp"].get<int>() * par["cp"].get<int>() * dp);
  EXPECT_EQ(64 % (dp * par["mbs"].get<int>()), 0) << par.dump();
  // The same batch with the run layout given as all ones is still refused,
  // with the reason.
  const Result r = RunPredict({"--model", "llama3-70b", "--cluster", "h100-sxm", "--gpus", "96",
                               "--seq", "8192", "--gbs", "64", "--tp", "1", "--pp", "1", "--mbs",
                               "1"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("global_batch=64 is not divisible by mbs*dp=1*96"));
}

TEST(PredictCommandTest, InvalidCombinationsExitTwoWithOneLine) {
  const std::vector<std::vector<std::string>> cases = {
      {"--model", "deepseek-v3", "--cluster", "h100-sxm", "--gpus", "64", "--seq", "4096",
       "--gbs", "64", "--tp", "3"},
      {"--model", "deepseek-v3", "--cluster", "h100-sxm", "--gpus", "64", "--seq", "4096",
       "--gbs", "64", "--ep", "7"},
      {"--model", "llama3-8b", "--cluster", "h100-sxm", "--gpus", "8", "--seq", "4096",
       "--gbs", "64", "--precision", "mxfp8"},
      {"--model", "no-such-model", "--cluster", "h100-sxm", "--gpus", "8", "--seq", "4096",
       "--gbs", "64"},
      {"--model", "llama3-8b", "--cluster", "h100-sxm", "--gpus", "8", "--seq", "4096"},
  };
  for (const std::vector<std::string>& args : cases) {
    const Result r = RunPredict(args);
    EXPECT_EQ(r.code, kExitBadInput) << r.out;
    EXPECT_TRUE(r.out.empty());
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
  }
}

}  // namespace
}  // namespace moetune::cli
