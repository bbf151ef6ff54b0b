// Per-layer costs of the step model (planner/step_model_layers.cc): the
// per-plan layer-kind tables, the per-layout Context, the cost-model lookups
// of a layer kind, and one layer's time (LayerCost) and saved activations
// (LayerActivationBytes) for one micro-batch on one GPU. Pure functions of
// their arguments.
#pragma once

#include "planner/internal/step_model_terms.h"

namespace moetune::planner::step_model_internal {

using LayerKindTables = StepModel::LayerKindTables;

// Fills *t (whose moe flag is set) from layer `layer` of `model`, the
// first of its kind: FLOPs, parameters, element counts per token.
void FillLayerKindTables(const ModelSpec& model, int layer, int seq_len,
                         LayerKindTables* t);

// The parts of a Context that depend only on the layout (p with dp
// resolved); SetKnobs adds the rest.
Context LayoutContext(const CostModel* cost, const ModelSpec* model,
                      const TrainingShape& shape, const StackConstants* stack,
                      const ParallelConfig& p, int m_micro);
void SetKnobs(Context* c, const Knobs& knobs);

// The cost-model lookups of one layer kind, in three groups by what they
// depend on (the PreparedLayout caches each group at its own level).
// Layout only: core attention, router, TP and CP collectives.
void LayoutKindCosts(const LayerKindTables& k, const Context& c, KindCosts* kc);
// Dense GEMMs at c.precision: projections, dense MLP or shared experts.
void PrecisionKindCosts(const LayerKindTables& k, const Context& c, KindCosts* kc);
// Routed experts and EP dispatch/combine (MoE kinds) at c.precision; adds to
// kc->dispatch / kc->combine, which must start at zero.
void ExpertKindCosts(const Context& c, bool grouped, bool dedup, double imbalance,
                     KindCosts* kc);

// Costs of one layer for one micro-batch on one GPU, by breakdown slot.
Slots LayerCost(const LayerKindTables& k, const Context& c, bool recompute_this_layer,
                const KindCosts& kc);

// Saved activations of one layer for one micro-batch (bytes per GPU).
double LayerActivationBytes(const LayerKindTables& k, const Context& c,
                            bool full_recompute);

// Every present layer kind's LayerCost, critical path and activations, with
// and without full recompute (KindResults).
void KindLayerCosts(const LayerKindTables kinds[], const Context& c, const KindCosts kc[],
                    KindResults* r);

// Output layer and loss, and the MTP modules (last stage), per micro-batch:
// logits GEMM x (1 + bwd factor), cross-entropy memory traffic, the TP
// all-gather of the hidden states forward and backward (tp > 1); each MTP
// module costs a recomputed layer of its kind (mtp_layer) plus its
// projection [tc x 2h/tp] x [2h/tp x h], its logits and its loss.
Slots HeadSlots(const Context& c, const ModelSpec& m, const Cost& logits, const Cost& ce_mem,
                const Cost& tp_gather, const Cost& mtp_proj, const Slots& mtp_layer);

// The head (last stage) and the embedding (first stage), per micro-batch.
Cost LogitsGemm(const Context& c, const ModelSpec& m, int tp);
Cost MtpProjGemm(const Context& c, const ModelSpec& m, int tp);
Cost CrossEntropyMem(const Context& c, const ModelSpec& m, int tp);
Cost HeadTpGather(const Context& c, const ModelSpec& m, int tp);
Cost EmbeddingMem(const Context& c, const ModelSpec& m);

}  // namespace moetune::planner::step_model_internal
