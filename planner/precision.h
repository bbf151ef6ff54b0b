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

}  // namespace moetune::planner
