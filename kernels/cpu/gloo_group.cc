#include "kernels/cpu/gloo_group.h"

#include <csignal>
#include <exception>
#include <mutex>

#include "gloo/common/error.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/tcp/device.h"

namespace moetune::kernels::cpu {

GlooStoreAdapter::GlooStoreAdapter(std::shared_ptr<RendezvousStore> store, std::string prefix,
                                   std::chrono::milliseconds timeout)
    : store_(std::move(store)), prefix_(std::move(prefix)), timeout_(timeout) {}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  ProbeStatus s = store_->Set(prefix_ + "/" + key, data);
  if (!s.ok()) throw gloo::IoException(s.ToString());
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  std::vector<char> v;
  ProbeStatus s = store_->Get(prefix_ + "/" + key, timeout_, &v);
  if (!s.ok()) throw gloo::IoException(s.ToString());
  return v;
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void GlooStoreAdapter::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<char> v;
  for (const auto& key : keys) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    ProbeStatus s = store_->Get(prefix_ + "/" + key, std::max(left, std::chrono::milliseconds(1)), &v);
    if (!s.ok()) throw gloo::IoException(s.ToString());
  }
}

namespace {

// Gloo's TCP transport writes with plain write(2)/writev(2). When a peer
// rank exits (a failed check, an injected failure), the next write to its
// socket raises SIGPIPE, whose default action kills this rank silently
// (exit 141) before it can read the peer's verdict from the store. With
// SIGPIPE ignored the write fails with EPIPE, Gloo throws, the phase returns
// Unavailable and GroupAgreement names the rank that caused it. Only a
// default disposition is replaced: a handler the host program installed stays.
void IgnoreSigpipeOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      sigemptyset(&ignore.sa_mask);
      sigaction(SIGPIPE, &ignore, nullptr);
    }
  });
}

}  // namespace

ProbeStatus ConnectGloo(const GroupSpec& group, std::shared_ptr<gloo::Context>* context) {
  IgnoreSigpipeOnce();
  if (group.world_size > 1 && group.store == nullptr) {
    return FailedPrecondition("gloo: a " + std::to_string(group.world_size) +
                              "-rank probe needs a rendezvous store (GroupSpec::store)");
  }
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = group.bind_address;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(group.rank, group.world_size);
    ctx->setTimeout(group.timeout);
    // A 1-rank group still connects (to itself) so that every algorithm finds
    // its pairs; an in-process store is enough for that.
    std::shared_ptr<RendezvousStore> rdzv =
        group.store != nullptr ? group.store : MakeInMemoryRendezvousStore();
    GlooStoreAdapter store(rdzv, group.key_prefix + "/gloo", group.timeout);
    ctx->connectFullMesh(store, device);
    *context = ctx;
  } catch (const gloo::IoException& e) {
    return Unavailable(std::string("gloo connectFullMesh (rank ") + std::to_string(group.rank) +
                       " of " + std::to_string(group.world_size) + "): " + e.what());
  } catch (const std::exception& e) {
    return Internal(std::string("gloo connectFullMesh: ") + e.what());
  }
  return ProbeStatus::Ok();
}

ProbeStatus RunPhase(GroupAgreement* agree, const std::string& phase, const std::function<ProbeStatus()>& body,
                     std::shared_ptr<gloo::Context>* ctx) {
  const ProbeStatus mine = body();
  if (!mine.ok()) ctx->reset();
  const ProbeStatus verdict = agree->Agree(phase, mine);
  if (!verdict.ok()) ctx->reset();
  return verdict;
}

}  // namespace moetune::kernels::cpu
