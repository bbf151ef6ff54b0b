#include "planner/model_spec.h"

#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"

namespace moetune::planner {
namespace {

using ::moetune::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ModelSpecTest, EveryPresetLoads) {
  const std::vector<std::string> names = ModelPresetNames();
  EXPECT_EQ(names.size(), 17u);
  for (const std::string& name : names) {
    absl::StatusOr<ModelSpec> spec = LoadModelPreset(name);
    ASSERT_TRUE(spec.ok()) << name << ": " << spec.status();
    EXPECT_EQ(spec->name, name);
  }
}

TEST(ModelSpecTest, DeepSeekV3Fields) {
  absl::StatusOr<ModelSpec> m = LoadModelPreset("deepseek-v3");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->attention, AttentionType::kMla);
  EXPECT_EQ(m->num_layers, 61);
  EXPECT_EQ(m->hidden_size, 7168);
  EXPECT_EQ(m->q_lora_rank, 1536);
  EXPECT_EQ(m->kv_lora_rank, 512);
  EXPECT_EQ(m->QkHeadDim(), 192);
  EXPECT_EQ(m->num_routed_experts, 256);
  EXPECT_EQ(m->moe_top_k, 8);
  EXPECT_EQ(m->num_shared_experts, 1);
  EXPECT_EQ(m->first_k_dense, 3);
  EXPECT_EQ(m->NumMoeLayers(), 58);
  EXPECT_FALSE(m->IsMoeLayer(2));
  EXPECT_TRUE(m->IsMoeLayer(3));
  EXPECT_EQ(m->mtp_layers, 1);
  // Published: 671B main model + 14B MTP module (whose embedding and head
  // copies, 2 x 0.93B, training shares) = 685B in the checkpoint; 37B
  // activated. Here: 671 + 11.6 (one MoE layer + 2h x h projection).
  EXPECT_NEAR(m->TotalParams() / 1e9, 682.6, 2.0);
  EXPECT_NEAR(m->ActiveParamsPerToken() / 1e9, 37.5, 1.5);
}

TEST(ModelSpecTest, DenseAndSlidingModels) {
  absl::StatusOr<ModelSpec> llama = LoadModelPreset("llama3-70b");
  ASSERT_TRUE(llama.ok());
  EXPECT_FALSE(llama->IsMoe());
  EXPECT_EQ(llama->head_dim, 128);  // 8192 / 64
  EXPECT_EQ(llama->num_kv_heads, 8);
  EXPECT_NEAR(llama->TotalParams() / 1e9, 70.6, 0.5);

  absl::StatusOr<ModelSpec> oss = LoadModelPreset("gpt-oss-120b");
  ASSERT_TRUE(oss.ok());
  EXPECT_EQ(oss->sliding_window, 128);
  EXPECT_TRUE(oss->IsSlidingLayer(0));
  EXPECT_FALSE(oss->IsSlidingLayer(1));
  EXPECT_EQ(oss->NumMoeLayers(), 36);
  // 116.8B total in the model card (attention + 128 experts x 36 layers).
  EXPECT_NEAR(oss->TotalParams() / 1e9, 116.8, 2.0);

  absl::StatusOr<ModelSpec> gpt3 = LoadModelPreset("gpt3-175b");
  ASSERT_TRUE(gpt3.ok());
  EXPECT_FALSE(gpt3->gated_mlp);
  EXPECT_TRUE(gpt3->tie_word_embeddings);
  EXPECT_NEAR(gpt3->TotalParams() / 1e9, 174.6, 1.0);
}

// The presets added for the Megatron-Bridge verification cards' models
// (tests/internal/recipe_checks.cc), each checked against a published size.
TEST(ModelSpecTest, VerificationCardModels) {
  // Moonlight-16B-A3B (DeepseekV3ForCausalLM, no q LoRA): the card's SFT
  // export holds 31,920,240,256 bytes of BF16 tensors with vocab 163,842
  // (Megatron-Bridge examples/model_verification_cards/moonlight-16b-a3b),
  // i.e. 15,960,120,128 parameters; the preset's HF vocab is 163,840 (two
  // rows x 2 x 2,048 fewer), and TotalParams leaves out the ~0.13M norm
  // weights. By hand: embeddings 2 x 163,840 x 2,048 = 671.1M; attention
  // 27 x (2,048 x 3,072 + 2,048 x 576 + 512 x 4,096 + 2,048 x 2,048) =
  // 27 x 13.76M = 371.5M; the dense layer's MLP 3 x 2,048 x 11,264 =
  // 69.2M; 26 MoE layers x (64 + 2 shared) x 3 x 2,048 x 1,408 plus the
  // 64 x 2,048 router = 26 x 571.0M = 14,846.6M: 15,958.4M.
  absl::StatusOr<ModelSpec> moonlight = LoadModelPreset("moonlight-16b-a3b");
  ASSERT_TRUE(moonlight.ok()) << moonlight.status();
  EXPECT_EQ(moonlight->q_lora_rank, 0);  // "q_lora_rank": null
  EXPECT_EQ(moonlight->NumMoeLayers(), 26);
  EXPECT_NEAR(moonlight->TotalParams() / 1e9, 15.960, 0.003);

  // Qwen3-8B: 8.19B in the model card (Qwen/Qwen3-8B).
  absl::StatusOr<ModelSpec> qwen = LoadModelPreset("qwen3-8b");
  ASSERT_TRUE(qwen.ok()) << qwen.status();
  EXPECT_FALSE(qwen->IsMoe());
  EXPECT_NEAR(qwen->TotalParams() / 1e9, 8.19, 0.02);

  // GLM-4.5 / GLM-4.5-Air (zai-org): 355B / 106B total, 32B / 12B active on
  // their cards, which count neither the MTP layer nor, active, the input
  // embedding: the presets' totals are within 1% of that once both are set
  // aside, the active counts within the cards' whole billions (Air by hand:
  // 46 x 109.1 M attention + 134.5 M dense MLP + 45 x 9 x 17.3 M experts +
  // 0.62 B output = 12.8 B).
  for (const auto& [name, total_b, active_b] :
       std::vector<std::tuple<std::string, double, double>>{{"glm-4.5", 355, 32},
                                                            {"glm-4.5-air", 106, 12}}) {
    absl::StatusOr<ModelSpec> glm = LoadModelPreset(name);
    ASSERT_TRUE(glm.ok()) << glm.status();
    ModelSpec no_mtp = *glm;
    no_mtp.mtp_layers = 0;
    const double embedding = double(glm->vocab_size) * glm->hidden_size;
    EXPECT_NEAR(no_mtp.TotalParams() / 1e9 / total_b, 1.0, 0.01) << name;
    EXPECT_NEAR((no_mtp.ActiveParamsPerToken() - embedding) / 1e9, active_b, 1.0) << name;
  }

  // GPT-OSS-20B: 20.91B total, 3.61B active in OpenAI's model card, which
  // counts the unembedding but not the input embedding (a lookup):
  // ActiveParamsPerToken counts both, 201,088 x 2,880 = 0.58B more.
  absl::StatusOr<ModelSpec> oss = LoadModelPreset("gpt-oss-20b");
  ASSERT_TRUE(oss.ok()) << oss.status();
  EXPECT_EQ(oss->NumMoeLayers(), 24);
  EXPECT_TRUE(oss->IsSlidingLayer(22));
  EXPECT_FALSE(oss->IsSlidingLayer(23));
  EXPECT_NEAR(oss->TotalParams() / 1e9, 20.91, 0.03);
  EXPECT_NEAR((oss->ActiveParamsPerToken() - 201088.0 * 2880) / 1e9, 3.61, 0.03);
}

TEST(ModelSpecTest, PaddedVocab) {
  ModelSpec m;
  m.vocab_size = 50257;  // GPT-2: padded to 50304 = 393 x 128
  EXPECT_EQ(m.PaddedVocabSize(), 50304);
  m.vocab_size = 128256;  // already a multiple of 128
  EXPECT_EQ(m.PaddedVocabSize(), 128256);
}

// A 4-layer config.json (hidden 1,024, 8 heads, 2 kv heads) with `fields`.
absl::StatusOr<ModelSpec> SmallConfig(const std::string& fields) {
  return ParseHfConfig(absl::StrCat(R"({"hidden_size": 1024, "num_hidden_layers": 4,
      "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 32000,
      "intermediate_size": 4096, )",
                                    fields, "}"));
}

// Hugging Face's Qwen2 and Qwen2-MoE attention always has q/k/v biases (no
// config field says so); Qwen3's, Llama's and Mistral's has none.
TEST(ModelSpecTest, QkvBiasFollowsTheModelType) {
  const std::string moe = R"(, "num_experts": 8, "num_experts_per_tok": 2,
      "moe_intermediate_size": 512)";
  for (const auto& [type, extra, bias] :
       std::vector<std::tuple<std::string, std::string, bool>>{{"qwen2", "", true},
                                                               {"qwen2_moe", moe, true},
                                                               {"qwen3", "", false},
                                                               {"qwen3_moe", moe, false},
                                                               {"llama", "", false},
                                                               {"mistral", "", false}}) {
    const absl::StatusOr<ModelSpec> m =
        SmallConfig(absl::StrCat(R"("model_type": ")", type, "\"", extra));
    ASSERT_TRUE(m.ok()) << type << ": " << m.status();
    EXPECT_EQ(m->qkv_bias, bias) << type;
    EXPECT_FALSE(m->attention_bias) << type;
    EXPECT_EQ(m->AttentionHasBias(), bias) << type;
  }
}

// Qwen2-57B-A14B's config.json: a shared expert of 20,480 = 8 x 2,560
// behind a sigmoid gate, softmax over all 64 experts before the top 8 with
// the 8 weights left unnormalized (norm_topk_prob false), q/k/v biases.
TEST(ModelSpecTest, Qwen2MoeSharedExpertAndRouter) {
  absl::StatusOr<ModelSpec> m = ParseHfConfig(R"({"model_type": "qwen2_moe",
      "hidden_size": 3584, "intermediate_size": 18944, "moe_intermediate_size": 2560,
      "shared_expert_intermediate_size": 20480, "num_hidden_layers": 28,
      "num_attention_heads": 28, "num_key_value_heads": 4, "num_experts": 64,
      "num_experts_per_tok": 8, "norm_topk_prob": false, "vocab_size": 151936,
      "tie_word_embeddings": false})");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->num_shared_experts, 8);
  EXPECT_TRUE(m->arch.shared_expert_gate);
  EXPECT_TRUE(m->arch.router_pre_softmax);
  EXPECT_TRUE(m->qkv_bias);
  // Qwen3-MoE releases normalize the top k; DeepSeek-V2's class default does not.
  absl::StatusOr<ModelSpec> q3 = ParseHfConfig(R"({"model_type": "qwen3_moe",
      "hidden_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 32,
      "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936,
      "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
      "norm_topk_prob": true})");
  ASSERT_TRUE(q3.ok()) << q3.status();
  EXPECT_FALSE(q3->arch.router_pre_softmax);
  EXPECT_EQ(q3->num_shared_experts, 0);
  EXPECT_FALSE(q3->arch.shared_expert_gate);
  // A shared expert that is no whole number of routed widths is refused by
  // name rather than resized.
  EXPECT_THAT(ParseHfConfig(R"({"model_type": "qwen2_moe",
      "hidden_size": 2048, "moe_intermediate_size": 1408,
      "shared_expert_intermediate_size": 5000, "num_hidden_layers": 24,
      "num_attention_heads": 16, "num_experts": 60, "num_experts_per_tok": 4,
      "vocab_size": 151936})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("shared_expert_intermediate_size 5000 is not a multiple of "
                                 "moe_intermediate_size 1408")));
}

// Sliding windows the Hugging Face classes apply: Mistral-7B v0.1's on every
// layer (null in later releases); Qwen2 / Qwen3 only with
// use_sliding_window, from max_window_layers on.
TEST(ModelSpecTest, SlidingWindowsOfMistralAndQwen) {
  const auto parse = SmallConfig;
  absl::StatusOr<ModelSpec> v01 = parse(R"("model_type": "mistral", "sliding_window": 4096)");
  ASSERT_TRUE(v01.ok()) << v01.status();
  EXPECT_EQ(v01->sliding_window, 4096);
  EXPECT_EQ(v01->sliding_window_layers, std::vector<bool>(4, true));
  absl::StatusOr<ModelSpec> v03 = parse(R"("model_type": "mistral", "sliding_window": null)");
  ASSERT_TRUE(v03.ok()) << v03.status();
  EXPECT_EQ(v03->sliding_window, 0);
  EXPECT_FALSE(v03->IsSlidingLayer(0));
  // Qwen2.5 releases: a window given, use_sliding_window false: unused.
  absl::StatusOr<ModelSpec> off = parse(
      R"("model_type": "qwen2", "sliding_window": 131072, "use_sliding_window": false)");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(off->sliding_window, 0);
  absl::StatusOr<ModelSpec> on = parse(R"("model_type": "qwen3", "sliding_window": 4096,
      "use_sliding_window": true, "max_window_layers": 2)");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_EQ(on->sliding_window_layers, (std::vector<bool>{false, false, true, true}));
  absl::StatusOr<ModelSpec> listed = parse(R"("model_type": "qwen2", "sliding_window": 4096,
      "use_sliding_window": true, "layer_types": ["full_attention", "sliding_attention",
      "full_attention", "sliding_attention"])");
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->sliding_window_layers, (std::vector<bool>{false, true, false, true}));
  EXPECT_THAT(parse(R"("model_type": "qwen2", "sliding_window": 4096,
      "use_sliding_window": true, "layer_types": ["full_attention", "linear_attention",
      "full_attention", "full_attention"])"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown layer_types entry \"linear_attention\"")));
  EXPECT_THAT(parse(R"("model_type": "qwen3", "sliding_window": 4096,
      "use_sliding_window": true, "layer_types": "sliding_attention")"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field 'layer_types' in config.json (model_type qwen3) must be "
                                 "an array")));
}

// GLM-4.5 (zai-org/GLM-4.5 config.json): 92 layers, 3 dense, 89 MoE of 160
// experts (1,536 wide, top 8) and one shared expert; GQA 96 / 8 heads of 128
// with q / k / v biases and q / k norms; RoPE on half of each head; the
// DeepSeek-V3 router; one MTP layer. By hand, in parameters: embedding and
// output 2 x 151,552 x 5,120 = 1.552 B; attention per layer 5,120 x 12,288
// x 2 + 5,120 x 2,048 = 136.3 M (x 93 with the MTP layer); dense MLP 3 x
// 5,120 x 12,288 = 188.7 M (x 3); MoE layer 161 experts x 23.59 M + router
// 0.8 M = 3.799 B (x 90 with MTP); MTP projection 2 x 5,120 x 5,120 =
// 52 M: 356.8 B (the model card: 355 B). Active per token: 1.552 + 12.54 +
// 0.566 + 89 x (9 x 23.59 M + 0.8 M) = 33.6 B (the card's 32 B counts no
// input embedding).
TEST(ModelSpecTest, Glm45) {
  absl::StatusOr<ModelSpec> m = ParseHfConfig(R"({"model_type": "glm4_moe",
      "attention_bias": true, "head_dim": 128, "hidden_size": 5120,
      "partial_rotary_factor": 0.5, "intermediate_size": 12288,
      "max_position_embeddings": 131072, "moe_intermediate_size": 1536,
      "norm_topk_prob": true, "num_attention_heads": 96, "n_group": 1, "topk_group": 1,
      "n_routed_experts": 160, "n_shared_experts": 1, "routed_scaling_factor": 2.5,
      "num_experts_per_tok": 8, "first_k_dense_replace": 3, "num_hidden_layers": 92,
      "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_scaling": null,
      "rope_theta": 1000000, "num_nextn_predict_layers": 1, "tie_word_embeddings": false,
      "use_qk_norm": true, "vocab_size": 151552})");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->qkv_bias);
  EXPECT_FALSE(m->attention_bias);
  EXPECT_EQ(m->NumMoeLayers(), 89);
  EXPECT_FALSE(m->IsMoeLayer(2));
  EXPECT_TRUE(m->IsMoeLayer(3));
  EXPECT_EQ(m->num_shared_experts, 1);
  EXPECT_EQ(m->mtp_layers, 1);
  EXPECT_TRUE(m->arch.qk_layernorm);
  EXPECT_DOUBLE_EQ(m->arch.rotary_percent, 0.5);
  EXPECT_TRUE(m->arch.router_sigmoid);
  EXPECT_TRUE(m->arch.router_expert_bias);
  EXPECT_DOUBLE_EQ(m->arch.router_topk_scaling_factor, 2.5);
  EXPECT_EQ(m->arch.router_num_groups, 0);
  EXPECT_FALSE(m->arch.router_pre_softmax);
  EXPECT_NEAR(m->TotalParams() / 1e9, 356.8, 0.3);
  EXPECT_NEAR(m->ActiveParamsPerToken() / 1e9, 33.6, 0.2);
}

TEST(ModelSpecTest, UnknownModelTypeIsNamed) {
  const absl::StatusOr<ModelSpec> mamba = ParseHfConfig(R"({"model_type": "mamba"})");
  EXPECT_THAT(mamba, StatusIs(absl::StatusCode::kInvalidArgument,
                              HasSubstr("unsupported model_type 'mamba'")));
  // The error lists what the parser takes: each listed type gets past the
  // type check (to the first missing field).
  const std::string message(mamba.status().message());
  const size_t from = message.find("(supported: ");
  const size_t to = message.find(';', from);
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  const std::vector<std::string> listed = absl::StrSplit(
      message.substr(from + 12, to - from - 12), ", ");
  EXPECT_EQ(listed.size(), 13u) << message;
  for (const std::string& type : listed) {
    const absl::StatusOr<ModelSpec> m =
        ParseHfConfig(absl::StrCat(R"({"model_type": ")", type, R"("})"));
    EXPECT_THAT(m, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("missing field")))
        << type;
  }
}

TEST(ModelSpecTest, MissingFieldIsNamed) {
  EXPECT_THAT(ParseHfConfig(R"({"model_type": "llama", "hidden_size": 4096,
                                "num_hidden_layers": 32, "vocab_size": 32000,
                                "num_attention_heads": 32})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("missing field 'intermediate_size'")));
  EXPECT_THAT(ParseHfConfig(R"({"hidden_size": 4096})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("missing field 'model_type'")));
  EXPECT_THAT(ParseHfConfig("not json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not valid JSON")));
}

TEST(ModelSpecTest, WrongTypeIsNamed) {
  EXPECT_THAT(ParseHfConfig(R"({"model_type": "llama", "hidden_size": "big",
                                "num_hidden_layers": 32, "vocab_size": 32000,
                                "num_attention_heads": 32,
                                "intermediate_size": 11008})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'hidden_size'")));
}

// Regression (model_spec_fuzzer): a huge float in an integer field was
// converted to int (undefined behaviour); now it is refused by name.
TEST(ModelSpecTest, AbsurdOrFractionalIntegersAreNamed) {
  const std::string base = R"({"model_type": "llama", "hidden_size": 4096,
      "intermediate_size": 14336, "num_hidden_layers": 32, "num_key_value_heads": 8,
      "vocab_size": 128256, "num_attention_heads": )";
  EXPECT_THAT(ParseHfConfig(base + "6.6e111}").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'num_attention_heads'")));
  EXPECT_THAT(ParseHfConfig(base + "32.5}").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("whole number")));
  EXPECT_TRUE(ParseHfConfig(base + "32}").ok());
}

TEST(ModelSpecTest, NativeFormRoundTrips) {
  for (const char* name : {"deepseek-v3", "gpt-oss-120b", "qwen3-30b-a3b",
                           "gpt3-175b"}) {
    absl::StatusOr<ModelSpec> m = LoadModelPreset(name);
    ASSERT_TRUE(m.ok());
    absl::StatusOr<ModelSpec> back = ParseModelJson(ModelSpecToNativeJson(*m));
    ASSERT_TRUE(back.ok()) << name << ": " << back.status();
    EXPECT_EQ(back->TotalParams(), m->TotalParams()) << name;
    EXPECT_EQ(back->NumMoeLayers(), m->NumMoeLayers()) << name;
    EXPECT_EQ(back->sliding_window_layers, m->sliding_window_layers) << name;
  }
}

TEST(ModelSpecTest, NativeFormErrors) {
  EXPECT_THAT(ParseNativeModelJson(R"({"format": "v0"})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown model format 'v0'")));
  EXPECT_THAT(
      ParseNativeModelJson(R"({"format": "moetune.model.v1", "num_layers": 2,
          "hidden_size": 64, "vocab_size": 100, "num_attention_heads": 4,
          "head_dim": 16, "num_routed_experts": 8, "moe_top_k": 2})"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("missing field 'moe_ffn_hidden_size'")));
  EXPECT_THAT(
      ParseNativeModelJson(R"({"format": "moetune.model.v1", "num_layers": 2,
          "hidden_size": 64, "vocab_size": 100, "num_attention_heads": 4,
          "num_kv_heads": 3, "head_dim": 16, "ffn_hidden_size": 128})"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("num_kv_heads=3 does not divide")));
  // A negative layer count with a sliding window (found by the model_spec
  // fuzzer: the per-layer window list was sized from it before the checks
  // ran) is an error naming the field, not a crash.
  EXPECT_THAT(
      ParseNativeModelJson(R"({"format": "moetune.model.v1", "num_layers": -2,
          "hidden_size": 64, "vocab_size": 100, "num_attention_heads": 4,
          "num_kv_heads": 4, "head_dim": 16, "ffn_hidden_size": 128,
          "sliding_window": 4096})"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_layers")));
}

TEST(ModelSpecTest, UnknownPresetListsKnownOnes) {
  EXPECT_THAT(LoadModelPreset("gpt5"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("deepseek-v3")));
}

}  // namespace
}  // namespace moetune::planner
