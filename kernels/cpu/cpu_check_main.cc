// cpu_check: runs every CPU twin once on this machine, the multi-rank ones as
// threads with separate Gloo contexts over TCP on 127.0.0.1 (an in-memory
// rendezvous store), and prints the same table as tools/gpu_check.sh. Each
// probe checks its values before timing; exit 1 on any error.
//
//   bazel run //kernels/cpu:cpu_check [-- --quick]
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "kernels/check_summary.h"
#include "kernels/cpu/cpu_probes.h"
#include "kernels/probe_result.h"
#include "kernels/rendezvous.h"

namespace mk = moetune::kernels;

namespace {

// Runs `params` on `ranks` threads; returns rank 0's result.
mk::ProbeStatus RunRanks(const mk::ProbeParams& params, int ranks, const std::string& prefix, mk::ProbeResult* out) {
  auto store = mk::MakeInMemoryRendezvousStore();
  std::vector<mk::ProbeStatus> status(ranks);
  std::vector<mk::ProbeResult> results(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      mk::GroupSpec g;
      g.rank = r;
      g.world_size = ranks;
      g.store = store;
      g.key_prefix = prefix;
      if (const auto* d = std::get_if<mk::DispatchCombineParams>(&params)) {
        g.ranks_per_node = static_cast<int>(d->ranks_per_node);
      }
      status[r] = mk::cpu::RunCpuProbe(params, g, &results[r]);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) {
    if (!status[r].ok()) return status[r];
  }
  *out = results[0];
  return mk::ProbeStatus::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  mk::TimingOptions timing;
  timing.warmup_iters = 2;
  timing.timed_iters = quick ? 3 : 10;
  struct Case {
    std::string title;
    mk::ProbeParams params;
    int ranks;
  };
  std::vector<Case> cases;
  for (bool zipf : {false, true}) {
    mk::GroupedGemmParams g;
    g.num_experts = 8;
    g.total_tokens = quick ? 1024 : 4096;
    g.hidden = 1024;
    g.ffn_hidden = 512;
    g.distribution = zipf ? mk::TokenDistribution::Zipf(1.2) : mk::TokenDistribution::Balanced();
    g.timing = timing;
    cases.push_back({"grouped_gemm " + mk::ToString(g.distribution), g, 1});
  }
  {
    mk::GroupedGemmParams g;  // many small experts
    g.num_experts = 64;
    g.total_tokens = quick ? 1024 : 4096;
    g.hidden = 512;
    g.ffn_hidden = 256;
    g.distribution = mk::TokenDistribution::Zipf(1.0);
    g.backward_data = g.backward_weight = false;
    g.timing = timing;
    cases.push_back({"grouped_gemm 64 small experts", g, 1});
  }
  for (mk::DispatchMode mode : {mk::DispatchMode::kPerExpert, mk::DispatchMode::kDedupRank, mk::DispatchMode::kDedupNode}) {
    mk::DispatchCombineParams d;
    d.tokens_per_rank = quick ? 256 : 1024;
    d.hidden = 1024;
    d.top_k = 4;
    d.num_experts = 16;
    d.ep_size = 4;
    d.ranks_per_node = mode == mk::DispatchMode::kDedupNode ? 2 : 0;
    d.mode = mode;
    d.routing = mk::TokenDistribution::Zipf(1.0);
    d.timing = timing;
    cases.push_back({"dispatch_combine " + std::string(mk::DispatchModeName(mode)), d, 4});
  }
  for (mk::CollectiveOp op : {mk::CollectiveOp::kAllReduce, mk::CollectiveOp::kAllGather,
                              mk::CollectiveOp::kReduceScatter, mk::CollectiveOp::kAllToAll}) {
    mk::CollectiveParams c;
    c.op = op;
    c.group_size = 4;
    c.sizes_bytes = {1 << 16, 1 << 20, quick ? 4 << 20 : 16 << 20};
    c.timing = timing;
    cases.push_back({"collective", c, 4});
  }
  {
    mk::OffloadParams o;
    o.sizes_bytes = {4 << 20};  // within the usual 8 MiB RLIMIT_MEMLOCK
    o.pageable = true;
    o.gemm_m = o.gemm_n = o.gemm_k = 512;
    o.timing = timing;
    cases.push_back({"offload", o, 1});
  }
  {
    mk::OverlapParams v;
    v.gemm_m = v.gemm_n = v.gemm_k = quick ? 256 : 512;
    v.collective_bytes = 4 << 20;
    v.group_size = 2;
    v.timing = timing;
    cases.push_back({"overlap", v, 2});
  }
  int errors = 0;
  std::vector<mk::CheckedCase> checked;
  for (size_t i = 0; i < cases.size(); ++i) {
    mk::ProbeResult r;
    const mk::ProbeStatus s = RunRanks(cases[i].params, cases[i].ranks, "case" + std::to_string(i), &r);
    if (!s.ok()) {
      std::printf("%-16s %s: %s\n", cases[i].title.c_str(), "FAILED", s.ToString().c_str());
      ++errors;
      continue;
    }
    std::printf("%s", mk::ToTable(r).c_str());
    checked.push_back({cases[i].title, r});
    for (const auto& m : r.measurements) {
      for (const auto& [k, v] : m.values) {
        if (k == "hidden_fraction" || k == "gemm_slowdown") std::printf("%-16s   %s = %.3f\n", "", k.c_str(), v);
      }
    }
    if (i == 0) {
      std::printf("  (provenance: %s, %s, BLAS %s)\n", r.provenance.host.c_str(), r.provenance.device_name.c_str(),
                  r.provenance.blas_version.c_str());
    }
  }
  // The headline figures (kernels/check_summary.h), as gpu_check prints them.
  std::printf("\n%s", mk::CheckSummary(checked).c_str());
  return errors == 0 ? 0 : 1;
}
