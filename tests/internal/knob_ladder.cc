#include "tests/internal/knob_ladder.h"

namespace moetune::tests {

namespace planner = ::moetune::planner;

std::vector<LadderStep> DeepSeekV3Gb200Ladder() {
  // Baseline (section 1 of the source): MXFP8, grouped GEMM (multi-stream
  // cuBLAS), NCCL all-to-all dispatcher (DeepEP lacked MNNVL then), no CUDA
  // graphs, selective recompute of the dense layers' MLP and the MLA up
  // projection, DP grad-reduce/param-gather overlap, no EP A2A overlap.
  planner::Knobs k;
  k.precision = planner::Precision::kMxfp8;
  k.grouped_gemm = true;
  k.dispatcher = planner::Dispatcher::kAllToAll;
  k.cuda_graphs = false;
  k.overlap.ep_comm = false;
  k.recompute.mode = planner::RecomputeMode::kSelective;
  k.recompute.modules = planner::kRecomputeMlp | planner::kRecomputeMlaUpProj;

  std::vector<LadderStep> steps;
  auto add = [&](const char* suffix, const char* name, const char* mapping, bool has_knob) {
    steps.push_back({std::string("mlm-dsv3-gb200-opt-step") + suffix, name, k, mapping, has_knob});
  };
  add("00", "Baseline", "alltoall, no CUDA graphs, recompute mlp+mla_up_proj", true);
  add("01", "Fuse torch.zeros for scaling factor allocation & Permute kernel Optimization",
      "no knob: MXFP8 host-side allocations and the permute kernel are stack constants", false);
  add("02", "Router fusion",
      "no knob: router kernel count (72 -> 31) is inside moe_host_ops_forward", false);
  k.dispatcher = planner::Dispatcher::kFusedDedup;
  add("03", "Enable DeepEP", "dispatcher alltoall -> fused_dedup", true);
  k.recompute.modules = planner::kRecomputeMlp | planner::kRecomputeMoeAct;
  add("04", "Remove up_proj recompute", "recompute mlp+mla_up_proj -> mlp+moe_act", true);
  k.cuda_graphs = true;
  add("05", "CUDA Graphs", "cuda_graphs off -> on (MoE expert host work stays outside)", true);
  add("06", "Tune DeepEP", "no knob: dispatch efficiency is a prior constant", false);
  add("07", "CPU-side optimization",
      "no knob: process/NUMA binding lowers host time per op (host_op_s, a constant)", false);
  add("08", "PDL for quantization kernels & Fuse MXFP8 swizzle scaling factor",
      "no knob: kernel launch overlap / fewer kernels are stack constants", false);
  add("09", "CUDA Graphs capture shared expert",
      "no knob: cuda_graphs is one switch (no graph scopes)", false);
  add("10", "HybridEP",
      "no knob: DeepEP and HybridEP are one fused_dedup dispatcher class", false);
  add("11", "CPU-side optimization", "no knob: host time per op is a constant", false);
  add("12", "Fuse quantization to normalization (cuDNN 9.14)",
      "no knob: quantize/norm traffic is in the memory-bound terms", false);
  return steps;
}

std::vector<double> StepGains(const std::vector<double>& values) {
  std::vector<double> g;
  for (size_t i = 0; i < values.size(); ++i) {
    g.push_back(i == 0 ? 1.0 : values[i] / values[i - 1]);
  }
  return g;
}

}  // namespace moetune::tests
