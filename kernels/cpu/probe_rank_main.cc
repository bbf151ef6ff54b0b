// probe_rank: runs one rank of a CPU probe in this process and prints the
// result as JSON on stdout (status on stderr, exit 1 on failure).
//
//   probe_rank --probe=dispatch_combine --rank=0 --world=4 --store_dir=/tmp/s
//              [--prefix=run1] [--ranks_per_node=2] [--mode=dedup_node]
//              [--tokens=256] [--hidden=64] [--experts=8] [--top_k=2]
//              [--zipf=1.0] [--max_nodes=0] [--out=combined.f32]
//   probe_rank --probe=collective --op=all_gather --sizes=4096,1048576 ...
//   probe_rank --probe=overlap --collective_bytes=1048576 --gemm=256 ...
//   Common: --warmup=2 --iters=10 --timeout_ms=60000
//   Testing: --inject_failure=PHASE makes this rank fail at the start of that
//   phase (GroupSpec::inject_failure_at_phase, kernels/group_agreement.h).
// Start one process per rank with the same flags except --rank; all share
// --store_dir (a FileRendezvousStore) and --prefix.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "kernels/cpu/cpu_probes.h"
#include "kernels/cpu/dispatch_combine.h"
#include "kernels/rendezvous.h"

namespace mk = moetune::kernels;

namespace {

int Usage(const std::string& why) {
  std::fprintf(stderr, "probe_rank: %s\nsee the comment at the top of kernels/cpu/probe_rank_main.cc\n",
               why.c_str());
  return 2;
}

bool ParseInt(const std::string& s, int64_t* out) {
  char* end = nullptr;
  *out = std::strtoll(s.c_str(), &end, 10);
  return end != s.c_str() && *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || a.find('=') == std::string::npos) return Usage("bad argument " + a);
    flags[a.substr(2, a.find('=') - 2)] = a.substr(a.find('=') + 1);
  }
  auto get = [&](const std::string& k, const std::string& def) {
    auto it = flags.find(k);
    return it == flags.end() ? def : it->second;
  };
  // Integer flags and their defaults.
  const std::pair<const char*, const char*> kIntFlags[] = {
      {"rank", "0"},         {"world", "1"},      {"ranks_per_node", "0"}, {"tokens", "256"},
      {"hidden", "64"},      {"experts", "8"},    {"top_k", "2"},          {"max_nodes", "0"},
      {"warmup", "2"},       {"iters", "10"},     {"timeout_ms", "60000"}, {"collective_bytes", "1048576"},
      {"gemm", "256"}};
  std::map<std::string, int64_t> ints;
  for (const auto& [name, def] : kIntFlags) {
    if (!ParseInt(get(name, def), &ints[name])) return Usage(std::string("--") + name + " is not an integer");
  }
  mk::TimingOptions timing;
  timing.warmup_iters = static_cast<int>(ints["warmup"]);
  timing.timed_iters = static_cast<int>(ints["iters"]);

  mk::GroupSpec group;
  group.rank = static_cast<int>(ints["rank"]);
  group.world_size = static_cast<int>(ints["world"]);
  group.ranks_per_node = static_cast<int>(ints["ranks_per_node"]);
  group.key_prefix = get("prefix", "probe");
  group.timeout = std::chrono::milliseconds(ints["timeout_ms"]);
  if (flags.count("store_dir")) group.store = mk::MakeFileRendezvousStore(flags["store_dir"]);
  group.inject_failure_at_phase = get("inject_failure", "");

  const std::string probe = get("probe", "");
  mk::ProbeResult result;
  mk::ProbeStatus status;
  if (probe == "dispatch_combine") {
    mk::DispatchCombineParams p;
    p.tokens_per_rank = ints["tokens"];
    p.hidden = ints["hidden"];
    p.num_experts = ints["experts"];
    p.top_k = ints["top_k"];
    p.ep_size = group.world_size;
    p.ranks_per_node = group.ranks_per_node;
    p.max_nodes_per_token = ints["max_nodes"];
    if (flags.count("zipf")) p.routing = mk::TokenDistribution::Zipf(std::atof(flags["zipf"].c_str()));
    const std::string mode = get("mode", "dedup_rank");
    if (mode == "per_expert") {
      p.mode = mk::DispatchMode::kPerExpert;
    } else if (mode == "dedup_rank") {
      p.mode = mk::DispatchMode::kDedupRank;
    } else if (mode == "dedup_node") {
      p.mode = mk::DispatchMode::kDedupNode;
    } else {
      return Usage("unknown --mode " + mode);
    }
    p.timing = timing;
    status = mk::Validate(p, 0);
    std::vector<float> combined;
    if (status.ok()) {
      result.kind = mk::ProbeKind::kDispatchCombine;
      result.params_json = mk::ParamsToJson(p);
      status = mk::cpu::RunDispatchCombineRoundTrip(p, group, &result, &combined);
    }
    if (status.ok() && flags.count("out")) {
      std::ofstream out(flags["out"], std::ios::binary);
      out.write(reinterpret_cast<const char*>(combined.data()),
                static_cast<std::streamsize>(combined.size() * sizeof(float)));
      if (!out) status = mk::Internal("cannot write " + flags["out"]);
    }
  } else if (probe == "collective") {
    mk::CollectiveParams p;
    const std::string op = get("op", "all_reduce");
    if (op == "all_reduce") {
      p.op = mk::CollectiveOp::kAllReduce;
    } else if (op == "all_gather") {
      p.op = mk::CollectiveOp::kAllGather;
    } else if (op == "reduce_scatter") {
      p.op = mk::CollectiveOp::kReduceScatter;
    } else if (op == "all_to_all") {
      p.op = mk::CollectiveOp::kAllToAll;
    } else {
      return Usage("unknown --op " + op);
    }
    p.sizes_bytes.clear();
    std::stringstream ss(get("sizes", "1048576"));
    std::string item;
    while (std::getline(ss, item, ',')) {
      int64_t v;
      if (!ParseInt(item, &v)) return Usage("--sizes: " + item + " is not an integer");
      p.sizes_bytes.push_back(v);
    }
    p.group_size = group.world_size;
    p.span = group.ranks_per_node > 0 && group.ranks_per_node < group.world_size ? mk::Span::kInterNode
                                                                                  : mk::Span::kIntraNode;
    p.timing = timing;
    status = mk::cpu::RunCpuProbe(p, group, &result);
  } else if (probe == "overlap") {
    mk::OverlapParams p;
    p.gemm_m = p.gemm_n = p.gemm_k = ints["gemm"];
    p.collective_bytes = ints["collective_bytes"];
    p.group_size = group.world_size;
    p.timing = timing;
    status = mk::cpu::RunCpuProbe(p, group, &result);
  } else {
    return Usage("unknown --probe '" + probe + "'");
  }
  if (!status.ok()) {
    std::fprintf(stderr, "probe_rank %d: %s\n", group.rank, status.ToString().c_str());
    return 1;
  }
  std::printf("%s\n", mk::ToJson(result).c_str());
  std::fprintf(stderr, "%s", mk::ToTable(result).c_str());
  return 0;
}
