// Fine-grained activation offload: what each offloaded module moves to the
// host (OffloadedBytesPerToken, planner/internal/step_model_layers.h), worked
// by hand from the model shapes, and the same bytes leaving HBM in the
// memory model and crossing the host link in the time model.
#include "gtest/gtest.h"
#include "planner/internal/step_model_layers.h"
#include "planner/model_spec.h"
#include "planner/step_model.h"

namespace moetune::planner {
namespace {

using step_model_internal::Context;
using step_model_internal::FillLayerKindTables;
using step_model_internal::OffloadedBytesPerToken;

struct Case {
  ModelSpec model;
  StepModel::LayerKindTables kind;
  Knobs knobs;
  Context context{};
};

// One layer of a preset at seq 4096, offloading `modules`, with a GEMM
// operand of `operand_bytes` (1 B stands for an 8-bit recipe) or BF16.
Case Make(const char* preset, int layer, uint32_t modules, bool low_precision) {
  Case c;
  absl::StatusOr<ModelSpec> m = LoadModelPreset(preset);
  EXPECT_TRUE(m.ok()) << preset;
  c.model = *m;
  c.kind.moe = c.model.IsMoeLayer(layer);
  FillLayerKindTables(c.model, layer, 4096, &c.kind);
  c.knobs.offload_activations = true;
  c.knobs.offload_modules = modules;
  c.knobs.recompute.mode = RecomputeMode::kNone;
  c.context.model = &c.model;
  c.context.knobs = &c.knobs;
  c.context.low_precision = low_precision;
  c.context.operand_bytes = low_precision ? 1.0 : 2.0;
  c.context.etp = 1;
  return c;
}

double Bytes(const Case& c) { return OffloadedBytesPerToken(c.kind, c.context); }

// DeepSeek-V3 (128 heads, qk 128 + 64, v 128), an MoE layer: core_attn moves
// what the fused attention saves, q 128 x 192 + k 128 x 192 + v 128 x 128 +
// out 128 x 128 = 81,920 BF16 elements = 163,840 B; attn_proj adds
// linear_proj's quantized input, 16,384 x 1 B; expert_fc1 at MXFP8 the
// permuted inputs as quantized, top-8 x 7,168 x 1 B = 57,344 B.
TEST(OffloadedBytesPerTokenTest, DeepSeekV3ByModule) {
  EXPECT_DOUBLE_EQ(Bytes(Make("deepseek-v3", 3, kOffloadCoreAttn, true)), 163840.0);
  EXPECT_DOUBLE_EQ(Bytes(Make("deepseek-v3", 3, kOffloadCoreAttn | kOffloadAttnProj, true)),
                   163840.0 + 16384.0);
  Case fc1 = Make("deepseek-v3", 3, kOffloadExpertFc1, true);
  fc1.knobs.precision = Precision::kMxfp8;
  EXPECT_DOUBLE_EQ(Bytes(fc1), 57344.0);
  // Norm inputs: h x 2 B each.
  EXPECT_DOUBLE_EQ(Bytes(Make("deepseek-v3", 3, kOffloadAttnNorm | kOffloadMlpNorm, true)),
                   2 * 7168.0 * 2);
  // In BF16 linear_proj's input is the attention's own output, already
  // moved with core_attn.
  EXPECT_DOUBLE_EQ(Bytes(Make("deepseek-v3", 3, kOffloadCoreAttn | kOffloadAttnProj, false)),
                   163840.0);
  // expert_fc1 on a dense layer (DeepSeek-V3's first three): nothing.
  EXPECT_DOUBLE_EQ(Bytes(Make("deepseek-v3", 0, kOffloadExpertFc1, true)), 0.0);
}

// What recompute leaves unsaved is not offloaded: the MLA up projection's
// q, k, v (only the output's 16,384 x 2 B remain), the checkpointed core
// attention (outside the offload group), and everything the whole-MoE
// recompute re-runs. moe_act moves fc1's BF16 output, top-8 x 2 x 2,048 x
// 2 B = 65,536 B, with or without moe_act recompute (the checkpoint keeps
// that input); expert_fc1 at BF16 moves the original input, 8 x 7,168 x
// 2 B = 114,688 B; the busiest GPU's rows at imbalance 1.25.
TEST(OffloadedBytesPerTokenTest, RecomputedTensorsAreNotMoved) {
  Case up = Make("deepseek-v3", 3, kOffloadCoreAttn, true);
  up.knobs.recompute = {RecomputeMode::kSelective, kRecomputeMlaUpProj};
  EXPECT_DOUBLE_EQ(Bytes(up), 32768.0);
  Case core = Make("deepseek-v3", 3, kOffloadCoreAttn, true);
  core.knobs.recompute = {RecomputeMode::kSelective, kRecomputeCoreAttn};
  EXPECT_DOUBLE_EQ(Bytes(core), 0.0);
  Case act = Make("deepseek-v3", 3, kOffloadExpertFc1 | kOffloadMoeAct, true);
  act.knobs.precision = Precision::kMxfp8;
  act.knobs.recompute = {RecomputeMode::kSelective, kRecomputeMoeAct};
  EXPECT_DOUBLE_EQ(Bytes(act), 57344.0 + 65536.0);
  act.knobs.recompute = {RecomputeMode::kSelective, 0u};
  EXPECT_DOUBLE_EQ(Bytes(act), 57344.0 + 65536.0);
  act.knobs.moe_load_imbalance = 1.25;
  EXPECT_DOUBLE_EQ(Bytes(act), 1.25 * (57344.0 + 65536.0));
  Case bf16 = Make("deepseek-v3", 3, kOffloadExpertFc1, false);
  EXPECT_DOUBLE_EQ(Bytes(bf16), 114688.0);
  Case moe = Make("deepseek-v3", 3, kOffloadExpertFc1 | kOffloadMoeAct, true);
  moe.knobs.recompute = {RecomputeMode::kSelective, kRecomputeMoe};
  EXPECT_DOUBLE_EQ(Bytes(moe), 0.0);
  Case off = Make("deepseek-v3", 3, kOffloadCoreAttn, true);
  off.knobs.offload_activations = false;
  EXPECT_DOUBLE_EQ(Bytes(off), 0.0);
}

// GQA, Llama 3 8B (32 heads, 8 kv heads, head dim 128): q 4,096 + k 1,024
// + v 1,024 + out 4,096 = 10,240 BF16 elements = 20,480 B.
TEST(OffloadedBytesPerTokenTest, GqaCoreAttention) {
  EXPECT_DOUBLE_EQ(Bytes(Make("llama3-8b", 0, kOffloadCoreAttn, false)), 20480.0);
}

}  // namespace
}  // namespace moetune::planner
