#include "server/campaign_planner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

struct Sizes {
  // Grouped GEMM.
  std::vector<int64_t> gemm_tokens;
  int64_t gemm_hidden, gemm_ffn;
  std::vector<int64_t> gemm_experts;
  // Collectives.
  std::vector<int64_t> collective_bytes;
  // Dispatch/combine.
  int64_t dispatch_tokens, dispatch_hidden, dispatch_top_k, experts_per_rank;
  // Offload and overlap.
  std::vector<int64_t> offload_bytes;
  int64_t gemm_mnk;
  int64_t overlap_bytes;
  int warmup, timed;
  v1::DType dtype;
};

// The smallest device memory among `agents` (0 when none reports one).
uint64_t SmallestDeviceMemory(const std::vector<const v1::AgentInfo*>& agents) {
  uint64_t smallest = 0;
  for (const v1::AgentInfo* a : agents) {
    for (const v1::DeviceInfo& d : a->devices()) {
      if (d.memory_bytes() > 0 && (smallest == 0 || d.memory_bytes() < smallest)) smallest = d.memory_bytes();
    }
  }
  return smallest;
}

// Probe sizes for the agents one probe runs on. QUICK: small sizes a CPU
// agent finishes in well under a second per probe. STANDARD: on CUDA
// agents, production sizes for GPU clusters, less whatever does not fit the
// smallest device's memory; with any CPU agent among them, host sizes (the
// production ones would take a CPU agent over ten minutes per campaign).
Sizes SizesFor(v1::CampaignProfile profile, const std::vector<const v1::AgentInfo*>& agents) {
  if (profile == v1::CAMPAIGN_PROFILE_QUICK) {
    return Sizes{{256, 1024}, 256, 256, {8}, {64 * kKiB, 1 * kMiB}, 256, 256, 2, 4,
                 {1 * kMiB, 4 * kMiB}, 256, 1 * kMiB, 1, 5, v1::DTYPE_BF16};
  }
  bool any_cpu = agents.empty();
  for (const v1::AgentInfo* a : agents) any_cpu = any_cpu || a->backend() != v1::BACKEND_CUDA;
  if (any_cpu) {
    // A few seconds per probe on a 2-core host; still several token counts
    // and sizes across the alpha-beta ranges, so every table gets a shape.
    return Sizes{{1024, 4096}, 1024, 512, {8}, {4 * kKiB, 256 * kKiB, 8 * kMiB}, 1024, 1024, 4, 4,
                 {8 * kMiB, 64 * kMiB}, 512, 16 * kMiB, 1, 5, v1::DTYPE_BF16};
  }
  // DeepSeek-V3-like expert shapes (hidden 7168, expert FFN 2048).
  Sizes s{{4096, 16384, 65536}, 7168, 2048, {8, 32},
          {1 * kMiB, 16 * kMiB, 256 * kMiB, 1024 * kMiB}, 4096, 7168, 8, 8,
          {16 * kMiB, 256 * kMiB}, 8192, 256 * kMiB, 3, 20, v1::DTYPE_BF16};
  const uint64_t memory = SmallestDeviceMemory(agents);
  if (memory == 0) return s;
  // Keep what fits in half the device: a grouped GEMM holds X, dX (T x K),
  // Y, dY (T x N) and, per expert, W and dW (K x N), bf16 (with the loop's
  // and the dense reference's outputs, under twice that); a collective its
  // input and output buffers; an offload copy its device buffer.
  const double budget = 0.5 * static_cast<double>(memory);
  const int64_t max_experts = *std::max_element(s.gemm_experts.begin(), s.gemm_experts.end());
  auto gemm_fits = [&](int64_t tokens) {
    const double bytes = 2.0 * (2.0 * tokens * (s.gemm_hidden + s.gemm_ffn) +
                                2.0 * max_experts * s.gemm_hidden * s.gemm_ffn);
    return 2 * bytes <= budget;
  };
  auto keep = [](std::vector<int64_t>* v, auto fits) {
    std::vector<int64_t> kept;
    for (int64_t x : *v) {
      if (fits(x)) kept.push_back(x);
    }
    if (kept.empty()) kept.push_back(v->front());  // the smallest, whatever the memory
    *v = kept;
  };
  keep(&s.gemm_tokens, gemm_fits);
  keep(&s.collective_bytes, [&](int64_t b) { return 2.0 * b <= budget; });
  keep(&s.offload_bytes, [&](int64_t b) { return static_cast<double>(b) <= budget; });
  return s;
}

// Collective sizes must split evenly over the group (all-to-all, all-gather
// and reduce-scatter cut the buffer into group_size chunks of whole
// elements): round each down to a multiple of group_size x 16 bytes (16 >=
// every element size).
void AddSizes(v1::CollectiveProbe* p, const std::vector<int64_t>& sizes, int group) {
  const int64_t quantum = 16 * static_cast<int64_t>(std::max(1, group));
  for (int64_t bytes : sizes) p->add_sizes_bytes(std::max(quantum, bytes / quantum * quantum));
}

// Group sizes 2, 4, 8, ... below n, then n itself (n >= 2).
std::vector<int> GroupSizes(int n) {
  std::vector<int> out;
  for (int g = 2; g < n; g *= 2) out.push_back(g);
  if (n >= 2) out.push_back(n);
  return out;
}

class Builder {
 public:
  Builder(std::string campaign_id, const Sizes& sizes)
      : campaign_id_(std::move(campaign_id)), sizes_(sizes) {}

  v1::ProbeTask& Add(v1::ProbeKind kind, const std::string& label) {
    v1::ProbeTask& t = tasks_.emplace_back();
    t.set_task_id(absl::StrFormat("%s/t%03d-%s", campaign_id_, tasks_.size(), label));
    t.set_campaign_id(campaign_id_);
    t.set_kind(kind);
    t.set_world_size(1);
    t.set_device_ordinal(-1);
    v1::TimingOptions* timing = t.mutable_timing();
    timing->set_warmup_iters(sizes_.warmup);
    timing->set_timed_iters(sizes_.timed);
    timing->set_verify(true);
    timing->set_seed(1);
    return t;
  }
  std::vector<v1::ProbeTask> Take() { return std::move(tasks_); }

 private:
  std::string campaign_id_;
  const Sizes& sizes_;
  std::vector<v1::ProbeTask> tasks_;
};

}  // namespace

absl::StatusOr<std::vector<v1::ProbeTask>> PlanCampaign(const std::string& campaign_id,
                                                        v1::CampaignProfile profile,
                                                        const std::vector<v1::AgentInfo>& agents) {
  if (agents.empty()) {
    return absl::FailedPreconditionError(
        "no live agents in the cluster: start moetune-agent on its nodes first");
  }
  std::vector<const v1::AgentInfo*> all;
  for (const v1::AgentInfo& a : agents) all.push_back(&a);
  // Cross-node probes: sizes every agent can run.
  const Sizes s = SizesFor(profile, all);
  Builder b(campaign_id, s);

  // Per device: grouped GEMM sweep and host offload, sized for the agent.
  for (const v1::AgentInfo& a : agents) {
    const Sizes mine = SizesFor(profile, {&a});
    const int devices = std::max(1, a.devices_size());
    for (int d = 0; d < devices; ++d) {
      for (int64_t experts : mine.gemm_experts) {
        for (int64_t tokens : mine.gemm_tokens) {
          for (bool skewed : {false, true}) {
            v1::ProbeTask& t = b.Add(v1::PROBE_KIND_GROUPED_GEMM, "grouped_gemm");
            t.mutable_timing()->set_warmup_iters(mine.warmup);
            t.mutable_timing()->set_timed_iters(mine.timed);
            t.set_pinned_agent_id(a.agent_id());
            t.set_device_ordinal(d);
            v1::GroupedGemmProbe* p = t.mutable_grouped_gemm();
            p->set_num_experts(experts);
            p->set_total_tokens(tokens);
            p->set_hidden(mine.gemm_hidden);
            p->set_ffn_hidden(mine.gemm_ffn);
            p->set_dtype(mine.dtype);
            p->set_forward(true);
            p->set_backward_data(true);
            p->set_backward_weight(true);
            if (skewed) {
              p->mutable_distribution()->set_kind(v1::TokenDistribution::KIND_ZIPF);
              p->mutable_distribution()->set_zipf_s(1.2);
            }
          }
        }
      }
      v1::ProbeTask& t = b.Add(v1::PROBE_KIND_OFFLOAD, "offload");
      t.mutable_timing()->set_warmup_iters(mine.warmup);
      t.mutable_timing()->set_timed_iters(mine.timed);
      t.set_pinned_agent_id(a.agent_id());
      t.set_device_ordinal(d);
      v1::OffloadProbe* p = t.mutable_offload();
      for (int64_t bytes : mine.offload_bytes) p->add_sizes_bytes(bytes);
      p->set_host_to_device(true);
      p->set_device_to_host(true);
      p->set_pinned(true);
      p->set_gemm_m(mine.gemm_mnk);
      p->set_gemm_n(mine.gemm_mnk);
      p->set_gemm_k(mine.gemm_mnk);
      p->set_under_gemm(true);
      p->set_gemm_dtype(mine.dtype);
    }
  }

  // Within a node: one agent drives its local GPUs as one group.
  for (const v1::AgentInfo& a : agents) {
    if (a.backend() != v1::BACKEND_CUDA || a.devices_size() < 2) continue;
    const Sizes mine = SizesFor(profile, {&a});
    for (int g = 2; g <= a.devices_size(); g *= 2) {
      for (v1::CollectiveOp op : {v1::COLLECTIVE_OP_ALL_REDUCE, v1::COLLECTIVE_OP_ALL_GATHER,
                                  v1::COLLECTIVE_OP_REDUCE_SCATTER, v1::COLLECTIVE_OP_ALL_TO_ALL}) {
        v1::ProbeTask& t = b.Add(v1::PROBE_KIND_COLLECTIVE, "collective");
        t.set_pinned_agent_id(a.agent_id());
        t.set_local_devices(g);
        t.set_span(v1::SPAN_INTRA_NODE);
        v1::CollectiveProbe* p = t.mutable_collective();
        p->set_op(op);
        p->set_dtype(mine.dtype);
        AddSizes(p, mine.collective_bytes, g);
      }
    }
  }

  // Across nodes: one rank per agent, any live agents of the cluster.
  const int n = static_cast<int>(agents.size());
  for (int g : GroupSizes(n)) {
    for (v1::CollectiveOp op : {v1::COLLECTIVE_OP_ALL_REDUCE, v1::COLLECTIVE_OP_ALL_TO_ALL}) {
      v1::ProbeTask& t = b.Add(v1::PROBE_KIND_COLLECTIVE, "collective");
      t.set_world_size(g);
      t.set_span(v1::SPAN_INTER_NODE);
      v1::CollectiveProbe* p = t.mutable_collective();
      p->set_op(op);
      p->set_dtype(s.dtype);
      AddSizes(p, s.collective_bytes, g);
    }
  }
  std::vector<int> ep_sizes;
  if (n >= 2) ep_sizes.push_back(n);
  if (n > 2) ep_sizes.push_back(2);
  for (int ep : ep_sizes) {
    for (v1::DispatchMode mode : {v1::DISPATCH_MODE_PER_EXPERT, v1::DISPATCH_MODE_DEDUP_RANK}) {
      v1::ProbeTask& t = b.Add(v1::PROBE_KIND_DISPATCH_COMBINE, "dispatch_combine");
      t.set_world_size(ep);
      t.set_span(v1::SPAN_INTER_NODE);
      v1::DispatchCombineProbe* p = t.mutable_dispatch_combine();
      p->set_tokens_per_rank(s.dispatch_tokens);
      p->set_hidden(s.dispatch_hidden);
      p->set_top_k(s.dispatch_top_k);
      p->set_num_experts(s.experts_per_rank * ep);
      p->set_ranks_per_node(1);
      p->set_mode(mode);
      p->set_dtype(s.dtype);
    }
  }
  if (n >= 2) {
    v1::ProbeTask& t = b.Add(v1::PROBE_KIND_OVERLAP, "overlap");
    t.set_world_size(2);
    t.set_span(v1::SPAN_INTER_NODE);
    v1::OverlapProbe* p = t.mutable_overlap();
    p->set_gemm_m(s.gemm_mnk);
    p->set_gemm_n(s.gemm_mnk);
    p->set_gemm_k(s.gemm_mnk);
    p->set_gemm_dtype(s.dtype);
    p->set_op(v1::COLLECTIVE_OP_ALL_REDUCE);
    p->set_collective_bytes(s.overlap_bytes / 32 * 32);  // group of 2 x 16 bytes
  }
  return b.Take();
}

}  // namespace moetune::server
