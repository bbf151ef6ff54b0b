#include "planner/step_model.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "planner/internal/pipeline_stages.h"
#include "planner/internal/step_model_data_parallel.h"
#include "planner/internal/step_model_layers.h"
#include "planner/internal/step_model_maxtext.h"
#include "planner/internal/step_model_memory.h"
#include "planner/internal/step_model_terms.h"
#include "planner/internal/strings.h"
#include "planner/prediction_interval.h"
#include "planner/routing.h"
#include "planner/units.h"

// One step, in stages (each a pure function in its own file):
//   layer costs        step_model_layers.cc     per layer kind, one micro-batch
//   pipeline stages    pipeline_stages.cc       layers -> ranks, rank times,
//                                               send/recv, bubble
//   data parallel      step_model_data_parallel.cc  DP collectives, optimizer
//   memory             step_model_memory.cc     per GPU, the fuller end rank
// Shared constants, breakdown slots and the per-layout Context are in
// internal/step_model_terms.h; the software generation's constants
// (StackConstants) in step_model.h.
namespace moetune::planner {

using namespace step_model_internal;  // NOLINT: this file's own internals

std::string_view StackGenerationName(StackGeneration generation) {
  switch (generation) {
    case StackGeneration::k2602:
      return "26.02";
    case StackGeneration::k2606:
      return "26.06";
  }
  return "unknown";
}

namespace {

// A container's YY x 100 + MM, e.g. 2604 for "26.04.01".
absl::StatusOr<int> ContainerYearMonth(std::string_view container) {
  absl::StatusOr<ContainerVersion> v = ParseContainerVersion(container);
  if (!v.ok()) return v.status();
  return v->year * 100 + v->month;
}

// The first container of each generation.
constexpr int kFirstContainer2602 = 2602;
constexpr int kFirstContainer2606 = 2606;

}  // namespace

absl::StatusOr<ContainerVersion> ParseContainerVersion(std::string_view container) {
  // YY.MM[.NN]: two-digit year and month, optional patch number.
  auto digits = [&](size_t pos, size_t n) {
    if (pos + n > container.size()) return -1;
    int v = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (container[i] < '0' || container[i] > '9') return -1;
      v = v * 10 + (container[i] - '0');
    }
    return v;
  };
  ContainerVersion v;
  v.year = digits(0, 2);
  v.month = digits(3, 2);
  bool ok = v.year >= 0 && v.month >= 1 && v.month <= 12 && container.size() >= 5 &&
            container[2] == '.';
  if (ok && container.size() > 5) {
    ok = container[5] == '.' && container.size() > 6;
    for (size_t i = 6; ok && i < container.size(); ++i) {
      ok = container[i] >= '0' && container[i] <= '9';
      // Saturates: no release has a patch number near it.
      v.patch = std::min(v.patch * 10 + (container[i] - '0'), 99999999);
    }
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "container version '", std::string(container), "' is not YY.MM[.NN] (e.g. 26.04.01)"));
  }
  return v;
}

absl::StatusOr<StackGeneration> StackGenerationForContainer(std::string_view container) {
  absl::StatusOr<int> ym = ContainerYearMonth(container);
  if (!ym.ok()) return ym.status();
  return *ym >= kFirstContainer2606 ? StackGeneration::k2606 : StackGeneration::k2602;
}

absl::StatusOr<bool> ContainerPredatesGenerations(std::string_view container) {
  absl::StatusOr<int> ym = ContainerYearMonth(container);
  if (!ym.ok()) return ym.status();
  return *ym < kFirstContainer2602;
}

absl::StatusOr<StackGeneration> ParseStackGeneration(std::string_view name) {
  if (name == "latest") return kLatestStackGeneration;
  return StackGenerationForContainer(name);
}

StackConstants StackConstantsFor(StackGeneration generation) {
  StackConstants k;
  k.generation = generation;
  switch (generation) {
    case StackGeneration::k2602:
      k.moe_host_hidden_by_ep_overlap = false;
      break;
    case StackGeneration::k2606:
      k.moe_host_hidden_by_ep_overlap = true;
      break;
  }
  return k;
}

StackConstants MaxTextStackConstants() {
  StackConstants k = StackConstantsFor(kLatestStackGeneration);
  k.framework = Framework::kMaxText;
  return k;
}

struct StepModel::Accumulator {
  Slots slots;  // per step, exposed terms sum to step_time_s
  double step_time_s = 0;
  double tokens_per_sec_per_gpu = 0;
  MemoryBreakdown memory;
  double peak_memory_bytes = 0;
  MemoryBreakdown last_stage_memory;
  double last_stage_memory_bytes = 0;
  int dp = 0;
  double moe_load_imbalance = 1.0;  // as priced (PricedImbalance)
  double host_offload_bytes = 0;   // offloaded activations + optimizer state, host, per GPU
  std::vector<int> stage_layers;  // breakdown only: layers per virtual stage
};

absl::StatusOr<StepModel> StepModel::Create(
    const ModelSpec& model, const ClusterSpec& cluster,
    const TrainingShape& shape, std::shared_ptr<const CostModel> cost_model,
    const StackConstants& stack) {
  if (cost_model == nullptr) {
    return absl::InvalidArgumentError("StepModel needs a cost model");
  }
  if (shape.gpus <= 0 || shape.seq_len <= 0 || shape.global_batch <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("training shape must be positive: gpus=", shape.gpus,
                     " seq_len=", shape.seq_len,
                     " global_batch=", shape.global_batch));
  }
  if (model.num_layers <= 0 || model.hidden_size <= 0 ||
      model.num_attention_heads <= 0 || model.vocab_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", model.name, "' has non-positive sizes"));
  }
  if (cost_model->cluster().name != cluster.name) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cost model is for cluster '", cost_model->cluster().name,
        "', not '", cluster.name, "'"));
  }
  StepModel s;
  s.stack_ = stack;
  s.model_ = model;
  s.shape_ = shape;
  s.cost_ = std::move(cost_model);
  s.model_flops_per_token_ = ModelFlopsPerToken(model, shape.seq_len);
  s.logits_macs_per_token_ = LogitsMacsPerToken(model);
  s.embedding_params_ = double(model.PaddedVocabSize()) * double(model.hidden_size);

  s.layer_kind_index_.resize(model.num_layers);
  for (int kind = 0; kind < kNumLayerKinds; ++kind) {
    LayerKindTables& t = s.kinds_[kind];
    t.moe = kind >= 2;
    t.sliding = kind % 2 == 1;
  }
  for (int l = 0; l < model.num_layers; ++l) {
    const int kind = (model.IsMoeLayer(l) ? 2 : 0) + (model.IsSlidingLayer(l) ? 1 : 0);
    s.layer_kind_index_[l] = kind;
    LayerKindTables& t = s.kinds_[kind];
    if (t.count++ == 0) FillLayerKindTables(model, l, shape.seq_len, &t);
  }
  s.mtp_kind_ = s.layer_kind_index_.back();
  // Layers of each kind before layer l, so that a stage's kind counts are two
  // lookups instead of a walk over its layers.
  s.kind_prefix_.assign(size_t(model.num_layers) + 1, {});
  for (int l = 0; l < model.num_layers; ++l) {
    s.kind_prefix_[size_t(l) + 1] = s.kind_prefix_[size_t(l)];
    ++s.kind_prefix_[size_t(l) + 1][size_t(s.layer_kind_index_[size_t(l)])];
  }
  return s;
}

struct StepModel::PreparedLayout::Cache {
  ParallelConfig p;  // dp resolved
  int m_micro = 0;
  Context c;  // layout part
  KindCosts layout_costs[kNumLayerKinds];
  Cost head_mem, head_tp_ag, embed_mem, pp_send;
  struct PerPrecision {
    bool ready = false;
    KindCosts kinds[kNumLayerKinds];  // qkv, oproj, fc1, fc2
    Cost logits, mtp_proj;
    // [routing][grouped][dedup]: routing 0 balanced (imbalance 1), 1 the
    // layout's natural-routing imbalance (natural_imbalance).
    bool experts_ready[2][2][2] = {};
    KindCosts experts[2][2][2];  // gfc1, gfc2, dispatch, combine
  };
  PerPrecision precision[kNumPrecisions];
  double natural_imbalance = 1.0;  // NaturalImbalanceOfLayout
};

StepModel::PreparedLayout::PreparedLayout() = default;
StepModel::PreparedLayout::~PreparedLayout() = default;
StepModel::PreparedLayout::PreparedLayout(PreparedLayout&&) noexcept = default;
StepModel::PreparedLayout& StepModel::PreparedLayout::operator=(
    PreparedLayout&&) noexcept = default;

namespace {

// The busiest EP rank's load / the mean under natural routing for this
// layout (planner/routing.h NaturalRoutingImbalance): each MoE layer waits
// for the busiest of its ep ranks; the step for the slowest of the EP
// groups that meet only at the gradient reduction, taken as the expert-DP
// replicas x pipeline stages (the stages' groups are chained by the
// pipeline, whose pace is set per micro-batch; counting them with the
// replicas over-states their spread, which the sqrt(passes) averaging
// keeps small), each summing the MoE layers of one stage x micro-batches.
double NaturalImbalanceOfLayout(const ModelSpec& m, const Context& c, const ParallelConfig& p,
                                int moe_layers, int m_micro) {
  if (!m.IsMoe() || p.ep <= 0 || p.pp <= 0) return 1.0;
  static const double expert_load_cv = ExpertLoadCv(kNaturalRoutingExpertLoadGini);
  RoutingShape s;
  s.tokens_per_rank = c.tokens_rank;
  s.top_k = m.moe_top_k;
  s.experts_per_rank = std::max(1, m.num_routed_experts / p.ep);
  s.ep = p.ep;
  s.ep_groups = ExpertDpGroup(p) * p.pp;
  s.layer_passes_per_step = double(moe_layers) / p.pp * m_micro;
  return NaturalRoutingImbalance(s, expert_load_cv);
}

// The imbalance a step is priced with: an explicit moe_load_imbalance as
// given; else the layout's natural-routing value under natural routing, 1
// under forced balance.
double PricedImbalance(const Knobs& k, double natural_imbalance) {
  if (k.moe_load_imbalance != 1.0) return std::max(1.0, k.moe_load_imbalance);
  return k.routing == Routing::kNatural ? natural_imbalance : 1.0;
}

}  // namespace

void StepModel::Prepare(const ParallelConfig& parallel,
                        PreparedLayout* prepared) const {
  prepared->parallel = parallel;
  prepared->layout = CheckLayout(model_, shape_, parallel);
  if (prepared->layout != Infeasibility::kNone) return;  // the cache is not read
  if (prepared->cache == nullptr) prepared->cache = std::make_unique<PreparedLayout::Cache>();
  PreparedLayout::Cache& pc = *prepared->cache;
  // Clear what is filled conditionally below; the per-precision entries are
  // cleared when first filled (LookUpCosts), so reuse costs no full clear.
  for (KindCosts& k : pc.layout_costs) k = KindCosts();
  pc.head_tp_ag = Cost();
  pc.pp_send = Cost();
  for (PreparedLayout::Cache::PerPrecision& pr : pc.precision) {
    pr.ready = false;
    for (auto& routing : pr.experts_ready) {
      for (auto& row : routing) row[0] = row[1] = false;
    }
  }
  pc.p = parallel;
  pc.p.dp = ResolvedDp(shape_, pc.p);
  pc.m_micro = NumMicroBatches(shape_, pc.p);
  pc.c = LayoutContext(cost_.get(), &model_, shape_, &stack_, pc.p, pc.m_micro);
  for (int k = 0; k < kNumLayerKinds; ++k) {
    if (kinds_[k].count > 0) LayoutKindCosts(kinds_[k], pc.c, &pc.layout_costs[k]);
  }
  pc.head_mem = CrossEntropyMem(pc.c, model_, pc.p.tp);
  if (pc.p.tp > 1) pc.head_tp_ag = HeadTpGather(pc.c, model_, pc.p.tp);
  pc.embed_mem = EmbeddingMem(pc.c, model_);
  if (pc.p.pp > 1) pc.pp_send = PpSendRecv(pc.c, model_, shape_, pc.p.pp);
  int moe_layers = 0;
  for (int k = 0; k < kNumLayerKinds; ++k) moe_layers += kinds_[k].moe ? kinds_[k].count : 0;
  pc.natural_imbalance = NaturalImbalanceOfLayout(model_, pc.c, pc.p, moe_layers, pc.m_micro);
}

namespace {

using Cache = StepModel::PreparedLayout::Cache;

// The cost-model lookups of each layer kind for these knobs (c has them
// set): the layout's from the cache, the precision's (and, at balanced
// routing, the experts') filled into the cache on first use, the experts'
// under an explicit imbalance looked up each time. Returns the precision's entry.
const Cache::PerPrecision& LookUpCosts(const StepModel::LayerKindTables kinds[],
                                       const ModelSpec& model, const Context& c,
                                       const Knobs& knobs, Cache* pc, KindCosts kc[]) {
  const bool grouped = knobs.grouped_gemm;
  const bool dedup = knobs.dispatcher == Dispatcher::kFusedDedup;
  const double imbalance = std::max(1.0, knobs.moe_load_imbalance);
  Cache::PerPrecision& pr = pc->precision[int(knobs.precision)];
  if (!pr.ready) {
    for (int k = 0; k < kNumLayerKinds; ++k) {
      if (kinds[k].count == 0) continue;
      pr.kinds[k] = KindCosts();  // PrecisionKindCosts sets fc1/fc2 only where used
      PrecisionKindCosts(kinds[k], c, &pr.kinds[k]);
    }
    pr.logits = LogitsGemm(c, model, pc->p.tp);
    pr.mtp_proj = model.mtp_layers > 0 ? MtpProjGemm(c, model, pc->p.tp) : Cost();
    pr.ready = true;
  }
  for (int k = 0; k < kNumLayerKinds; ++k) {
    if (kinds[k].count == 0) continue;
    KindCosts& x = kc[k];
    x = pc->layout_costs[k];
    const KindCosts& y = pr.kinds[k];
    x.qkv = y.qkv;
    x.oproj = y.oproj;
    x.fc1 = y.fc1;
    x.fc2 = y.fc2;
    x.tp_in_ag = y.tp_in_ag;
    x.tp_attn_in_ag = y.tp_attn_in_ag;
    x.tp_overlap_chunking = y.tp_overlap_chunking;
    if (!kinds[k].moe) continue;
    // Cached: balanced routing and the layout's natural-routing imbalance;
    // any other (explicit) imbalance is looked up each time.
    const int routing = imbalance == 1.0 ? 0 : imbalance == pc->natural_imbalance ? 1 : -1;
    if (routing < 0) {
      ExpertKindCosts(c, grouped, dedup, imbalance, &x);
      continue;
    }
    KindCosts& e = pr.experts[routing][grouped][dedup];
    if (!pr.experts_ready[routing][grouped][dedup]) {
      e = KindCosts();  // ExpertKindCosts adds to dispatch / combine
      ExpertKindCosts(c, grouped, dedup, imbalance, &e);
      pr.experts_ready[routing][grouped][dedup] = true;
    }
    x.gfc1 = e.gfc1;
    x.gfc2 = e.gfc2;
    x.dispatch = e.dispatch;
    x.combine = e.combine;
    x.dispatch_nvlink_share = e.dispatch_nvlink_share;
    x.combine_nvlink_share = e.combine_nvlink_share;
  }
  return pr;
}

// Layer-wise offload (Knobs::offload_layers; Megatron runs it at pp 1 only,
// framework_rules.h): the first N layers of the model, in order, send every
// tensor they save to host memory (their activations, LayerActivationBytes)
// and fetch it back for backward, on TE's schedule
// (LayerOffloadExposedSeconds). Each layer's compute is its critical path,
// one third forward and two thirds backward (as AddOffloadTerms).
void PriceLayerOffload(const CostModel& cost, const std::vector<int>& layer_kind_index,
                       int offload_layers, KindResults* kr) {
  const int L = static_cast<int>(layer_kind_index.size());
  const size_t n = static_cast<size_t>(L);
  std::vector<double> fwd(n), bwd(n), copy(n);
  for (int l = 0; l < L; ++l) {
    const int k = layer_kind_index[size_t(l)];
    fwd[size_t(l)] = kr->time_norc[k] / 3;
    bwd[size_t(l)] = 2 * kr->time_norc[k] / 3;
    copy[size_t(l)] = cost.HostOffload(kr->act_norc[k]).seconds;
    if (l < offload_layers) {
      kr->offloaded_act += kr->act_norc[k];
      kr->offload_copy_s += 2 * copy[size_t(l)];
    }
  }
  kr->offload_exposed_s =
      LayerOffloadExposedSeconds(fwd.data(), bwd.data(), copy.data(), L, offload_layers);
}

// Per-step slots of the bottleneck rank b (the breakdown; Quick needs only
// the totals): its layers x micro-batches, the embedding / head if it holds
// them, its send/recv, and the bubble.
Slots BottleneckSlots(const StepModel::LayerKindTables kinds[], const KindResults& kr,
                      const RankLayers& ranks, int b, int pp, int m_micro,
                      const Slots& embed, const Slots& head, const Slots& pp_slots,
                      double bubble) {
  Slots step;
  for (int k = 0; k < kNumLayerKinds; ++k) {
    if (kinds[k].count == 0) continue;  // zero slots: adds nothing
    const int n_rc = ranks.counts_rc[b][k];
    step.AddScaled(kr.cost[k], double(n_rc) * m_micro);
    step.AddScaled(*kr.cost_norc[k], double(ranks.counts[b][k] - n_rc) * m_micro);
  }
  if (b == 0) step.AddScaled(embed, m_micro);
  if (b == pp - 1) step.AddScaled(head, m_micro);
  step.AddScaled(pp_slots, m_micro);
  step.AddSeconds(kSBubble, bubble, kPriorBit);
  return step;
}

}  // namespace

Infeasibility StepModel::Evaluate(PreparedLayout& prepared, const Knobs& requested,
                                  Accumulator* acc, bool breakdown) const {
  if (prepared.layout != Infeasibility::kNone) return prepared.layout;
  if (!PeakDenseFlopsPerSec(cost_->cluster().gpu, requested.precision).has_value()) {
    return Infeasibility::kPrecisionUnsupported;
  }
  PreparedLayout::Cache& pc = *prepared.cache;
  const ParallelConfig& p = pc.p;
  const int m_micro = pc.m_micro;
  Context c = pc.c;
  // The knobs as priced: the routing turned into the busiest EP rank's load.
  Knobs knobs = requested;
  knobs.moe_load_imbalance = PricedImbalance(requested, pc.natural_imbalance);
  acc->moe_load_imbalance = knobs.moe_load_imbalance;
  SetKnobs(&c, knobs);
  const PlanTables plan{&model_, &stack_, kinds_, mtp_kind_, embedding_params_};

  // 1. Each layer kind's cost and activations for one micro-batch.
  KindCosts kc[kNumLayerKinds];
  const Cache::PerPrecision& pr = LookUpCosts(kinds_, model_, c, knobs, &pc, kc);
  KindResults kr;
  KindLayerCosts(kinds_, c, kc, &kr);
  const bool layer_offload = knobs.offload_layers > 0 && p.pp == 1 && !IsMaxText(stack_);
  if (layer_offload) {
    PriceLayerOffload(*cost_, layer_kind_index_, knobs.offload_layers, &kr);
    // One micro-batch's offloaded layers at a time (pp 1), in pinned host
    // memory; the whole of the cluster's host memory per GPU is the bound.
    const double host = cost_->cluster().host_memory_bytes_per_gpu;
    if (host > 0 && kr.offloaded_act > host) return Infeasibility::kHostMemoryExceeded;
    acc->host_offload_bytes = kr.offloaded_act;
  }
  // Output layer and loss, MTP (last stage), embedding (first stage).
  const Slots head = HeadSlots(c, model_, pr.logits, pc.head_mem, pc.head_tp_ag,
                               pr.mtp_proj, kr.cost[mtp_kind_]);
  Slots embed;
  embed.Add(kSMemBound, pc.embed_mem);
  const double head_time = CriticalPath(head);
  const double embed_time = CriticalPath(embed);

  // 2. Pipeline: layers per virtual stage, then per rank; the slowest rank
  // sets the pace: step = m x t_max + bubble + exposed DP + optimizer.
  StageSplit split;
  Infeasibility reason = SplitStages(p, layer_kind_index_, kr.time_norc, head_time,
                                     embed_time, &split);
  if (reason != Infeasibility::kNone) return reason;
  RankLayers ranks;  // only the first pp rows are set
  reason = AssignLayers(p, split, kind_prefix_, &ranks,
                        breakdown ? &acc->stage_layers : nullptr);
  if (reason != Infeasibility::kNone) return reason;
  RankTimes times;
  TimeRanks(p, knobs.recompute, kr, embed_time, head_time, &ranks, &times);
  const Slots pp_slots =
      PpSendRecvSlots(p, knobs, stack_, pc.pp_send, times.time[times.bottleneck]);
  const double pp_exposed = pp_slots.s[kSPpExposed];
  const double t_max = times.time[times.bottleneck] + pp_exposed + kr.offload_exposed_s;
  const double t_avg = times.sum / p.pp + pp_exposed;
  const double bubble = PipelineBubble(p, t_avg);
  if (breakdown) {
    acc->slots = BottleneckSlots(kinds_, kr, ranks, times.bottleneck, p.pp, m_micro, embed,
                                 head, pp_slots, bubble);
    if (layer_offload) {
      const uint8_t src = SourceBit(cost_->HostOffload(1.0).source);
      acc->slots.AddSeconds(kSOffloadExposed, m_micro * kr.offload_exposed_s, src);
      acc->slots.AddSeconds(kSOffloadHidden,
                            m_micro * (kr.offload_copy_s - kr.offload_exposed_s), src);
    }
  }

  // 3. Data parallelism and the optimizer (the bottleneck rank's).
  DpAndOptimizer dp;
  if (!c.lora) {
    const RankParams params =
        ParamsOnRank(plan, p, ranks.counts[times.bottleneck], times.bottleneck);
    if (IsMaxText(stack_)) {
      // The bottleneck rank's EP exchange shares a single collective stream
      // with the FSDP collectives.
      dp = MaxTextFsdpAndOptimizer(*cost_, p, knobs, stack_.maxtext, m_micro, m_micro * t_max,
                                   MaxTextEpSecondsPerStep(ranks, times.bottleneck, kr, m_micro),
                                   params, breakdown ? &acc->slots : nullptr);
    } else {
      dp = DataParallelAndOptimizer(*cost_, p, knobs, m_micro, t_max, params,
                                    breakdown ? &acc->slots : nullptr);
    }
  }
  // The step's own host time (Megatron stacks; MaxText prices its own).
  const double step_host = IsMaxText(stack_) ? 0.0 : stack_.step_host_s;
  if (breakdown && step_host > 0) acc->slots.AddSeconds(kSStepHost, step_host, kPriorBit);
  acc->step_time_s = m_micro * t_max + bubble + dp.dp_exposed_s + dp.optimizer_s + step_host;
  acc->tokens_per_sec_per_gpu =
      double(shape_.global_batch) * shape_.seq_len / (acc->step_time_s * shape_.gpus);
  acc->dp = p.dp;

  // 4. Memory per GPU.
  const PeakMemory mem = IsMaxText(stack_) ? MaxTextPeakMemory(plan, c, p, m_micro, ranks, kr)
                                            : PeakMemoryPerGpu(plan, c, p, m_micro, ranks, kr);
  if (knobs.offload_activations && !IsMaxText(stack_)) {
    // The offloaded activations live in pinned host memory until reloaded.
    acc->host_offload_bytes += FineGrainedOffloadHostBytes(p, m_micro, ranks, kr);
  }
  // The optimizer-state CPU offload's share, beside them in host memory.
  acc->host_offload_bytes += mem.memory.host_optimizer_bytes;
  if (acc->host_offload_bytes > 0) {
    const double host = cost_->cluster().host_memory_bytes_per_gpu;
    if (host > 0 && acc->host_offload_bytes > host) return Infeasibility::kHostMemoryExceeded;
  }
  acc->memory = mem.memory;
  acc->peak_memory_bytes = mem.total_bytes;
  acc->last_stage_memory = mem.last_stage;
  acc->last_stage_memory_bytes = mem.last_stage_total_bytes;
  return Infeasibility::kNone;
}

Estimate StepModel::Quick(PreparedLayout& prepared, const Knobs& knobs) const {
  Estimate e;
  Accumulator acc;
  e.reason = Evaluate(prepared, knobs, &acc, /*breakdown=*/false);
  if (e.reason != Infeasibility::kNone) return e;
  e.step_time_s = acc.step_time_s;
  e.tokens_per_sec_per_gpu = acc.tokens_per_sec_per_gpu;
  e.peak_memory_bytes = acc.peak_memory_bytes;
  e.fits = acc.peak_memory_bytes <= cost_->cluster().gpu.hbm_bytes;
  return e;
}

namespace {
// One scratch layout per thread for the one-shot calls (Quick(parallel),
// Predict): Prepare refills everything Evaluate reads, so reusing it saves
// an allocation and clearing the whole cache per call.
StepModel::PreparedLayout& ThreadScratchLayout() {
  thread_local StepModel::PreparedLayout scratch;
  return scratch;
}
}  // namespace

Estimate StepModel::Quick(const ParallelConfig& parallel, const Knobs& knobs) const {
  PreparedLayout& prepared = ThreadScratchLayout();
  Prepare(parallel, &prepared);
  return Quick(prepared, knobs);
}

absl::StatusOr<Prediction> StepModel::Predict(const ParallelConfig& parallel,
                                              const Knobs& knobs) const {
  if (absl::Status s = Validate(model_, shape_, parallel); !s.ok()) return s;
  // The search's path: the layout prepared, then evaluated with breakdown.
  PreparedLayout& prepared = ThreadScratchLayout();
  Prepare(parallel, &prepared);
  Accumulator acc;
  const Infeasibility reason = Evaluate(prepared, knobs, &acc, /*breakdown=*/true);
  if (reason == Infeasibility::kPrecisionUnsupported) {
    return absl::UnimplementedError(absl::StrCat(
        "GPU ", cost_->cluster().gpu.name, " has no ",
        internal::Sv(PrecisionName(knobs.precision)), " tensor cores"));
  }
  if (reason != Infeasibility::kNone) {
    return absl::InvalidArgumentError(absl::StrCat(
        "infeasible layout: ", internal::Sv(InfeasibilityName(reason)), " (",
        ToString(parallel), ")"));
  }
  Prediction pr;
  pr.step_time_s = acc.step_time_s;
  pr.tokens_per_sec_per_gpu = acc.tokens_per_sec_per_gpu;
  pr.model_flops_per_token =
      model_flops_per_token_ *
      (shape_.objective == Objective::kLora ? kLoraFlopsFraction : 1.0);
  pr.model_tflops_per_gpu =
      pr.model_flops_per_token * pr.tokens_per_sec_per_gpu / units::kTFLOP;
  pr.mfu = pr.model_flops_per_token * pr.tokens_per_sec_per_gpu /
           *PeakDenseFlopsPerSec(cost_->cluster().gpu, knobs.precision);
  pr.memory = acc.memory;
  pr.peak_memory_bytes = acc.peak_memory_bytes;
  pr.last_stage_memory = acc.last_stage_memory;
  pr.last_stage_memory_bytes = acc.last_stage_memory_bytes;
  pr.hbm_bytes = cost_->cluster().gpu.hbm_bytes;
  pr.fits = pr.peak_memory_bytes <= pr.hbm_bytes;
  pr.host_offload_bytes = acc.host_offload_bytes;
  bool all_calibrated = true;
  for (int i = 0; i < kNumSlots; ++i) {
    if (acc.slots.s[i] <= 0) continue;
    Term t;
    t.name = kSlots[i].name;
    t.kind = kSlots[i].kind;
    t.seconds = acc.slots.s[i];
    t.source = acc.slots.src[i] == kCalibratedBit ? CostSource::kCalibrated
                                                  : CostSource::kDatasheetPrior;
    all_calibrated = all_calibrated && t.source == CostSource::kCalibrated;
    pr.breakdown.push_back(std::move(t));
  }
  pr.fully_calibrated = all_calibrated;
  std::vector<std::string> unmeasured =
      UnmeasuredSettings(model_, cost_->cluster(), shape_, parallel, knobs);
  if (!stack_.predating_container.empty()) {
    unmeasured.push_back(absl::StrCat("container ", stack_.predating_container,
                                      " older than 26.02 (priced as generation 26.02)"));
  }
  pr.interval = IntervalFor(pr.tokens_per_sec_per_gpu, model_.IsMoe(), unmeasured);
  pr.model = model_;
  pr.cluster_name = cost_->cluster().name;
  pr.cluster = cost_->cluster();
  pr.stage_layers = std::move(acc.stage_layers);
  pr.shape = shape_;
  pr.parallel = parallel;
  pr.parallel.dp = acc.dp;
  pr.knobs = knobs;
  pr.moe_load_imbalance_priced = acc.moe_load_imbalance;
  return pr;
}

}  // namespace moetune::planner
