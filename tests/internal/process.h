// Helpers of the multi-process tests: child processes with their output in a
// log file, runfile paths, polling with a deadline (no fixed sleeps).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace moetune::testing {

inline std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir ? srcdir : ".", "/", ws ? ws : "moetune", "/", path);
}

inline std::string TmpDir() {
  const char* d = std::getenv("TEST_TMPDIR");
  return d ? d : "/tmp";
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string Tail(const std::string& path, size_t bytes = 3000) {
  std::string s = ReadFile(path);
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

// Polls `cond` every 20 ms until it holds or `timeout` passes.
inline bool WaitFor(const std::function<bool()>& cond, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (cond()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return cond();
}

// A child process with stdout+stderr appended to a log file; SIGKILLed when
// the object dies (test failure paths included).
class Process {
 public:
  Process(std::vector<std::string> argv, std::string log) : log_(std::move(log)) {
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> args;
      for (std::string& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process() {
    Signal(SIGCONT);
    Kill(SIGKILL);
  }
  // Sends `sig` and reaps the process.
  void Kill(int sig) {
    if (pid_ <= 0) return;
    kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  // Sends `sig` without waiting (SIGSTOP / SIGCONT).
  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }
  bool Running() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  pid_t pid() const { return pid_; }
  const std::string& log() const { return log_; }

 private:
  pid_t pid_ = -1;
  std::string log_;
};

}  // namespace moetune::testing
