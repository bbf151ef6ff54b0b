// CPU twin of EP dispatch/combine: gather (permute) + Gloo alltoallv per plan
// stage, the stand-in expert (scale by the gate-weighted expert scales), and
// combine back through the stages with reduce lists. Payload is fp32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/cpu_probes_internal.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/dispatch_combine.h"
#include "kernels/cpu/gloo_group.h"
#include "kernels/cpu/gloo_ops.h"
#include "kernels/dispatch_plan.h"
#include "kernels/measurement_roles.h"
#include "kernels/group_agreement.h"

namespace moetune::kernels::cpu {
namespace {

// Tags: each exchange of a sample uses its own tag (stage-major), so that a
// late message of one exchange can never match another.
constexpr uint32_t kTagDispatch = 100;
constexpr uint32_t kTagCombine = 200;
constexpr uint32_t kTagBarrier = 300;
constexpr uint32_t kTagRouting = 400;

class DispatchCombineRunner {
 public:
  // `ctx` stays owned by the caller, who closes it (reset) on a failure.
  DispatchCombineRunner(const DispatchCombineParams& p, const std::shared_ptr<gloo::Context>& ctx,
                        DispatchPlan plan)
      : h_(p.hidden), ctx_(ctx), plan_(std::move(plan)) {
    const size_t n = plan_.stages.size();
    bufs_.resize(n + 1);
    for (size_t s = 0; s <= n; ++s) bufs_[s].resize(std::max<int64_t>(1, plan_.buffer_rows[s]) * h_);
    send_.resize(n);
    ret_.resize(n);
    for (size_t s = 0; s < n; ++s) {
      send_[s].resize(std::max<int64_t>(1, plan_.stages[s].RowsSent()) * h_);
      ret_[s].resize(send_[s].size());
    }
    cbufs_ = bufs_;
    expert_out_.resize(bufs_[n].size());
  }

  std::vector<float>& input() { return bufs_[0]; }
  std::vector<float>& output() { return cbufs_[0]; }

  ProbeStatus Dispatch() {
    for (size_t s = 0; s < plan_.stages.size(); ++s) {
      const ExchangeStage& st = plan_.stages[s];
      std::vector<int64_t> in_counts(st.send_rows.size()), out_counts(st.recv_counts.size());
      float* dst = send_.at(s).data();
      for (size_t d = 0; d < st.send_rows.size(); ++d) {
        for (int64_t row : st.send_rows[d]) {  // permute: gather rows per destination
          std::memcpy(dst, bufs_[s].data() + row * h_, h_ * sizeof(float));
          dst += h_;
        }
        in_counts[d] = static_cast<int64_t>(st.send_rows[d].size()) * h_;
      }
      for (size_t r = 0; r < st.recv_counts.size(); ++r) out_counts[r] = st.recv_counts[r] * h_;
      MOETUNE_PROBE_RETURN_IF_ERROR(GlooAlltoallv(ctx_, send_[s].data(), in_counts,
                                                  bufs_[s + 1].data(), out_counts,
                                                  kTagDispatch + static_cast<uint32_t>(s)));
    }
    return ProbeStatus::Ok();
  }

  // The stand-in experts: row * sum_j w_j * scale(e_j).
  void Experts() {
    const std::vector<float>& in = bufs_.back();
    for (size_t row = 0; row + 1 < plan_.expert_offsets.size(); ++row) {
      float f = 0;
      for (int64_t j = plan_.expert_offsets[row]; j < plan_.expert_offsets[row + 1]; ++j) {
        f += plan_.expert_weights[j] * ExpertScale(plan_.expert_ids[j]);
      }
      for (int64_t c = 0; c < h_; ++c) expert_out_[row * h_ + c] = in[row * h_ + c] * f;
    }
  }

  ProbeStatus Combine() {
    const size_t n = plan_.stages.size();
    for (size_t s = n; s-- > 0;) {
      const ExchangeStage& st = plan_.stages[s];
      const float* src = s + 1 == n ? expert_out_.data() : cbufs_[s + 1].data();
      std::vector<int64_t> in_counts(st.recv_counts.size()), out_counts(st.send_rows.size());
      for (size_t r = 0; r < st.recv_counts.size(); ++r) in_counts[r] = st.recv_counts[r] * h_;
      for (size_t d = 0; d < st.send_rows.size(); ++d) {
        out_counts[d] = static_cast<int64_t>(st.send_rows[d].size()) * h_;
      }
      MOETUNE_PROBE_RETURN_IF_ERROR(GlooAlltoallv(ctx_, src, in_counts, ret_[s].data(), out_counts,
                                                  kTagCombine + static_cast<uint32_t>(s)));
      // Un-permute and reduce: row i = sum of its returned copies.
      float* out = cbufs_[s].data();
      for (int64_t row = 0; row < plan_.buffer_rows[s]; ++row) {
        float* o = out + row * h_;
        std::fill(o, o + h_, 0.0f);
        for (int64_t j = st.reduce_offsets[row]; j < st.reduce_offsets[row + 1]; ++j) {
          const float* r = ret_[s].data() + st.reduce_positions[j] * h_;
          for (int64_t c = 0; c < h_; ++c) o[c] += r[c];
        }
      }
    }
    return ProbeStatus::Ok();
  }

  ProbeStatus Barrier() { return GlooBarrier(ctx_, kTagBarrier); }

 private:
  const int64_t h_;
  const std::shared_ptr<gloo::Context>& ctx_;
  DispatchPlan plan_;
  std::vector<std::vector<float>> bufs_, cbufs_, send_, ret_;
  std::vector<float> expert_out_;
};

// Each rank's own routing (MakeRouting), all-gathered: expert ids (exact in
// fp32 below 2^24) then weights, tokens_per_rank * top_k of each per rank.
ProbeStatus ExchangeRouting(const std::shared_ptr<gloo::Context>& ctx, const DispatchCombineParams& p, int rank,
                            std::vector<Routing>* routing) {
  const Routing mine = MakeRouting(p, rank);
  const size_t n = mine.experts.size();
  std::vector<float> send(2 * n), all(2 * n * static_cast<size_t>(p.ep_size));
  for (size_t i = 0; i < n; ++i) {
    send[i] = static_cast<float>(mine.experts[i]);
    send[n + i] = mine.weights[i];
  }
  MOETUNE_PROBE_RETURN_IF_ERROR(GlooAllgather(ctx, send.data(), all.data(), send.size(), kTagRouting));
  routing->assign(static_cast<size_t>(p.ep_size), mine);
  for (int64_t r = 0; r < p.ep_size; ++r) {
    const float* src = all.data() + r * 2 * n;
    Routing& dst = (*routing)[r];
    for (size_t i = 0; i < n; ++i) {
      dst.experts[i] = static_cast<int32_t>(src[i]);
      dst.weights[i] = src[n + i];
    }
  }
  return ProbeStatus::Ok();
}

}  // namespace

ProbeStatus RunDispatchCombineRoundTrip(const DispatchCombineParams& p, const GroupSpec& group,
                                        ProbeResult* result, std::vector<float>* combined) {
  MOETUNE_PROBE_RETURN_IF_ERROR(ValidateGroup(group, p.ep_size));
  // Every phase ends with all ranks agreeing on its outcome
  // (kernels/group_agreement.h); a rank that fails closes its Gloo context
  // first, so peers blocked in an exchange with it fail at once.
  GroupAgreement agree(group);
  std::shared_ptr<gloo::Context> ctx;
  MOETUNE_PROBE_RETURN_IF_ERROR(RunPhase(&agree, "connect", [&] {
    MOETUNE_PROBE_RETURN_IF_ERROR(agree.InjectedFailure("connect"));
    return ConnectGloo(group, &ctx);
  }, &ctx));

  // Routing: every rank draws its own from the seed, then the ranks exchange
  // them once (untimed) so that all plans are built from the same routing,
  // whatever each host's libm makes of the Zipf weights.
  std::vector<Routing> routing;
  MOETUNE_PROBE_RETURN_IF_ERROR(RunPhase(&agree, "routing", [&] {
    MOETUNE_PROBE_RETURN_IF_ERROR(agree.InjectedFailure("routing"));
    return ExchangeRouting(ctx, p, group.rank, &routing);
  }, &ctx));
  DispatchPlan plan = BuildDispatchPlan(p, group.rank, routing);
  const DispatchPlan plan_copy = plan;
  DispatchCombineRunner runner(p, ctx, std::move(plan));
  const std::vector<float> tokens = MakeTokens(p, group.rank);
  std::copy(tokens.begin(), tokens.end(), runner.input().begin());

  // Correctness: one round trip with a poisoned output must reproduce the
  // weighted sum of expert outputs for every token.
  double max_err = 0;
  if (p.timing.verify || combined != nullptr) {
    MOETUNE_PROBE_RETURN_IF_ERROR(RunPhase(&agree, "verify", [&]() -> ProbeStatus {
      MOETUNE_PROBE_RETURN_IF_ERROR(agree.InjectedFailure("verify"));
      MOETUNE_PROBE_RETURN_IF_ERROR(runner.Dispatch());
      runner.Experts();
      std::vector<float>& out = runner.output();
      std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
      MOETUNE_PROBE_RETURN_IF_ERROR(runner.Combine());
      const std::vector<double> expected = ExpectedCombine(p, routing[group.rank], tokens);
      for (size_t i = 0; i < expected.size(); ++i) {
        const double err = RelError(out[i], expected[i], std::fabs(expected[i]) + 1e-6);
        if (err > max_err) max_err = err;
        if (err > 1e-5) {
          return DataLoss("dispatch_combine (cpu, " + std::string(DispatchModeName(p.mode)) + ", rank " +
                          std::to_string(group.rank) + "): token " + std::to_string(i / p.hidden) +
                          " element " + std::to_string(i % p.hidden) + ": got " +
                          std::to_string(out[i]) + ", want " + std::to_string(expected[i]));
        }
      }
      if (combined != nullptr) combined->assign(out.begin(), out.begin() + expected.size());
      return ProbeStatus::Ok();
    }, &ctx));
  }

  const int64_t row_bytes = p.hidden * static_cast<int64_t>(sizeof(float));
  int64_t rows_sent = 0, rows_remote = 0, rows_in = 0;
  for (const ExchangeStage& st : plan_copy.stages) {
    rows_sent += st.RowsSent();
    rows_remote += st.RowsSentRemote(group.rank);
    rows_in += st.RowsReceived();
  }
  auto labels = [&](const char* phase) {
    return std::map<std::string, std::string>{
        {"phase", phase},
        {"mode", DispatchModeName(p.mode)},
        {"dtype", DTypeName(p.dtype)},
        {"payload", "fp32"},
        {"ep_size", std::to_string(p.ep_size)},
        {"rank", std::to_string(group.rank)}};
  };
  auto barrier = [&] { return runner.Barrier(); };

  Measurement dispatch;
  dispatch.name = roles::kDispatch;
  dispatch.labels = labels("dispatch");
  MOETUNE_PROBE_RETURN_IF_ERROR(RunPhase(&agree, "time/dispatch", [&] {
    MOETUNE_PROBE_RETURN_IF_ERROR(agree.InjectedFailure("time/dispatch"));
    return TimeSamples(p.timing, barrier, [&] { return runner.Dispatch(); }, &dispatch.samples_seconds);
  }, &ctx));
  runner.Experts();
  Measurement combine;
  combine.name = roles::kCombine;
  combine.labels = labels("combine");
  MOETUNE_PROBE_RETURN_IF_ERROR(RunPhase(&agree, "time/combine", [&] {
    MOETUNE_PROBE_RETURN_IF_ERROR(agree.InjectedFailure("time/combine"));
    return TimeSamples(p.timing, barrier, [&] { return runner.Combine(); }, &combine.samples_seconds);
  }, &ctx));

  for (Measurement* m : {&dispatch, &combine}) {
    // alg_bw: every row this rank moves (self copies included), nccl-tests
    // style; bus_bw: only the rows that leave the rank.
    m->bytes = static_cast<double>(rows_sent * row_bytes);
    m->bus_factor = rows_sent > 0 ? static_cast<double>(rows_remote) / rows_sent : 0;
    m->values = {{"rows_sent", static_cast<double>(rows_sent)},
                 {"rows_sent_remote", static_cast<double>(rows_remote)},
                 {"rows_received", static_cast<double>(rows_in)},
                 {"stages", static_cast<double>(plan_copy.stages.size())}};
    m->verified = p.timing.verify;
    m->max_rel_error = max_err;
    m->Finalize();
    result->measurements.push_back(*m);
  }
  return ProbeStatus::Ok();
}

ProbeStatus RunDispatchCombine(const DispatchCombineParams& p, const GroupSpec& group,
                               ProbeResult* result) {
  return RunDispatchCombineRoundTrip(p, group, result, nullptr);
}

}  // namespace moetune::kernels::cpu
