// The knobs of the Megatron-Bridge performance recipes that the published
// Megatron-Bridge table rows ran and do not publish: the MoE dispatcher and
// EP A2A / TP comm overlap, the activation recompute, the layer-wise host
// offload, the CUDA-graph scope and the Adam state precision, each read from
// Megatron-Bridge at the row's container's release tag (26.02 v0.3.0,
// 26.02.01 v0.3.1, 26.04 v0.4.0, 26.04.01 v0.4.1 / v0.4.2, 26.06 v0.5.0,
// 26.06.01 v0.5.1, 26.08 v0.6.0) with the file and preset each fact comes
// from. //tests:validate gives each megatron-core-2026 row these facts (the
// MoE communication and offload always; recompute and graphs under
// --recompute_from=recipe / --graphs_from=recipe); the stage split is
// recipe_splits.h. Facts, not fitted values: nothing here is set by looking
// at a row's throughput.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/types/span.h"
#include "planner/precision.h"
#include "planner/step_model.h"
#include "planner/training_config.h"

namespace moetune::tests {

// The Megatron-Bridge performance recipes' MoE communication -- the token
// dispatcher and the combined-1F1B EP A2A overlap
// (--overlap-moe-expert-parallel-comm) -- where it differs from the stack's
// defaults (planner/run_defaults.h RunDefaultKnobs: DeepEP/HybridEP, overlap
// off), for the rows of the
// 2026 stack. Listed: every preset of the release tags the 2026 tables ran
// (26.02 v0.3.0, 26.02.01 v0.3.1, 26.04 v0.4.0, 26.04.01 v0.4.2 -- its
// DeepSeek-V3 B200 layout is v0.4.2's, not v0.4.1's --, 26.06 v0.5.0,
// 26.06.01 v0.5.1) that turns the overlap on or runs NCCL's all-to-all, for
// a model and GPU with published rows, resolved through the presets'
// `replace(...)` chains (scripts/performance/configs/<family>/
// *_workload_base_configs.py). The dispatcher a recipe runs: from v0.4.0 on,
// scripts/performance/utils/overrides.py set_workload_base_configs applies
// the preset's moe_flex_dispatcher_backend (DeepEP / HybridEP) and sets
// moe_token_dispatcher_type "alltoall" when the preset has none; at v0.3.0
// the model recipe applies the backend, "alltoall" without one; at v0.3.1
// the Qwen3 perf functions set the type themselves (Qwen3-235B on B200 /
// B300 / H100 "alltoall", the rest "flex"). WorkloadBaseConfig's
// moe_a2a_overlap defaults to False. Audited in the thirty-second session
// (planner/FINDINGS.md, "The recipes' EP A2A overlap and dispatchers,
// audited"); presets matching no published layout keep the defaults.
// Audited again in the thirty-third session: the 26.08 rows' recipes
// (branch r0.6.0, src/megatron/bridge/perf_recipes/{qwen,deepseek,gpt_oss}/
// {gb200,gb300}/, MXFP8) set the same dispatcher (flex + HybridEP), EP A2A
// overlap (on, with delay_wgrad_compute), CUDA graphs (full_iteration) and
// recompute as the 26.06 presets, so the open-ended 26.06 entries of the
// table (kRecipeMoeComm, bridge_recipes.cc) cover them as written; Kimi-K2's
// GB300 preset (v0.3.1 - v0.5.0, r0.6.0
// perf_recipes/kimi/gb300/kimi_k2.py) runs HybridEP without the overlap at
// every tag, which is the default (it also runs without CUDA graphs and
// with the Muon optimizer, which this table does not carry).
struct RecipeKnobs {
  const char* model_preset;
  const char* cluster_preset;
  planner::Dispatcher dispatcher;
  bool ep_a2a_overlap;
  bool tp_comm_overlap;
  // The containers whose recipe does so: from first_container to
  // last_container ("" = every later one). A row without a container counts
  // as its generation's first (26.02 or 26.06).
  const char* first_container;
  const char* last_container;
  // The precisions whose presets do so (0 = every precision).
  uint32_t precisions;
  // The recipe's layout (0 = any): a row publishing another layout ran
  // another preset, so the fact does not apply to it.
  int pp, vp, ep;
  const char* source;
};

// The first listed recipe that covers a row (model and cluster preset, the
// row's container -- or, without one, its generation's first container --,
// precision and layout), nullptr when the row's recipe runs the stack's
// defaults (planner/run_defaults.h: DeepEP / HybridEP, EP A2A overlap off).
const RecipeKnobs* RecipeMoeCommFor(const std::string& model_preset,
                                    const std::string& cluster_preset, const std::string& container,
                                    planner::StackGeneration generation,
                                    planner::Precision precision, const planner::ParallelConfig& p);

// The activation recompute each megatron-core-2026 row's recipe sets, read
// from Megatron-Bridge at the container's release tag (26.02 v0.3.0,
// 26.02.01 v0.3.1, 26.04 v0.4.0, 26.04.01 v0.4.1 / v0.4.2, 26.06 v0.5.0,
// 26.06.01 v0.5.1, 26.08 v0.6.0): the perf entry point
// (scripts/performance/configs/<family>/*_llm_pretrain.py or
// *_llm_finetune.py; from v0.6.0 src/megatron/bridge/perf_recipes/), its
// base recipe (src/megatron/bridge/recipes/...), the default (V2, else V1)
// preset of *_workload_base_configs.py whose layout is the row's, and the
// helper that applies it (scripts/performance/utils/overrides.py
// _set_recompute_overrides: recompute_modules not None -> selective with
// that list, [] included, which recomputes nothing; recompute_num_layers ->
// full / block; None keeps the base recipe's). runs.json publishes none of
// it, so the headline path infers recompute instead (--recompute_from).
// Read for the runs.json rows' presets only: the table ignores the
// container, which those rows' presets allow, but the held-out rows' do not
// (DeepSeek-V3 GB200: mla_up_proj at v0.3.x, mlp at v0.4.x, mla_up_proj from
// v0.5.0; GB300 FP8_MX: mla_up_proj through v0.4.2, [] from v0.5.0; B200
// v0.4.2: mla_up_proj + mlp; Kimi-K2 GB300: mla_up_proj), so a held-out row
// takes its own tag's preset from its annotation first
// (AnnotatedPresetRecompute, tools/audit_bridge_presets.py).
struct RecipeRecomputeFact {
  const char* model_preset;
  const char* cluster_preset;  // nullptr: every GPU
  planner::RecomputeMode mode;
  uint32_t modules;
  const char* source;
};

// Every fact of the table above, in its order (validate prints them under
// --recompute_from=recipe).
absl::Span<const RecipeRecomputeFact> RecipeRecomputeFacts();

// The recipe's recompute of a megatron-core-2026 row; nullopt where no
// preset has the row's layout (26.02.01 Llama3-70B NVFP4 on GB300 at MBS 2,
// PP 1: only FSDP + host-offload presets have it) or the model is not
// listed.
std::optional<planner::Recompute> RecipeRecomputeFor(const std::string& model_preset,
                                                     const std::string& cluster_preset,
                                                     const std::string& container,
                                                     planner::Precision precision, int pp);

// Layer-wise host offload of a megatron-core-2026 row's recipe (Knobs::
// offload_layers, priced with the recipe's recompute only): Megatron-
// Bridge's LLAMA3_70B_PRETRAIN_CONFIG_{GB200,GB300}_FP8_CS_V2 (micro-batch 2,
// Megatron-FSDP, cpu_offloading_num_layers 40 / 20, unchanged v0.3.0 -
// v0.5.0; scripts/performance/utils/overrides.py turns cpu_offloading on,
// activations only). 0 for every other row.
int RecipeOffloadLayersFor(const std::string& model_preset, const std::string& cluster_preset,
                           planner::Precision precision, const planner::ParallelConfig& p);

// The CUDA graphs a megatron-core-2026 row's recipe ran, read like
// kRecipeRecompute from Megatron-Bridge at the container's release tag
// (26.02 v0.3.0 ... 26.06.01 v0.5.1; 26.08 v0.6.0's flat perf_recipes):
// the row's preset in scripts/performance/configs/<family>/
// *_workload_base_configs.py (the V2, else V1 preset whose layout is the
// row's). A preset's cuda_graph_impl None keeps the base recipe's, which is
// Megatron-Core's default "none" (v0.3.0 - v0.4.x recipes set none; v0.5.0
// sets "none" explicitly for DeepSeek, GPT-OSS and Llama), so most presets
// run eager:
// - Llama3-70B / Llama3.1-405B pre-training: every preset of the rows None
//   or "none" (the NVFP4 ones "none" with a full_iteration scope, unused):
//   no graphs. Llama3-70B SFT / LoRA (26.06): transformer_engine, scope mlp,
//   except the H100 LoRA preset (None).
// - DeepSeek-V3 B200 / B300: None -> no graphs, except B300 from 26.04.01
//   (DEEPSEEK_V3_PRETRAIN_CONFIG_B300_V2: TE attn, moe_router,
//   moe_preprocess); GB300 26.06: full_iteration.
// - GPT-OSS-120B: B200 and GB200 BF16 None -> no graphs; B300 (BF16, and
//   MXFP8 = BF16_V2 at 26.06): TE attn, moe_router, moe_preprocess.
// - Qwen3-235B-A22B: B200 and H100 None -> no graphs; GB200 MXFP8 26.02 -
//   26.04.01 TE attn, moe_router, moe_preprocess, 26.06+ full_iteration.
// - Qwen3-30B-A3B: H100 None -> no graphs; B200 MXFP8 TE (26.02: moe_router,
//   moe_preprocess; 26.02.01+: with attn); GB300 MXFP8 26.02 - 26.04.01 TE
//   moe_router, moe_preprocess (no attn), 26.06+ full_iteration.
struct RecipeGraphs {
  bool on = false;  // cuda_graph_impl other than none
  bool full_iteration = false;
  bool attn = false, moe_router = false, moe_preprocess = false;  // TE scope
};

// nullopt where the table does not cover the model and GPU.
std::optional<RecipeGraphs> RecipeGraphsFor(const std::string& model, const std::string& gpu,
                                            const std::string& container,
                                            planner::Objective objective);

// The precision of the Adam state a row ran with, from its recipe: every
// Megatron-Bridge DeepSeek-V3 recipe (v0.1.0rc4 = 25.09 through v0.6.0 =
// 26.08, src/megatron/bridge/recipes/deepseek/deepseek_v3.py, from v0.6.0
// deepseek/h100/deepseek_v3.py, which the performance scripts' pretrain
// config aliases) sets use_precision_aware_optimizer with BF16 exp_avg,
// exp_avg_sq and main grads; the performance scripts turn it off only under
// Megatron-FSDP (scripts/performance/utils/overrides.py
// set_megatron_fsdp_overrides). The Megatron-LM DeepSeek-V3 GB200 guide's
// launch script sets BF16 exp_avg / exp_avg_sq ("BF16 optimizer states";
// docs/discussions/deepseek-v3-gb200-optimization/
// deepseek-v3-gb200-reproduce-guide.md). The Llama3, Llama3.1, Qwen3 and
// GPT-OSS recipes set fp32 state explicitly; the performance scripts'
// set_post_overrides turns the precision-aware optimizer on for BF16 Adam
// runs but leaves those fp32 dtypes (no change of state size).
planner::OptimizerStates RecipeOptimizerStatesFor(const std::string& id, const std::string& source,
                                                  const std::string& model_preset, bool fsdp);

}  // namespace moetune::tests
