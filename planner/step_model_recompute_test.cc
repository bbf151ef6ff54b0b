// The selective-recompute terms of Megatron-Core's CheckpointWithoutOutput
// (planner/internal/step_model_layers.h): the checkpoint's host calls, the
// mla_up_proj and moe_act re-runs' host time, and what the mla_up_proj
// recompute re-runs on the GPU. Expected values are worked by hand from
// the counts in the header (3 us per PyTorch call, kTorchCallHostS).
#include "gtest/gtest.h"
#include "planner/internal/step_model_layers.h"
#include "planner/model_spec.h"

namespace moetune::planner {
namespace {

using step_model_internal::AttentionForwardKernels;
using step_model_internal::AttentionTpGatherWidth;
using step_model_internal::FillLayerKindTables;
using step_model_internal::CheckpointWithoutOutputHostSeconds;
using step_model_internal::MlaUpProjRecomputeMacsPerToken;
using step_model_internal::MlaUpProjRecomputeMemoryElemsPerToken;
using step_model_internal::MoeActRecomputeHostSeconds;
using step_model_internal::NormRecomputeHostSeconds;
using step_model_internal::PreMlpNormRecomputed;
using step_model_internal::RecomputedNormsPerLayer;
using step_model_internal::UpProjRecomputeHostSeconds;

// DeepSeek-V3's attention (config.json): hidden 7168, 128 heads, q LoRA
// 1536, kv LoRA 512, qk_nope 128, qk_rope 64, v 128.
ModelSpec DeepSeekV3Attention() {
  ModelSpec m;
  m.attention = AttentionType::kMla;
  m.hidden_size = 7168;
  m.num_attention_heads = 128;
  m.q_lora_rank = 1536;
  m.kv_lora_rank = 512;
  m.qk_nope_head_dim = 128;
  m.qk_rope_head_dim = 64;
  m.v_head_dim = 128;
  return m;
}

// The attention block's sequence-parallel gather width (not a recompute
// term; here for the DeepSeek-V3 attention above): MLA gathers the
// latents, q LoRA 1536 + kv LoRA 512 + the rope key 64 = 2,112 of the
// 7,168 hidden; without q LoRA linear_q_proj gathers the hidden state:
// 7,168 + 512 + 64 = 7,744; GQA gathers the hidden state.
TEST(AttentionTpGatherWidthTest, MlaGathersTheLatents) {
  ModelSpec m = DeepSeekV3Attention();
  EXPECT_DOUBLE_EQ(AttentionTpGatherWidth(m), 2112.0);
  m.q_lora_rank = 0;
  EXPECT_DOUBLE_EQ(AttentionTpGatherWidth(m), 7744.0);
  ModelSpec gqa;
  gqa.attention = AttentionType::kGqa;
  gqa.hidden_size = 8192;
  EXPECT_DOUBLE_EQ(AttentionTpGatherWidth(gqa), 8192.0);
}

// Qwen3's per-head q and k RMSNorms (not a recompute term; here with the
// attention block's other counts): two more forward kernels, and each reads
// and writes every q and k element. Qwen3-8B (hidden 4,096, 32 heads, 8 kv
// heads, head dim 128): norm 2h + residual 3h + RoPE 2 x (32 + 8) x 128 +
// q/k norms 2 x (32 + 8) x 128 = 8,192 + 12,288 + 10,240 + 10,240 = 40,960
// elements per token; Llama 3 8B, the same shape without them: 30,720.
TEST(AttentionBlockTest, Qwen3QkNorms) {
  absl::StatusOr<ModelSpec> qwen = LoadModelPreset("qwen3-8b");
  absl::StatusOr<ModelSpec> llama = LoadModelPreset("llama3-8b");
  absl::StatusOr<ModelSpec> dsv3 = LoadModelPreset("deepseek-v3");
  ASSERT_TRUE(qwen.ok() && llama.ok() && dsv3.ok());
  EXPECT_EQ(AttentionForwardKernels(*qwen), 14);
  EXPECT_EQ(AttentionForwardKernels(*llama), 12);
  EXPECT_EQ(AttentionForwardKernels(*dsv3), 18);  // MLA: its latent norms are in the 6
  StepModel::LayerKindTables q, l;
  FillLayerKindTables(*qwen, 0, 4096, &q);
  FillLayerKindTables(*llama, 0, 4096, &l);
  EXPECT_DOUBLE_EQ(q.mb_attn_elems, 40960.0);
  EXPECT_DOUBLE_EQ(l.mb_attn_elems, 30720.0);
  // The layer's kernels: the attention block's and the dense MLP's 8.
  EXPECT_DOUBLE_EQ(q.kernels_fwd, 14.0 + 8.0);
  EXPECT_DOUBLE_EQ(l.kernels_fwd, 12.0 + 8.0);
}

// 4 inputs, 3 outputs (mla_up_proj): 19 + 2 x 4 + 6 x 3 = 45 calls x 3 us
// = 135 us, plus 3 restore copies x (3 + 4) us = 21 us: 156 us; x 1.5
// without NUMA binding: 234 us.
TEST(CheckpointWithoutOutputHostSecondsTest, CountsCallsAndRestoreCopies) {
  EXPECT_NEAR(CheckpointWithoutOutputHostSeconds(4, 3, 4e-6, 1.0), 156e-6, 1e-12);
  EXPECT_NEAR(CheckpointWithoutOutputHostSeconds(4, 3, 4e-6, 1.5), 234e-6, 1e-12);
  // No inputs, no outputs: the 19 fixed calls, 57 us.
  EXPECT_NEAR(CheckpointWithoutOutputHostSeconds(0, 0, 4e-6, 1.0), 57e-6, 1e-12);
}

// The checkpoint (156 us) + (6 light ops + 2 TE modules x 99.66 / 37.08
// light ops) x 7 us + 8 calls x 3 us: 156 + 11.3754 x 7 + 24 = 259.628 us.
TEST(UpProjRecomputeHostSecondsTest, CheckpointPlusReRun) {
  const double te = 99.66 / 37.08;
  EXPECT_NEAR(UpProjRecomputeHostSeconds(4e-6, 1.0), 156e-6 + (6 + 2 * te) * 7e-6 + 24e-6,
              1e-12);
  EXPECT_NEAR(UpProjRecomputeHostSeconds(4e-6, 1.0), 259.628e-6, 1e-9);
  // Every part scales with the NUMA factor.
  EXPECT_NEAR(UpProjRecomputeHostSeconds(4e-6, 1.5), 1.5 * UpProjRecomputeHostSeconds(4e-6, 1.0),
              1e-12);
}

// 2 inputs, 1 output: 19 + 4 + 6 = 29 calls x 3 us = 87 us, 1 restore copy
// 7 us, the activation re-run 7 us: 101 us.
TEST(MoeActRecomputeHostSecondsTest, CheckpointPlusActivation) {
  EXPECT_NEAR(MoeActRecomputeHostSeconds(4e-6, 1.0), 101e-6, 1e-12);
}

// q up 1536 x 128 x (128 + 64) = 37,748,736 plus kv up 512 x 128 x
// (128 + 128) = 16,777,216: 54,525,952 MACs per token -- 0.783 of the QKV
// projections' 7168 x (1536 + 576) + 54,525,952 = 69,664,768.
// One norm (1 input, 1 output): 19 + 2 + 6 = 27 calls x 3 us = 81 us, one
// restore copy (3 + 4) us = 7 us, and the TENorm re-run as 99.66 / 37.08 =
// 2.6877 light ops of 7 us = 18.814 us: 106.814 us.
TEST(NormRecomputeHostSecondsTest, CheckpointPlusTeNorm) {
  EXPECT_NEAR(NormRecomputeHostSeconds(4e-6, 1.0), 106.814e-6, 1e-9);
  EXPECT_NEAR(NormRecomputeHostSeconds(4e-6, 1.5), 1.5 * NormRecomputeHostSeconds(4e-6, 1.0),
              1e-12);
}

// Which norms "layernorm" recomputes: MLA's input norm is a TENorm of its
// own, GQA's is fused into linear_qkv; a MoE layer's pre-MLP norm is its
// own, a dense MLP's is fused into linear_fc1.
TEST(RecomputedNormsPerLayerTest, OnlyNormsThatAreModulesOfTheirOwn) {
  const ModelSpec mla = DeepSeekV3Attention();
  EXPECT_EQ(RecomputedNormsPerLayer(mla, /*pre_mlp_norm=*/true), 2);
  EXPECT_EQ(RecomputedNormsPerLayer(mla, /*pre_mlp_norm=*/false), 1);
  ModelSpec gqa;
  gqa.attention = AttentionType::kGqa;
  EXPECT_EQ(RecomputedNormsPerLayer(gqa, /*pre_mlp_norm=*/true), 1);
  EXPECT_EQ(RecomputedNormsPerLayer(gqa, /*pre_mlp_norm=*/false), 0);
}

// Megatron-Core keeps the pre-MLP norm's recompute without graphs, without
// a router graph and under full-iteration graphs; with TE-scoped graphs
// capturing the router only when the preprocess is captured too and the
// dispatcher is the NCCL all-to-all.
TEST(PreMlpNormRecomputedTest, TheCudaGraphRule) {
  MegatronFeatures f;  // scopes attn, moe_router, moe_preprocess
  EXPECT_TRUE(PreMlpNormRecomputed(false, f, Dispatcher::kFusedDedup));
  EXPECT_TRUE(PreMlpNormRecomputed(true, f, Dispatcher::kAllToAll));
  EXPECT_FALSE(PreMlpNormRecomputed(true, f, Dispatcher::kFusedDedup));
  f.graph_moe_preprocess = false;
  EXPECT_FALSE(PreMlpNormRecomputed(true, f, Dispatcher::kAllToAll));
  f.graph_moe_router = false;
  EXPECT_TRUE(PreMlpNormRecomputed(true, f, Dispatcher::kFusedDedup));
  f.graph_moe_router = true;
  f.graph_full_iteration = true;
  EXPECT_TRUE(PreMlpNormRecomputed(true, f, Dispatcher::kFusedDedup));
}

TEST(MlaUpProjRecomputeMacsPerTokenTest, DeepSeekV3) {
  const ModelSpec m = DeepSeekV3Attention();
  EXPECT_DOUBLE_EQ(MlaUpProjRecomputeMacsPerToken(m), 54525952.0);
  EXPECT_NEAR(MlaUpProjRecomputeMacsPerToken(m) / (7168.0 * (1536 + 576) + 54525952.0), 0.7827,
              1e-4);
}

// Without q LoRA the query projection from hidden is inside the
// recomputed function: 7168 x 128 x 192 + 16,777,216 = 192,937,984.
TEST(MlaUpProjRecomputeMacsPerTokenTest, NoQueryLora) {
  ModelSpec m = DeepSeekV3Attention();
  m.q_lora_rank = 0;
  EXPECT_DOUBLE_EQ(MlaUpProjRecomputeMacsPerToken(m), 192937984.0);
}

// Norms 2 x (1536 + 512) = 4,096; RoPE and assembly: read 24,576 (q up) +
// 32,768 (kv up) + 64 (rope key), write query 24,576 + key 24,576 +
// value 16,384 = 65,536; restore copy 2 x 65,536 = 131,072. Sum 258,112.
TEST(MlaUpProjRecomputeMemoryElemsPerTokenTest, DeepSeekV3) {
  EXPECT_DOUBLE_EQ(MlaUpProjRecomputeMemoryElemsPerToken(DeepSeekV3Attention()), 258112.0);
}

TEST(MlaUpProjRecomputeTest, NoneForGqa) {
  ModelSpec m;
  m.attention = AttentionType::kGqa;
  m.hidden_size = 4096;
  m.num_attention_heads = 32;
  EXPECT_EQ(MlaUpProjRecomputeMacsPerToken(m), 0.0);
  EXPECT_EQ(MlaUpProjRecomputeMemoryElemsPerToken(m), 0.0);
}

}  // namespace
}  // namespace moetune::planner
