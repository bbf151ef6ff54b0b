// Guards StepModel::Quick() against result changes from performance work:
// a deterministic sweep of model presets x clusters x training shapes x
// layouts x knob settings (~5,000 combinations, valid and invalid) whose
// Quick() outputs (infeasibility reason, step time, tokens/s/GPU, peak
// memory, fits) were recorded by the step model as it was before the fast
// path was optimised, in planner/testdata/quick_golden.txt. The numbers
// must agree within 1e-12 relative; reason and fits exactly -- through
// Quick(parallel, knobs) and through the search's Quick(prepared, knobs).
//
// Regenerate (only for an intended change of the model's results):
//   MOETUNE_UPDATE_GOLDEN=1 bazel run //planner:step_model_quick_equivalence_test
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/step_model.h"
#include "planner/training_config.h"

namespace moetune::planner {
namespace {

constexpr char kGolden[] = "planner/testdata/quick_golden.txt";

// Deterministic generator (64-bit LCG), so the sweep never depends on the
// standard library's distributions.
class Lcg {
 public:
  explicit Lcg(uint64_t seed) : s_(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
  uint32_t Next() {
    s_ = s_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(s_ >> 33);
  }
  int Pick(int n) { return static_cast<int>(Next() % static_cast<uint32_t>(n)); }
  bool Coin() { return (Next() & 1u) != 0; }

 private:
  uint64_t s_;
};

ParallelConfig RandomLayout(Lcg& g, const ModelSpec& m) {
  static const int kTp[] = {1, 2, 4, 8};
  static const int kPp[] = {1, 2, 4, 8, 16};
  static const int kVp[] = {1, 2, 4};
  static const int kCp[] = {1, 1, 2};
  static const int kEp[] = {1, 4, 8, 32, 64};
  static const int kEtp[] = {1, 1, 2};
  static const int kMbs[] = {1, 2, 4};
  ParallelConfig p;
  p.tp = kTp[g.Pick(4)];
  p.pp = kPp[g.Pick(5)];
  p.vp = p.pp > 1 ? kVp[g.Pick(3)] : 1;
  p.cp = kCp[g.Pick(3)];
  p.mbs = kMbs[g.Pick(3)];
  if (m.num_routed_experts > 0) {
    p.ep = kEp[g.Pick(5)];
    p.etp = kEtp[g.Pick(3)];
  }
  p.shard_params = g.Pick(8) == 0;
  if (p.pp * p.vp > 1 && g.Pick(5) == 0) {
    const int stages = p.pp * p.vp;
    const int mid = m.num_layers / stages;
    if (g.Coin()) p.first_stage_layers = std::max(0, mid - 1 + g.Pick(3));
    if (g.Coin()) p.last_stage_layers = std::max(0, mid - 2 + g.Pick(3));
  }
  return p;
}

Knobs RandomKnobs(Lcg& g) {
  Knobs k;
  k.precision = static_cast<Precision>(g.Pick(kNumPrecisions));
  switch (g.Pick(3)) {
    case 0:
      k.recompute.mode = RecomputeMode::kNone;
      break;
    case 1:
      k.recompute.mode = RecomputeMode::kSelective;
      k.recompute.modules = static_cast<uint32_t>(g.Pick(128));
      break;
    default:
      k.recompute.mode = RecomputeMode::kFull;
      k.recompute.num_layers = g.Pick(2) == 0 ? 0 : 1 + g.Pick(3);
      break;
  }
  if (g.Pick(3) == 0) {
    k.offload_activations = true;
    k.offload_modules = static_cast<uint32_t>(g.Pick(64));
  }
  k.dispatcher = g.Coin() ? Dispatcher::kFusedDedup : Dispatcher::kAllToAll;
  k.grouped_gemm = g.Pick(4) != 0;
  k.moe_load_imbalance = g.Pick(4) == 0 ? 1.25 : 1.0;
  k.overlap.tp_comm = g.Coin();
  k.overlap.ep_comm = g.Coin();
  k.overlap.dp_comm = g.Coin();
  k.overlap.pp_comm = g.Coin();
  k.overlap.num_comm_streams = 1 + g.Pick(2);
  k.cuda_graphs = g.Pick(3) != 0;
  // Natural routing (planner/routing.h) goes through its own expert cache.
  k.routing = g.Pick(3) == 0 ? Routing::kNatural : Routing::kBalanced;
  return k;
}

// Quick(parallel, knobs) for every combination, and (into *prepared_out)
// Quick(prepared, knobs) with the layout prepared once for its knob
// settings (one PreparedLayout reused across layouts, as the search does).
std::vector<Estimate> Sweep(std::vector<Estimate>* prepared_out) {
  const char* const kClusters[] = {"h100-sxm", "b300", "gb200-nvl72"};
  const TrainingShape kShapes[] = {{64, 4096, 512, Objective::kPretrain},
                                   {1024, 8192, 4096, Objective::kPretrain},
                                   {256, 4096, 1024, Objective::kLora}};
  StackConstants other;
  other.unfused_sink_layers = StackConstants::UnfusedSinkLayers::kAll;
  other.ep_overlap_needs_interleaving = false;
  constexpr int kValidLayouts = 16, kAnyLayouts = 4, kKnobsPerLayout = 4;
  std::vector<Estimate> out;
  uint64_t seed = 1;
  StepModel::PreparedLayout prepared;
  // The presets the golden was recorded with, fixed so that a preset added
  // later does not reshuffle the sweep's seeds.
  const char* const kModels[] = {"deepseek-v3",  "gpt-oss-120b",    "gpt3-175b",
                                 "kimi-k2",      "llama3-70b",      "llama3-8b",
                                 "llama3.1-405b", "mixtral-8x22b",  "mixtral-8x7b",
                                 "qwen3-235b-a22b", "qwen3-30b-a3b"};
  for (const std::string model_name : kModels) {
    const absl::StatusOr<ModelSpec> m = LoadModelPreset(model_name);
    EXPECT_TRUE(m.ok()) << model_name;
    if (!m.ok()) continue;
    for (const char* cluster_name : kClusters) {
      const absl::StatusOr<ClusterSpec> c = LoadClusterPreset(cluster_name);
      EXPECT_TRUE(c.ok()) << cluster_name;
      if (!c.ok()) continue;
      auto cost = std::make_shared<DatasheetCostModel>(*c);
      for (int si = 0; si < 3; ++si) {
        const TrainingShape& shape = kShapes[si];
        const absl::StatusOr<StepModel> sm = StepModel::Create(
            *m, *c, shape, cost, si == 1 ? other : StackConstants());
        EXPECT_TRUE(sm.ok()) << model_name << " " << cluster_name;
        if (!sm.ok()) continue;
        Lcg g(seed++);
        int valid = 0, any = 0;
        for (int tries = 0; tries < 2000 && (valid < kValidLayouts || any < kAnyLayouts);
             ++tries) {
          const ParallelConfig p = RandomLayout(g, *m);
          const bool ok = CheckLayout(*m, shape, p) == Infeasibility::kNone;
          if (ok ? valid >= kValidLayouts : any >= kAnyLayouts) continue;
          ++(ok ? valid : any);
          sm->Prepare(p, &prepared);
          for (int ki = 0; ki < kKnobsPerLayout; ++ki) {
            const Knobs k = RandomKnobs(g);
            out.push_back(sm->Quick(p, k));
            prepared_out->push_back(sm->Quick(prepared, k));
          }
        }
      }
    }
  }
  return out;
}

std::string Format(const Estimate& e) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%d %.17g %.17g %.17g %d",
                static_cast<int>(e.reason), e.step_time_s, e.tokens_per_sec_per_gpu,
                e.peak_memory_bytes, e.fits ? 1 : 0);
  return buf;
}

bool Close(double a, double b) {
  if (a == b) return true;
  return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b));
}

TEST(StepModelQuickEquivalenceTest, MatchesGolden) {
  std::vector<Estimate> prepared;
  const std::vector<Estimate> actual = Sweep(&prepared);
  ASSERT_GT(actual.size(), 3000u);
  ASSERT_EQ(prepared.size(), actual.size());
  const char* update = std::getenv("MOETUNE_UPDATE_GOLDEN");
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (update != nullptr && workspace != nullptr) {
    std::ofstream f(std::string(workspace) + "/" + kGolden);
    f << "# reason step_time_s tokens_per_sec_per_gpu peak_memory_bytes fits "
         "(step_model_quick_equivalence_test.cc)\n";
    for (const Estimate& e : actual) f << Format(e) << "\n";
    GTEST_SKIP() << "rewrote " << kGolden;
  }
  std::ifstream in(kGolden);
  ASSERT_TRUE(in.good()) << "missing " << kGolden;
  std::string line;
  std::vector<std::string> golden;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') golden.push_back(line);
  }
  ASSERT_EQ(golden.size(), actual.size());
  int feasible = 0, mismatches = 0;
  for (size_t j = 0; j < 2 * actual.size(); ++j) {
    const size_t i = j % actual.size();
    const bool via_prepared = j >= actual.size();
    std::istringstream s(golden[i]);
    int reason = 0, fits = 0;
    double step = 0, tps = 0, peak = 0;
    s >> reason >> step >> tps >> peak >> fits;
    ASSERT_FALSE(s.fail()) << "line " << i << ": " << golden[i];
    const Estimate& e = via_prepared ? prepared[i] : actual[i];
    bool ok = reason == static_cast<int>(e.reason);
    if (ok && e.reason == Infeasibility::kNone) {
      ++feasible;
      ok = fits == (e.fits ? 1 : 0) && Close(step, e.step_time_s) &&
           Close(tps, e.tokens_per_sec_per_gpu) && Close(peak, e.peak_memory_bytes);
    }
    if (!ok && ++mismatches <= 20) {
      ADD_FAILURE() << "combination " << i
                    << (via_prepared ? " (prepared layout)" : "") << ": golden " << golden[i]
                    << ", now " << Format(e);
    }
  }
  EXPECT_EQ(mismatches, 0);
  // The sweep must exercise the model, not only its layout checks.
  EXPECT_GT(feasible, 2 * 2000);
}

}  // namespace
}  // namespace moetune::planner
