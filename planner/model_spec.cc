#include "planner/model_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "planner/internal/strings.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "planner/internal/model_presets.h"

namespace moetune::planner {
namespace {

// Largest magnitude accepted for an integer field of a model config (sizes,
// counts, layer indices): 2^30, far above any real model (DeepSeek-V3's
// largest, the vocabulary, is 129,280) and small enough that no product in
// the formulas overflows.
constexpr double kMaxModelInteger = 1073741824.0;

using nlohmann::json;

constexpr std::string_view kNativeFormat = "moetune.model.v1";

// Reads fields of one JSON object, remembering the first error so that
// parsers read like a list of fields.
class FieldReader {
 public:
  FieldReader(const json& j, std::string context)
      : j_(j), context_(std::move(context)) {}

  bool Has(const char* key) const {
    return j_.contains(key) && !j_.at(key).is_null();
  }

  template <typename T>
  T Required(const char* key) {
    if (!Has(key)) {
      Fail(absl::StrCat("missing field '", key, "' in ", context_));
      return T{};
    }
    return Get<T>(key);
  }

  template <typename T>
  T Optional(const char* key, T fallback) {
    if (!Has(key)) return fallback;
    return Get<T>(key);
  }

  const json& raw(const char* key) const { return j_.at(key); }

  void Fail(std::string message) {
    if (status_.ok()) status_ = absl::InvalidArgumentError(std::move(message));
  }
  const absl::Status& status() const { return status_; }

 private:
  template <typename T>
  T Get(const char* key) {
    const json& v = j_.at(key);
    if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) {
        Fail(absl::StrCat("field '", key, "' in ", context_,
                          " must be a boolean, got ", v.dump()));
        return T{};
      }
    } else if constexpr (std::is_integral_v<T>) {
      // Sizes and counts: whole numbers of a plausible magnitude. A float
      // such as 6.7e111 converted to int is undefined behaviour (found by
      // model_spec_fuzzer), and no model dimension comes near 2^30.
      if (!v.is_number()) {
        Fail(absl::StrCat("field '", key, "' in ", context_,
                          " must be a number, got ", v.dump()));
        return T{};
      }
      const double d = v.get<double>();
      if (!(std::abs(d) <= kMaxModelInteger) || d != std::floor(d)) {
        Fail(absl::StrCat("field '", key, "' in ", context_,
                          " must be a whole number of magnitude at most ",
                          kMaxModelInteger, ", got ", v.dump()));
        return T{};
      }
      return static_cast<T>(d);
    } else if constexpr (std::is_arithmetic_v<T>) {
      if (!v.is_number()) {
        Fail(absl::StrCat("field '", key, "' in ", context_,
                          " must be a number, got ", v.dump()));
        return T{};
      }
      if (!std::isfinite(v.get<double>())) {
        Fail(absl::StrCat("field '", key, "' in ", context_,
                          " must be finite, got ", v.dump()));
        return T{};
      }
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!v.is_string()) {
        Fail(absl::StrCat("field '", key, "' in ", context_,
                          " must be a string, got ", v.dump()));
        return T{};
      }
    }
    return v.get<T>();
  }

  const json& j_;
  std::string context_;
  absl::Status status_;
};

absl::StatusOr<json> ParseJsonObject(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError("model config is not valid JSON");
  }
  if (!j.is_object()) {
    return absl::InvalidArgumentError("model config must be a JSON object");
  }
  return j;
}

// Checks that the sizes every formula divides by are positive.
absl::Status CheckSpec(const ModelSpec& m) {
  auto positive = [](const char* field, double v) -> absl::Status {
    if (v > 0) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("field '", field, "' must be positive, got ", v));
  };
  for (auto [name, v] : std::vector<std::pair<const char*, double>>{
           {"num_layers", double(m.num_layers)},
           {"hidden_size", double(m.hidden_size)},
           {"vocab_size", double(m.vocab_size)},
           {"num_attention_heads", double(m.num_attention_heads)},
           {"v_head_dim", double(m.v_head_dim)}}) {
    if (absl::Status s = positive(name, v); !s.ok()) return s;
  }
  if (m.attention == AttentionType::kGqa) {
    if (absl::Status s = positive("head_dim", m.head_dim); !s.ok()) return s;
    if (absl::Status s = positive("num_kv_heads", m.num_kv_heads); !s.ok()) {
      return s;
    }
    if (m.num_attention_heads % m.num_kv_heads != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "num_kv_heads=", m.num_kv_heads,
          " does not divide num_attention_heads=", m.num_attention_heads));
    }
  } else {
    if (absl::Status s = positive("kv_lora_rank", m.kv_lora_rank); !s.ok()) {
      return s;
    }
    if (absl::Status s = positive("qk_nope_head_dim", m.qk_nope_head_dim);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = positive("qk_rope_head_dim", m.qk_rope_head_dim);
        !s.ok()) {
      return s;
    }
  }
  if (m.IsMoe()) {
    if (absl::Status s = positive("moe_top_k", m.moe_top_k); !s.ok()) return s;
    if (absl::Status s = positive("moe_ffn_hidden_size", m.moe_ffn_hidden_size);
        !s.ok()) {
      return s;
    }
    if (m.moe_top_k > m.num_routed_experts) {
      return absl::InvalidArgumentError(
          absl::StrCat("moe_top_k=", m.moe_top_k, " exceeds num_routed_experts=",
                       m.num_routed_experts));
    }
    if (m.moe_layer_freq <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "field 'moe_layer_freq' must be positive, got ", m.moe_layer_freq));
    }
  }
  if (m.NumMoeLayers() < m.num_layers) {
    if (absl::Status s = positive("ffn_hidden_size", double(m.ffn_hidden_size));
        !s.ok()) {
      return s;
    }
  }
  if (!m.sliding_window_layers.empty() &&
      int(m.sliding_window_layers.size()) != m.num_layers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sliding_window_layers has ", m.sliding_window_layers.size(),
        " entries, expected num_layers=", m.num_layers));
  }
  if (!m.moe_layer_pattern.empty() &&
      int(m.moe_layer_pattern.size()) != m.num_layers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "moe_layer_pattern has ", m.moe_layer_pattern.size(),
        " entries, expected num_layers=", m.num_layers));
  }
  if (m.sliding_window < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field 'sliding_window' must be >= 0, got ", m.sliding_window));
  }
  return absl::OkStatus();
}

void ReadMla(FieldReader& r, ModelSpec& m) {
  m.attention = AttentionType::kMla;
  m.q_lora_rank = r.Optional<int>("q_lora_rank", 0);
  m.kv_lora_rank = r.Required<int>("kv_lora_rank");
  m.qk_nope_head_dim = r.Required<int>("qk_nope_head_dim");
  m.qk_rope_head_dim = r.Required<int>("qk_rope_head_dim");
  m.v_head_dim = r.Required<int>("v_head_dim");
  m.num_kv_heads = m.num_attention_heads;
  m.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
}

void ReadGqa(FieldReader& r, ModelSpec& m) {
  m.attention = AttentionType::kGqa;
  m.num_kv_heads =
      r.Optional<int>("num_key_value_heads", m.num_attention_heads);
  const int derived =
      m.num_attention_heads > 0 ? int(m.hidden_size / m.num_attention_heads) : 0;
  m.head_dim = r.Optional<int>("head_dim", derived);
  m.v_head_dim = m.head_dim;
}

// The fields every Hugging Face decoder config but GPT-2's names alike.
void ReadHfShape(FieldReader& r, ModelSpec& m) {
  m.hidden_size = r.Required<int64_t>("hidden_size");
  m.num_layers = r.Required<int>("num_hidden_layers");
  m.num_attention_heads = r.Required<int>("num_attention_heads");
  m.vocab_size = r.Required<int64_t>("vocab_size");
}

// The MoE fields DeepSeek-V2 / V3's config names, which Kimi-K2 and GLM-4.5
// reuse (with their classes' own defaults for the optional ones).
void ReadDeepSeekStyleMoe(FieldReader& r, int shared_default, int dense_default, ModelSpec& m) {
  m.ffn_hidden_size = r.Required<int64_t>("intermediate_size");
  m.num_routed_experts = r.Required<int>("n_routed_experts");
  m.moe_top_k = r.Required<int>("num_experts_per_tok");
  m.num_shared_experts = r.Optional<int>("n_shared_experts", shared_default);
  m.moe_ffn_hidden_size = r.Required<int64_t>("moe_intermediate_size");
  m.first_k_dense = r.Optional<int>("first_k_dense_replace", dense_default);
  m.mtp_layers = r.Optional<int>("num_nextn_predict_layers", 0);
}

// A config's layer_types ("sliding_attention" / "full_attention" per
// layer) as m.sliding_window_layers.
absl::Status ReadLayerTypes(FieldReader& r, const std::string& type, ModelSpec& m) {
  const json& types = r.raw("layer_types");
  if (!types.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field 'layer_types' in config.json (model_type ", type, ") must be an array"));
  }
  for (const json& t : types) {
    const std::string s = t.is_string() ? t.get<std::string>() : "";
    if (s != "sliding_attention" && s != "full_attention") {
      return absl::InvalidArgumentError(absl::StrCat("unknown layer_types entry ", t.dump()));
    }
    m.sliding_window_layers.push_back(s == "sliding_attention");
  }
  return absl::OkStatus();
}

// The sliding-window layers of a Qwen2 / Qwen3 (dense or MoE) config: with
// use_sliding_window, layers from max_window_layers on (the Hugging Face
// classes' default layer_types; an explicit layer_types wins). Without it
// the sliding_window field is unused.
absl::Status ReadQwenSlidingWindow(FieldReader& r, const std::string& type, ModelSpec& m) {
  if (!r.Optional<bool>("use_sliding_window", false)) return absl::OkStatus();
  m.sliding_window = r.Optional<int>("sliding_window", 0);
  if (m.sliding_window <= 0 || m.num_layers <= 0) {
    m.sliding_window = 0;
    return absl::OkStatus();
  }
  if (r.Has("layer_types")) return ReadLayerTypes(r, type, m);
  const int first = r.Optional<int>("max_window_layers", 28);
  for (int l = 0; l < m.num_layers; ++l) m.sliding_window_layers.push_back(l >= first);
  return absl::OkStatus();
}

}  // namespace

bool ModelSpec::IsMoeLayer(int layer) const {
  if (!IsMoe()) return false;
  if (!moe_layer_pattern.empty()) return moe_layer_pattern[layer];
  return layer >= first_k_dense && moe_layer_freq > 0 &&
         layer % moe_layer_freq == 0;
}

bool ModelSpec::IsSlidingLayer(int layer) const {
  return sliding_window > 0 && !sliding_window_layers.empty() &&
         sliding_window_layers[layer];
}

int ModelSpec::NumMoeLayers() const {
  int n = 0;
  for (int l = 0; l < num_layers; ++l) n += IsMoeLayer(l) ? 1 : 0;
  return n;
}

int64_t ModelSpec::PaddedVocabSize() const {
  constexpr int64_t kDivisor = 128;
  return (vocab_size + kDivisor - 1) / kDivisor * kDivisor;
}

int ModelSpec::QkHeadDim() const {
  return attention == AttentionType::kMla ? qk_nope_head_dim + qk_rope_head_dim
                                          : head_dim;
}

double ModelSpec::AttentionParamsPerLayer() const {
  const double h = double(hidden_size);
  const double n = num_attention_heads;
  if (attention == AttentionType::kMla) {
    const double qk = qk_nope_head_dim + qk_rope_head_dim;
    // q: h -> q_lora -> n * qk (or h -> n * qk directly).
    const double q = q_lora_rank > 0 ? h * q_lora_rank + q_lora_rank * n * qk
                                     : h * n * qk;
    // kv: h -> kv_lora + rope; kv_lora -> n * (nope + v).
    const double kv = h * (kv_lora_rank + qk_rope_head_dim) +
                      double(kv_lora_rank) * n * (qk_nope_head_dim + v_head_dim);
    const double o = n * v_head_dim * h;
    return q + kv + o;
  }
  // q: h -> n * d; k, v: h -> kv * d; o: n * d_v -> h.
  return h * n * head_dim + 2 * h * num_kv_heads * head_dim +
         n * v_head_dim * h;
}

double ModelSpec::DenseMlpParams() const {
  return (gated_mlp ? 3.0 : 2.0) * double(hidden_size) * double(ffn_hidden_size);
}

double ModelSpec::ExpertParams() const {
  return (gated_mlp ? 3.0 : 2.0) * double(hidden_size) *
         double(moe_ffn_hidden_size);
}

double ModelSpec::EmbeddingParams() const {
  return double(PaddedVocabSize()) * double(hidden_size) *
         (tie_word_embeddings ? 1.0 : 2.0);
}

double ModelSpec::TotalParams() const {
  double total = EmbeddingParams();
  auto layer_params = [&](bool moe) {
    double p = AttentionParamsPerLayer();
    if (moe) {
      p += ExpertParams() * (num_routed_experts + num_shared_experts) +
           double(hidden_size) * num_routed_experts;  // router
    } else {
      p += DenseMlpParams();
    }
    return p;
  };
  for (int l = 0; l < num_layers; ++l) total += layer_params(IsMoeLayer(l));
  const bool last_moe = num_layers > 0 && IsMoeLayer(num_layers - 1);
  // An MTP module: [2h -> h] projection plus one layer; it shares the
  // embedding and output head with the main model.
  total += mtp_layers * (2.0 * double(hidden_size) * double(hidden_size) +
                         layer_params(last_moe));
  return total;
}

double ModelSpec::ActiveParamsPerToken() const {
  double total = EmbeddingParams();
  for (int l = 0; l < num_layers; ++l) {
    total += AttentionParamsPerLayer();
    total += IsMoeLayer(l)
                 ? ExpertParams() * (moe_top_k + num_shared_experts)
                 : DenseMlpParams();
  }
  return total;
}

namespace {

// The Hugging Face fields that say how the model is built beyond its shapes.
void ReadHfArchitecture(FieldReader& r, const std::string& type,
                        ArchitectureDetails& a) {
  if (type == "gpt2") {
    a.learned_position_embeddings = true;
    a.layernorm = true;
    a.norm_epsilon = r.Optional<double>("layer_norm_epsilon", 1e-5);
    a.max_position_embeddings = r.Optional<int>("n_positions", 0);
    return;
  }
  a.norm_epsilon = r.Optional<double>("rms_norm_eps", 1e-5);
  a.max_position_embeddings = r.Optional<int>("max_position_embeddings", 0);
  a.rope_theta = r.Optional<double>("rope_theta", 10000.0);
  // Qwen3: RMSNorm on each head's q and k. DeepSeek-V2/V3-style MLA
  // (deepseek_v2, deepseek_v3, kimi_k2): RMSNorm on the q and kv latents
  // (q_a_layernorm, kv_a_layernorm), which Megatron-Core builds with the
  // same flag (linear_q_up_proj / linear_kv_up_proj become
  // TELayerNormColumnParallelLinear; Megatron-Bridge's DeepSeek bridges set
  // qk_layernorm = True, Megatron-LM's DeepSeek-R1 / Kimi-K2 configs pass
  // --qk-layernorm).
  a.qk_layernorm = type == "qwen3_moe" || type == "qwen3" || type == "deepseek_v2" ||
                   type == "deepseek_v3" || type == "kimi_k2";
  a.gpt_oss_activation = type == "gpt_oss";
  if (type == "glm4_moe") {
    // Glm4MoeConfig: q / k norms where use_qk_norm (GLM-4.5 355B: true),
    // RoPE on partial_rotary_factor of each head, and the DeepSeek-V3
    // router (sigmoid scores, e_score_correction_bias) with no field to say
    // so.
    a.qk_layernorm = r.Optional<bool>("use_qk_norm", false);
    a.rotary_percent = r.Optional<double>("partial_rotary_factor", 0.5);
  }
  const bool sigmoid_by_class = type == "glm4_moe";
  a.shared_expert_gate =
      type == "qwen2_moe" && r.Optional<int64_t>("shared_expert_intermediate_size", 0) > 0;
  a.router_sigmoid =
      r.Optional<std::string>("scoring_func", sigmoid_by_class ? "sigmoid" : "softmax") ==
      "sigmoid";
  a.router_expert_bias =
      r.Optional<std::string>("topk_method", sigmoid_by_class ? "noaux_tc" : "") == "noaux_tc";
  // norm_topk_prob with each Hugging Face class's default (Qwen2MoeConfig,
  // Qwen3MoeConfig, DeepseekV2Config: false; the Qwen3-MoE releases set
  // true); the other types normalize the top k whatever they say.
  if (type == "qwen2_moe" || type == "qwen3_moe" || type == "deepseek_v2") {
    a.router_pre_softmax = !a.router_sigmoid && !r.Optional<bool>("norm_topk_prob", false);
  }
  a.router_topk_scaling_factor = r.Optional<double>("routed_scaling_factor", 0.0);
  if (a.router_topk_scaling_factor == 1.0) a.router_topk_scaling_factor = 0;
  const int groups = r.Optional<int>("n_group", 0);
  const int group_topk = r.Optional<int>("topk_group", 0);
  if (groups > 1) {
    a.router_num_groups = groups;
    a.router_group_topk = group_topk;
  }
  if (!r.Has("rope_scaling") || !r.raw("rope_scaling").is_object()) return;
  FieldReader s(r.raw("rope_scaling"), "config.json rope_scaling");
  const std::string kind = s.Has("rope_type") ? s.Optional<std::string>("rope_type", "")
                                              : s.Optional<std::string>("type", "");
  if (kind == "yarn") {
    a.rope_scaling = RopeScaling::kYarn;
    a.yarn_beta_fast = s.Optional<double>("beta_fast", 32.0);
    a.yarn_beta_slow = s.Optional<double>("beta_slow", 1.0);
    a.yarn_mscale = s.Optional<double>("mscale", 1.0);
    a.yarn_mscale_all_dim = s.Optional<double>("mscale_all_dim", 0.0);
  } else if (kind == "llama3") {
    a.rope_scaling = RopeScaling::kLlama3;
  } else {
    r.Fail(absl::StrCat("config.json rope_scaling type '", kind,
                        "' is not supported (yarn, llama3)"));
    return;
  }
  a.rope_factor = s.Optional<double>("factor", 1.0);
  a.rope_original_max_positions = s.Optional<int>("original_max_position_embeddings", 0);
  if (!s.status().ok()) r.Fail(std::string(s.status().message()));
}

std::string_view RopeScalingName(RopeScaling s) {
  switch (s) {
    case RopeScaling::kNone:
      return "none";
    case RopeScaling::kYarn:
      return "yarn";
    case RopeScaling::kLlama3:
      return "llama3";
  }
  return "none";
}

void ReadNativeArchitecture(FieldReader& r, ArchitectureDetails& a) {
  if (!r.Has("architecture")) return;
  if (!r.raw("architecture").is_object()) {
    r.Fail("field 'architecture' must be an object");
    return;
  }
  FieldReader f(r.raw("architecture"), "architecture");
  const ArchitectureDetails d;
  a.learned_position_embeddings =
      f.Optional<bool>("learned_position_embeddings", d.learned_position_embeddings);
  a.layernorm = f.Optional<bool>("layernorm", d.layernorm);
  a.norm_epsilon = f.Optional<double>("norm_epsilon", d.norm_epsilon);
  a.max_position_embeddings = f.Optional<int>("max_position_embeddings", 0);
  a.rope_theta = f.Optional<double>("rope_theta", d.rope_theta);
  a.rotary_percent = f.Optional<double>("rotary_percent", d.rotary_percent);
  const std::string scaling = f.Optional<std::string>("rope_scaling", "none");
  if (scaling == "yarn") {
    a.rope_scaling = RopeScaling::kYarn;
  } else if (scaling == "llama3") {
    a.rope_scaling = RopeScaling::kLlama3;
  } else if (scaling != "none") {
    f.Fail(absl::StrCat("architecture.rope_scaling must be none, yarn or llama3, got '",
                        scaling, "'"));
  }
  a.rope_factor = f.Optional<double>("rope_factor", d.rope_factor);
  a.rope_original_max_positions = f.Optional<int>("rope_original_max_positions", 0);
  a.yarn_beta_fast = f.Optional<double>("yarn_beta_fast", d.yarn_beta_fast);
  a.yarn_beta_slow = f.Optional<double>("yarn_beta_slow", d.yarn_beta_slow);
  a.yarn_mscale = f.Optional<double>("yarn_mscale", d.yarn_mscale);
  a.yarn_mscale_all_dim = f.Optional<double>("yarn_mscale_all_dim", d.yarn_mscale_all_dim);
  a.qk_layernorm = f.Optional<bool>("qk_layernorm", false);
  a.router_sigmoid = f.Optional<bool>("router_sigmoid", false);
  a.router_expert_bias = f.Optional<bool>("router_expert_bias", false);
  a.router_topk_scaling_factor = f.Optional<double>("router_topk_scaling_factor", 0.0);
  a.router_num_groups = f.Optional<int>("router_num_groups", 0);
  a.router_group_topk = f.Optional<int>("router_group_topk", 0);
  a.gpt_oss_activation = f.Optional<bool>("gpt_oss_activation", false);
  a.router_pre_softmax = f.Optional<bool>("router_pre_softmax", false);
  a.shared_expert_gate = f.Optional<bool>("shared_expert_gate", false);
  if (!f.status().ok()) r.Fail(std::string(f.status().message()));
}

json NativeArchitecture(const ArchitectureDetails& a) {
  json j;
  j["learned_position_embeddings"] = a.learned_position_embeddings;
  j["layernorm"] = a.layernorm;
  j["norm_epsilon"] = a.norm_epsilon;
  j["max_position_embeddings"] = a.max_position_embeddings;
  j["rope_theta"] = a.rope_theta;
  j["rotary_percent"] = a.rotary_percent;
  j["rope_scaling"] = std::string(RopeScalingName(a.rope_scaling));
  j["rope_factor"] = a.rope_factor;
  j["rope_original_max_positions"] = a.rope_original_max_positions;
  j["yarn_beta_fast"] = a.yarn_beta_fast;
  j["yarn_beta_slow"] = a.yarn_beta_slow;
  j["yarn_mscale"] = a.yarn_mscale;
  j["yarn_mscale_all_dim"] = a.yarn_mscale_all_dim;
  j["qk_layernorm"] = a.qk_layernorm;
  j["router_sigmoid"] = a.router_sigmoid;
  j["router_expert_bias"] = a.router_expert_bias;
  j["router_topk_scaling_factor"] = a.router_topk_scaling_factor;
  j["router_num_groups"] = a.router_num_groups;
  j["router_group_topk"] = a.router_group_topk;
  j["gpt_oss_activation"] = a.gpt_oss_activation;
  j["router_pre_softmax"] = a.router_pre_softmax;
  j["shared_expert_gate"] = a.shared_expert_gate;
  return j;
}

}  // namespace

absl::StatusOr<ModelSpec> ParseHfConfig(std::string_view text) {
  absl::StatusOr<json> parsed = ParseJsonObject(text);
  if (!parsed.ok()) return parsed.status();
  const json& j = *parsed;
  FieldReader top(j, "config.json");
  const std::string type = top.Required<std::string>("model_type");
  if (!top.status().ok()) return top.status();
  FieldReader r(j, absl::StrCat("config.json (model_type ", type, ")"));

  ModelSpec m;
  m.model_type = type;
  // Unnamed configs (most config.json files) are named by their type;
  // LoadModelArg names a file's by its path.
  m.name = r.Optional<std::string>("_name_or_path", type);
  m.tie_word_embeddings = r.Optional<bool>("tie_word_embeddings", false);
  m.attention_bias = r.Optional<bool>("attention_bias", false);

  if (type == "gpt2") {
    m.hidden_size = r.Required<int64_t>("n_embd");
    m.num_layers = r.Required<int>("n_layer");
    m.num_attention_heads = r.Required<int>("n_head");
    m.vocab_size = r.Required<int64_t>("vocab_size");
    m.ffn_hidden_size = r.Optional<int64_t>("n_inner", 4 * m.hidden_size);
    m.gated_mlp = false;
    m.tie_word_embeddings = r.Optional<bool>("tie_word_embeddings", true);
    m.attention_bias = true;
    m.num_kv_heads = m.num_attention_heads;
    m.head_dim = m.num_attention_heads > 0
                     ? int(m.hidden_size / m.num_attention_heads)
                     : 0;
    m.v_head_dim = m.head_dim;
  } else if (type == "deepseek_v3" || type == "kimi_k2" ||
             type == "deepseek_v2") {
    ReadHfShape(r, m);
    ReadMla(r, m);
    ReadDeepSeekStyleMoe(r, /*shared_default=*/0, /*dense_default=*/0, m);
    m.moe_layer_freq = r.Optional<int>("moe_layer_freq", 1);
  } else if (type == "glm4_moe") {
    // GLM-4.5 / 4.6: GQA with q / k / v biases (attention_bias; the output
    // projection has none), first_k_dense_replace dense layers, then MoE
    // layers with shared experts, MTP layers (num_nextn_predict_layers).
    ReadHfShape(r, m);
    ReadGqa(r, m);
    m.qkv_bias = m.attention_bias;
    m.attention_bias = false;
    // Glm4MoeConfig's defaults: one shared expert, one dense first layer.
    ReadDeepSeekStyleMoe(r, /*shared_default=*/1, /*dense_default=*/1, m);
  } else if (type == "qwen3_moe" || type == "qwen2_moe") {
    m.qkv_bias = type == "qwen2_moe";  // Qwen2MoeAttention: q/k/v_proj bias=True
    ReadHfShape(r, m);
    ReadGqa(r, m);
    if (absl::Status s = ReadQwenSlidingWindow(r, type, m); !s.ok()) return s;
    m.ffn_hidden_size = r.Optional<int64_t>("intermediate_size", 0);
    m.num_routed_experts = r.Required<int>("num_experts");
    m.moe_top_k = r.Required<int>("num_experts_per_tok");
    m.moe_ffn_hidden_size = r.Required<int64_t>("moe_intermediate_size");
    m.moe_layer_freq = r.Optional<int>("decoder_sparse_step", 1);
    // Qwen2-MoE's shared expert: one MLP of shared_expert_intermediate_size,
    // held as that many routed-expert widths (same FLOPs and parameters).
    const int64_t shared = r.Optional<int64_t>("shared_expert_intermediate_size", 0);
    if (shared > 0 && m.moe_ffn_hidden_size > 0) {
      if (shared % m.moe_ffn_hidden_size != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config.json (model_type ", type, "): shared_expert_intermediate_size ", shared,
            " is not a multiple of moe_intermediate_size ", m.moe_ffn_hidden_size,
            " (moetune holds a shared expert as whole routed-expert widths; use the native "
            "form to describe it)"));
      }
      m.num_shared_experts = static_cast<int>(shared / m.moe_ffn_hidden_size);
    }
    if (r.Has("mlp_only_layers") && r.raw("mlp_only_layers").is_array() &&
        !r.raw("mlp_only_layers").empty() && m.num_layers > 0) {
      m.moe_layer_pattern.assign(m.num_layers, true);
      for (const json& v : r.raw("mlp_only_layers")) {
        const int l = v.is_number_integer() && v.get<int64_t>() >= 0 &&
                              v.get<int64_t>() < m.num_layers
                          ? static_cast<int>(v.get<int64_t>())
                          : -1;
        if (l < 0 || l >= m.num_layers) {
          return absl::InvalidArgumentError(
              absl::StrCat("mlp_only_layers entry ", v.dump(),
                           " is not a layer index below ", m.num_layers));
        }
        m.moe_layer_pattern[l] = false;
      }
      // HF Qwen3-MoE: MoE iff not mlp-only and (l + 1) % step == 0.
      for (int l = 0; l < m.num_layers; ++l) {
        if ((l + 1) % std::max(1, m.moe_layer_freq) != 0) {
          m.moe_layer_pattern[l] = false;
        }
      }
    } else if (m.moe_layer_freq > 1 && m.num_layers > 0) {
      m.moe_layer_pattern.assign(m.num_layers, false);
      for (int l = 0; l < m.num_layers; ++l) {
        m.moe_layer_pattern[l] = (l + 1) % m.moe_layer_freq == 0;
      }
    }
  } else if (type == "mixtral" || type == "gpt_oss") {
    ReadHfShape(r, m);
    ReadGqa(r, m);
    m.moe_ffn_hidden_size = r.Required<int64_t>("intermediate_size");
    m.ffn_hidden_size = m.moe_ffn_hidden_size;
    m.num_routed_experts = r.Required<int>("num_local_experts");
    m.moe_top_k = r.Required<int>("num_experts_per_tok");
    if (type == "gpt_oss") {
      // Every GPT-OSS attention layer has learned sinks (model card).
      m.attention_sinks = true;
      m.sliding_window = r.Required<int>("sliding_window");
      if (r.Has("layer_types")) {
        if (absl::Status s = ReadLayerTypes(r, type, m); !s.ok()) return s;
      } else {
        // GPT-OSS alternates sliding and full layers, sliding first.
        for (int l = 0; l < m.num_layers; ++l) {
          m.sliding_window_layers.push_back(l % 2 == 0);
        }
      }
    } else if (r.Has("sliding_window")) {
      // Mixtral configs carry "sliding_window": null (no window) or a
      // window applied to every layer.
      m.sliding_window = r.Optional<int>("sliding_window", 0);
      if (m.sliding_window > 0 && m.num_layers > 0) {  // else CheckSpec names it
        m.sliding_window_layers.assign(m.num_layers, true);
      }
    }
  } else if (type == "llama" || type == "mistral" || type == "qwen2" ||
             type == "qwen3") {
    m.qkv_bias = type == "qwen2";  // Qwen2Attention: q/k/v_proj bias=True
    ReadHfShape(r, m);
    ReadGqa(r, m);
    m.ffn_hidden_size = r.Required<int64_t>("intermediate_size");
    if (type == "qwen2" || type == "qwen3") {
      if (absl::Status s = ReadQwenSlidingWindow(r, type, m); !s.ok()) return s;
    } else if (type == "mistral") {
      // Mistral-7B v0.1: every layer attends within the window (4,096);
      // later releases carry null.
      m.sliding_window = r.Optional<int>("sliding_window", 0);
      if (m.sliding_window > 0 && m.num_layers > 0) {  // else CheckSpec names it
        m.sliding_window_layers.assign(m.num_layers, true);
      }
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported model_type '", type,
        "' (supported: deepseek_v2, deepseek_v3, kimi_k2, glm4_moe, qwen2_moe, qwen3_moe, "
        "mixtral, gpt_oss, llama, mistral, qwen2, qwen3, gpt2; or use the native form with "
        "\"format\": \"",
        internal::Sv(kNativeFormat), "\")"));
  }
  ReadHfArchitecture(r, type, m.arch);
  if (!r.status().ok()) return r.status();
  if (absl::Status s = CheckSpec(m); !s.ok()) return s;
  return m;
}

absl::StatusOr<ModelSpec> ParseNativeModelJson(std::string_view text) {
  absl::StatusOr<json> parsed = ParseJsonObject(text);
  if (!parsed.ok()) return parsed.status();
  const json& j = *parsed;
  FieldReader r(j, "native model JSON");
  const std::string format = r.Required<std::string>("format");
  if (!r.status().ok()) return r.status();
  if (format != kNativeFormat) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown model format '", format, "' (expected ", internal::Sv(kNativeFormat), ")"));
  }
  ModelSpec m;
  m.model_type = "native";
  m.name = r.Optional<std::string>("name", "");
  m.num_layers = r.Required<int>("num_layers");
  m.hidden_size = r.Required<int64_t>("hidden_size");
  m.vocab_size = r.Required<int64_t>("vocab_size");
  m.num_attention_heads = r.Required<int>("num_attention_heads");
  const std::string attention =
      absl::AsciiStrToLower(r.Optional<std::string>("attention", "gqa"));
  if (attention == "mla") {
    ReadMla(r, m);
  } else if (attention == "gqa" || attention == "mha") {
    m.num_kv_heads = r.Optional<int>("num_kv_heads", m.num_attention_heads);
    m.head_dim = r.Required<int>("head_dim");
    m.v_head_dim = r.Optional<int>("v_head_dim", m.head_dim);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown attention '", attention, "' (expected gqa, mha or mla)"));
  }
  m.attention_bias = r.Optional<bool>("attention_bias", false);
  m.qkv_bias = r.Optional<bool>("qkv_bias", false);
  m.attention_sinks = r.Optional<bool>("attention_sinks", false);
  m.gated_mlp = r.Optional<bool>("gated_mlp", true);
  m.num_routed_experts = r.Optional<int>("num_routed_experts", 0);
  m.ffn_hidden_size = r.Optional<int64_t>("ffn_hidden_size", 0);
  if (m.num_routed_experts > 0) {
    m.moe_top_k = r.Required<int>("moe_top_k");
    m.moe_ffn_hidden_size = r.Required<int64_t>("moe_ffn_hidden_size");
    m.num_shared_experts = r.Optional<int>("num_shared_experts", 0);
    m.first_k_dense = r.Optional<int>("first_k_dense", 0);
    m.moe_layer_freq = r.Optional<int>("moe_layer_freq", 1);
    if (r.Has("moe_layer_pattern")) {
      for (const json& v : r.raw("moe_layer_pattern")) {
        if (!v.is_boolean()) {
          return absl::InvalidArgumentError(
              "field 'moe_layer_pattern' must hold booleans");
        }
        m.moe_layer_pattern.push_back(v.get<bool>());
      }
    }
  } else {
    m.ffn_hidden_size = r.Required<int64_t>("ffn_hidden_size");
  }
  m.sliding_window = r.Optional<int>("sliding_window", 0);
  if (r.Has("sliding_window_layers")) {
    for (const json& v : r.raw("sliding_window_layers")) {
      if (!v.is_boolean()) {
        return absl::InvalidArgumentError(
            "field 'sliding_window_layers' must hold booleans");
      }
      m.sliding_window_layers.push_back(v.get<bool>());
    }
  } else if (m.sliding_window > 0 && m.num_layers > 0) {  // else CheckSpec names it
    m.sliding_window_layers.assign(m.num_layers, true);
  }
  m.mtp_layers = r.Optional<int>("mtp_layers", 0);
  m.tie_word_embeddings = r.Optional<bool>("tie_word_embeddings", false);
  ReadNativeArchitecture(r, m.arch);
  if (!r.status().ok()) return r.status();
  if (absl::Status s = CheckSpec(m); !s.ok()) return s;
  return m;
}

absl::StatusOr<ModelSpec> ParseModelJson(std::string_view text) {
  absl::StatusOr<json> parsed = ParseJsonObject(text);
  if (!parsed.ok()) return parsed.status();
  if (parsed->contains("format")) return ParseNativeModelJson(text);
  return ParseHfConfig(text);
}

std::string ModelSpecToNativeJson(const ModelSpec& m) {
  json j;
  j["format"] = std::string(kNativeFormat);
  j["name"] = m.name;
  j["num_layers"] = m.num_layers;
  j["hidden_size"] = m.hidden_size;
  j["vocab_size"] = m.vocab_size;
  j["num_attention_heads"] = m.num_attention_heads;
  if (m.attention == AttentionType::kMla) {
    j["attention"] = "mla";
    j["q_lora_rank"] = m.q_lora_rank;
    j["kv_lora_rank"] = m.kv_lora_rank;
    j["qk_nope_head_dim"] = m.qk_nope_head_dim;
    j["qk_rope_head_dim"] = m.qk_rope_head_dim;
    j["v_head_dim"] = m.v_head_dim;
  } else {
    j["attention"] = "gqa";
    j["num_kv_heads"] = m.num_kv_heads;
    j["head_dim"] = m.head_dim;
    j["v_head_dim"] = m.v_head_dim;
  }
  j["attention_bias"] = m.attention_bias;
  j["qkv_bias"] = m.qkv_bias;
  j["attention_sinks"] = m.attention_sinks;
  j["ffn_hidden_size"] = m.ffn_hidden_size;
  j["gated_mlp"] = m.gated_mlp;
  if (m.IsMoe()) {
    j["num_routed_experts"] = m.num_routed_experts;
    j["moe_top_k"] = m.moe_top_k;
    j["num_shared_experts"] = m.num_shared_experts;
    j["moe_ffn_hidden_size"] = m.moe_ffn_hidden_size;
    j["first_k_dense"] = m.first_k_dense;
    j["moe_layer_freq"] = m.moe_layer_freq;
    if (!m.moe_layer_pattern.empty()) {
      j["moe_layer_pattern"] = m.moe_layer_pattern;
    }
  }
  j["sliding_window"] = m.sliding_window;
  if (!m.sliding_window_layers.empty()) {
    j["sliding_window_layers"] = m.sliding_window_layers;
  }
  j["mtp_layers"] = m.mtp_layers;
  j["tie_word_embeddings"] = m.tie_word_embeddings;
  j["architecture"] = NativeArchitecture(m.arch);
  return j.dump(2);
}

absl::StatusOr<ModelSpec> LoadModelPreset(std::string_view name) {
  const std::string lower = internal::Lower(name);
  for (const internal::EmbeddedModel& preset : internal::EmbeddedModels()) {
    if (lower == preset.name) {
      absl::StatusOr<ModelSpec> spec = ParseHfConfig(preset.config_json);
      if (!spec.ok()) {
        return absl::InternalError(absl::StrCat("built-in preset ", internal::Sv(preset.name),
                                                ": ", spec.status().message()));
      }
      spec->name = std::string(preset.name);
      return spec;
    }
  }
  return absl::NotFoundError(absl::StrCat("unknown model preset '", internal::Sv(name),
                                          "' (known: ",
                                          absl::StrJoin(ModelPresetNames(), ", "),
                                          ")"));
}

std::vector<std::string> ModelPresetNames() {
  std::vector<std::string> names;
  for (const internal::EmbeddedModel& preset : internal::EmbeddedModels()) {
    names.emplace_back(preset.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace moetune::planner
