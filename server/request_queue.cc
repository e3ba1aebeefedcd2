#include "server/request_queue.h"

#include <utility>

namespace inferno {

RequestEvents Request::Take(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(queue_.mutex_);
  changed_.wait_until(lock, deadline, [&] { return !tokens_.empty() || finish_ || error_; });
  RequestEvents events;
  events.previous = previous_;
  events.tokens.swap(tokens_);
  events.logprobs.swap(logprobs_);
  if (!events.tokens.empty()) previous_ = events.tokens.back();
  events.finish = finish_;
  events.error = error_;
  return events;
}

void Request::Cancel() {
  std::lock_guard<std::mutex> lock(queue_.mutex_);
  cancelled_ = true;
}

Submission RequestQueue::Submit(SequenceSpec spec) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (draining_ || failed_) return {Submission::kUnavailable, nullptr};
  if (static_cast<int64_t>(queue_.size()) >= max_queued_) return {Submission::kQueueFull, nullptr};
  spec.id = next_id_++;
  auto request = std::shared_ptr<Request>(new Request(*this, spec.id, spec.prompt.back()));
  if (spec.max_new_tokens <= 0) {
    End(*request, FinishReason::kLength);
    return {Submission::kQueued, std::move(request)};
  }
  queue_.emplace_back(request, std::move(spec));
  arrived_.notify_all();
  return {Submission::kQueued, std::move(request)};
}

void RequestQueue::Drain() {
  std::lock_guard<std::mutex> lock(mutex_);
  draining_ = true;
  arrived_.notify_all();
}

void RequestQueue::Fail(const Error& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  failed_ = error;
  for (auto& [request, spec] : queue_) {
    request->error_ = error;
    request->changed_.notify_all();
  }
  queue_.clear();
  for (auto& [id, running] : running_) {
    running.request->error_ = error;
    running.request->changed_.notify_all();
  }
  running_.clear();
  arrived_.notify_all();
}

int64_t RequestQueue::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(queue_.size());
}

int64_t RequestQueue::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(running_.size());
}

std::optional<SequenceSpec> RequestQueue::Next(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    // A request cancelled while it waited ends without running.
    while (!queue_.empty() && queue_.front().first->cancelled_) {
      End(*queue_.front().first, FinishReason::kCancelled);
      queue_.pop_front();
    }
    if (regroup_asked_) return std::nullopt;
    if (!queue_.empty()) break;
    if (draining_ || failed_) return std::nullopt;
    if (arrived_.wait_until(lock, deadline) == std::cv_status::timeout && queue_.empty()) return std::nullopt;
  }
  auto [request, spec] = std::move(queue_.front());
  queue_.pop_front();
  running_.emplace(spec.id, Running{std::move(request), spec, {}});
  return std::move(spec);
}

bool RequestQueue::Exhausted() {
  std::lock_guard<std::mutex> lock(mutex_);
  return regroup_asked_ || ((draining_ || failed_) && queue_.empty());
}

bool RequestQueue::Cancelled(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = running_.find(id);
  return regroup_asked_ || found == running_.end() || found->second.request->cancelled_;
}

void RequestQueue::OnToken(int64_t id, int32_t, int32_t token) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = running_.find(id);
  if (found == running_.end()) return;
  Request& request = *found->second.request;
  found->second.generated.push_back(token);
  request.tokens_.push_back(token);
  if (request.next_logprobs_) {
    request.logprobs_.push_back(std::move(*request.next_logprobs_));
    request.next_logprobs_.reset();
  }
  request.changed_.notify_all();
}

void RequestQueue::OnLogprobs(int64_t id, const TokenLogprobs& logprobs) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = running_.find(id);
  if (found != running_.end()) found->second.request->next_logprobs_ = logprobs;
}

void RequestQueue::OnSequenceDone(int64_t id, FinishReason reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = running_.find(id);
  if (found == running_.end()) return;
  // Cancelled for a regroup, not by its client: Requeue continues it.
  if (regroup_asked_ && reason == FinishReason::kCancelled && !found->second.request->cancelled_) return;
  End(*found->second.request, reason);
  running_.erase(found);
}

int64_t RequestQueue::Requeue() {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t requeued = 0;
  // Ids grow in the order requests started: pushing the last first leaves
  // the first at the head.
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    Running& running = it->second;
    SequenceSpec spec = std::move(running.spec);
    const auto generated = static_cast<int64_t>(running.generated.size());
    if (generated >= spec.max_new_tokens) {
      End(*running.request, FinishReason::kLength);
      continue;
    }
    spec.prompt.insert(spec.prompt.end(), running.generated.begin(), running.generated.end());
    spec.max_new_tokens -= generated;
    spec.prefix = {};
    running.request->next_logprobs_.reset();
    queue_.emplace_front(std::move(running.request), std::move(spec));
    ++requeued;
  }
  running_.clear();
  regroup_asked_ = false;
  arrived_.notify_all();
  return requeued;
}

void RequestQueue::AskRegroup() {
  std::lock_guard<std::mutex> lock(mutex_);
  regroup_asked_ = true;
  arrived_.notify_all();
}

bool RequestQueue::regroup_asked() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return regroup_asked_;
}

void RequestQueue::End(Request& request, FinishReason reason) {
  request.finish_ = reason;
  request.changed_.notify_all();
}

}  // namespace inferno
