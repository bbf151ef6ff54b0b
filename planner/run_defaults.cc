#include "planner/run_defaults.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "planner/framework_rules.h"
#include "planner/request.h"
#include "planner/step_model.h"

namespace moetune::planner {

Knobs RunDefaultKnobs(Precision precision) {
  Knobs k;  // no recompute, no offload, TP/EP/DP/PP overlap on, 2 streams
  k.precision = precision;
  k.grouped_gemm = true;
  k.dispatcher = Dispatcher::kFusedDedup;
  k.cuda_graphs = true;
  k.overlap.ep_comm = false;
  return k;
}

CudaGraphScope RunDefaultCudaGraphScope(const SoftwareStack& stack, const ModelSpec& model,
                                        Precision precision) {
  const bool full = stack.framework == Framework::kMegatron &&
                    stack.generation == StackGeneration::k2606 && model.IsMoe() &&
                    precision == Precision::kMxfp8;
  return full ? CudaGraphScope::kFullIteration : CudaGraphScope::kModules;
}

uint32_t RecomputeModulesOfModel(const ModelSpec& m, uint32_t modules) {
  if (m.attention != AttentionType::kMla) modules &= ~uint32_t(kRecomputeMlaUpProj);
  if (!m.IsMoe()) {
    return modules & ~uint32_t(kRecomputeMoeAct | kRecomputeMoe | kRecomputeSharedExperts);
  }
  bool dense_layers = false;
  for (int l = 0; l < m.num_layers; ++l) dense_layers = dense_layers || !m.IsMoeLayer(l);
  if (!dense_layers) modules &= ~uint32_t(kRecomputeMlp);
  if (m.num_shared_experts == 0) modules &= ~uint32_t(kRecomputeSharedExperts);
  return modules;
}

std::vector<Recompute> RecomputeLadder() {
  const uint32_t rungs[] = {
      0,
      kRecomputeMoeAct | kRecomputeLayerNorm,
      kRecomputeMoeAct | kRecomputeLayerNorm | kRecomputeMlaUpProj | kRecomputeCoreAttn,
      kRecomputeMoeAct | kRecomputeLayerNorm | kRecomputeMlaUpProj | kRecomputeCoreAttn |
          kRecomputeMlp | kRecomputeSharedExperts,
      kRecomputeMoeAct | kRecomputeLayerNorm | kRecomputeMlaUpProj | kRecomputeCoreAttn |
          kRecomputeMlp | kRecomputeSharedExperts | kRecomputeMoe,
  };
  std::vector<Recompute> ladder;
  for (const uint32_t modules : rungs) {
    Recompute r;
    r.mode = modules == 0 ? RecomputeMode::kNone : RecomputeMode::kSelective;
    r.modules = modules;
    ladder.push_back(r);
  }
  Recompute full;
  full.mode = RecomputeMode::kFull;
  ladder.push_back(full);
  return ladder;
}

bool PinsRunLayout(const PlanRequest& r) {
  const FixedKnobs& f = r.constraints.fixed;
  return f.tp && f.pp && f.mbs && (f.ep || !r.model.IsMoe());
}

namespace {

// The precision a run-defaults prediction prices: the pinned one, else the
// request's first allowed one, else BF16.
Precision RunPrecision(const PlanRequest& r) {
  return r.constraints.fixed.precision.value_or(
      r.constraints.precisions.empty() ? Precision::kBf16 : r.constraints.precisions.front());
}

// The request's stack with the run's graph scope where the caller gave none.
SoftwareStack RunStack(const PlanRequest& r) {
  SoftwareStack stack = r.stack;
  if (!r.cuda_graph_scope_given) {
    stack.cuda_graph_scope = RunDefaultCudaGraphScope(r.stack, r.model, RunPrecision(r));
  }
  return stack;
}

}  // namespace

bool UsesRunDefaults(const PlanRequest& r) {
  return r.unpinned_knobs == UnpinnedKnobs::kRunDefaults &&
         r.stack.framework == Framework::kMegatron && PinsRunLayout(r);
}

std::vector<std::string> RunKnobsNotGiven(const PlanRequest& r) {
  std::vector<std::string> unset;
  if (!UsesRunDefaults(r)) return unset;
  const FixedKnobs& f = r.constraints.fixed;
  const bool moe = r.model.IsMoe();
  if (!f.cuda_graphs) unset.push_back("--cuda-graphs");
  if (moe && !r.cuda_graph_scope_given) unset.push_back("--cuda-graph-scope");
  if (moe && f.ep.value_or(1) > 1 && !f.dispatcher && r.constraints.dispatchers.size() != 1) {
    unset.push_back("--dispatcher");
  }
  if (moe && !f.grouped_gemm) unset.push_back("--grouped-gemm");
  if (!f.overlap && !f.overlap_exact) unset.push_back("--overlap");
  if (!f.comm_streams) unset.push_back("--comm-streams");
  return unset;
}

SoftwareStack PredictedStack(const PlanRequest& r) {
  return UsesRunDefaults(r) ? RunStack(r) : r.stack;
}

absl::StatusOr<PlanRequest> WithRunDefaults(const PlanRequest& r,
                                            std::shared_ptr<const CostModel> cost_model) {
  if (r.stack.framework != Framework::kMegatron || !PinsRunLayout(r)) return r;
  const FixedKnobs& given = r.constraints.fixed;
  // The layout, with Megatron's defaults for the flags not given.
  ParallelConfig p;
  p.tp = *given.tp, p.pp = *given.pp, p.mbs = *given.mbs;
  p.ep = given.ep.value_or(1);
  p.vp = given.vp.value_or(1);
  p.etp = given.etp.value_or(r.model.IsMoe() ? p.tp : 1);  // Megatron: expert TP = TP
  p.cp = given.cp.value_or(1);
  p.dp = given.dp.value_or(0);
  ApplyLayoutPins(given, &p);
  if (!given.etp && p.etp > 1 &&
      CheckLayout(r.model, r.shape, p) == Infeasibility::kExpertLayoutMismatch) {
    // Megatron would refuse the run too (initialize_model_parallel: the
    // expert grid etp x ep x edp must fill tp x cp x dp); say which default
    // did it, since the user never typed etp.
    return absl::InvalidArgumentError(absl::StrCat(
        Validate(r.model, r.shape, p).message(), ": etp was not given and defaults to tp=", p.tp,
        " (Megatron's --expert-tensor-parallel-size default); pass --etp 1 if the run used "
        "expert tensor parallelism 1"));
  }
  // The knobs: the run defaults under what the request pins.
  Knobs k = RunDefaultKnobs(RunPrecision(r));
  if (!given.dispatcher && r.constraints.dispatchers.size() == 1) {
    k.dispatcher = r.constraints.dispatchers.front();
  }
  ApplyKnobPins(given, &k);  // the recompute is set per rung below
  ApplyUnsearchedKnobs(r.constraints, &k);

  // What the framework runs for these knobs (framework_rules.h: a default it
  // would not run is turned off as the search does; a pinned one it refuses
  // is left to Predict to report), with the given recompute or else the
  // lightest rung that fits under the request's own step model (the memory
  // model depends on no fitted constant).
  std::vector<Recompute> rungs;
  if (given.recompute) {
    rungs.push_back(*given.recompute);
  } else if (given.offload_layers.value_or(0) > 0) {
    rungs.push_back(Recompute{});  // Megatron's layer-wise offload runs without recompute
  } else {
    for (Recompute rc : RecomputeLadder()) {
      rc.modules = RecomputeModulesOfModel(r.model, rc.modules);
      if (rc.mode == RecomputeMode::kSelective && rc.modules == 0) continue;  // as none
      rungs.push_back(rc);
    }
  }
  const SoftwareStack stack = RunStack(r);
  absl::StatusOr<StepModel> sm = StepModel::Create(r.model, r.cluster, r.shape,
                                                   std::move(cost_model), StackConstantsFor(stack));
  if (!sm.ok()) return sm.status();
  NormalizedKnobs chosen;
  for (const Recompute& rc : rungs) {
    k.recompute = rc;
    chosen = NormalizeFor(r.stack.framework, r.model, p, given, k,
                          stack.cuda_graph_scope == CudaGraphScope::kFullIteration);
    if (chosen.violation || given.recompute) break;
    absl::StatusOr<Prediction> pred = sm->Predict(p, chosen.knobs);
    if (!pred.ok()) return pred.status();
    if (pred->peak_memory_bytes <= kRunDefaultMemoryHeadroom * pred->hbm_bytes) break;
  }
  if (chosen.violation) return r;  // Predict names the rule the pins break

  PlanRequest out = r;
  out.stack = stack;
  FixedKnobs& f = out.constraints.fixed;
  const Knobs& n = chosen.knobs;  // every knob pinned as normalised
  f.ep = p.ep, f.vp = p.vp, f.etp = p.etp, f.cp = p.cp;
  PinKnobs(n, &f);
  return out;
}

}  // namespace moetune::planner
