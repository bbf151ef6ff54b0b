// Model FLOPs per token, counted the way the Megatron-Bridge performance
// tables count them (see ../shared/validation/README.md): 6 FLOPs per
// multiply-accumulate per token (forward 2 + backward 4) over every GEMM of
// the activated parameters, core attention halved for the causal mask,
// sliding-window layers by their average causal context, logits over the
// padded vocabulary, the MTP layers where the model has them. Router, norms
// and recompute are not counted.
#pragma once

#include "planner/model_spec.h"

namespace moetune::planner {

// Knobs of the counting convention, for reproducing older tables.
struct FlopCountingRule {
  bool halve_causal_attention = true;  // false: Megatron-LM README formula
  bool count_core_attention = true;
  bool count_logits = true;
  bool count_mtp = true;
};
// The rule of the Megatron-Bridge tables from container 26.02 on.
inline constexpr FlopCountingRule kMegatronBridgeRule{};
// Megatron-LM's older formula: causal attention not halved.
inline constexpr FlopCountingRule kMegatronLegacyRule{false, true, true, true};

// Forward multiply-accumulates per token of each part of one layer (and of
// the model's head), the building blocks of both the FLOP count and the
// step model. The core-attention MACs are for the full (unmasked) context;
// halving for the causal mask is the caller's choice.
struct LayerMacs {
  double attention_proj = 0;  // Q, K, V (incl. MLA down/up) and output
  double attention_core = 0;  // QK^T + AV per token over `context` keys
  double dense_mlp = 0;
  double shared_experts = 0;
  double routed_experts = 0;  // top_k experts per token
  double router = 0;
};

// MACs of `layer` per token at `seq_len` (full context for dense attention,
// window for sliding layers; not halved).
LayerMacs LayerMacsPerToken(const ModelSpec& model, int layer, int seq_len);
// Average causal context of a layer (keys per query): seq / 2 for full
// attention (the Megatron convention); for a window w < seq:
// (w (w + 1) / 2 + (seq - w) w) / seq.
double AverageCausalContext(const ModelSpec& model, int layer, int seq_len);
double LogitsMacsPerToken(const ModelSpec& model);
// One MTP module: projection [2h -> h] + a transformer layer (shaped as the
// last layer) + its logits.
double MtpMacsPerToken(const ModelSpec& model, int seq_len,
                       const FlopCountingRule& rule);

// Training FLOPs per token under `rule` (6 x MACs).
double ModelFlopsPerToken(const ModelSpec& model, int seq_len,
                          const FlopCountingRule& rule = kMegatronBridgeRule);

}  // namespace moetune::planner
