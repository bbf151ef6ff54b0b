#include "tests/internal/knob_ladder.h"

namespace moetune::tests {

namespace planner = ::moetune::planner;

std::vector<LadderStep> DeepSeekV3Gb200Ladder() {
  // Baseline (section 1 of the source): MXFP8, grouped GEMM (multi-stream
  // cuBLAS), NCCL all-to-all dispatcher (DeepEP lacked MNNVL then), no CUDA
  // graphs, selective recompute of the dense layers' MLP and the MLA up
  // projection, DP grad-reduce/param-gather overlap, no EP A2A overlap; the
  // software without any of the section-2 optimizations (MegatronFeatures
  // all off; the flex backend, once used, DeepEP).
  planner::Knobs k;
  k.precision = planner::Precision::kMxfp8;
  k.grouped_gemm = true;
  k.dispatcher = planner::Dispatcher::kAllToAll;
  k.cuda_graphs = false;
  k.overlap.ep_comm = false;
  k.recompute.mode = planner::RecomputeMode::kSelective;
  k.recompute.modules = planner::kRecomputeMlp | planner::kRecomputeMlaUpProj;
  planner::MegatronFeatures f;
  f.mxfp8_fused_allocation = false;
  f.permute_fusion = false;
  f.router_fusion = false;
  f.flex_backend = planner::MegatronFeatures::FlexBackend::kDeepEp;
  f.graph_attn = true;
  f.graph_moe_router = true;
  f.graph_moe_preprocess = true;
  f.graph_shared_experts = false;
  f.cpu_numa_binding = false;
  f.fused_swizzle_pdl = false;
  f.quant_fused_norm = false;

  std::vector<LadderStep> steps;
  auto add = [&](const char* suffix, const char* name, const char* mapping, bool has_knob) {
    steps.push_back(
        {std::string("mlm-dsv3-gb200-opt-step") + suffix, name, k, f, mapping, has_knob});
  };
  add("00", "Baseline", "alltoall, no CUDA graphs, recompute mlp+mla_up_proj, no features", true);
  f.mxfp8_fused_allocation = true;
  f.permute_fusion = true;
  add("01", "Fuse torch.zeros for scaling factor allocation & Permute kernel Optimization",
      "features mxfp8_fused_allocation, permute_fusion (--moe-permute-fusion)", true);
  f.router_fusion = true;
  add("02", "Router fusion", "feature router_fusion (--moe-router-fusion): 72 -> 31 kernels",
      true);
  k.dispatcher = planner::Dispatcher::kFusedDedup;
  add("03", "Enable DeepEP",
      "dispatcher alltoall -> fused_dedup, backend deepep (--moe-flex-dispatcher-backend)", true);
  k.recompute.modules = planner::kRecomputeMlp | planner::kRecomputeMoeAct;
  add("04", "Remove up_proj recompute", "recompute mlp+mla_up_proj -> mlp+moe_act", true);
  k.cuda_graphs = true;
  add("05", "CUDA Graphs",
      "cuda_graphs on, scope attn moe_router moe_preprocess (--cuda-graph-scope)", true);
  add("06", "Tune DeepEP", "no knob: no public figure for the tuned DeepEP bandwidth", false);
  f.cpu_numa_binding = true;
  add("07", "CPU-side optimization", "feature cpu_numa_binding (bindpcie)", true);
  f.fused_swizzle_pdl = true;
  add("08", "PDL for quantization kernels & Fuse MXFP8 swizzle scaling factor",
      "feature fused_swizzle_pdl", true);
  f.graph_shared_experts = true;
  add("09", "CUDA Graphs capture shared expert", "feature graph_shared_experts", true);
  f.flex_backend = planner::MegatronFeatures::FlexBackend::kHybridEp;
  add("10", "HybridEP", "backend deepep -> hybridep (--moe-flex-dispatcher-backend)", true);
  add("11", "CPU-side optimization",
      "no knob: TE host-code trimming has no public per-op figure", false);
  f.quant_fused_norm = true;
  add("12", "Fuse quantization to normalization (cuDNN 9.14)", "feature quant_fused_norm",
      true);
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
