// The step model: one training step of a model on a cluster under a parallel
// layout and knobs -> step time, throughput, memory and a breakdown.
//
// Create() builds everything that depends only on (model, cluster, shape):
// per-layer FLOPs and parameter counts, per-layer-kind byte counts. Prepare()
// then does a layout's cost-model lookups, and one evaluation (step_model.cc,
// over the stages in step_model_layers.cc, pipeline_stages.cc,
// step_model_data_parallel.cc and step_model_memory.cc) turns a prepared
// layout and knobs into numbers. Predict() (with breakdown, ~2 us for
// DeepSeek-V3 on 1,024 GPUs) and Quick() (the search's fast path: the same
// numbers as an Estimate, no strings, ~1 us) both go through Prepare();
// Quick(prepared, knobs) moves the layout's share out of the knob loop.
#pragma once

#include <array>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/cost_model.h"
#include "planner/flops.h"
#include "planner/framework.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/prediction.h"
#include "planner/step_model_maxtext.h"
#include "planner/training_config.h"

namespace moetune::planner {

// Generations of the training software whose behaviour the step model tells
// apart (NVIDIA Megatron-Core / Megatron-Bridge containers). The container
// version of a run selects one (StackGenerationForContainer); its constants
// apply to every run of that generation, never to one run.
enum class StackGeneration {
  k2602,  // containers 26.02 - 26.04.x (and older: the oldest described)
  k2606,  // containers 26.06 and later
};
inline constexpr StackGeneration kLatestStackGeneration = StackGeneration::k2606;
std::string_view StackGenerationName(StackGeneration generation);  // "26.02", "26.06"
// A container version YY.MM[.NN] as numbers (patch 0 when absent), ordered
// as the releases are: 26.04 < 26.04.01 < 26.06.
struct ContainerVersion {
  int year = 0;
  int month = 0;
  int patch = 0;
  friend bool operator<(const ContainerVersion& a, const ContainerVersion& b) {
    if (a.year != b.year) return a.year < b.year;
    if (a.month != b.month) return a.month < b.month;
    return a.patch < b.patch;
  }
};
// "26.04.01" -> {26, 4, 1}. InvalidArgument naming the text for anything
// that is not YY.MM[.NN].
absl::StatusOr<ContainerVersion> ParseContainerVersion(std::string_view container);
// "26.02", "26.04.01", "26.06", "26.08", ... (YY.MM[.NN]) -> its generation:
// before 26.06 -> k2602, from 26.06 on -> k2606. InvalidArgument naming the
// text for anything else.
absl::StatusOr<StackGeneration> StackGenerationForContainer(std::string_view container);
// Also accepts a generation's own name ("26.02", "26.06") and "latest".
absl::StatusOr<StackGeneration> ParseStackGeneration(std::string_view name);
// Whether a container (YY.MM[.NN]) is older than 26.02, the first container
// of the oldest generation described: the constants were set on 26.02+ rows
// only (the megatron-core-2026 rows of runs.json), so such a run is priced
// as 26.02 with nothing measured behind the software difference.
// InvalidArgument as StackGenerationForContainer for anything else.
absl::StatusOr<bool> ContainerPredatesGenerations(std::string_view container);

// Optimizations of the Megatron-Core / Transformer Engine software that change
// what a layer costs on the host and the GPU, each named after the Megatron
// flag (or TE change) that turns it on. Source of every one: NVIDIA/Megatron-LM
// docs/discussions/deepseek-v3-gb200-optimization (dev, commit eb0783b6d3;
// "the GB200 guide" below), section 2, and its reproduce guide (the final
// launch flags). A stack has them or not (StackConstants::features); the
// defaults are the final state of that guide, which is also what the
// Megatron-Bridge 26.02+ performance recipes run (router and permute fusion,
// flex dispatcher, partial CUDA graphs attn/moe_router/moe_preprocess,
// bindpcie in their launchers), so the published rows keep their pricing.
struct MegatronFeatures {
  // TE PR 1793/1934/2134: the four tensors of an MXFP8 quantization (row/col
  // data and scales) carved from one pre-allocated buffer instead of four
  // torch.empty/zeros calls (guide 2.1.2).
  bool mxfp8_fused_allocation = true;
  // --moe-permute-fusion with TE PR 1927's permute kernel (guide 2.1.1: up
  // to 10x faster when top-k << experts).
  bool permute_fusion = true;
  // --moe-router-fusion (TE PR 1883): router kernels 72 -> 31 (guide 2.1.4).
  bool router_fusion = true;
  // --delay-wgrad-compute with the combined-1F1B EP overlap: the weight
  // gradients of a layer's backward run apart from its data gradients, so
  // that the experts' wgrad sits beside dispatch_bwd and the attention
  // side's wgrad beside the next layer's combine_bwd (AddEpTerms).
  // Megatron-MoE-ModelZoo's A2A_OVERLAP=1 and Megatron-Bridge's
  // moe_a2a_overlap helper turn it on with the overlap, and the Megatron
  // emitter emits it (emitters.cc); the skill card's plain-overlap runs turn
  // it off. TE cannot delay graphed attention with biases: then off.
  bool delay_wgrad_compute = true;
  // --moe-flex-dispatcher-backend for the fused (dedup) dispatcher.
  enum class FlexBackend { kDeepEp, kHybridEp };
  FlexBackend flex_backend = FlexBackend::kHybridEp;
  // SMs given to DeepEP (--moe-deepep-num-sms, DeepEP Buffer.set_num_sms),
  // which set its MNNVL bandwidth (DeepEpMnnvlCaps in
  // internal/step_model_layers.h). 24: the SMs of the guide's only DeepEP
  // MNNVL figures (2.2.1). Read for the DeepEP backend beyond 8 GPUs of a
  // domain only.
  int deepep_num_sms = 24;
  // --cuda-graph-scope (with --cuda-graph-impl transformer_engine) when CUDA
  // graphs are on: attention, router, EP preprocess; the shared experts are
  // captured with moe_router unless shared-expert overlap is on (guide 2.3).
  // The routed experts stay outside (dynamic shapes).
  bool graph_attn = true;
  bool graph_moe_router = true;
  bool graph_moe_preprocess = true;
  bool graph_shared_experts = true;
  // --cuda-graph-impl full_iteration: the whole step captured, the MoE
  // layers included, which a dropless MoE allows only with a static token
  // budget -- Megatron-Bridge's MoE performance recipes from 26.06 on
  // (perf_recipes/qwen/common.py _enable_hybridep_full_iteration_mxfp8,
  // deepseek/common.py _enable_deepseek_full_iteration_mxfp8,
  // gpt_oss/common.py: moe_paged_stash, moe_expert_rank_capacity_factor 1.5,
  // which hands HybridEP num_permuted_tokens; without it HybridEP sizes its
  // buffers from a GPU tensor, a D2H synchronisation in every dispatch:
  // Megatron-LM token_dispatcher.py _HybridEPManager.setup_metadata,
  // fused_a2a.py hybrid_ep_dispatch). The
  // functional recipes and the scoped-graph recipes (cuda_graph_scope
  // moe_router + moe_preprocess, e.g. recipes/qwen/h100/qwen3_moe.py) set
  // false. Read only by the 26.06 MoE host-hiding rule
  // (StackConstants::moe_host_hidden_by_ep_overlap): with scoped graphs each
  // dispatch's synchronisation holds the CPU, so the MoE layer's host work
  // adds to the GPU time as in 26.02-26.04 (MoeHostHidden,
  // internal/step_model_layers.h). Default false: what moetune's own plans
  // run (the Megatron emitter captures attn + moe_router + moe_preprocess
  // and keeps dropless experts eager; a static token budget can drop
  // tokens, which a plan must not do silently). StackConstantsFor(
  // SoftwareStack) sets it from SoftwareStack::cuda_graph_scope;
  // the validator and the recipe checks set it for the published recipes
  // that ran full-iteration graphs.
  bool graph_full_iteration = false;
  // bindpcie: each rank's process and memory on its GPU's NUMA node (guide
  // 2.4).
  bool cpu_numa_binding = true;
  // TE PR 2019 (the swizzles of a GEMM's MXFP8 scales fused into one kernel,
  // zero padding included) and programmatic dependent launch of the
  // quantization kernels (guide 2.1.3 and the table's step 8).
  bool fused_swizzle_pdl = true;
  // cuDNN 9.14 norms that write MXFP8 directly (NVTE_NORM_FWD_USE_CUDNN=1,
  // guide 2.1.5): the quantization after a norm is no separate kernel.
  bool quant_fused_norm = true;
};

// How the training software behaves: what it overlaps, what it issues from
// the host, which kernels it has. StackConstantsFor(generation) gives each
// generation's values; the defaults are the latest generation's. Global:
// never per model or per run.
struct StackConstants {
  StackGeneration generation = kLatestStackGeneration;
  // Which framework's execution the step model prices. kMaxText switches
  // the few terms where XLA runs a mechanism differently (the EP exchange,
  // the expert GEMMs, FSDP collectives and their overlap, remat/offload,
  // host work, memory); see step_model_maxtext.h. The Megatron constants
  // below are not read for those terms.
  Framework framework = Framework::kMegatron;
  // MaxText/XLA's own constants (read only when framework is kMaxText).
  MaxTextConstants maxtext;
  // The combined-1F1B A2A overlap (--overlap-moe-expert-parallel-comm:
  // "merging FWD-BWD passes of adjacent microbatches", Megatron-Core
  // megatron/core/transformer/moe/README.md) is priced as Megatron schedules
  // it (step_model_layers.cc AddEpTerms): four windows per layer, each an EP
  // exchange of one micro-batch beside one sub-module's compute of the other
  // (combine_bwd | attention-side forward, dispatch_fwd | experts' backward,
  // dispatch_bwd | experts' forward, combine_fwd | attention-side
  // backward), each hiding min(comm, compute x SM slowdown), and only on the
  // layer passes that have a partner (CombinedOneFOneBPairedFraction). This
  // constant is the share of those scheduled windows' overlap that the two
  // streams achieve: 1 = the schedule as written. Set by the rule of
  // tests/internal/cross_validation.h (grid 0-1): 1 on all rows, 0.9 on the
  // 26.04 and 26.04.01 folds (the rows that run the overlap are
  // Megatron-Bridge's Qwen3-235B-A22B H100 recipe, NCCL all-to-all,
  // tests/internal/bridge_recipes.cc kRecipeMoeComm). It applies to the NIC-bound part
  // of an exchange; the NVLink-bound part has its own share,
  // ep_overlap_nvlink_fraction below. Known contradiction: ModelZoo's
  // Qwen3-235B 256 H100 DeepEP pair measures 1.127x (1.382x predicted; its
  // exchange is NIC-bound, so the link split does not reach it). The
  // Megatron-Bridge skill card's Qwen3-30B-A3B 16 H100 HybridEP pair
  // (1.177x measured, 1.198x predicted) has only 36.55% of its EP
  // communication concurrent with GEMM/attention in its Nsight profile and
  // the GPU-active time falling 1.6 s for 3.96 s of concurrency.
  double ep_overlap_fraction = 1.0;
  // The same share for the part of an exchange that moves over NVLink by
  // SM-issued copies (CostModel::DispatchNvlinkShare: all of it inside one
  // NVLink domain, e.g. EP 8-32 on GB200/GB300 NVL72 or EP 8 on one HGX
  // node; 0 when the NIC bounds the exchange), ep_overlap_fraction then
  // applying to the NIC-bound rest (EpOverlapAchievedFraction in
  // internal/step_model_layers.h). Mechanism:
  // the two parts of an exchange use different engines. RDMA is moved by
  // the NIC's DMA engine (DeepEP README: its RDMA path overlaps "without
  // occupying any SM"; HybridEP puts 8 blocks per API on multi-node groups,
  // DeepEP hybrid-ep csrc/hybrid_ep/config.cuh), so while a NIC-bound
  // exchange runs, the compute of the other micro-batch keeps the GPU
  // and the windows hide as scheduled (the NVLink forwarding of a NIC-bound
  // exchange is paced by the NIC's arrivals). An NVLink exchange is copied by the
  // GPU itself (HybridEP: TMA from 24-32 blocks, DeepEP: ld/st warps, NCCL:
  // its channels' CTAs) at rates that grow with the SMs given (DeepEP on
  // GB200 at 24 ranks: 16 -> 32 SMs 258 -> 405 GB/s FP8, the
  // Hybrid-EP_Implementation.md tables), reading the sender's HBM and
  // writing the receiver's; beside compute it competes for the SMs, HBM and
  // L2 that the compute of the window is using, so what it "hides" is paid
  // back in the compute's stretch beyond the SM share OverlapWindow prices.
  // Evidence: on NVL72 the EP overlap gains nothing measurable -- the
  // Megatron-Bridge Qwen3-30B-A3B verification card (full-iteration graphs,
  // EP overlap on, HybridEP, 8 GB200 / 8 GB300 in one domain) measures
  // 40,323 / 44,773 tokens/s/GPU where the schedule as written predicts
  // +23 / +32% and the overlap off +0.2 / +5.5% (tests/internal/
  // recipe_checks.h) -- while the NIC-bound H100 pairs gain as scheduled
  // (Bridge skill card Qwen3-30B-A3B 16 H100 EP16: HybridEP 1.177x measured,
  // NCCL all-to-all 1.317x; tests/validate knob ladders). Set by the rule of
  // tests/internal/cross_validation.h (grid 0-1) on the runs.json rows, whose
  // 26.06+ Qwen3 MXFP8 NVL72 rows ran the overlap (Megatron-Bridge 55443cbfb,
  // tests/internal/bridge_recipes.cc kRecipeMoeComm): 0 on all rows and on every
  // fold (with it at 1 those rows come out +30..+34%). An assumption about
  // the hardware's sharing, not a measured profile: no public Nsight trace
  // of an NVL72 EP-overlap run was found. Not explained by it: the ModelZoo
  // Qwen3-235B-A22B 256 H100 DeepEP pair (1.127x measured, 1.382x
  // predicted), whose exchange is NIC-bound (share 0).
  double ep_overlap_nvlink_fraction = 0.0;
  // Megatron-Core's combined-1F1B EP overlap runs without pipelining or
  // with the interleaved schedule only.
  bool ep_overlap_needs_interleaving = true;
  // Fraction of a block's GEMM time that can hide its TP all-gather /
  // reduce-scatter (Transformer Engine userbuffers ring-exchange overlap).
  double tp_overlap_fraction = 0.9;
  // Host-side cost of a dropless MoE layer, which stays outside CUDA graphs:
  // its token counts are copied to the host to size the expert GEMMs, a
  // synchronisation that also stops the CPU from running ahead, so host
  // time adds to GPU time. Transformer Engine's GroupedLinear issues its
  // work per local expert from the host: fc1 and fc2 each take a forward,
  // a dgrad and a wgrad GEMM (6) plus the input split/quantize/cast ops
  // (~7): ~13 ops per expert per micro-batch; the router, permutation and
  // dispatch bookkeeping add ~7 ops per pass (forward, 2x backward). At
  // ~25 us per Python/PyTorch op (host_op_s, set by the rule of
  // tests/internal/cross_validation.h) this is ~0.33 ms per local expert per
  // layer and micro-batch -- the fixed cost that separates the
  // Megatron-Bridge rows at 16 and 32 local experts (HGX, EP 8) from those
  // at 4-8 (NVL72, EP 32), and micro-batch 1 from 4 (Qwen3-30B-A3B).
  double moe_host_ops_forward = 7;
  double grouped_gemm_host_ops_per_expert = 13;
  double host_op_s = 25e-6;
  // Host ops the combined-1F1B EP-overlap schedule adds per MoE layer and
  // micro-batch (forward + backward) where its host time is not captured
  // (every case but MoeHostHidden's: eager or scoped graphs). Megatron-Core
  // runs each layer as ten schedule-node calls (models/common/
  // model_chunk_schedule_plan.py TransformerLayerSchedulePlan.run: the
  // pre-dispatch computation, dispatch, experts and combine forward and
  // backward, and the two delayed wgrads); each call (pipeline_parallel/
  // utils.py ScheduleNode) waits on and records the shared CUDA event,
  // enters and leaves its stream, detaches and re-flags its inputs, and
  // each backward call starts its own autograd-engine run. Counted as ~1.5
  // host_op_s per call plus ~3 per backward engine run: ~30 (25-35 by that
  // count). The CPU overhead Megatron-Bridge PR 1760 names when it turned
  // the overlap off for Qwen3-235B-A22B on 64 B200 (PP8 VP4 EP8, eager;
  // BF16 17.2 -> 16.0 s per step) and issue 3399 ("moe_a2a_overlap and VP
  // degraded perf" on B300): priced with 30, that BF16 pair is 1.17 s
  // (tests/validate knob ladder; the count was made after that figure had
  // been seen, so the ladder does not test it independently).
  double ep_overlap_schedule_host_ops = 30;
  // 26.06 on: on the layouts where the combined-1F1B schedule can run
  // (EP > 1, the layouts ep_overlap_needs_interleaving allows, >= 2
  // micro-batches), with CUDA graphs capturing the full iteration
  // (MegatronFeatures::graph_full_iteration; MoeHostHidden in
  // internal/step_model_layers.h), a MoE layer's host work no longer stalls
  // the GPU: only host time beyond the other micro-batch's compute shows.
  // 26.02-26.04: false (host time adds, see above). Evidence, same layout
  // and cluster across the generation boundary (runs.json): Qwen3-30B-A3B
  // on 8 GB300 (pp 1) 31,744 -> 45,275 tokens/s/GPU (26.04.01 -> 26.06),
  // Qwen3-235B-A22B on 256 GB200 (pp 8 x vp 3) 5,680 -> 7,376 -- each
  // about its modelled host time -- while DeepSeek-V3 on 256 B300 (pp 8,
  // vp 1: no EP-overlap schedule) moved 3,456 -> 3,541 (+2.5%). What
  // changed is the recipes' graph scope: Megatron-Bridge moved its MXFP8
  // MoE performance configs to cuda_graph_impl full_iteration (with
  // moe_a2a_overlap True and a static HybridEP token budget) in the weeks
  // before 26.06 (scripts/performance/configs: 8af195c0a 2026-06-06
  // DeepSeek-V3 GB300, 5f98743d5 2026-06-09 GPT-OSS-120B GB200/GB300,
  // afb5dd47c and 55443cbfb 2026-06-10 DeepSeek-V3 GB200 and Qwen3-30B-A3B
  // / Qwen3-235B-A22B GB200/GB300/B300). The validator prices the Qwen3
  // rows with the A2A overlap on, as they ran (tests/internal/
  // bridge_recipes.cc kRecipeMoeComm); inside one NVL72 domain their exchanges are
  // NVLink-bound and hide ep_overlap_nvlink_fraction (0) of their windows,
  // so they come out as with the overlap off (before that split, priced on,
  // the windows over-hid and the rows came out +28..+35%). With graphs scoped
  // to moe_router + moe_preprocess (+ attn) every dropless dispatch copies
  // its token count to the host, and the host time adds, EP overlap or not.
  // Evidence, Megatron-Bridge's Qwen3-30B-A3B scoped-graph runs
  // (tests/internal/recipe_checks.h, knob ladders in tests/validate): with
  // the hiding the card's H100 runs come out +38% / +37% and its GB200
  // natural-routing run +130%, and the skill card's HybridEP EP-overlap
  // step gains 1.33x (measured 1.18x); with the host time added -17% / -4%
  // / +27% and 1.20x.
  bool moe_host_hidden_by_ep_overlap = true;
  // How the host time of a MoE layer meets its GPU time where the 26.06
  // hiding above does not apply. Shipped: kAdditive, the layer's host work
  // (the experts' ops and the parts outside CUDA graphs) added to its GPU
  // time: the token-count synchronisation stops the CPU from running ahead.
  // The other forms are the overlaps the twelfth, twentieth and
  // twenty-second sessions priced and the data rejected (planner/FINDINGS.md,
  // "Eager MoE host time re-judged"), kept so that `validate --set
  // moe_host_form=N` reproduces their tables; nothing else selects them.
  //   kUngraphedRunsAhead: the ungraphed ops (attention, router, shared
  //     experts) are issued while the GPU runs the layer's experts and show
  //     only beyond the layer's compute; the experts' ops still add.
  //   kBackwardRunsAhead: as that, and the backward share (2 of 3 passes)
  //     of the experts' ops shows only beyond the backward compute (no
  //     synchronisation in backward).
  //   kMaxHostCompute: a host-bound queue, max(all host, compute).
  enum class MoeHostForm { kAdditive, kUngraphedRunsAhead, kBackwardRunsAhead, kMaxHostCompute };
  MoeHostForm moe_host_form = MoeHostForm::kAdditive;
  // LoRA (Megatron-Bridge PEFT, adapters on linear_qkv, linear_proj,
  // linear_fc1, linear_fc2): each adapter runs beside its frozen linear as
  // separate, memory-bound kernels. Elements moved through HBM per element
  // of the linear's input (d_in) and output (d_out) width: forward reads x
  // for A (d_in), writes B's output (d_out), and the sum with the base
  // output reads both and writes one (3 d_out); backward reads the output
  // gradient for B's wgrad and dgrad (2 d_out), x again for A's wgrad
  // (d_in), writes A's input gradient (d_in) and adds it to the base one
  // (read 2 d_in, write d_in): 6 d_in + 6 d_out in all (the rank-r
  // intermediates are negligible). Checked against the 26.06 LoRA rows
  // (Llama3-70B on 8 GB200/GB300/H100): ~1 ms per layer and micro-batch of
  // 4,096 tokens on GB300, which is what the measured rows leave unexplained.
  double lora_adapter_hbm_passes = 6.0;
  // Which attention layers with learned softmax sinks (GPT-OSS) are priced,
  // in time, as unfused attention (batched GEMMs over all keys, scores
  // through HBM): a proxy set from the published GPT-OSS-120B throughput,
  // not the mechanism. With every sink layer priced as the fused kernel the
  // GPT-OSS rows come out ~50% too fast (+56..+65% on the BF16 rows even
  // with each recipe's own CUDA graphs, `validate --graphs_from=recipe --set
  // unfused_sink_layers=0`: about 2 s per step missing), with every one
  // unfused ~25% too slow and with too small an MXFP8 gain; the
  // sliding-window ones only fits both. The software does run them fused:
  // Transformer Engine >= 2.8 with cuDNN >= 9.13.1 has learnable-softmax
  // sinks in its FusedAttention backend, sliding window included, forward
  // and backward (TE PR 2148; its tests cover GPT-OSS's 64 heads, GQA 8,
  // head_dim 64, window (128, 0)), the 26.02 / 26.04 / 26.06 containers ship
  // TE 2.12 / 2.14 / 2.16, and Megatron-Bridge falls back to Megatron's own
  // unfused attention only below TE 2.8 (gpt_oss_provider.py, v0.3.0). So
  // the ~2 s per step are somewhere the model does not price -- the cuDNN
  // sink kernels' own speed is the first suspect -- and a calibrated
  // attention probe replaces the proxy. Memory follows the kernel that runs
  // (sink_attention_stores_probabilities below).
  enum class UnfusedSinkLayers { kNone, kSlidingWindow, kAll };
  UnfusedSinkLayers unfused_sink_layers = UnfusedSinkLayers::kSlidingWindow;
  // Whether the layers priced as unfused above also hold the unfused
  // kernel's BF16 probabilities (heads x keys per query) for backward. False:
  // the fused cuDNN kernel that runs them keeps only its softmax statistics
  // (see above). True describes a stack below TE 2.8, where Megatron's own
  // unfused attention runs.
  bool sink_attention_stores_probabilities = false;
  // Bytes per local parameter of the gradient buffer. Megatron-Core
  // allocates it in fp32 only with grad_reduce_in_fp32, else in the
  // parameter dtype (megatron/core/distributed/distributed_data_parallel.py:
  // grad_dtype = torch.float if grad_reduce_in_fp32 else param.dtype), and
  // the Megatron-Bridge performance recipes turn it off
  // (scripts/performance/utils/helpers.py set_basic_perf_overrides:
  // ddp.grad_reduce_in_fp32 = False): BF16, 2 bytes -- the same choice the
  // DP traffic assumes (kDpCommBytesPerParam). 4.0 for recipes that reduce
  // in fp32.
  double grad_buffer_bytes_per_param = 2.0;
  // Exposed time per virtual-stage visit per micro-batch (forward and
  // backward each) of a pipelined step, beyond the send/recv transfer: the
  // P2P handshake between neighbouring stages (NCCL send/recv launch and
  // wait), which the interleaved schedule pays vp times per micro-batch
  // (Narayanan et al. 2021, sec. 2.2.2: interleaving multiplies the
  // pipeline communication by vp). Set from data by the rule in
  // tests/internal/cross_validation.h (grid 0-400 us): 125 us (the rule's
  // choice moved 125 -> 100 us with the rows priced at their recipes' EP
  // A2A overlap and 125 -> 150 us with HybridEP's own rates; with both,
  // 125 us again; 25 us once GB200 is priced at its sustained tensor rate,
  // gb200-nvl72.json; 275 us on the merged model, where the memory model
  // lets the interleaved Llama rows run without recompute as their recipes
  // do; 0 once a step's own host time is priced, step_host_s below: the
  // visits had been standing in for it; 25 us once each TP collective
  // hides behind its own GEMM only, AddTpTerms; 0 again once the overlap's
  // split GEMMs are priced, TpOverlapChunkingSeconds; 75 us once each MoE
  // row is priced with the dispatcher its recipe ran; 50 us once the
  // EP-overlap schedule's own host work is priced,
  // ep_overlap_schedule_host_ops). A weakly identified constant: folds
  // choose 0-400 us.
  double pp_stage_visit_s = 50e-6;
  // Host time per optimizer step that the GPU timeline does not hide, paid
  // once per step whatever the micro-batches: the training loop between
  // two steps' GPU work (Megatron / NeMo: the optimizer step's kernels
  // launched eagerly outside the CUDA graphs, the host syncs on the loss
  // and the gradient norm, logging, the next step's data fetch; the
  // full-iteration graph wrapper reads every micro-batch into static
  // buffers before replay, megatron/core/full_cuda_graph.py data_read).
  // No public per-step figure: set from data by the rule in
  // tests/internal/cross_validation.h (grid 0-400 ms): 175 ms, the folds
  // 125-200 ms; 200 ms (folds 175-225 ms) with NVFP4's TP collectives
  // unhidden (a well identified constant: rows with few micro-batches per
  // step, e.g. 8 GPUs at GBS 32-512, carry it). Independent check, outside
  // runs.json: the MLPerf Training v5.1 Llama 3.1 405B runs
  // (tests/internal/scale_anchors.h) split as step = m x t + K with K =
  // 0.376 s per step, of which the bubble, exposed DP and optimizer terms
  // price 0.178 s: 0.198 s left. Megatron steps only (MaxText prices its
  // own step).
  double step_host_s = 0.200;
  // Which of the optimizations above this stack has.
  MegatronFeatures features;
  // Non-empty: the run's container (as given), older than every generation
  // described (ContainerPredatesGenerations). Nothing is priced from it: the
  // step is generation 26.02's, and the prediction's interval counts the
  // software as a setting no published run measured (prediction_interval.h).
  std::string predating_container;
};

// The constants of one generation (the defaults above are the latest's).
StackConstants StackConstantsFor(StackGeneration generation);
// MaxText on the NVIDIA JAX container maxtext-2026-09-10 (JAX + XLA +
// Transformer Engine): framework kMaxText, MaxTextConstants' defaults.
StackConstants MaxTextStackConstants();

// A ring collective over `group_size` ranks, `members_per_domain` of them in
// each NVLink domain. Inside one domain (span kNvlinkDomain), or with one
// member per domain, or measured (calibrated): cost.Collective as is.
// Otherwise the members of a domain share the inter-domain traffic over
// their NICs (one ring per NIC) while the intra-domain hops carry the whole
// buffer: max(Collective(bytes / members, scale-out), Collective(bytes,
// NVLink)). Used for the data-parallel (and FSDP) collectives.
Cost HierarchicalCollective(const CostModel& cost, CollectiveKind kind, double bytes,
                            int group_size, LinkSpan span, int members_per_domain);

// The fast path's answer. reason != kNone: the layout cannot run and the
// numbers are meaningless.
struct Estimate {
  Infeasibility reason = Infeasibility::kNone;
  double step_time_s = 0;
  double tokens_per_sec_per_gpu = 0;
  double peak_memory_bytes = 0;
  bool fits = false;
};

class StepModel {
 public:
  // InvalidArgument for an inconsistent model or shape (non-positive sizes).
  static absl::StatusOr<StepModel> Create(
      const ModelSpec& model, const ClusterSpec& cluster,
      const TrainingShape& shape, std::shared_ptr<const CostModel> cost_model,
      const StackConstants& stack = StackConstants());

  // Full prediction with breakdown. InvalidArgument (one-line reason) for an
  // invalid layout; Unimplemented if the GPU lacks the precision.
  absl::StatusOr<Prediction> Predict(const ParallelConfig& parallel,
                                     const Knobs& knobs) const;

  // The search's fast path: no strings. Prepare(parallel) + Quick(prepared,
  // knobs), for a layout scored once.
  Estimate Quick(const ParallelConfig& parallel, const Knobs& knobs) const;

  const ModelSpec& model() const { return model_; }
  const ClusterSpec& cluster() const { return cost_->cluster(); }
  const TrainingShape& shape() const { return shape_; }
  double model_flops_per_token() const { return model_flops_per_token_; }

  // Per-plan tables, public so tests can check them by hand. Element
  // counts are per token of one layer, before dividing by tp.
  struct LayerKindTables {
    int count = 0;              // layers of this kind
    bool moe = false;
    bool sliding = false;
    LayerMacs macs;             // per token, full context
    double causal_context = 0;  // average keys per query under the mask
    double qkv_out_dim = 0;     // output width of the Q/K/V projections
    double num_proj_gemms = 0;  // GEMM launches of the attention block
    double params = 0;          // non-expert parameters of one layer
    double expert_params = 0;   // all routed experts of one layer
    // Memory-bound traffic (elements read + written, forward) of the
    // attention block, the MLP/MoE block (excluding what scales with top-k)
    // and the part that scales with top-k (permute, activation, unpermute).
    double mb_attn_elems = 0;
    double mb_mlp_elems = 0;
    double mb_topk_elems = 0;
    double mb_quant_elems = 0;  // GEMM inputs cast to low precision (fwd)
    // Saved activations (elements) by recompute module.
    double act_norm = 0;        // norm outputs (layernorm recompute)
    double act_attn = 0;        // norm inputs, q/k/v, core output
    double act_mla_up = 0;      // MLA up-projection outputs
    double core_attn_qkv = 0;   // q, k, v: core attention's inputs
    double act_mlp = 0;         // dense MLP fc1/act outputs
    double act_moe = 0;         // routed: permuted inputs, fc1, fc2 outputs
    double act_moe_act = 0;     // routed activation outputs (moe_act)
    double moe_fc1_out = 0;     // routed fc1 outputs (the activation's input)
    double act_shared = 0;      // shared experts
    double kernels_fwd = 0;     // kernel launches in the forward pass
    // LoRA: input + output widths of the adapted linears (linear_qkv,
    // linear_proj, linear_fc1, linear_fc2; routed experts once per top-k
    // copy), summed, per token before TP.
    double lora_io_elems = 0;
  };
  // Layer kinds: [0] dense full-attention, [1] dense sliding,
  // [2] MoE full-attention, [3] MoE sliding.
  static constexpr int kNumLayerKinds = 4;
  const LayerKindTables& layer_kind(int i) const { return kinds_[i]; }

  // The part of Quick() that depends only on the layout, for the search,
  // which scores many knob settings of one layout: the layout check, dp,
  // micro-batches and the cost-model lookups that depend on the layout
  // alone; the lookups that also depend on the precision (and, for MoE
  // layers, the grouped-GEMM and dispatcher knobs at balanced routing and
  // at the layout's natural-routing imbalance) are filled on first use. Quick(prepared, knobs) returns exactly what
  // Quick(parallel, knobs) returns: the cached costs are the results of the
  // same calls. One per thread (Quick fills it); valid for this StepModel.
  struct PreparedLayout {
    struct Cache;  // step_model.cc
    PreparedLayout();
    ~PreparedLayout();
    PreparedLayout(PreparedLayout&&) noexcept;
    PreparedLayout& operator=(PreparedLayout&&) noexcept;
    ParallelConfig parallel;  // as given to Prepare
    Infeasibility layout = Infeasibility::kNone;
    std::unique_ptr<Cache> cache;  // not read when layout != kNone
  };
  void Prepare(const ParallelConfig& parallel, PreparedLayout* prepared) const;
  Estimate Quick(PreparedLayout& prepared, const Knobs& knobs) const;

 private:
  StepModel() = default;
  struct Accumulator;  // defined in step_model.cc
  // The one evaluation behind Predict and Quick, over a prepared layout
  // (whose per-precision lookups it fills on first use). breakdown: also
  // fill acc->slots and acc->stage_layers (Predict); Quick needs only the
  // totals.
  Infeasibility Evaluate(PreparedLayout& prepared, const Knobs& knobs, Accumulator* acc,
                         bool breakdown) const;

  StackConstants stack_;
  ModelSpec model_;
  TrainingShape shape_;
  std::shared_ptr<const CostModel> cost_;
  double model_flops_per_token_ = 0;
  LayerKindTables kinds_[kNumLayerKinds];
  // Kind index of each layer, in layer order (pipeline stage assignment).
  std::vector<int> layer_kind_index_;
  // kind_prefix_[l][k]: layers of kind k among layers [0, l) (size L + 1).
  std::vector<std::array<int, kNumLayerKinds>> kind_prefix_;
  int mtp_kind_ = 0;  // MTP modules are shaped as the last layer
  double logits_macs_per_token_ = 0;
  double embedding_params_ = 0;  // one of input embedding / output layer
};

}  // namespace moetune::planner
