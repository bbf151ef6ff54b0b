#include "planner/emitters.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "planner/framework_rules.h"
#include "planner/internal/strings.h"
#include "planner/precision.h"
#include "planner/prediction_interval.h"
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

// The prediction's interval (IntervalText) as a line starting with
// `prefix`; empty when the prediction carries none.
std::string IntervalLine(const Prediction& p, const char* prefix) {
  const std::string text = IntervalText(p.interval);
  return text.empty() ? std::string() : absl::StrCat(prefix, text, "\n");
}

// The pinned host memory the plan's offloaded activations and optimizer
// state take per GPU, as a line starting with `prefix` (what the cluster
// states it has beside it); empty for a plan that offloads nothing.
std::string HostMemoryLine(const Prediction& p, const char* prefix) {
  if (p.host_offload_bytes <= 0) return std::string();
  const double host = p.cluster.host_memory_bytes_per_gpu;
  return absl::StrCat(
      prefix,
      absl::StrFormat("host memory for offloaded %s: %.1f GiB", HostOffloadContents(p),
                      p.host_offload_bytes / units::kGiB),
      host > 0 ? absl::StrFormat(" of %.1f GiB", host / units::kGiB) : std::string(),
      " per GPU\n");
}

// "([0]*3+[1]*58)": Megatron's run-length form of a per-layer pattern
// (--moe-layer-freq, --window-attn-skip-freq).
std::string LayerPattern(int layers, const std::function<bool(int)>& is_one) {
  std::vector<std::string> runs;
  int i = 0;
  while (i < layers) {
    const bool one = is_one(i);
    int j = i;
    while (j < layers && is_one(j) == one) ++j;
    runs.push_back(absl::StrCat("[", one ? 1 : 0, "]*", j - i));
    i = j;
  }
  return absl::StrCat("(", absl::StrJoin(runs, "+"), ")");
}

std::string MoeLayerPattern(const ModelSpec& m) {
  return LayerPattern(m.num_layers, [&](int l) { return m.IsMoeLayer(l); });
}

// Megatron's --pipeline-model-parallel-layout for the step model's split:
// one '|'-separated entry per virtual stage in stage order (stage v on rank
// v % pp), E = embedding, t = transformer layer, m = MTP layer, L = loss.
// Empty: the split is Megatron's own even split (no flag needed).
std::vector<int> StageLayersOf(const Prediction& p) {
  return p.stage_layers.empty() ? FixedStageLayers(p.model, p.parallel) : p.stage_layers;
}

std::string PipelineLayout(const Prediction& p) {
  const std::vector<int> n = StageLayersOf(p);
  const int stages = p.parallel.pp * p.parallel.vp;
  if (stages <= 1 || static_cast<int>(n.size()) != stages) return "";
  if (std::all_of(n.begin(), n.end(), [&](int x) { return x == n[0]; })) return "";
  std::vector<std::string> parts;
  for (int v = 0; v < stages; ++v) {
    std::string stage = v == 0 ? "E" : "";
    if (n[size_t(v)] == 1) absl::StrAppend(&stage, "t");
    if (n[size_t(v)] > 1) absl::StrAppend(&stage, "t*", n[size_t(v)]);
    if (v == stages - 1) {
      if (p.model.mtp_layers == 1) absl::StrAppend(&stage, "m");
      if (p.model.mtp_layers > 1) absl::StrAppend(&stage, "m*", p.model.mtp_layers);
      absl::StrAppend(&stage, "L");
    }
    parts.push_back(std::move(stage));
  }
  return absl::StrJoin(parts, "|");
}

// Numbers as Megatron's argparse reads them: integers without a fraction.
std::string Num(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e15) {
    return absl::StrFormat("%.0f", v);
  }
  return absl::StrFormat("%g", v);
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

namespace {

// The sections of a Megatron-LM file, each from the plan alone.

void ModelShapeFlags(const Prediction& p, ArgWriter& a) {
  const ModelSpec& m = p.model;
  const ArchitectureDetails& arch = m.arch;
  a.Comment("model shape and architecture (as the Hugging Face config builds it)");
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
  // Megatron's default keeps a bias on every linear layer (GPT-3, GPT-OSS).
  if (!m.attention_bias) a.Flag("--disable-bias-linear");
  if (m.qkv_bias && !m.attention_bias) a.Flag("--add-qkv-bias");
  if (arch.qk_layernorm) a.Flag("--qk-layernorm");
  if (m.attention_sinks) a.Flag("--softmax-type", "learnable");
  if (m.sliding_window > 0 && !m.sliding_window_layers.empty()) {
    a.Flag("--window-size", absl::StrCat(m.sliding_window, ",0"));
    // 1 = sliding-window layer, 0 = full attention.
    const auto& w = m.sliding_window_layers;
    bool alternating = w.size() % 2 == 0;
    for (size_t l = 0; alternating && l < w.size(); ++l) {
      alternating = w[l] == (l % 2 == 0);
    }
    if (alternating) {
      a.Flag("--window-attn-skip-freq", 2);
    } else {
      a.Flag("--window-attn-skip-freq",
             absl::StrCat("'", LayerPattern(m.num_layers,
                                            [&](int l) { return m.IsSlidingLayer(l); }),
                          "'"));
    }
  }
  if (m.ffn_hidden_size > 0) a.Flag("--ffn-hidden-size", m.ffn_hidden_size);
  if (arch.gpt_oss_activation) {
    // x * sigmoid(1.702 x) * (up + 1), inputs clamped to 7.
    a.Flag("--quick-geglu");
    a.Flag("--glu-linear-offset", "1.0");
    a.Flag("--activation-func-clamp-value", "7.0");
  } else if (m.gated_mlp) {
    a.Flag("--swiglu");
  }
  a.Flag("--vocab-size", m.vocab_size);
  if (!m.tie_word_embeddings) a.Flag("--untie-embeddings-and-output-weights");
  if (arch.learned_position_embeddings) {
    a.Flag("--position-embedding-type", "learned_absolute");
  } else if (m.attention == AttentionType::kMla) {
    a.Flag("--position-embedding-type", "rope");
    a.Flag("--rotary-base", Num(arch.rope_theta));
    if (arch.rope_scaling == RopeScaling::kYarn) {
      a.Flag("--rope-type", "yarn");
      a.Flag("--rotary-scaling-factor", Num(arch.rope_factor));
      a.Flag("--mscale", Num(arch.yarn_mscale));
      a.Flag("--mscale-all-dim", Num(arch.yarn_mscale_all_dim));
      if (arch.rope_original_max_positions != 4096 || arch.yarn_beta_fast != 32 ||
          arch.yarn_beta_slow != 1) {
        a.Comment(absl::StrCat(
            "YaRN original_max_position_embeddings=", arch.rope_original_max_positions,
            " beta_fast=", Num(arch.yarn_beta_fast), " beta_slow=", Num(arch.yarn_beta_slow),
            ": Megatron's MLA config takes these from its config class (defaults 4096, 32, "
            "1), no flag sets them"));
      }
    } else {
      a.Flag("--rope-type", "rope");
      // Megatron-Core fuses the RoPE of MLA only for YaRN
      // (TransformerConfig.__post_init__: "apply_rope_fusion for MLA only
      // works with YARN RoPE"), and --apply-rope-fusion is on by default.
      a.Flag("--no-rope-fusion");
    }
  } else if (arch.rope_scaling == RopeScaling::kYarn) {
    a.Flag("--position-embedding-type", "yarn");
    a.Flag("--rotary-base", Num(arch.rope_theta));
    a.Flag("--rotary-scaling-factor", Num(arch.rope_factor));
    a.Flag("--yarn-original-max-position-embeddings", arch.rope_original_max_positions);
    a.Flag("--yarn-beta-fast", Num(arch.yarn_beta_fast));
    a.Flag("--yarn-beta-slow", Num(arch.yarn_beta_slow));
  } else {
    a.Flag("--position-embedding-type", "rope");
    a.Flag("--rotary-base", Num(arch.rope_theta));
    if (arch.rotary_percent != 1) a.Flag("--rotary-percent", Num(arch.rotary_percent));
    if (arch.rope_scaling == RopeScaling::kLlama3) {
      a.Flag("--use-rope-scaling");
      a.Flag("--rope-scaling-factor", Num(arch.rope_factor));
    }
  }
  a.Flag("--normalization", arch.layernorm ? "LayerNorm" : "RMSNorm");
  a.Flag("--norm-epsilon", absl::StrFormat("%g", arch.norm_epsilon));
  if (m.IsMoe()) {
    a.Flag("--num-experts", m.num_routed_experts);
    a.Flag("--moe-router-topk", m.moe_top_k);
    a.Flag("--moe-ffn-hidden-size", m.moe_ffn_hidden_size);
    if (m.num_shared_experts > 0) {
      a.Flag("--moe-shared-expert-intermediate-size",
             m.num_shared_experts * m.moe_ffn_hidden_size);
      if (arch.shared_expert_gate) a.Flag("--moe-shared-expert-gate");
    }
    if (m.NumMoeLayers() != m.num_layers) {
      a.Flag("--moe-layer-freq", absl::StrCat("'", MoeLayerPattern(m), "'"));
    }
    if (arch.router_sigmoid) a.Flag("--moe-router-score-function", "sigmoid");
    if (arch.router_pre_softmax) a.Flag("--moe-router-pre-softmax");
    if (arch.router_expert_bias) a.Flag("--moe-router-enable-expert-bias");
    if (arch.router_topk_scaling_factor > 0) {
      a.Flag("--moe-router-topk-scaling-factor", Num(arch.router_topk_scaling_factor));
    }
    if (arch.router_num_groups > 1) {
      a.Flag("--moe-router-num-groups", arch.router_num_groups);
      a.Flag("--moe-router-group-topk", arch.router_group_topk);
    }
    a.Flag("--moe-router-dtype", "fp32");
  }
  if (m.mtp_layers > 0) a.Flag("--mtp-num-layers", m.mtp_layers);
  // The published recipes train these models without dropout.
  a.Flag("--attention-dropout", "0.0");
  a.Flag("--hidden-dropout", "0.0");
}

void LayoutFlags(const Prediction& p, int dp, ArgWriter& a) {
  const ModelSpec& m = p.model;
  const ParallelConfig& par = p.parallel;
  a.Comment(absl::StrCat("parallel layout: dp = ", p.shape.gpus, " / (tp ", par.tp,
                         " x pp ", par.pp, " x cp ", par.cp, ") = ", dp));
  a.Flag("--tensor-model-parallel-size", par.tp);
  if (par.tp > 1) a.Flag("--sequence-parallel");
  a.Flag("--pipeline-model-parallel-size", par.pp);
  const std::string layout = PipelineLayout(p);
  if (!layout.empty()) {
    a.Comment(absl::StrCat("transformer layers per virtual stage (rank = stage % pp): ",
                           absl::StrJoin(StageLayersOf(p), " ")));
    a.Flag("--pipeline-model-parallel-layout", absl::StrCat("'", layout, "'"));
  } else if (par.vp > 1) {
    a.Flag("--num-layers-per-virtual-pipeline-stage", m.num_layers / (par.pp * par.vp));
  }
  a.Flag("--context-parallel-size", par.cp);
  if (m.IsMoe()) {
    a.Flag("--expert-model-parallel-size", par.ep);
    a.Flag("--expert-tensor-parallel-size", par.etp);
  }
  if (par.dp_outermost) {
    // ParallelConfig::dp_outermost: initialize.py passes order
    // 'tp-cp-ep-pp-dp' to initialize_model_parallel.
    a.Comment("rank order tp-cp-ep-pp-dp: each model replica (tp x cp x pp GPUs) on consecutive "
              "ranks, data parallel outermost");
    a.Flag("--use-tp-pp-dp-mapping");
    // A dense model still gets an expert grid (etp defaults to tp), whose
    // pipeline groups parallel_state.py asserts equal to the dense ones:
    // in this order that needs etp x ep (ep = 1) == tp x cp
    // (FrameworkRule::kDpOutermostExpertGrid).
    if (!m.IsMoe() && par.pp > 1 && par.cp > 1) {
      a.Comment("dense model: the (unused) expert grid sized tp x cp so that its pipeline "
                "groups are the dense ones in this order (parallel_state.py asserts it)");
      a.Flag("--expert-tensor-parallel-size", par.tp * par.cp);
    }
  }
  a.Flag("--use-distributed-optimizer");
  // Gradients reduced in BF16, as the step model prices them (Megatron
  // would otherwise reduce the FP32 main gradients in FP32).
  a.Flag("--grad-reduce-in-bf16");
  if (p.knobs.optimizer_states == OptimizerStates::kBf16Moments) {
    a.Comment("optimizer state: fp32 master weights, BF16 Adam moments and main gradients "
              "(Transformer Engine's precision-aware FusedAdam), 8 B per parameter");
    a.Flag("--use-precision-aware-optimizer");
    a.Flag("--main-grads-dtype", "bf16");
    a.Flag("--exp-avg-dtype", "bf16");
    a.Flag("--exp-avg-sq-dtype", "bf16");
  }
  if (p.knobs.optimizer_offload_fraction > 0) {
    a.Comment("optimizer-state CPU offload: this share of the optimizer shard is stepped by "
              "the host's AdamW (HybridDeviceOptimizer, which needs the precision-aware "
              "optimizer's code path)");
    if (p.knobs.optimizer_states != OptimizerStates::kBf16Moments) {
      a.Flag("--use-precision-aware-optimizer");
    }
    a.Flag("--optimizer-cpu-offload");
    a.Flag("--optimizer-offload-fraction", absl::StrCat(p.knobs.optimizer_offload_fraction));
    if (p.knobs.optimizer_offload_overlap) a.Flag("--overlap-cpu-optimizer-d2h-h2d");
  }
  if (par.shard_params) {
    a.Comment("FSDP: parameters, gradients and optimizer states sharded over dp");
    a.Flag("--use-megatron-fsdp");
    a.Flag("--data-parallel-sharding-strategy", "optim_grads_params");
    a.Flag("--ckpt-format", "fsdp_dtensor");
  }
}

void RecomputeOffloadFlags(const Knobs& k, ArgWriter& a) {
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
  } else if (k.offload_layers > 0) {
    // Turns cpu_offloading on (arguments.py); activations only, the weights
    // stay (cpu_offloading_weights defaults to False).
    a.Comment("layer-wise activation offload: the first layers' saved tensors to host memory");
    a.Flag("--cpu-offloading-num-layers", k.offload_layers);
  } else {
    a.Comment("no activation offload");
  }
}

// DeepEP for NVLink islands of one node behind InfiniBand; HybridEP where
// the NVLink domain spans nodes (NVL72 racks), the only backend that uses it.
std::string_view FlexBackend(const ClusterSpec& c) {
  return c.nvlink_domain_gpus > c.gpus_per_node ? "hybridep" : "deepep";
}

void MoeFlags(const Prediction& p, ArgWriter& a) {
  const Knobs& k = p.knobs;
  a.Comment("MoE dispatch and experts");
  if (k.dispatcher == Dispatcher::kFusedDedup) {
    a.Flag("--moe-token-dispatcher-type", "flex");
    a.Flag("--moe-flex-dispatcher-backend", Sv(FlexBackend(p.cluster)));
  } else {
    a.Flag("--moe-token-dispatcher-type", "alltoall");
  }
  if (k.grouped_gemm) {
    a.Flag("--moe-grouped-gemm");
  } else {
    a.Comment("grouped GEMM off: TE runs one GEMM per local expert");
  }
  a.Flag("--moe-permute-fusion");
  // Forced balance (random router logits) is Megatron's benchmark-only
  // mode (transformer_config.py moe_router_force_load_balancing:
  // "only for benchmark"): emitted only for a plan priced as a benchmark.
  if (k.routing == Routing::kBalanced && k.moe_load_imbalance == 1.0) {
    a.Comment("benchmark run: forced-balanced routing, as the published tables run; "
              "real training: moetune --routing natural");
    a.Flag("--moe-router-force-load-balancing");
  } else {
    a.Comment(absl::StrCat("routing as the model's router chooses (real training); priced "
                           "with the busiest expert-parallel rank at ",
                           absl::StrFormat("%.2f", p.moe_load_imbalance_priced),
                           "x the mean tokens"));
  }
}

void OverlapFlags(const Prediction& p, ArgWriter& a) {
  const ModelSpec& m = p.model;
  const ParallelConfig& par = p.parallel;
  const Knobs& k = p.knobs;
  a.Comment("communication overlap");
  if (k.overlap.dp_comm) {
    a.Flag("--overlap-grad-reduce");
    a.Flag("--overlap-param-gather");
  }
  // Not for NVFP4: TE's userbuffers would refuse the NVFP4 quantizer at the
  // first all-gather (TpCommOverlapSupports, precision.h; the search turns
  // the knob off, FrameworkRule::kTpCommOverlapWithNvfp4).
  if (par.tp > 1 && !TpCommOverlapSupports(k.precision)) {
    a.Comment("no --tp-comm-overlap: Transformer Engine userbuffers has no NVFP4 path");
  } else if (k.overlap.tp_comm && par.tp > 1) {
    a.Flag("--tp-comm-overlap");
  }
  // Inside one 8-GPU node the step model prices the EP A2A overlap as
  // hiding no exchange and, where the iteration is not graph-captured whole,
  // adding the schedule's own host work (EpOverlapScheduleHostSeconds,
  // step_model_layers.cc); the public A/B runs there measured it as a cost
  // (planner/SEARCH.md, "Ties the step model cannot break").
  const bool in_node_ep = m.IsMoe() && EpGroupInsideEightGpuNode(p.cluster, par);
  constexpr char kInNodeEpEvidence[] =
      "inside one 8-GPU node it hides no exchange in the step model and adds its schedule's "
      "host work, and Megatron-Bridge PR 1760 measured it costing 7% of an eager step";
  if (EpOverlapActive(m, par, k)) {
    a.Flag("--overlap-moe-expert-parallel-comm");
    if (in_node_ep) a.Comment(absl::StrCat("the EP A2A overlap as given: ", kInNodeEpEvidence));
    // TE cannot delay the weight gradients of graphed attention with biases.
    if (k.cuda_graphs && m.AttentionHasBias()) {
      a.Comment("--delay-wgrad-compute left off: CUDA-graphed attention with biases");
    } else {
      a.Flag("--delay-wgrad-compute");
    }
  } else if (in_node_ep) {
    a.Comment(absl::StrCat("no --overlap-moe-expert-parallel-comm: ", kInNodeEpEvidence));
  }
  // P2P overlap exists only in the interleaved schedule; say when it is off.
  if (par.pp > 1 && par.vp > 1 && !P2pOverlapActive(par, k)) {
    a.Flag("--no-overlap-p2p-communication");
  }
  if (k.overlap.num_comm_streams > 1) {
    a.Comment(absl::StrCat("planned with ", k.overlap.num_comm_streams,
                           " communication streams (Megatron picks its own)"));
  }
}

void GraphAndPrecisionFlags(const Prediction& p, ArgWriter& a) {
  const Knobs& k = p.knobs;
  a.Comment("CUDA graphs");
  if (k.cuda_graphs) {
    a.Flag("--cuda-graph-impl", "transformer_engine");
    if (p.model.IsMoe()) {
      // Dropless experts have data-dependent shapes: capture around them.
      a.FlagList("--cuda-graph-modules", {"attn", "moe_router", "moe_preprocess"});
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
}

// The environment the plan's choices need, as `export` lines.
std::vector<std::string> MegatronEnvironment(const Prediction& p) {
  std::vector<std::string> env;
  const ParallelConfig& par = p.parallel;
  const Knobs& k = p.knobs;
  // The memory figure assumes PyTorch's expandable segments (the reserve's
  // fragmentation share, kFragmentationFraction), as Megatron-Bridge's
  // performance recipes run. Megatron refuses them beside TE CUDA graphs
  // unless NCCL does not register graph buffers (arguments.py: "Setting
  // NCCL_GRAPH_REGISTER=0 to avoid illegal memory access").
  env.push_back("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  if (k.cuda_graphs) env.push_back("export NCCL_GRAPH_REGISTER=0");
  if (k.offload_activations && k.offload_modules != 0) {
    // TE >= 2.10 offloads weights too unless told the v1 behaviour.
    env.push_back("export NVTE_CPU_OFFLOAD_V1=1");
  }
  // Hopper orders TP/CP communication ahead of compute only with one
  // hardware queue; Blackwell has no such need, and FSDP needs several.
  if (p.cluster.gpu.generation == GpuGeneration::kHopper && (par.tp > 1 || par.cp > 1) &&
      !par.shard_params) {
    env.push_back(EpOverlapActive(p.model, par, k)
                      ? "export CUDA_DEVICE_MAX_CONNECTIONS=32  # EP A2A overlap first"
                      : "export CUDA_DEVICE_MAX_CONNECTIONS=1");
  }
  return env;
}

}  // namespace

std::string EmitMegatronArgs(const Prediction& p, const EmitContext& c) {
  const int dp = ResolvedDpOf(p);
  std::string out = absl::StrCat(
      "# moetune plan for Megatron-LM / Megatron-Core (pretrain_gpt.py)\n",
      "# problem: ", ProblemLine(p, c), "\n");
  if (!c.generated_at.empty()) {
    absl::StrAppend(&out, "# generated_at: ", c.generated_at, "\n");
  }
  absl::StrAppend(
      &out, "# predicted: ", Headline(p), "\n", IntervalLine(p, "# "), HostMemoryLine(p, "# "),
      "# cost source: ",
      CostSourceLine(p), "\n", "# layout: ", ToString(p.parallel), " (dp=", dp, ")\n",
      "# knobs: ", ToString(p.knobs),
      "\n",
      "# You add: data (--data-path), tokenizer (--tokenizer-type, --tokenizer-model), "
      "training length and learning rate (--train-iters, --lr, ...), checkpoint paths "
      "(--save, --load).\n",
      "# Then: torchrun ... pretrain_gpt.py \"${MEGATRON_ARGS[@]}\" <your flags>\n");
  if (p.shape.objective == Objective::kLora) {
    absl::StrAppend(&out,
                    "# objective lora: pretrain_gpt.py trains every weight; run these model "
                    "and layout flags through Megatron-Bridge with peft=lora for the "
                    "adapter step this plan predicts.\n");
  }
  for (const std::string& e : MegatronEnvironment(p)) absl::StrAppend(&out, e, "\n");
  ArgWriter a;
  ModelShapeFlags(p, a);
  a.Comment("batch and sequence");
  a.Flag("--seq-length", p.shape.seq_len);
  a.Flag("--max-position-embeddings",
         std::max(p.shape.seq_len, p.model.arch.max_position_embeddings));
  a.Flag("--micro-batch-size", p.parallel.mbs);
  a.Flag("--global-batch-size", p.shape.global_batch);
  LayoutFlags(p, dp, a);
  RecomputeOffloadFlags(p.knobs, a);
  if (p.model.IsMoe()) MoeFlags(p, a);
  OverlapFlags(p, a);
  GraphAndPrecisionFlags(p, a);
  absl::StrAppend(&out, "MEGATRON_ARGS=(\n", a.Take(), ")\n");
  return out;
}

namespace {

// One MaxText mesh axis, split into an ICI part (inside one slice) and a DCN
// part (across slices).
struct Axis {
  const char* name;  // MaxText axis suffix: data, fsdp, tensor, expert, ...
  int size = 1;
  int ici = 1;
  int dcn = 1;
};

}  // namespace

// MaxText's own model configs (src/maxtext/configs/models/<name>.yml at
// kMaxTextCommit) for the moetune presets: model_name sets the architecture
// (decoder block, RoPE, norms, routing) as MaxText trains the model.
std::string_view MaxTextModelName(const ModelSpec& m) {
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"deepseek-v3", "deepseek3-671b"},   {"kimi-k2", "kimi-k2-1t"},
      {"qwen3-235b-a22b", "qwen3-235b-a22b"}, {"qwen3-30b-a3b", "qwen3-30b-a3b"},
      {"gpt-oss-120b", "gpt-oss-120b"},    {"llama3-8b", "llama3-8b"},
      {"llama3-70b", "llama3-70b"},        {"llama3.1-405b", "llama3.1-405b"},
      {"mixtral-8x7b", "mixtral-8x7b"},    {"mixtral-8x22b", "mixtral-8x22b"},
      {"gpt3-175b", "gpt3-175b"}};
  for (const auto& [preset, maxtext] : kNames) {
    if (m.name != preset) continue;
    // Only the preset itself: a model file that borrows the name is not it.
    absl::StatusOr<ModelSpec> p = LoadModelPreset(preset);
    if (p.ok() && ModelSpecToNativeJson(*p) == ModelSpecToNativeJson(m)) return maxtext;
  }
  return "";
}

int MaxTextSlices(int gpus, const ClusterSpec& cluster) {
  const int domain = std::max(1, cluster.nvlink_domain_gpus);
  for (int s = 1; s <= gpus; ++s) {
    if (gpus % s == 0 && gpus / s <= domain) return s;
  }
  return gpus;
}

absl::StatusOr<MaxTextConfig> EmitMaxText(const Prediction& p, const ClusterSpec& cluster,
                                          const EmitContext& c) {
  if (p.framework != Framework::kMaxText) {
    return absl::FailedPreconditionError(
        "--format maxtext needs a MaxText plan: plan or predict with --framework maxtext "
        "(this plan is for Megatron-Core, whose layouts and knobs MaxText does not run as such)");
  }
  const ModelSpec& m = p.model;
  const ParallelConfig& par = p.parallel;
  const Knobs& k = p.knobs;
  const int gpus = p.shape.gpus;
  const int dp = ResolvedDpOf(p);
  if (const auto rule = MaxTextLayoutViolation(m, p.shape, par)) {
    return absl::InvalidArgumentError(RuleText(*rule));
  }
  if (const auto rule = MaxTextViolation(m, par, k)) {
    return absl::InvalidArgumentError(RuleText(*rule));
  }
  const int slices = MaxTextSlices(gpus, cluster);
  const int expert = m.IsMoe() ? par.ep : 1;
  // The mesh (framework_rules.h): dp / ep is fsdp (shard_params) or data.
  std::vector<Axis> axes = {{"data", par.shard_params ? 1 : dp / expert},
                            {"fsdp", par.shard_params ? dp / expert : 1},
                            {"fsdp_transpose", 1},
                            {"context", par.cp},
                            {"tensor", par.tp},
                            {"expert", expert},
                            {"pipeline", par.pp}};
  // DCN takes the slice count from the axes that communicate least per
  // layer first: pipeline, data, fsdp, then context, expert, tensor.
  int rest = slices;
  for (const char* name : {"pipeline", "data", "fsdp", "fsdp_transpose", "context", "expert",
                           "tensor"}) {
    for (Axis& a : axes) {
      if (std::string_view(a.name) != name) continue;
      a.dcn = std::gcd(a.size, rest);
      a.ici = a.size / a.dcn;
      rest /= a.dcn;
    }
  }
  // Batch: without pipelining Megatron's micro-batches are gradient
  // accumulation steps; with it, MaxText's pipeline micro-batches (one
  // accumulation step).
  const int micro_batches = NumMicroBatches(p.shape, par);
  const int accumulation = par.pp > 1 ? 1 : micro_batches;
  const double per_device_batch =
      static_cast<double>(p.shape.global_batch) / (static_cast<double>(gpus) * accumulation);

  std::string y;
  absl::StrAppend(&y, "# moetune plan for MaxText (overrides for src/maxtext/configs/base.yml)\n",
                  "# MaxText keys as of AI-Hypercomputer/maxtext ", kMaxTextCommit, "\n",
                  "# problem: ", ProblemLine(p, c), "\n");
  if (!c.generated_at.empty()) {
    absl::StrAppend(&y, "# generated_at: ", c.generated_at, "\n");
  }
  absl::StrAppend(&y, "# predicted: ", Headline(p), "\n", IntervalLine(p, "# "),
                  HostMemoryLine(p, "# "),
                  "# cost source: ", CostSourceLine(p), "\n", "# layout: ", ToString(par),
                  " (dp=", dp, ")\n",
                  "# ICI = inside one NVLink slice of ", gpus / slices, " GPUs, DCN = across ",
                  slices, " slices\n",
                  "# (JAX finds the slices itself, from each device's slice_index: one NVLink\n"
                  "# domain on NVL72 racks, one node on HGX; the job must spread its GPUs\n"
                  "# evenly over them)\n",
                  "# you add: dataset, tokenizer, checkpoint paths, run_name\n");
  absl::StrAppend(&y, "hardware: ", slices > 1 || gpus > std::max(1, cluster.gpus_per_node)
                                        ? "gpu_multiprocess"
                                        : "gpu",
                  "\n");
  // The model: MaxText's own config for a preset; otherwise its shape as
  // base.yml's base_* keys. (With model_name, the keys its config sets must
  // not be set again: pyconfig validate_no_keys_overridden_twice.)
  const std::string_view model_name = MaxTextModelName(m);
  if (!model_name.empty()) {
    absl::StrAppend(&y, "model_name: ", Sv(model_name), "\n");
    if (m.mtp_layers > 0) absl::StrAppend(&y, "mtp_num_layers: ", m.mtp_layers, "\n");
  } else {
    absl::StrAppend(&y, "# no MaxText model config for '", m.name,
                    "': its shape below; set decoder_block to its family\n");
    absl::StrAppend(&y, "base_emb_dim: ", m.hidden_size, "\n", "base_num_query_heads: ",
                    m.num_attention_heads, "\n", "base_num_decoder_layers: ", m.num_layers,
                    "\n", "vocab_size: ", m.vocab_size, "\n");
    if (m.attention == AttentionType::kMla) {
      absl::StrAppend(&y, "attention_type: mla\n", "q_lora_rank: ", m.q_lora_rank, "\n",
                      "kv_lora_rank: ", m.kv_lora_rank, "\n", "qk_nope_head_dim: ",
                      m.qk_nope_head_dim, "\n", "qk_rope_head_dim: ", m.qk_rope_head_dim, "\n",
                      "v_head_dim: ", m.v_head_dim, "\n");
    } else {
      absl::StrAppend(&y, "base_num_kv_heads: ", m.num_kv_heads, "\n", "head_dim: ", m.head_dim,
                      "\n");
    }
    if (m.ffn_hidden_size > 0) absl::StrAppend(&y, "base_mlp_dim: ", m.ffn_hidden_size, "\n");
    if (m.IsMoe()) {
      absl::StrAppend(&y, "num_experts: ", m.num_routed_experts, "\n", "num_experts_per_tok: ",
                      m.moe_top_k, "\n", "base_moe_mlp_dim: ", m.moe_ffn_hidden_size, "\n",
                      "shared_experts: ", m.num_shared_experts, "\n", "first_num_dense_layers: ",
                      m.first_k_dense, "\n");
    }
    if (m.mtp_layers > 0) absl::StrAppend(&y, "mtp_num_layers: ", m.mtp_layers, "\n");
    // What these keys do not say: the decoder block chosen has to.
    std::vector<std::string> unsaid;
    if (m.AttentionHasBias()) unsaid.push_back(m.attention_bias ? "linear biases" : "q/k/v biases");
    if (m.arch.qk_layernorm) unsaid.push_back("q/k norms");
    if (m.arch.rotary_percent != 1) {
      unsaid.push_back(absl::StrFormat("RoPE on %g of each head", m.arch.rotary_percent));
    }
    if (m.arch.shared_expert_gate) unsaid.push_back("the shared experts' gate");
    if (m.arch.router_pre_softmax) unsaid.push_back("softmax before the top-k");
    if (m.arch.router_sigmoid) unsaid.push_back("sigmoid router scores");
    if (m.sliding_window > 0) unsaid.push_back("sliding-window layers");
    if (!unsaid.empty()) {
      absl::StrAppend(&y, "# not said by the keys above (the decoder block must have it): ",
                      absl::StrJoin(unsaid, ", "), "\n");
    }
  }
  absl::StrAppend(&y, "max_target_length: ", p.shape.seq_len, "\n",
                  absl::StrFormat("per_device_batch_size: %g\n", per_device_batch),
                  "gradient_accumulation_steps: ", accumulation, "\n");
  for (const Axis& a : axes) absl::StrAppend(&y, "ici_", a.name, "_parallelism: ", a.ici, "\n");
  for (const Axis& a : axes) absl::StrAppend(&y, "dcn_", a.name, "_parallelism: ", a.dcn, "\n");
  if (!par.shard_params && dp > 1) {
    absl::StrAppend(&y, "# optimizer state sharded over the data axis (ZeRO-1)\n",
                    "shard_optimizer_over_data: true\n");
  }
  if (par.pp > 1) {
    const int pipelined = MaxTextPipelinedLayers(m);
    absl::StrAppend(&y, "num_layers_per_pipeline_stage: ", pipelined / (par.pp * par.vp), "\n",
                    "num_pipeline_repeats: ", par.vp, "\n", "num_pipeline_microbatches: ",
                    micro_batches, "\n", "pipeline_parallel_layers: ", pipelined, "\n",
                    "scan_layers: false\n");
  }
  // Recompute and offload: a remat policy over the named checkpoints.
  const MaxTextRemat remat = MaxTextRematOf(m, k);
  absl::StrAppend(&y, "remat_policy: ", Sv(remat.remat_policy), "\n");
  for (const MaxTextRematName& n : remat.names) {
    absl::StrAppend(&y, Sv(n.name), ": ", Sv(n.policy), "\n");
  }
  if (m.IsMoe()) {
    // Dropless (capacity_factor -1), sparse_matmul: ragged dispatch; megablox
    // off on GPU (a TPU Pallas kernel), so the expert GEMMs are ragged dots.
    absl::StrAppend(&y, "capacity_factor: -1.0\n", "sparse_matmul: true\n", "megablox: false\n",
                    "use_tokamax_gmm: false\n");
    absl::StrAppend(&y, "# expert GEMMs: ",
                    k.grouped_gemm ? "Transformer Engine / cuBLAS grouped GEMM (the container's "
                                     "TE MoE path; no base.yml key at this commit)"
                                   : "XLA ragged dot (jax.lax.ragged_dot)",
                    "\n");
    if (par.ep > 1) {
      absl::StrAppend(&y, "# EP dispatch/combine: ",
                      k.dispatcher == Dispatcher::kFusedDedup
                          ? "Transformer Engine NCCL-EP, de-duplicated (the container's TE MoE "
                            "path; no base.yml key at this commit)"
                          : "ragged all-to-all (jax.lax.ragged_all_to_all)",
                      "\n");
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
  absl::StrAppend(&y, "dtype: bfloat16\n", "attention: cudnn_flash_te\n");

  // XLA flags (openxla/xla debug_options_flags.cc at kXlaCommit): the
  // latency-hiding scheduler for any overlap, multi-stream collectives
  // (parallel collective overlap limit = streams), pipelined FSDP/DP
  // collectives, double-buffered pipeline loops, command buffers for graphs,
  // host-memory offloading for offloaded checkpoints.
  std::vector<std::string> flags;
  const Overlap& o = k.overlap;
  const bool any_overlap = o.tp_comm || o.ep_comm || o.dp_comm || o.pp_comm;
  flags.push_back(absl::StrCat("--xla_gpu_enable_latency_hiding_scheduler=",
                               any_overlap ? "true" : "false"));
  if (any_overlap) {
    flags.push_back("--xla_gpu_enable_highest_priority_async_stream=true");
    flags.push_back(absl::StrCat("--xla_gpu_experimental_parallel_collective_overlap_limit=",
                                 std::max(1, o.num_comm_streams)));
  }
  if (o.dp_comm) {
    flags.push_back("--xla_gpu_enable_pipelined_all_gather=true");
    flags.push_back("--xla_gpu_enable_pipelined_reduce_scatter=true");
    flags.push_back("--xla_gpu_enable_pipelined_all_reduce=true");
    flags.push_back("--xla_gpu_all_gather_combine_threshold_bytes=134217728");
    flags.push_back("--xla_gpu_reduce_scatter_combine_threshold_bytes=134217728");
  }
  // TP overlap: XLA's windowed einsum (collective matmul) decomposes the
  // TP all-gather / reduce-scatter into steps overlapped with the GEMM
  // pieces; threshold 0 applies it to every such einsum (default 100000 MiB:
  // off), multi-streamed so steps run beside the GEMMs.
  if (o.tp_comm && par.tp > 1) {
    flags.push_back("--xla_gpu_threshold_for_windowed_einsum_mib=0");
    flags.push_back("--xla_gpu_multi_streamed_windowed_einsum=true");
  }
  if (o.pp_comm && par.pp > 1) {
    flags.push_back("--xla_gpu_enable_while_loop_double_buffering=true");
  }
  flags.push_back(k.cuda_graphs
                      ? "--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN"
                      : "--xla_gpu_enable_command_buffer=");
  if (k.offload_activations && k.offload_modules != 0) {
    flags.push_back("--xla_gpu_enable_host_memory_offloading=true");
  }
  MaxTextConfig out;
  out.yaml = std::move(y);
  out.xla_flags = absl::StrJoin(flags, " ");
  // JAX preallocates XLA_PYTHON_CLIENT_MEM_FRACTION of HBM (default 0.75);
  // the step model lets the plan use all of HBM but its reserve (CUDA
  // context, NCCL, fragmentation; MemoryBreakdown::reserve_bytes), so the
  // fraction is 1 - reserve / HBM, rounded down to a hundredth.
  if (p.hbm_bytes > 0) {
    const double fraction =
        std::floor(100.0 * (1.0 - p.memory.reserve_bytes / p.hbm_bytes)) / 100.0;
    out.environment.push_back(absl::StrFormat("XLA_PYTHON_CLIENT_MEM_FRACTION=%.2f", fraction));
  }
  return out;
}

std::string RenderMaxText(const MaxTextConfig& config) {
  std::string out;
  for (const std::string& e : config.environment) absl::StrAppend(&out, "# export ", e, "\n");
  absl::StrAppend(&out, "# export XLA_FLAGS=\"", config.xla_flags, "\"\n", config.yaml);
  return out;
}

std::string EmitText(const Prediction& p, const EmitContext& c) {
  std::string out = absl::StrCat("plan: ", ProblemLine(p, c), "\n");
  if (!c.generated_at.empty()) {
    absl::StrAppend(&out, "generated_at: ", c.generated_at, "\n");
  }
  absl::StrAppend(&out, "  layout: ", ToString(p.parallel), " (dp=",
                  ResolvedDpOf(p), ")\n", "  knobs:  ", ToString(p.knobs),
                  "\n", "  ", Headline(p), "\n", IntervalLine(p, "  "), HostMemoryLine(p, "  "),
                  "  cost source: ",
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
