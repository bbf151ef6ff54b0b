#include "tools/cli/nccl_tests_log.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "agent/task_convert.h"
#include "kernels/measurement_roles.h"
#include "kernels/probe_result.h"

namespace moetune::cli {
namespace {

namespace k = ::moetune::kernels;
namespace roles = ::moetune::kernels::roles;

std::vector<std::string> Words(absl::string_view line) {
  return absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
}

std::optional<k::CollectiveOp> OpInText(absl::string_view text) {
  const std::pair<const char*, k::CollectiveOp> names[] = {
      {"all_reduce_perf", k::CollectiveOp::kAllReduce},
      {"all_gather_perf", k::CollectiveOp::kAllGather},
      {"reduce_scatter_perf", k::CollectiveOp::kReduceScatter},
      {"alltoall_perf", k::CollectiveOp::kAllToAll}};
  std::optional<k::CollectiveOp> found;
  for (const auto& [name, op] : names) {
    if (absl::StrContains(text, name)) {
      if (found && *found != op) return std::nullopt;  // ambiguous: several binaries
      found = op;
    }
  }
  return found;
}

k::DType DTypeOfNcclType(const std::string& t) {
  if (t == "bfloat16") return k::DType::kBf16;
  if (t == "half") return k::DType::kFp16;
  return k::DType::kFp32;
}

uint64_t Fnv1a(absl::string_view s, uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

absl::StatusOr<NcclTestsLog> ParseNcclTestsLog(absl::string_view text) {
  NcclTestsLog log;
  log.op = OpInText(text);
  // Column positions, from the header line that starts with "# size".
  int size_col = -1, type_col = -1, time_col = -1, wrong_col = -1, time2_col = -1, wrong2_col = -1;
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::vector<std::string> w = Words(line.substr(1));
      if (w.size() >= 8 && w[0] == "Rank") {  // "Rank 3 Group 0 Pid 123 on HOST device 3 [..] NAME..."
        ++log.ranks;
        for (size_t i = 0; i + 1 < w.size(); ++i) {
          if (w[i] == "on") log.hosts.insert(w[i + 1]);
        }
        const size_t bracket = line.find(']');
        if (bracket != absl::string_view::npos && log.device_name.empty()) {
          log.device_name = std::string(absl::StripAsciiWhitespace(line.substr(bracket + 1)));
        }
        continue;
      }
      if (!w.empty() && w[0] == "size" && size_col < 0) {
        for (int i = 0; i < static_cast<int>(w.size()); ++i) {
          const std::string& c = w[i];
          if (c == "size") size_col = i;
          if (c == "type") type_col = i;
          if (c == "time") (time_col < 0 ? time_col : time2_col) = i;
          if (c == "#wrong" || c == "error") (wrong_col < 0 ? wrong_col : wrong2_col) = i;
        }
        continue;
      }
      const size_t lib = line.find("nccl-library=");
      if (lib != absl::string_view::npos && log.nccl_version.empty()) {
        int code = 0;
        const std::string digits(line.substr(lib + 13, line.find_first_not_of("0123456789", lib + 13) - lib - 13));
        if (absl::SimpleAtoi(digits, &code) && code > 0) {
          log.nccl_version = absl::StrCat(code / 10000, ".", code / 100 % 100, ".", code % 100);
        }
      }
      continue;
    }
    const size_t ver = line.find("NCCL version ");
    if (ver != absl::string_view::npos) {
      if (log.nccl_version.empty()) log.nccl_version = Words(line.substr(ver + 13)).front();
      continue;
    }
    if (size_col < 0 || time_col < 0) continue;  // before the header: not a result row
    const std::vector<std::string> w = Words(line);
    int64_t bytes = 0;
    if (static_cast<int>(w.size()) <= time_col || !absl::SimpleAtoi(w[size_col], &bytes)) continue;
    NcclTestsRow row;
    row.bytes = bytes;
    if (type_col >= 0 && type_col < static_cast<int>(w.size())) row.type = w[type_col];
    if (!absl::SimpleAtod(w[time_col], &row.out_of_place_us) || !(row.out_of_place_us > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("nccl-tests log line ", line_no, ": time '", w[time_col], "' is not a positive number"));
    }
    for (int col : {wrong_col, wrong2_col}) {
      double wrong = 0;
      if (col >= 0 && col < static_cast<int>(w.size()) && absl::SimpleAtod(w[col], &wrong) && wrong != 0) {
        return absl::InvalidArgumentError(absl::StrCat("nccl-tests log line ", line_no, ": size ", bytes, " has ",
                                                       w[col], " wrong elements; a benchmark with wrong results "
                                                       "does not calibrate"));
      }
    }
    double ip = 0;
    if (time2_col >= 0 && time2_col < static_cast<int>(w.size()) && absl::SimpleAtod(w[time2_col], &ip) && ip > 0) {
      row.in_place_us = ip;
    }
    log.rows.push_back(row);
  }
  if (log.rows.empty()) {
    return absl::InvalidArgumentError(size_col < 0 ? "no nccl-tests column header ('#  size  count  type ...') found"
                                                   : "the nccl-tests log has no result rows");
  }
  return log;
}

absl::StatusOr<moetune::v1::ProbeResult> NcclTestsResult(const NcclTestsLog& log, const NcclTestsImport& how,
                                                          absl::string_view text) {
  const std::optional<k::CollectiveOp> op = how.op ? how.op : log.op;
  if (!op) {
    return absl::InvalidArgumentError(absl::StrCat(how.source, ": the log does not name its benchmark "
                                                   "(all_reduce_perf, ...); give --op"));
  }
  const int n = how.group_size > 0 ? how.group_size : log.ranks;
  if (n < 2) {
    return absl::InvalidArgumentError(absl::StrCat(how.source, ": ", n, " ranks (the log's device table lists ",
                                                   log.ranks, "); give --group_size of at least 2"));
  }
  const k::Span span = how.span ? *how.span : (log.hosts.size() > 1 ? k::Span::kInterNode : k::Span::kIntraNode);
  k::CollectiveParams params;
  params.op = *op;
  params.group_size = n;
  params.span = span;
  params.dtype = DTypeOfNcclType(log.rows.front().type);
  params.sizes_bytes.clear();
  k::ProbeResult r;
  r.kind = k::ProbeKind::kCollective;
  for (const NcclTestsRow& row : log.rows) {
    if (row.bytes <= 0) continue;  // nccl-tests prints size-0 rows for some ops
    params.sizes_bytes.push_back(row.bytes);
    k::Measurement m;
    m.name = roles::CollectiveName(*op, row.bytes);
    m.labels = {{roles::kLabelOp, k::CollectiveOpName(*op)},
                {roles::kLabelSizeBytes, std::to_string(row.bytes)},
                {roles::kLabelGroupSize, std::to_string(n)},
                {roles::kLabelSpan, k::SpanName(span)},
                {"dtype", row.type},
                {"source", "nccl-tests"}};
    // nccl-tests' times are already means over its iterations (-n); the
    // out-of-place and in-place runs are two samples of the same operation.
    m.samples_seconds.push_back(row.out_of_place_us * 1e-6);
    if (row.in_place_us) m.samples_seconds.push_back(*row.in_place_us * 1e-6);
    m.bytes = static_cast<double>(row.bytes);
    m.bus_factor = k::BusBandwidthFactor(*op, n);
    m.Finalize();
    r.measurements.push_back(std::move(m));
  }
  if (r.measurements.empty()) return absl::InvalidArgumentError(absl::StrCat(how.source, ": no positive sizes"));
  r.params_json = k::ParamsToJson(params);
  r.provenance.backend = "cuda";  // nccl-tests ran on the GPUs; the labels and agent id say "imported"
  r.provenance.device_name = how.gpu.empty() ? log.device_name : how.gpu;
  r.provenance.nccl_version = log.nccl_version;
  r.provenance.world_size = n;
  std::string hosts;
  for (const std::string& h : log.hosts) absl::StrAppend(&hosts, hosts.empty() ? "" : ",", h);
  r.provenance.host = hosts;
  r.provenance.compute_dtype = log.rows.front().type;
  moetune::v1::ProbeResult proto = moetune::agent::ToResultProto(r);
  proto.set_result_id(absl::StrFormat("import-%016x", Fnv1a(text, Fnv1a(how.cluster + "\n" + how.source + "\n"))));
  proto.mutable_provenance()->set_cluster(how.cluster);
  proto.mutable_provenance()->set_agent_id("import:" + how.source);
  return proto;
}

}  // namespace moetune::cli
