#include "planner/emitters.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "planner/internal/strings.h"
#include "planner/units.h"

namespace moetune::planner {
namespace {

using internal::Sv;

int ResolvedDpOf(const Prediction& p) {
  return p.parallel.dp > 0 ? p.parallel.dp : ResolvedDp(p.shape, p.parallel);
}

std::string ProblemLine(const Prediction& p, const EmitContext& c) {
  if (!c.problem.empty()) return c.problem;
  return absl::StrCat(p.model.name, " on ", p.shape.gpus, " x ",
                      p.cluster_name, ", seq ", p.shape.seq_len, ", gbs ",
                      p.shape.global_batch);
}

std::string CostSourceLine(const Prediction& p) {
  if (p.fully_calibrated) return "calibrated";
  for (const Term& t : p.breakdown) {
    if (t.source == CostSource::kCalibrated) return "mixed calibrated/datasheet prior";
  }
  return "datasheet prior";
}

std::string Headline(const Prediction& p) {
  return absl::StrFormat(
      "%.1f tokens/s/GPU, %.1f TFLOPS/GPU (MFU %.1f%%), step %.3f s, peak "
      "memory %.1f GiB of %.1f GiB",
      p.tokens_per_sec_per_gpu, p.model_tflops_per_gpu, 100.0 * p.mfu,
      p.step_time_s, p.peak_memory_bytes / units::kGiB,
      p.hbm_bytes / units::kGiB);
}

// Transformer layers on the first and last (virtual) pipeline stage, as the
// plan sets them (the search makes them explicit). Unset, or equal to an
// even split: Megatron's default even split, no flags.
struct StageSplit {
  bool uneven = false;
  int first = -1;  // -1: not set
  int last = -1;
};
StageSplit SplitStages(const ModelSpec& m, const ParallelConfig& p) {
  StageSplit s;
  const int stages = p.pp * p.vp;
  if (stages <= 1 || !(p.first_stage_layers || p.last_stage_layers)) return s;
  s.first = p.first_stage_layers.value_or(-1);
  s.last = p.last_stage_layers.value_or(-1);
  const bool even = m.num_layers % stages == 0 &&
                    s.first == m.num_layers / stages &&
                    s.last == m.num_layers / stages;
  s.uneven = !even;
  return s;
}

// "([0]*3+[1]*58)" for Megatron's --moe-layer-freq.
std::string MoeLayerPattern(const ModelSpec& m) {
  std::vector<std::string> runs;
  int i = 0;
  while (i < m.num_layers) {
    const bool moe = m.IsMoeLayer(i);
    int j = i;
    while (j < m.num_layers && m.IsMoeLayer(j) == moe) ++j;
    runs.push_back(absl::StrCat("[", moe ? 1 : 0, "]*", j - i));
    i = j;
  }
  return absl::StrCat("(", absl::StrJoin(runs, "+"), ")");
}

std::vector<std::string> RecomputeModuleList(uint32_t bits) {
  std::vector<std::string> out;
  const std::string names = RecomputeModulesName(bits);
  for (absl::string_view n : absl::StrSplit(Sv(names), ',', absl::SkipEmpty())) {
    out.emplace_back(n);
  }
  return out;
}

std::vector<std::string> OffloadModuleList(uint32_t bits) {
  std::vector<std::string> out;
  const std::string names = OffloadModulesName(bits);
  for (absl::string_view n : absl::StrSplit(Sv(names), ',', absl::SkipEmpty())) {
    out.emplace_back(n);
  }
  return out;
}

class ArgWriter {
 public:
  void Comment(absl::string_view text) {
    absl::StrAppend(&out_, "  # ", text, "\n");
  }
  void Flag(absl::string_view flag) { absl::StrAppend(&out_, "  ", flag, "\n"); }
  template <typename T>
  void Flag(absl::string_view flag, const T& value) {
    absl::StrAppend(&out_, "  ", flag, " ", value, "\n");
  }
  void FlagList(absl::string_view flag, const std::vector<std::string>& values) {
    absl::StrAppend(&out_, "  ", flag, " ", absl::StrJoin(values, " "), "\n");
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace

std::string EmitCanonicalJson(const Prediction& p, const EmitContext& c) {
  nlohmann::ordered_json j;
  j["format"] = "moetune.plan.v1";
  if (!c.generated_at.empty()) j["generated_at"] = c.generated_at;
  j["problem"] = ProblemLine(p, c);
  ParallelConfig parallel = p.parallel;
  parallel.dp = ResolvedDpOf(p);
  nlohmann::ordered_json plan;
  plan["parallel"] = ToJson(parallel);
  plan["knobs"] = ToJson(p.knobs);
  j["plan"] = plan;
  j["prediction"] = ToJson(p);
  return j.dump(2) + "\n";
}

std::string EmitMegatronArgs(const Prediction& p, const EmitContext& c) {
  const ModelSpec& m = p.model;
  const ParallelConfig& par = p.parallel;
  const Knobs& k = p.knobs;
  const int dp = ResolvedDpOf(p);
  std::string out = absl::StrCat("# moetune plan for Megatron-LM / Megatron-Core (pretrain_gpt.py)\n",
                                 "# problem: ", ProblemLine(p, c), "\n");
  if (!c.generated_at.empty()) {
    absl::StrAppend(&out, "# generated_at: ", c.generated_at, "\n");
  }
  absl::StrAppend(&out, "# predicted: ", Headline(p), "\n",
                  "# cost source: ", CostSourceLine(p), "\n",
                  "# layout: ", ToString(par), " (dp=", dp, ")\n",
                  "# knobs: ", ToString(k), "\n",
                  "# Add data, tokenizer, optimizer and checkpoint flags, "
                  "then: torchrun ... pretrain_gpt.py \"${MEGATRON_ARGS[@]}\" ...\n");
  ArgWriter a;
  a.Comment("model shape");
  a.Flag("--num-layers", m.num_layers);
  a.Flag("--hidden-size", m.hidden_size);
  a.Flag("--num-attention-heads", m.num_attention_heads);
  if (m.attention == AttentionType::kMla) {
    a.Flag("--multi-latent-attention");
    if (m.q_lora_rank > 0) a.Flag("--q-lora-rank", m.q_lora_rank);
    a.Flag("--kv-lora-rank", m.kv_lora_rank);
    a.Flag("--qk-head-dim", m.qk_nope_head_dim);
    a.Flag("--qk-pos-emb-head-dim", m.qk_rope_head_dim);
    a.Flag("--v-head-dim", m.v_head_dim);
  } else {
    a.Flag("--kv-channels", m.head_dim);
    if (m.num_kv_heads != m.num_attention_heads) {
      a.Flag("--group-query-attention");
      a.Flag("--num-query-groups", m.num_kv_heads);
    }
  }
  if (m.attention_bias) {
    a.Flag("--add-qkv-bias");
  } else {
    a.Flag("--disable-bias-linear");
  }
  if (m.sliding_window > 0) {
    a.Comment(absl::StrCat("sliding-window attention (", m.sliding_window,
                           " tokens on some layers): add --window-size and "
                           "--window-attn-skip-freq for this model"));
  }
  if (m.ffn_hidden_size > 0) a.Flag("--ffn-hidden-size", m.ffn_hidden_size);
  if (m.gated_mlp) a.Flag("--swiglu");
  a.Flag("--vocab-size", m.vocab_size);
  if (!m.tie_word_embeddings) a.Flag("--untie-embeddings-and-output-weights");
  a.Flag("--position-embedding-type", "rope");
  a.Flag("--normalization", "RMSNorm");
  if (m.IsMoe()) {
    a.Flag("--num-experts", m.num_routed_experts);
    a.Flag("--moe-router-topk", m.moe_top_k);
    a.Flag("--moe-ffn-hidden-size", m.moe_ffn_hidden_size);
    if (m.num_shared_experts > 0) {
      a.Flag("--moe-shared-expert-intermediate-size",
             m.num_shared_experts * m.moe_ffn_hidden_size);
    }
    if (m.NumMoeLayers() != m.num_layers) {
      a.Flag("--moe-layer-freq", absl::StrCat("'", MoeLayerPattern(m), "'"));
    }
  }
  if (m.mtp_layers > 0) a.Flag("--mtp-num-layers", m.mtp_layers);

  a.Comment("batch and sequence");
  a.Flag("--seq-length", p.shape.seq_len);
  a.Flag("--max-position-embeddings", p.shape.seq_len);
  a.Flag("--micro-batch-size", par.mbs);
  a.Flag("--global-batch-size", p.shape.global_batch);

  a.Comment(absl::StrCat("parallel layout: dp = ", p.shape.gpus, " / (tp ",
                         par.tp, " x pp ", par.pp, " x cp ", par.cp,
                         ") = ", dp));
  a.Flag("--tensor-model-parallel-size", par.tp);
  if (par.tp > 1) a.Flag("--sequence-parallel");
  a.Flag("--pipeline-model-parallel-size", par.pp);
  const StageSplit split = SplitStages(m, par);
  if (split.uneven) {
    if (split.first >= 0) a.Flag("--decoder-first-pipeline-num-layers", split.first);
    if (split.last >= 0) a.Flag("--decoder-last-pipeline-num-layers", split.last);
    if (par.vp > 1) a.Flag("--num-virtual-stages-per-pipeline-rank", par.vp);
  } else if (par.vp > 1) {
    if (m.num_layers % (par.pp * par.vp) == 0) {
      a.Flag("--num-layers-per-virtual-pipeline-stage",
             m.num_layers / (par.pp * par.vp));
    } else {
      a.Comment("layers do not split evenly over pp x vp and the plan sets no "
                "first/last stage sizes");
      a.Flag("--num-virtual-stages-per-pipeline-rank", par.vp);
    }
  } else if (par.pp > 1 && m.num_layers % par.pp != 0) {
    a.Comment("layers do not split evenly over pp and the plan sets no "
              "first/last stage sizes");
  }
  a.Flag("--context-parallel-size", par.cp);
  if (m.IsMoe()) {
    a.Flag("--expert-model-parallel-size", par.ep);
    a.Flag("--expert-tensor-parallel-size", par.etp);
  }
  a.Flag("--use-distributed-optimizer");
  if (par.shard_params) {
    a.Comment("FSDP: parameters, gradients and optimizer states sharded over dp");
    a.Flag("--use-megatron-fsdp");
    a.Flag("--data-parallel-sharding-strategy", "optim_grads_params");
  }

  a.Comment("recompute and activation offload");
  switch (k.recompute.mode) {
    case RecomputeMode::kNone:
      a.Comment("no recompute");
      break;
    case RecomputeMode::kSelective:
      a.Flag("--recompute-granularity", "selective");
      a.FlagList("--recompute-modules", RecomputeModuleList(k.recompute.modules));
      break;
    case RecomputeMode::kFull:
      a.Flag("--recompute-granularity", "full");
      if (k.recompute.num_layers > 0) {
        a.Flag("--recompute-method", "block");
        a.Flag("--recompute-num-layers", k.recompute.num_layers);
      } else {
        a.Flag("--recompute-method", "uniform");
        a.Flag("--recompute-num-layers", 1);
      }
      break;
  }
  if (k.offload_activations && k.offload_modules != 0) {
    a.Flag("--fine-grained-activation-offloading");
    a.FlagList("--offload-modules", OffloadModuleList(k.offload_modules));
  } else {
    a.Comment("no activation offload");
  }

  if (m.IsMoe()) {
    a.Comment("MoE dispatch and experts");
    if (k.dispatcher == Dispatcher::kFusedDedup) {
      a.Flag("--moe-token-dispatcher-type", "flex");
      a.Flag("--moe-enable-deepep");
    } else {
      a.Flag("--moe-token-dispatcher-type", "alltoall");
    }
    if (k.grouped_gemm) {
      a.Flag("--moe-grouped-gemm");
    } else {
      a.Comment("grouped GEMM off: TE runs one GEMM per local expert");
    }
    a.Flag("--moe-permute-fusion");
  }

  a.Comment("communication overlap");
  if (k.overlap.dp_comm) {
    a.Flag("--overlap-grad-reduce");
    a.Flag("--overlap-param-gather");
  }
  if (k.overlap.tp_comm && par.tp > 1) a.Flag("--tp-comm-overlap");
  if (m.IsMoe() && k.overlap.ep_comm && par.ep > 1) {
    if (m.num_shared_experts > 0) a.Flag("--moe-shared-expert-overlap");
    a.Flag("--overlap-moe-expert-parallel-comm");
    a.Flag("--delay-wgrad-compute");
  }
  if (!k.overlap.pp_comm && par.pp > 1) a.Flag("--no-overlap-p2p-communication");

  a.Comment("CUDA graphs");
  if (k.cuda_graphs) {
    a.Flag("--cuda-graph-impl", "transformer_engine");
    if (m.IsMoe()) {
      // Dropless experts have data-dependent shapes: capture around them.
      a.FlagList("--cuda-graph-scope", {"attn", "moe_router", "moe_preprocess"});
    }
    a.Flag("--te-rng-tracker");
  } else {
    a.Flag("--cuda-graph-impl", "none");
  }

  a.Comment(absl::StrCat("precision: ", Sv(PrecisionName(k.precision))));
  a.Flag("--bf16");
  switch (k.precision) {
    case Precision::kBf16:
      break;
    case Precision::kFp8:
      a.Flag("--fp8-format", "hybrid");
      a.Flag("--fp8-recipe", "tensorwise");
      break;
    case Precision::kMxfp8:
      a.Flag("--fp8-format", "e4m3");
      a.Flag("--fp8-recipe", "mxfp8");
      break;
    case Precision::kNvfp4:
      a.Flag("--fp4-format", "e2m1");
      a.Flag("--fp4-recipe", "nvfp4");
      break;
  }
  absl::StrAppend(&out, "MEGATRON_ARGS=(\n", a.Take(), ")\n");
  return out;
}

namespace {

// The mesh axes MaxText's layout uses for this plan, each split into an ICI
// part (inside one slice) and a DCN part (across slices).
struct Axis {
  const char* name;  // MaxText axis suffix: tensor, expert, context, ...
  int size = 1;
  int ici = 1;
  int dcn = 1;
};

int Gcd(int a, int b) { return std::gcd(a, b); }

}  // namespace

MaxTextConfig EmitMaxText(const Prediction& p, const ClusterSpec& cluster,
                          const EmitContext& c) {
  const ModelSpec& m = p.model;
  const ParallelConfig& par = p.parallel;
  const Knobs& k = p.knobs;
  const int gpus = p.shape.gpus;
  const int dp = ResolvedDpOf(p);
  std::vector<std::string> notes;

  // Slice = largest divisor of the GPU count inside one NVLink domain.
  int slice = 1;
  for (int d = 1; d <= std::min(gpus, std::max(1, cluster.nvlink_domain_gpus)); ++d) {
    if (gpus % d == 0) slice = d;
  }
  // MaxText's expert axis also shards the batch of the attention layers
  // (expert_shard_attention_option: fsdp), so it is carved out of Megatron's
  // dp; the part of ep that Megatron takes from tp or cp cannot be expressed.
  const int expert = m.IsMoe() ? Gcd(par.ep, dp) : 1;
  if (m.IsMoe() && expert != par.ep) {
    notes.push_back(absl::StrCat(
        "Megatron's ep=", par.ep, " spans tp/cp ranks; MaxText's expert axis "
        "is a separate mesh axis, so it gets ep=", expert,
        " (the largest part of ep inside dp)"));
  }
  if (m.IsMoe() && par.etp > 1) {
    notes.push_back(absl::StrCat(
        "expert tensor parallelism etp=", par.etp,
        " maps to MaxText's 'mlp' sharding over the tensor axis (tp=", par.tp,
        ")"));
  }
  // Megatron's distributed optimizer is ZeRO-1 over the data axis; FSDP
  // (shard_params) is MaxText's fsdp axis.
  std::vector<Axis> axes = {{"tensor", par.tp},
                            {"expert", expert},
                            {"context", par.cp},
                            {par.shard_params ? "fsdp" : "data", dp / expert},
                            {"pipeline", par.pp}};
  int budget = slice;
  for (Axis& a : axes) {  // innermost (most communication-heavy) first
    a.ici = Gcd(a.size, budget);
    budget /= a.ici;
    a.dcn = a.size / a.ici;
  }
  if (budget != 1) {
    notes.push_back("the axes do not tile the NVLink slice exactly; all on ICI");
    for (Axis& a : axes) {
      a.ici = a.size;
      a.dcn = 1;
    }
  }

  std::string y;
  absl::StrAppend(&y, "# moetune plan for MaxText (overrides for configs/base.yml)\n",
                  "# problem: ", ProblemLine(p, c), "\n");
  if (!c.generated_at.empty()) {
    absl::StrAppend(&y, "# generated_at: ", c.generated_at, "\n");
  }
  absl::StrAppend(&y, "# predicted (Megatron-Core model of the step): ",
                  Headline(p), "\n", "# cost source: ", CostSourceLine(p),
                  "\n", "# layout: ", ToString(par), " (dp=", dp, ")\n",
                  "# ICI = inside one NVLink slice of ", slice,
                  " GPUs, DCN = across ", gpus / slice, " slices\n");
  // One process per node beyond a single node.
  absl::StrAppend(&y, "hardware: ",
                  gpus > std::max(1, cluster.gpus_per_node) ? "gpu_multiprocess"
                                                            : "gpu",
                  "\n",
                  "max_target_length: ", p.shape.seq_len, "\n",
                  absl::StrFormat("per_device_batch_size: %g\n",
                                  static_cast<double>(p.shape.global_batch) / gpus));
  // Megatron runs gbs / (mbs x dp) micro-batches per step per DP rank.
  const int micro_batches = p.shape.global_batch / (par.mbs * dp);
  for (const Axis& a : axes) {
    absl::StrAppend(&y, "ici_", a.name, "_parallelism: ", a.ici, "\n");
  }
  for (const Axis& a : axes) {
    absl::StrAppend(&y, "dcn_", a.name, "_parallelism: ", a.dcn, "\n");
  }
  if (par.shard_params) {
    absl::StrAppend(&y, "ici_data_parallelism: 1\ndcn_data_parallelism: 1\n");
  } else {
    absl::StrAppend(&y, "ici_fsdp_parallelism: 1\ndcn_fsdp_parallelism: 1\n",
                    "# distributed optimizer (ZeRO-1) over the data axis\n",
                    "shard_optimizer_over_data: true\n");
  }
  if (par.pp > 1) {
    const int stages = par.pp * par.vp;
    const int pipelined = (m.num_layers / stages) * stages;
    absl::StrAppend(&y, "num_layers_per_pipeline_stage: ",
                    std::max(1, pipelined / stages), "\n",
                    "num_pipeline_repeats: ", par.vp, "\n",
                    "num_pipeline_microbatches: ", micro_batches, "\n",
                    "scan_layers: false\n");
    if (pipelined != m.num_layers) {
      absl::StrAppend(&y, "pipeline_parallel_layers: ", pipelined, "\n");
      notes.push_back(absl::StrCat(
          "MaxText pipelines whole stages only: ", pipelined, " of ",
          m.num_layers, " layers are pipelined, the rest run with the stage "
          "axis acting as data parallelism"));
    }
    if (micro_batches % par.pp != 0) {
      notes.push_back(absl::StrCat("num_pipeline_microbatches=", micro_batches,
                                   " is not a multiple of the ", par.pp,
                                   " stages MaxText requires"));
    }
  } else if (micro_batches > 1) {
    absl::StrAppend(&y, "gradient_accumulation_steps: ", micro_batches, "\n");
  }

  // Recompute and offload as a custom remat policy.
  absl::StrAppend(&y, "# recompute: ", Sv(RecomputeModeName(k.recompute.mode)),
                  k.recompute.mode == RecomputeMode::kSelective
                      ? absl::StrCat(" (", RecomputeModulesName(k.recompute.modules), ")")
                      : std::string(),
                  "; offload: ",
                  k.offload_activations ? OffloadModulesName(k.offload_modules)
                                        : std::string("none"),
                  "\n");
  const bool offload = k.offload_activations && k.offload_modules != 0;
  if (k.recompute.mode == RecomputeMode::kFull && !offload) {
    absl::StrAppend(&y, "remat_policy: full\n");
  } else if (k.recompute.mode == RecomputeMode::kNone && !offload) {
    absl::StrAppend(&y, "remat_policy: minimal_with_context\n");
  } else {
    const uint32_t r = k.recompute.mode == RecomputeMode::kFull
                           ? 0xffffffffu
                           : k.recompute.modules;
    const uint32_t o = offload ? k.offload_modules : 0;
    auto policy = [](bool remat, bool off) {
      return off ? "offload" : remat ? "remat" : "device";
    };
    absl::StrAppend(
        &y, "remat_policy: custom\n",
        "decoder_layer_input: ", policy(false, o & kOffloadAttnNorm), "\n",
        "context: ",
        policy(r & kRecomputeCoreAttn, o & (kOffloadCoreAttn | kOffloadAttnProj)),
        "\n");
    const bool mlp_remat = r & (kRecomputeMlp | kRecomputeMoe);
    const bool act_off = o & (kOffloadMoeAct | kOffloadExpertFc1);
    absl::StrAppend(&y, "mlpwi_0: ", policy(mlp_remat || (r & kRecomputeMoeAct), act_off), "\n",
                    "mlpwi_1: ", policy(mlp_remat || (r & kRecomputeMoeAct), act_off), "\n",
                    "mlpwo: ", policy(mlp_remat, false), "\n");
    if (m.attention == AttentionType::kMla) {
      absl::StrAppend(&y, "mla_q: ", policy(r & kRecomputeMlaUpProj, false), "\n",
                      "mla_kv: ", policy(r & kRecomputeMlaUpProj, false), "\n");
    } else {
      absl::StrAppend(&y, "query_proj: ", policy(r & kRecomputeCoreAttn, false), "\n",
                      "key_proj: ", policy(r & kRecomputeCoreAttn, false), "\n",
                      "value_proj: ", policy(r & kRecomputeCoreAttn, false), "\n");
    }
    absl::StrAppend(&y, "out_proj: ", policy(r & kRecomputeCoreAttn, false), "\n");
  }

  if (m.IsMoe()) {
    absl::StrAppend(&y, "# experts: dropless; grouped GEMM = ragged dot on GPU\n",
                    "capacity_factor: -1.0\n",
                    "sparse_matmul: ", k.grouped_gemm ? "true" : "false", "\n",
                    "megablox: false\n");
    if (k.dispatcher == Dispatcher::kFusedDedup) {
      notes.push_back(
          "the plan assumes fused de-duplicated dispatch (DeepEP/HybridEP); "
          "MaxText's ragged all-to-all sends every (token, expert) copy");
    }
  }
  switch (k.precision) {
    case Precision::kBf16:
      absl::StrAppend(&y, "quantization: \"\"\n");
      break;
    case Precision::kFp8:
      absl::StrAppend(&y, "quantization: te_fp8_currentscaling\n");
      break;
    case Precision::kMxfp8:
      absl::StrAppend(&y, "quantization: te_mxfp8\n");
      break;
    case Precision::kNvfp4:
      absl::StrAppend(&y, "quantization: te_nvfp4\n");
      break;
  }
  absl::StrAppend(&y, "attention: cudnn_flash_te\n");
  for (const std::string& n : notes) absl::StrAppend(&y, "# note: ", n, "\n");

  // XLA flags: the latency-hiding scheduler and multi-stream collectives for
  // the overlap knobs, pipelined DP collectives, command buffers for graphs.
  std::vector<std::string> flags;
  const Overlap& o = k.overlap;
  const bool any_overlap = o.tp_comm || o.ep_comm || o.dp_comm || o.pp_comm;
  flags.push_back(absl::StrCat("--xla_gpu_enable_latency_hiding_scheduler=",
                               any_overlap ? "true" : "false"));
  if (any_overlap) {
    flags.push_back("--xla_gpu_enable_highest_priority_async_stream=true");
    flags.push_back(absl::StrCat(
        "--xla_gpu_experimental_parallel_collective_overlap_limit=",
        std::max(1, o.num_comm_streams)));
  }
  if (o.dp_comm) {
    flags.push_back("--xla_gpu_enable_pipelined_all_gather=true");
    flags.push_back("--xla_gpu_enable_pipelined_reduce_scatter=true");
    flags.push_back("--xla_gpu_enable_pipelined_all_reduce=true");
  }
  if (o.pp_comm && par.pp > 1) {
    flags.push_back("--xla_gpu_enable_while_loop_double_buffering=true");
  }
  flags.push_back(k.cuda_graphs
                      ? "--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN"
                      : "--xla_gpu_enable_command_buffer=");
  MaxTextConfig out;
  out.yaml = std::move(y);
  out.xla_flags = absl::StrJoin(flags, " ");
  return out;
}

std::string RenderMaxText(const MaxTextConfig& config) {
  return absl::StrCat("# export XLA_FLAGS=\"", config.xla_flags, "\"\n",
                      config.yaml);
}

std::string EmitText(const Prediction& p, const EmitContext& c) {
  std::string out = absl::StrCat("plan: ", ProblemLine(p, c), "\n");
  if (!c.generated_at.empty()) {
    absl::StrAppend(&out, "generated_at: ", c.generated_at, "\n");
  }
  absl::StrAppend(&out, "  layout: ", ToString(p.parallel), " (dp=",
                  ResolvedDpOf(p), ")\n", "  knobs:  ", ToString(p.knobs),
                  "\n", "  ", Headline(p), "\n", "  cost source: ",
                  CostSourceLine(p), "\n", "  time per step:\n");
  for (const Term& t : p.breakdown) {
    absl::StrAppend(&out, absl::StrFormat("    %-28s %10.4f s%s\n", t.name,
                                          t.seconds,
                                          IsHidden(t.kind) ? " (hidden)" : ""));
  }
  const MemoryBreakdown& mem = p.memory;
  absl::StrAppend(
      &out,
      absl::StrFormat("  memory per GPU: weights %.1f, grads %.1f, optimizer "
                      "%.1f, activations %.1f, comm buffers %.1f, reserve "
                      "%.1f GiB\n",
                      mem.weights_bytes / units::kGiB,
                      mem.grads_bytes / units::kGiB,
                      mem.optimizer_bytes / units::kGiB,
                      mem.activations_bytes / units::kGiB,
                      mem.comm_buffers_bytes / units::kGiB,
                      mem.reserve_bytes / units::kGiB));
  return out;
}

}  // namespace moetune::planner
