#include "kernels/check_outcome.h"

namespace moetune::kernels {

const char* CheckOutcomeName(CheckOutcome o) {
  switch (o) {
    case CheckOutcome::kOk: return "ok";
    case CheckOutcome::kWrong: return "WRONG";
    case CheckOutcome::kFailed: return "FAILED";
    case CheckOutcome::kSkipped: return "SKIPPED";
  }
  return "FAILED";
}

int RequiredComputeCapability(const ProbeParams& params) {
  if (const auto* g = std::get_if<GroupedGemmParams>(&params)) {
    if (g->dtype == DType::kFp8E4M3) return 89;  // FP8 tensor cores (Ada, Hopper)
    if (g->dtype == DType::kMxfp8) return 100;   // block-scaled FP8 (Blackwell)
  }
  return 0;
}

CheckOutcome ClassifyProbeStatus(const ProbeStatus& status, const ProbeParams& params, int device_cc) {
  if (status.ok()) return CheckOutcome::kOk;
  if (status.code() == ProbeCode::kDataLoss) return CheckOutcome::kWrong;
  if (status.code() == ProbeCode::kUnimplemented && device_cc < RequiredComputeCapability(params)) {
    return CheckOutcome::kSkipped;
  }
  return CheckOutcome::kFailed;
}

int CheckExitCode(int wrong, int failed) { return wrong + failed > 0 ? 1 : 0; }

}  // namespace moetune::kernels
