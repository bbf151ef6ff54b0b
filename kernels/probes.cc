#include "kernels/probes.h"

#include "kernels/cpu/cpu_probes.h"
#include "kernels/cuda/cuda_probes.h"

namespace moetune::kernels {

const char* BackendName(Backend b) { return b == Backend::kCuda ? "cuda" : "cpu"; }

absl::StatusOr<Backend> ParseBackend(const std::string& name) {
  if (name == "cpu") return Backend::kCpu;
  if (name == "cuda") return Backend::kCuda;
  return absl::InvalidArgumentError("unknown backend '" + name + "' (expected cpu or cuda)");
}

absl::Status ToAbslStatus(const ProbeStatus& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(static_cast<int>(s.code())), s.message());
}

absl::StatusOr<ProbeResult> RunProbe(const ProbeRequest& request) {
  // Parameter errors come first and are the same on every backend.
  ProbeStatus s = Validate(request.params, TimingOf(request.params).memory_budget_bytes);
  if (!s.ok()) return ToAbslStatus(s);
  ProbeResult result;
  switch (request.backend) {
    case Backend::kCpu:
      s = cpu::RunCpuProbe(request.params, request.group, &result);
      break;
    case Backend::kCuda:
      s = cuda::RunCudaProbe(request.params, request.group, &result);
      break;
  }
  if (!s.ok()) return ToAbslStatus(s);
  return result;
}

}  // namespace moetune::kernels
