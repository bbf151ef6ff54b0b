// The step model's MaxText terms (planner/step_model_maxtext.cc): where XLA
// runs a mechanism differently from Megatron-Core, these replace the
// Megatron terms when StackConstants::framework is kMaxText. The mapping of
// the planner's knobs onto MaxText is in planner/step_model_maxtext.h. Pure
// functions of their arguments.
#pragma once

#include "planner/internal/pipeline_stages.h"
#include "planner/internal/step_model_data_parallel.h"
#include "planner/internal/step_model_memory.h"
#include "planner/internal/step_model_terms.h"

namespace moetune::planner::step_model_internal {

inline bool IsMaxText(const StackConstants& stack) {
  return stack.framework == Framework::kMaxText;
}

// GPUs of one ICI slice of MaxText's hybrid mesh: the ici_* axes span a
// slice and the dcn_* axes the slices, all slices the same size, so a slice
// is a divisor of the job's GPUs; NVLink reaches inside one NVLink domain.
// The largest divisor of `gpus` not above `nvlink_domain_gpus` (128 GPUs on
// 72-GPU NVL72 domains: 64, i.e. ICI fsdp 8 x expert 8, DCN 2).
int MaxTextSliceGpus(int gpus, int nvlink_domain_gpus);

// One call of XLA's one-shot ragged all-to-all kernel (the EP exchange
// inside one NVLink domain, see MaxTextConstants::ragged_a2a_one_shot):
// seconds = send_buffer_bytes / bytes_per_sec, the send buffer being every
// (token, expert) copy of this GPU (tokens x top_k x h x 2 B) and the rate
// the kernel's measured per-GPU send rate; 0 when the rate is not positive.
double MaxTextRaggedAllToAllOneShotSeconds(double send_buffer_bytes, double bytes_per_sec);

// Exposed seconds of one offloaded tensor's host round trip: the
// device-to-host copy (copy_s) overlaps at most forward_window_s of compute,
// the host-to-device reload (copy_s again) at most backward_window_s:
// max(0, copy_s - forward_window_s) + max(0, copy_s - backward_window_s).
// See MaxTextConstants::pipelined_host_offloading for the windows.
double MaxTextOffloadExposedSeconds(double copy_s, double forward_window_s,
                                    double backward_window_s);

// Extra seconds of a bandwidth-bound EP exchange that shares its link
// (NVLink inside a slice, else the scale-out NICs) with the FSDP
// collectives in flight beside it (multi-stream collectives: the
// latency-hiding scheduler overlaps the async all-gathers/reduce-scatters
// with whatever the compute stream runs, TE's NCCL EP custom call
// included). With the FSDP collectives in flight fsdp_in_flight_s of the
// busy_s window, spread over it, and using their link fsdp_link_s of that
// time, they hold u = fsdp_link_s / fsdp_in_flight_s of the link while in
// flight; the exchange then runs at max(1 - u, 1/2) of its rate (at worst a
// fair share of two saturating flows) for min(1, fsdp_in_flight_s /
// busy_s) of its ep_link_s:
//   ep_link_s x min(1, in_flight / busy) x (1 / max(1 - u, 1/2) - 1).
// Public evidence that concurrent NVLink collectives contend: FSDP
// collectives overlapped with TP collectives on NVLink (pytorch/pytorch PR
// #179937). 0 when any argument is not positive.
double MaxTextLinkContentionSeconds(double ep_link_s, double fsdp_in_flight_s,
                                    double fsdp_link_s, double busy_s);

// Multi-stream collectives (XLA async collectives on their own streams):
// overlap.dp_comm on and at least two communication streams.
bool MaxTextMultiStream(const Knobs& knobs);

// Routed experts and the EP exchange of one MoE layer for one micro-batch
// (replaces ExpertKindCosts; adds to kc->dispatch / kc->combine):
//  - expert GEMMs: TE cuBLAS grouped GEMM = the cost model's grouped GEMM;
//    XLA ragged_dot = that x MaxTextConstants::ragged_dot_time_ratio (in
//    MaxTextLayerCost the weight gradients instead by XLA's expansion, g
//    dense GEMMs over all buffer rows and their masked operands in memory,
//    when ragged_dot_wgrad_expanded: upstream XLA, not the seed container);
//  - ragged all-to-all (dedup false): the send buffer, tokens x top_k rows
//    of h BF16 elements (every copy), over the EP group: inside one NVLink
//    domain by XLA's one-shot kernel (MaxTextRaggedAllToAllOneShotSeconds,
//    when ragged_a2a_one_shot), otherwise an NCCL all-to-all;
//  - NCCL EP (dedup true): the cost model's de-duplicated dispatch (one copy
//    per destination GPU inside a domain, per domain across), BF16;
//  - ETP > 1: the gather / scatter of ExpertTensorParallelExchange.
void MaxTextExpertKindCosts(const Context& c, bool grouped, bool dedup, double imbalance,
                            KindCosts* kc);

// One layer for one micro-batch on one GPU, by breakdown slot. The compute
// terms are Megatron's (same GEMMs, attention, memory-bound traffic); what
// differs:
//  - host: XLA runs a compiled step with static (worst-case) shapes: no
//    per-expert host ops, no token-count synchronisation; kernel launches
//    kernels_fwd x 3 x launch_s (command buffers when cuda_graphs);
//  - EP: dispatch + combine forward, the same two backward (their
//    transposes): 2 (dispatch + combine), on the layer's critical path (no
//    cross-micro-batch A2A overlap in MaxText); for ragged all-to-all (an
//    XLA async collective) with multi-stream collectives the shared
//    experts' GEMMs (independent of the routed path) hide up to their own
//    time of it; NCCL EP (a TE custom call on the compute stream) is never
//    hidden;
//  - TP collectives exposed (no userbuffers overlap); CP ring as Megatron;
//  - remat (RecomputeModule -> named checkpoints, see step_model_maxtext.h):
//    'moe' re-runs the routed GEMMs' forward and the dispatch (the sorted
//    inputs are not a named checkpoint, so XLA rebuilds them); with
//    moe_mlpwi_0/1 offloaded only the wo GEMM and the dispatch re-run;
//    'full' re-runs the whole forward including dispatch and combine; the
//    EP exchange remat re-runs is added to the EP exposed slot (it is
//    communication kernel time), the rest to recompute;
//  - offload: D2H forward, H2D backward of the offloaded names at the host
//    link rate (MaxTextOffloadExposedSeconds). With
//    pipelined_host_offloading hidden behind the layer's compute (1/3
//    forward, 2/3 backward) as in Megatron; without it (XLA's default) each
//    copy overlaps only its own scan iteration's work around the tensor:
//    for moe_mlpwi_0/1 the forward window is what follows the up-projection
//    in the forward iteration (the wo GEMM, the activation/unpermute
//    traffic, the combine, the shared experts) and the backward window what
//    remat re-runs before the routed experts (the attention block, the norms,
//    the shared experts, the dispatch); the other offloadable names keep
//    the whole-layer windows.
Slots MaxTextLayerCost(const StepModel::LayerKindTables& k, const Context& c,
                       bool recompute_this_layer, const KindCosts& kc);

// Saved activations of one layer for one micro-batch on the GPU (bytes):
// decoder_layer_input always (the scan's carry, h BF16 per token); under
// 'full' only it; otherwise every tensor not set to remat or offload, the
// expert-side ones (sorted inputs, moe_mlpwi_0/1 outputs, activation) at
// the ragged buffer's rows: ep x the balanced rows with ragged all-to-all
// (ragged_buffers_worst_case), the routed rows x imbalance with NCCL EP.
double MaxTextLayerActivationBytes(const StepModel::LayerKindTables& k, const Context& c,
                                   bool full_recompute);

// Bytes the offloaded names of one layer move to the host for one
// micro-batch (each direction), at the ragged buffer's rows as above.
double MaxTextOffloadBytes(const StepModel::LayerKindTables& k, const Context& c);

// The EP exchange of pipeline rank `rank` per step: m_micro x, over its
// layers of each kind, that kind's dispatch + combine (exposed and hidden)
// -- the time MaxTextFsdpAndOptimizer's collectives share a single stream
// with.
double MaxTextEpSecondsPerStep(const RankLayers& ranks, int rank, const KindResults& kr, int m_micro);

// FSDP (ZeRO-3 over the fsdp axis) collectives and the optimizer for one
// step. Per micro-batch and layer: all-gather of the weights for forward
// and again for backward (remat re-gathers), reduce-scatter of the
// gradients (fsdp_gather / fsdp_reduce bytes per parameter), dense
// weights over dp, expert weights over dp / ep. A group spanning ICI slices
// (MaxTextSliceGpus) has an NVLink phase and a scale-out (DCN) phase
// (HierarchicalCollective's two bounds, with the group's members per
// slice): with multi-stream collectives they run in parallel (the
// larger bounds), on one stream in sequence (their sum). Exposure:
//  - overlap.dp_comm off: all of it exposed;
//  - one stream: the collectives share that stream with the EP exchange
//    (ep_step_s), so they hide only behind the step's compute
//    (busy_s - ep_step_s);
//  - multi-stream: hidden behind the whole busy time (busy_s), and then
//    running beside the EP exchange, which they slow where it is
//    bandwidth-bound on the link they share (MaxTextLinkContentionSeconds:
//    NCCL EP or an NCCL ragged all-to-all; not XLA's one-shot kernel, which
//    runs at ~2% of NVLink); that extra EP time is exposed (ep slot).
// Optimizer: Adam over the local shard, memory-bound (kOptimizerBytesPerParam
// per shard parameter + kGradNormBytesPerParam per local one).
DpAndOptimizer MaxTextFsdpAndOptimizer(const CostModel& cost, const ParallelConfig& p,
                                       const Knobs& knobs, const MaxTextConstants& mt,
                                       int m_micro, double busy_s, double ep_step_s,
                                       const RankParams& params, Slots* step);

// Memory per GPU under MaxText/XLA (the fuller of the first and last
// pipeline rank, as PeakMemoryPerGpu):
//  weights = shard x master_weight_bytes + gathered_layers x one layer's
//    params x (2 B + low-precision copy) (without shard_params: the shard
//    is the whole local copy, and its BF16 cast replaces the gathered
//    layers);
//  grads = shard x grad_bytes + (FSDP) one layer's params x fsdp_reduce
//    bytes (the layer's full gradient before its reduce-scatter);
//  optimizer = shard x adam_state_bytes;
//  activations = saved activations of the rank's layers x in-flight
//    micro-batches (as Megatron's 1F1B), + one MoE layer's full working set
//    (the layer being recomputed and differentiated), + fp32 logits;
//  comm buffers = kNcclBufferBytes + the EP send and receive buffers:
//    2 tr k h x 2 B, or with ragged all-to-all and ragged_buffers_worst_case
//    the send buffer plus an ep times larger receive buffer ((1 + ep) tr k
//    h x 2 B);
//  reserve = kFixedReserveBytes (XLA assigns buffers at compile time: no
//    caching-allocator fragmentation term).
PeakMemory MaxTextPeakMemory(const PlanTables& plan, const Context& c, const ParallelConfig& p,
                             int m_micro, const RankLayers& ranks, const KindResults& kinds);

}  // namespace moetune::planner::step_model_internal
