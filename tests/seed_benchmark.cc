// The seed result as a benchmark (issue 14): DeepSeek-V3 671B trained with
// MaxText (JAX + XLA + Transformer Engine) on GB200 NVL72, NVIDIA technical
// blog 2026-09-14 "Accelerating Dropless MoE Training in JAX with NVIDIA
// Transformer Engine". Published: 128 GPUs (32 nodes x 4), seq 4096,
// per-device batch 6, no gradient accumulation (global batch 768), FSDP 16
// (ICI 8 x DCN 2) x EP 8, TP 1; baseline 103 model TFLOPS/GPU with 84% of
// kernel time in GPU-to-GPU communication; cumulatively TE/cuBLAS grouped
// GEMM -> XLA multi-stream collectives -> MXFP8 -> host offload of
// moe_mlpwi_0/1 -> NCCL EP dispatch/combine: 1,068 TFLOPS/GPU; 97% weak
// scaling 128 -> 1,024 GPUs on GB300 NVL72.
//
// The baseline's communication is the EP exchange: jax.lax.ragged_all_to_all
// inside the NVLink domain runs XLA's one-shot copy kernel, measured at
// 16.42 GiB/s per GPU at DeepSeek-V3's shape (openxla/xla#33386; about 2% of
// NVLink), 2.82 GB a call here, 5 calls per MoE layer (dispatch and combine
// forward and backward, the dispatch again under remat): ~47 s of the step.
// Every step up to NCCL EP keeps it; NCCL EP (TE) removes it. The compute
// side: the expert GEMMs as XLA's ragged dots, the weight gradients too
// (MaxTextConstants::ragged_dot_wgrad_expanded false: upstream XLA of that
// date expanded them, but the expansion's masked operands would not fit
// beside the run, and its seconds would not leave the published share; the
// benchmark prints that counterfactual).
//
// The final step's MaxText-specific costs beyond the shared GEMM/attention
// efficiency: the NCCL EP exchange shares NVLink with the FSDP collectives
// the latency-hiding scheduler runs beside it (MaxTextLinkContentionSeconds)
// and the moe_mlpwi_0/1 host copies overlap only their own scan iteration
// (XLA's pipelined host offloading is off by default,
// MaxTextConstants::pipelined_host_offloading). Looked at and left out: the
// first all-gather / last reduce-scatter the collective pipeliner peels out
// of the layer scan (a dense layer and the embedding: ~13 ms of a ~5.5 s
// step by hand), the DCN reduce-scatter of fp32 gradients (already priced,
// and hidden per layer with room to spare), offload traffic over
// NVLink-C2C (a separate link from the NVLink the EP exchange uses).
//
// The step model is built directly with MaxTextStackConstants() (the CLI's
// --framework plumbing is separate work). The test asserts the physics that
// must hold whatever the constants (memory fits, each ladder step a gain,
// communication share falling as the ladder removes it, weak scaling at most
// 100%) and prints the published targets as MET or MISSED; a missed target
// does not fail the test (it is a finding, reported as such).
//
//   bazel test //tests:seed_benchmark --test_output=all
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "planner/cost_model.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/prediction.h"
#include "planner/step_model.h"
#include "planner/training_config.h"
#include "planner/units.h"

namespace moetune::planner {
namespace {

constexpr double kPublishedFinalTflops = 1068;
constexpr double kPublishedBaselineTflops = 103;
constexpr double kPublishedBaselineCommShare = 0.84;
constexpr double kPublishedWeakScaling = 0.97;

StepModel Make(const char* cluster_name, int gpus, int global_batch,
               const StackConstants& stack = MaxTextStackConstants()) {
  absl::StatusOr<ModelSpec> model = LoadModelPreset("deepseek-v3");
  EXPECT_TRUE(model.ok()) << model.status();
  absl::StatusOr<ClusterSpec> cluster = LoadClusterPreset(cluster_name);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  TrainingShape shape;
  shape.gpus = gpus;
  shape.seq_len = 4096;
  shape.global_batch = global_batch;
  absl::StatusOr<StepModel> sm =
      StepModel::Create(*model, *cluster, shape, std::make_shared<DatasheetCostModel>(*cluster),
                        stack);
  EXPECT_TRUE(sm.ok()) << sm.status();
  return *std::move(sm);
}

// FSDP (fsdp x expert = all GPUs) x EP 8, TP 1, per-device batch 6, one
// micro-batch per step.
ParallelConfig SeedLayout() {
  ParallelConfig p;
  p.tp = 1;
  p.pp = 1;
  p.ep = 8;
  p.mbs = 6;
  p.shard_params = true;
  return p;
}

struct Step {
  std::string name;
  Knobs knobs;
};

// The published ladder, cumulative, in its order.
std::vector<Step> Ladder() {
  Knobs k;
  k.dispatcher = Dispatcher::kAllToAll;  // ragged all-to-all
  k.grouped_gemm = false;                // XLA ragged_dot
  k.overlap.num_comm_streams = 1;        // one collective stream
  k.precision = Precision::kBf16;
  // Custom remat: decoder_layer_input on the device, the attention
  // projections, context, norms/out_proj, shared experts and the routed
  // experts (moe_mlpwi_0/1, moe_mlpwo) rematerialised; the offload step
  // then moves moe_mlpwi_0/1 from remat to offload.
  k.recompute.mode = RecomputeMode::kSelective;
  k.recompute.modules = kRecomputeMoe | kRecomputeCoreAttn | kRecomputeMlaUpProj |
                        kRecomputeLayerNorm | kRecomputeSharedExperts | kRecomputeMlp;
  k.cuda_graphs = true;
  std::vector<Step> steps;
  steps.push_back({"baseline (ragged_dot, ragged a2a, 1 stream, BF16)", k});
  k.grouped_gemm = true;
  steps.push_back({"+ TE/cuBLAS grouped GEMM", k});
  k.overlap.num_comm_streams = 2;
  steps.push_back({"+ XLA multi-stream collectives", k});
  k.precision = Precision::kMxfp8;
  steps.push_back({"+ MXFP8 (dense FP8 current scaling, experts MXFP8)", k});
  k.offload_activations = true;
  k.offload_modules = kOffloadExpertFc1;
  steps.push_back({"+ offload moe_mlpwi_0/1 to host", k});
  k.dispatcher = Dispatcher::kFusedDedup;
  steps.push_back({"+ NCCL EP dispatch/combine (dedup)", k});
  return steps;
}

// GPU-to-GPU communication kernel time (exposed + hidden) and compute
// kernel time (compute, recompute, optimizer) from the prediction's
// breakdown; host copies (offload) are not GPU-to-GPU.
struct KernelTime {
  double comm_s = 0;
  double compute_s = 0;
};
KernelTime Kernels(const Prediction& pr) {
  double comm = 0, compute = 0;
  for (const Term& t : pr.breakdown) {
    switch (t.kind) {
      case TermKind::kCommTpExposed:
      case TermKind::kCommTpHidden:
      case TermKind::kCommEpExposed:
      case TermKind::kCommEpHidden:
      case TermKind::kCommCpExposed:
      case TermKind::kCommCpHidden:
      case TermKind::kCommPpExposed:
      case TermKind::kCommPpHidden:
      case TermKind::kCommDpExposed:
      case TermKind::kCommDpHidden:
        comm += t.seconds;
        break;
      case TermKind::kComputeAttention:
      case TermKind::kComputeDenseGemm:
      case TermKind::kComputeGroupedGemm:
      case TermKind::kComputeOther:
      case TermKind::kRecompute:
      case TermKind::kOptimizer:
        compute += t.seconds;
        break;
      default:
        break;
    }
  }
  return {comm, compute};
}
double CommShare(const Prediction& pr) {
  const KernelTime k = Kernels(pr);
  return k.comm_s / (k.comm_s + k.compute_s);
}

const char* Verdict(bool met) { return met ? "MET" : "MISSED"; }

double Seconds(const Prediction& pr, const std::string& name) {
  double s = 0;
  for (const Term& t : pr.breakdown) {
    if (t.name == name) s += t.seconds;
  }
  return s;
}

void PrintBreakdown(const Prediction& pr) {
  for (const Term& t : pr.breakdown) {
    std::printf("      %-32s %8.3f s\n", t.name.c_str(), t.seconds);
  }
  const MemoryBreakdown& m = pr.memory;
  std::printf(
      "      memory GiB: weights %.1f grads %.1f optimizer %.1f activations %.1f comm %.1f "
      "reserve %.1f = %.1f of %.1f\n",
      m.weights_bytes / units::kGiB, m.grads_bytes / units::kGiB,
      m.optimizer_bytes / units::kGiB, m.activations_bytes / units::kGiB,
      m.comm_buffers_bytes / units::kGiB, m.reserve_bytes / units::kGiB,
      pr.peak_memory_bytes / units::kGiB, pr.hbm_bytes / units::kGiB);
}

TEST(SeedBenchmark, MaxTextDeepSeekV3OnGb200) {
  const StepModel sm = Make("gb200-nvl72", 128, 768);
  const std::vector<Step> ladder = Ladder();
  std::vector<Prediction> preds;
  for (const Step& s : ladder) {
    absl::StatusOr<Prediction> pr = sm.Predict(SeedLayout(), s.knobs);
    ASSERT_TRUE(pr.ok()) << s.name << ": " << pr.status();
    preds.push_back(*pr);
  }
  std::printf("\nSeed ladder: DeepSeek-V3, 128 GB200 NVL72, MaxText FSDP 128 (expert fsdp 16) x EP 8,"
              " mbs 6, seq 4096, gbs 768\n");
  std::printf("  %-52s %9s %7s %7s %8s %8s %9s %6s\n", "step", "pred TF", "x prev",
              "comm %", "comm s", "comp s", "mem GiB", "fits");
  for (size_t i = 0; i < preds.size(); ++i) {
    const Prediction& pr = preds[i];
    const double gain = i == 0 ? 1.0 : pr.model_tflops_per_gpu / preds[i - 1].model_tflops_per_gpu;
    std::printf("  %-52s %9.1f %7.3f %7.1f %8.2f %8.2f %9.1f %6s\n", ladder[i].name.c_str(),
                pr.model_tflops_per_gpu, gain, 100 * CommShare(pr), Kernels(pr).comm_s,
                Kernels(pr).compute_s, pr.peak_memory_bytes / units::kGiB,
                pr.fits ? "yes" : "no");
  }
  std::printf("  baseline breakdown:\n");
  PrintBreakdown(preds.front());
  std::printf("  final breakdown:\n");
  PrintBreakdown(preds.back());

  const Prediction& base = preds.front();
  const Prediction& fin = preds.back();
  const double fin_err = fin.model_tflops_per_gpu / kPublishedFinalTflops - 1;
  const double base_err = base.model_tflops_per_gpu / kPublishedBaselineTflops - 1;
  const double share_pts = 100 * (CommShare(base) - kPublishedBaselineCommShare);
  std::printf("\n  target                                   published  predicted   error  verdict\n");
  std::printf("  final TFLOPS/GPU (within 12%%, fits)     %9.0f  %9.1f  %+6.1f%%  %s\n",
              kPublishedFinalTflops, fin.model_tflops_per_gpu, 100 * fin_err,
              Verdict(std::abs(fin_err) <= 0.12 && fin.fits));
  std::printf("  baseline TFLOPS/GPU (within 25%%)        %9.0f  %9.1f  %+6.1f%%  %s\n",
              kPublishedBaselineTflops, base.model_tflops_per_gpu, 100 * base_err,
              Verdict(std::abs(base_err) <= 0.25));
  std::printf("  baseline comm share (within 10 points)  %8.0f%%  %8.1f%%  %+5.1f pt  %s\n",
              100 * kPublishedBaselineCommShare, 100 * CommShare(base), share_pts,
              Verdict(std::abs(share_pts) <= 10));
  // What the published baseline implies under the same FLOP count: its
  // step time, and (kernel time >= step time when nothing overlaps) at
  // least 84% of it in communication kernels.
  const double tokens = 768.0 * 4096;
  const double implied_step_s =
      tokens * base.model_flops_per_token / (128 * kPublishedBaselineTflops * 1e12);
  std::printf("  published baseline implies a %.1f s step with >= %.1f s of communication "
              "kernels; predicted %.1f s step, %.2f s communication, %.2f s compute\n",
              implied_step_s, kPublishedBaselineCommShare * implied_step_s, base.step_time_s,
              Kernels(base).comm_s, Kernels(base).compute_s);
  // Upstream XLA's lowering of the ragged_dot weight gradients (the
  // expansion; MaxTextConstants::ragged_dot_wgrad_expanded has the evidence
  // for and against) priced on the same baseline, time and memory: why the
  // container cannot have run it.
  StackConstants upstream = MaxTextStackConstants();
  upstream.maxtext.ragged_dot_wgrad_expanded = true;
  absl::StatusOr<Prediction> up =
      Make("gb200-nvl72", 128, 768, upstream).Predict(SeedLayout(), ladder.front().knobs);
  ASSERT_TRUE(up.ok()) << up.status();
  const double expansion_s =
      Seconds(*up, "moe.routed_experts") - Seconds(base, "moe.routed_experts") / 3.0 * 2.0;
  std::printf("  with upstream XLA's expansion of the ragged_dot weight gradients instead: "
              "%.1f TF/GPU, comm share %.1f%%, %.2f s compute (the expansion %.2f s), %.1f GiB "
              "(the masked operands +%.1f GiB): %s\n",
              up->model_tflops_per_gpu, 100 * CommShare(*up), Kernels(*up).compute_s, expansion_s,
              up->peak_memory_bytes / units::kGiB,
              (up->peak_memory_bytes - base.peak_memory_bytes) / units::kGiB,
              up->fits ? "fits" : "does not fit, yet the published run ran");
  std::printf("  cumulative gain                          %9.2f  %9.2f\n",
              kPublishedFinalTflops / kPublishedBaselineTflops,
              fin.model_tflops_per_gpu / base.model_tflops_per_gpu);

  // Announced next in the blog (not measured): NVFP4 GEMMs on the final
  // settings, printed as a prediction only.
  Knobs nvfp4 = ladder.back().knobs;
  nvfp4.precision = Precision::kNvfp4;
  absl::StatusOr<Prediction> next = sm.Predict(SeedLayout(), nvfp4);
  ASSERT_TRUE(next.ok()) << next.status();
  std::printf("  announced next, predicted only: NVFP4 on the final settings %.1f TF/GPU (x%.3f)\n",
              next->model_tflops_per_gpu, next->model_tflops_per_gpu / fin.model_tflops_per_gpu);

  // Physics that must hold.
  EXPECT_TRUE(fin.fits) << fin.peak_memory_bytes / units::kGiB << " GiB";
  for (size_t i = 1; i < preds.size(); ++i) {
    EXPECT_GT(preds[i].model_tflops_per_gpu, preds[i - 1].model_tflops_per_gpu)
        << ladder[i].name << " is not a gain";
  }
  // Multi-stream collectives run the NVLink and scale-out phases of the
  // FSDP collectives in parallel, and NCCL EP sends fewer copies: both
  // lower the communication kernel time; the compute steps (grouped GEMM,
  // MXFP8, offload instead of remat) lower the compute kernel time.
  EXPECT_LT(Kernels(preds[2]).comm_s, Kernels(preds[1]).comm_s);
  EXPECT_LT(Kernels(preds[5]).comm_s, Kernels(preds[4]).comm_s);
  EXPECT_LT(Kernels(preds[1]).compute_s, Kernels(preds[0]).compute_s);
  EXPECT_LT(Kernels(preds[3]).compute_s, Kernels(preds[2]).compute_s);
  EXPECT_LT(Kernels(preds[4]).compute_s, Kernels(preds[3]).compute_s);
  // Nothing beats the dense MXFP8 peak.
  EXPECT_LT(fin.mfu, 1.0);
}

TEST(SeedBenchmark, WeakScalingOnGb300) {
  const Knobs final_knobs = Ladder().back().knobs;
  // Per-device batch 6 on every GPU: 768 sequences on 128, 6,144 on 1,024;
  // FSDP over all GPUs (expert fsdp 16 -> 128), EP 8.
  const StepModel small = Make("gb300-nvl72", 128, 768);
  const StepModel large = Make("gb300-nvl72", 1024, 6144);
  absl::StatusOr<Prediction> a = small.Predict(SeedLayout(), final_knobs);
  absl::StatusOr<Prediction> b = large.Predict(SeedLayout(), final_knobs);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  const double eff = b->model_tflops_per_gpu / a->model_tflops_per_gpu;
  std::printf("\nWeak scaling on GB300 NVL72 (final settings): 128 GPUs %.1f TF/GPU, 1,024 GPUs "
              "%.1f TF/GPU: %.1f%% (published %.0f%%, within 5 points: %s)\n",
              a->model_tflops_per_gpu, b->model_tflops_per_gpu, 100 * eff,
              100 * kPublishedWeakScaling, Verdict(std::abs(eff - kPublishedWeakScaling) <= 0.05));
  std::printf("  1,024-GPU breakdown:\n");
  PrintBreakdown(*b);
  EXPECT_TRUE(a->fits);
  EXPECT_TRUE(b->fits);
  // The same per-GPU work; only the FSDP groups (and the optimizer shard)
  // change, so the two can differ only by the collectives' exposure and the
  // optimizer step.
  EXPECT_GT(eff, 0.5);
  EXPECT_LT(eff, 1.1);
}

}  // namespace
}  // namespace moetune::planner
