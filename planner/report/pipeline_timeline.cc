#include "planner/report/pipeline_timeline.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "planner/training_config.h"

namespace moetune::planner {
namespace {

// Backward / forward compute time: input and weight gradients (2 GEMMs per
// forward GEMM); LoRA keeps the base weights frozen, so input gradients only.
constexpr double kBackwardOverForwardPretrain = 2.0;
constexpr double kBackwardOverForwardLora = 1.0;

struct VirtualOp {
  int chunk = 0;
  int micro_batch = 0;
};

// Megatron-LM's order of (chunk, micro-batch) for a rank's forward passes:
// micro-batches in groups of pp; within a group, every chunk in turn (chunk
// 0 first), each over the group's micro-batches. Backward passes take the
// same order with chunks reversed. With vp == 1 this is micro-batch order.
std::vector<VirtualOp> VirtualOrder(int pp, int vp, int m, bool backward) {
  std::vector<VirtualOp> order;
  order.reserve(static_cast<size_t>(m) * vp);
  for (int first = 0; first < m; first += pp) {
    const int last = std::min(m, first + pp);
    for (int c = 0; c < vp; ++c) {
      for (int mb = first; mb < last; ++mb) {
        order.push_back({backward ? vp - 1 - c : c, mb});
      }
    }
  }
  return order;
}

}  // namespace

PipelineScheduleSpec DeriveScheduleSpec(const Prediction& p) {
  PipelineScheduleSpec spec;
  spec.pp = std::max(1, p.parallel.pp);
  spec.vp = spec.pp > 1 ? std::max(1, p.parallel.vp) : 1;
  spec.micro_batches = std::max(1, NumMicroBatches(p.shape, p.parallel));
  double compute = 0, recompute = 0, exposed_inlayer = 0, hidden_inlayer = 0;
  double pp_comm = 0, tail = 0, optimizer = 0;
  for (const Term& t : p.breakdown) {
    switch (t.kind) {
      case TermKind::kComputeAttention:
      case TermKind::kComputeDenseGemm:
      case TermKind::kComputeGroupedGemm:
      case TermKind::kComputeOther:
        compute += t.seconds;
        break;
      case TermKind::kRecompute:
        recompute += t.seconds;
        break;
      case TermKind::kCommTpExposed:
      case TermKind::kCommEpExposed:
      case TermKind::kCommCpExposed:
        exposed_inlayer += t.seconds;
        break;
      case TermKind::kCommTpHidden:
      case TermKind::kCommEpHidden:
      case TermKind::kCommCpHidden:
        hidden_inlayer += t.seconds;
        break;
      case TermKind::kCommPpExposed:
      case TermKind::kCommPpHidden:
        pp_comm += t.seconds;
        break;
      case TermKind::kCommDpExposed:
      case TermKind::kOffloadExposed:
        tail += t.seconds;
        break;
      case TermKind::kOptimizer:
        optimizer += t.seconds;
        break;
      case TermKind::kCommDpHidden:
      case TermKind::kOffloadHidden:
      case TermKind::kPipelineBubble:  // the simulation produces its own
        break;
    }
  }
  const double ratio = p.shape.objective == Objective::kLora
                           ? kBackwardOverForwardLora
                           : kBackwardOverForwardPretrain;
  const double passes = static_cast<double>(spec.micro_batches) * spec.vp;
  const double fwd_compute = compute / (1.0 + ratio);
  const double bwd_compute = compute - fwd_compute + recompute;
  spec.forward_s = (fwd_compute + exposed_inlayer / 2) / passes;
  spec.backward_s = (bwd_compute + exposed_inlayer / 2) / passes;
  spec.forward_hidden_comm_s = hidden_inlayer / 2 / passes;
  spec.backward_hidden_comm_s = hidden_inlayer / 2 / passes;
  spec.p2p_s = spec.pp > 1 ? pp_comm / (2.0 * passes) : 0.0;
  spec.tail_comm_s = tail;
  spec.optimizer_s = optimizer;
  return spec;
}

absl::StatusOr<PipelineTimeline> SimulatePipeline(
    const PipelineScheduleSpec& spec) {
  if (spec.pp < 1 || spec.vp < 1 || spec.micro_batches < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pipeline schedule needs pp, vp and micro-batches >= 1, got pp=",
        spec.pp, " vp=", spec.vp, " micro_batches=", spec.micro_batches));
  }
  if (spec.vp > 1 && spec.pp == 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("vp=", spec.vp, " needs pp > 1"));
  }
  for (double t : {spec.forward_s, spec.backward_s, spec.p2p_s,
                   spec.tail_comm_s, spec.optimizer_s,
                   spec.forward_hidden_comm_s, spec.backward_hidden_comm_s}) {
    if (!(t >= 0) || !std::isfinite(t)) {
      return absl::InvalidArgumentError(
          absl::StrCat("pipeline schedule times must be finite and >= 0, "
                       "got ", t));
    }
  }
  const int pp = spec.pp, vp = spec.vp, m = spec.micro_batches;
  const int total = m * vp;  // passes of each direction per rank
  const std::vector<VirtualOp> fwd_order = VirtualOrder(pp, vp, m, false);
  const std::vector<VirtualOp> bwd_order = VirtualOrder(pp, vp, m, true);

  // Per rank: the sequence of (is_backward, index into the order).
  std::vector<std::vector<std::pair<bool, int>>> program(pp);
  for (int r = 0; r < pp; ++r) {
    int warmup;
    if (vp == 1) {
      warmup = std::min(pp - r - 1, total);
    } else if (m == pp) {
      warmup = total;  // Megatron: all forward passes first
    } else {
      warmup = std::min((pp - r - 1) * 2 + (vp - 1) * pp, total);
    }
    auto& prog = program[r];
    prog.reserve(2 * static_cast<size_t>(total));
    for (int k = 0; k < warmup; ++k) prog.push_back({false, k});
    for (int k = 0; k < total - warmup; ++k) {
      prog.push_back({false, warmup + k});
      prog.push_back({true, k});
    }
    for (int k = total - warmup; k < total; ++k) prog.push_back({true, k});
  }

  // End times, indexed [(rank * vp + chunk) * m + mb]; < 0 until scheduled.
  const size_t slots = static_cast<size_t>(pp) * vp * m;
  std::vector<double> fwd_end(slots, -1.0), bwd_end(slots, -1.0);
  auto slot = [&](int r, int c, int mb) {
    return (static_cast<size_t>(r) * vp + c) * m + mb;
  };

  PipelineTimeline tl;
  tl.spec = spec;
  tl.compute.reserve(slots * 2 + pp);
  std::vector<size_t> cursor(pp, 0);
  std::vector<double> free_at(pp, 0.0);
  std::vector<double> busy(pp, 0.0);
  size_t remaining = slots * 2;
  while (remaining > 0) {
    bool progressed = false;
    for (int r = 0; r < pp; ++r) {
      while (cursor[r] < program[r].size()) {
        const auto [backward, k] = program[r][cursor[r]];
        const VirtualOp op = backward ? bwd_order[k] : fwd_order[k];
        const int c = op.chunk, mb = op.micro_batch;
        double ready = 0;  // when the input is on this rank
        if (!backward) {
          if (r > 0) {
            const double e = fwd_end[slot(r - 1, c, mb)];
            if (e < 0) break;
            ready = e + spec.p2p_s;
          } else if (c > 0) {
            const double e = fwd_end[slot(pp - 1, c - 1, mb)];
            if (e < 0) break;
            ready = e + spec.p2p_s;
          }
        } else {
          if (r < pp - 1) {
            const double e = bwd_end[slot(r + 1, c, mb)];
            if (e < 0) break;
            ready = e + spec.p2p_s;
          } else if (c < vp - 1) {
            const double e = bwd_end[slot(0, c + 1, mb)];
            if (e < 0) break;
            ready = e + spec.p2p_s;
          } else {
            const double e = fwd_end[slot(r, c, mb)];
            if (e < 0) break;
            ready = e;  // same rank: no transfer
          }
        }
        const double dur = backward ? spec.backward_s : spec.forward_s;
        const double start = std::max(free_at[r], ready);
        const double end = start + dur;
        (backward ? bwd_end : fwd_end)[slot(r, c, mb)] = end;
        free_at[r] = end;
        busy[r] += dur;
        tl.compute.push_back({backward ? PipelineOpKind::kBackward
                                       : PipelineOpKind::kForward,
                              r, c, mb, start, end});
        // The activation (forward) or gradient (backward) leaves for the
        // next rank, except at the ends of the virtual pipeline.
        const bool last_fwd = r == pp - 1 && c == vp - 1;
        const bool first_bwd = r == 0 && c == 0;
        if (pp > 1 && (backward ? !first_bwd : !last_fwd)) {
          tl.comm.push_back(
              {PipelineOpKind::kSend, r, c, mb, end, end + spec.p2p_s});
        }
        ++cursor[r];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) {
      return absl::InternalError(absl::StrCat(
          "pipeline schedule deadlocked with pp=", pp, " vp=", vp,
          " micro_batches=", m));
    }
  }
  tl.bubble_s.resize(pp);
  for (int r = 0; r < pp; ++r) {
    tl.bubble_s[r] = free_at[r] - busy[r];
    double t = free_at[r];
    if (spec.tail_comm_s > 0) {
      tl.comm.push_back(
          {PipelineOpKind::kTailComm, r, 0, -1, t, t + spec.tail_comm_s});
      t += spec.tail_comm_s;
    }
    if (spec.optimizer_s > 0) {
      tl.compute.push_back(
          {PipelineOpKind::kOptimizer, r, 0, -1, t, t + spec.optimizer_s});
      t += spec.optimizer_s;
    }
    tl.step_s = std::max(tl.step_s, t);
  }
  return tl;
}

}  // namespace moetune::planner
