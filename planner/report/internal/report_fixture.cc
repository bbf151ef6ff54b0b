#include "planner/report/internal/report_fixture.h"

#include <string>
#include <utility>
#include <vector>

#include "planner/units.h"

namespace moetune::planner::report_internal {
namespace {

using units::kGiB;

ModelSpec ToyModel() {
  ModelSpec m;
  m.name = "toy-moe <v2> & co";  // escaped on the page
  m.model_type = "native";
  m.num_layers = 16;
  m.hidden_size = 2048;
  m.vocab_size = 32000;
  m.num_attention_heads = 16;
  m.num_kv_heads = 4;
  m.head_dim = 128;
  m.v_head_dim = 128;
  m.ffn_hidden_size = 8192;
  m.num_routed_experts = 64;
  m.moe_top_k = 4;
  m.moe_ffn_hidden_size = 1024;
  return m;
}

ClusterSpec ToyCluster() {
  ClusterSpec c;
  c.name = "toy-cluster";
  c.gpu.name = "Toy GPU \"80GiB\"";
  c.gpu.generation = GpuGeneration::kHopper;
  c.gpu.bf16_dense_flops_per_sec = 1e15;
  c.gpu.fp8_dense_flops_per_sec = 2e15;
  c.gpu.hbm_bytes = 80 * kGiB;
  c.gpu.hbm_bytes_per_sec = 3e12;
  c.gpus_per_node = 8;
  c.nvlink_domain_gpus = 8;
  c.nvlink_bytes_per_sec = 4e11;
  c.scaleout_bytes_per_sec = 5e10;
  return c;
}

// A plan's prediction whose headline figures are given; the breakdown and
// memory are filled only for the best plan (the page draws them for it).
Prediction Make(const SearchProblem& pb, ParallelConfig pc, Knobs knobs,
                double tokens_per_sec_per_gpu, double peak_gib) {
  Prediction p;
  p.model = pb.model;
  p.cluster_name = pb.cluster.name;
  p.shape = pb.shape;
  p.parallel = pc;
  p.knobs = knobs;
  p.tokens_per_sec_per_gpu = tokens_per_sec_per_gpu;
  // tokens per step / (tokens/s/GPU x GPUs).
  p.step_time_s = static_cast<double>(pb.shape.global_batch) *
                  pb.shape.seq_len /
                  (tokens_per_sec_per_gpu * pb.shape.gpus);
  p.model_flops_per_token = 1e10;  // round, not the toy model's real count
  p.model_tflops_per_gpu = tokens_per_sec_per_gpu * 1e10 / 1e12;
  p.mfu = p.model_tflops_per_gpu * 1e12 / pb.cluster.gpu.bf16_dense_flops_per_sec;
  p.peak_memory_bytes = peak_gib * kGiB;
  p.hbm_bytes = pb.cluster.gpu.hbm_bytes;
  p.fits = p.peak_memory_bytes <= 0.9 * p.hbm_bytes;
  return p;
}

RankedPlan Ranked(Prediction p) {
  RankedPlan r;
  r.plan.parallel = p.parallel;
  r.plan.knobs = p.knobs;
  r.prediction = std::move(p);
  return r;
}

}  // namespace

ReportInput ToyMoeReport() {
  ReportInput in;
  SearchResult& r = in.result;
  r.problem.model = ToyModel();
  r.problem.cluster = ToyCluster();
  r.problem.shape.gpus = 64;
  r.problem.shape.seq_len = 4096;
  r.problem.shape.global_batch = 256;  // 1,048,576 tokens per step
  r.memory_limit_bytes = 0.9 * 80 * kGiB;  // 72 GiB

  // Best: tp2 pp4 vp2 ep8 dp8 mbs1 -> 256 / (8 x 1) = 32 micro-batches.
  ParallelConfig best_pc;
  best_pc.tp = 2;
  best_pc.pp = 4;
  best_pc.vp = 2;
  best_pc.ep = 8;
  best_pc.dp = 8;
  Knobs best_knobs;
  best_knobs.recompute.mode = RecomputeMode::kSelective;
  best_knobs.recompute.modules = kRecomputeMoeAct;
  // Step time 0.9 s: 1,048,576 tokens / (0.9 s x 64) = 18,204.4 tok/s/GPU.
  Prediction best = Make(r.problem, best_pc, best_knobs,
                         1048576.0 / (0.9 * 64), 68);
  // Exposed terms: 0.10 + 0.20 + 0.30 + 0.05 + 0.05 + 0.02 + 0.06 + 0.01 +
  // 0.02 + 0.06 + 0.03 = 0.90 s = the step time. Hidden: 0.35 s.
  const auto C = CostSource::kCalibrated;
  const auto P = CostSource::kDatasheetPrior;
  best.breakdown = {
      {"attention.core", TermKind::kComputeAttention, 0.10, P},
      {"dense.gemm", TermKind::kComputeDenseGemm, 0.20, P},
      {"moe.experts", TermKind::kComputeGroupedGemm, 0.30, C},
      {"other.memory_bound", TermKind::kComputeOther, 0.05, P},
      {"recompute.moe_act", TermKind::kRecompute, 0.05, P},
      {"tp.collectives", TermKind::kCommTpExposed, 0.02, P},
      {"tp.collectives.overlapped", TermKind::kCommTpHidden, 0.08, P},
      {"moe.dispatch_combine", TermKind::kCommEpExposed, 0.06, C},
      {"moe.dispatch_combine.overlapped", TermKind::kCommEpHidden, 0.14, C},
      {"pp.send_recv", TermKind::kCommPpExposed, 0.01, P},
      {"pp.send_recv.overlapped", TermKind::kCommPpHidden, 0.03, P},
      {"dp.grad_sync", TermKind::kCommDpExposed, 0.02, P},
      {"dp.grad_sync.overlapped", TermKind::kCommDpHidden, 0.10, P},
      {"pipeline.bubble", TermKind::kPipelineBubble, 0.06, P},
      {"optimizer.step", TermKind::kOptimizer, 0.03, P},
  };
  // 10 + 10 + 15 + 25 + 3 + 5 = 68 GiB = the peak.
  best.memory.weights_bytes = 10 * kGiB;
  best.memory.grads_bytes = 10 * kGiB;
  best.memory.optimizer_bytes = 15 * kGiB;
  best.memory.activations_bytes = 25 * kGiB;
  best.memory.comm_buffers_bytes = 3 * kGiB;
  best.memory.reserve_bytes = 5 * kGiB;
  r.best = Ranked(best);

  ParallelConfig second_pc = best_pc;
  second_pc.vp = 1;
  ParallelConfig third_pc = best_pc;
  third_pc.tp = 4;
  third_pc.pp = 2;
  third_pc.vp = 1;
  Knobs third_knobs = best_knobs;
  third_knobs.dispatcher = Dispatcher::kAllToAll;
  r.top = {r.best, Ranked(Make(r.problem, second_pc, best_knobs, 17000, 70)),
           Ranked(Make(r.problem, third_pc, third_knobs, 15500, 55))};

  ParallelConfig small_pc = best_pc;
  small_pc.pp = 8;
  small_pc.dp = 4;
  Knobs full = best_knobs;
  full.recompute.mode = RecomputeMode::kFull;
  full.recompute.modules = 0;
  // By increasing memory: 30, 40, 55 (top #3), 68 GiB (best); top #2
  // (70 GiB, 17,000) is dominated by the best plan.
  r.pareto = {Ranked(Make(r.problem, small_pc, full, 9000, 30)),
              Ranked(Make(r.problem, small_pc, best_knobs, 12000, 40)),
              r.top[2], r.best};

  // 12,000 = 3,400 scored + 8,000 invalid + 600 bounded; 2,100 feasible =
  // 3,400 - 1,300 over memory.
  r.candidates_total = 12000;
  r.candidates_evaluated = 3400;
  r.candidates_feasible = 2100;
  r.search_seconds = 1.25;
  r.pruned = {
      {PruneRule::kInvalidLayout, "tp_does_not_divide_heads", false, 8000,
       "tp=32 pp=1 ..."},
      {PruneRule::kBoundBelowTopK, "", false, 600, "tp=1 pp=16 ..."},
      {PruneRule::kOverMemory, "", true, 1300, "tp=1 pp=1 ... 96.0 GiB"},
  };

  // What-ifs: tokens/s/GPU as a hand-made re-planner would return them.
  struct Row {
    WhatIfKnob knob;
    double factor;
    double tps;  // 0: infeasible
    bool other_plan;
  };
  const Row rows[] = {
      {WhatIfKnob::kScaleOutBandwidth, 0.5, 16000, true},
      {WhatIfKnob::kScaleOutBandwidth, 2, 18900, false},
      {WhatIfKnob::kNvlinkBandwidth, 0.5, 17500, false},
      {WhatIfKnob::kNvlinkBandwidth, 2, 18300, false},
      {WhatIfKnob::kHbmBandwidth, 0.5, 16800, false},
      {WhatIfKnob::kHbmBandwidth, 2, 19000, false},
      {WhatIfKnob::kGpuCount, 0.5, 0, false},
      {WhatIfKnob::kGpuCount, 2, 17200, true},
  };
  for (const Row& row : rows) {
    WhatIfResult w;
    w.scenario = {row.knob, row.factor};
    w.gpus = row.knob == WhatIfKnob::kGpuCount
                 ? static_cast<int>(64 * row.factor)
                 : 64;
    if (row.tps == 0) {
      w.error = "no plan fits in memory: weights alone need 96.0 GiB per GPU";
    } else {
      SearchProblem pb = r.problem;
      pb.shape.gpus = w.gpus;
      w.best = Ranked(Make(pb, row.other_plan ? third_pc : best_pc,
                           row.other_plan ? third_knobs : best_knobs, row.tps,
                           60));
      if (row.knob == WhatIfKnob::kGpuCount) {
        w.best->prediction.parallel.dp = w.gpus / 8;
        w.best->plan.parallel.dp = w.gpus / 8;
      }
    }
    in.what_ifs.push_back(std::move(w));
  }

  in.calibration.cluster = "lab-a";
  in.calibration.fitted_at = "2026-11-27T06:00:00Z";
  in.calibration.note =
      "calibrated from 412 results of cluster 'lab-a'; datasheet priors for "
      "terms without measurements";
  in.generated_at = "2026-11-29T18:00:00Z";  // 2.5 days after fitting
  in.timeline_ranks = 3;
  return in;
}

ReportInput DenseNoPipelineReport() {
  ReportInput in;
  SearchResult& r = in.result;
  r.problem.model = ToyModel();
  r.problem.model.name = "toy-dense";
  r.problem.model.num_routed_experts = 0;
  r.problem.model.moe_top_k = 0;
  r.problem.model.moe_ffn_hidden_size = 0;
  r.problem.cluster = ToyCluster();
  r.problem.shape.gpus = 8;
  r.problem.shape.seq_len = 2048;
  r.problem.shape.global_batch = 32;  // 65,536 tokens per step
  r.memory_limit_bytes = 80 * kGiB;
  r.exhaustive = true;

  ParallelConfig pc;
  pc.tp = 2;
  pc.dp = 4;
  pc.mbs = 2;  // 32 / (4 x 2) = 4 micro-batches
  Knobs knobs;
  // Step 0.5 s: 65,536 / (0.5 x 8) = 16,384 tok/s/GPU.
  Prediction p = Make(r.problem, pc, knobs, 16384, 40);
  // 0.15 + 0.25 + 0.04 + 0.03 + 0.03 = 0.50 s.
  const auto P = CostSource::kDatasheetPrior;
  p.breakdown = {
      {"attention.core", TermKind::kComputeAttention, 0.15, P},
      {"dense.gemm", TermKind::kComputeDenseGemm, 0.25, P},
      {"other.memory_bound", TermKind::kComputeOther, 0.04, P},
      {"tp.collectives", TermKind::kCommTpExposed, 0.03, P},
      {"tp.collectives.overlapped", TermKind::kCommTpHidden, 0.05, P},
      {"optimizer.step", TermKind::kOptimizer, 0.03, P},
  };
  // 8 + 8 + 12 + 10 + 0 + 2 = 40 GiB.
  p.memory.weights_bytes = 8 * kGiB;
  p.memory.grads_bytes = 8 * kGiB;
  p.memory.optimizer_bytes = 12 * kGiB;
  p.memory.activations_bytes = 10 * kGiB;
  p.memory.reserve_bytes = 2 * kGiB;
  r.best = Ranked(p);
  r.top = {r.best};
  r.pareto = {r.best};
  r.candidates_total = 40;
  r.candidates_evaluated = 40;
  r.candidates_feasible = 40;
  r.search_seconds = 0.01;
  return in;
}

}  // namespace moetune::planner::report_internal
