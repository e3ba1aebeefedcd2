#include "server/metrics.h"

#include <vector>

#include <gtest/gtest.h>

namespace inferno {
namespace {

TEST(ServerMetrics, RendersCountersGaugesAndCumulativeHistograms) {
  ServerMetrics metrics;
  metrics.CountRequest("/v1/completions", 200);
  metrics.CountRequest("/v1/completions", 200);
  metrics.CountRequest("/v1/completions", 429);
  metrics.CountTokens(10, 3);
  metrics.ObserveTimeToFirstToken(0.003);
  metrics.ObserveTimeToFirstToken(0.2);
  metrics.ObserveTimeToFirstToken(60);
  const std::string text = metrics.Render(4, 2, 3);
  EXPECT_NE(text.find("inferno_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("inferno_requests_total{endpoint=\"/v1/completions\",status=\"429\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("inferno_prompt_tokens_total 10\n"), std::string::npos);
  EXPECT_NE(text.find("inferno_generated_tokens_total 3\n"), std::string::npos);
  EXPECT_NE(text.find("inferno_queue_depth 4\n"), std::string::npos);
  EXPECT_NE(text.find("inferno_running_requests 2\n"), std::string::npos);
  EXPECT_NE(
      text.find("# TYPE inferno_refused_connections_total counter\ninferno_refused_connections_total 3\n"),
      std::string::npos);
  EXPECT_NE(text.find("inferno_time_to_first_token_seconds_bucket{le=\"0.0025\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("inferno_time_to_first_token_seconds_bucket{le=\"0.005\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("inferno_time_to_first_token_seconds_bucket{le=\"0.25\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("inferno_time_to_first_token_seconds_bucket{le=\"5\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("inferno_time_to_first_token_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("inferno_time_to_first_token_seconds_count 3\n"), std::string::npos);
  EXPECT_NE(text.find("inferno_time_per_token_seconds_count 0\n"), std::string::npos);
}

TEST(ServerMetrics, CountsFailoversTheirSecondsAndStandbyTakeovers) {
  ServerMetrics metrics;
  EXPECT_NE(metrics.Render(0, 0, 0).find("inferno_failover_seconds_count 0\n"), std::string::npos);
  metrics.SetRanks(3);
  metrics.SetRankTimes(2, 1.0, 2.0);
  metrics.ObserveFailover(1.5, 1);
  metrics.ObserveFailover(3, 0);
  metrics.SetRanks(2);
  const std::string text = metrics.Render(0, 0, 0);
  EXPECT_NE(text.find("inferno_ranks 2\n"), std::string::npos);
  EXPECT_NE(text.find("inferno_standby_takeovers_total 1\n"), std::string::npos);
  EXPECT_EQ(text.find("{rank=\"2\"}"), std::string::npos) << "a lost rank's times outlive the failover";
  EXPECT_NE(text.find("inferno_failover_seconds_bucket{le=\"2.5\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("inferno_failover_seconds_sum 4.5\n"), std::string::npos);
  EXPECT_NE(text.find("inferno_failover_seconds_count 2\n"), std::string::npos);
}

TEST(ServerMetrics, CountsJoinsAndDropsTheRankTimesOfTheSmallerJob) {
  ServerMetrics metrics;
  EXPECT_NE(metrics.Render(0, 0, 0).find("inferno_joins_total 0\n"), std::string::npos);
  metrics.SetRankTimes(1, 1.0, 2.0);
  metrics.CountJoins(1);
  const std::string text = metrics.Render(0, 0, 0);
  EXPECT_NE(text.find("inferno_joins_total 1\n"), std::string::npos);
  EXPECT_EQ(text.find("{rank=\"1\"}"), std::string::npos);
}

TEST(ServerMetrics, RendersEachRanksLatestComputeAndWaitAsCounters) {
  ServerMetrics metrics;
  const std::string before = metrics.Render(0, 0, 0);
  EXPECT_NE(before.find("# TYPE inferno_rank_compute_seconds_total counter\n"), std::string::npos);
  EXPECT_EQ(before.find("inferno_rank_compute_seconds_total{"), std::string::npos);
  metrics.SetRankTimes(1, 0.5, 7);
  metrics.SetRankTimes(0, 1.25, 0.125);
  metrics.SetRankTimes(1, 2.5, 9.75);  // later totals replace the earlier
  const std::string text = metrics.Render(0, 0, 0);
  EXPECT_NE(text.find("# HELP inferno_rank_compute_seconds_total "), std::string::npos);
  EXPECT_NE(text.find("# HELP inferno_rank_wait_seconds_total "), std::string::npos);
  EXPECT_NE(text.find("# TYPE inferno_rank_wait_seconds_total counter\n"
                      "inferno_rank_wait_seconds_total{rank=\"0\"} 0.125\n"
                      "inferno_rank_wait_seconds_total{rank=\"1\"} 9.75\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE inferno_rank_compute_seconds_total counter\n"
                      "inferno_rank_compute_seconds_total{rank=\"0\"} 1.25\n"
                      "inferno_rank_compute_seconds_total{rank=\"1\"} 2.5\n"),
            std::string::npos)
      << text;
}

TEST(ServerMetrics, RendersTheLatestRoutingHistogramOfEachLayerRouted) {
  ServerMetrics metrics;
  EXPECT_EQ(metrics.Render(0, 0, 0).find("inferno_expert_routed_positions_total"), std::string::npos);
  metrics.SetRoutedPositions(2, 3, std::vector<int64_t>{1, 0, 1, 9, 9, 9});
  // Layers 2 (dense: no count) and 3, each of 3 experts.
  metrics.SetRoutedPositions(2, 3, std::vector<int64_t>{0, 0, 0, 4, 0, 2});
  const std::string text = metrics.Render(0, 0, 0);
  EXPECT_NE(text.find("# TYPE inferno_expert_routed_positions_total counter\n"
                      "inferno_expert_routed_positions_total{layer=\"3\",expert=\"0\"} 4\n"
                      "inferno_expert_routed_positions_total{layer=\"3\",expert=\"1\"} 0\n"
                      "inferno_expert_routed_positions_total{layer=\"3\",expert=\"2\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("layer=\"2\""), std::string::npos) << text;
}

TEST(ServerMetrics, RendersThePrefixCachesLatestStats) {
  ServerMetrics metrics;
  EXPECT_NE(metrics.Render(0, 0, 0).find("inferno_prefix_cache_hits_total 0\n"), std::string::npos);
  metrics.SetPrefixCache({.lookups = 9,
                          .hits = 4,
                          .hit_positions = 320,
                          .evictions = 2,
                          .blocks_in_use = 3,
                          .capacity_blocks = 8,
                          .bytes_in_use = 3000,
                          .capacity_bytes = 8000});
  const std::string text = metrics.Render(0, 0, 0);
  for (const char* line :
       {"# TYPE inferno_prefix_cache_lookups_total counter\ninferno_prefix_cache_lookups_total 9\n",
        "# TYPE inferno_prefix_cache_hits_total counter\ninferno_prefix_cache_hits_total 4\n",
        "inferno_prefix_cache_hit_positions_total 320\n", "inferno_prefix_cache_evictions_total 2\n",
        "# TYPE inferno_prefix_cache_bytes gauge\ninferno_prefix_cache_bytes 3000\n",
        "inferno_prefix_cache_capacity_bytes 8000\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  }
}

TEST(ServerMetrics, CountsDraftedAndAcceptedTokens) {
  ServerMetrics metrics;
  metrics.CountDrafts(8, 3);
  metrics.CountDrafts(4, 4);
  const std::string text = metrics.Render(0, 0, 0);
  EXPECT_NE(text.find("# TYPE inferno_speculative_drafted_tokens_total counter\n"
                      "inferno_speculative_drafted_tokens_total 12\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("inferno_speculative_accepted_tokens_total 7\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace inferno
