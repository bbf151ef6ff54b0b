#include "kernels/check_summary.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "kernels/measurement_roles.h"

namespace moetune::kernels {
namespace {

std::string Fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, a);
  return buf;
}

// Rates: one decimal from 10 on, three significant digits below (CPU twins).
std::string Rate(double v) { return v >= 10 ? Fmt("%.1f", v) : Fmt("%.3g", v); }

std::string Row(const std::string& figure, const std::string& which, const std::string& value) {
  return "| " + figure + " | " + which + " | " + value + " |\n";
}

std::string Label(const Measurement& m, const char* key) {
  auto it = m.labels.find(key);
  return it == m.labels.end() ? "" : it->second;
}

double Value(const Measurement& m, const char* key) {
  auto it = m.values.find(key);
  return it == m.values.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

}  // namespace

std::string CheckSummary(const std::vector<CheckedCase>& cases) {
  std::string out = "| figure | case | value |\n|---|---|---|\n";
  // All-to-all bus bandwidth by size, the reference for dispatch.
  std::map<double, double> a2a_bus;
  for (const CheckedCase& c : cases) {
    if (c.result.kind != ProbeKind::kCollective) continue;
    for (const Measurement& m : c.result.measurements) {
      if (Label(m, roles::kLabelOp) == "all_to_all" && m.bus_bw_gbps) a2a_bus[m.bytes] = *m.bus_bw_gbps;
    }
  }
  std::map<std::string, const ProbeResult*> dispatch_by_mode;
  for (const CheckedCase& c : cases) {
    const ProbeResult& r = c.result;
    switch (r.kind) {
      case ProbeKind::kGroupedGemm: {
        const Measurement* dense = r.Find(roles::GroupedGemmName(roles::GemmPass::kFwd, roles::GemmImpl::kDenseRef));
        if (dense == nullptr) break;
        std::string v;
        for (roles::GemmImpl impl : {roles::GemmImpl::kGrouped, roles::GemmImpl::kLoop}) {
          const Measurement* m = r.Find(roles::GroupedGemmName(roles::GemmPass::kFwd, impl));
          if (m == nullptr) continue;
          v += std::string(v.empty() ? "" : ", ") + roles::Name(impl) + " " +
               (m->labels.count("unimplemented") ? std::string("unimplemented")
                : m->efficiency_vs_reference ? Fmt("%.2fx", *m->efficiency_vs_reference)
                                             : std::string("-"));
        }
        if (dense->tflops) v += " of dense (" + Rate(*dense->tflops) + " TFLOPS)";
        out += Row("grouped GEMM vs dense, equal FLOPs", c.title, v);
        break;
      }
      case ProbeKind::kDispatchCombine: {
        const Measurement* d = r.Find(roles::kDispatch);
        const Measurement* cb = r.Find(roles::kCombine);
        if (d == nullptr || cb == nullptr) break;
        std::string v = "dispatch " + Rate(d->alg_bw_gbps.value_or(0)) + " GB/s (bus " +
                        Rate(d->bus_bw_gbps.value_or(0)) + "), combine " + Rate(cb->alg_bw_gbps.value_or(0)) +
                        " GB/s (bus " + Rate(cb->bus_bw_gbps.value_or(0)) + ")";
        if (!a2a_bus.empty() && d->bus_bw_gbps) {
          auto best = a2a_bus.begin();
          for (auto it = a2a_bus.begin(); it != a2a_bus.end(); ++it) {
            if (std::fabs(std::log(it->first / d->bytes)) < std::fabs(std::log(best->first / d->bytes))) best = it;
          }
          if (best->second > 0) v += "; " + Fmt("%.2fx", *d->bus_bw_gbps / best->second) + " the all-to-all bus bandwidth";
        }
        out += Row("dispatch/combine", c.title, v);
        dispatch_by_mode[Label(*d, "mode")] = &r;
        break;
      }
      case ProbeKind::kOffload: {
        for (bool h2d : {true, false}) {
          const Measurement* best = nullptr;
          for (const Measurement& m : r.measurements) {
            const auto role = roles::ParseOffloadName(m.name);
            if (role && role->h2d == h2d && role->pinned && !role->under_gemm &&
                (best == nullptr || m.bytes > best->bytes)) {
              best = &m;
            }
          }
          if (best == nullptr) continue;
          std::string v = Rate(best->alg_bw_gbps.value_or(0)) + " GB/s";
          roles::OffloadRole under{h2d, true, static_cast<int64_t>(best->bytes), true};
          if (const Measurement* u = r.Find(roles::OffloadName(under)); u && u->efficiency_vs_reference) {
            v += ", under a GEMM " + Fmt("%.2fx", *u->efficiency_vs_reference) + " of alone";
          }
          out += Row(h2d ? "offload host->device, pinned" : "offload device->host, pinned",
                     c.title + " " + Fmt("%.0f MiB", best->bytes / (1 << 20)), v);
        }
        break;
      }
      case ProbeKind::kOverlap: {
        const Measurement* both = r.Find(roles::kBoth);
        if (both == nullptr) break;
        out += Row("overlap (GEMM + all-reduce)", c.title,
                   "GEMM slowdown " + Fmt("%.2fx", Value(*both, roles::kValueGemmSlowdown)) + ", hidden fraction " +
                       Fmt("%.2f", Value(*both, roles::kValueHiddenFraction)));
        break;
      }
      default:
        break;
    }
  }
  auto per = dispatch_by_mode.find("per_expert");
  auto dedup = dispatch_by_mode.find("dedup_rank");
  if (per != dispatch_by_mode.end() && dedup != dispatch_by_mode.end()) {
    const Measurement* a = per->second->Find(roles::kDispatch);
    const Measurement* b = dedup->second->Find(roles::kDispatch);
    const double rows_a = Value(*a, "rows_sent_remote"), rows_b = Value(*b, "rows_sent_remote");
    std::string v = "remote rows " + Fmt("%.0f", rows_b) + " vs " + Fmt("%.0f", rows_a) + " (" +
                    Fmt("%.0f%% fewer", rows_a > 0 ? 100 * (1 - rows_b / rows_a) : 0.0) + ")";
    if (a->PlannerSeconds() > 0 && b->PlannerSeconds() > 0) {
      v += ", dispatch time " + Fmt("%.2fx", b->PlannerSeconds() / a->PlannerSeconds()) + " of per_expert";
    }
    out += Row("de-dup saving", "dedup_rank vs per_expert", v);
  }
  return out;
}

}  // namespace moetune::kernels
