#include "planner/testing/tiny_models.h"

#include <string_view>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace moetune::planner {
namespace {

ModelSpec Parse(std::string_view json) {
  absl::StatusOr<ModelSpec> m = ParseNativeModelJson(json);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : ModelSpec{};
}

}  // namespace

ModelSpec TinyDense() {
  return Parse(R"({
      "format": "moetune.model.v1", "name": "tiny-dense",
      "num_layers": 2, "hidden_size": 512, "vocab_size": 1024,
      "num_attention_heads": 4, "num_kv_heads": 4, "head_dim": 128,
      "ffn_hidden_size": 2048})");
}

ModelSpec TinyMoe() {
  return Parse(R"({
      "format": "moetune.model.v1", "name": "tiny-moe",
      "num_layers": 4, "hidden_size": 512, "vocab_size": 1024,
      "num_attention_heads": 4, "num_kv_heads": 4, "head_dim": 128,
      "ffn_hidden_size": 2048, "num_routed_experts": 8, "moe_top_k": 2,
      "moe_ffn_hidden_size": 256})");
}

}  // namespace moetune::planner
