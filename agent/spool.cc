#include "agent/spool.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace moetune::agent {
namespace {

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::UnavailableError(absl::StrCat(what, " '", path, "': ", std::strerror(errno)));
}

absl::Status WriteAll(int fd, const std::string& data, const std::string& path) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("write", path);
    }
    off += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<moetune::v1::ProbeResult>> ResultSpool::Parse(const std::string& data,
                                                                const std::string& path) {
  std::vector<moetune::v1::ProbeResult> out;
  size_t off = 0;
  while (off < data.size()) {
    if (data.size() - off < 4) {
      return absl::DataLossError(absl::StrCat("spool '", path, "' ends inside a length at byte ", off));
    }
    uint32_t len = 0;
    std::memcpy(&len, data.data() + off, 4);
    off += 4;
    moetune::v1::ProbeResult r;
    if (data.size() - off < len || !r.ParseFromArray(data.data() + off, static_cast<int>(len))) {
      return absl::DataLossError(absl::StrCat("spool '", path, "' holds a corrupt record at byte ", off));
    }
    off += len;
    out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<std::vector<moetune::v1::ProbeResult>> ResultSpool::ReadPending(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0) return std::vector<moetune::v1::ProbeResult>();  // none yet
  std::ifstream in(path, std::ios::binary);
  if (!in) return Errno("open spool", path);
  std::stringstream buf;
  buf << in.rdbuf();
  return Parse(buf.str(), path);
}

absl::StatusOr<std::unique_ptr<ResultSpool>> ResultSpool::Open(const std::string& path) {
  std::unique_ptr<ResultSpool> spool(new ResultSpool(path));
  const std::string lock_path = path + ".lock";
  spool->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (spool->lock_fd_ < 0) return Errno("open spool lock", lock_path);
  if (::flock(spool->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return absl::FailedPreconditionError(absl::StrCat(
          "spool '", path, "' is in use by another agent (", lock_path,
          " is locked): give each agent on a host its own --spool (or --node)"));
    }
    return Errno("lock", lock_path);
  }
  absl::StatusOr<std::vector<moetune::v1::ProbeResult>> left = ReadPending(path);
  if (!left.ok()) return left.status();
  absl::MutexLock lock(&spool->mu_);
  for (moetune::v1::ProbeResult& r : *left) spool->pending_[spool->next_seq_++] = std::move(r);
  return spool;
}

ResultSpool::~ResultSpool() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

absl::Status ResultSpool::WriteLocked() {
  std::string data;
  for (const auto& [seq, r] : pending_) {
    std::string bytes = r.SerializeAsString();
    uint32_t len = static_cast<uint32_t>(bytes.size());
    data.append(reinterpret_cast<const char*>(&len), 4);
    data += bytes;
  }
  const std::string tmp = path_ + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("create", tmp);
  absl::Status st = WriteAll(fd, data, tmp);
  if (st.ok() && ::fsync(fd) != 0) st = Errno("fsync", tmp);
  ::close(fd);
  if (!st.ok()) return st;
  if (::rename(tmp.c_str(), path_.c_str()) != 0) return Errno("rename to", path_);
  return absl::OkStatus();
}

absl::Status ResultSpool::Add(const moetune::v1::ProbeResult& result) {
  absl::MutexLock lock(&mu_);
  uint64_t seq = next_seq_++;
  pending_[seq] = result;
  absl::Status st = WriteLocked();
  if (!st.ok()) pending_.erase(seq);
  return st;
}

absl::Status ResultSpool::Ack(const std::string& result_id) {
  absl::MutexLock lock(&mu_);
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->second.result_id() == result_id) {
      pending_.erase(it);
      return WriteLocked();
    }
  }
  return absl::OkStatus();
}

absl::Status ResultSpool::AckAll(const std::vector<std::string>& result_ids) {
  const std::set<std::string> ids(result_ids.begin(), result_ids.end());
  absl::MutexLock lock(&mu_);
  size_t dropped = 0;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (ids.count(it->second.result_id())) {
      it = pending_.erase(it);
      ++dropped;
    } else {
      ++it;
    }
  }
  return dropped > 0 ? WriteLocked() : absl::OkStatus();
}

absl::Status ResultSpool::DeadLetter(const moetune::v1::ProbeResult& result,
                                     const std::string& reason) {
  std::string result_json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(result, &result_json, options).ok()) {
    return absl::InternalError(
        absl::StrCat("result ", result.result_id(), " cannot be written as JSON"));
  }
  nlohmann::json record = {{"dead_lettered_unix_ms", absl::ToUnixMillis(absl::Now())},
                           {"reason", reason},
                           {"result", nlohmann::json::parse(result_json)}};
  // Invalid UTF-8 (e.g. in a server message) is replaced, never a reason to fail.
  const std::string line =
      record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  absl::MutexLock lock(&mu_);
  int fd = ::open(dead_letter_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("open dead-letter file", dead_letter_path_);
  absl::Status st = WriteAll(fd, line, dead_letter_path_);
  if (st.ok() && ::fsync(fd) != 0) st = Errno("fsync", dead_letter_path_);
  ::close(fd);
  if (!st.ok()) return st;  // still in the spool: nothing is lost
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->second.result_id() == result.result_id()) {
      pending_.erase(it);
      return WriteLocked();
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ResultSpool::DeadLetterRecord>> ResultSpool::ReadDeadLetters(
    const std::string& path) {
  std::vector<DeadLetterRecord> out;
  if (::access(path.c_str(), F_OK) != 0) return out;
  std::ifstream in(path);
  if (!in) return Errno("open dead-letter file", path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    DeadLetterRecord& r = out.emplace_back();
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    bool ok = j.is_object() && j.contains("result") && j.contains("reason") &&
              j["reason"].is_string() && j.contains("dead_lettered_unix_ms") &&
              j["dead_lettered_unix_ms"].is_number_integer();
    if (ok) {
      r.reason = j["reason"].get<std::string>();
      r.dead_lettered_unix_ms = j["dead_lettered_unix_ms"].get<int64_t>();
      ok = google::protobuf::util::JsonStringToMessage(j["result"].dump(), &r.result).ok();
    }
    if (!ok) {
      return absl::DataLossError(
          absl::StrCat("dead-letter file '", path, "' line ", n, " is not a dead-letter record"));
    }
  }
  return out;
}

std::vector<moetune::v1::ProbeResult> ResultSpool::Pending() const {
  absl::MutexLock lock(&mu_);
  std::vector<moetune::v1::ProbeResult> out;
  for (const auto& [seq, r] : pending_) out.push_back(r);
  return out;
}

size_t ResultSpool::size() const {
  absl::MutexLock lock(&mu_);
  return pending_.size();
}

}  // namespace moetune::agent
