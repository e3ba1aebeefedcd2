#include "server/metrics.h"

#include <algorithm>

#include <cstdio>
#include <initializer_list>

namespace inferno {

void ServerMetrics::CountRequest(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{endpoint, status}];
}

void ServerMetrics::CountTokens(int64_t prompt, int64_t generated) {
  std::lock_guard<std::mutex> lock(mutex_);
  prompt_tokens_ += prompt;
  generated_tokens_ += generated;
}

void ServerMetrics::ObserveTimeToFirstToken(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  Observe(time_to_first_token_, seconds);
}

void ServerMetrics::ObserveTimePerToken(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  Observe(time_per_token_, seconds);
}

void ServerMetrics::SetRankTimes(int rank, double compute_seconds, double wait_seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  rank_times_[rank] = {compute_seconds, wait_seconds};
}

void ServerMetrics::SetRoutedPositions(int64_t first_layer, int64_t num_experts,
                                       std::span<const int64_t> counts) {
  std::lock_guard<std::mutex> lock(mutex_);
  routed_first_layer_ = first_layer;
  routed_experts_ = num_experts;
  routed_.assign(counts.begin(), counts.end());
}

void ServerMetrics::Observe(Histogram& histogram, double seconds) {
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) {
      ++histogram.counts[i];
      break;
    }
  }
  ++histogram.count;
  histogram.sum += seconds;
}

namespace {

std::string Number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

}  // namespace

void ServerMetrics::Write(std::string& out, const std::string& name, const std::string& help,
                          const Histogram& h) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  int64_t cumulative = 0;
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    cumulative += h.counts[i];
    out += name + "_bucket{le=\"" + Number(kBuckets[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(h.count) + "\n";
  out += name + "_sum " + Number(h.sum) + "\n" + name + "_count " + std::to_string(h.count) + "\n";
}

void ServerMetrics::SetRanks(int ranks) {
  std::lock_guard<std::mutex> lock(mutex_);
  ranks_ = ranks;
}

void ServerMetrics::ObserveFailover(double seconds, int standbys) {
  std::lock_guard<std::mutex> lock(mutex_);
  Observe(failover_, seconds);
  standby_takeovers_ += standbys;
  rank_times_.clear();
}

void ServerMetrics::CountJoins(int joined) {
  std::lock_guard<std::mutex> lock(mutex_);
  joins_ += joined;
  rank_times_.clear();
}

void ServerMetrics::SetPrefixCache(const PrefixCacheStats& stats) {
  std::lock_guard<std::mutex> lock(mutex_);
  prefix_cache_ = stats;
}

void ServerMetrics::CountDrafts(int64_t drafted, int64_t accepted) {
  std::lock_guard<std::mutex> lock(mutex_);
  drafted_tokens_ += drafted;
  accepted_tokens_ += accepted;
}

std::string ServerMetrics::Render(int64_t queued, int64_t running, int64_t refused_connections) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  out += "# HELP inferno_requests_total HTTP requests by endpoint and status.\n";
  out += "# TYPE inferno_requests_total counter\n";
  for (const auto& [key, count] : requests_) {
    out += "inferno_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
           "\"} " + std::to_string(count) + "\n";
  }
  out += "# HELP inferno_refused_connections_total Connections answered 503 at once: over the limit.\n";
  out += "# TYPE inferno_refused_connections_total counter\n";
  out += "inferno_refused_connections_total " + std::to_string(refused_connections) + "\n";
  out += "# HELP inferno_prompt_tokens_total Prompt tokens of the requests run.\n";
  out += "# TYPE inferno_prompt_tokens_total counter\n";
  out += "inferno_prompt_tokens_total " + std::to_string(prompt_tokens_) + "\n";
  out += "# HELP inferno_generated_tokens_total Tokens generated.\n";
  out += "# TYPE inferno_generated_tokens_total counter\n";
  out += "inferno_generated_tokens_total " + std::to_string(generated_tokens_) + "\n";
  out += "# HELP inferno_queue_depth Requests waiting for a KV-cache slot.\n";
  out += "# TYPE inferno_queue_depth gauge\n";
  out += "inferno_queue_depth " + std::to_string(queued) + "\n";
  out += "# HELP inferno_running_requests Requests in the pipeline.\n";
  out += "# TYPE inferno_running_requests gauge\n";
  out += "inferno_running_requests " + std::to_string(running) + "\n";
  Write(out, "inferno_time_to_first_token_seconds", "From a request's arrival to its first token.",
        time_to_first_token_);
  Write(out, "inferno_time_per_token_seconds", "Between consecutive tokens of a request.", time_per_token_);
  Write(out, "inferno_failover_seconds",
        "From the leader finding a rank lost to the next generation of the job formed; _count: failovers.",
        failover_);
  // rank_times_'s values in order.
  static constexpr std::array<std::pair<const char*, const char*>, 2> kRankFamilies = {{
      {"inferno_rank_compute_seconds_total", "Seconds each rank spent computing its part of the pipeline."},
      {"inferno_rank_wait_seconds_total",
       "Seconds each rank spent blocked for the next message from the previous stage."},
  }};
  for (size_t i = 0; i < kRankFamilies.size(); ++i) {
    const auto& [name, help] = kRankFamilies[i];
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n";
    for (const auto& [rank, seconds] : rank_times_) {
      out += std::string(name) + "{rank=\"" + std::to_string(rank) + "\"} " + Number(seconds[i]) + "\n";
    }
  }
  if (!routed_.empty()) {
    out +=
        "# HELP inferno_expert_routed_positions_total Positions the router sent to each expert of each layer "
        "(the leader's stage's layers).\n# TYPE inferno_expert_routed_positions_total counter\n";
    for (size_t row = 0; row * routed_experts_ < routed_.size(); ++row) {
      const auto begin = routed_.begin() + static_cast<int64_t>(row) * routed_experts_;
      if (std::all_of(begin, begin + routed_experts_, [](int64_t count) { return count == 0; })) continue;
      for (int64_t e = 0; e < routed_experts_; ++e) {
        out += "inferno_expert_routed_positions_total{layer=\"" +
               std::to_string(routed_first_layer_ + static_cast<int64_t>(row)) + "\",expert=\"" +
               std::to_string(e) + "\"} " + std::to_string(begin[e]) + "\n";
      }
    }
  }
  struct Family {
    const char* name;
    const char* type;
    const char* help;
    int64_t value;
  };
  const PrefixCacheStats& cache = prefix_cache_;
  for (const Family& family : std::initializer_list<Family>{
           {"inferno_prefix_cache_lookups_total", "counter", "Requests admitted with the prefix cache on.",
            cache.lookups},
           {"inferno_prefix_cache_hits_total", "counter",
            "Requests whose prompt started with a cached prefix.", cache.hits},
           {"inferno_prefix_cache_hit_positions_total", "counter",
            "Prompt positions restored from the prefix cache instead of run.", cache.hit_positions},
           {"inferno_prefix_cache_evictions_total", "counter", "Cached blocks evicted to make room.",
            cache.evictions},
           {"inferno_prefix_cache_bytes", "gauge", "Bytes the cached blocks take, summed over the ranks.",
            cache.bytes_in_use},
           {"inferno_prefix_cache_capacity_bytes", "gauge",
            "The prefix cache's budget in whole blocks (--cache-mib), summed over the ranks.",
            cache.capacity_bytes},
           {"inferno_speculative_drafted_tokens_total", "counter",
            "Tokens drafted by prompt lookup and run to be verified (--speculate).", drafted_tokens_},
           {"inferno_speculative_accepted_tokens_total", "counter",
            "Drafted tokens kept: the sampler agreed with them.", accepted_tokens_},
           {"inferno_ranks", "gauge", "Ranks of the job's current generation.", ranks_},
           {"inferno_standby_takeovers_total", "counter",
            "Standby ranks that took a lost rank's place (serve --failover).", standby_takeovers_},
           {"inferno_joins_total", "counter",
            "Standby ranks that joined a job running below its size, which grew back (serve --failover).",
            joins_},
       }) {
    out += std::string("# HELP ") + family.name + " " + family.help + "\n# TYPE " + family.name + " " +
           family.type + "\n" + family.name + " " + std::to_string(family.value) + "\n";
  }
  return out;
}

}  // namespace inferno
