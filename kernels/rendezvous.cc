#include "kernels/rendezvous.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <map>
#include <mutex>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

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
    // The writer renames a complete file into place, so the first successful
    // open sees the whole value. Poll with backoff (1 ms doubling to 20 ms):
    // another process writes the key, there is nothing to wait on in-process.
    auto backoff = std::chrono::milliseconds(1);
    while (true) {
      std::ifstream in(path, std::ios::binary);
      if (in) {
        value->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        return ProbeStatus::Ok();
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return DeadlineExceeded("rendezvous: key '" + key + "' not set within " +
                                std::to_string(timeout.count()) + " ms (store " + dir_ + ")");
      }
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(20));
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
