// Published runs outside runs.json whose recipes set knobs the validator's
// rows never vary: CUDA-graph scope (scoped graphs without attention, or
// full-iteration graphs), natural routing, FP8 dot-product attention. Each
// check carries its job, its published knobs as far as the step model has
// them, the measured throughput and its source; //tests:validate predicts
// each with the shipped constants and prints the error. Nothing here is
// fitted: the rows are checks, never training data.
//
// What they show (shipped constants, December 2026):
// - Qwen3-30B-A3B, Megatron-Bridge model verification card: each run priced
//   with its recipe's routing (natural in the functional runs, which train
//   on real data: 1.152 busiest-rank load on 8 GB200 EP8 MBS4, 1.274 on 16
//   H100 EP16 MBS1), graph scope (MegatronFeatures::graph_full_iteration:
//   the performance recipes on GB200/GB300 capture the whole iteration, the
//   functional ones and the H100 performance one scope graphs to
//   moe_router + moe_preprocess, where the MoE host time adds) and EP
//   overlap (off in the H100 functional recipe). Scoped-graph runs: H100
//   performance -17%, H100 functional -4%, GB200 functional +27% (each
//   +38 / +37 / +130% were the MoE host time hidden). Full-iteration runs:
//   GB200 +28%, GB300 +35% -- +3% / +7% with the EP overlap off, which is
//   where their error sits (the EP overlap on NVL72 hides much less than
//   its windows allow; not changed here).
// - Qwen3-30B-A3B H100 SFT without CUDA graphs (the recipe's NCCL
//   all-to-all dispatcher, EP16, 2 micro-batches of 2,048 tokens): +5%
//   with the recipe's knobs and natural routing (+17% balanced); priced with the flex dispatcher instead (what
//   an unpinned search picks) it is +75% -- the host-bound error comes
//   from the dispatcher choice, not from the host-op pricing.
// - GPT-OSS-120B MXFP8 GB200/GB300 26.06-26.08, with the recipe's knobs
//   (no recompute). The recipes set fp8_dot_product_attention; with softmax
//   sinks TE then allows only cuDNN fused attention (RecipeCheck::
//   fp8_attention), so the sink layers are priced fused and keep no S x S
//   probabilities: the layouts fit (they did not while the sliding-window
//   layers were priced unfused: 304 / 279 GiB of 260 / 173), and the time
//   comes out +82..+83% (FP8 attention's own speed not priced; the fused
//   sink attention is priced ~12x cheaper than the unfused one, which gave
//   -6..-12% as a what-if line): the time model's fused-sink attention is
//   too cheap for these rows. The 26.06.01 rows, which regressed in cuDNN's
//   fused MoE grouped GEMM + dGLU backward kernel (cudnn-frontend issue 256,
//   not attention), are +187..+197% fused, +43..+47% unfused.
// - The August 2026 performance cards (Megatron-Bridge model verification,
//   nemo:26.08, each priced as its recipe reads): DeepSeek-V3 256 GB200
//   +4.1%, 256 GB300 +0.9%, 1,024 H100 -1.6% (-11.0% before the dispatch
//   counted group-limited routing, DistinctDestinations); Qwen3-235B-A22B
//   256 GB200 +2.0%, 256 GB300 -2.2%. GB300 / GB200 per GPU, each
//   cluster's recipe: DeepSeek-V3 measured 1.298, priced 1.257; Qwen3-235B
//   1.200 vs 1.151.
//   GPT-OSS-120B: GB300 MXFP8 +36% (FP8 attention, as above); GB200 BF16
//   -9.1% and "does not fit" -- the recipe recomputes only layernorm and
//   moe_act, and the stack's unfused sliding-window sink layers keep S x S
//   probabilities the 186 GB could not hold, so the layers the time model
//   prices unfused cannot have run unfused with saved probabilities (the
//   mechanism behind their slow time is not known); H100 functional (TP2
//   PP4 EP16, NCCL all-to-all, natural routing on real data) +69%.
// - The pretraining cards of three further models (16 H100 each, no CUDA
//   graphs, cards that call their figures untuned sanity checks; added in
//   the eleventh session, never fitted): GPT-OSS-20B TP2 PP4 EP4 +6.5% (the
//   120B H100 card's recipe, whose EP 16 crosses nodes: +69%),
//   Moonlight-16B-A3B TP1 EP8 -17.5% (like Qwen3-30B-A3B, a small-expert
//   H100 MoE run priced too slow), Qwen3-8B dense TP1 +19.2% (62% MFU
//   priced, 52% measured: no runs.json row checks H100 BF16 GEMMs).
// - Megatron-LM's recipe index, the runs no knob ladder holds: DeepSeek-V3
//   GB200 +0.8%, GB300 -3.4%, B200 -4.1%; Qwen3-235B-A22B H100 +51%, B200
//   +33% (both cross-node EP with the A2A overlap), B300 +8%, GB300 -8%.
// - Megatron-MoE-ModelZoo's Qwen3-235B-A22B GB200 / GB300 runs (published
//   as TFLOP/s/GPU; added in the nineteenth session, never fitted): GB200
//   BF16 TP1 PP8 EP8 -31% (of its 37.7 s priced step, 18.1 s is MoE host
//   time for 16 local experts with scoped graphs), GB200 MXFP8 PP4 VP6
//   EP64 with offload -5%, GB200 MXFP8 128k tokens TP4 CP4 -18% (attention
//   646 of 818 s), GB300 MXFP8 EP64 -6%: all four priced too slow.
// - The MCore release-tracker rows of Megatron-Bridge's MoE hardware-configs
//   skill card (validated 2026-07-31, TFLOP/s/GPU rounded: "~520"; added in
//   the thirtieth session, never fitted), with each row's listed knobs:
//   DeepSeek-V3 1,024 H100 FP8 blockwise TP2 EP64 with the 1F1B overlap
//   +23.6% (-11.9% with the overlap off: a flex backend's cross-node EP
//   under the overlap on H100 at TP 2 with a pipeline hides less than
//   priced, as on the ModelZoo and recipe-index Qwen3-235B H100 runs; the
//   latter's unmerged re-measurement, 302.0, would put it at +5.6%), 256
//   B200 BF16 -9.3%, 256 B200 MXFP8 -1.6%;
//   256 GB200 / GB300 MXFP8 EP64 with scoped graphs +6.7 / +8.8%;
//   Qwen3-235B-A22B 128 B200 BF16 +3.1%, 128 GB200 BF16 -1.4%; Qwen3-30B-A3B
//   32 H100 full recompute +7.8%: MAPE 7.8%.
#pragma once

#include <string>
#include <vector>

#include "planner/step_model.h"
#include "planner/training_config.h"

namespace moetune::tests {

struct RecipeCheck {
  std::string id;
  std::string source;  // where the measured figure and the recipe are published
  std::string recipe;  // the recipe's settings that matter here, as published
  std::string model_preset;
  std::string cluster_preset;
  planner::TrainingShape shape;
  planner::ParallelConfig parallel;
  planner::StackGeneration generation = planner::StackGeneration::k2606;
  planner::Knobs knobs;
  planner::MegatronFeatures features;
  // The recipe sets fp8_dot_product_attention: attention with softmax sinks
  // then runs only through cuDNN fused attention (TE attention/
  // dot_product_attention/utils.py get_attention_backend: in FP8 with
  // softmax_type != vanilla UnfusedDotProductAttention is disabled and
  // FusedAttention needs sm >= 100 and cuDNN >= 9.21), so every sink layer
  // is priced fused, with no S x S probabilities kept for backward.
  bool fp8_attention = false;
  // What the published recipe runs that the step model has no mechanism
  // for (empty: everything it sets is modelled).
  std::string not_modelled;
  double measured_tokens_per_sec_per_gpu = 0;
  // Published as model TFLOP/s per GPU instead (Megatron-LM's count, which
  // halves causal attention as the model does): compared as TFLOP/s, i.e.
  // converted to tokens with the prediction's own FLOPs per token.
  double measured_tflops_per_gpu = 0;
  // Which published set the run belongs to: //tests:validate sums each set
  // up as one out-of-sample figure and compares each model's GB300 and
  // GB200 runs within a set.
  enum class Set {
    kOther,
    // Megatron-Bridge model verification cards (examples/
    // model_verification_cards/*/card.yaml).
    kVerificationCard,
    // Megatron-LM's MoE recipe index (examples/moe_recipes/README.md).
    kRecipeIndex,
    // Megatron-MoE-ModelZoo's Qwen3-235B-A22B GB200 / GB300 runs
    // (best_practice/qwen3/readme.md).
    kModelZoo,
    // The MCore Release Performance Tracker rows of Megatron-Bridge's MoE
    // hardware-configs skill card (skills/nemo-mbridge-perf-moe-hardware-
    // configs/card.yaml best_configs), TFLOP/s/GPU as the card rounds them.
    kReleaseTracker,
  };
  Set set = Set::kOther;
};

// A set's short label ("verification cards") and its title, with where and
// when it was published, for //tests:validate's summaries.
const char* SetLabel(RecipeCheck::Set set);
const char* SetTitle(RecipeCheck::Set set);

// Qwen3-30B-A3B on 8 GB200 / 16 H100 (Megatron-Bridge model verification
// card, scoped vs full-iteration CUDA graphs), GPT-OSS-120B MXFP8 on 64
// GB200 / GB300 (Megatron-Bridge performance summary, 26.06 - 26.08), the
// DeepSeek-V3 (256 GB200 / GB300, 1,024 H100), Qwen3-235B-A22B (256 GB200 /
// GB300) and GPT-OSS-120B performance cards (August 2026), and the
// DeepSeek-V3 and Qwen3-235B-A22B runs of Megatron-LM's MoE recipe index
// that no knob ladder holds, Megatron-MoE-ModelZoo's Qwen3-235B-A22B
// GB200 / GB300 runs, and the release-tracker rows of the MoE
// hardware-configs card that no other set holds.
std::vector<RecipeCheck> PublicRecipeChecks();

}  // namespace moetune::tests
