// Gloo over TCP for the CPU twins: an adapter from kernels::RendezvousStore to
// gloo::rendezvous::Store, and the connection of a full-mesh Gloo context.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "gloo/context.h"
#include "gloo/rendezvous/store.h"
#include "kernels/group_agreement.h"
#include "kernels/probe_status.h"
#include "kernels/probe_types.h"
#include "kernels/rendezvous.h"

namespace moetune::kernels::cpu {

// gloo::rendezvous::Store over a RendezvousStore; keys are prefixed. Gloo's
// interface reports failures by exception (gloo::IoException), which
// ConnectGloo turns back into a status.
class GlooStoreAdapter : public gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(std::shared_ptr<RendezvousStore> store, std::string prefix,
                   std::chrono::milliseconds timeout);
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  std::shared_ptr<RendezvousStore> store_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

// Connects rank group.rank of group.world_size over TCP, listening on
// group.bind_address, rendezvous through group.store under group.key_prefix.
// FailedPrecondition without a store (world_size > 1); Unavailable naming the
// missing key when the peers do not show up within group.timeout. The first
// call sets SIGPIPE to ignored (if it was at its default), so that a write to
// a peer that has exited fails as a status instead of killing this process.
ProbeStatus ConnectGloo(const GroupSpec& group, std::shared_ptr<gloo::Context>* context);

// One phase of a multi-rank CPU probe: runs `body`, then the group agrees on
// the outcome (kernels/group_agreement.h). When this rank failed, or a peer
// did, *ctx is reset first (the caller holds the only reference): closing
// the connections makes peers blocked in an exchange with this rank fail at
// once instead of at the Gloo timeout.
ProbeStatus RunPhase(GroupAgreement* agree, const std::string& phase, const std::function<ProbeStatus()>& body,
                     std::shared_ptr<gloo::Context>* ctx);

}  // namespace moetune::kernels::cpu
