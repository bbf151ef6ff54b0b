#include "kernels/probe_result.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sstream>

extern char** environ;

namespace moetune::kernels {
namespace {

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}
std::string Q(const std::string& s) { return "\"" + JsonEscape(s) + "\""; }
std::string Num(double d) {
  std::ostringstream os;
  os.precision(9);
  os << d;
  return os.str();
}
std::string MapJson(const std::map<std::string, std::string>& m) {
  std::string s = "{";
  bool first = true;
  for (const auto& [k, v] : m) {
    s += (first ? "" : ",") + Q(k) + ":" + Q(v);
    first = false;
  }
  return s + "}";
}
std::string MapJson(const std::map<std::string, double>& m) {
  std::string s = "{";
  bool first = true;
  for (const auto& [k, v] : m) {
    s += (first ? "" : ",") + Q(k) + ":" + Num(v);
    first = false;
  }
  return s + "}";
}
void OptField(std::string* s, const char* name, const std::optional<double>& v) {
  if (v) *s += std::string(",\"") + name + "\":" + Num(*v);
}

}  // namespace

const char* StatisticName(Statistic s) {
  switch (s) {
    case Statistic::kMin: return "min";
    case Statistic::kMedian: return "median";
    case Statistic::kMax: return "max";
  }
  return "median";
}

SampleSummary Summarize(const std::vector<double>& samples) {
  SampleSummary out;
  if (samples.empty()) return out;
  std::vector<double> v = samples;
  std::sort(v.begin(), v.end());
  out.min_seconds = v.front();
  out.max_seconds = v.back();
  const size_t n = v.size();
  out.median_seconds = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return out;
}

double BusBandwidthFactor(CollectiveOp op, int64_t n) {
  if (n <= 0) return 0;
  const double nd = static_cast<double>(n);
  switch (op) {
    case CollectiveOp::kAllReduce: return 2.0 * (nd - 1) / nd;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll: return (nd - 1) / nd;
  }
  return 0;
}

double Measurement::PlannerSeconds() const {
  switch (planner_statistic) {
    case Statistic::kMin: return summary.min_seconds;
    case Statistic::kMedian: return summary.median_seconds;
    case Statistic::kMax: return summary.max_seconds;
  }
  return summary.median_seconds;
}

void Measurement::Finalize() {
  summary = Summarize(samples_seconds);
  const double t = PlannerSeconds();
  tflops.reset();
  alg_bw_gbps.reset();
  bus_bw_gbps.reset();
  if (t <= 0) return;
  if (flops > 0) tflops = flops / t / kFlopsPerTFlop;
  if (bytes > 0) {
    alg_bw_gbps = bytes / t / kBytesPerGB;
    if (bus_factor > 0) bus_bw_gbps = *alg_bw_gbps * bus_factor;
  }
}

const Measurement* ProbeResult::Find(const std::string& name) const {
  for (const auto& m : measurements) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::string ToJson(const ProbeResult& r) {
  const Provenance& p = r.provenance;
  std::string s = "{\"schema_version\":" + std::to_string(p.schema_version) +
                  ",\"kind\":" + Q(ProbeKindName(r.kind)) +
                  ",\"params\":" + (r.params_json.empty() ? "{}" : r.params_json);
  s += ",\"provenance\":{\"start_time\":" + Q(p.start_time_utc) + ",\"end_time\":" +
       Q(p.end_time_utc) + ",\"host\":" + Q(p.host) + ",\"backend\":" + Q(p.backend) +
       ",\"device_name\":" + Q(p.device_name) + ",\"device_uuid\":" + Q(p.device_uuid) +
       ",\"compute_capability\":" + Q(p.compute_capability) + ",\"driver_version\":" +
       Q(p.driver_version) + ",\"cuda_runtime_version\":" + Q(p.cuda_runtime_version) +
       ",\"cublas_version\":" + Q(p.cublas_version) + ",\"nccl_version\":" + Q(p.nccl_version) +
       ",\"blas_version\":" + Q(p.blas_version) + ",\"compute_dtype\":" + Q(p.compute_dtype) +
       ",\"env\":" + MapJson(p.env) + ",\"rank\":" + std::to_string(p.rank) +
       ",\"world_size\":" + std::to_string(p.world_size) +
       ",\"ranks_per_node\":" + std::to_string(p.ranks_per_node) +
       ",\"local_rank\":" + std::to_string(p.local_rank) + "}";
  s += ",\"measurements\":[";
  for (size_t i = 0; i < r.measurements.size(); ++i) {
    const Measurement& m = r.measurements[i];
    s += (i ? "," : "");
    s += "{\"name\":" + Q(m.name) + ",\"labels\":" + MapJson(m.labels) + ",\"samples_s\":[";
    for (size_t j = 0; j < m.samples_seconds.size(); ++j) {
      s += (j ? "," : "") + Num(m.samples_seconds[j]);
    }
    s += "],\"min_s\":" + Num(m.summary.min_seconds) + ",\"median_s\":" +
         Num(m.summary.median_seconds) + ",\"max_s\":" + Num(m.summary.max_seconds) +
         ",\"planner_statistic\":" + Q(StatisticName(m.planner_statistic)) +
         ",\"flops\":" + Num(m.flops) + ",\"bytes\":" + Num(m.bytes) +
         ",\"bus_factor\":" + Num(m.bus_factor);
    OptField(&s, "tflops", m.tflops);
    OptField(&s, "alg_bw_gbps", m.alg_bw_gbps);
    OptField(&s, "bus_bw_gbps", m.bus_bw_gbps);
    OptField(&s, "efficiency_vs_reference", m.efficiency_vs_reference);
    s += ",\"values\":" + MapJson(m.values) + ",\"verified\":" + (m.verified ? "true" : "false") +
         ",\"max_rel_error\":" + Num(m.max_rel_error) + "}";
  }
  return s + "]}";
}

std::string ToTable(const ProbeResult& r) {
  std::string out;
  char line[512];
  for (const Measurement& m : r.measurements) {
    std::string labels;
    for (const auto& [k, v] : m.labels) labels += (labels.empty() ? "" : " ") + k + "=" + v;
    std::string rate = "-";
    if (m.tflops) {
      rate = Num(*m.tflops) + " TFLOPS";
    } else if (m.alg_bw_gbps) {
      rate = Num(*m.alg_bw_gbps) + " GB/s";
      if (m.bus_bw_gbps) rate += " (bus " + Num(*m.bus_bw_gbps) + ")";
    }
    if (auto it = m.labels.find("unimplemented"); it != m.labels.end() && m.samples_seconds.empty()) {
      std::snprintf(line, sizeof(line), "%-16s %-28s unimplemented: %s\n", ProbeKindName(r.kind),
                    m.name.c_str(), it->second.c_str());
      out += line;
      continue;
    }
    std::string eff = m.efficiency_vs_reference ? Num(*m.efficiency_vs_reference) : "-";
    std::snprintf(line, sizeof(line), "%-16s %-28s %-44s %12.3f us  %-30s %-8s %s\n",
                  ProbeKindName(r.kind), m.name.c_str(), labels.c_str(),
                  m.summary.median_seconds * 1e6, rate.c_str(), eff.c_str(),
                  m.verified ? "ok" : "unchecked");
    out += line;
  }
  return out;
}

std::string NowUtcRfc3339() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return buf;
}

std::map<std::string, std::string> EnvWithPrefixes(const std::vector<std::string>& prefixes) {
  std::map<std::string, std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = kv.substr(0, eq);
    for (const auto& p : prefixes) {
      if (key.compare(0, p.size(), p) == 0) {
        out[key] = kv.substr(eq + 1);
        break;
      }
    }
  }
  return out;
}

}  // namespace moetune::kernels
