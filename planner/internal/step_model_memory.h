// Memory per GPU of the step model (planner/step_model_memory.cc): weights,
// gradients, optimizer state, saved activations, communication buffers and
// the reserve, on the pipeline ranks that hold the most.
#pragma once

#include "planner/internal/pipeline_stages.h"
#include "planner/internal/step_model_terms.h"

namespace moetune::planner::step_model_internal {

struct PeakMemory {
  MemoryBreakdown memory;  // the pipeline rank that holds the most
  double total_bytes = 0;
  // The last pipeline rank's own (the same as above when pp == 1): what
  // Megatron-Bridge's TensorBoard / W&B memory metrics showed before
  // 2026-05 (written by rank world_size - 1 only; Bridge 2f7f48f6c).
  MemoryBreakdown last_stage;
  double last_stage_total_bytes = 0;
};

// Rank 0 holds the most in-flight micro-batches, the last rank the output
// layer and logits: the larger of the two (one pass when pp == 1). Per rank:
//  weights = (local + gathered) params x (2 B + low-precision copy), local =
//    params / (DP group under FSDP, else 1), gathered = FSDP's two layers;
//  grads = (local + gathered) x grad_buffer_bytes_per_param + what the
//    step's fp32 shard grads (shard x AdamBytes().shard_main_grad: 4 B,
//    none in place) need beyond the activations they replace
//    (ShardMainGradAtPeakBytes), optimizer = shard x AdamBytes().state
//    (12 B fp32, 8 B BF16 moments; shard = params / DP group; none for LoRA);
//  activations = per-micro-batch activations of the rank / vp x in-flight
//    chunks (InflightChunks), + one layer's full activations under full
//    recompute, + fp32 logits (x (1 + MTP modules)) on the last rank;
//  comm buffers = kNcclBufferBytes + EP dispatch/combine staging (2 tr k h
//    x 2 B) + TP-overlap userbuffers (2 tc h x 2 B);
//  reserve = kFixedReserveBytes + kFragmentationFraction x activations.
// Chunks (virtual stages' worth of one micro-batch) whose activations
// pipeline rank r holds at its peak: 1F1B min(m, pp - r); interleaved
// min(m vp, 2 (pp - r - 1) + (vp - 1) pp + 1) (Megatron-Core
// get_pp_rank_microbatches); 1 without pipelining.
double InflightChunks(int pp, int vp, int r, int m_micro);

// The optimizer step's fp32 copy of the shard's gradients exists only
// after backward has freed the activations: the bytes it adds to the
// forward-backward peak, max(0, shard grads - activations).
double ShardMainGradAtPeakBytes(double shard_main_grad_bytes, double activation_peak_bytes);

// Host memory per GPU that fine-grained activation offload fills: what it
// takes off the GPU at the peak, the not-recomputed layers' offloaded bytes
// of one micro-batch / vp x the in-flight chunks, on the pipeline rank
// holding the most (rank 0 or the last). Each offloaded tensor stays on the
// host from its forward until the reload before its backward.
double FineGrainedOffloadHostBytes(const ParallelConfig& p, int m_micro, const RankLayers& ranks,
                                   const KindResults& kinds);

PeakMemory PeakMemoryPerGpu(const PlanTables& plan, const Context& c, const ParallelConfig& p,
                            int m_micro, const RankLayers& ranks, const KindResults& kinds);

}  // namespace moetune::planner::step_model_internal
