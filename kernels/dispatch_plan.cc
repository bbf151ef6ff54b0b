#include "kernels/dispatch_plan.h"

#include <algorithm>
#include <cmath>

#include "kernels/random.h"

namespace moetune::kernels {
namespace {

using Rng = SplitMix64;

struct RowId {
  int32_t src;
  int32_t token;
  int32_t slot;  // top-k slot for per_expert rows, -1 otherwise
};

struct Layout {
  int64_t world;
  int64_t ranks_per_node;
  int64_t experts_per_rank;
  int64_t RankOf(int64_t expert) const { return expert / experts_per_rank; }
  int64_t NodeOf(int64_t rank) const { return rank / ranks_per_node; }
};

Layout MakeLayout(const DispatchCombineParams& p) {
  Layout l;
  l.world = p.ep_size;
  l.ranks_per_node = p.ranks_per_node > 0 ? p.ranks_per_node : p.ep_size;
  l.experts_per_rank = p.num_experts / p.ep_size;
  return l;
}

// One exchange over all ranks. dests(rank, row, emit) calls emit(dest, new_row)
// for every copy of `row` to send, in order.
template <typename Dests>
void RunStage(const Layout& l, const std::vector<std::vector<RowId>>& in, Dests dests,
              std::vector<std::vector<std::vector<int64_t>>>* send_rows,
              std::vector<std::vector<RowId>>* out) {
  const int64_t w = l.world;
  send_rows->assign(w, std::vector<std::vector<int64_t>>(w));
  // sent_ids[s][d]: ids of the rows s sends to d, in order.
  std::vector<std::vector<std::vector<RowId>>> sent_ids(w, std::vector<std::vector<RowId>>(w));
  for (int64_t s = 0; s < w; ++s) {
    for (int64_t i = 0; i < static_cast<int64_t>(in[s].size()); ++i) {
      dests(s, in[s][i], [&](int64_t d, RowId id) {
        (*send_rows)[s][d].push_back(i);
        sent_ids[s][d].push_back(id);
      });
    }
  }
  out->assign(w, {});
  for (int64_t d = 0; d < w; ++d) {
    for (int64_t s = 0; s < w; ++s) {
      (*out)[d].insert((*out)[d].end(), sent_ids[s][d].begin(), sent_ids[s][d].end());
    }
  }
}

ExchangeStage MakeStage(int rank, const std::vector<std::vector<std::vector<int64_t>>>& send_rows,
                        int64_t input_rows) {
  const int64_t w = static_cast<int64_t>(send_rows.size());
  ExchangeStage st;
  st.send_rows = send_rows[rank];
  st.recv_counts.resize(w);
  for (int64_t s = 0; s < w; ++s) st.recv_counts[s] = send_rows[s][rank].size();
  // Reduce lists (CSR) from the send order.
  std::vector<int64_t> count(input_rows + 1, 0);
  for (const auto& rows : st.send_rows) {
    for (int64_t r : rows) ++count[r + 1];
  }
  for (int64_t i = 0; i < input_rows; ++i) count[i + 1] += count[i];
  st.reduce_offsets = count;
  st.reduce_positions.resize(count[input_rows]);
  std::vector<int64_t> fill(count.begin(), count.end() - 1);
  int64_t pos = 0;
  for (const auto& rows : st.send_rows) {
    for (int64_t r : rows) st.reduce_positions[fill[r]++] = pos++;
  }
  return st;
}

}  // namespace

int64_t ExchangeStage::RowsSent() const {
  int64_t n = 0;
  for (const auto& r : send_rows) n += r.size();
  return n;
}

int64_t ExchangeStage::RowsSentRemote(int self_rank) const {
  return RowsSent() - static_cast<int64_t>(send_rows[self_rank].size());
}

int64_t ExchangeStage::RowsReceived() const {
  int64_t n = 0;
  for (int64_t c : recv_counts) n += c;
  return n;
}

Routing MakeRouting(const DispatchCombineParams& p, int rank) {
  const Layout l = MakeLayout(p);
  const int64_t e_count = p.num_experts;
  std::vector<double> popularity(e_count, 1.0);
  if (p.routing.kind == TokenDistribution::Kind::kZipf) {
    for (int64_t e = 0; e < e_count; ++e) popularity[e] = 1.0 / std::pow(e + 1.0, p.routing.zipf_s);
  } else if (p.routing.kind == TokenDistribution::Kind::kHistogram) {
    for (int64_t e = 0; e < e_count; ++e) popularity[e] = static_cast<double>(p.routing.histogram[e]);
  }
  const int64_t experts_per_node = l.experts_per_rank * l.ranks_per_node;
  Rng rng(StreamSeed(p.timing.seed, rank, 1));
  Routing r;
  r.tokens = p.tokens_per_rank;
  r.top_k = p.top_k;
  r.experts.resize(p.tokens_per_rank * p.top_k);
  r.weights.resize(p.tokens_per_rank * p.top_k);
  std::vector<char> chosen(e_count);
  std::vector<int64_t> nodes_used;
  std::vector<int64_t> candidates;
  for (int64_t t = 0; t < p.tokens_per_rank; ++t) {
    std::fill(chosen.begin(), chosen.end(), 0);
    nodes_used.clear();
    double weight_sum = 0;
    for (int64_t k = 0; k < p.top_k; ++k) {
      const bool node_limited =
          p.max_nodes_per_token > 0 && static_cast<int64_t>(nodes_used.size()) >= p.max_nodes_per_token;
      candidates.clear();
      double total = 0;
      for (int64_t e = 0; e < e_count; ++e) {
        if (chosen[e]) continue;
        if (node_limited && std::find(nodes_used.begin(), nodes_used.end(), e / experts_per_node) ==
                                nodes_used.end()) {
          continue;
        }
        candidates.push_back(e);
        total += popularity[e];
      }
      int64_t pick = candidates.back();
      if (total > 0) {
        double u = rng.Uniform() * total;
        for (int64_t e : candidates) {
          u -= popularity[e];
          if (u < 0) {
            pick = e;
            break;
          }
        }
      } else {  // only zero-popularity experts left: uniform among them
        pick = candidates[static_cast<size_t>(rng.Uniform() * candidates.size())];
      }
      chosen[pick] = 1;
      const int64_t node = pick / experts_per_node;
      if (std::find(nodes_used.begin(), nodes_used.end(), node) == nodes_used.end()) {
        nodes_used.push_back(node);
      }
      r.experts[t * p.top_k + k] = static_cast<int32_t>(pick);
      const float w = static_cast<float>(0.1 + 0.9 * rng.Uniform());
      r.weights[t * p.top_k + k] = w;
      weight_sum += w;
    }
    for (int64_t k = 0; k < p.top_k; ++k) {
      r.weights[t * p.top_k + k] = static_cast<float>(r.weights[t * p.top_k + k] / weight_sum);
    }
  }
  return r;
}

std::vector<float> MakeTokens(const DispatchCombineParams& p, int rank) {
  return UniformValues(StreamSeed(p.timing.seed, rank, 2), p.tokens_per_rank * p.hidden);
}

DispatchPlan BuildDispatchPlan(const DispatchCombineParams& p, int rank,
                               const std::vector<Routing>& routing) {
  const Layout l = MakeLayout(p);
  const int64_t k_count = p.top_k;
  std::vector<std::vector<RowId>> buf(l.world);
  for (int64_t r = 0; r < l.world; ++r) {
    for (int64_t t = 0; t < p.tokens_per_rank; ++t) {
      buf[r].push_back({static_cast<int32_t>(r), static_cast<int32_t>(t), -1});
    }
  }
  auto expert = [&](const RowId& id, int64_t k) { return routing[id.src].experts[id.token * k_count + k]; };

  DispatchPlan plan;
  plan.rank = rank;
  plan.world_size = static_cast<int>(l.world);
  plan.buffer_rows.push_back(buf[rank].size());
  std::vector<std::vector<std::vector<int64_t>>> send_rows;
  std::vector<std::vector<RowId>> next;
  std::vector<int64_t> dests;
  // Unique ranks (or nodes) of a token's experts, ascending, filtered.
  auto unique_targets = [&](const RowId& id, bool nodes, int64_t only_node) {
    dests.clear();
    for (int64_t k = 0; k < k_count; ++k) {
      const int64_t r = l.RankOf(expert(id, k));
      if (only_node >= 0 && l.NodeOf(r) != only_node) continue;
      dests.push_back(nodes ? l.NodeOf(r) : r);
    }
    std::sort(dests.begin(), dests.end());
    dests.erase(std::unique(dests.begin(), dests.end()), dests.end());
  };

  switch (p.mode) {
    case DispatchMode::kPerExpert:
      RunStage(l, buf, [&](int64_t, const RowId& id, auto emit) {
        for (int64_t k = 0; k < k_count; ++k) {
          emit(l.RankOf(expert(id, k)), RowId{id.src, id.token, static_cast<int32_t>(k)});
        }
      }, &send_rows, &next);
      plan.stages.push_back(MakeStage(rank, send_rows, buf[rank].size()));
      buf.swap(next);
      break;
    case DispatchMode::kDedupRank:
      RunStage(l, buf, [&](int64_t, const RowId& id, auto emit) {
        unique_targets(id, false, -1);
        for (int64_t d : dests) emit(d, id);
      }, &send_rows, &next);
      plan.stages.push_back(MakeStage(rank, send_rows, buf[rank].size()));
      buf.swap(next);
      break;
    case DispatchMode::kDedupNode:
      // Stage 0: once per destination node, to the rank with our local index.
      RunStage(l, buf, [&](int64_t s, const RowId& id, auto emit) {
        unique_targets(id, true, -1);
        for (int64_t n : dests) emit(n * l.ranks_per_node + s % l.ranks_per_node, id);
      }, &send_rows, &next);
      plan.stages.push_back(MakeStage(rank, send_rows, buf[rank].size()));
      buf.swap(next);
      plan.buffer_rows.push_back(buf[rank].size());
      // Stage 1: fan out inside the node, once per destination rank.
      RunStage(l, buf, [&](int64_t f, const RowId& id, auto emit) {
        unique_targets(id, false, l.NodeOf(f));
        for (int64_t d : dests) emit(d, id);
      }, &send_rows, &next);
      plan.stages.push_back(MakeStage(rank, send_rows, buf[rank].size()));
      buf.swap(next);
      break;
  }
  plan.buffer_rows.push_back(buf[rank].size());

  plan.expert_offsets.push_back(0);
  for (const RowId& id : buf[rank]) {
    for (int64_t k = 0; k < k_count; ++k) {
      if (id.slot >= 0 && k != id.slot) continue;
      const int32_t e = expert(id, k);
      if (l.RankOf(e) != rank) continue;
      plan.expert_ids.push_back(e);
      plan.expert_weights.push_back(routing[id.src].weights[id.token * k_count + k]);
    }
    plan.expert_offsets.push_back(plan.expert_ids.size());
  }
  return plan;
}

std::vector<double> ExpectedCombine(const DispatchCombineParams& p, const Routing& routing,
                                    const std::vector<float>& tokens) {
  std::vector<double> out(p.tokens_per_rank * p.hidden);
  for (int64_t t = 0; t < p.tokens_per_rank; ++t) {
    double factor = 0;
    for (int64_t k = 0; k < p.top_k; ++k) {
      factor += static_cast<double>(routing.weights[t * p.top_k + k]) *
                ExpertScale(routing.experts[t * p.top_k + k]);
    }
    for (int64_t h = 0; h < p.hidden; ++h) {
      out[t * p.hidden + h] = factor * tokens[t * p.hidden + h];
    }
  }
  return out;
}

}  // namespace moetune::kernels
