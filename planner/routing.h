// How a MoE router spreads tokens over the expert-parallel (EP) ranks, and
// what that costs: the busiest EP rank's tokens / the mean, the factor by
// which the step model scales the routed-expert GEMMs and the dispatch /
// combine traffic of that rank (Knobs::moe_load_imbalance).
//
// Two regimes:
// - kBalanced: Megatron-Core's --moe-router-force-load-balancing (random
//   logits, every expert gets the same share). The published benchmark
//   tables (Megatron-Bridge performance summary from container 25.11 on,
//   the Megatron-LM DeepSeek-V3 GB200 guide, MLPerf-style mock-data runs)
//   run this way: imbalance 1.
// - kNatural: real data, the model's own router (DeepSeek-V3's
//   auxiliary-loss-free bias balancing, aux-loss balancing elsewhere). The
//   router balances the load over many batches, but within one micro-batch
//   the experts' loads still spread out, and every MoE layer's combine waits
//   for the busiest rank of its EP group. This is the regime of real
//   training and the default of the CLI and the API.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"

namespace moetune::planner {

enum class Routing {
  kBalanced,  // forced balance (benchmarks)
  kNatural,   // real training
};
// "balanced", "natural".
std::string_view RoutingName(Routing routing);
// Case-insensitive; InvalidArgument naming the text otherwise.
absl::StatusOr<Routing> ParseRouting(std::string_view name);

// What sets the busiest rank's load. Per micro-batch.
struct RoutingShape {
  // Tokens each EP rank routes per micro-batch and layer (micro-batch x
  // sequence / (tp x cp)); each goes to top_k experts, so a rank receives
  // tokens_per_rank x top_k (token, expert) copies on average.
  double tokens_per_rank = 0;
  int top_k = 1;
  int experts_per_rank = 1;  // routed experts / ep
  int ep = 1;                // ranks of one EP group: each layer waits for its max
  // EP groups that run the same layers in parallel (data-parallel replicas
  // of the group) and meet only at the step's gradient reduction: the step
  // waits for the slowest of them.
  int ep_groups = 1;
  // MoE layer passes one group runs per step (MoE layers of a pipeline
  // stage x micro-batches): the sums over them that the groups compare.
  double layer_passes_per_step = 1;
};

// Coefficient of variation (std / mean) of one expert's token count within
// one batch under natural routing, from a log-normal spread of expert
// loads with the Gini coefficient measured on real text:
//   Gini = erf(sigma / 2)  =>  sigma = 2 erfinv(Gini),
//   CV = sqrt(exp(sigma^2) - 1).
// Source: Ma et al., "Diagnosing Overhead in Dispatch Operations:
// Cross-architecture Observatory" (DODOCO, arXiv 2605.20982, May 2026):
// expert-load Gini of MoE checkpoints on real text (H100, EP 4-32): MLA
// models (DeepSeek-V2-Lite) stay above 0.24 on every real-text condition,
// MHA drops to 0.105 on wikitext, GQA in between; the per-expert max/mean
// changes by at most 5% from EP 4 to 32 (the spread belongs to the routing,
// not to the placement). The log-normal shape: DeepSeek-V3's per-rank token
// counts on MMLU-Pro are best fitted by a log-normal (deepseek-ai/DeepEP
// PR 393, "Add imbalance factor in test_low_latency", 2025-09).
double ExpertLoadCv(double gini);

// The Gini this project prices natural routing with: 0.24, DODOCO's MLA
// band on real text (DeepSeek-V3 and Kimi-K2 are MLA models). One value for
// every model (no per-model constant): it over-states the spread of GQA/MHA
// models (0.105-0.24 there), which --moe-imbalance overrides.
inline constexpr double kNaturalRoutingExpertLoadGini = 0.24;

// Expected maximum of n independent standard normal variables, by Blom's
// plotting position: Phi^-1((n - 0.375) / (n + 0.25)) (Blom 1958). Against
// the exact integral of x n phi(x) Phi(x)^(n-1): n = 2 0.589 (0.564),
// n = 8 1.434 (1.424), n = 64 2.337 (2.344), n = 4096 3.611 (3.626). 0 for
// n <= 1.
double ExpectedMaxOfNormals(int n);
// Standard deviation of that maximum: 1 for n = 1, else the Gumbel limit
// pi / (sqrt(6) sqrt(2 ln n)) capped at 1 (n = 8: 0.629, exact 0.611;
// n = 64: 0.445, exact 0.451; n = 4096: 0.315, exact 0.320).
double StdDevOfMaxOfNormals(int n);

// The busiest EP rank's load / the mean under natural routing (>= 1):
//   CV_rank^2 = (1 - 1/ep) x (CV_e^2 / experts_per_rank   (expert popularity;
//                                                          the rank's experts
//                                                          independent)
//                             + 1 / (tokens_per_rank x top_k))  (multinomial
//                                                          sampling of the
//                                                          rank's copies)
//     (1 - 1/ep: the ranks' loads sum to the group's copies, the
//     finite-population factor of a binomial share with p = 1/ep)
//   per layer:  1 + CV_rank x E[max of ep normals]
//   over the job: the groups' step sums of layer_passes per-layer maxima
//     differ by CV_rank x sd(max of ep) x sqrt(passes) each (independent
//     layers and micro-batches), so the slowest of ep_groups adds
//     CV_rank x sd(max of ep) x E[max of ep_groups normals] / sqrt(passes)
//     to the mean.
//   imbalance = 1 + CV_rank x (E[max_ep] + sd(max_ep) x E[max_groups] / sqrt(passes)).
// Which waits for what: every MoE layer's combine (and the next layer's
// dispatch) synchronizes the EP group, so the group runs each layer at its
// busiest rank's pace (the per-layer term); the pipeline carries that to
// the other stages, and the data-parallel gradient reduction at the end of
// the step makes every group wait for the slowest (the groups term). The
// factor applies to the routed-expert GEMMs and the busiest rank's
// dispatch/combine bytes; attention, shared experts and dense layers are
// not routed. ep <= 1 (every expert on every rank: the rank's routed
// rows are fixed), expert_load_cv <= 0 or a non-positive shape: 1.
double NaturalRoutingImbalance(const RoutingShape& shape, double expert_load_cv);

}  // namespace moetune::planner
