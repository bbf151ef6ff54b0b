// gpu_check: builds with a plain nvcc command line (tools/gpu_check.sh) and
// runs every CUDA probe once on this machine's GPUs: each probe first checks
// its output against a CPU reference on fresh random inputs (outputs poisoned
// with NaN before the checked run), then times itself. Prints one table and
// exits 0 when every result was right, 1 on any wrong result or failed call,
// 2 when there is no usable GPU.
//
//   gpu_check [--quick] [--seed=N] [--json=results.jsonl] [--markdown=FILE]
// After the table it prints the run's headline figures (kernels/
// check_summary.h: grouped GEMM vs dense at equal FLOPs, dispatch/combine vs
// the all-to-all's bus bandwidth, de-dup saving, offload bandwidth, overlap
// slowdown); --markdown writes them, with the machine's identity, to FILE
// (docs/measurements/YYYY-MM-DD-<gpu>-<count>x.md).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "kernels/check_outcome.h"
#include "kernels/check_summary.h"
#include "kernels/cuda/cuda_probes.h"
#include "kernels/probe_result.h"
#include "kernels/probe_types.h"

namespace mk = moetune::kernels;

namespace {

struct Case {
  std::string title;
  mk::ProbeParams params;
  mk::GroupSpec group;
};

std::string Rate(const mk::Measurement& m) {
  char buf[64];
  if (m.tflops) {
    std::snprintf(buf, sizeof(buf), "%.1f TFLOPS", *m.tflops);
  } else if (m.bus_bw_gbps) {
    std::snprintf(buf, sizeof(buf), "%.1f GB/s (bus %.1f)", *m.alg_bw_gbps, *m.bus_bw_gbps);
  } else if (m.alg_bw_gbps) {
    std::snprintf(buf, sizeof(buf), "%.1f GB/s", *m.alg_bw_gbps);
  } else {
    return "-";
  }
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  uint64_t seed = std::random_device{}();
  std::string json_path, markdown_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a.rfind("--seed=", 0) == 0) {
      seed = std::strtoull(a.c_str() + 7, nullptr, 10);
    } else if (a.rfind("--json=", 0) == 0) {
      json_path = a.substr(7);
    } else if (a.rfind("--markdown=", 0) == 0) {
      markdown_path = a.substr(11);
    } else {
      std::fprintf(stderr, "usage: gpu_check [--quick] [--seed=N] [--json=FILE] [--markdown=FILE]\n");
      return 2;
    }
  }
  int devices = 0;
  const mk::ProbeStatus count = mk::cuda::CudaDeviceCount(&devices);
  if (!count.ok()) {
    std::fprintf(stderr, "gpu_check: no GPU to check on: %s\n", count.ToString().c_str());
    return 2;
  }
  int cc_major = 0, cc_minor = 0;
  cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&cc_minor, cudaDevAttrComputeCapabilityMinor, 0);
  const int device_cc = cc_major * 10 + cc_minor;
  int nccl_runtime = 0;
  ncclGetVersion(&nccl_runtime);
  std::printf("gpu_check: NCCL %d loaded (built against %d)\n", nccl_runtime, NCCL_VERSION_CODE);
  std::printf("gpu_check: %d device(s), compute capability %d.%d, seed %llu%s\n", devices, cc_major, cc_minor,
              static_cast<unsigned long long>(seed), quick ? ", quick" : "");

  mk::TimingOptions timing;
  timing.warmup_iters = quick ? 2 : 5;
  timing.timed_iters = quick ? 5 : 20;
  timing.seed = seed;
  const int64_t scale = quick ? 1 : 2;
  std::vector<Case> cases;

  // 1. Grouped GEMM: 8 experts (a DeepSeek-V3-like EP shard), ragged Zipf and
  //    balanced token counts, bf16 and fp16; fp8 balanced; mxfp8 with Zipf
  //    counts (ragged: exercises the 32-token padding of the weight
  //    gradient). mxfp8 answers Unimplemented (SKIPPED) below compute
  //    capability 10.0. Every GEMM is checked inside the probe against a
  //    double-precision GEMM on the values the GPU multiplies (for mxfp8: the
  //    MX-dequantized inputs of kernels/reference.h), element by element
  //    within u_out |exact| + 8 sqrt(K) 2^-24 sum |a b| (kernels/reference.h
  //    GemmTolerance; u_out = 2^-8 for bf16 outputs); quantization error is
  //    not part of it, since the reference uses the quantized values.
  for (mk::DType dt : {mk::DType::kBf16, mk::DType::kFp16, mk::DType::kFp8E4M3, mk::DType::kMxfp8}) {
    for (bool zipf : {false, true}) {
      if ((dt == mk::DType::kFp8E4M3 && zipf) || (dt == mk::DType::kMxfp8 && !zipf)) continue;
      mk::GroupedGemmParams g;
      g.num_experts = 8;
      g.total_tokens = 8192 * scale;
      g.hidden = 7168;
      g.ffn_hidden = 2048;
      g.distribution = zipf ? mk::TokenDistribution::Zipf(1.2) : mk::TokenDistribution::Balanced();
      g.dtype = dt;
      g.timing = timing;
      cases.push_back({"grouped_gemm " + std::string(mk::DTypeName(dt)) + " " + mk::ToString(g.distribution), g, {}});
    }
  }
  // Many small experts: where grouping should matter most.
  {
    mk::GroupedGemmParams g;
    g.num_experts = 64;
    g.total_tokens = 4096 * scale;
    g.hidden = 2048;
    g.ffn_hidden = 1408;
    g.distribution = mk::TokenDistribution::Zipf(1.0);
    g.timing = timing;
    cases.push_back({"grouped_gemm bf16 64 small experts", g, {}});
  }
  // 2. Dispatch/combine over all local GPUs (one process, ncclCommInitAll).
  mk::GroupSpec all;
  all.world_size = devices;
  for (mk::DispatchMode mode : {mk::DispatchMode::kPerExpert, mk::DispatchMode::kDedupRank, mk::DispatchMode::kDedupNode}) {
    if (mode == mk::DispatchMode::kDedupNode && devices < 2) continue;
    mk::DispatchCombineParams d;
    d.tokens_per_rank = 4096;
    d.hidden = 7168;
    d.top_k = 8;
    d.num_experts = 32 * devices;
    d.ep_size = devices;
    // dedup_node on one machine: its GPUs split into two "nodes" to exercise
    // the two-stage path (all links are NVLink here).
    d.ranks_per_node = mode == mk::DispatchMode::kDedupNode ? devices / 2 : 0;
    if (devices % 2 != 0 && mode == mk::DispatchMode::kDedupNode) continue;
    d.mode = mode;
    d.routing = mk::TokenDistribution::Zipf(1.0);
    d.timing = timing;
    mk::GroupSpec g = all;
    g.ranks_per_node = static_cast<int>(d.ranks_per_node);
    cases.push_back({"dispatch_combine " + std::string(mk::DispatchModeName(mode)), d, g});
  }
  // 3. Collectives sweep.
  for (mk::CollectiveOp op : {mk::CollectiveOp::kAllReduce, mk::CollectiveOp::kAllGather,
                              mk::CollectiveOp::kReduceScatter, mk::CollectiveOp::kAllToAll}) {
    mk::CollectiveParams c;
    c.op = op;
    c.group_size = devices;
    c.dtype = mk::DType::kBf16;
    c.sizes_bytes = quick ? std::vector<int64_t>{1 << 20, 64 << 20} : std::vector<int64_t>{1 << 20, 16 << 20, 256 << 20};
    for (int64_t& s : c.sizes_bytes) s = s / (2 * devices) * (2 * devices);
    c.timing = timing;
    cases.push_back({"collective " + std::string(mk::CollectiveOpName(op)), c, all});
  }
  // 4. Host offload.
  {
    mk::OffloadParams o;
    o.sizes_bytes = {256 << 20};
    o.pageable = true;
    o.gemm_m = o.gemm_n = o.gemm_k = 8192;
    o.timing = timing;
    cases.push_back({"offload", o, {}});
  }
  // 5. Overlap: GEMM + all-reduce on two streams.
  {
    mk::OverlapParams v;
    v.gemm_m = v.gemm_n = v.gemm_k = 8192;
    v.collective_bytes = int64_t{256 << 20} / (4 * devices) * (4 * devices);
    v.group_size = devices;
    v.timing = timing;
    cases.push_back({"overlap", v, all});
  }

  std::ofstream json;
  if (!json_path.empty()) json.open(json_path);
  int wrong = 0, failed = 0, skipped = 0;
  std::vector<mk::CheckedCase> checked;
  std::printf("\n%-16s %-34s %-52s %12s  %-28s %-6s %s\n", "probe", "measurement", "parameters", "median", "rate",
              "eff", "check");
  const auto t0 = std::chrono::steady_clock::now();
  for (const Case& c : cases) {
    mk::ProbeResult r;
    const mk::ProbeStatus s = mk::cuda::RunCudaProbe(c.params, c.group, &r);
    if (!s.ok()) {
      // Unimplemented is a skip only where the device lacks the capability
      // (kernels/check_outcome.h); a missing cuBLASLt algorithm on a device
      // that should run the case is a failure.
      const mk::CheckOutcome outcome = mk::ClassifyProbeStatus(s, c.params, device_cc);
      std::printf("%-16s %-34s %s: %s\n", c.title.substr(0, c.title.find(' ')).c_str(), c.title.c_str(),
                  mk::CheckOutcomeName(outcome), s.ToString().c_str());
      if (outcome == mk::CheckOutcome::kSkipped) {
        ++skipped;
      } else if (outcome == mk::CheckOutcome::kWrong) {
        ++wrong;
      } else {
        ++failed;
      }
      continue;
    }
    for (const mk::Measurement& m : r.measurements) {
      if (auto it = m.labels.find("unimplemented"); it != m.labels.end()) {
        // One implementation the library cannot run for this dtype.
        std::printf("%-16s %-34s UNIMPLEMENTED: %s\n", mk::ProbeKindName(r.kind), m.name.c_str(), it->second.c_str());
        ++skipped;
        continue;
      }
      std::string labels;
      for (const auto& [k, v] : m.labels) labels += (labels.empty() ? "" : " ") + k + "=" + v;
      char eff[16] = "-";
      if (m.efficiency_vs_reference) std::snprintf(eff, sizeof(eff), "%.2f", *m.efficiency_vs_reference);
      char err[32];
      std::snprintf(err, sizeof(err), "ok %.1e", m.max_rel_error);
      std::printf("%-16s %-34s %-52s %9.1f us  %-28s %-6s %s\n", mk::ProbeKindName(r.kind), m.name.c_str(),
                  labels.substr(0, 52).c_str(), m.summary.median_seconds * 1e6, Rate(m).c_str(), eff,
                  m.verified ? err : "timing only");
      for (const auto& [k, v] : m.values) {
        if (k == "hidden_fraction" || k == "gemm_slowdown") std::printf("%-16s   %s = %.3f\n", "", k.c_str(), v);
      }
    }
    if (json) json << mk::ToJson(r) << "\n";
    checked.push_back({c.title, r});
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("\ngpu_check: %zu cases in %.0f s: %d wrong, %d failed, %d skipped (case or implementation unimplemented here)\n", cases.size(),
              seconds, wrong, failed, skipped);
  const std::string summary = mk::CheckSummary(checked);
  std::printf("\n%s", summary.c_str());
  if (!markdown_path.empty()) {
    std::ofstream md(markdown_path);
    mk::ProbeResult first = checked.empty() ? mk::ProbeResult() : checked.front().result;
    md << "# gpu_check on " << devices << " x " << first.provenance.device_name << "\n\n"
       << "- compute capability " << cc_major << "." << cc_minor << ", driver " << first.provenance.driver_version
       << ", CUDA runtime " << first.provenance.cuda_runtime_version << ", cuBLAS " << first.provenance.cublas_version
       << ", NCCL " << first.provenance.nccl_version << "\n"
       << "- seed " << seed << (quick ? ", --quick" : "") << "; " << wrong << " wrong, " << failed << " failed, "
       << skipped << " skipped\n\n"
       << summary;
    if (!md) std::fprintf(stderr, "gpu_check: cannot write %s\n", markdown_path.c_str());
  }
  return mk::CheckExitCode(wrong, failed);
}
