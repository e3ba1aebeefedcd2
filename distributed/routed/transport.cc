#include "distributed/routed/transport.h"

#include <algorithm>
#include <utility>

#include <glog/logging.h>

namespace inferno {

RoutedTransport::RoutedTransport(std::shared_ptr<Transport> control, std::shared_ptr<Transport> local,
                                 std::vector<bool> local_peers)
    : control_(std::move(control)), local_(std::move(local)), local_peers_(std::move(local_peers)) {
  CHECK(control_ != nullptr && local_ != nullptr);
  CHECK_EQ(control_->rank(), local_->rank());
  CHECK_EQ(control_->world_size(), local_->world_size());
  CHECK_EQ(static_cast<int>(local_peers_.size()), control_->world_size());
}

RoutedTransport::~RoutedTransport() { Close(); }

bool RoutedTransport::IsLocal(int peer) const {
  return peer != rank() && peer >= 0 && peer < world_size() && local_peers_[peer];
}

Transport& RoutedTransport::Route(int peer) const { return IsLocal(peer) ? *local_ : *control_; }

int RoutedTransport::rank() const { return control_->rank(); }

int RoutedTransport::world_size() const { return control_->world_size(); }

std::chrono::milliseconds RoutedTransport::timeout() const { return control_->timeout(); }

Status RoutedTransport::Send(int peer, const FrameKey& key, std::span<const std::byte> head,
                             std::span<const std::byte> tail, Deadline deadline) {
  return Route(peer).Send(peer, key, head, tail, deadline);
}

Result<Message> RoutedTransport::Recv(int peer, uint32_t tag, Deadline deadline) {
  return Route(peer).Recv(peer, tag, deadline);
}

bool RoutedTransport::SharesMemoryWith(int peer) const {
  return peer == rank() || (IsLocal(peer) && local_->SharesMemoryWith(peer));
}

Status RoutedTransport::CheckAbortNotices() {
  if (Status aborted = local_->CheckAbortNotices(); !aborted) return aborted;
  return control_->CheckAbortNotices();
}

std::vector<int> RoutedTransport::LostRanks() const {
  std::vector<int> lost = control_->LostRanks();
  const std::vector<int> local = local_->LostRanks();
  lost.insert(lost.end(), local.begin(), local.end());
  std::sort(lost.begin(), lost.end());
  lost.erase(std::unique(lost.begin(), lost.end()), lost.end());
  return lost;
}

void RoutedTransport::Close() {
  local_->Close();
  control_->Close();
}

void RoutedTransport::Abort(const std::string& reason) {
  local_->Abort(reason);
  control_->Abort(reason);
}

}  // namespace inferno
