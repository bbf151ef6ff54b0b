#include "server/fitting.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "kernels/measurement_roles.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;
namespace p = ::moetune::planner;
namespace kernels = ::moetune::kernels;
namespace roles = ::moetune::kernels::roles;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// size -> seconds samples, and the agents they came from; turned into a
// strictly increasing curve (median per size) with its provenance.
struct Samples {
  std::map<double, std::vector<double>> points;
  std::set<std::string> agents;
  void Add(double size, double seconds, const std::string& agent) {
    points[size].push_back(seconds);
    agents.insert(agent);
  }
};

p::TableProvenance ProvenanceOf(const std::set<std::string>& agents) {
  p::TableProvenance prov;
  prov.agents.assign(agents.begin(), agents.end());
  return prov;
}

p::MeasuredCurve ToCurve(const Samples& samples, p::TableProvenance* prov) {
  p::MeasuredCurve c;
  *prov = ProvenanceOf(samples.agents);
  for (const auto& [size, secs] : samples.points) {
    if (size <= 0 || secs.empty()) continue;
    double s = Median(secs);
    if (s <= 0) continue;
    c.sizes.push_back(size);
    c.seconds.push_back(s);
    for (double x : secs) {  // the spread of merged repeats
      prov->samples += 1;
      prov->fit_max_rel_error = std::max(prov->fit_max_rel_error, std::fabs(s - x) / x);
    }
  }
  return c;
}

std::optional<p::Precision> PrecisionOf(const std::string& dtype) {
  if (dtype == "bf16") return p::Precision::kBf16;
  if (dtype == "fp8_e4m3") return p::Precision::kFp8;
  if (dtype == "mxfp8") return p::Precision::kMxfp8;
  return std::nullopt;  // fp32/fp16 are not planner precisions
}

double DTypeBytes(const std::string& dtype) {
  if (dtype == "fp32") return 4;
  if (dtype == "bf16" || dtype == "fp16") return 2;
  return 1;
}

std::optional<p::CollectiveKind> CollectiveOf(const std::string& op) {
  if (op == "all_reduce") return p::CollectiveKind::kAllReduce;
  if (op == "all_gather") return p::CollectiveKind::kAllGather;
  if (op == "reduce_scatter") return p::CollectiveKind::kReduceScatter;
  if (op == "all_to_all") return p::CollectiveKind::kAllToAll;
  return std::nullopt;
}

struct GroupedAcc {
  std::vector<p::GroupedGemmPoint> points;
  std::set<std::string> agents;
};

// Everything accumulated for one GPU model.
struct GpuAcc {
  std::map<p::Precision, Samples> dense;
  std::map<std::pair<p::Precision, bool>, GroupedAcc> grouped;
  std::map<std::tuple<p::CollectiveKind, p::LinkSpan, int>, Samples> collectives;
  std::map<std::tuple<bool, int, int>, Samples> dispatch;
  Samples offload;
  std::vector<double> overlap_slowdowns;
};

template <typename T>
T Get(const nlohmann::json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    return fallback;
  }
}

}  // namespace

namespace {
// "H100" from "NVIDIA H100 80GB HBM3"; "" when no word looks like a model.
std::string GpuModelToken(const std::string& name) {
  for (absl::string_view word : absl::StrSplit(name, absl::ByAnyChar(" -_(),"), absl::SkipEmpty())) {
    size_t letters = 0;
    while (letters < word.size() && absl::ascii_isupper(word[letters])) ++letters;
    if (letters < 1 || letters > 2 || word.size() < letters + 3) continue;
    bool digits = true;
    for (size_t i = letters; i < letters + 3; ++i) digits &= absl::ascii_isdigit(word[i]) != 0;
    if (digits && word.size() == letters + 3) return std::string(word);
  }
  return "";
}
}  // namespace

bool SameGpuModel(const std::string& measured, const std::string& described) {
  if (measured == described) return true;
  const std::string a = GpuModelToken(measured), b = GpuModelToken(described);
  return !a.empty() && a == b;
}

double PlannerSeconds(const v1::Measurement& m) {
  switch (m.planner_statistic()) {
    case v1::STATISTIC_MIN: return m.min_seconds();
    case v1::STATISTIC_MAX: return m.max_seconds();
    default: return m.median_seconds();
  }
}

ClusterFit FitCluster(const std::string& cluster, const std::vector<v1::ProbeResult>& results,
                      const FitOptions& options) {
  ClusterFit fit;
  fit.cluster = cluster;
  std::map<std::string, GpuAcc> by_gpu;
  // Straggler inputs: probe key -> agent -> seconds.
  std::map<std::string, std::map<std::string, std::vector<double>>> per_node;

  for (const v1::ProbeResult& r : results) {
    if (r.error_code() != 0) {
      ++fit.results_failed;
      continue;
    }
    const nlohmann::json params = nlohmann::json::parse(r.params_json(), nullptr, false);
    if (params.is_discarded() || !params.is_object()) {
      ++fit.results_failed;
      continue;
    }
    ++fit.results_used;
    const std::string gpu =
        r.provenance().device_name().empty() ? "unknown" : r.provenance().device_name();
    if (!r.provenance().compute_dtype().empty()) {
      fit.compute_dtypes[gpu] = r.provenance().compute_dtype();
    }
    GpuAcc& acc = by_gpu[gpu];
    const bool single_rank = r.provenance().world_size() <= 1;
    for (const v1::Measurement& m : r.measurements()) {
      const double secs = PlannerSeconds(m);
      if (!(secs > 0)) continue;
      // Stragglers compare each node's fastest sample: the best the node can
      // do, which transient contention on a shared host does not inflate.
      const double best = m.min_seconds() > 0 ? m.min_seconds() : secs;
      if (single_rank) {
        per_node[absl::StrCat(v1::ProbeKind_Name(r.kind()), " ", m.name(), " ", r.params_json())]
                [r.provenance().agent_id()]
                    .push_back(best);
      }
      const std::string& agent = r.provenance().agent_id();
      // Names and labels per kernels/measurement_roles.h.
      switch (r.kind()) {
        case v1::PROBE_KIND_GROUPED_GEMM: {
          auto prec = PrecisionOf(Get<std::string>(params, "dtype", ""));
          roles::GemmPass pass;
          roles::GemmImpl impl;
          if (!prec || m.flops() <= 0 || !roles::ParseGroupedGemmName(m.name(), &pass, &impl)) break;
          if (impl == roles::GemmImpl::kDenseRef) {
            acc.dense[*prec].Add(m.flops(), secs, agent);
            break;
          }
          // The planner's form: [tokens x k] x [k x n] per expert, which the
          // fwd and bwd_data passes are (bwd_weight reduces over tokens).
          if (pass == roles::GemmPass::kBwdWeight) break;
          const auto shape = roles::GetGemmShapeLabels(m.labels());
          if (!shape) break;
          p::GroupedGemmPoint pt;
          pt.tokens_per_expert = shape->m;
          pt.n = static_cast<int64_t>(shape->n);
          pt.k = static_cast<int64_t>(shape->k);
          pt.num_experts = static_cast<int>(shape->experts);
          pt.raggedness = shape->imbalance;
          pt.seconds = secs;
          GroupedAcc& g = acc.grouped[{*prec, impl == roles::GemmImpl::kGrouped}];
          g.points.push_back(pt);
          g.agents.insert(agent);
          break;
        }
        case v1::PROBE_KIND_COLLECTIVE: {
          auto label = [&](const char* key) {
            auto it = m.labels().find(key);
            return it == m.labels().end() ? std::string() : it->second;
          };
          auto op = roles::ParseCollectiveOp(label(roles::kLabelOp));
          if (!op || m.bytes() <= 0) break;
          const p::CollectiveKind kind = *CollectiveOf(kernels::CollectiveOpName(*op));
          p::LinkSpan span =
              label(roles::kLabelSpan) == "intra_node" ? p::LinkSpan::kNvlinkDomain : p::LinkSpan::kScaleOut;
          int group = 0;
          if (!absl::SimpleAtoi(label(roles::kLabelGroupSize), &group) || group < 2) break;
          acc.collectives[{kind, span, group}].Add(m.bytes(), secs, agent);
          break;
        }
        case v1::PROBE_KIND_DISPATCH_COMBINE: {
          if (m.name() != roles::kDispatch) break;
          const std::string mode = Get<std::string>(params, "mode", "");
          const int ep = Get<int>(params, "ep_size", 0);
          const int per_node = Get<int>(params, "ranks_per_node", 0);
          const double size = static_cast<double>(Get<int64_t>(params, "tokens_per_rank", 0)) *
                              Get<int64_t>(params, "top_k", 0) * Get<int64_t>(params, "hidden", 0) *
                              DTypeBytes(Get<std::string>(params, "dtype", "bf16"));
          if (ep <= 0 || size <= 0) break;
          acc.dispatch[{mode != "per_expert", ep, per_node > 0 ? per_node : ep}].Add(size, secs, agent);
          break;
        }
        case v1::PROBE_KIND_OFFLOAD: {
          const auto role = roles::ParseOffloadName(m.name());
          if (role && role->pinned && !role->under_gemm && m.bytes() > 0) acc.offload.Add(m.bytes(), secs, agent);
          break;
        }
        case v1::PROBE_KIND_OVERLAP: {
          auto it = m.values().find(roles::kValueGemmSlowdown);
          if (it != m.values().end() && it->second > 0) acc.overlap_slowdowns.push_back(it->second);
          break;
        }
        default:
          break;
      }
    }
  }

  for (auto& [gpu, acc] : by_gpu) {
    p::CalibrationTables t;
    t.cluster_name = cluster;
    t.gpu_name = gpu;
    for (const auto& [prec, pts] : acc.dense) {
      p::GemmTable g;
      g.precision = prec;
      g.flops_curve = ToCurve(pts, &g.provenance);
      if (!g.flops_curve.sizes.empty()) t.dense_gemm.push_back(g);
    }
    for (const auto& [key, g_acc] : acc.grouped) {
      p::GroupedGemmTable g;
      g.precision = key.first;
      g.grouped = key.second;
      g.points = g_acc.points;
      if (g.points.empty()) continue;
      g.provenance = ProvenanceOf(g_acc.agents);
      for (const p::GroupedGemmPoint& pt : g.points) {  // the table at its own points vs each sample
        const double fitted = p::GroupedGemmTableSeconds(g, pt.tokens_per_expert, pt.num_experts, pt.n, pt.k);
        g.provenance.samples += 1;
        g.provenance.fit_max_rel_error =
            std::max(g.provenance.fit_max_rel_error, std::fabs(fitted - pt.seconds) / pt.seconds);
      }
      t.grouped_gemm.push_back(g);
    }
    for (const auto& [key, pts] : acc.collectives) {
      p::CollectiveTable c;
      std::tie(c.kind, c.span, c.group_size) = key;
      c.bytes_curve = ToCurve(pts, &c.provenance);
      if (c.bytes_curve.sizes.empty()) continue;
      // Alpha-beta per size range; the fit error is its residual against
      // every sample (the curve's own spread included).
      double residual = 0;
      c.fit = p::FitAlphaBeta(c.bytes_curve, &residual);
      c.provenance.fit_max_rel_error = 0;
      for (const auto& [size, secs] : pts.points) {
        for (double x : secs) {
          c.provenance.fit_max_rel_error =
              std::max(c.provenance.fit_max_rel_error, std::fabs(p::AlphaBetaSeconds(c.fit, size) - x) / x);
        }
      }
      t.collectives.push_back(c);
    }
    for (const auto& [key, pts] : acc.dispatch) {
      p::DispatchTable d;
      std::tie(d.dedup, d.ep, d.ep_gpus_per_domain) = key;
      d.bytes_curve = ToCurve(pts, &d.provenance);
      if (!d.bytes_curve.sizes.empty()) t.dispatch.push_back(d);
    }
    t.host_offload = ToCurve(acc.offload, &t.host_offload_provenance);
    if (!acc.overlap_slowdowns.empty()) {
      t.overlap.push_back({1, std::max(1.0, Median(acc.overlap_slowdowns))});
    }
    fit.tables.push_back(std::move(t));
  }

  for (const auto& [key, nodes] : per_node) {
    if (static_cast<int>(nodes.size()) < options.min_nodes) continue;
    std::map<std::string, double> node_median;
    for (const auto& [agent, v] : nodes) node_median[agent] = Median(v);
    for (const auto& [agent, mine] : node_median) {
      std::vector<double> peers;
      for (const auto& [other, v] : node_median) {
        if (other != agent) peers.push_back(v);
      }
      const double peer = Median(peers);
      if (peer > 0 && mine > options.straggler_ratio * peer) {
        v1::StragglerFlag f;
        f.set_probe(key);
        f.set_node_seconds(mine);
        f.set_peer_median_seconds(peer);
        f.set_ratio(mine / peer);
        fit.stragglers[agent].push_back(std::move(f));
      }
    }
  }
  return fit;
}

nlohmann::json ToJson(const ClusterFit& fit) {
  nlohmann::json j;
  j["cluster"] = fit.cluster;
  j["results_used"] = fit.results_used;
  j["results_failed"] = fit.results_failed;
  nlohmann::json gpus = nlohmann::json::array();
  for (const p::CalibrationTables& t : fit.tables) {
    nlohmann::json g;
    g["gpu"] = t.gpu_name;
    auto dt = fit.compute_dtypes.find(t.gpu_name);
    if (dt != fit.compute_dtypes.end()) g["compute_dtype"] = dt->second;
    auto count = [](const p::MeasuredCurve& c) { return c.sizes.size(); };
    auto prov = [](const p::TableProvenance& pr) {
      return nlohmann::json{{"agents", pr.agents}, {"samples", pr.samples},
                            {"fit_max_rel_error", pr.fit_max_rel_error}};
    };
    nlohmann::json tables = nlohmann::json::array();
    for (const auto& x : t.dense_gemm) {
      tables.push_back({{"table", "dense_gemm"}, {"precision", std::string(p::PrecisionName(x.precision))},
                        {"points", count(x.flops_curve)}, {"provenance", prov(x.provenance)}});
    }
    for (const auto& x : t.grouped_gemm) {
      nlohmann::json shapes = nlohmann::json::array();
      for (const auto& pt : x.points) {
        shapes.push_back({{"tokens_per_expert", pt.tokens_per_expert}, {"n", pt.n}, {"k", pt.k},
                          {"experts", pt.num_experts}, {"raggedness", pt.raggedness}, {"seconds", pt.seconds}});
      }
      tables.push_back({{"table", x.grouped ? "grouped_gemm" : "loop_gemm"},
                        {"precision", std::string(p::PrecisionName(x.precision))},
                        {"points", x.points.size()}, {"shapes", shapes}, {"provenance", prov(x.provenance)}});
    }
    for (const auto& x : t.collectives) {
      nlohmann::json fit = nlohmann::json::array();
      for (const auto& seg : x.fit) {
        fit.push_back({{"max_bytes", std::isinf(seg.max_bytes) ? nlohmann::json("inf") : nlohmann::json(seg.max_bytes)},
                       {"alpha_us", seg.alpha_seconds * 1e6},
                       {"bandwidth_gbps", seg.seconds_per_byte > 0 ? 1e-9 / seg.seconds_per_byte : 0.0}});
      }
      tables.push_back({{"table", "collective"},
                        {"op", std::string(p::CollectiveKindName(x.kind))},
                        {"span", std::string(p::LinkSpanName(x.span))},
                        {"group_size", x.group_size},
                        {"points", count(x.bytes_curve)},
                        {"alpha_beta", fit},
                        {"provenance", prov(x.provenance)}});
    }
    for (const auto& x : t.dispatch) {
      tables.push_back({{"table", "dispatch"}, {"dedup", x.dedup}, {"ep", x.ep},
                        {"ep_gpus_per_domain", x.ep_gpus_per_domain},
                        {"points", count(x.bytes_curve)}, {"provenance", prov(x.provenance)}});
    }
    if (!t.host_offload.sizes.empty()) {
      tables.push_back({{"table", "host_offload"}, {"points", count(t.host_offload)},
                        {"provenance", prov(t.host_offload_provenance)}});
    }
    for (const auto& x : t.overlap) {
      tables.push_back({{"table", "overlap"}, {"num_comm_streams", x.num_comm_streams},
                        {"slowdown", x.slowdown}});
    }
    g["tables"] = tables;
    gpus.push_back(g);
  }
  j["gpus"] = gpus;
  nlohmann::json strag = nlohmann::json::object();
  for (const auto& [agent, flags] : fit.stragglers) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& f : flags) {
      list.push_back({{"probe", f.probe()}, {"node_seconds", f.node_seconds()},
                      {"peer_median_seconds", f.peer_median_seconds()}, {"ratio", f.ratio()}});
    }
    strag[agent] = list;
  }
  j["stragglers"] = strag;
  return j;
}

}  // namespace moetune::server
