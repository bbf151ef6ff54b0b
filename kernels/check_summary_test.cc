#include "kernels/check_summary.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/measurement_roles.h"

namespace moetune::kernels {
namespace {

using ::testing::HasSubstr;

Measurement Timed(const std::string& name, double seconds, double flops, double bytes, double bus_factor) {
  Measurement m;
  m.name = name;
  m.samples_seconds = {seconds};
  m.flops = flops;
  m.bytes = bytes;
  m.bus_factor = bus_factor;
  m.Finalize();
  return m;
}

TEST(CheckSummary, HeadlineFiguresOfARun) {
  std::vector<CheckedCase> cases;
  {  // 1.2 TFLOP: dense 2 ms (600 TFLOPS), grouped 2.5 ms, loop 4 ms.
    ProbeResult r;
    r.kind = ProbeKind::kGroupedGemm;
    r.measurements.push_back(Timed("fwd/dense_ref", 2e-3, 1.2e12, 0, 0));
    r.measurements.push_back(Timed("fwd/grouped", 2.5e-3, 1.2e12, 0, 0));
    r.measurements.back().efficiency_vs_reference = 0.8;
    r.measurements.push_back(Timed("fwd/loop", 4e-3, 1.2e12, 0, 0));
    r.measurements.back().efficiency_vs_reference = 0.5;
    cases.push_back({"grouped_gemm bf16 balanced", r});
  }
  {  // all-to-all, 8 ranks (bus factor 7/8): 64 MB in 0.2 ms -> 320 GB/s, bus 280.
    ProbeResult r;
    r.kind = ProbeKind::kCollective;
    for (auto [bytes, s] : {std::pair<double, double>{1e6, 2e-5}, {64e6, 2e-4}}) {
      r.measurements.push_back(Timed("all_to_all/x", s, 0, bytes, 0.875));
      r.measurements.back().labels[roles::kLabelOp] = "all_to_all";
    }
    cases.push_back({"collective all_to_all", r});
  }
  for (auto [mode, seconds, rows] : {std::tuple<const char*, double, double>{"per_expert", 2e-3, 3000},
                                     {"dedup_rank", 1.2e-3, 1500}}) {
    // 60 MB, half of it remote: per_expert 30 GB/s (bus 15).
    ProbeResult r;
    r.kind = ProbeKind::kDispatchCombine;
    r.measurements.push_back(Timed("dispatch", seconds, 0, 60e6, 0.5));
    r.measurements.back().labels["mode"] = mode;
    r.measurements.back().values["rows_sent_remote"] = rows;
    r.measurements.push_back(Timed("combine", 2 * seconds, 0, 60e6, 0.5));
    cases.push_back({std::string("dispatch_combine ") + mode, r});
  }
  {  // 256 MiB at 50 GB/s; under a GEMM 0.9x.
    ProbeResult r;
    r.kind = ProbeKind::kOffload;
    const double b = 256.0 * (1 << 20);
    r.measurements.push_back(Timed("h2d/pinned/268435456", b / 50e9, 0, b, 0));
    r.measurements.push_back(Timed("h2d/pinned/268435456/under_gemm", b / 45e9, 0, b, 0));
    r.measurements.back().efficiency_vs_reference = 0.9;
    cases.push_back({"offload", r});
  }
  {
    ProbeResult r;
    r.kind = ProbeKind::kOverlap;
    Measurement both = Timed("both", 1e-3, 0, 0, 0);
    both.values[roles::kValueGemmSlowdown] = 1.18;
    both.values[roles::kValueHiddenFraction] = 0.72;
    r.measurements.push_back(both);
    cases.push_back({"overlap", r});
  }
  const std::string t = CheckSummary(cases);
  EXPECT_THAT(t, HasSubstr("| grouped GEMM vs dense, equal FLOPs | grouped_gemm bf16 balanced | grouped 0.80x, "
                           "loop 0.50x of dense (600.0 TFLOPS) |"));
  // Dispatch bus 15 GB/s against the all-to-all's 280 GB/s at the nearest size (64 MB).
  EXPECT_THAT(t, HasSubstr("| dispatch/combine | dispatch_combine per_expert | dispatch 30.0 GB/s (bus 15.0), "
                           "combine 15.0 GB/s (bus 7.5); 0.05x the all-to-all bus bandwidth |"));
  EXPECT_THAT(t, HasSubstr("| de-dup saving | dedup_rank vs per_expert | remote rows 1500 vs 3000 (50% fewer), "
                           "dispatch time 0.60x of per_expert |"));
  EXPECT_THAT(t, HasSubstr("| offload host->device, pinned | offload 256 MiB | 50.0 GB/s, under a GEMM 0.90x of alone |"));
  EXPECT_THAT(t, HasSubstr("| overlap (GEMM + all-reduce) | overlap | GEMM slowdown 1.18x, hidden fraction 0.72 |"));
}

}  // namespace
}  // namespace moetune::kernels
