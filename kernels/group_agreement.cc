#include "kernels/group_agreement.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "kernels/rendezvous.h"

namespace moetune::kernels {
namespace {

// Record format: "OK", or "<code number> <message>".
std::vector<char> Encode(const ProbeStatus& s) {
  const std::string text = s.ok() ? "OK" : std::to_string(static_cast<int>(s.code())) + " " + s.message();
  return std::vector<char>(text.begin(), text.end());
}

ProbeStatus Decode(const std::vector<char>& v) {
  const std::string text(v.begin(), v.end());
  if (text == "OK") return ProbeStatus::Ok();
  const size_t space = text.find(' ');
  int code = static_cast<int>(ProbeCode::kUnknown);
  try {
    code = std::stoi(text.substr(0, space));
  } catch (...) {
  }
  return ProbeStatus(static_cast<ProbeCode>(code), space == std::string::npos ? text : text.substr(space + 1));
}

// Per-Get wait while polling several ranks' keys.
constexpr std::chrono::milliseconds kPollSlice{20};
// How long a rank that saw a failure keeps looking for its cause.
constexpr std::chrono::milliseconds kCauseGrace{2000};

}  // namespace

bool IsConsequenceOfPeerFailure(ProbeCode code) {
  return code == ProbeCode::kUnavailable || code == ProbeCode::kDeadlineExceeded || code == ProbeCode::kAborted ||
         code == ProbeCode::kCancelled;
}

GroupAgreement::GroupAgreement(const GroupSpec& group)
    : store_(group.store),
      prefix_(group.key_prefix),
      rank_(group.rank),
      world_(group.world_size),
      timeout_(group.timeout),
      inject_phase_(group.inject_failure_at_phase) {}

std::string GroupAgreement::Key(const std::string& phase, int rank) const {
  return prefix_ + "/agree/" + phase + "/" + std::to_string(rank);
}

ProbeStatus GroupAgreement::InjectedFailure(const std::string& phase) const {
  if (inject_phase_.empty() || inject_phase_ != phase) return ProbeStatus::Ok();
  return Internal("injected failure at the start of phase '" + phase + "' on rank " + std::to_string(rank_) +
                  " (GroupSpec::inject_failure_at_phase)");
}

bool GroupAgreement::PeerAborted(std::string* what) {
  if (!active()) return false;
  std::vector<char> v;
  const ProbeStatus s = store_->Get(prefix_ + "/abort", std::chrono::milliseconds(0), &v);
  if (s.code() == ProbeCode::kDeadlineExceeded) return false;  // no rank failed
  if (what != nullptr) {
    if (s.ok()) {
      what->assign(v.begin(), v.end());
    } else {
      *what = "the rendezvous store ended the attempt: " + s.ToString();
    }
  }
  return true;
}

ProbeStatus GroupAgreement::Agree(const std::string& phase, const ProbeStatus& mine) {
  if (!active()) return mine;
  const ProbeStatus published = store_->Set(Key(phase, rank_), Encode(mine));
  if (!mine.ok()) {
    const std::string line = "rank " + std::to_string(rank_) + " phase " + phase + ": " + mine.ToString();
    store_->Set(prefix_ + "/abort", std::vector<char>(line.begin(), line.end()));
  }
  if (!published.ok() && mine.ok()) return published;
  const bool mine_is_cause = !mine.ok() && !IsConsequenceOfPeerFailure(mine.code());
  if (mine_is_cause) return mine;  // the peers read it; nothing to wait for

  // Wait for the others: all of them while everything is fine; once a
  // failure is seen (or this rank's own failure is only a consequence), up to
  // kCauseGrace more to find the rank that caused it.
  std::vector<int> pending;
  for (int r = 0; r < world_; ++r) {
    if (r != rank_) pending.push_back(r);
  }
  int cause_rank = -1, other_rank = -1;
  ProbeStatus cause, other;
  const auto start = std::chrono::steady_clock::now();
  auto deadline = start + timeout_;
  if (!mine.ok()) deadline = std::min(deadline, start + kCauseGrace);
  bool failure_seen = !mine.ok();
  while (!pending.empty() && cause_rank < 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    std::vector<int> still;
    for (int r : pending) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      std::vector<char> v;
      const ProbeStatus got =
          store_->Get(Key(phase, r), std::max(std::chrono::milliseconds(0), std::min(left, kPollSlice)), &v);
      if (got.code() == ProbeCode::kDeadlineExceeded) {  // not published yet
        still.push_back(r);
        continue;
      }
      if (!got.ok()) {
        // The store refuses the attempt's keys (the server closed the
        // attempt: a peer was lost, or the server restarted and knows no
        // attempt of this prefix): no verdict will come; waiting out the
        // timeout would only hold this rank.
        return Aborted("the rendezvous store ended the attempt while rank " + std::to_string(rank_) +
                       " waited for rank " + std::to_string(r) + " in phase '" + phase + "': " + got.ToString() +
                       (mine.ok() ? "" : "; rank " + std::to_string(rank_) + " had failed: " + mine.ToString()));
      }
      const ProbeStatus s = Decode(v);
      if (s.ok()) continue;
      if (!IsConsequenceOfPeerFailure(s.code())) {
        if (cause_rank < 0 || r < cause_rank) cause_rank = r, cause = s;
      } else if (other_rank < 0) {
        other_rank = r, other = s;
      }
      if (!failure_seen) {
        failure_seen = true;
        deadline = std::min(deadline, std::chrono::steady_clock::now() + kCauseGrace);
      }
    }
    pending = std::move(still);
  }
  const std::string me = "rank " + std::to_string(rank_);
  auto describe = [&](int r, const ProbeStatus& s) {
    return "rank " + std::to_string(r) + " failed in phase '" + phase + "': " + s.ToString();
  };
  if (cause_rank >= 0) {
    return Aborted(describe(cause_rank, cause) + "; " + me +
                   (mine.ok() ? " stopped" : " stopped after: " + mine.ToString()));
  }
  if (!mine.ok()) return mine;
  if (other_rank >= 0) return Aborted(describe(other_rank, other) + "; " + me + " stopped");
  if (!pending.empty()) {
    std::string ranks;
    for (int r : pending) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    return DeadlineExceeded("ranks " + ranks + " did not report phase '" + phase + "' within " +
                            std::to_string(timeout_.count()) + " ms; " + me + " stopped");
  }
  return ProbeStatus::Ok();
}

}  // namespace moetune::kernels
