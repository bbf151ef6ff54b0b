#include "tests/internal/bridge_recipes.h"

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "planner/precision.h"
#include "planner/step_model.h"
#include "planner/training_config.h"

namespace moetune::tests {

namespace mp = moetune::planner;

namespace {

constexpr uint32_t PrecisionBit(mp::Precision p) { return 1u << static_cast<int>(p); }
constexpr uint32_t kEveryPrecision = 0;
constexpr uint32_t kMxfp8Only = PrecisionBit(mp::Precision::kMxfp8);

constexpr RecipeKnobs kRecipeMoeComm[] = {
    // scripts/performance/configs/qwen/qwen3_llm_pretrain.py
    // qwen3_235b_a22b_pretrain_config_h100 (commits d28afef38 2026-02-15 ..
    // 55443cbfb 2026-06-10): CommOverlapConfig(tp_comm_overlap=False),
    // moe_token_dispatcher_type "alltoall" (the flex backend then unused);
    // qwen3_workload_base_configs.py QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_*:
    // moe_a2a_overlap True (v0.3.0 - v0.5.1).
    {"qwen3-235b-a22b", "h100-sxm", mp::Dispatcher::kAllToAll, true, false, "26.02", "",
     kEveryPrecision, 0, 0, 0,
     "Megatron-Bridge qwen3_llm_pretrain.py, qwen3_workload_base_configs.py (H100)"},
    // Megatron-Bridge 55443cbfb (2026-06-10, "Enable Qwen3 GB200/GB300 MXFP8
    // CuTeDSL Fusion and Full-Iter CUDA Graphs"), qwen3_workload_base_configs.py:
    // QWEN3_235B_A22B_PRETRAIN_CONFIG_{GB200,GB300}_FP8_MX_V2 and
    // QWEN3_30B_A3B_PRETRAIN_CONFIG_{GB200,GB300,B300}_FP8_MX_V1 get
    // moe_a2a_overlap=True (with set_full_iter_cg_configs in
    // qwen3_llm_pretrain.py); the flex dispatcher (HybridEP) stays. The
    // 26.06+ tables are those recipes.
    {"qwen3-235b-a22b", "gb200-nvl72", mp::Dispatcher::kFusedDedup, true, true, "26.06", "",
     kMxfp8Only, 0, 0, 0, "Megatron-Bridge 55443cbfb qwen3_workload_base_configs.py"},
    {"qwen3-235b-a22b", "gb300-nvl72", mp::Dispatcher::kFusedDedup, true, true, "26.06", "",
     kMxfp8Only, 0, 0, 0, "Megatron-Bridge 55443cbfb qwen3_workload_base_configs.py"},
    {"qwen3-30b-a3b", "gb200-nvl72", mp::Dispatcher::kFusedDedup, true, true, "26.06", "",
     kMxfp8Only, 0, 0, 0, "Megatron-Bridge 55443cbfb qwen3_workload_base_configs.py"},
    {"qwen3-30b-a3b", "gb300-nvl72", mp::Dispatcher::kFusedDedup, true, true, "26.06", "",
     kMxfp8Only, 0, 0, 0, "Megatron-Bridge 55443cbfb qwen3_workload_base_configs.py"},
    {"qwen3-30b-a3b", "b300", mp::Dispatcher::kFusedDedup, true, true, "26.06", "", kMxfp8Only, 0,
     0, 0, "Megatron-Bridge 55443cbfb qwen3_workload_base_configs.py"},
    // Megatron-Bridge 8af195c0a (2026-06-06, "DSV3 GB300 MXFP8 full-iter CG
    // recipe"), deepseek_workload_base_configs.py:
    // DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_V{1,2} get moe_a2a_overlap=True.
    {"deepseek-v3", "gb300-nvl72", mp::Dispatcher::kFusedDedup, true, true, "26.06", "", kMxfp8Only,
     0, 0, 0, "Megatron-Bridge 8af195c0a deepseek_workload_base_configs.py"},
    // Missing before the audit. v0.3.0 (26.02) qwen3_workload_base_configs.py
    // QWEN3_235B_A22B_PRETRAIN_CONFIG_B300_{BF16,FP8_CS}_V1 (FP8_MX_V1 = FP8_CS_V1;
    // the V2 presets replace() them): PP8 VP4 EP8, moe_a2a_overlap=True, no
    // flex backend (all-to-all). v0.3.1 (6f5e31aab, "Update Qwen3 235B B300
    // Configs to match Qwen3 B200 Configs") moved them to PP8 without
    // interleaving and the overlap off, so the 26.02.01 row, which publishes
    // v0.3.0's VP 4, matches no preset of its tag.
    {"qwen3-235b-a22b", "b300", mp::Dispatcher::kAllToAll, true, true, "26.02", "26.02",
     kEveryPrecision, 8, 4, 8,
     "Megatron-Bridge v0.3.0 qwen3_workload_base_configs.py "
     "QWEN3_235B_A22B_PRETRAIN_CONFIG_B300_*"},
    // Missing before the audit. v0.3.0 (26.02) QWEN3_30B_A3B_PRETRAIN_CONFIG_
    // H100_{BF16,FP8_CS}_V1: PP2 VP12 EP8, moe_a2a_overlap=True, DeepEP.
    // v0.3.1 (f29a269f8, "Update Qwen3 30B H100 Base Configs with HybridEP")
    // moved them to EP16 without pipelining, HybridEP, the overlap off.
    {"qwen3-30b-a3b", "h100-sxm", mp::Dispatcher::kFusedDedup, true, true, "26.02", "26.02",
     kEveryPrecision, 2, 12, 8,
     "Megatron-Bridge v0.3.0 qwen3_workload_base_configs.py QWEN3_30B_A3B_PRETRAIN_CONFIG_H100_*"},
    // Missing before the audit. v0.4.2 (a8b6cb3d6, "b200 DSv3 better cfg"),
    // still in v0.5.1 and in v0.6.0's perf_recipes/deepseek/b200:
    // DEEPSEEK_V3_PRETRAIN_CONFIG_B200_{FP8_MX,NVFP4}_V2: PP8 VP2 EP32 (EP
    // across four 8-GPU nodes), DeepEP, moe_a2a_overlap=True.
    {"deepseek-v3", "b200", mp::Dispatcher::kFusedDedup, true, true, "26.04.01", "",
     kMxfp8Only | PrecisionBit(mp::Precision::kNvfp4), 8, 2, 32,
     "Megatron-Bridge v0.4.2 deepseek_workload_base_configs.py "
     "DEEPSEEK_V3_PRETRAIN_CONFIG_B200_*_V2"},
    // Missing before the audit. v0.5.0 - v0.5.1 DEEPSEEK_V3_PRETRAIN_CONFIG_
    // GB200_FP8_MX_V{1,2} (and v0.6.0 perf_recipes/deepseek/gb200): HybridEP,
    // full-iteration graphs, moe_a2a_overlap=True.
    {"deepseek-v3", "gb200-nvl72", mp::Dispatcher::kFusedDedup, true, true, "26.06", "", kMxfp8Only,
     0, 0, 0,
     "Megatron-Bridge v0.5.0 deepseek_workload_base_configs.py "
     "DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_FP8_MX_*"},
    // Missing before the audit. GPT_OSS_120B_PRETRAIN_CONFIG_GB200_{BF16,
    // FP8_MX}_V2 (EP64): moe_a2a_overlap=True from v0.4.0, with HybridEP at
    // v0.4.0 (26.04) and the all-to-all from Bridge PR 3561 (cherry-picked
    // as ee3d3068b into r0.4.0, in v0.4.2: 26.04.01); v0.5.0 (26.06) keeps
    // the all-to-all for BF16 and gives FP8_MX_V2 HybridEP with full-iteration
    // graphs. GPT_OSS_120B_PRETRAIN_CONFIG_GB300_FP8_MX_V2 (v0.5.0 on, EP16):
    // HybridEP, moe_a2a_overlap=True.
    {"gpt-oss-120b", "gb200-nvl72", mp::Dispatcher::kFusedDedup, true, false, "26.04", "26.04",
     kEveryPrecision, 1, 1, 64,
     "Megatron-Bridge v0.4.0 gpt_oss_workload_base_configs.py "
     "GPT_OSS_120B_PRETRAIN_CONFIG_GB200_*_V2"},
    {"gpt-oss-120b", "gb200-nvl72", mp::Dispatcher::kAllToAll, true, false, "26.04.01", "26.04.01",
     kEveryPrecision, 1, 1, 64,
     "Megatron-Bridge v0.4.2 gpt_oss_workload_base_configs.py "
     "GPT_OSS_120B_PRETRAIN_CONFIG_GB200_*_V2 (PR 3561)"},
    {"gpt-oss-120b", "gb200-nvl72", mp::Dispatcher::kAllToAll, true, false, "26.06", "",
     PrecisionBit(mp::Precision::kBf16), 1, 1, 64,
     "Megatron-Bridge v0.5.0 gpt_oss_workload_base_configs.py "
     "GPT_OSS_120B_PRETRAIN_CONFIG_GB200_BF16_V2"},
    {"gpt-oss-120b", "gb200-nvl72", mp::Dispatcher::kFusedDedup, true, false, "26.06", "",
     kMxfp8Only, 1, 1, 64,
     "Megatron-Bridge v0.5.0 gpt_oss_workload_base_configs.py "
     "GPT_OSS_120B_PRETRAIN_CONFIG_GB200_FP8_MX_V2"},
    {"gpt-oss-120b", "gb300-nvl72", mp::Dispatcher::kFusedDedup, true, false, "26.06", "",
     kMxfp8Only, 1, 1, 16,
     "Megatron-Bridge v0.5.0 gpt_oss_workload_base_configs.py "
     "GPT_OSS_120B_PRETRAIN_CONFIG_GB300_FP8_MX_V2"},
    // v0.5.1 QWEN3_235B_A22B_PRETRAIN_CONFIG_B200_FP8_MX_V2: PP8 VP3 EP8,
    // HybridEP, moe_a2a_overlap=True (no published row yet; listed so the
    // all-to-all entry below does not claim it).
    {"qwen3-235b-a22b", "b200", mp::Dispatcher::kFusedDedup, true, false, "26.06.01", "",
     kMxfp8Only, 8, 3, 8,
     "Megatron-Bridge v0.5.1 qwen3_workload_base_configs.py "
     "QWEN3_235B_A22B_PRETRAIN_CONFIG_B200_FP8_MX_V2"},
    // The presets without a flex backend, so NCCL's all-to-all, overlap off
    // (all at TP 1: no TP communication to overlap).
    // Before the audit these rows were priced with DeepEP / HybridEP.
    // GPT-OSS-120B: GPT_OSS_120B_PRETRAIN_CONFIG_{B200,B300}_* at EP64 (V1
    // every tag, V2 through v0.3.1), B200_*_V2 at EP8 from v0.4.2 (v0.4.0's
    // had HybridEP), GB200_BF16_{V1,V2} before v0.4.0's overlap, GB300_* at
    // EP64 (BF16 every tag, FP8_MX through v0.4.2), H100_* (PP4 EP8).
    {"gpt-oss-120b", "b200", mp::Dispatcher::kAllToAll, false, false, "26.02", "", kEveryPrecision,
     1, 1, 64, "Megatron-Bridge v0.3.0-v0.5.1 gpt_oss_workload_base_configs.py B200 EP64 presets"},
    {"gpt-oss-120b", "b200", mp::Dispatcher::kAllToAll, false, false, "26.04.01", "",
     kEveryPrecision, 1, 1, 8,
     "Megatron-Bridge v0.4.2-v0.5.1 gpt_oss_workload_base_configs.py "
     "GPT_OSS_120B_PRETRAIN_CONFIG_B200_*_V2"},
    {"gpt-oss-120b", "b300", mp::Dispatcher::kAllToAll, false, false, "26.02", "", kEveryPrecision,
     1, 1, 64, "Megatron-Bridge v0.3.0-v0.5.1 gpt_oss_workload_base_configs.py B300 EP64 presets"},
    {"gpt-oss-120b", "gb200-nvl72", mp::Dispatcher::kAllToAll, false, false, "26.02", "26.02.01",
     kEveryPrecision, 1, 1, 64,
     "Megatron-Bridge v0.3.0-v0.3.1 gpt_oss_workload_base_configs.py "
     "GPT_OSS_120B_PRETRAIN_CONFIG_GB200_*"},
    {"gpt-oss-120b", "gb300-nvl72", mp::Dispatcher::kAllToAll, false, false, "26.02", "",
     kEveryPrecision, 1, 1, 64,
     "Megatron-Bridge v0.3.0-v0.5.1 gpt_oss_workload_base_configs.py GB300 EP64 presets"},
    {"gpt-oss-120b", "h100-sxm", mp::Dispatcher::kAllToAll, false, false, "26.02", "",
     kEveryPrecision, 4, 1, 8,
     "Megatron-Bridge v0.3.0-v0.5.1 gpt_oss_workload_base_configs.py "
     "GPT_OSS_120B_PRETRAIN_CONFIG_H100_*"},
    // Qwen3-235B-A22B on B200: every preset of every tag (the perf function
    // sets "alltoall" and no preset has a backend) but v0.5.1's FP8_MX_V2
    // above; on B300: PP8 without interleaving at v0.3.1 (its perf function
    // sets "alltoall" whatever the preset) and v0.4.0 (no backend);
    // HybridEP from v0.4.2.
    {"qwen3-235b-a22b", "b200", mp::Dispatcher::kAllToAll, false, false, "26.02", "",
     kEveryPrecision, 8, 0, 8,
     "Megatron-Bridge v0.3.0-v0.5.1 qwen3_llm_pretrain.py qwen3_235b_a22b_pretrain_config_b200"},
    {"qwen3-235b-a22b", "b300", mp::Dispatcher::kAllToAll, false, false, "26.02.01", "26.04",
     kEveryPrecision, 8, 1, 8,
     "Megatron-Bridge v0.3.1-v0.4.0 qwen3_workload_base_configs.py "
     "QWEN3_235B_A22B_PRETRAIN_CONFIG_B300_*"},
    // Qwen3-30B-A3B on B200 at v0.3.0: no backend in QWEN3_30B_A3B_PRETRAIN_
    // CONFIG_B200_*_V1 (v0.3.1 gave it HybridEP).
    {"qwen3-30b-a3b", "b200", mp::Dispatcher::kAllToAll, false, false, "26.02", "26.02",
     kEveryPrecision, 1, 1, 8,
     "Megatron-Bridge v0.3.0 qwen3_workload_base_configs.py "
     "QWEN3_30B_A3B_PRETRAIN_CONFIG_B200_*_V1"},
};

// Whether a row of `container` (or, without one, of `generation`: its first
// container) ran a tag between `first` and `last` ("" = open).
bool ContainerInRange(const std::string& container, mp::StackGeneration generation,
                      const char* first, const char* last) {
  absl::StatusOr<mp::ContainerVersion> v = mp::ParseContainerVersion(container);
  if (!v.ok()) v = mp::ParseContainerVersion(mp::StackGenerationName(generation));
  const absl::StatusOr<mp::ContainerVersion> lo = mp::ParseContainerVersion(first);
  if (lo.ok() && *v < *lo) return false;
  const absl::StatusOr<mp::ContainerVersion> hi = mp::ParseContainerVersion(last);
  return !hi.ok() || !(*hi < *v);
}

constexpr RecipeRecomputeFact kRecipeRecompute[] = {
    // Every Llama3-70B / Llama3.1-405B pre-training, SFT and LoRA preset
    // of the rows sets no recompute_modules / recompute_num_layers (the
    // 405B GB200 NVFP4 V1 preset's recompute_num_layers=1 is reset to None
    // by its V2; only the H100 BF16 LoRA preset sets one, no row) and the
    // base recipes leave recompute_granularity None. The 70B FP8 GB200 /
    // GB300 TP1 PP1 presets (26.02 - 26.04.01) offload 40 / 20 layers'
    // activations to the host instead (cpu_offloading_num_layers, with
    // Megatron-FSDP): RecipeOffloadLayersFor.
    {"llama3-70b", nullptr, mp::RecomputeMode::kNone, 0,
     "llama3_workload_base_configs.py *_V2, llama3_llm_{pretrain,finetune}.py"},
    {"llama3.1-405b", nullptr, mp::RecomputeMode::kNone, 0,
     "llama31_workload_base_configs.py *_V2, llama31_llm_pretrain.py"},
    // set_qwen3_common_configs (qwen3_llm_pretrain.py) sets
    // recompute_granularity / method / num_layers None after the base
    // recipe (overriding Qwen3-30B-A3B's full / uniform / 1); no preset sets
    // recompute; v0.6.0's flat recipes set them None themselves.
    {"qwen3-235b-a22b", nullptr, mp::RecomputeMode::kNone, 0,
     "qwen3_llm_pretrain.py set_qwen3_common_configs"},
    {"qwen3-30b-a3b", nullptr, mp::RecomputeMode::kNone, 0,
     "qwen3_llm_pretrain.py set_qwen3_common_configs"},
    // deepseek_workload_base_configs.py: B200 / B300 presets
    // recompute_modules=["mla_up_proj"] (set_deepseek_v3_common_configs
    // makes it selective); GB300 FP8_MX (and its GBS 15360 variant)
    // recompute_modules=[], recomputing nothing.
    {"deepseek-v3", "b200", mp::RecomputeMode::kSelective, mp::kRecomputeMlaUpProj,
     "deepseek_workload_base_configs.py DEEPSEEK_V3_PRETRAIN_CONFIG_B200_*"},
    {"deepseek-v3", "b300", mp::RecomputeMode::kSelective, mp::kRecomputeMlaUpProj,
     "deepseek_workload_base_configs.py DEEPSEEK_V3_PRETRAIN_CONFIG_B300_*"},
    {"deepseek-v3", "gb300-nvl72", mp::RecomputeMode::kNone, 0,
     "deepseek_workload_base_configs.py DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_FP8_MX_*"},
    // gpt_oss_workload_base_configs.py: GB200 / B200 presets
    // recompute_modules=["layernorm", "moe_act"]; B300 none.
    {"gpt-oss-120b", "gb200-nvl72", mp::RecomputeMode::kSelective,
     mp::kRecomputeLayerNorm | mp::kRecomputeMoeAct,
     "gpt_oss_workload_base_configs.py GPT_OSS_120B_PRETRAIN_CONFIG_GB200_*"},
    {"gpt-oss-120b", "b200", mp::RecomputeMode::kSelective,
     mp::kRecomputeLayerNorm | mp::kRecomputeMoeAct,
     "gpt_oss_workload_base_configs.py GPT_OSS_120B_PRETRAIN_CONFIG_B200_*"},
    {"gpt-oss-120b", "b300", mp::RecomputeMode::kNone, 0,
     "gpt_oss_workload_base_configs.py GPT_OSS_120B_PRETRAIN_CONFIG_B300_*"},
};

}  // namespace

const RecipeKnobs* RecipeMoeCommFor(const std::string& model_preset,
                                    const std::string& cluster_preset, const std::string& container,
                                    mp::StackGeneration generation, mp::Precision precision,
                                    const mp::ParallelConfig& p) {
  for (const RecipeKnobs& r : kRecipeMoeComm) {
    if (model_preset != r.model_preset || cluster_preset != r.cluster_preset) continue;
    if (!ContainerInRange(container, generation, r.first_container, r.last_container)) continue;
    if (r.precisions != kEveryPrecision && (r.precisions & PrecisionBit(precision)) == 0) {
      continue;
    }
    if ((r.pp != 0 && p.pp != r.pp) || (r.vp != 0 && p.vp != r.vp) || (r.ep != 0 && p.ep != r.ep)) {
      continue;
    }
    return &r;
  }
  return nullptr;
}

absl::Span<const RecipeRecomputeFact> RecipeRecomputeFacts() { return kRecipeRecompute; }

std::optional<mp::Recompute> RecipeRecomputeFor(const std::string& model_preset,
                                                const std::string& cluster_preset,
                                                const std::string& container,
                                                mp::Precision precision, int pp) {
  if (model_preset == "llama3-70b" && cluster_preset == "gb300-nvl72" && container == "26.02.01" &&
      precision == mp::Precision::kNvfp4 && pp == 1) {
    return std::nullopt;
  }
  for (const RecipeRecomputeFact& f : kRecipeRecompute) {
    if (model_preset != f.model_preset) continue;
    if (f.cluster_preset != nullptr && cluster_preset != f.cluster_preset) continue;
    mp::Recompute r;
    r.mode = f.mode;
    r.modules = f.modules;
    return r;
  }
  return std::nullopt;
}

int RecipeOffloadLayersFor(const std::string& model_preset, const std::string& cluster_preset,
                           mp::Precision precision, const mp::ParallelConfig& p) {
  if (model_preset != "llama3-70b" || precision != mp::Precision::kFp8 || p.pp != 1 ||
      !p.shard_params) {
    return 0;
  }
  if (cluster_preset == "gb200-nvl72") return 40;
  if (cluster_preset == "gb300-nvl72") return 20;
  return 0;
}

std::optional<RecipeGraphs> RecipeGraphsFor(const std::string& model, const std::string& gpu,
                                            const std::string& container, mp::Objective objective) {
  const bool v2606 = container.rfind("26.06", 0) == 0 || container.rfind("26.08", 0) == 0;
  RecipeGraphs none;
  RecipeGraphs full;
  full.on = full.full_iteration = true;
  RecipeGraphs te_moe;  // TE attn, moe_router, moe_preprocess
  te_moe.on = te_moe.attn = te_moe.moe_router = te_moe.moe_preprocess = true;
  RecipeGraphs te_moe_no_attn = te_moe;
  te_moe_no_attn.attn = false;
  if (model == "llama3-70b" || model == "llama3.1-405b") {
    if (objective == mp::Objective::kPretrain) return none;
    if (gpu == "h100-sxm" && objective == mp::Objective::kLora) return none;
    RecipeGraphs mlp;  // TE scope mlp: the dense MLP captured, attention eager
    mlp.on = true;
    return mlp;
  }
  if (model == "deepseek-v3") {
    if (gpu == "gb300-nvl72" && v2606) return full;
    if (gpu == "b300" && (container == "26.04.01" || v2606)) return te_moe;
    if (gpu == "b200" || gpu == "b300") return none;
    return std::nullopt;
  }
  if (model == "gpt-oss-120b") {
    if (gpu == "b300") return te_moe;
    if (gpu == "b200" || gpu == "gb200-nvl72") return none;
    return std::nullopt;
  }
  if (model == "qwen3-235b-a22b") {
    if (gpu == "b200" || gpu == "h100-sxm") return none;
    if (gpu == "gb200-nvl72") return v2606 ? full : te_moe;
    return std::nullopt;
  }
  if (model == "qwen3-30b-a3b") {
    if (gpu == "h100-sxm") return none;
    if (gpu == "b200") return container == "26.02" ? te_moe_no_attn : te_moe;
    if (gpu == "gb300-nvl72") return v2606 ? full : te_moe_no_attn;
    return std::nullopt;
  }
  return std::nullopt;
}

mp::OptimizerStates RecipeOptimizerStatesFor(const std::string& id, const std::string& source,
                                             const std::string& model_preset, bool fsdp) {
  if (model_preset != "deepseek-v3") return mp::OptimizerStates::kFp32;
  if (absl::StartsWith(id, "mlm-dsv3-gb200-opt-step")) return mp::OptimizerStates::kBf16Moments;
  if (absl::StartsWith(source, "NVIDIA-NeMo/Megatron-Bridge") && !fsdp) {
    return mp::OptimizerStates::kBf16Moments;
  }
  return mp::OptimizerStates::kFp32;
}

}  // namespace moetune::tests
