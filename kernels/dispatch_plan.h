// Routing and the dispatch/combine plan, shared by the CUDA probe and its CPU
// twin (std-only).
//
// Routing: every rank's tokens pick top_k distinct experts, sampled without
// replacement with probability proportional to the expert popularity of
// DispatchCombineParams::routing, restricted to max_nodes_per_token nodes; the
// gate weights are random and sum to 1 per token. Each rank's routing is a
// pure function of (params, rank), so every rank can build the whole plan
// locally: this stands in for the metadata exchange that real EP libraries do
// once per routing (DeepEP's layout, NCCL EP's handle) and is not timed.
//
// Plan: a chain of exchange stages. Buffer 0 holds the rank's tokens; stage s
// gathers rows of buffer s into per-destination runs (send_rows), exchanges
// them (all-to-all-v), and the received rows, concatenated in source-rank
// order, form buffer s+1. The last buffer is the experts' input; each of its
// rows lists the (local expert, gate weight) pairs to apply. Combine runs the
// stages backwards: the rows of buffer s+1 go back to where they came from and
// are summed into their source rows (reduce lists, no atomics).
//   per_expert: 1 stage, one row per (token, expert).
//   dedup_rank: 1 stage, one row per (token, destination rank).
//   dedup_node: stage 0 sends one row per (token, destination node) to the
//               rank of that node with the sender's local index; stage 1 fans
//               out inside the node, one row per (token, destination rank).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/probe_types.h"

namespace moetune::kernels {

struct Routing {
  int64_t tokens = 0;
  int64_t top_k = 0;
  std::vector<int32_t> experts;  // [tokens * top_k], distinct per token
  std::vector<float> weights;    // [tokens * top_k], sum to 1 per token
};

// Deterministic in (p.timing.seed, rank).
Routing MakeRouting(const DispatchCombineParams& p, int rank);

// The scale of expert e in the probe's stand-in expert computation
// (y = x * scale): 1 + (e % 8) / 8, exact in binary floating point.
inline float ExpertScale(int64_t expert) { return 1.0f + static_cast<float>(expert % 8) / 8.0f; }

// Deterministic token values of `rank`: [tokens_per_rank * hidden] in [-1, 1).
std::vector<float> MakeTokens(const DispatchCombineParams& p, int rank);

struct ExchangeStage {
  // send_rows[d]: rows of the stage's input buffer sent to rank d, in order.
  std::vector<std::vector<int64_t>> send_rows;
  // recv_counts[s]: rows received from rank s (output buffer = concatenation).
  std::vector<int64_t> recv_counts;
  // Combine: input row i of this stage is the sum of the returned rows
  // reduce_positions[reduce_offsets[i] .. reduce_offsets[i+1]), positions
  // into the concatenation of send_rows[0], send_rows[1], ...
  std::vector<int64_t> reduce_offsets;
  std::vector<int64_t> reduce_positions;

  int64_t RowsSent() const;        // all destinations, self included
  int64_t RowsSentRemote(int self_rank) const;
  int64_t RowsReceived() const;
};

struct DispatchPlan {
  int rank = 0;
  int world_size = 1;
  std::vector<ExchangeStage> stages;
  std::vector<int64_t> buffer_rows;  // rows of buffer 0 .. stages.size()
  // Expert work of the last buffer: row r applies experts
  // expert_ids[expert_offsets[r] .. expert_offsets[r+1]) with expert_weights.
  std::vector<int64_t> expert_offsets;
  std::vector<int32_t> expert_ids;
  std::vector<float> expert_weights;
};

// The plan of `rank` given the routing of every rank (all_routing[r]).
DispatchPlan BuildDispatchPlan(const DispatchCombineParams& p, int rank,
                               const std::vector<Routing>& all_routing);

// Expected combine output of one rank: out[t] = x[t] * sum_k w_k * scale(e_k),
// computed directly from the routing (no plan), in double.
std::vector<double> ExpectedCombine(const DispatchCombineParams& p, const Routing& routing,
                                    const std::vector<float>& tokens);

}  // namespace moetune::kernels
