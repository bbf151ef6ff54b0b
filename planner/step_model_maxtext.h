// MaxText (JAX + XLA + Transformer Engine) as the step model prices it: the
// constants of the software, global for one container generation (never per
// model or run). The terms that read them are in step_model_maxtext.cc
// (declared in internal/step_model_maxtext.h); StackConstants::framework
// selects them.
//
// How the planner's layout and knobs map onto MaxText (base.yml keys):
//   ParallelConfig.dp with shard_params  = the fsdp axis times the expert
//     axis (ici_fsdp_parallelism x dcn_fsdp_parallelism x
//     ici_expert_parallelism): MaxText shards every weight's embed dimension
//     over fsdp and expert (logical_axis_rules 'embed' -> fsdp, ...,
//     expert), and the experts' own dimension over expert, so dense weights
//     are ZeRO-3 over dp and expert weights over dp / ep (the fsdp axis);
//   ParallelConfig.ep                    = ici_expert_parallelism;
//   Knobs.dispatcher kAllToAll            = jax.lax.ragged_all_to_all (every
//     (token, expert) copy, receive buffers sized for the worst case:
//     ragged_buffer_factor -1, base.yml default; inside one NVLink domain
//     XLA's one-shot copy kernel, ragged_a2a_one_shot below);
//   Knobs.dispatcher kFusedDedup          = Transformer Engine's NCCL EP
//     dispatch/combine (one copy per destination GPU);
//   Knobs.grouped_gemm false / true       = XLA ragged_dot / Transformer
//     Engine's cuBLAS grouped GEMM over the ragged expert batches;
//   Knobs.recompute                       = remat_policy: kNone 'minimal'
//     (save all), kFull 'full', kSelective 'custom' with the modules as the
//     named checkpoints set to 'remat': moe -> moe_mlpwi_0/1 + moe_mlpwo
//     (and the sorted inputs, which no name saves), core_attn -> context,
//     mla_up_proj -> the attention projections (query_proj, key_proj,
//     value_proj; mla_q, mla_kv for MLA), layernorm -> the norm outputs and
//     out_proj, mlp and shared_experts -> mlpwi/mlpwo, moe_act -> the gated
//     product; decoder_layer_input always 'device';
//   Knobs.offload_modules expert_fc1      = moe_mlpwi_0 and moe_mlpwi_1 set
//     to 'offload' (host memory, over NVLink-C2C on Grace systems);
//   Knobs.overlap.dp_comm + num_comm_streams >= 2 = multi-stream
//     collectives (XLA async collectives scheduled by the latency-hiding
//     scheduler, xla_gpu_enable_latency_hiding_scheduler, with more than one
//     in flight: --xla_gpu_experimental_parallel_collective_overlap_limit =
//     num_comm_streams; FSDP gathers/scatters overlapped with compute and
//     with the EP exchange, the NVLink and scale-out phases of a collective
//     in parallel); num_comm_streams 1 = that limit's default 1: one async
//     collective in flight at a time, so every collective queues behind the
//     others; overlap.dp_comm off = synchronous collectives;
//   Knobs.precision kMxfp8                = MaxText/TE recipe: dense GEMMs
//     FP8 current scaling, expert GEMMs MXFP8 (same peak on Blackwell);
//     kNvfp4 = the NVFP4 recipe;
//   Knobs.cuda_graphs                     = XLA command buffers.
#pragma once

namespace moetune::planner {

struct MaxTextConstants {
  // XLA's ragged_dot on NVIDIA GPUs against Transformer Engine's cuBLAS
  // grouped GEMM for the same ragged expert batches: time ratio. Public
  // figure: MaxText's integration of TE grouped GEMM is reported ~1.2x
  // faster than its alternative for standalone GEMMs (shared/docs/
  // gpu-facts.md, "Transformer Engine (JAX)"). Applies to the calls XLA
  // lowers to its cuDNN ragged-dot fusion (forward, input gradient and,
  // unless ragged_dot_wgrad_expanded, weight gradient); XLA's grouped-GEMM
  // lowering of ragged_dot
  // (--xla_gpu_experimental_use_ragged_dot_grouped_gemm) is hipBLASLt-only.
  double ragged_dot_time_ratio = 1.2;
  // Whether the weight gradients of ragged_dot (ragged contracting
  // dimension) take XLA's expansion (xla/hlo/transforms/expanders/
  // ragged_dot_rewriter.cc, RaggedToDense + CreateRaggedContractingDotDims:
  // both operands broadcast to one copy per group, the other groups' rows
  // selected to zero, one dot batched over the g groups contracting over
  // all M rows): g x the useful FLOPs (RaggedDotWgradExpanded) and the
  // masked operands materialised (RaggedDotWgradExpansionBytes: XLA's
  // dense rewrite is materialised before a cuBLAS call, marin-community
  // #7012 saw [262144, 163840] built on B200; #5350 ~54 GiB of temporaries).
  // false: the weight gradients at the ragged dot's cost, like the forward
  // and input gradient.
  // What the seed's container (NVIDIA's maxtext-2026-09-10) ran, issue 14.
  // The source trail of *upstream* points to the expansion:
  //  - MaxText on GPU calls jax.lax.ragged_dot (megablox/tokamax gmm are
  //    TPU-only: AI-Hypercomputer/maxtext e591f30 src/maxtext/layers/moe.py);
  //  - JAX's transpose rule emits the weight gradient ragged-contracting
  //    (jax/_src/lax/lax.py _ragged_dot_general_transpose_rule), lowered to
  //    chlo.ragged_dot on GPU;
  //  - XLA's cuDNN ragged-dot fusion (openxla/xla PR #40189, 2026-04-30;
  //    default from PR #42313, cuDNN >= 9.22) took forward and input
  //    gradient and left "unsupported ones (wgrad)" to the dense rewrite;
  //    the cuDNN wgrad path (kRaggedContracting, MOE_GROUPED_MATMUL_BWD,
  //    cuDNN >= 9.24; ragged_dot_fusion_rewriter.cc PadWgradForCuDNNAlignment
  //    / MaskRaggedDotPaddingTail) is in a later upstream version, and
  //    marin-community (2026-09-07, #9077 2026-09-10) still saw the
  //    expansion upstream.
  // The run's own measurements rule the expansion out, each on its own:
  //  - memory: materialised, one layer's fc1 weight gradient needs 84 + 48
  //    GiB of masked operands beside the 157 GiB the baseline holds
  //    otherwise -- 289 GiB on a 186 GB GB200; the published run ran. (A
  //    fused mask, same FLOPs without the memory, is not what the dense
  //    rewrite emits.)
  //  - time: the published 103 TFLOPS/GPU with 84% of kernel time in
  //    communication leaves at most ~10 s of a ~62 s step to compute; the
  //    expansion alone is ~20 s (tests/seed_benchmark.cc prints both).
  // So NVIDIA's container ran a grouped weight gradient (JAX-Toolbox builds
  // XLA with its own patch set and ships the newest cuDNN; the cuDNN wgrad
  // path is NVIDIA's own). false for this stack; true stays for stacks with
  // upstream's lowering of the time, and then the model prices both the
  // FLOPs and the memory. This choice is set by the seed run itself: its
  // baseline share is in-sample for it, not an out-of-sample check.
  bool ragged_dot_wgrad_expanded = false;
  // Rows of the expert-side tensors XLA keeps for backward (sorted inputs,
  // moe_mlpwi_0/1 outputs, activation, moe_mlpwo output) under ragged
  // all-to-all. MaxText's own sparse path sizes its ragged buffers for the
  // worst case with the default ragged_buffer_factor -1 (moe.py
  // get_ragged_buffer_size: every token of every EP peer, ep x the balanced
  // rows). The published seed run cannot have stored them so: offloading
  // moe_mlpwi_0/1 at worst-case size is 58 layers x 24,576 tokens x 8 x 8 x
  // 2 x 2,048 x 2 B = 747 GB per GPU against 240 GB of host memory per GB200
  // (the cluster preset), so the TE grouped-GEMM path keeps them at the
  // routed rows, and so the receive buffer they are computed from (one
  // static shape): false prices that. true prices MaxText's worst-case
  // sizing, for the receive buffer (MaxTextPeakMemory) and the saved
  // tensors alike.
  bool ragged_buffers_worst_case = false;
  // jax.lax.ragged_all_to_all inside one NVLink domain runs XLA's one-shot
  // kernel (--xla_gpu_unsupported_use_ragged_all_to_all_one_shot_kernel,
  // default true: ragged_all_to_all_thunk.cc takes it before its NCCL
  // send/recv fallback when the peers are load/store-accessible): a copy
  // kernel of peer stores (RaggedAllToAllKernelImpl, 128-thread blocks,
  // one update per peer as MaxText calls it), not an NCCL all-to-all.
  // Public measurement at DeepSeek-V3's shape (256 experts, h 7168, BF16,
  // 4,096 tokens per GPU, 8 B200 GPUs of one NVLink domain): 16.42 GiB/s
  // sent per GPU, about 2% of NVLink (openxla/xla issue #33386,
  // 2025-10-30), while the same call across hosts (NCCL) ran near the
  // network peak. Corroborated on GB200: disabling the one-shot kernel
  // alone cut a 4 x GB200 EP4 step from 52.8 s to 6.9 s (marin-community
  // #7012 / PR #7494), and the multi-host NVLink (LSA) one-shot variant
  // with one block per peer took 13.82 s of a 33.8 s step until its grid
  // was raised 32x (marin-community PR #8081). Priced as the kernel's whole
  // send buffer (every (token, expert) copy, its own slice included, as
  // that benchmark counts it) at this rate, per GPU.
  bool ragged_a2a_one_shot = true;
  double ragged_a2a_one_shot_bytes_per_sec = 16.42 * 1073741824.0;
  // XLA's collective pipeliner for host offloading
  // (--xla_gpu_enable_pipelined_host_offloading, default false and not
  // turned on by any optimization level: xla/debug_options_flags.cc and
  // its FlagUtilsTest.HostOffloadingNotAutoEnabledAtO1). Without it the
  // device-to-host copy of an offloaded scan residual starts when the
  // layer's forward iteration produces it and must finish by that
  // iteration's end (the scan's stacked host buffer), and the host-to-device
  // reload runs inside the backward iteration before the tensor's first use:
  // "these copies often happen at loop boundaries, limiting overlap with
  // compute" (openxla/xla PR #32297, which added the flag: ~12% faster on
  // GB200, llama3-8b FSDP 8, MLP offloading with it than without). false
  // prices that (MaxTextOffloadExposedSeconds with the iteration windows);
  // true lets each copy overlap a whole layer's work, as in Megatron (1/3
  // forward, 2/3 backward). The seed's container flags are not public, so
  // the default follows XLA's.
  bool pipelined_host_offloading = false;
  // Bytes per parameter: MaxText keeps weights in weight_dtype float32
  // (base.yml) and computes in dtype bfloat16, so the FSDP all-gather moves
  // the bf16 cast of each layer's weights (XLA moves the convert before the
  // all-gather) and the gradient reduce-scatter runs on float32 gradients.
  double fsdp_gather_bytes_per_param = 2.0;
  double fsdp_reduce_bytes_per_param = 4.0;
  // State per parameter of the local FSDP shard: float32 master weights
  // (4), Adam mu and nu in float32 (optax adamw, mu_dtype = weight dtype:
  // 8), float32 gradients (4) kept for the whole step until the update.
  double master_weight_bytes_per_param = 4.0;
  double adam_state_bytes_per_param = 8.0;
  double grad_bytes_per_param = 4.0;
  // Layers whose gathered bf16 weights are live at once: the scanned layer
  // and the one the pipelined all-gather prefetches
  // (--xla_gpu_enable_pipelined_all_gather).
  double gathered_layers = 2.0;
};

}  // namespace moetune::planner
