// Numeric precision of the training GEMMs.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"

namespace moetune::planner {

// kBf16: BF16 GEMMs. kFp8: FP8 with per-tensor or blockwise scaling
// (Hopper and later). kMxfp8: FP8 with 1x32 block scaling (Blackwell).
// kNvfp4: 4-bit with 1x16 block scaling (Blackwell).
// Core attention, norms and the optimizer stay in BF16/FP32 for all of them.
enum class Precision { kBf16 = 0, kFp8 = 1, kMxfp8 = 2, kNvfp4 = 3 };
inline constexpr int kNumPrecisions = 4;

// "bf16", "fp8", "mxfp8", "nvfp4".
std::string_view PrecisionName(Precision precision);
// Accepts the names above (case-insensitive); InvalidArgument naming the
// value otherwise.
absl::StatusOr<Precision> ParsePrecision(std::string_view name);

// Bytes per GEMM input element (the activations and weights fed to the
// tensor cores), including the block-scale overhead: MXFP8 adds one 1-byte
// E8M0 scale per 32 elements, NVFP4 one 1-byte E4M3 scale per 16 elements.
double GemmOperandBytes(Precision precision);

// Whether Transformer Engine's userbuffers comm+GEMM overlap (Megatron
// --tp-comm-overlap: the sequence-parallel all-gather / reduce-scatter split
// into chunks that run beside the GEMM) exists for GEMMs in `precision`.
// False for NVFP4: TE's userbuffers all-gather builds its buffer for FP8
// (delayed / current scaling) and MXFP8 quantizers only and raises
// "Unsupported quantizer for Userbuffers" for any other
// (transformer_engine/pytorch/module/base.py,
// fill_userbuffers_buffer_for_all_gather; the fused-op path
// ops/fused/userbuffers_forward_linear.py accepts the delayed, current
// scaling and MXFP8 recipes only; NVIDIA/TransformerEngine d0067d0da,
// 2026-08-22). Megatron-Bridge accordingly sets tp_comm_overlap = False in
// every NVFP4 performance recipe since NVFP4 was added for dense models
// (commit 1420e3fa9, 2025-11-21, scripts/performance/configs/llama*/...: "False
// if precision == 'nvfp4'") through src/megatron/bridge/perf_recipes/llama/
// {b200,b300,gb200,gb300}/llama31.py at 067f987df, while the FP8/MXFP8
// recipes of the same layouts keep it on. An NVFP4 plan's TP collectives
// therefore run unhidden (NCCL, before/after each GEMM).
bool TpCommOverlapSupports(Precision precision);

}  // namespace moetune::planner
