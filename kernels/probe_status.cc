#include "kernels/probe_status.h"

namespace moetune::kernels {

const char* ProbeCodeName(ProbeCode code) {
  switch (code) {
    case ProbeCode::kOk: return "OK";
    case ProbeCode::kCancelled: return "CANCELLED";
    case ProbeCode::kUnknown: return "UNKNOWN";
    case ProbeCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case ProbeCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case ProbeCode::kNotFound: return "NOT_FOUND";
    case ProbeCode::kAlreadyExists: return "ALREADY_EXISTS";
    case ProbeCode::kPermissionDenied: return "PERMISSION_DENIED";
    case ProbeCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case ProbeCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case ProbeCode::kAborted: return "ABORTED";
    case ProbeCode::kOutOfRange: return "OUT_OF_RANGE";
    case ProbeCode::kUnimplemented: return "UNIMPLEMENTED";
    case ProbeCode::kInternal: return "INTERNAL";
    case ProbeCode::kUnavailable: return "UNAVAILABLE";
    case ProbeCode::kDataLoss: return "DATA_LOSS";
  }
  return "UNKNOWN";
}

std::string ProbeStatus::ToString() const {
  if (ok()) return "OK";
  return std::string(ProbeCodeName(code_)) + ": " + message_;
}

}  // namespace moetune::kernels
