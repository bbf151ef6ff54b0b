#include "agent/spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

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

absl::StatusOr<std::unique_ptr<ResultSpool>> ResultSpool::Open(const std::string& path) {
  std::unique_ptr<ResultSpool> spool(new ResultSpool(path));
  if (::access(path.c_str(), F_OK) != 0) return spool;  // nothing left over
  std::ifstream in(path, std::ios::binary);
  if (!in) return Errno("open spool", path);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string data = buf.str();
  absl::MutexLock lock(&spool->mu_);
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
    spool->pending_[spool->next_seq_++] = std::move(r);
  }
  return spool;
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
