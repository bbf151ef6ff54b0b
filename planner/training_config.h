// The training job: shape (GPUs, sequence, batch), parallel layout and the
// software knobs, each printable and parseable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/model_spec.h"
#include "planner/precision.h"
#include "planner/routing.h"

namespace moetune::planner {

// What the step trains. kLora: frozen base weights, so the backward pass
// computes activation gradients only (no weight-gradient GEMMs, no base
// weight gradients, optimizer or DP gradient traffic).
enum class Objective { kPretrain, kFinetune, kLora };
std::string_view ObjectiveName(Objective objective);
absl::StatusOr<Objective> ParseObjective(std::string_view name);

struct TrainingShape {
  int gpus = 0;
  int seq_len = 0;
  int global_batch = 0;  // sequences per optimizer step
  Objective objective = Objective::kPretrain;
};

struct ParallelConfig {
  int tp = 1;   // tensor parallel (with sequence parallel when > 1)
  int pp = 1;   // pipeline stages
  int vp = 1;   // virtual (interleaved) stages per pipeline rank
  int ep = 1;   // expert parallel
  int etp = 1;  // expert tensor parallel
  int cp = 1;   // context parallel
  int dp = 0;   // data parallel; 0 = derive gpus / (tp * pp * cp)
  int mbs = 1;  // micro-batch size (sequences)
  // Shard parameters and gradients (not only optimizer states) over the
  // data-parallel group: Megatron-FSDP / ZeRO-3. Parameters are gathered
  // per micro-batch (forward and backward), gradients reduce-scattered.
  bool shard_params = false;
  // Uneven pipeline: transformer layers on the first / last virtual stage
  // (Megatron --decoder-first/last-pipeline-num-layers). Unset: chosen to
  // balance the embedding, output layer, loss and MTP layers.
  std::optional<int> first_stage_layers;
  std::optional<int> last_stage_layers;
  // Megatron rank order with data parallelism outermost, tp-cp-ep-pp-dp
  // (megatron/core/parallel_state.py initialize_model_parallel: order
  // "tp-cp-ep-pp-dp" when use_tp_pp_dp_mapping, else "tp-cp-ep-dp-pp";
  // NeMo's MegatronStrategy(use_tp_pp_dp_mapping), set by the MLPerf
  // Training v5.1 Llama 3.1 405B configs, TP_PP_DP_MAPPING=True). A model
  // replica (tp x cp x pp GPUs) is then consecutive -- within one NVLink
  // domain when it fits -- and each DP group strides over replicas, across
  // domains. Not chosen by the search (false: Megatron's default order);
  // the user pins it (--dp-outermost, --fix dp_outermost=true, the API's
  // ParallelConfig.data_parallel_outermost). With pp = 1 both orders place
  // every group alike. Megatron only: MaxText has no rank order
  // (FrameworkRule::kMaxTextNoRankOrder).
  bool dp_outermost = false;
};

// Megatron's name of the layout's rank order: "tp-cp-ep-pp-dp" with
// dp_outermost, else the default "tp-cp-ep-dp-pp".
std::string_view RankOrderName(const ParallelConfig& parallel);

enum class RecomputeMode { kNone, kSelective, kFull };
// Modules for selective recompute (Megatron --recompute-modules).
enum RecomputeModule : uint32_t {
  kRecomputeCoreAttn = 1u << 0,
  kRecomputeMlaUpProj = 1u << 1,
  kRecomputeLayerNorm = 1u << 2,
  kRecomputeMoeAct = 1u << 3,
  kRecomputeMlp = 1u << 4,
  kRecomputeMoe = 1u << 5,
  kRecomputeSharedExperts = 1u << 6,
};
struct Recompute {
  RecomputeMode mode = RecomputeMode::kNone;
  uint32_t modules = 0;  // RecomputeModule bits, for kSelective
  int num_layers = 0;    // kFull: layers per stage recomputed; 0 = all
};

// Activations offloaded to host memory during forward and fetched back for
// backward (Megatron --fine-grained-activation-offloading modules).
enum OffloadModule : uint32_t {
  kOffloadAttnNorm = 1u << 0,
  kOffloadCoreAttn = 1u << 1,
  kOffloadAttnProj = 1u << 2,
  kOffloadMlpNorm = 1u << 3,
  kOffloadExpertFc1 = 1u << 4,
  kOffloadMoeAct = 1u << 5,
};

enum class Dispatcher {
  kAllToAll,   // NCCL all-to-all, every (token, expert) copy sent
  kFusedDedup  // DeepEP/HybridEP: one copy per (token, destination node/GPU)
};

// Precision of the distributed Adam optimizer's state (not searched: it is a
// numerics choice of the job; the user states it, default kFp32).
//   kFp32: fp32 master weights, exp_avg and exp_avg_sq, fp32 main gradients
//     (Megatron's defaults; Megatron-Bridge's Llama, Qwen3 and GPT-OSS
//     recipes set them explicitly).
//   kBf16Moments: Transformer Engine's precision-aware FusedAdam with fp32
//     master weights and BF16 exp_avg, exp_avg_sq and main gradients
//     (--use-precision-aware-optimizer --main-grads-dtype bf16
//     --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16): what Megatron-Bridge's
//     DeepSeek-V3, Moonlight and OLMoE recipes set (v0.3.0-v0.6.0,
//     src/megatron/bridge/recipes/deepseek/deepseek_v3.py). 8 B of state per
//     parameter instead of 12.
enum class OptimizerStates { kFp32, kBf16Moments };
// "fp32", "bf16" (also "bf16_moments", "precision_aware").
std::string_view OptimizerStatesName(OptimizerStates states);
absl::StatusOr<OptimizerStates> ParseOptimizerStates(std::string_view name);

struct Overlap {
  bool tp_comm = true;  // TP all-gather/reduce-scatter with the GEMMs
  bool ep_comm = true;  // EP dispatch/combine with the other micro-batch
  bool dp_comm = true;  // DP reduce-scatter/all-gather with backward/forward
  bool pp_comm = true;  // PP send/recv with compute
  int num_comm_streams = 2;
};

struct Knobs {
  Recompute recompute;
  bool offload_activations = false;
  uint32_t offload_modules = 0;  // OffloadModule bits
  // Layer-wise activation offload (Megatron --cpu-offloading-num-layers N,
  // Transformer Engine's cpu_offload): every tensor the first N transformer
  // layers save for backward goes to host memory during their forward and
  // comes back during backward; 0 = off. Megatron runs it only with pp 1, no
  // activation recompute, no fine-grained offload (offload_modules) and no
  // per-layer CUDA graphs (framework_rules.h). Not searched: the user states
  // it (--offload-layers, --fix offload_layers=N), as Megatron-Bridge's
  // Llama3-70B FSDP recipes do (cpu_offloading_num_layers 20-40).
  int offload_layers = 0;
  Dispatcher dispatcher = Dispatcher::kFusedDedup;
  bool grouped_gemm = true;  // false: a loop of one GEMM per local expert
  // How the router spreads tokens (planner/routing.h). kBalanced: forced
  // balance (--moe-router-force-load-balancing), what the published
  // benchmark tables run; kNatural: real training, priced with
  // NaturalRoutingImbalance of the layout. The CLI and the API default to
  // kNatural; this struct defaults to kBalanced, the regime of the
  // benchmark rows the model is checked against.
  Routing routing = Routing::kBalanced;
  // Tokens on the busiest GPU's experts / the mean. An explicit value
  // (!= 1.0) overrides what `routing` implies; 1.0 leaves it to `routing`
  // (kBalanced: 1.0).
  double moe_load_imbalance = 1.0;
  Overlap overlap;
  bool cuda_graphs = true;
  Precision precision = Precision::kBf16;
  OptimizerStates optimizer_states = OptimizerStates::kFp32;  // not searched
  // Optimizer-state CPU offload (Megatron --optimizer-cpu-offload
  // --optimizer-offload-fraction F, megatron/core/optimizer/cpu_offloading/
  // hybrid_optimizer.py HybridDeviceOptimizer): the first F of the rank's
  // optimizer shard keeps its fp32 master weights and Adam moments in host
  // memory and is stepped by PyTorch's CPU AdamW; each step copies its
  // gradients to the host and its updated weights back. 0 = off. Not
  // searched: the user states it (--optimizer-offload-fraction), a memory
  // fallback that costs seconds per step (HostOptimizerSeconds).
  double optimizer_offload_fraction = 0;
  // --overlap-cpu-optimizer-d2h-h2d: one CPU optimizer per parameter with
  // the copies on their own streams, so the gradient copies, the CPU steps
  // and the weight copies pipeline instead of running one after the other.
  bool optimizer_offload_overlap = false;
};

// Enum <-> string. Parsers are case-insensitive and return InvalidArgument
// naming the bad value.
std::string_view RecomputeModeName(RecomputeMode mode);
absl::StatusOr<RecomputeMode> ParseRecomputeMode(std::string_view name);
// Comma-separated module names: "core_attn,mla_up_proj,layernorm,moe_act,
// mlp,moe,shared_experts".
std::string RecomputeModulesName(uint32_t modules);
absl::StatusOr<uint32_t> ParseRecomputeModules(std::string_view names);
// Comma-separated: "attn_norm,core_attn,attn_proj,mlp_norm,expert_fc1,moe_act".
std::string OffloadModulesName(uint32_t modules);
absl::StatusOr<uint32_t> ParseOffloadModules(std::string_view names);
// "alltoall", "fused_dedup" (also accepts "deepep", "hybridep", "flex").
std::string_view DispatcherName(Dispatcher dispatcher);
absl::StatusOr<Dispatcher> ParseDispatcher(std::string_view name);

// Why a layout cannot run. kNone: it can.
enum class Infeasibility {
  kNone,
  kNonPositiveValue,
  kGpusNotDivisible,        // gpus % (tp * pp * cp * dp) != 0 or dp mismatch
  kTpDoesNotDivideHeads,    // heads % tp != 0 (or kv heads % tp for GQA)
  kEpDoesNotDivideExperts,  // experts % ep != 0
  kExpertLayoutMismatch,    // (tp * cp * dp) % (ep * etp) != 0
  kEpWithoutExperts,        // ep or etp > 1 on a dense model
  kBatchNotDivisible,       // global_batch % (mbs * dp) != 0
  kTooFewLayers,            // pp * vp > layers + 2 (one stage may hold only
                            // the embedding, one only the loss)
  kSeqNotDivisible,         // seq_len % (2 * cp) != 0 (or % tp with SP)
  kVpWithoutPp,             // vp > 1 with pp == 1
  kBadUnevenStages,         // first/last stage layers do not fit
  kFfnNotDivisible,         // ffn / expert ffn % tp (etp) != 0
  kPrecisionUnsupported,    // the GPU lacks the precision (checked later)
  // Layer-wise offload (Knobs::offload_layers): the activations sent to the
  // host exceed ClusterSpec::host_memory_bytes_per_gpu (checked later).
  kHostMemoryExceeded,
};
std::string_view InfeasibilityName(Infeasibility reason);

// Cheap check (no allocation), for the search.
Infeasibility CheckLayout(const ModelSpec& model, const TrainingShape& shape,
                          const ParallelConfig& parallel);

// Same check; InvalidArgument with a one-line reason naming the values
// ("tp=3 does not divide num_attention_heads=64").
absl::Status Validate(const ModelSpec& model, const TrainingShape& shape,
                      const ParallelConfig& parallel);

// dp as given, or derived from the GPUs; micro-batches per step per DP rank.
int ResolvedDp(const TrainingShape& shape, const ParallelConfig& parallel);
int NumMicroBatches(const TrainingShape& shape, const ParallelConfig& parallel);

// Transformer layers per virtual stage (stage v on pipeline rank v % pp)
// when the layout fixes them: first/last_stage_layers set (the middle stages
// share the rest, the earliest taking one more, as the step model places
// them), or no pipeline, or layers dividing evenly over pp x vp. Empty
// otherwise: the step model balances the stages itself and
// Prediction::stage_layers says how.
std::vector<int> FixedStageLayers(const ModelSpec& model, const ParallelConfig& parallel);

std::string ToString(const ParallelConfig& parallel);
std::string ToString(const Knobs& knobs);

}  // namespace moetune::planner
