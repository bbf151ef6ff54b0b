// What a run does with the flags it leaves unset -- how Predict answers
// "what will this run do" when the request pins the layout but not every
// knob (PlanRequest::unpinned_knobs == kRunDefaults, the default of
// `moetune predict` and the Predict RPC). The search (kSearch) answers a
// different question, "what is the best this layout can do", and is
// optimistic for a run that keeps its recipe's settings: given only their
// published layout, container and objective, the 88 megatron-core-2026 rows
// of runs.json come out MAPE 13.5%, mean signed +7.6% through the search and
// 6.9%, +1.2% through these defaults (forced-balanced routing, as the rows
// ran; validate's section "Through `moetune predict` with only the published
// layout"). The validator prices every row with them (tests/validate.cc
// ChooseKnobs, plus the recipes' own EP-overlap settings).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/cost_model.h"
#include "planner/model_spec.h"
#include "planner/software_stack.h"
#include "planner/training_config.h"

namespace moetune::planner {

struct PlanRequest;

// The predicted peak must stay within this share of HBM for a recompute
// choice to count as fitting: the Megatron-Bridge recipes keep room for the
// allocator's fragmentation and the NCCL / CUDA-graph pools the memory model
// does not see (runs.json: every published recipe with a recompute fits
// within it under the memory model; a tighter one would pick more recompute
// than the recipes ran). Set as 90% of the presets' memory when they read
// NVIDIA's binary GB as decimal (6.4-6.5% short of what nvidia-smi reports);
// against the memory nvidia-smi reports, the same threshold is 84%.
inline constexpr double kRunDefaultMemoryHeadroom = 0.84;

// The knobs of a Megatron-Core 2026 performance recipe for the flags a run
// does not set (Megatron-Bridge scripts/performance conventions): grouped
// GEMM, the flex dispatcher (DeepEP / HybridEP), CUDA graphs, TP / DP / PP
// communication overlap on with two communication streams, the EP A2A
// overlap off (WorkloadBaseConfig moe_a2a_overlap = False; only a few
// recipes turn it on), no recompute, no activation offload.
Knobs RunDefaultKnobs(Precision precision);

// What the run's CUDA graphs capture when the request does not say: the
// whole iteration for a MoE model at MXFP8 on a 26.06+ Megatron stack, else
// the scoped graphs (attn, moe_router, moe_preprocess) moetune's Megatron
// files write. Megatron-Bridge moved its MXFP8 MoE performance recipes to
// cuda_graph_impl full_iteration before 26.06 (MegatronFeatures::
// graph_full_iteration has the commits); its BF16, FP8 current-scaling and
// NVFP4 MoE recipes keep the scoped Transformer Engine graphs or none, and
// no Hopper recipe captures the whole iteration (perf_recipes/{qwen,
// deepseek,gpt_oss,kimi}/*/ at 067f987df0: every full_iteration recipe is
// an fp8_mx one).
CudaGraphScope RunDefaultCudaGraphScope(const SoftwareStack& stack, const ModelSpec& model,
                                        Precision precision);

// The selective-recompute modules of `modules` the model has: the MLA up
// projections only with multi-latent attention, the MoE modules only with
// routed experts (shared experts only with shared experts), the dense MLP
// only with dense layers. Megatron-Core refuses the others.
uint32_t RecomputeModulesOfModel(const ModelSpec& model, uint32_t modules);

// Recompute settings from lightest to heaviest, the order a run's recipe
// reaches for when a layout does not fit: none; moe_act + layernorm; + MLA
// up projections + core attention; + dense MLP + shared experts; + the
// whole MoE layer; full.
std::vector<Recompute> RecomputeLadder();

// Whether the request pins the layout run defaults need: tp, pp and mbs,
// and ep for a MoE model (vp, etp, cp left unset take Megatron's defaults:
// no interleaving, expert TP = TP, no context parallelism).
bool PinsRunLayout(const PlanRequest& request);

// Whether PredictPinned fills the request's unpinned knobs with the run
// defaults: it asks for them (UnpinnedKnobs::kRunDefaults), is a Megatron
// request and pins the run layout.
bool UsesRunDefaults(const PlanRequest& request);

// The execution knobs `request` leaves to the run defaults (UsesRunDefaults
// and unpinned), each as the flag a user would give: "--cuda-graphs",
// "--cuda-graph-scope" (MoE), "--dispatcher" (MoE with ep > 1),
// "--grouped-gemm" (MoE), "--overlap", "--comm-streams". Empty when the
// request pins them all or does not use run defaults. The recompute is not
// among them: the validator's headline infers every row's recompute by the
// same rule, so its errors already carry that guess. PredictPinned widens
// the prediction's interval over what these could be (request.h).
std::vector<std::string> RunKnobsNotGiven(const PlanRequest& request);

// The software stack PredictPinned prices `request` with: its own, with the
// CUDA-graph scope of RunDefaultCudaGraphScope when the request asks for run
// defaults, pins the run layout and does not give the scope.
SoftwareStack PredictedStack(const PlanRequest& request);

// `request` with every knob it leaves unset pinned to the run defaults
// (RunDefaultKnobs; vp 1, etp = tp (MoE; 1 dense), cp 1 where unset) and, when the recompute
// is unset, the lightest rung of RecomputeLadder() whose predicted peak fits
// within kRunDefaultMemoryHeadroom of HBM (the heaviest when none does: the
// prediction then says it does not fit). MaxText requests and requests that
// do not pin the run layout come back unchanged. Errors: those of the step
// model for the pinned layout (InvalidArgument naming what is wrong).
absl::StatusOr<PlanRequest> WithRunDefaults(const PlanRequest& request,
                                            std::shared_ptr<const CostModel> cost_model);

}  // namespace moetune::planner
