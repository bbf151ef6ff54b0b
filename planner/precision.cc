#include "planner/precision.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "planner/internal/strings.h"

namespace moetune::planner {

std::string_view PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp8:
      return "fp8";
    case Precision::kMxfp8:
      return "mxfp8";
    case Precision::kNvfp4:
      return "nvfp4";
  }
  return "unknown";
}

absl::StatusOr<Precision> ParsePrecision(std::string_view name) {
  const std::string lower = internal::Lower(name);
  for (Precision p : {Precision::kBf16, Precision::kFp8, Precision::kMxfp8,
                      Precision::kNvfp4}) {
    if (lower == PrecisionName(p)) return p;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown precision '", internal::Sv(name),
                   "' (expected one of bf16, fp8, mxfp8, nvfp4)"));
}

double GemmOperandBytes(Precision precision) {
  switch (precision) {
    case Precision::kBf16:
      return 2.0;
    case Precision::kFp8:
      return 1.0;
    case Precision::kMxfp8:
      return 1.0 + 1.0 / 32.0;
    case Precision::kNvfp4:
      return 0.5 + 1.0 / 16.0;
  }
  return 2.0;
}

bool TpCommOverlapSupports(Precision precision) {
  return precision != Precision::kNvfp4;
}

}  // namespace moetune::planner
