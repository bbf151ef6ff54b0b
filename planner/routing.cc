#include "planner/routing.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace moetune::planner {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Standard normal CDF.
double Phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// Phi^-1(p) for p in [0.5, 1) by Newton's method on Phi from x = 0 (Phi is
// convex-concave around 0, so the iteration from 0 increases monotonically
// to the root for p >= 0.5; 40 steps bound it, ~6 suffice for 1e-12).
double InverseNormalUpper(double p) {
  double x = 0.0;
  for (int i = 0; i < 40; ++i) {
    const double density = std::exp(-0.5 * x * x) / std::sqrt(2.0 * kPi);
    const double step = (Phi(x) - p) / density;
    x -= step;
    if (std::abs(step) < 1e-12) break;
  }
  return x;
}

// erf^-1(y) for y in [0, 1) by Newton's method on erf from 0 (erf is
// concave on [0, inf), so the iteration from 0 rises monotonically).
double InverseErf(double y) {
  double x = 0.0;
  for (int i = 0; i < 40; ++i) {
    const double step = (std::erf(x) - y) / (2.0 / std::sqrt(kPi) * std::exp(-x * x));
    x -= step;
    if (std::abs(step) < 1e-12) break;
  }
  return x;
}

}  // namespace

std::string_view RoutingName(Routing routing) {
  switch (routing) {
    case Routing::kBalanced:
      return "balanced";
    case Routing::kNatural:
      return "natural";
  }
  return "?";
}

absl::StatusOr<Routing> ParseRouting(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(std::string(name));
  if (lower == "balanced") return Routing::kBalanced;
  if (lower == "natural") return Routing::kNatural;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown routing '", std::string(name), "' (expected balanced or natural)"));
}

double ExpertLoadCv(double gini) {
  if (!(gini > 0.0) || !(gini < 1.0)) return 0.0;
  const double sigma = 2.0 * InverseErf(gini);
  return std::sqrt(std::expm1(sigma * sigma));
}

namespace {
double BlomExpectedMax(int n) { return InverseNormalUpper((n - 0.375) / (n + 0.25)); }
// ExpectedMaxOfNormals for n < kBlomTableSize, computed on first use (the
// search asks for the same few EP sizes and group counts for every
// layout; each value is a Newton solve on erfc). Entries start as NaN;
// racing threads store the same value.
constexpr int kBlomTableSize = 4096;
std::array<std::atomic<double>, kBlomTableSize>& BlomTable() {
  static std::array<std::atomic<double>, kBlomTableSize>* table = [] {
    auto* t = new std::array<std::atomic<double>, kBlomTableSize>;
    for (std::atomic<double>& v : *t) v.store(std::nan(""), std::memory_order_relaxed);
    return t;
  }();
  return *table;
}
}  // namespace

double ExpectedMaxOfNormals(int n) {
  if (n <= 1) return 0.0;
  if (n >= kBlomTableSize) return BlomExpectedMax(n);
  std::atomic<double>& slot = BlomTable()[size_t(n)];
  double v = slot.load(std::memory_order_relaxed);
  if (std::isnan(v)) {
    v = BlomExpectedMax(n);
    slot.store(v, std::memory_order_relaxed);
  }
  return v;
}

double StdDevOfMaxOfNormals(int n) {
  if (n <= 1) return 1.0;
  return std::min(1.0, kPi / (std::sqrt(6.0) * std::sqrt(2.0 * std::log(double(n)))));
}

double NaturalRoutingImbalance(const RoutingShape& s, double expert_load_cv) {
  if (!(expert_load_cv > 0.0) || s.ep <= 1 || s.experts_per_rank < 1 || s.top_k < 1 ||
      !(s.tokens_per_rank > 0.0)) {
    return 1.0;
  }
  // The ranks' loads sum to the group's copies, so a rank's share has the
  // finite-population factor (1 - 1/ep) (binomial with p = 1/ep for the
  // sampling part; the same for the popularity part).
  const double copies = s.tokens_per_rank * s.top_k;
  const double cv_rank = std::sqrt((1.0 - 1.0 / s.ep) *
                                   (expert_load_cv * expert_load_cv / s.experts_per_rank +
                                    1.0 / copies));
  const double per_layer = ExpectedMaxOfNormals(s.ep);
  const double passes = std::max(1.0, s.layer_passes_per_step);
  const double groups =
      StdDevOfMaxOfNormals(s.ep) * ExpectedMaxOfNormals(s.ep_groups) / std::sqrt(passes);
  return 1.0 + cv_rank * (per_layer + groups);
}

}  // namespace moetune::planner
