#include "kernels/rendezvous.h"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>

namespace moetune::kernels {
namespace {

// Keys may contain '/', ':'; map them to a flat, safe file name.
std::string FileNameFor(const std::string& key) {
  std::string out;
  for (char c : key) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (safe) {
      out += c;
    } else {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02x", static_cast<unsigned char>(c));
      out += buf;
    }
  }
  return out;
}

class FileRendezvousStore : public RendezvousStore {
 public:
  explicit FileRendezvousStore(std::string dir) : dir_(std::move(dir)) {}

  ProbeStatus Set(const std::string& key, const std::vector<char>& value) override {
    const std::string final_path = dir_ + "/" + FileNameFor(key);
    const std::string tmp_path = final_path + ".tmp." + std::to_string(getpid());
    {
      std::ofstream out(tmp_path, std::ios::binary | std::ios::trunc);
      if (!out) return Unavailable("rendezvous: cannot write " + tmp_path + ": " + std::strerror(errno));
      out.write(value.data(), static_cast<std::streamsize>(value.size()));
      if (!out) return Unavailable("rendezvous: short write to " + tmp_path);
    }
    if (std::rename(tmp_path.c_str(), final_path.c_str()) != 0) {
      return Unavailable("rendezvous: rename to " + final_path + ": " + std::strerror(errno));
    }
    return ProbeStatus::Ok();
  }

  ProbeStatus Get(const std::string& key, std::chrono::milliseconds timeout,
                  std::vector<char>* value) override {
    const std::string path = dir_ + "/" + FileNameFor(key);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    // Watch the directory before looking, so a rename landing in between is
    // seen; then wait for directory events (inotify) until the deadline. The
    // writer renames a complete file into place, so the first successful open
    // sees the whole value.
    const int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd < 0) return Unavailable(std::string("rendezvous: inotify_init1: ") + std::strerror(errno));
    struct CloseFd {
      int fd;
      ~CloseFd() { close(fd); }
    } close_fd{fd};
    if (inotify_add_watch(fd, dir_.c_str(), IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE) < 0) {
      return Unavailable("rendezvous: inotify_add_watch " + dir_ + ": " + std::strerror(errno));
    }
    while (true) {
      std::ifstream in(path, std::ios::binary);
      if (in) {
        value->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        return ProbeStatus::Ok();
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return DeadlineExceeded("rendezvous: key '" + key + "' not set within " +
                                std::to_string(timeout.count()) + " ms (store " + dir_ + ")");
      }
      pollfd pfd{fd, POLLIN, 0};
      const int ready = poll(&pfd, 1, static_cast<int>(left.count()));
      if (ready < 0 && errno != EINTR) {
        return Unavailable(std::string("rendezvous: poll: ") + std::strerror(errno));
      }
      if (ready > 0) {  // drain the events; the loop re-checks the file
        alignas(inotify_event) char buf[4096];
        while (read(fd, buf, sizeof(buf)) > 0) {
        }
      }
    }
  }

 private:
  std::string dir_;
};

class InMemoryRendezvousStore : public RendezvousStore {
 public:
  ProbeStatus Set(const std::string& key, const std::vector<char>& value) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      values_[key] = value;
    }
    cv_.notify_all();
    return ProbeStatus::Ok();
  }

  ProbeStatus Get(const std::string& key, std::chrono::milliseconds timeout,
                  std::vector<char>* value) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return values_.count(key) > 0; })) {
      return DeadlineExceeded("rendezvous: key '" + key + "' not set within " +
                              std::to_string(timeout.count()) + " ms (in-memory store)");
    }
    *value = values_[key];
    return ProbeStatus::Ok();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<char>> values_;
};

}  // namespace

std::shared_ptr<RendezvousStore> MakeInMemoryRendezvousStore() {
  return std::make_shared<InMemoryRendezvousStore>();
}

std::shared_ptr<RendezvousStore> MakeFileRendezvousStore(const std::string& directory) {
  return std::make_shared<FileRendezvousStore>(directory);
}

}  // namespace moetune::kernels
