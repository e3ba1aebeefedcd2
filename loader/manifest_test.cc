#include "loader/manifest.h"

#include <gtest/gtest.h>

#include "loader/shard_plan.h"
#include "loader/test_models.h"

namespace inferno {
namespace {

Manifest TestManifest() {
  const std::string folder = TestPath("model", true);
  EXPECT_TRUE(WriteTestSafetensorsModel(folder, TestConfig(4, false)));
  std::unique_ptr<Checkpoint> checkpoint = std::move(*Checkpoint::Open(folder));
  Manifest m;
  m.source = folder;
  m.source_fingerprint = "f00d";
  m.config = checkpoint->config();
  m.plan = *MakeShardPlan(checkpoint->config(), 2, 2, std::vector<int64_t>{1, 3});
  for (int rank = 0; rank < 4; ++rank) {
    m.files.push_back(
        {rank, ShardFileName(rank, 4), 1000u + static_cast<uint64_t>(rank), "ab" + std::to_string(rank)});
  }
  return m;
}

std::string ParseFails(const std::string& text) {
  Result<Manifest> m = ParseManifestJson(text, "out/manifest.json");
  if (m) {
    ADD_FAILURE() << "parsed a bad manifest";
    return "";
  }
  EXPECT_EQ(m.error().message.rfind("out/manifest.json: ", 0), 0u) << m.error().message;
  return m.error().message;
}

TEST(Manifest, RoundTripsThroughJson) {
  const Manifest m = TestManifest();
  const std::string text = ManifestToJson(m);
  Result<Manifest> parsed = ParseManifestJson(text, "manifest.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(ManifestToJson(*parsed), text);
  EXPECT_EQ(parsed->plan.pp, 2);
  EXPECT_EQ(parsed->plan.tp, 2);
  EXPECT_EQ(parsed->plan.ranks[3].layers.end, 1);
  EXPECT_EQ(parsed->plan.ranks[0].tensors.size(), m.plan.ranks[0].tensors.size());
  EXPECT_EQ(parsed->plan.ranks[1].tensors[2].split_dim, 0);
  EXPECT_EQ(parsed->files[2].file, "rank-00002-of-00004.safetensors");
  EXPECT_EQ(parsed->files[2].bytes, 1002u);
  EXPECT_EQ(parsed->config.hidden_size, 16);
  EXPECT_EQ(parsed->source_fingerprint, "f00d");
}

TEST(Manifest, InvalidJson) { EXPECT_EQ(ParseFails("{"), "out/manifest.json: not valid JSON"); }

TEST(Manifest, NotAShardManifest) {
  EXPECT_NE(ParseFails("{\"a\": 1}").find("not an inferno shard manifest"), std::string::npos);
}

TEST(Manifest, MissingFieldIsMalformed) {
  std::string text = ManifestToJson(TestManifest());
  text.replace(text.find("\"tool_version\""), 14, "\"tool_versoin\"");
  EXPECT_NE(ParseFails(text).find("malformed manifest"), std::string::npos);
}

TEST(Manifest, HandEditedPlanFailsItsDigest) {
  std::string text = ManifestToJson(TestManifest());
  const size_t at = text.find("\"has_final_norm\": true");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 22, "\"has_final_norm\": false");
  EXPECT_NE(ParseFails(text).find("does not match its plan"), std::string::npos);
}

TEST(Manifest, FileNamePointingElsewhere) {
  Manifest m = TestManifest();
  m.files[1].file = "../rank-00001-of-00004.safetensors";
  EXPECT_NE(ParseFails(ManifestToJson(m)).find("rank 1 file '../rank-00001-of-00004.safetensors'"),
            std::string::npos);
}

TEST(Manifest, RankCountDifferentFromWorld) {
  Manifest m = TestManifest();
  m.plan.ranks.pop_back();
  m.files.pop_back();
  EXPECT_NE(ParseFails(ManifestToJson(m)).find("lists 3 ranks but the world pp=2 tp=2 has 4"),
            std::string::npos);
}

TEST(ShardFileName, IsZeroPaddedRankOfWorld) {
  EXPECT_EQ(ShardFileName(7, 12), "rank-00007-of-00012.safetensors");
}

}  // namespace
}  // namespace inferno
