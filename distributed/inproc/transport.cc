#include "distributed/inproc/transport.h"

#include <string>
#include <utility>
#include <vector>

namespace inferno {
namespace {

// Waits are notified as soon as a message arrives, so in-flight messages of a
// lost peer are already queued: no grace period is needed.
constexpr std::chrono::milliseconds kNoGrace{0};

}  // namespace

InProcessWorld::InProcessWorld(int world_size, std::chrono::milliseconds timeout)
    : timeout_(timeout), closed_(new std::atomic<bool>[world_size]) {
  CHECK_GT(world_size, 0);
  for (int rank = 0; rank < world_size; ++rank) {
    mailboxes_.push_back(std::make_unique<Mailbox>(world_size, kNoGrace));
    closed_[rank].store(false);
  }
}

std::shared_ptr<Transport> InProcessWorld::transport(int rank) {
  CHECK(rank >= 0 && rank < world_size()) << "rank " << rank << " of " << world_size();
  return std::make_shared<InProcessTransport>(shared_from_this(), rank);
}

InProcessTransport::InProcessTransport(std::shared_ptr<InProcessWorld> world, int rank)
    : world_(std::move(world)), rank_(rank) {}

InProcessTransport::~InProcessTransport() { Close(); }

Status InProcessTransport::Send(int peer, const FrameKey& key, std::span<const std::byte> head,
                                std::span<const std::byte> tail, Deadline /*deadline*/) {
  const std::string where = "send from rank " + std::to_string(rank_) + " to rank " + std::to_string(peer);
  if (peer < 0 || peer >= world_size()) {
    return Error::UnknownRank(where, peer, world_size());
  }
  if (world_->closed_[rank_].load()) return Error::Closed(where);
  if (world_->closed_[peer].load()) return Error::PeerLost(where, peer);
  Message message{key, ConcatenatedPayload(head, tail)};
  world_->mailboxes_[peer]->Deliver(rank_, std::move(message));
  return {};
}

Result<Message> InProcessTransport::Recv(int peer, uint32_t tag, Deadline deadline) {
  return world_->mailboxes_[rank_]->Take(peer, tag, deadline);
}

void InProcessTransport::Abort(const std::string& reason) {
  if (!world_->closed_[rank_].load()) {
    for (int peer = 0; peer < world_size(); ++peer) {
      if (peer != rank_) world_->mailboxes_[peer]->MarkJobAborted(rank_, reason);
    }
  }
  Close();
}

void InProcessTransport::Close() {
  if (world_->closed_[rank_].exchange(true)) return;
  world_->mailboxes_[rank_]->Close();
  for (int peer = 0; peer < world_size(); ++peer) {
    if (peer != rank_) world_->mailboxes_[peer]->MarkPeerLost(rank_);
  }
}

}  // namespace inferno
