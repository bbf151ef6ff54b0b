#include "planner/flops.h"

#include <algorithm>

namespace moetune::planner {
namespace {

// Forward + backward (2 x forward) = 3 passes, 2 FLOPs per MAC.
constexpr double kTrainingFlopsPerMac = 6.0;

double MlpMacs(const ModelSpec& m, int64_t ffn) {
  // Gated (SwiGLU): gate, up [h -> f] and down [f -> h]; GELU: up and down.
  return (m.gated_mlp ? 3.0 : 2.0) * double(m.hidden_size) * double(ffn);
}

// Core attention MACs per token per key: QK^T over the q/k head dim plus
// AV over the v head dim, for every head.
double CoreMacsPerKey(const ModelSpec& m) {
  return double(m.num_attention_heads) * (m.QkHeadDim() + m.v_head_dim);
}

// One layer's counted MACs per token under `rule`.
double CountedLayerMacs(const ModelSpec& m, int layer, int seq_len,
                        const FlopCountingRule& rule) {
  const LayerMacs macs = LayerMacsPerToken(m, layer, seq_len);
  double core = 0;
  if (rule.count_core_attention) {
    if (m.IsSlidingLayer(layer)) {
      core = CoreMacsPerKey(m) * AverageCausalContext(m, layer, seq_len);
    } else {
      core = macs.attention_core * (rule.halve_causal_attention ? 0.5 : 1.0);
    }
  }
  return macs.attention_proj + core + macs.dense_mlp + macs.shared_experts +
         macs.routed_experts;
}

}  // namespace

LayerMacs LayerMacsPerToken(const ModelSpec& m, int layer, int seq_len) {
  LayerMacs macs;
  macs.attention_proj = m.AttentionParamsPerLayer();
  const double context =
      m.IsSlidingLayer(layer) ? std::min(m.sliding_window, seq_len) : seq_len;
  macs.attention_core = CoreMacsPerKey(m) * context;
  if (m.IsMoeLayer(layer)) {
    macs.shared_experts = MlpMacs(m, m.moe_ffn_hidden_size) * m.num_shared_experts;
    macs.routed_experts = MlpMacs(m, m.moe_ffn_hidden_size) * m.moe_top_k;
    macs.router = double(m.hidden_size) * m.num_routed_experts;
  } else {
    macs.dense_mlp = MlpMacs(m, m.ffn_hidden_size);
  }
  return macs;
}

double AverageCausalContext(const ModelSpec& m, int layer, int seq_len) {
  const double s = seq_len;
  if (!m.IsSlidingLayer(layer) || m.sliding_window >= seq_len) return s / 2;
  const double w = m.sliding_window;
  // Query i sees min(i + 1, w) keys: the first w queries a triangle
  // w (w + 1) / 2, the remaining s - w queries w keys each.
  return (w * (w + 1) / 2 + (s - w) * w) / s;
}

double LogitsMacsPerToken(const ModelSpec& m) {
  return double(m.hidden_size) * double(m.PaddedVocabSize());
}

double MtpMacsPerToken(const ModelSpec& m, int seq_len,
                       const FlopCountingRule& rule) {
  const double h = double(m.hidden_size);
  // eh_proj [2h -> h], one transformer block shaped as the last layer, and
  // the shared output head.
  return 2 * h * h + CountedLayerMacs(m, m.num_layers - 1, seq_len, rule) +
         (rule.count_logits ? LogitsMacsPerToken(m) : 0.0);
}

double ModelFlopsPerToken(const ModelSpec& m, int seq_len,
                          const FlopCountingRule& rule) {
  double macs = 0;
  for (int l = 0; l < m.num_layers; ++l) {
    macs += CountedLayerMacs(m, l, seq_len, rule);
  }
  if (rule.count_logits) macs += LogitsMacsPerToken(m);
  if (rule.count_mtp) macs += m.mtp_layers * MtpMacsPerToken(m, seq_len, rule);
  return kTrainingFlopsPerMac * macs;
}

}  // namespace moetune::planner
