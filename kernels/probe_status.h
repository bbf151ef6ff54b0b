// ProbeStatus: the std-only status type of the leaf probe code (kernels/cpu,
// kernels/cuda). It mirrors absl::StatusCode values one to one so that the
// facade (kernels/probes.h) converts it without a table; the leaf code itself
// must build with a plain nvcc command line, hence no Abseil here.
#pragma once

#include <ostream>
#include <string>
#include <utility>

namespace moetune::kernels {

// Same numeric values as absl::StatusCode. Chosen by what the caller does next:
// kInvalidArgument: fix the probe parameters (message names the value);
// kUnavailable: retry later / elsewhere (no device, peer unreachable, timeout);
// kFailedPrecondition: fix the state first (e.g. rendezvous store missing);
// kUnimplemented: this backend/hardware cannot run the probe;
// kDataLoss: a probe produced wrong values (correctness check failed);
// kInternal: a library call failed unexpectedly (message names the call).
enum class ProbeCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

const char* ProbeCodeName(ProbeCode code);

class ProbeStatus {
 public:
  ProbeStatus() = default;
  ProbeStatus(ProbeCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static ProbeStatus Ok() { return ProbeStatus(); }

  bool ok() const { return code_ == ProbeCode::kOk; }
  ProbeCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: num_experts must be > 0, got 0".
  std::string ToString() const;
  // Prints ToString() (also how gtest prints a ProbeStatus).
  friend std::ostream& operator<<(std::ostream& os, const ProbeStatus& s) {
    return os << s.ToString();
  }

 private:
  ProbeCode code_ = ProbeCode::kOk;
  std::string message_;
};

inline ProbeStatus InvalidArgument(std::string m) {
  return ProbeStatus(ProbeCode::kInvalidArgument, std::move(m));
}
inline ProbeStatus Unavailable(std::string m) {
  return ProbeStatus(ProbeCode::kUnavailable, std::move(m));
}
inline ProbeStatus Unimplemented(std::string m) {
  return ProbeStatus(ProbeCode::kUnimplemented, std::move(m));
}
inline ProbeStatus Internal(std::string m) {
  return ProbeStatus(ProbeCode::kInternal, std::move(m));
}
inline ProbeStatus FailedPrecondition(std::string m) {
  return ProbeStatus(ProbeCode::kFailedPrecondition, std::move(m));
}
inline ProbeStatus DeadlineExceeded(std::string m) {
  return ProbeStatus(ProbeCode::kDeadlineExceeded, std::move(m));
}
inline ProbeStatus ResourceExhausted(std::string m) {
  return ProbeStatus(ProbeCode::kResourceExhausted, std::move(m));
}
inline ProbeStatus DataLoss(std::string m) {
  return ProbeStatus(ProbeCode::kDataLoss, std::move(m));
}
inline ProbeStatus Aborted(std::string m) {
  return ProbeStatus(ProbeCode::kAborted, std::move(m));
}

}  // namespace moetune::kernels

// Returns early from the enclosing function when `expr` is not ok.
#define MOETUNE_PROBE_RETURN_IF_ERROR(expr)                  \
  do {                                                       \
    ::moetune::kernels::ProbeStatus _probe_status = (expr);  \
    if (!_probe_status.ok()) return _probe_status;           \
  } while (false)
