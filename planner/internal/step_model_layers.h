// Per-layer costs of the step model (planner/step_model_layers.cc): the
// per-plan layer-kind tables, the per-layout Context, the cost-model lookups
// of a layer kind, and one layer's time (LayerCost) and saved activations
// (LayerActivationBytes) for one micro-batch on one GPU. Pure functions of
// their arguments.
#pragma once

#include <functional>

#include "planner/internal/step_model_terms.h"

namespace moetune::planner::step_model_internal {

using LayerKindTables = StepModel::LayerKindTables;

// --- Host-side and dispatcher constants of the Megatron software features
// (MegatronFeatures, step_model.h). "The GB200 guide": NVIDIA/Megatron-LM
// docs/discussions/deepseek-v3-gb200-optimization (dev, commit eb0783b6d3).
//
// Router kernels per forward without / with --moe-router-fusion (guide
// 2.1.4: "from 72 to 31").
inline constexpr double kRouterKernelsUnfused = 72;
inline constexpr double kRouterKernelsFused = 31;
// Of these, the router's own with the flex dispatcher (its preprocess is
// the one fused kernel that --cuda-graph-scope moe_preprocess captures).
inline constexpr double kFlexRouterOnlyKernels = 16;
// Router + EP preprocess kernels with the flex dispatcher's fused
// preprocess kernel (guide 2.2.1: "further reducing ... to 17").
inline constexpr double kFlexRouterPreprocessKernels = 17;
// The all-to-all dispatcher's preprocess ops per forward, counted in
// Megatron-LM megatron/core/transformer/moe/token_dispatcher.py
// (MoEAlltoAllTokenDispatcher.preprocess / dispatch_preprocess, EP > 1,
// TP 1): routing-map sum, split sums, the count all-gather, its reshape,
// slice, two sums, the device-to-host copy and sync, the global permute's
// index build and the probs all-to-all: 12.
inline constexpr double kAllToAllPreprocessOps = 12;
// Host cost of one PyTorch call from Python before any kernel launch
// (guide sec. 2: "a simple torch.empty will not call any CUDA kernel, but it
// will generate a few microseconds of overhead on the host side"; 2.1.2:
// "several microseconds"): 3 us. A light op (one kernel) adds the launch.
inline constexpr double kTorchCallHostS = 3e-6;
// An MXFP8 quantization allocates row/col data and row/col scales (guide
// 2.1.2: "four tensors"), the scales with torch.zeros (zero padding the
// tensor cores need).
inline constexpr double kMxfp8TensorsPerQuantization = 4;
inline constexpr double kMxfp8ZeroFilledTensors = 2;
inline constexpr int kGemmOperands = 2;
// MXFP8-quantized GEMM inputs per attention block forward: MLA q_down,
// kv_down, q_up, kv_up, o_proj (Megatron-Core's MLA linears, each a TE
// Linear); GQA: qkv, o_proj. Of these, the ones that directly follow an
// RMSNorm (input norm, q/kv latent norms), whose quantization cuDNN 9.14
// fuses into the norm (guide 2.1.5).
inline constexpr double kMlaQuantizedInputs = 5;
inline constexpr double kMlaQuantizedAfterNorm = 4;
inline constexpr double kGqaQuantizedInputs = 2;
inline constexpr double kGqaQuantizedAfterNorm = 1;
// Selective recompute through Megatron-Core's CheckpointWithoutOutput
// (megatron/core/tensor_parallel/random.py at the GB200 guide's commit;
// used by --recompute-modules mla_up_proj and moe_act): its own host calls,
// counted in the code, none of which launches a kernel except the restore
// copies (CheckpointWithoutOutputHostSeconds):
//   fixed: forward -- torch.get_rng_state + the CUDA RNG state
//     (_get_all_rng_states; the tracker's states are a dict copy), the
//     autograd Function's apply, TE's activation_recompute_forward and FP8
//     state queries (2), save_for_backward, the grad hook on the discarding
//     tensor; backward -- _is_checkpoint_valid, _fork_rng's get (2) and
//     restore (2), _set_all_rng_states (2), the TE recompute and fp8_autocast
//     contexts (2), enable_grad, saved_tensors, the nested
//     torch.autograd.backward: 7 + 12 = 19;
//   per input: detach_variable and the .grad read: 2;
//   per output: untyped_storage + resize_(0) when discarded, and
//     untyped_storage x 2 + size + resize_ before the restore: 6, plus the
//     restore's copy_ (one copy kernel, a light op).
inline constexpr double kCheckpointFixedTorchCalls = 19;
inline constexpr double kCheckpointTorchCallsPerInput = 2;
inline constexpr double kCheckpointTorchCallsPerOutput = 6;
// The mla_up_proj recompute (multi_latent_attention.py,
// qkv_up_proj_and_rope_apply under CheckpointWithoutOutput): inputs
// q_compressed, kv_compressed, k_pos_emb, rotary_pos_emb; outputs query,
// key, value. Re-run in backward: linear_q_up_proj and linear_kv_up_proj
// (TE LayerNormColumnParallelLinear: norm + GEMM, quantizations priced by
// QuantizationsHostSeconds) and the two fused MLA RoPE kernels -- 6 light
// ops; the views, unsqueeze, identity q/kv layernorm calls and 3
// contiguous() -- 8 non-launching calls; and the two TE modules' own Python
// above a plain PyTorch op.
inline constexpr double kUpProjRecomputeInputs = 4;
inline constexpr double kUpProjRecomputeOutputs = 3;
inline constexpr double kUpProjRecomputeLightOps = 6;
inline constexpr double kUpProjRecomputeTorchCalls = 8;
inline constexpr double kUpProjRecomputeTeModules = 2;
// A TE module's forward host time over a plain PyTorch op doing the same
// GEMM: TE issue 2053 ("High CPU overhead on Grace systems", BF16 Linear,
// hidden 2048, 8192 tokens): GB200 TE 99.66 us vs torch 37.08 us CPU per
// forward (GH200: 90.53 vs 33.17): ratio 2.69 (GH200 2.73). A module is
// priced as this many light ops (LightOpSeconds).
inline constexpr double kTeModuleLightOps = 99.66 / 37.08;
// The moe_act recompute (experts.py TEGroupedMLP: activation_func_with_probs
// under CheckpointWithoutOutput): inputs fc1_output and the routing
// probabilities, output the activation; re-run: the fused activation, one
// light op. Under FP8 / MXFP8 / NVFP4, linear_fc2 saves its original BF16
// input (set_save_original_input) and quantizes it again in backward, one
// quantization per local expert (guide 2.2.2: "The cost is that we need to
// re-quantize during the backward pass").
inline constexpr double kMoeActRecomputeInputs = 2;
inline constexpr double kMoeActRecomputeOutputs = 1;
inline constexpr double kMoeActRecomputeLightOps = 1;
// The layernorm recompute (transformer_layer.py: recompute_input_layernorm
// and recompute_pre_mlp_layernorm): each norm that is a module of its own
// runs under CheckpointWithoutOutput, input the block's hidden states,
// output the norm's; re-run in backward: the norm's TE module (TENorm),
// priced as kTeModuleLightOps light ops.
inline constexpr double kNormRecomputeInputs = 1;
inline constexpr double kNormRecomputeOutputs = 1;
// Host time per op of a process that bindpcie has not pinned to its GPU's
// NUMA node, over a pinned one. An assumption, not a measured GB200 figure:
// the usual remote/local memory latency ratio of two-socket servers
// (~1.5x), which the launch thread's memory traffic pays when the scheduler
// places it on the other Grace of the tray. Guide 2.4 reports the effect
// (lower and less variable launch latency) without a per-op figure.
inline constexpr double kUnboundHostOpFactor = 1.5;
// DeepEP on an NVLink domain beyond one 8-GPU node (the community MNNVL
// PR): EP32 dispatch "about 400 GB/s", combine "about 190 GB/s" algorithm
// bandwidth with 24 SMs (guide 2.2.1). The NCCL all-to-all delivered the
// same ("after switching to DeepEP, we did not get the communication
// benefits"), so it gets the same ceilings there.
inline constexpr int kDeepEpNativeNvlinkDomain = 8;
inline constexpr double kDeepEpMnnvlDispatchBytesPerSec = 400e9;
inline constexpr double kDeepEpMnnvlCombineBytesPerSec = 190e9;
inline constexpr int kDeepEpMnnvlGuideSms = 24;  // the SMs of the guide's figures
struct DispatcherNvlinkCaps {
  double dispatch_bytes_per_sec = 0;  // 0: none
  double combine_bytes_per_sec = 0;
};
// Algorithm bandwidth of the EP libraries on GB200 NVL72 through their Torch
// API (4,096 tokens of hidden 7,168, top-8, 8 local experts, uniform random
// routing): deepseek-ai/DeepEP branch hybrid-ep, Hybrid-EP_Implementation.md
// at commit 07eea0c (2026-02-04), section "GB200 Platform" (the tables of
// DeepEP PR 420). One row per measured EP group size (ranks) or SM count.
struct EpLibraryRates {
  int key;  // ranks (HybridEP) or SMs (DeepEP)
  double dispatch_fp8_bytes_per_sec;
  double dispatch_bf16_bytes_per_sec;
  double combine_bytes_per_sec;
};
// HybridEP with 32 SMs (the guide's --moe-hybridep-num-sms 32; the
// Megatron-Bridge recipes' moe_hybridep_num_sms 32), "HybridEP Performance
// Results", by ranks. (Earlier versions of this model read the same page's
// DeepEP table -- 447.76 / 615.78 / 519.57 GB/s at 8 ranks -- as HybridEP's.)
inline constexpr EpLibraryRates kHybridEpGb200Sm32[] = {
    {8, 455.35e9, 545.71e9, 568.94e9},  {16, 444.67e9, 523.48e9, 521.55e9},
    {24, 403.20e9, 507.32e9, 483.76e9}, {32, 392.70e9, 484.22e9, 464.54e9},
    {36, 361.13e9, 479.02e9, 447.89e9},
};
inline constexpr int kHybridEpMeasuredMinRanks = 8;
// HybridEP's ceilings for an EP group of `ranks` GPUs in one NVLink domain
// (ranks >= kHybridEpMeasuredMinRanks): linear in ranks between the
// measured group sizes, the largest one's (36) beyond it -- not
// extrapolated.
EpLibraryRates HybridEpRatesForRanks(int ranks);
// DeepEP (its NVL72-capable intranode build) at 24 ranks, the largest
// group the page measured, "DeepEP Performance Results", by SMs: how its
// bandwidth grows with the SMs it is given (Buffer.set_num_sms; Megatron
// --moe-deepep-num-sms).
inline constexpr EpLibraryRates kDeepEpGb200Ranks24BySms[] = {
    {16, 258.33e9, 324.64e9, 126.53e9},
    {24, 351.05e9, 450.22e9, 163.62e9},
    {32, 405.04e9, 502.84e9, 207.10e9},
};
// DeepEP's MNNVL ceilings with `num_sms` SMs: the guide's EP32 figures
// (kDeepEpMnnvl*, at kDeepEpMnnvlGuideSms) x rate(num_sms) / rate(24) of
// the table above (dispatch: its FP8 column for a low-precision payload,
// BF16 otherwise; combine), linear between the measured SM counts and
// clamped to them (16 - 32).
DispatcherNvlinkCaps DeepEpMnnvlCaps(int num_sms, bool low_precision);
// Without --moe-permute-fusion Megatron-Core permutes with PyTorch ops
// (moe_utils.permute, fused=False: the routing map's transpose, an arange
// expand, masked_select, argsort, index_select and the probs' gather): 6
// ops per permute or unpermute call instead of one fused kernel. (The GB200
// guide's baseline already had the fusion; its step 1 faster permute
// kernel, TE PR 1927, is not priced: the guide gives "up to 10x" for the
// kernel but not its share of the step, and 10x on all permute traffic
// predicts +40% for that step where +7% was measured.)
inline constexpr double kUnfusedPermuteOps = 6;

// The ceilings above for this dispatcher (dedup: the flex dispatcher with
// the stack's backend; else NCCL all-to-all) for an EP group with
// ep_gpus_per_domain ranks in one NVLink domain; low_precision: FP8/MXFP8
// dispatch payload. 0 where none applies.
DispatcherNvlinkCaps NvlinkDispatchCaps(const StackConstants& stack, bool dedup,
                                        int ep_gpus_per_domain, bool low_precision);
// Host seconds of one MXFP8 quantization of a GEMM input under `f`, with
// C++-side kernel launches at launch_s; after_norm: it directly follows a
// norm.
double QuantizeHostSeconds(const MegatronFeatures& f, double launch_s, bool after_norm);
// Host seconds of CheckpointWithoutOutput's own calls for one use with
// `inputs` inputs and `outputs` outputs (kCheckpoint* counts): the
// non-launching calls at kTorchCallHostS, one restore copy per output as
// a light op (kTorchCallHostS + launch_s), all x host_factor (HostFactor).
double CheckpointWithoutOutputHostSeconds(double inputs, double outputs, double launch_s,
                                          double host_factor);
// Host seconds of one mla_up_proj recompute (one layer, one micro-batch),
// its quantizations excluded: the checkpoint's calls (4 inputs, 3 outputs)
// + (6 light ops + 2 TE modules of kTeModuleLightOps each) + 8 calls.
double UpProjRecomputeHostSeconds(double launch_s, double host_factor);
// Host seconds of one moe_act recompute, its re-quantizations excluded:
// the checkpoint's calls (2 inputs, 1 output) + 1 light op.
double MoeActRecomputeHostSeconds(double launch_s, double host_factor);
// Forward kernels of one attention block: 12 (norm, projections, RoPE,
// core attention, output projection, residual, ...), MLA's down / up
// projections and latent norms 6 more, Qwen3's per-head q and k norms
// (GQA with qk_layernorm) 2 more.
double AttentionForwardKernels(const ModelSpec& m);
// Context parallelism as Transformer Engine runs it for Megatron-Core
// (AttnFuncWithCPAndKVP2P: cp_comm_type p2p, causal, each rank holding 2 of
// 2P load-balanced sequence chunks; P = cp > 1; read at TransformerEngine
// d0067d0da6cb). Per layer and micro-batch, beyond the ring's traffic
// (KindCosts::cp_ring) and one attention call per direction:
//   forward kernels: P - 1 more attention calls, the K/V concatenation, P - 1
//   softmax-LSE merges, P output corrections after the ring and one NCCL
//   send/recv per ring round (P - 1; two where isend and irecv go apart):
//   4P - 2;
double CpForwardExtraKernels(int cp);
//   backward kernels: P - 1 more attention-backward calls of
//   kCudnnAttnBwdKernels each, a send/recv per step (P), the dQ accumulation
//   (P) and the dK, dV accumulations (2P), two setup copies:
//   kCudnnAttnBwdKernels (P - 1) + 4P + 2;
double CpBackwardExtraKernels(int cp);
//   both directions: CpForwardExtraKernels + CpBackwardExtraKernels.
double CpExtraKernels(int cp);
//   forward HBM bytes: the K/V concatenation (read and write the K/V chunk,
//   2 kv) and the output corrections (the first reads out_0 and writes out,
//   2 o; rank r merges r full-width partial outputs at 3 o each and P - 1 - r
//   half-width ones at 1.5 o; at the ranks' mean r = (P - 1) / 2):
//   2 kv + (2 + 2.25 (P - 1)) o;
double CpForwardMergeBytes(int cp, double o_bytes, double kv_bytes);
//   backward HBM bytes: each of the P steps accumulates dQ (read, read,
//   write: 3 q) and dK, dV (3 kv), counted at full width (the steps on
//   half-width chunks move half: within a quarter): 3P (q + kv).
double CpBackwardMergeBytes(int cp, double q_bytes, double kv_bytes);
// cuDNN kernels of one fused attention backward call: the dO.O
// preprocessing, the main kernel and the dQ conversion to BF16.
inline constexpr double kCudnnAttnBwdKernels = 3;
// Norms of one layer that recompute_modules "layernorm" checkpoints:
// Megatron-Core recomputes a norm only where it is a module of its own
// (transformer_layer.py: not an IdentityOp; gpt_layer_specs.py): MLA's
// input norm (TENorm before the separate down projections) and a MoE
// layer's pre-MLP norm (TENorm before the router). GQA's input norm is
// fused into linear_qkv (TE LayerNormColumnParallelLinear) and a dense
// MLP's into linear_fc1 (LayerNormLinear): there the input_layernorm /
// pre_mlp_layernorm is an IdentityOp and nothing is recomputed or freed.
// So: (MLA ? 1 : 0) + (pre_mlp_norm ? 1 : 0), pre_mlp_norm: a MoE layer
// whose pre-MLP norm recompute Megatron-Core keeps (PreMlpNormRecomputed).
int RecomputedNormsPerLayer(const ModelSpec& m, bool pre_mlp_norm);
// Whether Megatron-Core keeps a MoE layer's pre-MLP norm recompute under
// `cuda_graphs` with `f`'s graph scope (transformer_layer.py
// can_recompute_pre_mlp_layernorm_for_cudagraph): TE-scoped graphs that
// capture the router would return the norm's output from the graph in a
// static buffer, so the recompute is turned off unless they capture the
// preprocess too and the dispatcher is the NCCL all-to-all; full-iteration
// graphs (cuda_graph_impl local) and no router graph keep it. Not modelled:
// its shared-expert-overlap exception (no knob here).
bool PreMlpNormRecomputed(bool cuda_graphs, const MegatronFeatures& f, Dispatcher dispatcher);
// Host seconds of one norm's recompute: the checkpoint's calls (1 input,
// 1 output) + the TENorm re-run (kTeModuleLightOps light ops).
double NormRecomputeHostSeconds(double launch_s, double host_factor);
// MACs per token that the mla_up_proj recompute re-runs: the query up
// projection [q_lora_rank x n (qk_nope + qk_rope)] (without q LoRA the
// query projection from hidden, which the same function holds) and the
// key/value up projection [kv_lora_rank x n (qk_nope + v_head_dim)]. 0 for
// other attention.
double MlaUpProjRecomputeMacsPerToken(const ModelSpec& m);

// Width (elements per token) of the activations the attention block's
// sequence-parallel all-gather moves before its projections, and of the
// reduce-scatter of their gradients in backward. GQA/MHA: linear_qkv is
// column-parallel on the hidden state, hidden_size. MLA (Megatron-LM
// megatron/core/transformer/multi_latent_attention.py): the down
// projections are TELinear parallel_mode='duplicated', run on the local
// s / tp tokens; the column-parallel up projections gather their inputs,
// q_lora_rank (q_compressed) and kv_lora_rank (kv_compressed), and k_pos_emb
// is gathered separately (gather_from_sequence_parallel_region,
// qk_rope_head_dim); without q LoRA (q_lora_rank 0) linear_q_proj gathers
// the hidden state instead. DeepSeek-V3: 1,536 + 512 + 64 = 2,112 (7,168
// for GQA at its hidden size). The output projection's reduce-scatter (and
// its gradient's all-gather) stays hidden_size wide.
double AttentionTpGatherWidth(const ModelSpec& m);
// Elements per token (BF16) the mla_up_proj recompute moves through
// memory-bound kernels: the two latent norms (read + write q_lora_rank +
// kv_lora_rank), RoPE and the q/k/v assembly (read the up projections'
// outputs n (qk_nope + qk_rope) + n (qk_nope + v) and the rope key, write
// query n (qk_nope + qk_rope), key n (qk_nope + qk_rope), value n v), and
// the restore copy into the discarded storages (read + write query, key,
// value). 0 for other attention.
double MlaUpProjRecomputeMemoryElemsPerToken(const ModelSpec& m);
// Router + EP-preprocess host ops per forward (dedup: flex dispatcher).
double RouterPreprocessHostOps(const MegatronFeatures& f, bool dedup);
// 1, or kUnboundHostOpFactor without NUMA binding.
double HostFactor(const StackConstants& stack);
// Seconds per heavy (module-level) Python/PyTorch op on the host:
// host_op_s x HostFactor.
double HostOpSeconds(const StackConstants& stack);
// Whether a MoE layer's host work (MoeHostSeconds) hides under another
// micro-batch's compute, so that only what exceeds that compute shows:
// the stack's rule (StackConstants::moe_host_hidden_by_ep_overlap, 26.06
// on), a layout the combined-1F1B schedule can run (combined_layout:
// >= 2 micro-batches, pp 1 or interleaved), EP > 1, CUDA graphs on, and
// full-iteration graphs (MegatronFeatures::graph_full_iteration: the MoE
// layers replayed with a static token budget, no per-dispatch
// synchronisation). With graphs scoped to parts of the layer (moe_router,
// moe_preprocess, attn) the dropless dispatch copies its token count to the
// host in every layer (HybridEP without num_permuted_tokens, the NCCL
// all-to-all's splits), which holds the CPU until the GPU has caught up;
// the layer's expert work is issued after that, so its host time adds, EP
// overlap or not (false: the caller adds it whole).
bool MoeHostHidden(const StackConstants& stack, bool combined_layout, int ep,
                   bool cuda_graphs);

// Fills *t (whose moe flag is set) from layer `layer` of `model`, the
// first of its kind: FLOPs, parameters, element counts per token.
void FillLayerKindTables(const ModelSpec& model, int layer, int seq_len,
                         LayerKindTables* t);

// Megatron-Core's combined-1F1B EP overlap (--overlap-moe-expert-parallel-
// comm) pairs the forward of one micro-batch with the backward of another,
// layer by layer. Share of a pipeline rank's forward (and equally backward)
// layer passes that have such a partner:
//   pp == 1: (m - 1) / m -- combined_1f1b_schedule_for_no_pipelining runs the
//     first forward alone, m - 1 combined steps, the last backward alone
//     (megatron/core/pipeline_parallel/combined_1f1b.py);
//   pp > 1: (N - W) / N with N = m x vp chunk passes and W = min(N,
//     2 (pp - 1) + (vp - 1) pp + 1) the warmup forwards of the first stage
//     (the most of any stage), whose mirror cooldown backwards run alone too:
//     schedules.py get_pp_rank_microbatches, "(pp - rank - 1) * 2 +
//     (num_model_chunks - 1) * microbatch_group_size_per_vp_stage" (group
//     size pp by default), "+ 1" when overlap_moe_expert_parallel_comm ("one
//     extra micro-batch forward step before the 1f1b stages"); vp = 1 (only
//     where the stack allows it): pp - 1 + 1.
// m: micro-batches per pipeline (>= 1), vp >= 1. 0 when nothing pairs.
double CombinedOneFOneBPairedFraction(int pp, int vp, int micro_batches);

// Whether the TP all-gather / reduce-scatter overlap still hides anything
// when the combined-1F1B EP overlap runs. Before Blackwell the TP/CP overlap
// needs CUDA_DEVICE_MAX_CONNECTIONS=1 (kernels reach the GPU in issue order)
// and the EP overlap a larger value; Megatron-LM megatron/training/
// arguments.py (compute capability < 10): "For Hopper and before, try not to
// use tensor model parallelism or context parallelism with
// overlap_moe_expert_parallel_comm ... set CUDA_DEVICE_MAX_CONNECTIONS to 1
// or 32, which depends on which parallelization you want to prioritize".
// The public EP-overlap runs prioritise the EP overlap: Megatron-Bridge
// scripts/performance/utils/overrides.py sets 32 (flex backends) or 8 on
// H100 when moe_a2a_overlap is on (and its H100 Qwen3-235B recipe turns
// tp_comm_overlap off), Megatron-MoE-ModelZoo sbatch_benchmarking.sh exports
// 32 with A2A_OVERLAP=1. Priced: no TP overlap on Hopper under the EP
// overlap (false), unchanged otherwise (true).
bool TpOverlapSurvivesEpOverlap(GpuGeneration generation, bool ep_overlap_schedule);

// Transformer Engine's userbuffers TP overlap splits the GEMMs it overlaps
// (module/base.py initialize_ub defaults, which moetune's Megatron file
// runs): ring exchange, tp chunks of tokens / tp rows, for the
// column-parallel fprop (qkv, fc1) and the row-parallel dgrad (proj, fc2);
// pipeline, kTpPipelineSplits chunks, for the row-parallel fprop; bulk
// overlaps (the column dgrad and wgrad) run whole. Seconds the split GEMMs
// take beyond the whole ones, by the cost model's own GEMM cost
// gemm_s(rows, n, k, pieces), pieces the number of chunks the GEMM is
// split into (1: whole) (its tile factor and fixed time per kernel; the
// caller divides it by GemmWaveEfficiency, below):
//   tp G(t / tp, col_n, h) - G(t, col_n, h)          column fprop
// + tp G(t / tp, row_k, h) - G(t, row_k, h)          row dgrad
// + 4 G(t / 4, h, row_k) - G(t, h, row_k)            row fprop
// for one block: column_n the column GEMM's output width per rank, row_k
// the row GEMM's input width per rank, hidden h, t tokens per micro-batch.
inline constexpr int kTpPipelineSplits = 4;
// The chunks are small GEMMs: at TP 8 a 4,096-token micro-batch gives
// 512-row chunks, and a [512 x 1,280] output (Llama3-70B's qkv at TP 8) is
// 20 tiles of 128 x 256 on 132 SMs. gemm_s above is therefore taken at the
// share of the SMs the chunk's tiles keep busy (GemmWaveEfficiency): the
// userbuffers overlap issues its chunk GEMMs round-robin on
// kUbComputeStreams compute streams (Transformer Engine
// comm_gemm_overlap.cpp split_overlap_ag / split_overlap_rs:
// _stream_compute[i % _stream_compute.size()], pytorch/cpp_extensions/
// gemm.py _NUM_MAX_UB_STREAMS = 3), so up to three run at once; the whole
// GEMM it replaces (rows = tokens) runs alone. Both sides of each
// difference are taken the same way, so what is added is the splitting's
// loss only.
inline constexpr int kUbComputeStreams = 3;
// Share of the GPU's tile slots a GEMM's outputs use over its waves (wave
// and tile quantization, NVIDIA's "Matrix Multiplication Background" user
// guide): `concurrent` GEMMs of [m x n] outputs in flight, each cut into
// kGemmTileRows x kGemmTileCols tiles (either orientation, the better:
// cuBLASLt's large Hopper and Blackwell tiles), one tile per SM per wave,
//   tiles = concurrent ceil(m / 128) ceil(n / 256),
//   efficiency = concurrent m n / (ceil(tiles / sms) sms 128 x 256).
// Example, 132 SMs: [512 x 1,280] alone is 20 tiles, 0.15; three at once
// 60 tiles, 0.45. [4,096 x 1,280]: 160 tiles in 2 waves, 0.61. 1 where the
// cluster does not give its SM count (sms <= 0).
// The chunks in flight are min(kUbComputeStreams, the chunks of the split).
inline constexpr double kGemmTileRows = 128;
inline constexpr double kGemmTileCols = 256;
double GemmWaveEfficiency(double m, double n, int sms, int concurrent);
double TpOverlapChunkingSeconds(
    const std::function<double(double, double, double, int)>& gemm_s, double tokens, int tp,
    double column_n, double row_k, double hidden);
// The TP collectives of one block (attention, or the MLP / shared experts)
// under sequence parallelism, seconds each: forward, the input's all-gather
// before the column-parallel GEMM (qkv, fc1) and the output's
// reduce-scatter after the row-parallel one (proj, fc2); backward, the
// output gradient's all-gather before the row-parallel dgrad, the input's
// all-gather again for the column-parallel wgrad (Transformer Engine keeps
// the local shard only: linear.py / layernorm_linear.py
// backward_input_needs_gather, column-parallel with sequence parallelism;
// 0 where Megatron gathers the input itself, MLA's latents), and the input
// gradient's reduce-scatter after the column-parallel dgrad.
struct TpBlockCollectives {
  double fwd_ag_s = 0;
  double fwd_rs_s = 0;
  double bwd_ag_s = 0;
  double bwd_regather_s = 0;
  double bwd_rs_s = 0;
  double TotalSeconds() const { return fwd_ag_s + fwd_rs_s + bwd_ag_s + bwd_regather_s + bwd_rs_s; }
};
// Exposed seconds of one block's TP collectives when each hides behind its
// userbuffers partner GEMM only (Transformer Engine overlaps a collective
// with the GEMM it feeds or drains, not with another block's; Megatron-
// Bridge comm_overlap.py TransformerLayerTPOverlapCfg: qkv / fc1 fprop and
// proj / fc2 dgrad ring exchange, proj / fc2 fprop ring exchange or
// pipeline, qkv / fc1 dgrad and wgrad bulk): column_s and row_s are the
// forward GEMM times of the column- and row-parallel linears, each
// backward GEMM (dgrad, wgrad) as long as the forward; up to `fraction` of
// a GEMM can hide its collective.
//   exposed = max(0, fwd_ag - f col) + max(0, fwd_rs - f row)
//           + max(0, bwd_ag - f row)                 (row dgrad)
//           + max(0, bwd_regather - f col)           (column dgrad, bulk)
//           + max(0, bwd_rs - f col wgrad_share)     (column wgrad, bulk)
// wgrad_share is the wgrad's share of a GEMM's backward beyond its dgrad
// (1 normally; 0 under LoRA, whose frozen weights take no wgrad: the
// reduce-scatter then shows whole).
double TpPairExposedSeconds(const TpBlockCollectives& t, double column_s, double row_s,
                            double wgrad_share, double fraction);

// One paired window of the combined-1F1B layer schedule: a communication
// kernel of comm_s runs on the communication stream beside compute_s of the
// other micro-batch on the compute stream. While both run, the compute gets
// the SMs the communication kernels leave free and takes `slowdown` (>= 1)
// times as long. Hidden = min(comm, compute x slowdown) (the communication
// that finishes before the compute does), exposed = comm - hidden, and the
// compute's stretch = hidden x (1 - 1 / slowdown); window = compute +
// exposed + stretch = max(comm, compute + comm (1 - 1/slowdown)).
struct PairedWindow {
  double hidden_s = 0;
  double exposed_s = 0;
  double slowdown_s = 0;
};
PairedWindow OverlapWindow(double comm_s, double compute_s, double slowdown);
// The share of a window's scheduled overlap (OverlapWindow) the combined-
// 1F1B schedule achieves for an exchange whose time is `nvlink_share` bound
// by SM-issued NVLink copying (CostModel::DispatchNvlinkShare) and the rest
// by NIC-driven RDMA: (1 - phi) x ep_overlap_fraction + phi x
// ep_overlap_nvlink_fraction, phi = nvlink_share clamped to 0..1. See
// StackConstants::ep_overlap_nvlink_fraction for the mechanism and sources.
// Example: an exchange whose NVLink copying takes 1.5x its NIC transfer
// (phi = 1 - 1/1.5 = 1/3), with the fractions 1 and 0, achieves 2/3 of its
// windows' overlap.
double EpOverlapAchievedFraction(const StackConstants& stack, double nvlink_share);

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
// The routed experts' fc1/fc2 grouped GEMMs (kc->gfc1, kc->gfc2); `grouped`
// false: a loop of per-expert GEMMs. Shared by both frameworks' pricing.
void RoutedExpertGemms(const Context& c, bool grouped, double imbalance, KindCosts* kc);
// ETP > 1: adds the expert tensor-parallel all-gather / reduce-scatter to
// kc->dispatch / kc->combine.
void AddExpertTensorParallelExchange(const Context& c, double imbalance, KindCosts* kc);
// Routed experts and EP dispatch/combine (MoE kinds) at c.precision; adds to
// kc->dispatch / kc->combine, which must start at zero.
void ExpertKindCosts(const Context& c, bool grouped, bool dedup, double imbalance,
                     KindCosts* kc);

// Costs of one layer for one micro-batch on one GPU, by breakdown slot.
Slots LayerCost(const LayerKindTables& k, const Context& c, bool recompute_this_layer,
                const KindCosts& kc);

// Whether the shared experts are recomputed (save no activations of their
// own and re-run their forward in backward): with shared_experts, or with
// moe, whose checkpoint runs the whole MoELayer forward. Megatron-Core
// moe_layer.py MoELayer.forward: custom_forward, which
// tensor_parallel.checkpoint / te_checkpoint wraps when "moe" is in
// recompute_modules, calls shared_experts_compute (experts_compute in the
// July 2025 core, commit ac198fc0d) besides the router, dispatch, routed
// experts and combine; with moe_shared_expert_overlap the token dispatcher
// runs them, inside the same function.
bool SharedExpertsRecomputed(uint32_t recompute_modules);

// Bytes per element of the core-attention output kept for backward: the
// attention's BF16 output (2 B) plus, under a low-precision recipe,
// linear_proj's quantized copy (operand_bytes).
double CoreOutputSavedBytes(bool low_precision, double operand_bytes);

// Bytes per token (before the TP split) that fine-grained activation
// offload (Knobs::offload_modules; Megatron-Core --offload-modules,
// megatron/core/pipeline_parallel/fine_grained_activation_offload.py) moves
// to the host for one layer: each module's group is every tensor saved for
// backward while the module runs (saved_tensors_hooks around it), sent to
// the host after its forward and fetched before its backward. Per module:
//   attn_norm, mlp_norm: the norm's input, h x 2 B;
//   core_attn: what the fused attention saves, q, k, v and its output, in
//     BF16: (q + k + v + heads x v_head_dim) x 2 B (multi_latent_attention.py
//     and attention.py wrap _run_core_attention in the group and release
//     query, key, value after it). MLA's q, k, v are not kept when
//     mla_up_proj is recomputed; with core_attn recomputed the checkpointed
//     path runs outside the group: nothing;
//   attn_proj: linear_proj's saved input, heads x v_head_dim -- under a
//     low-precision recipe its own quantized copy (operand bytes); in BF16
//     the attention's output itself, already moved with core_attn (which
//     Megatron requires with attn_proj): nothing more;
//   expert_fc1: linear_fc1's saved input, the permuted rows top_k x h x
//     etp: quantized under MXFP8 / NVFP4 (operand bytes), else the
//     original BF16 input (moe/experts.py set_save_original_input);
//   moe_act: what the activation (or its checkpoint, under moe_act
//     recompute) keeps, its input: fc1's BF16 output, top_k x (2 for a
//     gated MLP) x ffn x 2 B (experts.py wraps the activation in the group
//     and releases fc1_output after it);
//   the routed terms are the busiest GPU's (x moe_load_imbalance), and
//     none when the whole MoE layer is recomputed (Megatron refuses it).
// The same bytes leave HBM (LayerActivationBytes) and cross the host link
// twice (the offload terms of LayerCost).
double OffloadedBytesPerToken(const LayerKindTables& k, const Context& c);

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
