#include "distributed/collectives/collective_call.h"

#include <algorithm>
#include <utility>

namespace inferno {
namespace {

// The element count of a frame that carries its sender's error instead of
// data (CollectiveCall::SendFailure); no collective has that many elements.
constexpr uint64_t kFailedAtSender = ~uint64_t{0};

// How many of its failed collectives a group remembers, to drop the frames
// peers still send for them (GroupState::failed_sequences).
constexpr size_t kRememberedFailures = 256;

// Errors that come from this rank's own call, not from the job's state.
bool IsCallFault(ErrorKind kind) {
  return kind == ErrorKind::kLengthMismatch || kind == ErrorKind::kCollectiveMismatch ||
         kind == ErrorKind::kInvalidArgument;
}

}  // namespace

bool GroupState::SharesMemory() const {
  if (size() < 2) return false;
  for (int member : members) {
    if (!transport->SharesMemoryWith(member)) return false;
  }
  return true;
}

bool GroupState::Failed(uint64_t sequence) const {
  return std::find(failed_sequences.begin(), failed_sequences.end(), sequence) != failed_sequences.end();
}

void GroupState::RememberFailed(uint64_t sequence) {
  if (failed_sequences.size() == kRememberedFailures) failed_sequences.pop_front();
  failed_sequences.push_back(sequence);
}

Error WithContext(Error error, const std::string& context) {
  // A transport's wait names the same call ("recv from rank 1 tag ..."):
  // said once.
  if (!error.message.starts_with(context)) error.message = context + ": " + error.message;
  return error;
}

CollectiveCall::CollectiveCall(GroupState& state, CollectiveSpec spec, uint64_t element_count,
                               uint64_t sequence)
    : state_(state), spec_(spec), sequence_(sequence), element_count_(element_count) {
  Announce();
}

CollectiveCall::~CollectiveCall() {
  if (!succeeded_) state_.RememberFailed(sequence_);
}

void CollectiveCall::AfterFailure(const Error& error) {
  const bool tell = IsCallFault(error.kind) && !in_area_;
  if (tell && RunsInArea() && state_.area) {
    state_.area->AnnounceFailed(sequence_);
  } else if (tell) {
    for (int peer = 0; peer < size(); ++peer) {
      if (peer != rank()) (void)SendFailure(peer, error);  // best effort: the error stands
    }
  }
  if (RunsInArea()) state_.area.reset();
}

void CollectiveCall::Announce() {
  if (state_.area) state_.area->Announce(spec_.op, sequence_);
}

std::string CollectiveCall::Describe() const {
  return CollectiveOpName(spec_.op) + " #" + std::to_string(sequence_) + " of group " +
         std::to_string(state_.group_id) + " (rank " + std::to_string(state_.rank) + " of " +
         std::to_string(state_.size()) + ")";
}

Status CollectiveCall::Send(int peer, std::span<const std::byte> bytes) {
  const FrameKey key{state_.collective_tag(), spec_.op, sequence_, element_count_};
  Status sent = state_.transport->Send(state_.members[peer], key, bytes, state_.NextDeadline());
  if (!sent) return WithContext(std::move(sent).error(), Describe() + " to rank " + std::to_string(peer));
  return {};
}

Status CollectiveCall::SendFailure(int peer, const Error& error) {
  const FrameKey key{state_.collective_tag(), spec_.op, sequence_, kFailedAtSender};
  const std::string text = error.ToString();
  Status sent = state_.transport->Send(state_.members[peer], key, std::as_bytes(std::span(text)),
                                       state_.NextDeadline());
  if (!sent) return WithContext(std::move(sent).error(), Describe() + " to rank " + std::to_string(peer));
  return {};
}

Result<Message> CollectiveCall::Recv(int peer, bool check_length) {
  const Deadline deadline = state_.NextDeadline();
  Result<Message> received = TakeFrame(peer, deadline);
  while (received && IsLeftOver(received->key)) received = TakeFrame(peer, deadline);
  if (!received) return WithContext(std::move(received).error(), From(peer));
  const FrameKey& key = received->key;
  if (key.op != spec_.op || key.sequence != sequence_) {
    Error mismatch =
        Error::CollectiveMismatch(Describe(), CollectiveOpName(key.op) + " #" + std::to_string(key.sequence) +
                                                  " (rank " + std::to_string(peer) + ")");
    if (key.sequence > sequence_) state_.ahead[peer].push_front(std::move(*received));
    return mismatch;
  }
  if (key.element_count == kFailedAtSender) {
    const std::span<const std::byte> text = received->payload.bytes();
    return Error{ErrorKind::kCollectiveMismatch,
                 Describe() + ": rank " + std::to_string(peer) +
                     " failed it: " + std::string(reinterpret_cast<const char*>(text.data()), text.size())};
  }
  if (check_length && key.element_count != element_count_) {
    return Error::LengthMismatch(From(peer), static_cast<int64_t>(element_count_),
                                 static_cast<int64_t>(key.element_count));
  }
  return received;
}

Result<Payload> CollectiveCall::RecvExactly(int peer, size_t expected_bytes) {
  Result<Message> received = Recv(peer, /*check_length=*/true);
  if (!received) return std::move(received).error();
  if (received->payload.size() != expected_bytes) {
    return Error::LengthMismatch(From(peer) + " (segment bytes)", static_cast<int64_t>(expected_bytes),
                                 static_cast<int64_t>(received->payload.size()));
  }
  return std::move(received->payload);
}

Result<Message> CollectiveCall::TakeFrame(int peer, Deadline deadline) {
  std::deque<Message>& kept = state_.ahead[peer];
  if (!kept.empty()) {
    Message frame = std::move(kept.front());
    kept.pop_front();
    return frame;
  }
  return state_.transport->Recv(state_.members[peer], state_.collective_tag(), deadline);
}

bool CollectiveCall::IsLeftOver(const FrameKey& key) const {
  return key.sequence < sequence_ && (key.element_count == kFailedAtSender || state_.Failed(key.sequence));
}

}  // namespace inferno
