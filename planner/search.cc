#include "planner/search.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "planner/framework_rules.h"
#include "planner/internal/strings.h"
#include "planner/parallel_for.h"
#include "planner/pareto.h"
#include "planner/step_model.h"
#include "planner/units.h"

namespace moetune::planner {
namespace {

using Clock = std::chrono::steady_clock;
using internal::Sv;

constexpr int kNumInfeasibilities =
    static_cast<int>(Infeasibility::kHostMemoryExceeded) + 1;
// Tally's detail index holds an Infeasibility or a FrameworkRule.
constexpr int kNumDetails =
    kNumFrameworkRules > kNumInfeasibilities ? kNumFrameworkRules : kNumInfeasibilities;
constexpr uint32_t kNoCombo = std::numeric_limits<uint32_t>::max();

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string Gib(double bytes) {
  return absl::StrFormat("%.1f GiB", bytes / units::kGiB);
}

// One scored candidate: a layout index and a knob-combination index into
// that layout's KnobSet.
struct Scored {
  double tokens_per_sec = -1;
  double peak_bytes = 0;
  uint32_t layout = 0;
  uint32_t combo = kNoCombo;
  bool valid() const { return combo != kNoCombo; }
};

// Deterministic order: throughput, then enumeration order.
bool Better(const Scored& a, const Scored& b) {
  if (!b.valid()) return a.valid();
  if (!a.valid()) return false;
  if (a.tokens_per_sec != b.tokens_per_sec) {
    return a.tokens_per_sec > b.tokens_per_sec;
  }
  if (a.layout != b.layout) return a.layout < b.layout;
  return a.combo < b.combo;
}

uint64_t CandidateId(uint32_t layout, uint32_t combo) {
  return (uint64_t{layout} << 32) | combo;
}

// Deterministic order for the least-memory candidate: peak memory, then
// enumeration order (ties are common: knobs that do not change memory), so
// that the no-fit error names the same candidate whatever the threads did.
bool LessMemory(const Scored& a, const Scored& b) {
  if (!b.valid()) return a.valid();
  if (!a.valid()) return false;
  if (a.peak_bytes != b.peak_bytes) return a.peak_bytes < b.peak_bytes;
  return CandidateId(a.layout, a.combo) < CandidateId(b.layout, b.combo);
}

// Pruning tallies, keyed by (rule, detail index, evaluated).
struct Example {
  bool set = false;
  uint32_t layout = 0;
  uint32_t combo = kNoCombo;
  double a = 0, b = 0;  // rule-specific numbers
};
struct Tally {
  uint64_t count[kNumPruneRules][kNumDetails][2] = {};
  Example example[kNumPruneRules][kNumDetails][2];
  void Add(PruneRule rule, int detail, bool evaluated, uint64_t n,
           const Example& ex) {
    const int r = static_cast<int>(rule);
    count[r][detail][evaluated] += n;
    if (!example[r][detail][evaluated].set) example[r][detail][evaluated] = ex;
  }
  void Merge(const Tally& o) {
    for (int r = 0; r < kNumPruneRules; ++r) {
      for (int d = 0; d < kNumDetails; ++d) {
        for (int e = 0; e < 2; ++e) {
          count[r][d][e] += o.count[r][d][e];
          if (!example[r][d][e].set) example[r][d][e] = o.example[r][d][e];
        }
      }
    }
  }
};

// Per-worker state; merged after each phase. No locks on the hot path.
struct Worker {
  uint64_t evaluated = 0;
  uint64_t feasible = 0;
  Tally tally;
  ParetoFront front;
  Scored least_memory;  // the scored valid candidate with the lowest peak
  double floor_bytes = std::numeric_limits<double>::infinity();
  uint32_t floor_layout = 0;
  // Keeps the lowest weights floor, the first layout among equals.
  void OfferFloor(double bytes, uint32_t layout) {
    if (bytes < floor_bytes || (bytes == floor_bytes && layout < floor_layout)) {
      floor_bytes = bytes;
      floor_layout = layout;
    }
  }
  // The scorer's per-layout fast path for the layout scored last (Score
  // visits the knob settings of one layout in a row).
  StepModel::PreparedLayout prepared;
  uint32_t prepared_layout = std::numeric_limits<uint32_t>::max();
  bool prepared_ok = false;
  // ScoreLayoutHeads' per-group scratch, reused across layouts: each group
  // head's throughput where it runs (scored, or the bound its chain
  // predecessor puts on it), else -1; and whether it was scored and fits.
  std::vector<double> head_bound;
  std::vector<char> head_fits;
};

// The K best layouts, one entry per layout (its best candidate). Small K:
// a sorted vector.
class TopLayouts {
 public:
  explicit TopLayouts(int k) : k_(k) {}
  // Offers a layout's candidate; keeps the layout's best.
  void Offer(const Scored& s) {
    for (Scored& e : best_) {
      if (e.layout == s.layout) {
        if (Better(s, e)) e = s;
        Sort();
        return;
      }
    }
    if (static_cast<int>(best_.size()) < k_) {
      best_.push_back(s);
    } else if (Better(s, best_.back())) {
      best_.back() = s;
    } else {
      return;
    }
    Sort();
  }
  // Throughput a group's bound must reach to matter (strictly below: pruned).
  double threshold() const {
    return static_cast<int>(best_.size()) < k_ ? -1.0
                                               : best_.back().tokens_per_sec;
  }
  const std::vector<Scored>& best() const { return best_; }

 private:
  void Sort() { std::sort(best_.begin(), best_.end(), Better); }
  int k_;
  std::vector<Scored> best_;
};

// A group of one layout whose head did not fit, or whose head phase 1 left
// unscored under its chain predecessor's bound: its members may fit.
struct OpenGroup {
  // The head's throughput (scored), or a bound on it (deferred).
  double head_tokens_per_sec;
  uint32_t layout;
  uint32_t group;
  bool head_scored = true;
};

// What scoring one candidate found.
struct Outcome {
  Scored scored;              // valid() iff feasible
  bool runs = false;          // the step model accepted the configuration
  Infeasibility reason = Infeasibility::kNone;
  int rule = -1;  // >= 0: refused by this FrameworkRule (not scored)
  double tokens_per_sec = 0;  // when runs, feasible or not
};

// Layouts tracked while searching, for a requested top K: the derive step
// makes each plan's pipeline split explicit, which can reorder plans (an
// explicit split is usually a little slower than the step model's own), so
// it derives a wider pool and keeps the K best of that. The pool is the
// same for every K up to the CLI's default of 5, so `--top 1` (and the
// report's what-ifs, which replan with top 1) find the plan `plan` finds:
// with a pool of 11, DeepSeek-V3 on 1,024 GB200 missed the best plan (pp 4
// x vp 6, no explicit split needed) behind eleven pp 2 x vp 8 layouts whose
// explicit splits fell below it (search_test).
constexpr int kDerivePoolExtra = 10;
constexpr int kDerivePoolMinTopK = 5;
int TrackedLayouts(int top_k) { return std::max(top_k, kDerivePoolMinTopK) + kDerivePoolExtra; }

// Dominance audit: layouts sampled and the tolerance for "faster".
constexpr int kAuditLayouts = 16;
constexpr double kAuditTolerance = 1e-9;

class Searcher {
 public:
  Searcher(const SearchProblem& problem, const CandidateScorer& model,
           const SearchOptions& options, KnobAxes axes)
      : problem_(problem),
        model_(model),
        options_(options),
        axes_(std::move(axes)),
        floor_params_(WeightsFloorParamsOf(problem.model)),
        limit_bytes_(options.max_memory_fraction * problem.cluster.gpu.hbm_bytes),
        top_(TrackedLayouts(options.top_k)) {
    BuildKnobSets();
  }

  absl::StatusOr<SearchResult> Run();

 private:
  // One knob set per rule class of layouts (framework_rules.h), each
  // combination already what Megatron-Core runs on such a layout; the ones
  // whose pinned values conflict carry the rule they break.
  void BuildKnobSets() {
    for (int i = 0; i < kNumRuleLayoutClasses; ++i) {
      RuleLayoutClass c;
      c.expert_parallel = (i & 1) != 0;
      c.non_interleaved_pp = (i & 2) != 0;
      c.interleaved_pp2 = (i & 4) != 0;
      c.expert_tensor_parallel = (i & 8) != 0;
      c.tensor_parallel = (i & 16) != 0;
      c.pipelined = (i & 32) != 0;
      if (c.Index() != i || !c.Consistent()) continue;
      KnobSet& ks = knob_sets_[size_t(i)];
      // The TP overlap has no fastest-first order: its split GEMMs
      // (TpOverlapChunkingSeconds) can cost more than the collectives it
      // hides, on some layouts and not on others. On TP layouts the axis is
      // bounded value by value by design, not left to the audit's sample to
      // find; without TP it changes nothing and keeps one value.
      KnobAxes class_axes = axes_;
      uint32_t bounded = bounded_axes_;
      if (c.tensor_parallel) {
        if (axes_.tp_overlap.size() > 1) {
          bounded |= AxisBit(KnobAxis::kTpOverlap);
          tp_overlap_bounded_ = true;
        }
      } else if (!class_axes.tp_overlap.empty()) {
        class_axes.tp_overlap.resize(1);
      }
      class_bounded_axes_[size_t(i)] = bounded;
      ks = BuildKnobSet(class_axes, problem_.model, c.expert_parallel, bounded, neutral_axes_);
      class_rep_[size_t(i)] = RepresentativeLayout(c);
      std::vector<int8_t>& violations = violations_[size_t(i)];
      violations.assign(ks.combos.size(), -1);
      for (size_t j = 0; j < ks.combos.size(); ++j) {
        ApplyUnsearchedKnobs(options_.constraints, &ks.combos[j]);
        const NormalizedKnobs n = AsRunOnClass(size_t(i), ks.combos[j]);
        ks.combos[j] = n.knobs;
        if (n.violation) violations[j] = static_cast<int8_t>(*n.violation);
      }
      // Where the overlap is searched value by value, each group's chain
      // predecessor (OverlapChainPredecessor): the group whose head, the
      // same in every other group axis, bounds this group's head.
      std::vector<int32_t>& pred = chain_pred_[size_t(i)];
      pred.assign(static_cast<size_t>(ks.num_groups()), -1);
      int stride = 1;
      for (size_t a = ks.group_axes.size(); a-- > 0;) {
        if (ks.group_axes[a] == KnobAxis::kOverlap) {
          const int size = ks.group_axis_sizes[a];
          for (int g = 0; g < ks.num_groups(); ++g) {
            const int v = (g / stride) % size;
            const int pv = OverlapChainPredecessor(class_axes, v);
            if (pv >= 0) pred[size_t(g)] = g - (v - pv) * stride;
          }
          break;
        }
        stride *= ks.group_axis_sizes[a];
      }
    }
  }
  // The rule class of layouts_[layout], computed once per search.
  size_t ClassIndexOf(uint32_t layout) const { return layout_class_[layout]; }
  const KnobSet& KnobsOfLayout(uint32_t layout) const {
    return knob_sets_[ClassIndexOf(layout)];
  }
  // `k` as the framework runs it on layouts of rule class `cls` (the
  // combinations the search scores), with the rule it breaks if refused.
  NormalizedKnobs AsRunOnClass(size_t cls, const Knobs& k) const {
    return NormalizeFor(options_.framework, problem_.model, class_rep_[cls],
                        options_.constraints.fixed, k, options_.full_iteration_graphs);
  }
  const KnobSet& KnobsOf(const ParallelConfig& p) const {
    return knob_sets_[size_t(ClassOf(p).Index())];
  }
  double Floor(const ParallelConfig& p) const {
    return WeightsFloorBytes(floor_params_, p, problem_.shape.objective == Objective::kLora);
  }
  // Scores one candidate and tallies the outcome in the worker.
  Outcome Score(uint32_t layout, uint32_t combo, Worker& w);
  void ScoreLayoutExhaustive(uint32_t layout, Worker& w);
  // Default mode, phase 1: floor check and group heads.
  void ScoreLayoutHeads(uint32_t layout, Worker& w,
                        std::vector<OpenGroup>& open, TopLayouts& top);
  // Default mode, phase 2: subgroup heads, then members, best first.
  void ExpandGroup(const OpenGroup& g, Worker& w, std::atomic<double>& threshold);
  void Audit();
  void Progress(bool force);
  std::string Describe(uint32_t layout, uint32_t combo) const;
  std::string ExampleText(PruneRule rule, int detail, bool evaluated,
                          const Example& ex) const;
  absl::Status NoFeasiblePlan(const Worker& all) const;
  ParallelConfig ExplicitStages(const ParallelConfig& p, const Knobs& k) const;
  absl::StatusOr<RankedPlan> Derive(const Scored& s) const;
  // `k` with the EP A2A overlap off where the step model finds it changes
  // nothing on `p` (and it was not pinned); else `k`.
  Knobs WithoutIdleEpOverlap(const ParallelConfig& p, const Knobs& k) const;
  // "; with all of its optimizer state stepped on the host it fits in ..."
  // when the optimizer-state CPU offload would make `s` fit, else empty.
  std::string OptimizerOffloadHint(const Scored& s) const;

  const SearchProblem& problem_;
  const CandidateScorer& model_;
  const SearchOptions& options_;
  KnobAxes axes_;
  // The model's part of every layout's weights floor (Floor).
  WeightsFloorParams floor_params_;
  double limit_bytes_;
  std::array<KnobSet, kNumRuleLayoutClasses> knob_sets_;
  std::array<std::vector<int8_t>, kNumRuleLayoutClasses> violations_;
  // Per rule class: the layout the knob set was normalized on.
  std::array<ParallelConfig, kNumRuleLayoutClasses> class_rep_;
  // Per rule class and group: the group whose head bounds this group's head
  // (its overlap level's chain predecessor), -1 for none.
  std::array<std::vector<int32_t>, kNumRuleLayoutClasses> chain_pred_;
  // The audit found no overlap level faster than its chain predecessor.
  bool overlap_chain_holds_ = true;
  std::vector<ParallelConfig> layouts_;
  std::vector<uint8_t> layout_class_;  // ClassOf(layouts_[i]).Index()
  Tally rejections_;  // invalid layouts, found during enumeration
  uint64_t total_ = 0;
  uint32_t bounded_axes_ = 0;                 // bounded value by value
  // Per rule class: bounded_axes_, plus tp_overlap on TP layouts by design.
  std::array<uint32_t, kNumRuleLayoutClasses> class_bounded_axes_{};
  bool tp_overlap_bounded_ = false;  // some TP class bounds tp_overlap by design
  uint32_t neutral_axes_ = kDefaultNeutralAxes;  // never change memory
  uint32_t memory_axes_found_ = 0;  // assumed neutral, found not to be
  uint64_t audit_evaluations_ = 0;

  // Shared progress counters.
  Clock::time_point start_;
  Clock::time_point last_progress_;
  std::atomic<uint64_t> done_{0};
  std::atomic<uint64_t> evaluated_{0};
  std::atomic<double> best_tps_{0};

  std::mutex mu_;  // guards top_ while workers run
  TopLayouts top_;
};

Outcome Searcher::Score(uint32_t layout, uint32_t combo, Worker& w) {
  const ParallelConfig& p = layouts_[layout];
  const size_t cls = ClassIndexOf(layout);
  const Knobs& k = knob_sets_[cls].combos[combo];
  if (const int v = violations_[cls][combo]; v >= 0) {
    w.tally.Add(PruneRule::kFrameworkRule, v, /*evaluated=*/false, 1,
                Example{true, layout, combo, 0, 0});
    Outcome out;
    out.scored.layout = layout;
    out.rule = v;
    return out;
  }
  if (w.prepared_layout != layout) {
    w.prepared_ok = model_.Prepare(p, &w.prepared);
    w.prepared_layout = layout;
  }
  const Estimate e =
      w.prepared_ok ? model_.QuickPrepared(w.prepared, k) : model_.Quick(p, k);
  ++w.evaluated;
  Outcome out;
  out.scored.layout = layout;
  out.reason = e.reason;
  if (e.reason != Infeasibility::kNone) {
    w.tally.Add(PruneRule::kUnsupportedByModel, static_cast<int>(e.reason),
                /*evaluated=*/true, 1, Example{true, layout, combo, 0, 0});
    return out;
  }
  out.runs = true;
  out.tokens_per_sec = e.tokens_per_sec_per_gpu;
  if (const Scored s{e.tokens_per_sec_per_gpu, e.peak_memory_bytes, layout, combo};
      LessMemory(s, w.least_memory)) {
    w.least_memory = s;
  }
  if (e.peak_memory_bytes > limit_bytes_) {
    w.tally.Add(PruneRule::kOverMemory, 0, /*evaluated=*/true, 1,
                Example{true, layout, combo, e.peak_memory_bytes, limit_bytes_});
    return out;
  }
  ++w.feasible;
  out.scored = Scored{e.tokens_per_sec_per_gpu, e.peak_memory_bytes, layout,
                      combo};
  w.front.Offer(ParetoPoint{e.peak_memory_bytes, e.tokens_per_sec_per_gpu,
                            CandidateId(layout, combo)});
  return out;
}

void Searcher::ScoreLayoutExhaustive(uint32_t layout, Worker& w) {
  const KnobSet& ks = KnobsOfLayout(layout);
  Scored best;
  for (uint32_t c = 0; c < ks.combos.size(); ++c) {
    const Outcome o = Score(layout, c, w);
    if (Better(o.scored, best)) best = o.scored;
  }
  const double floor = Floor(layouts_[layout]);
  w.OfferFloor(floor, layout);
  if (best.valid()) {
    std::lock_guard<std::mutex> lock(mu_);
    top_.Offer(best);
  }
  done_.fetch_add(ks.combos.size(), std::memory_order_relaxed);
  evaluated_.fetch_add(ks.combos.size(), std::memory_order_relaxed);
}

void Searcher::ScoreLayoutHeads(uint32_t layout, Worker& w,
                                std::vector<OpenGroup>& open,
                                TopLayouts& top) {
  const ParallelConfig& p = layouts_[layout];
  const KnobSet& ks = KnobsOfLayout(layout);
  const double floor = Floor(p);
  w.OfferFloor(floor, layout);
  if (floor > limit_bytes_) {
    w.tally.Add(PruneRule::kWeightsExceedMemory, 0, false, ks.combos.size(),
                Example{true, layout, kNoCombo, floor, limit_bytes_});
    done_.fetch_add(ks.combos.size(), std::memory_order_relaxed);
    return;
  }
  const uint64_t before = w.evaluated;
  uint64_t left_open = 0;  // combinations of the groups left to phase 2
  const uint32_t members = static_cast<uint32_t>(ks.group_size - 1);
  const size_t cls = ClassIndexOf(layout);
  const std::vector<int32_t>& pred = chain_pred_[cls];
  std::vector<double>& head_bound = w.head_bound;
  std::vector<char>& head_fits = w.head_fits;
  head_bound.assign(static_cast<size_t>(ks.num_groups()), -1.0);
  head_fits.assign(static_cast<size_t>(ks.num_groups()), 0);
  for (int g = 0; g < ks.num_groups(); ++g) {
    const uint32_t head = static_cast<uint32_t>(g * ks.group_size);
    // A head the framework refuses is scored rather than deferred: Score
    // returns its rule at no cost, and the group is tallied under it.
    if (const int32_t from = pred[size_t(g)];
        overlap_chain_holds_ && from >= 0 && head_bound[size_t(from)] >= 0 &&
        violations_[cls][head] < 0) {
      const double bound = head_bound[size_t(from)];
      if (head_fits[size_t(from)]) {
        // Its head is no faster than the predecessor group's head, which
        // fits: no member of this group can beat that plan of the same
        // layout.
        w.tally.Add(PruneRule::kDominatedInGroup, 0, false, members + 1,
                    Example{true, layout, head, bound, 0});
        continue;
      }
      // The predecessor's head runs over the limit (or is itself deferred):
      // its throughput bounds this whole group, which phase 2 scores only if
      // that bound can reach the top K (most cannot).
      head_bound[size_t(g)] = bound * (1 + kAuditTolerance);
      open.push_back(OpenGroup{head_bound[size_t(g)], layout, static_cast<uint32_t>(g),
                               /*head_scored=*/false});
      left_open += members + 1;
      continue;
    }
    const Outcome o = Score(layout, head, w);
    if (o.runs) head_bound[size_t(g)] = o.tokens_per_sec;
    if (o.scored.valid()) head_fits[size_t(g)] = 1;
    if (!o.runs) {
      // Layout-level reasons (or the precision), or pinned values the
      // framework refuses together: every member shares them.
      if (members > 0) {
        w.tally.Add(o.rule >= 0 ? PruneRule::kFrameworkRule
                                : PruneRule::kUnsupportedByModel,
                    o.rule >= 0 ? o.rule : static_cast<int>(o.reason), false,
                    members, Example{true, layout, head + 1, 0, 0});
      }
    } else if (o.scored.valid()) {
      top.Offer(o.scored);
      // The head is the group's fastest member and it fits: the group's
      // best feasible candidate is known.
      if (members > 0) {
        w.tally.Add(PruneRule::kDominatedInGroup, 0, false, members,
                    Example{true, layout, head + 1, o.tokens_per_sec, 0});
      }
    } else if (members > 0) {
      open.push_back(OpenGroup{o.tokens_per_sec, layout,
                               static_cast<uint32_t>(g)});
      left_open += members;
    }
  }
  evaluated_.fetch_add(w.evaluated - before, std::memory_order_relaxed);
  // What groups left open hold (unscored) is counted when phase 2 settles it.
  done_.fetch_add(ks.combos.size() - left_open, std::memory_order_relaxed);
}

void Searcher::ExpandGroup(const OpenGroup& g, Worker& w,
                           std::atomic<double>& threshold) {
  const KnobSet& ks = KnobsOfLayout(g.layout);
  const uint32_t base = g.group * static_cast<uint32_t>(ks.group_size);
  const uint32_t sub = static_cast<uint32_t>(ks.subgroup_size);
  const uint32_t block = static_cast<uint32_t>(ks.block_size);
  const uint32_t subgroups = static_cast<uint32_t>(ks.subgroups_per_group());
  const uint32_t blocks = static_cast<uint32_t>(ks.blocks_per_subgroup());
  const uint64_t before = w.evaluated;
  Scored best;  // this group's best feasible candidate so far
  // Tallies a scored head of `n` combinations (itself included): the
  // members it settles without being scored.
  auto settle = [&](const Outcome& o, uint32_t head, uint32_t n) {
    if (n <= 1) return;
    if (!o.runs) {
      w.tally.Add(o.rule >= 0 ? PruneRule::kFrameworkRule
                              : PruneRule::kUnsupportedByModel,
                  o.rule >= 0 ? o.rule : static_cast<int>(o.reason), false,
                  n - 1, Example{true, g.layout, head + 1, 0, 0});
    } else if (o.scored.valid()) {
      w.tally.Add(PruneRule::kDominatedInGroup, 0, false, n - 1,
                  Example{true, g.layout, head + 1, o.tokens_per_sec, 0});
    } else {
      w.tally.Add(PruneRule::kSameMemoryOverLimit, 0, false, n - 1,
                  Example{true, g.layout, head + 1, 0, limit_bytes_});
    }
  };
  // Subgroup 0's head is the group head: scored in phase 1 and over the
  // limit, or deferred there under its chain predecessor's bound (which
  // reached the bar) and scored now. Where it fits or does not run it
  // settles the whole group, as in phase 1.
  std::vector<std::pair<double, uint32_t>> open_subgroups;
  uint32_t first_subgroup = 1;
  if (g.head_scored) {
    open_subgroups.push_back({g.head_tokens_per_sec, 0});
  } else {
    const Outcome o = Score(g.layout, base, w);
    const double bar = threshold.load(std::memory_order_relaxed);
    if (!o.runs || o.scored.valid()) {
      if (o.scored.valid()) best = o.scored;
      settle(o, base, static_cast<uint32_t>(ks.group_size));
      first_subgroup = subgroups;
    } else if (o.tokens_per_sec < bar) {
      if (ks.group_size > 1) {
        w.tally.Add(PruneRule::kBoundBelowTopK, 0, false, ks.group_size - 1,
                    Example{true, g.layout, base, o.tokens_per_sec, bar});
      }
      first_subgroup = subgroups;
    } else {
      open_subgroups.push_back({o.tokens_per_sec, 0});
    }
  }
  // The other subgroups' heads.
  for (uint32_t s = first_subgroup; s < subgroups; ++s) {
    const uint32_t head = base + s * sub;
    const Outcome o = Score(g.layout, head, w);
    if (o.runs && !o.scored.valid()) {
      open_subgroups.push_back({o.tokens_per_sec, s});
    } else {
      if (Better(o.scored, best)) best = o.scored;
      settle(o, head, sub);
    }
  }
  // Open subgroups, best head first, against the K-th best layout and this
  // layout's best so far (a slower find can change neither). In a visited
  // subgroup each block head is scored: it settles its block, whose members
  // are no faster and need no less memory.
  std::sort(open_subgroups.begin(), open_subgroups.end(),
            [](const std::pair<double, uint32_t>& a,
               const std::pair<double, uint32_t>& b) {
              return a.first != b.first ? a.first > b.first : a.second < b.second;
            });
  for (const auto& [head_tps, s] : open_subgroups) {
    const double bar = std::max(threshold.load(std::memory_order_relaxed),
                                best.valid() ? best.tokens_per_sec : -1.0);
    const uint32_t head = base + s * sub;
    if (head_tps < bar) {
      if (sub > 1) {
        w.tally.Add(PruneRule::kBoundBelowTopK, 0, false, sub - 1,
                    Example{true, g.layout, head, head_tps, bar});
      }
      continue;
    }
    // Block 0's head is the subgroup head: over the limit.
    Outcome over;
    over.runs = true;
    settle(over, head, block);
    for (uint32_t b = 1; b < blocks; ++b) {
      const uint32_t bh = head + b * block;
      const Outcome o = Score(g.layout, bh, w);
      if (Better(o.scored, best)) best = o.scored;
      settle(o, bh, block);
    }
  }
  evaluated_.fetch_add(w.evaluated - before, std::memory_order_relaxed);
  done_.fetch_add(ks.group_size - (g.head_scored ? 1 : 0), std::memory_order_relaxed);
  if (best.valid()) {
    std::lock_guard<std::mutex> lock(mu_);
    top_.Offer(best);
    threshold.store(top_.threshold(), std::memory_order_relaxed);
    best_tps_.store(top_.best()[0].tokens_per_sec, std::memory_order_relaxed);
  }
}

// The default search rests on two properties of the step model, checked here
// on a sample of layouts before it relies on them, on the combinations as the
// search scores them (each as the framework runs it on the layout's rule
// class, BuildKnobSets; a combination the framework refuses is never scored
// and is skipped here too):
//   speed   each knob axis lists its fastest value first: from each group
//           head, moving one axis to another value is never faster. An axis
//           that fails is bounded value by value (moved to the group level).
//   memory  moving a member axis (dispatcher, grouped GEMM, CUDA graphs) to a
//           later value never lowers peak memory, from every subgroup head
//           (each recompute x offload setting: an axis's memory effect can
//           depend on it, e.g. CUDA graphs keep the pre-MLP norm that the
//           layernorm recompute would drop). Then a block head that is over
//           the limit settles its members, which are no faster and no
//           smaller. An axis that fails becomes a block axis (scored value by
//           value); one that raises memory (the NCCL all-to-all's buffers, a
//           loop of GEMMs) stays a member axis.
void Searcher::Audit() {
  std::vector<uint32_t> sample;
  const uint32_t n = static_cast<uint32_t>(layouts_.size());
  const uint32_t step = std::max<uint32_t>(1, n / kAuditLayouts);
  for (uint32_t i = 0; i < n && sample.size() < kAuditLayouts; i += step) {
    if (Floor(layouts_[i]) <= limit_bytes_) sample.push_back(i);
  }
  auto less_memory = [](double moved, double from) {
    return moved < from - 1e-9 * std::max(std::abs(moved), std::abs(from));
  };
  for (uint32_t li : sample) {
    const ParallelConfig& p = layouts_[li];
    const KnobSet& ks = KnobsOfLayout(li);
    const size_t cls = ClassIndexOf(li);
    // `k` as the search scores it on this layout, nullopt where refused.
    auto as_run = [&](const Knobs& k) -> std::optional<Knobs> {
      const NormalizedKnobs nk = AsRunOnClass(cls, k);
      if (nk.violation) return std::nullopt;
      return nk.knobs;
    };
    const uint32_t class_bounded = class_bounded_axes_[cls];
    for (int g = 0; g < ks.num_groups(); ++g) {
      for (int sg = 0; sg < ks.subgroups_per_group(); ++sg) {
        const size_t at = static_cast<size_t>(g * ks.group_size + sg * ks.subgroup_size);
        if (violations_[cls][at] >= 0) continue;
        const Knobs& from = ks.combos[at];  // already as run (BuildKnobSets)
        const Estimate h = model_.Quick(p, from);
        ++audit_evaluations_;
        if (h.reason != Infeasibility::kNone) continue;
        const bool group_head = sg == 0;
        if (group_head) {
          // The overlap chain: no level faster than its predecessor, both
          // moved from this head.
          for (int v = 0; v < static_cast<int>(axes_.overlap.size()); ++v) {
            const int pv = OverlapChainPredecessor(axes_, v);
            if (pv < 0) continue;
            const std::optional<Knobs> bound =
                as_run(WithAxisValue(axes_, from, KnobAxis::kOverlap, pv));
            const std::optional<Knobs> moved =
                as_run(WithAxisValue(axes_, from, KnobAxis::kOverlap, v));
            if (!bound || !moved) continue;
            const Estimate eb = model_.Quick(p, *bound);
            const Estimate em = model_.Quick(p, *moved);
            audit_evaluations_ += 2;
            if (eb.reason == Infeasibility::kNone && em.reason == Infeasibility::kNone &&
                em.tokens_per_sec_per_gpu > eb.tokens_per_sec_per_gpu * (1 + kAuditTolerance)) {
              overlap_chain_holds_ = false;
            }
          }
        }
        for (int a = 1; a < kNumKnobAxes; ++a) {
          const KnobAxis axis = static_cast<KnobAxis>(a);
          const bool check_speed = group_head && !(class_bounded & AxisBit(axis));
          const bool check_memory = (neutral_axes_ & AxisBit(axis)) != 0;
          if (!check_speed && !check_memory) continue;
          const int size = AxisSize(axes_, problem_.model, p.ep > 1, axis);
          for (int v = 1; v < size; ++v) {
            const std::optional<Knobs> moved = as_run(WithAxisValue(axes_, from, axis, v));
            if (!moved) continue;
            const Estimate e = model_.Quick(p, *moved);
            ++audit_evaluations_;
            if (e.reason != Infeasibility::kNone) continue;
            if (check_speed &&
                e.tokens_per_sec_per_gpu > h.tokens_per_sec_per_gpu * (1 + kAuditTolerance)) {
              bounded_axes_ |= AxisBit(axis);
            }
            if ((neutral_axes_ & AxisBit(axis)) &&
                less_memory(e.peak_memory_bytes, h.peak_memory_bytes)) {
              neutral_axes_ &= ~AxisBit(axis);
              memory_axes_found_ |= AxisBit(axis);
            }
          }
        }
      }
    }
  }
}

void Searcher::Progress(bool force) {
  if (!options_.progress) return;
  const Clock::time_point now = Clock::now();
  if (!force && std::chrono::duration<double>(now - last_progress_).count() <
                    options_.progress_interval_s) {
    return;
  }
  last_progress_ = now;
  SearchProgress p;
  p.candidates_total = total_;
  p.candidates_done = std::min(total_, done_.load(std::memory_order_relaxed));
  p.candidates_evaluated = evaluated_.load(std::memory_order_relaxed);
  p.seconds = SecondsSince(start_);
  p.best_tokens_per_sec_per_gpu = best_tps_.load(std::memory_order_relaxed);
  options_.progress(p);
}

std::string Searcher::Describe(uint32_t layout, uint32_t combo) const {
  const ParallelConfig& p = layouts_[layout];
  if (combo == kNoCombo) return ToString(p);
  return absl::StrCat(ToString(p), " ", ToString(KnobsOf(p).combos[combo]));
}

// Makes the plan's pipeline split explicit. While searching, the step model
// balances layers over the S = pp x vp stages itself; a training framework
// needs the split as flags (Megatron: --decoder-first/last-pipeline-num-layers
// with the middle stages even). Candidates: middle stages of m layers (m
// within 2 of L / S), first and last stages taking the rest, at least one
// layer each; they are tried by increasing imbalance (the larger distance of
// first or last from m), and the fastest fitting split of the most balanced
// level that has one wins -- so an artefact of the model cannot pick a
// lopsided split. None fits: the plan keeps the step model's own split.
ParallelConfig Searcher::ExplicitStages(const ParallelConfig& p,
                                        const Knobs& k) const {
  const int stages = p.pp * p.vp;
  const int layers = problem_.model.num_layers;
  if (stages <= 1 || p.first_stage_layers || p.last_stage_layers) return p;
  struct Split {
    int imbalance, first, last;
  };
  std::vector<Split> splits;
  const int lo = std::max(1, layers / stages - 2);
  const int hi = (layers + stages - 1) / stages + 2;
  for (int middle = stages == 2 ? hi : lo; middle <= hi; ++middle) {
    const int rest = layers - (stages - 2) * middle;
    for (int first = 1; first < rest; ++first) {
      const int last = rest - first;
      const int imbalance =
          stages == 2 ? std::abs(first - last)
                      : std::max(std::abs(first - middle), std::abs(last - middle));
      splits.push_back({imbalance, first, last});
    }
  }
  std::stable_sort(splits.begin(), splits.end(),
                   [](const Split& a, const Split& b) {
                     return a.imbalance < b.imbalance;
                   });
  ParallelConfig best = p;
  double best_tps = -1, best_peak = 0;
  for (size_t i = 0; i < splits.size(); ++i) {
    if (best_tps >= 0 && splits[i].imbalance > splits[i - 1].imbalance) break;
    ParallelConfig q = p;
    q.first_stage_layers = splits[i].first;
    q.last_stage_layers = splits[i].last;
    const Estimate e = model_.Quick(q, k);
    if (e.reason != Infeasibility::kNone || e.peak_memory_bytes > limit_bytes_) {
      continue;
    }
    if (e.tokens_per_sec_per_gpu > best_tps ||
        (e.tokens_per_sec_per_gpu == best_tps && e.peak_memory_bytes < best_peak)) {
      best = q;
      best_tps = e.tokens_per_sec_per_gpu;
      best_peak = e.peak_memory_bytes;
    }
  }
  return best;
}

// The combined-1F1B EP A2A overlap is left off where the step model finds
// that it gains nothing: no exchange time hidden, no compute slowed, no
// memory saved -- an exchange bound by NVLink inside one 8-GPU node
// (StackConstants::ep_overlap_nvlink_fraction 0). Where the iteration is
// not graph-captured whole the schedule's own host work
// (EpOverlapScheduleHostSeconds) already makes it the slower setting and
// the search's order drops it (the 'all_but_ep' overlap level); under
// full-iteration graphs that work is captured, the axis ties, and the
// fastest-first order would keep it on. The public A/B runs of such layouts
// measured it as a cost: Megatron-Bridge pull request 1760 turned it off
// "due to CPU overhead" on Qwen3-235B-A22B, 64 B200, PP8 VP4 EP8 (step
// 17.2 -> 16.0 s at BF16; 20.1 -> 16.9 s at MXFP8 with VP dropped too),
// pull request 2669 turned it and VP off on B300 (issue 3399: "moe_a2a_
// overlap and VP degraded perf"). Megatron's default is off. All of that
// evidence is on 8-GPU NVLink nodes; on NVL72 domains NVIDIA's GB200 /
// GB300 MoE recipes run the overlap on and no public A/B measures it
// there, so those plans keep the search's order. A pinned overlap
// (--fix overlap=..., --overlap) is kept as given.
Knobs Searcher::WithoutIdleEpOverlap(const ParallelConfig& p, const Knobs& k) const {
  const FixedKnobs& fixed = options_.constraints.fixed;
  if (!EpOverlapActive(problem_.model, p, k) || fixed.overlap || fixed.overlap_exact) return k;
  if (problem_.cluster.nvlink_domain_gpus > kEightGpuNvlinkNode) return k;
  Knobs off = k;
  off.overlap.ep_comm = false;
  if (FrameworkViolation(options_.framework, problem_.model, p, off,
                         options_.full_iteration_graphs)) {
    return k;
  }
  const Estimate on_e = model_.Quick(p, k);
  const Estimate off_e = model_.Quick(p, off);
  if (on_e.reason != Infeasibility::kNone || off_e.reason != Infeasibility::kNone) return k;
  const bool ties = off_e.tokens_per_sec_per_gpu >= on_e.tokens_per_sec_per_gpu &&
                    off_e.peak_memory_bytes <= on_e.peak_memory_bytes;
  return ties ? off : k;
}

absl::StatusOr<RankedPlan> Searcher::Derive(const Scored& s) const {
  const Knobs& searched = KnobsOf(layouts_[s.layout]).combos[s.combo];
  // MaxText has no uneven stages (framework_rules.h): its plans keep the
  // step model's even split.
  const ParallelConfig p = options_.framework == Framework::kMaxText
                               ? layouts_[s.layout]
                               : ExplicitStages(layouts_[s.layout], searched);
  const Knobs k = options_.framework == Framework::kMegatron
                      ? WithoutIdleEpOverlap(p, searched)
                      : searched;
  if (const auto rule = FrameworkViolation(options_.framework, problem_.model, p, k,
                                           options_.full_iteration_graphs)) {
    return absl::InternalError(absl::StrCat(
        "search derived a plan the framework refuses: ", Describe(s.layout, s.combo),
        ": ", RuleText(*rule)));
  }
  absl::StatusOr<Prediction> pred = model_.Predict(p, k);
  if (!pred.ok()) {
    return absl::InternalError(absl::StrCat(
        "the step model scored ", Describe(s.layout, s.combo),
        " but cannot predict it: ", pred.status().message()));
  }
  RankedPlan r;
  r.plan.parallel = pred->parallel;
  r.plan.knobs = k;
  r.prediction = *std::move(pred);
  r.prediction.framework = options_.framework;
  return r;
}

std::string Searcher::OptimizerOffloadHint(const Scored& s) const {
  // Never searched, so say what it would do: the least-memory candidate
  // with all of its optimizer state stepped on the host (Megatron only; a
  // LoRA run's optimizer state is the adapters').
  if (options_.framework != Framework::kMegatron ||
      problem_.shape.objective == Objective::kLora ||
      options_.constraints.optimizer_offload_fraction >= 1.0) {
    return std::string();
  }
  Knobs k = KnobsOf(layouts_[s.layout]).combos[s.combo];
  k.optimizer_offload_fraction = 1.0;
  const Estimate e = model_.Quick(layouts_[s.layout], k);
  if (e.reason != Infeasibility::kNone || e.peak_memory_bytes > limit_bytes_) {
    return std::string();
  }
  return absl::StrCat("; with all of its optimizer state stepped on the host it fits in ",
                      Gib(e.peak_memory_bytes), absl::StrFormat(" at %.1f", e.tokens_per_sec_per_gpu),
                      " tokens/s/GPU (--optimizer-offload-fraction 1, never searched)");
}

absl::Status Searcher::NoFeasiblePlan(const Worker& all) const {
  const std::string limit =
      options_.max_memory_fraction < 1
          ? absl::StrCat(Gib(limit_bytes_), " (HBM ",
                         Gib(problem_.cluster.gpu.hbm_bytes), " x ",
                         absl::StrFormat("%.2f", options_.max_memory_fraction),
                         ")")
          : absl::StrCat(Gib(limit_bytes_), " of HBM");
  const char* what = problem_.shape.objective == Objective::kLora
                         ? "weights alone"
                         : "weights and gradients alone";
  // Pinned values the framework refuses together, and nothing else ran:
  // bad input, naming the rule.
  if (!all.least_memory.valid()) {
    const int r = static_cast<int>(PruneRule::kFrameworkRule);
    int worst = -1;
    uint64_t worst_n = 0;
    for (int d = 0; d < kNumFrameworkRules; ++d) {
      // Layouts the framework refuses were dropped before scoring; the
      // pinned values in conflict are among the knob rules.
      if (IsLayoutRule(static_cast<FrameworkRule>(d))) continue;
      const uint64_t n = all.tally.count[r][d][0] + all.tally.count[r][d][1];
      if (n > worst_n) worst = d, worst_n = n;
    }
    if (worst >= 0) {
      const Example& ex = all.tally.example[r][worst][0];
      return absl::InvalidArgumentError(absl::StrCat(
          RuleText(static_cast<FrameworkRule>(worst)),
          "; the pinned values leave no other choice",
          ex.set ? absl::StrCat(" (e.g. ", Describe(ex.layout, ex.combo), ")")
                 : std::string()));
    }
  }
  if (!all.least_memory.valid() || all.floor_bytes > limit_bytes_) {
    // Nothing was scored as valid, or every layout's weights are over.
    if (std::isfinite(all.floor_bytes)) {
      const ParallelConfig& p = layouts_[all.floor_layout];
      return absl::FailedPreconditionError(absl::StrCat(
          "no plan fits in memory: ", what, " need ", Gib(all.floor_bytes),
          " per GPU at best (tp=", p.tp, " pp=", p.pp, " ep=", p.ep, " etp=",
          p.etp, ", the most sharded layout on ", problem_.shape.gpus,
          " GPUs), the limit is ", limit));
    }
  }
  if (all.least_memory.valid()) {
    const Scored& s = all.least_memory;
    return absl::FailedPreconditionError(absl::StrCat(
        "no plan fits in memory: the least any candidate needs is ",
        Gib(s.peak_bytes), " per GPU (", Describe(s.layout, s.combo),
        "; its weights and gradients alone need at least ",
        Gib(Floor(layouts_[s.layout])),
        "), the limit is ", limit, OptimizerOffloadHint(s)));
  }
  return absl::FailedPreconditionError(
      "no plan: the step model rejected every candidate (see --explain)");
}

std::string Searcher::ExampleText(PruneRule rule, int detail, bool evaluated,
                                  const Example& ex) const {
  if (!ex.set) return "";
  const std::string what = Describe(ex.layout, ex.combo);
  switch (rule) {
    case PruneRule::kInvalidLayout:
      return "";  // filled from Validate() by the caller
    case PruneRule::kWeightsExceedMemory:
      return absl::StrCat(what, ": weights and gradients >= ", Gib(ex.a), " > ",
                          Gib(ex.b));
    case PruneRule::kBoundBelowTopK:
      return absl::StrCat(what, " and its group: at most ",
                          absl::StrFormat("%.1f", ex.a),
                          " tokens/s/GPU < ", absl::StrFormat("%.1f", ex.b),
                          " needed (the K-th best layout, or this layout's "
                          "best so far)");
    case PruneRule::kDominatedInGroup:
      return absl::StrCat(what, ": the head of its group (or subgroup, or "
                          "block, or of the group of the overlap level that "
                          "bounds it), no slower, fits at ",
                          absl::StrFormat("%.1f", ex.a), " tokens/s/GPU");
    case PruneRule::kSameMemoryOverLimit:
      return absl::StrCat(what, ": its block head needs more than ", Gib(ex.b));
    case PruneRule::kOverMemory:
      return absl::StrCat(what, ": peak ", Gib(ex.a), " > ", Gib(ex.b));
    case PruneRule::kUnsupportedByModel:
      return absl::StrCat(what, ": ",
                          Sv(InfeasibilityName(static_cast<Infeasibility>(detail))),
                          evaluated ? "" : " (as its group head)");
    case PruneRule::kFrameworkRule:
    case PruneRule::kFrameworkLayout:
      return absl::StrCat(what, ": ", RuleText(static_cast<FrameworkRule>(detail)));
  }
  return what;
}

absl::StatusOr<SearchResult> Searcher::Run() {
  start_ = Clock::now();
  last_progress_ = start_;

  // Candidates: enumerate layouts; tally the invalid ones.
  std::vector<LayoutRejection> rejected_examples(kNumInfeasibilities);
  layouts_ = EnumerateLayouts(
      problem_.model, problem_.cluster, problem_.shape,
      options_.constraints.fixed, [&](const LayoutRejection& r) {
        const uint64_t n = KnobsOf(r.layout).combos.size();
        const int d = static_cast<int>(r.reason);
        rejections_.count[static_cast<int>(PruneRule::kInvalidLayout)][d][0] += n;
        if (rejected_examples[d].reason == Infeasibility::kNone) {
          rejected_examples[d] = r;
        }
        total_ += n;
      },
      /*search_shard_params=*/options_.framework == Framework::kMaxText);
  // The framework's layout rules (framework_rules.h: MaxText's, and
  // Megatron's rank-order rule, which only a pinned dp_outermost can break):
  // layouts it cannot run are dropped here, each counted under its rule.
  std::vector<LayoutRejection> rule_examples(kNumFrameworkRules);
  uint32_t broken_by_all = ~0u;  // the layout rules every dropped layout breaks
  if (options_.framework == Framework::kMaxText ||
      options_.constraints.fixed.dp_outermost.value_or(false)) {
    std::vector<ParallelConfig> kept;
    for (const ParallelConfig& p : layouts_) {
      const uint32_t broken =
          FrameworkLayoutViolations(options_.framework, problem_.model, problem_.shape, p);
      const auto rule = FirstRule(broken);
      if (rule) broken_by_all &= broken;
      if (!rule) {
        kept.push_back(p);
        continue;
      }
      const uint64_t n = KnobsOf(p).combos.size();
      const int d = static_cast<int>(*rule);
      rejections_.count[static_cast<int>(PruneRule::kFrameworkLayout)][d][0] += n;
      if (rule_examples[d].reason == Infeasibility::kNone) {
        rule_examples[d] = LayoutRejection{Infeasibility::kBadUnevenStages, p};
      }
      total_ += n;
    }
    layouts_ = std::move(kept);
  }
  if (layouts_.size() > std::numeric_limits<uint32_t>::max() / 2) {
    return absl::ResourceExhaustedError("search space too large");
  }
  layout_class_.resize(layouts_.size());
  for (size_t i = 0; i < layouts_.size(); ++i) {
    layout_class_[i] = static_cast<uint8_t>(ClassOf(layouts_[i]).Index());
    total_ += KnobsOfLayout(static_cast<uint32_t>(i)).combos.size();
  }
  done_ = total_ - [&] {
    uint64_t valid = 0;
    for (const ParallelConfig& p : layouts_) valid += KnobsOf(p).combos.size();
    return valid;
  }();

  // Invalid-layout examples carry Validate()'s one-line reason.
  std::vector<std::string> invalid_text(kNumInfeasibilities);
  for (int d = 0; d < kNumInfeasibilities; ++d) {
    if (rejected_examples[d].reason != Infeasibility::kNone) {
      invalid_text[d] = absl::StrCat(
          ToString(rejected_examples[d].layout), ": ",
          Validate(problem_.model, problem_.shape, rejected_examples[d].layout)
              .message());
    }
  }
  if (layouts_.empty()) {
    const bool fixed_layout =
        !ToString(options_.constraints.fixed).empty();
    // Every valid layout refused by the framework: name the rule.
    int worst_rule = -1;
    uint64_t worst_rule_n = 0;
    for (int d = 0; d < kNumFrameworkRules; ++d) {
      const uint64_t n =
          rejections_.count[static_cast<int>(PruneRule::kFrameworkLayout)][d][0];
      if (n > worst_rule_n) worst_rule_n = n, worst_rule = d;
    }
    // A rule every layout breaks is the one the pins force; else the most
    // frequent.
    if (const auto forced = FirstRule(broken_by_all); worst_rule >= 0 && forced) {
      worst_rule = static_cast<int>(*forced);
    }
    if (worst_rule >= 0) {
      const std::string why = absl::StrCat(
          "every valid layout is refused, e.g. ", ToString(rule_examples[worst_rule].layout), ": ",
          RuleText(static_cast<FrameworkRule>(worst_rule)));
      if (fixed_layout) {
        return absl::InvalidArgumentError(
            absl::StrCat("with ", ToString(options_.constraints.fixed), " pinned: ", why));
      }
      return absl::FailedPreconditionError(
          absl::StrCat("no parallel layout for ", ToString(problem_), ": ", why));
    }
    int worst = -1;
    uint64_t worst_n = 0;
    for (int d = 0; d < kNumInfeasibilities; ++d) {
      const uint64_t n =
          rejections_.count[static_cast<int>(PruneRule::kInvalidLayout)][d][0];
      if (n > worst_n) {
        worst_n = n;
        worst = d;
      }
    }
    std::string why =
        worst < 0 ? std::string("no layout of the space matches")
                  : absl::StrCat("every layout is invalid, e.g. ",
                                 invalid_text[worst]);
    if (fixed_layout) {
      return absl::InvalidArgumentError(absl::StrCat(
          "with ", ToString(options_.constraints.fixed), " pinned: ", why));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("no valid parallel layout for ", ToString(problem_), ": ",
                     why));
  }

  const int threads = ResolveThreadCount(options_.threads);
  std::vector<Worker> workers(static_cast<size_t>(threads));
  const uint32_t num_layouts = static_cast<uint32_t>(layouts_.size());

  if (options_.exhaustive) {
    ParallelFor(threads, num_layouts, [&](size_t i, int wi) {
      ScoreLayoutExhaustive(static_cast<uint32_t>(i), workers[wi]);
      if (wi == 0) {
        best_tps_.store(std::max(0.0, top_.best().empty()
                                          ? 0.0
                                          : top_.best()[0].tokens_per_sec),
                        std::memory_order_relaxed);
        Progress(false);
      }
    });
  } else {
    // Audit the fastest-first order of the knob axes; bound any axis that
    // fails it value by value.
    Audit();
    BuildKnobSets();
    // Phase 1: floors and group heads, per worker.
    std::vector<std::vector<OpenGroup>> open(workers.size());
    std::vector<TopLayouts> tops(workers.size(),
                                 TopLayouts(TrackedLayouts(options_.top_k)));
    ParallelFor(threads, num_layouts, [&](size_t i, int wi) {
      ScoreLayoutHeads(static_cast<uint32_t>(i), workers[wi], open[wi],
                       tops[wi]);
      if (wi == 0) {
        if (!tops[0].best().empty()) {
          best_tps_.store(std::max(best_tps_.load(std::memory_order_relaxed),
                                   tops[0].best()[0].tokens_per_sec),
                          std::memory_order_relaxed);
        }
        Progress(false);
      }
    });
    for (const TopLayouts& t : tops) {
      for (const Scored& s : t.best()) top_.Offer(s);
    }
    // Phase 2: open groups, best head first, against the K-th best layout.
    std::vector<OpenGroup> groups;
    for (auto& v : open) groups.insert(groups.end(), v.begin(), v.end());
    std::sort(groups.begin(), groups.end(),
              [](const OpenGroup& a, const OpenGroup& b) {
                return std::tie(b.head_tokens_per_sec, a.layout, a.group) <
                       std::tie(a.head_tokens_per_sec, b.layout, b.group);
              });
    std::vector<char> pruned(groups.size(), 0);
    std::atomic<double> threshold{top_.threshold()};
    ParallelFor(threads, groups.size(), [&](size_t i, int wi) {
      const OpenGroup& g = groups[i];
      if (g.head_tokens_per_sec < threshold.load(std::memory_order_relaxed)) {
        pruned[i] = 1;
        done_.fetch_add(KnobsOfLayout(g.layout).group_size - (g.head_scored ? 1 : 0),
                        std::memory_order_relaxed);
      } else {
        ExpandGroup(g, workers[wi], threshold);
      }
      if (wi == 0) Progress(false);
    });
    // Tally the pruned groups; the example is the nearest miss (the list is
    // sorted by head throughput).
    Worker& w0 = workers[0];
    for (size_t i = 0; i < groups.size(); ++i) {
      if (!pruned[i]) continue;
      const OpenGroup& g = groups[i];
      const KnobSet& ks = KnobsOfLayout(g.layout);
      w0.tally.Add(PruneRule::kBoundBelowTopK, 0, false,
                   ks.group_size - (g.head_scored ? 1 : 0),
                   Example{true, g.layout,
                           g.group * static_cast<uint32_t>(ks.group_size),
                           g.head_tokens_per_sec, top_.threshold()});
    }
  }
  if (!top_.best().empty()) {
    best_tps_.store(top_.best()[0].tokens_per_sec, std::memory_order_relaxed);
  }
  Progress(true);

  // Merge the workers.
  Worker all;
  for (const Worker& w : workers) {
    all.evaluated += w.evaluated;
    all.feasible += w.feasible;
    all.tally.Merge(w.tally);
    all.front.Merge(w.front);
    if (LessMemory(w.least_memory, all.least_memory)) all.least_memory = w.least_memory;
    all.OfferFloor(w.floor_bytes, w.floor_layout);
  }
  all.tally.Merge(rejections_);

  if (top_.best().empty()) return NoFeasiblePlan(all);

  SearchResult result;
  result.problem = problem_;
  result.exhaustive = options_.exhaustive;
  result.candidates_total = total_;
  result.candidates_evaluated = all.evaluated;
  result.candidates_feasible = all.feasible;
  result.memory_limit_bytes = limit_bytes_;
  // Derive: full predictions, with the pipeline split made explicit. The
  // top list is re-ranked by the derived predictions; the front is re-cut.
  auto by_throughput = [](const RankedPlan& a, const RankedPlan& b) {
    return a.prediction.tokens_per_sec_per_gpu > b.prediction.tokens_per_sec_per_gpu;
  };
  for (const Scored& s : top_.best()) {
    absl::StatusOr<RankedPlan> r = Derive(s);
    if (!r.ok()) return r.status();
    result.top.push_back(*std::move(r));
  }
  std::stable_sort(result.top.begin(), result.top.end(), by_throughput);
  if (static_cast<int>(result.top.size()) > options_.top_k) {
    result.top.resize(static_cast<size_t>(options_.top_k));
  }
  result.best = result.top.front();
  std::vector<RankedPlan> front_plans;
  ParetoFront derived_front;
  for (const ParetoPoint& p : all.front.points()) {
    Scored s;
    s.layout = static_cast<uint32_t>(p.id >> 32);
    s.combo = static_cast<uint32_t>(p.id & 0xffffffffu);
    absl::StatusOr<RankedPlan> r = Derive(s);
    if (!r.ok()) return r.status();
    derived_front.Offer(ParetoPoint{r->prediction.peak_memory_bytes,
                                    r->prediction.tokens_per_sec_per_gpu,
                                    front_plans.size()});
    front_plans.push_back(*std::move(r));
  }
  for (const ParetoPoint& p : derived_front.points()) {
    result.pareto.push_back(front_plans[p.id]);
  }
  for (int a = 0; a < kNumKnobAxes; ++a) {
    const bool by_design = a == int(KnobAxis::kTpOverlap) && tp_overlap_bounded_;
    if ((bounded_axes_ & (1u << a)) || by_design) {
      result.audit_failed_axes.emplace_back(
          KnobAxisName(static_cast<KnobAxis>(a)));
    }
    if (memory_axes_found_ & (1u << a)) {
      result.audit_memory_axes.emplace_back(
          KnobAxisName(static_cast<KnobAxis>(a)));
    }
  }
  result.audit_evaluations = audit_evaluations_;
  for (int r = 0; r < kNumPruneRules; ++r) {
    for (int d = 0; d < kNumDetails; ++d) {
      for (int e = 0; e < 2; ++e) {
        const uint64_t n = all.tally.count[r][d][e];
        if (n == 0) continue;
        const PruneRule rule = static_cast<PruneRule>(r);
        PruneCount pc;
        pc.rule = rule;
        pc.evaluated = e == 1;
        if (rule == PruneRule::kInvalidLayout ||
            rule == PruneRule::kUnsupportedByModel) {
          pc.detail = std::string(InfeasibilityName(static_cast<Infeasibility>(d)));
        } else if (rule == PruneRule::kFrameworkRule || rule == PruneRule::kFrameworkLayout) {
          pc.detail = std::string(RuleInfo(static_cast<FrameworkRule>(d)).name);
        }
        pc.candidates = n;
        pc.example = rule == PruneRule::kInvalidLayout ? invalid_text[d]
                     : rule == PruneRule::kFrameworkLayout && d < kNumFrameworkRules &&
                             rule_examples[d].reason != Infeasibility::kNone
                         ? absl::StrCat(ToString(rule_examples[d].layout), ": ",
                                        RuleText(static_cast<FrameworkRule>(d)))
                         : ExampleText(rule, d, e == 1, all.tally.example[r][d][e]);
        result.pruned.push_back(std::move(pc));
      }
    }
  }
  result.search_seconds = SecondsSince(start_);
  return result;
}

}  // namespace

std::string ToString(const SearchProblem& problem) {
  const char* objective = "";
  switch (problem.shape.objective) {
    case Objective::kPretrain:
      objective = "pretrain";
      break;
    case Objective::kFinetune:
      objective = "finetune";
      break;
    case Objective::kLora:
      objective = "lora";
      break;
  }
  return absl::StrCat(problem.model.name, " on ", problem.shape.gpus, " x ",
                      problem.cluster.name, " (", problem.cluster.gpu.name,
                      "), seq ", problem.shape.seq_len, ", gbs ",
                      problem.shape.global_batch, ", ", objective);
}

std::string_view PruneRuleName(PruneRule rule) {
  switch (rule) {
    case PruneRule::kInvalidLayout:
      return "invalid_layout";
    case PruneRule::kWeightsExceedMemory:
      return "weights_exceed_memory";
    case PruneRule::kBoundBelowTopK:
      return "bound_below_top_k";
    case PruneRule::kDominatedInGroup:
      return "dominated_in_group";
    case PruneRule::kSameMemoryOverLimit:
      return "same_memory_over_limit";
    case PruneRule::kOverMemory:
      return "over_memory";
    case PruneRule::kUnsupportedByModel:
      return "rejected_by_step_model";
    case PruneRule::kFrameworkRule:
      return "refused_by_framework";
    case PruneRule::kFrameworkLayout:
      return "layout_refused_by_framework";
  }
  return "unknown";
}

std::string_view PruneRuleText(PruneRule rule) {
  switch (rule) {
    case PruneRule::kInvalidLayout:
      return "the layout cannot run (sizes do not divide)";
    case PruneRule::kWeightsExceedMemory:
      return "the layout's weights and gradients alone exceed the memory limit";
    case PruneRule::kBoundBelowTopK:
      return "even the group's fastest setting is below the K-th best layout";
    case PruneRule::kDominatedInGroup:
      return "the group's fastest setting already fits, so no other member "
             "can beat it";
    case PruneRule::kSameMemoryOverLimit:
      return "differs from a scored setting over the memory limit only in "
             "knobs that do not lower memory";
    case PruneRule::kOverMemory:
      return "scored: peak memory over the limit";
    case PruneRule::kUnsupportedByModel:
      return "the step model rejects the configuration";
    case PruneRule::kFrameworkRule:
      return "pinned values the framework refuses together (framework_rules.h)";
    case PruneRule::kFrameworkLayout:
      return "a layout the framework cannot run (framework_rules.h), dropped before scoring";
  }
  return "";
}

std::string ToString(const Plan& plan) {
  return absl::StrCat(ToString(plan.parallel), " ", ToString(plan.knobs));
}

namespace {

absl::Status CheckOptions(const SearchOptions& options) {
  if (options.top_k < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("top K must be at least 1, got ", options.top_k));
  }
  if (!(options.max_memory_fraction > 0 && options.max_memory_fraction <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("max memory fraction must be in (0, 1], got ",
                     options.max_memory_fraction));
  }
  if (options.threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads must be >= 0, got ", options.threads));
  }
  return absl::OkStatus();
}

class StepModelScorer : public CandidateScorer {
 public:
  explicit StepModelScorer(const StepModel& model) : model_(model) {}
  Estimate Quick(const ParallelConfig& parallel,
                 const Knobs& knobs) const override {
    return model_.Quick(parallel, knobs);
  }
  bool Prepare(const ParallelConfig& parallel,
               StepModel::PreparedLayout* prepared) const override {
    model_.Prepare(parallel, prepared);
    return true;
  }
  Estimate QuickPrepared(StepModel::PreparedLayout& prepared,
                         const Knobs& knobs) const override {
    return model_.Quick(prepared, knobs);
  }
  absl::StatusOr<Prediction> Predict(const ParallelConfig& parallel,
                                     const Knobs& knobs) const override {
    return model_.Predict(parallel, knobs);
  }

 private:
  const StepModel& model_;
};

}  // namespace

absl::StatusOr<SearchResult> SearchWith(const SearchProblem& problem,
                                        const CandidateScorer& scorer,
                                        const SearchOptions& options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  absl::StatusOr<KnobAxes> axes =
      BuildKnobAxes(problem.model, problem.cluster, options.constraints);
  if (!axes.ok()) return axes.status();
  Searcher searcher(problem, scorer, options, *std::move(axes));
  return searcher.Run();
}

absl::StatusOr<SearchResult> Search(const SearchProblem& problem,
                                    std::shared_ptr<const CostModel> cost_model,
                                    const SearchOptions& options,
                                    const StackConstants& stack) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  if (options.framework != stack.framework) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the search's framework (", Sv(FrameworkName(options.framework)),
        ") differs from the step model's (", Sv(FrameworkName(stack.framework)),
        "); set both from one SoftwareStack (SearchForStack)"));
  }
  absl::StatusOr<StepModel> model = StepModel::Create(
      problem.model, problem.cluster, problem.shape, std::move(cost_model), stack);
  if (!model.ok()) return model.status();
  StepModelScorer scorer(*model);
  SearchOptions o = options;
  o.full_iteration_graphs = stack.features.graph_full_iteration;
  return SearchWith(problem, scorer, o);
}

nlohmann::json ToJson(const SearchResult& r) {
  nlohmann::json j;
  j["mode"] = r.exhaustive ? "exhaustive" : "default";
  j["problem"] = ToString(r.problem);
  j["best"] = ToJson(r.best.prediction);
  j["top"] = nlohmann::json::array();
  for (const RankedPlan& p : r.top) j["top"].push_back(ToJson(p.prediction));
  j["pareto"] = nlohmann::json::array();
  for (const RankedPlan& p : r.pareto) {
    j["pareto"].push_back(ToJson(p.prediction));
  }
  j["candidates_total"] = r.candidates_total;
  j["candidates_evaluated"] = r.candidates_evaluated;
  j["candidates_feasible"] = r.candidates_feasible;
  j["memory_limit_gib"] = r.memory_limit_bytes / units::kGiB;
  j["pruned"] = nlohmann::json::array();
  for (const PruneCount& p : r.pruned) {
    nlohmann::json e;
    e["rule"] = PruneRuleName(p.rule);
    if (!p.detail.empty()) e["detail"] = p.detail;
    e["reason"] = PruneRuleText(p.rule);
    e["evaluated"] = p.evaluated;
    e["candidates"] = p.candidates;
    e["example"] = p.example;
    j["pruned"].push_back(std::move(e));
  }
  j["search_seconds"] = r.search_seconds;
  if (!r.exhaustive) {
    nlohmann::json audit;
    audit["evaluations"] = r.audit_evaluations;
    audit["axes_bounded_by_value"] = r.audit_failed_axes;
    audit["axes_found_to_change_memory"] = r.audit_memory_axes;
    j["dominance_audit"] = audit;
  }
  return j;
}

std::string ExplainPruning(const SearchResult& r) {
  std::string out = absl::StrCat(
      "search: ", r.exhaustive ? "exhaustive" : "default", ", ",
      r.candidates_total, " candidates, ", r.candidates_evaluated,
      " scored, ", r.candidates_feasible, " feasible, ",
      absl::StrFormat("%.3f", r.search_seconds), " s\n");
  if (!r.exhaustive) {
    absl::StrAppend(&out, "dominance audit: ", r.audit_evaluations,
                    " scores; axes bounded value by value: ",
                    r.audit_failed_axes.empty()
                        ? std::string("none")
                        : absl::StrJoin(r.audit_failed_axes, ", "),
                    "; axes found to change memory: ",
                    r.audit_memory_axes.empty()
                        ? std::string("none")
                        : absl::StrJoin(r.audit_memory_axes, ", "),
                    "\n");
  }
  for (const PruneCount& p : r.pruned) {
    absl::StrAppend(&out, absl::StrFormat("%14u  ", p.candidates),
                    Sv(PruneRuleName(p.rule)),
                    p.detail.empty() ? "" : absl::StrCat(" (", p.detail, ")"),
                    p.evaluated ? " [scored]" : "", ": ", Sv(PruneRuleText(p.rule)),
                    "\n                e.g. ", p.example, "\n");
  }
  return out;
}

}  // namespace moetune::planner
