// The architecture of a transformer language model, as the step model needs
// it: shapes only, no weights. Parsed from a Hugging Face config.json, from
// the native JSON form below, or taken from a built-in preset.
//
// Native JSON form ("format": "moetune.model.v1"); every field is the
// ModelSpec field of the same name; fields marked (opt) may be omitted and
// take the default shown in the struct:
//   {
//     "format": "moetune.model.v1",
//     "name": "my-moe",
//     "num_layers": 24, "hidden_size": 2048, "vocab_size": 32000,
//     "num_attention_heads": 16, "num_kv_heads": 4, "head_dim": 128,
//     "v_head_dim": 128 (opt, = head_dim),
//     "attention": "gqa" | "mla" (opt, "gqa"; MHA is gqa with kv = heads),
//     "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim"
//         (required when attention is "mla"; q_lora_rank 0 = no q LoRA),
//     "ffn_hidden_size": 8192, "gated_mlp": true (opt),
//     "num_routed_experts": 64 (opt, 0 = dense), "moe_top_k": 8,
//     "num_shared_experts": 0 (opt), "moe_ffn_hidden_size": 1024,
//     "first_k_dense": 0 (opt), "moe_layer_freq": 1 (opt),
//     "sliding_window": 0 (opt), "sliding_window_layers": [true, false, ...]
//         (opt; one entry per layer),
//     "mtp_layers": 0 (opt), "tie_word_embeddings": false (opt),
//     "attention_bias": false (opt), "qkv_bias": false (opt),
//     "attention_sinks": false (opt),
//     "architecture": {...} (opt; ArchitectureDetails, each field by name,
//         "rope_scaling": "none" | "yarn" | "llama3")
//   }
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace moetune::planner {

enum class AttentionType {
  kGqa,  // multi-head / grouped-query attention (MHA: kv heads = heads)
  kMla,  // multi-head latent attention (DeepSeek-V2/V3, Kimi-K2)
};

enum class RopeScaling {
  kNone,
  kYarn,    // YaRN (DeepSeek-V3, Kimi-K2, GPT-OSS)
  kLlama3,  // Llama 3.1 frequency scaling
};

// What a framework needs to build the very model the config describes. None
// of it changes the step time; the emitters turn it into flags. Defaults are
// the Hugging Face defaults of a Llama-style model.
struct ArchitectureDetails {
  bool learned_position_embeddings = false;  // GPT-2/3; otherwise RoPE
  bool layernorm = false;                    // LayerNorm (GPT-2/3); else RMSNorm
  double norm_epsilon = 1e-5;
  int max_position_embeddings = 0;  // 0: not given
  double rope_theta = 10000;
  // Share of each head's dimensions that RoPE rotates (GLM-4.5: 0.5).
  double rotary_percent = 1;
  RopeScaling rope_scaling = RopeScaling::kNone;
  double rope_factor = 1;
  int rope_original_max_positions = 0;
  double yarn_beta_fast = 32, yarn_beta_slow = 1;
  double yarn_mscale = 1, yarn_mscale_all_dim = 0;
  bool qk_layernorm = false;  // Qwen3: RMSNorm on q and k per head; MLA: on the latents
  // Router: sigmoid scores with a load-balancing expert bias (DeepSeek-V3
  // "noaux_tc"), top-k weights scaled by routed_scaling_factor, experts in
  // groups of which the top group_topk are eligible per token.
  bool router_sigmoid = false;
  bool router_expert_bias = false;
  double router_topk_scaling_factor = 0;  // 0: no scaling
  int router_num_groups = 0;              // 0: no group-limited routing
  int router_group_topk = 0;
  // Softmax over every expert before the top-k, the k weights left
  // unnormalized (Hugging Face norm_topk_prob false: Qwen2-MoE,
  // DeepSeek-V2); otherwise the top k are normalized (Megatron's default
  // softmax after the top-k, or sigmoid scores normalized).
  bool router_pre_softmax = false;
  // A sigmoid gate on the shared experts' output (Qwen2-MoE's
  // shared_expert_gate).
  bool shared_expert_gate = false;
  // GPT-OSS's gated activation: x * sigmoid(1.702 x) * (up + 1), both inputs
  // clamped to 7 (model card).
  bool gpt_oss_activation = false;
};

struct ModelSpec {
  std::string name;        // preset name, or from the config
  std::string model_type;  // config.json "model_type", or "native"

  int num_layers = 0;  // transformer blocks (without MTP layers)
  int64_t hidden_size = 0;
  int64_t vocab_size = 0;  // unpadded; see PaddedVocabSize()

  // Attention.
  AttentionType attention = AttentionType::kGqa;
  int num_attention_heads = 0;
  int num_kv_heads = 0;  // = num_attention_heads for MHA; unused for MLA
  int head_dim = 0;      // q/k head dim (GQA)
  int v_head_dim = 0;    // v head dim (GQA: = head_dim; MLA: v_head_dim)
  // A bias on every linear layer: q, k, v, the output projection and the
  // MLP's (Megatron's default, add_bias_linear; GPT-3, GPT-OSS).
  bool attention_bias = false;
  // A bias on the q, k and v projections only (Qwen2 and Qwen2-MoE, whose
  // Hugging Face code always adds it; Megatron --add-qkv-bias).
  bool qkv_bias = false;
  // Learned per-head softmax offsets ("attention sinks", GPT-OSS).
  bool attention_sinks = false;
  // MLA ranks (attention == kMla only).
  int q_lora_rank = 0;  // 0: queries are projected directly from hidden
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  // Sliding window (0: none). sliding_window_layers has one entry per layer
  // (true: that layer attends to the last sliding_window tokens only);
  // empty means no layer slides.
  int sliding_window = 0;
  std::vector<bool> sliding_window_layers;

  // Dense MLP (all layers of a dense model; the first_k_dense layers of a
  // MoE model). gated_mlp: SwiGLU (3 matrices) vs GELU (2 matrices).
  int64_t ffn_hidden_size = 0;
  bool gated_mlp = true;

  // Mixture of experts (num_routed_experts == 0: dense model).
  int num_routed_experts = 0;
  int moe_top_k = 0;
  int num_shared_experts = 0;       // each of width moe_ffn_hidden_size
  int64_t moe_ffn_hidden_size = 0;  // per routed expert
  int first_k_dense = 0;            // leading dense layers
  int moe_layer_freq = 1;           // layer l >= first_k_dense is MoE iff
                                    // l % moe_layer_freq == 0
  // Explicit per-layer MoE pattern (true: MoE); overrides the two fields
  // above when non-empty (Qwen3 "mlp_only_layers").
  std::vector<bool> moe_layer_pattern;

  // Multi-token prediction layers (DeepSeek-V3: 1).
  int mtp_layers = 0;
  bool tie_word_embeddings = false;

  ArchitectureDetails arch;

  bool IsMoe() const { return num_routed_experts > 0; }
  // Whether the attention's linear layers carry any bias (what Transformer
  // Engine's delayed weight gradients under graphed attention refuse).
  bool AttentionHasBias() const { return attention_bias || qkv_bias; }
  bool IsMoeLayer(int layer) const;
  bool IsSlidingLayer(int layer) const;
  int NumMoeLayers() const;
  // Megatron pads the vocabulary to a multiple of 128
  // (--make-vocab-size-divisible-by 128; times TP, ignored here).
  int64_t PaddedVocabSize() const;
  // Query/key head dim as used by core attention.
  int QkHeadDim() const;

  // Parameter counts (elements, not bytes).
  double AttentionParamsPerLayer() const;
  double DenseMlpParams() const;
  double ExpertParams() const;  // one routed expert
  double EmbeddingParams() const;
  double TotalParams() const;  // with MTP layers and both embeddings
  double ActiveParamsPerToken() const;
};

// Parses a Hugging Face config.json for model_type deepseek_v3, kimi_k2,
// qwen3_moe, mixtral, llama, gpt_oss or gpt2. Unknown model_type or a missing
// required field: InvalidArgument naming it.
absl::StatusOr<ModelSpec> ParseHfConfig(std::string_view json);

// Parses the native form documented at the top of this file.
absl::StatusOr<ModelSpec> ParseNativeModelJson(std::string_view json);

// Either form: native if it has "format": "moetune.model.v1", else HF.
absl::StatusOr<ModelSpec> ParseModelJson(std::string_view json);

// Serializes to the native form (round-trips through ParseNativeModelJson).
std::string ModelSpecToNativeJson(const ModelSpec& spec);

// Built-in presets (embedded config.json files from planner/data/models/):
// deepseek-v3, kimi-k2, qwen3-235b-a22b, qwen3-30b-a3b, gpt-oss-120b,
// llama3-8b, llama3-70b, llama3.1-405b, mixtral-8x7b, mixtral-8x22b,
// gpt3-175b. Unknown name: NotFound listing the known ones.
absl::StatusOr<ModelSpec> LoadModelPreset(std::string_view name);
std::vector<std::string> ModelPresetNames();

}  // namespace moetune::planner
