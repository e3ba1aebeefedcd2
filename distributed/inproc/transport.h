// InProcessTransport: a Transport between ranks that are threads of one
// process, for tests. An InProcessWorld owns every rank's Mailbox; sending
// copies the payload into the receiver's mailbox.
//
//   auto world = std::make_shared<InProcessWorld>(4, std::chrono::seconds(5));
//   ProcessGroup group(world->transport(rank));  // in rank's thread
//
// Thread-safety: all methods may be called from several threads at once.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "distributed/mailbox.h"
#include "distributed/transport.h"

namespace inferno {

class InProcessWorld : public std::enable_shared_from_this<InProcessWorld> {
 public:
  // `timeout`: what every transport of this world reports as timeout().
  InProcessWorld(int world_size, std::chrono::milliseconds timeout);

  int world_size() const { return static_cast<int>(mailboxes_.size()); }

  // A transport for `rank` in [0, world_size). Each rank's transport should be
  // created once; closing it makes `rank` lost for the other ranks.
  std::shared_ptr<Transport> transport(int rank);

 private:
  friend class InProcessTransport;

  const std::chrono::milliseconds timeout_;
  std::vector<std::unique_ptr<Mailbox>> mailboxes_;
  std::unique_ptr<std::atomic<bool>[]> closed_;
};

class InProcessTransport : public Transport {
 public:
  InProcessTransport(std::shared_ptr<InProcessWorld> world, int rank);
  ~InProcessTransport() override;

  int rank() const override { return rank_; }
  int world_size() const override { return world_->world_size(); }
  std::chrono::milliseconds timeout() const override { return world_->timeout_; }
  using Transport::Send;
  // Copies `head` and `tail` into one buffer in the receiver's mailbox.
  Status Send(int peer, const FrameKey& key, std::span<const std::byte> head, std::span<const std::byte> tail,
              Deadline deadline) override;
  Result<Message> Recv(int peer, uint32_t tag, Deadline deadline) override;
  void Close() override;
  void Abort(const std::string& reason) override;

 private:
  const std::shared_ptr<InProcessWorld> world_;
  const int rank_;
};

}  // namespace inferno
