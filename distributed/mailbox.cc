#include "distributed/mailbox.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>

namespace inferno {
namespace {

std::string RecvWhat(int source, uint32_t tag) {
  char text[64];
  std::snprintf(text, sizeof(text), "recv from rank %d tag 0x%08x", source, tag);
  return text;
}

Error AbortedError(const std::string& what, const std::pair<int, std::string>& aborted_by) {
  const auto& [rank, did] = aborted_by;
  return Error::PeerLost(what + " (rank " + std::to_string(rank) + " " + did + ")", rank);
}

}  // namespace

Mailbox::Mailbox(int world_size, std::chrono::milliseconds lost_grace) : lost_grace_(lost_grace) {
  CHECK_GT(world_size, 0);
  sources_.reserve(world_size);
  for (int i = 0; i < world_size; ++i) sources_.push_back(std::make_unique<SourceQueues>());
}

void Mailbox::Deliver(int source, Message message) {
  CHECK(source >= 0 && source < static_cast<int>(sources_.size())) << "source " << source;
  SourceQueues& queues = *sources_[source];
  {
    std::lock_guard<std::mutex> lock(queues.mutex);
    if (queues.closed) return;
    queues.by_tag[message.key.tag].push_back(std::move(message));
  }
  queues.arrived.notify_all();
}

void Mailbox::MarkPeerLost(int source) {
  CHECK(source >= 0 && source < static_cast<int>(sources_.size())) << "source " << source;
  SourceQueues& queues = *sources_[source];
  {
    std::lock_guard<std::mutex> lock(queues.mutex);
    if (!queues.lost_at) queues.lost_at = Clock::now();
  }
  queues.arrived.notify_all();
}

void Mailbox::MarkPeerDeparted(int source) {
  CHECK(source >= 0 && source < static_cast<int>(sources_.size())) << "source " << source;
  SourceQueues& queues = *sources_[source];
  {
    std::lock_guard<std::mutex> lock(queues.mutex);
    if (!queues.lost_at) queues.lost_at = Clock::now();
    queues.departed = true;
  }
  queues.arrived.notify_all();
}

void Mailbox::MarkJobAborted(int source, const std::string& reason) {
  MarkJobEnded(source, "gave up on the job: " + reason);
}

void Mailbox::MarkPeerUnresponsive(int source, const std::string& why) {
  MarkJobEnded(source, "is unresponsive: " + why);
}

void Mailbox::MarkJobEnded(int source, const std::string& what) {
  CHECK(source >= 0 && source < static_cast<int>(sources_.size())) << "source " << source;
  for (auto& queues : sources_) {
    {
      std::lock_guard<std::mutex> lock(queues->mutex);
      if (!queues->aborted_by) queues->aborted_by.emplace(source, what);
    }
    queues->arrived.notify_all();
  }
}

void Mailbox::Close() {
  for (auto& queues : sources_) {
    {
      std::lock_guard<std::mutex> lock(queues->mutex);
      queues->closed = true;
      queues->by_tag.clear();
    }
    queues->arrived.notify_all();
  }
}

void Mailbox::WakeAll() {
  for (auto& queues : sources_) {
    {
      std::lock_guard<std::mutex> lock(queues->mutex);
      ++queues->wakeups;
    }
    queues->arrived.notify_all();
  }
}

Status Mailbox::JobAborted() {
  SourceQueues& queues = *sources_[0];
  std::lock_guard<std::mutex> lock(queues.mutex);
  if (queues.aborted_by) return AbortedError("wait", *queues.aborted_by);
  return {};
}

Result<Message> Mailbox::Take(int source, uint32_t tag, Deadline deadline) {
  const Deadline started = Clock::now();
  while (true) {
    Result<std::optional<Message>> taken = TakeUntil(source, tag, started, deadline, deadline);
    if (!taken) return std::move(taken).error();
    if (*taken) return std::move(**taken);
  }
}

Result<std::optional<Message>> Mailbox::TakeUntil(int source, uint32_t tag, Deadline started,
                                                  Deadline deadline, Deadline wake_by) {
  if (source < 0 || source >= static_cast<int>(sources_.size())) {
    return Error::UnknownRank("recv", source, static_cast<int>(sources_.size()));
  }
  SourceQueues& queues = *sources_[source];
  std::unique_lock<std::mutex> lock(queues.mutex);
  const uint64_t wakeups = queues.wakeups;
  while (true) {
    if (queues.closed) return Error::Closed(RecvWhat(source, tag));
    if (queues.aborted_by) return AbortedError(RecvWhat(source, tag), *queues.aborted_by);
    auto it = queues.by_tag.find(tag);
    if (it != queues.by_tag.end() && !it->second.empty()) {
      Message message = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) queues.by_tag.erase(it);
      return std::optional<Message>(std::move(message));
    }
    const Deadline now = Clock::now();
    Deadline wake = std::min(deadline, wake_by);
    if (queues.lost_at) {
      if (queues.departed) {
        return Error::PeerLost(
            RecvWhat(source, tag) + " (rank " + std::to_string(source) + " closed its transport)", source);
      }
      const Deadline give_up = *queues.lost_at + lost_grace_;
      if (now >= give_up) return Error::PeerLost(RecvWhat(source, tag), source);
      wake = std::min(wake, give_up);
    }
    if (now >= deadline) {
      return Error::Timeout(RecvWhat(source, tag), source,
                            std::chrono::duration_cast<std::chrono::milliseconds>(now - started));
    }
    if (now >= wake_by || queues.wakeups != wakeups) return std::optional<Message>();
    queues.arrived.wait_until(lock, wake);
  }
}

}  // namespace inferno
