// RequestQueue: the serving side of the generator loop (runtime/generator.h).
// HTTP handler threads submit requests and read their tokens; the leader's
// generator thread takes requests as KV-cache slots free up (SequenceSource)
// and reports tokens and ends (GenerationObserver).
//
// A request waits in the queue (at most `max_queued` of them; Submit refuses
// more with kQueueFull, the HTTP 429) until the generator
// has a free slot; then it runs until it stops or is cancelled. Cancel takes
// effect before the request's next token is sampled (or at once while it
// waits). Drain refuses new requests and lets the queued and running ones
// finish; Fail ends every request with an error (the pipeline is lost).
//
// Thread-safety: every method may be called from any thread; one mutex
// guards the queue and every request's state. The observer's methods only
// append under the lock and wake the request's reader, never block.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/generator.h"

namespace inferno {

class RequestQueue;

// What a request has produced since the last Take.
struct RequestEvents {
  std::vector<int32_t> tokens;  // new tokens, in order
  // With SamplingOptions::logprobs: each new token's, in the same order;
  // otherwise empty.
  std::vector<TokenLogprobs> logprobs;
  int32_t previous = 0;                // the token before tokens[0] (the last prompt token at first)
  std::optional<FinishReason> finish;  // set once: the request has ended
  std::optional<Error> error;          // set once: the request failed (the pipeline is lost)
};

// One submitted request, held by its HTTP handler.
class Request {
 public:
  // Waits until the request has new tokens or has ended, or until
  // `deadline`; returns what came (possibly nothing).
  RequestEvents Take(std::chrono::steady_clock::time_point deadline);
  // Stops the request: it ends with FinishReason::kCancelled unless it has
  // ended already.
  void Cancel();
  int64_t id() const { return id_; }
  // When the request entered the queue.
  std::chrono::steady_clock::time_point submitted() const { return submitted_; }

 private:
  friend class RequestQueue;
  Request(RequestQueue& queue, int64_t id, int32_t last_prompt_token)
      : queue_(queue), id_(id), previous_(last_prompt_token), submitted_(std::chrono::steady_clock::now()) {}

  RequestQueue& queue_;
  const int64_t id_;
  // Guarded by queue_.mutex_.
  std::condition_variable changed_;
  std::vector<int32_t> tokens_;
  std::vector<TokenLogprobs> logprobs_;
  std::optional<TokenLogprobs> next_logprobs_;  // OnLogprobs' for the coming OnToken
  int32_t previous_;
  std::optional<FinishReason> finish_;
  std::optional<Error> error_;
  bool cancelled_ = false;
  const std::chrono::steady_clock::time_point submitted_;
};

// Submit's answer: the request, or why there is none.
struct Submission {
  enum Outcome { kQueued, kQueueFull, kUnavailable };
  Outcome outcome = kUnavailable;
  std::shared_ptr<Request> request;  // kQueued only
};

class RequestQueue : public SequenceSource, public GenerationObserver {
 public:
  explicit RequestQueue(int64_t max_queued) : max_queued_(max_queued) {}

  // Queues a sequence (its id is assigned here): kQueueFull when
  // `max_queued` requests wait already, kUnavailable when draining or
  // failed. A sequence with no tokens left to generate (max_new_tokens <= 0:
  // a continued answer that had all its tokens) ends at once with kLength.
  Submission Submit(SequenceSpec spec);

  // No new requests; Exhausted() once the queue is empty.
  void Drain();
  // Every queued and running request ends with `error`; no new requests.
  void Fail(const Error& error);
  // After a failover (the generator that ran them is gone): every running
  // request goes back to the head of the queue, in the order they started,
  // as its prompt followed by the tokens it has generated so far, with
  // max_new_tokens less those, so that the next generator continues it
  // from the next token on: no token is reported twice or lost, and greedy
  // requests generate what an undisturbed run would. A request that has
  // generated all its tokens ends with kLength. Returns how many were
  // requeued.
  int64_t Requeue();
  // Before a regroup that grows the job back (serve --failover; runs on any
  // thread): the generator starts nothing more, and at its next step cancels
  // every running request, which stays running here (not ended) so that
  // Requeue continues it in the next generation; the loop then ends as when
  // drained, on every rank (the cancellations are the leader's step
  // decisions). A request its client cancelled ends as usual. Requeue ends
  // this state.
  void AskRegroup();
  // Whether AskRegroup was called since the last Requeue.
  bool regroup_asked() const;

  int64_t queued() const;
  int64_t running() const;

  // SequenceSource, for the generator thread.
  std::optional<SequenceSpec> Next(std::chrono::steady_clock::time_point deadline) override;
  bool Exhausted() override;
  bool Cancelled(int64_t id) override;

  // GenerationObserver, for the generator thread.
  void OnLogits(int64_t, std::span<const float>) override {}
  void OnToken(int64_t id, int32_t previous, int32_t token) override;
  void OnLogprobs(int64_t id, const TokenLogprobs& logprobs) override;
  void OnSequenceDone(int64_t id, FinishReason reason) override;

 private:
  friend class Request;
  // Ends `request` (it is removed from running_ by the caller). Requires mutex_.
  static void End(Request& request, FinishReason reason);

  const int64_t max_queued_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;  // a request was queued, or draining began
  std::deque<std::pair<std::shared_ptr<Request>, SequenceSpec>> queue_;
  // A running request, its spec as it was taken and what it has generated.
  struct Running {
    std::shared_ptr<Request> request;
    SequenceSpec spec;
    std::vector<int32_t> generated;
  };
  std::map<int64_t, Running> running_;
  int64_t next_id_ = 0;
  bool draining_ = false;
  bool regroup_asked_ = false;
  std::optional<Error> failed_;
};

}  // namespace inferno
