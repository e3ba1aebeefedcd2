// ServerMetrics: what GET /metrics reports, in the Prometheus text format
// (version 0.0.4): requests by endpoint and HTTP status, connections refused
// over the limit (--max-connections), prompt and generated
// tokens, requests queued and running, histograms of the time to first
// token and the time between tokens of a request, each rank's compute
// and wait seconds in the generator loop, and the prefix cache's lookups,
// hits, positions restored, evictions and bytes (the leader's
// PrefixCacheIndex stats, runtime/prefix_cache_index.h; bytes are the whole
// job's, summed over its ranks), with speculative decoding (--speculate)
// the drafted tokens run and those kept, for a mixture of experts the
// positions the router sent to each expert of each of the leader's layers
// (its stage's routing histogram, engine/transformer.h: every layer when
// there is one stage, the last stage's under --pp; loader/routing_stats.h
// holds the same counts as a file, which infer --routing-stats writes),
// and a histogram of the failovers
// (serve --failover): from the leader finding a rank lost to the job's next
// generation formed; its _count counts them. With it, the ranks of the
// job's current generation and the standby ranks that took a lost rank's
// place.
//
// The ranks' seconds are the totals each rank's generator loop keeps anyway
// (its base/timeline.h Timeline, which infer's --trace also reads). The
// leader, the last stage, gets the other ranks' on the tick it sends round
// the pipeline's ring about once a second, busy or idle: each stage appends
// two numbers per rank as the tick passes (runtime/pipeline_protocol.h; a
// stage's tensor-parallel ranks gather theirs first). That costs a tick a
// second carrying 16 bytes per rank, and nothing on the steps' messages; the figures are as old as the tick's
// trip (within about a second plus a step). A rank's wait is the time it blocked for the next message from
// its ring predecessor (the previous stage; for the first stage, the leader, which sends it prompts and
// sampled tokens), idle time included, except the leader's own waiting for requests.
//
// Thread-safety: every method may be called from any thread (one mutex).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "runtime/prefix_cache_index.h"

namespace inferno {

class ServerMetrics {
 public:
  // Upper bounds (seconds) of the latency histograms' buckets.
  static constexpr std::array<double, 12> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                      0.1,   0.25,   0.5,   1.0,  2.5,   5.0};

  void CountRequest(const std::string& endpoint, int status);
  void CountTokens(int64_t prompt, int64_t generated);
  void ObserveTimeToFirstToken(double seconds);
  void ObserveTimePerToken(double seconds);
  // The ranks of the job's current generation (serve sets it as each one
  // forms).
  void SetRanks(int ranks);
  // A failover that took `seconds` (serve --failover), in which `standbys`
  // standby ranks took lost ranks' places. The ranks' times reported so far
  // are dropped: the ranks of the next generation report theirs.
  void ObserveFailover(double seconds, int standbys);
  // A grow-back (serve --failover) in which `joined` standby ranks took new
  // places in a job running below its size; the ranks' times reported so
  // far are dropped, as for a failover.
  void CountJoins(int joined);
  // Rank `rank`'s totals so far (they replace its earlier ones).
  void SetRankTimes(int rank, double compute_seconds, double wait_seconds);
  // The prefix cache's stats so far (they replace the earlier ones).
  void SetPrefixCache(const PrefixCacheStats& stats);
  // Speculative decoding: `drafted` more drafted tokens were run, `accepted`
  // of them kept.
  void CountDrafts(int64_t drafted, int64_t accepted);

  // The leader's stage's routing histogram so far (it replaces the earlier
  // one): counts (layers, num_experts) of layers first_layer, first_layer +
  // 1, ... (TransformerStage::RoutingCounts); layers with no count are left
  // out.
  void SetRoutedPositions(int64_t first_layer, int64_t num_experts, std::span<const int64_t> counts);

  // The exposition text; `queued` and `running` are the queue's gauges,
  // `refused_connections` the HTTP server's count of connections refused
  // for being over its limit.
  std::string Render(int64_t queued, int64_t running, int64_t refused_connections) const;

 private:
  struct Histogram {
    std::array<int64_t, kBuckets.size()> counts{};  // per bucket, not cumulative
    int64_t count = 0;
    double sum = 0;
  };
  static void Observe(Histogram& histogram, double seconds);
  static void Write(std::string& out, const std::string& name, const std::string& help, const Histogram& h);

  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
  int64_t prompt_tokens_ = 0;
  int64_t generated_tokens_ = 0;
  Histogram time_to_first_token_;
  Histogram time_per_token_;
  Histogram failover_;
  int64_t ranks_ = 0;
  int64_t standby_takeovers_ = 0;
  int64_t joins_ = 0;
  std::map<int, std::array<double, 2>> rank_times_;  // rank -> {compute, wait} seconds
  PrefixCacheStats prefix_cache_;
  int64_t routed_first_layer_ = 0;
  int64_t routed_experts_ = 0;
  std::vector<int64_t> routed_;  // SetRoutedPositions's counts
  int64_t drafted_tokens_ = 0;
  int64_t accepted_tokens_ = 0;
};

}  // namespace inferno
