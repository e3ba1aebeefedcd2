// The sharding job and opening its output: shards give bit-identical tensors
// to the original checkpoint, re-runs verify and skip, and bad shard folders
// fail with a clear message.
#include "loader/shard_writer.h"

#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "loader/crc32c.h"
#include "loader/manifest.h"
#include "loader/mapped_checkpoint.h"
#include "loader/mapped_file.h"
#include "loader/sharded_checkpoint.h"
#include "loader/test_models.h"

namespace inferno {
namespace {

namespace fs = std::filesystem;

ShardJob Job(int rank, int world_size, std::optional<int> pp = std::nullopt,
             std::optional<int> tp = std::nullopt) {
  ShardJob job;
  job.rank = rank;
  job.world_size = world_size;
  job.pp = pp;
  job.tp = tp;
  return job;
}

std::unique_ptr<MappedCheckpoint> Open(const std::string& path) {
  Result<std::unique_ptr<MappedCheckpoint>> checkpoint = MappedCheckpoint::Open(path);
  EXPECT_TRUE(checkpoint) << checkpoint.error().message;
  return checkpoint ? std::move(*checkpoint) : nullptr;
}

void ExpectShardsMatchOriginal(const std::string& folder, const Checkpoint& original) {
  Result<Manifest> manifest = ReadManifest(folder);
  ASSERT_TRUE(manifest) << manifest.error().message;
  for (int rank = 0; rank < manifest->plan.world_size(); ++rank) {
    Result<RankShardCheckpoint> shard = OpenRankShard(folder, Job(rank, manifest->plan.world_size()));
    ASSERT_TRUE(shard) << shard.error().message;
    ExpectRankWeightsMatch(*shard->checkpoint, original, shard->shard(rank));
  }
}

Result<ShardJobReport> Shard(const MappedCheckpoint& checkpoint, const std::string& out, int pp, int tp,
                             std::optional<std::vector<int64_t>> layers = std::nullopt) {
  Result<ShardPlan> plan = MakeShardPlan(checkpoint.config(), pp, tp, layers);
  if (!plan) return plan.error();
  return WriteShards(checkpoint, "model", *plan, std::nullopt, out, nullptr);
}

struct ShardCase {
  std::string name;
  bool llama2c;
  bool tied;
  int64_t layers;
  int pp;
  int tp;
};

class ShardRoundTrip : public testing::TestWithParam<ShardCase> {};

TEST_P(ShardRoundTrip, ShardsGiveBitIdenticalTensorsToTheOriginal) {
  const ShardCase& c = GetParam();
  std::string model = TestPath("model_" + c.name, !c.llama2c);
  if (c.llama2c) {
    model += ".bin";
    ASSERT_TRUE(WriteTestLlama2cModel(model, TestConfig(c.layers, c.tied)));
  } else {
    ASSERT_TRUE(WriteTestSafetensorsModel(model, TestConfig(c.layers, c.tied)));
  }
  std::unique_ptr<MappedCheckpoint> original = Open(model);
  ASSERT_TRUE(original);
  const std::string out = TestPath("shards_" + c.name);
  Result<ShardJobReport> report = Shard(*original, out, c.pp, c.tp);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->files_written, c.pp * c.tp);
  ExpectShardsMatchOriginal(out, *original);
}

INSTANTIATE_TEST_SUITE_P(Plans, ShardRoundTrip,
                         testing::Values(ShardCase{"llama2c_pp3", true, false, 5, 3, 1},
                                         ShardCase{"llama2c_tied_pp2_tp2", true, true, 3, 2, 2},
                                         ShardCase{"safetensors_pp2_tp2", false, false, 4, 2, 2},
                                         ShardCase{"safetensors_tied_pp1", false, true, 2, 1, 1}),
                         [](const testing::TestParamInfo<ShardCase>& info) { return info.param.name; });

TEST(ShardWriter, Stories260KShardsMatchTheOriginal) {
  const std::string path = SharedModelPath("stories260K.bin");
  if (path.empty()) GTEST_SKIP() << "../shared/models/stories260K.bin is absent (fresh clone): skipped";
  std::unique_ptr<MappedCheckpoint> original = Open(path);
  ASSERT_TRUE(original);
  const std::string out = TestPath("stories_shards");
  Result<ShardJobReport> report = Shard(*original, out, 3, 2);
  ASSERT_TRUE(report) << report.error().message;
  ExpectShardsMatchOriginal(out, *original);
}

// shard --dtype: every matrix holds the values its whole rows take in the
// new type (then cut to the rank's slice); a column slice that cuts blocks
// is F32; norms keep the source's type; the manifest records the types.
class ConvertedShards : public testing::TestWithParam<DType> {};

TEST_P(ConvertedShards, HoldTheWholeRowsConvertedValues) {
  const DType dtype = GetParam();
  ModelConfig config = TestConfig(2, false);
  config.hidden_size = 64;        // rows of 2 blocks
  config.intermediate_size = 96;  // TP2 cuts down_proj's rows at 48: mid-block
  const std::string model = TestPath("convert_" + std::string(DTypeName(dtype)), true);
  ASSERT_TRUE(WriteTestSafetensorsModel(model, config));
  std::unique_ptr<MappedCheckpoint> original = Open(model);
  ASSERT_TRUE(original);
  Result<ShardPlan> plan = MakeShardPlan(original->config(), 1, 2, std::nullopt);
  ASSERT_TRUE(plan) << plan.error().message;
  const std::string out = TestPath("convert_" + std::string(DTypeName(dtype)) + "_shards");
  Result<ShardJobReport> report = WriteShards(*original, model, *plan, dtype, out, nullptr);
  ASSERT_TRUE(report) << report.error().message;
  Result<Manifest> manifest = ReadManifest(out);
  ASSERT_TRUE(manifest) << manifest.error().message;
  EXPECT_EQ(manifest->dtype, dtype);
  bool saw_cut = false;
  for (int rank = 0; rank < 2; ++rank) {
    Result<RankShardCheckpoint> shard = OpenRankShard(out, Job(rank, 2));
    ASSERT_TRUE(shard) << shard.error().message;
    const RankShard& part = shard->shard(rank);
    ASSERT_EQ(manifest->files[rank].dtypes.size(), part.tensors.size());
    for (size_t i = 0; i < part.tensors.size(); ++i) {
      const TensorSlice& slice = part.tensors[i];
      const TensorInfo source = *original->Find(slice.name);
      const TensorInfo stored = *shard->checkpoint->Find(slice.name);
      EXPECT_EQ(manifest->files[rank].dtypes[i], stored.dtype) << slice.name;
      const bool cut = slice.split_dim == 1 && DTypeBlockElements(dtype) > 1 &&
                       (slice.begin % 32 != 0 || slice.end % 32 != 0);
      saw_cut = saw_cut || cut;
      EXPECT_EQ(stored.dtype, source.shape.size() != 2 ? DType::kF32
                              : cut                    ? DType::kF32
                                                       : dtype)
          << slice.name;
      // Expected: each whole source row through `dtype` and back, then cut.
      std::vector<float> whole(static_cast<size_t>(source.num_elements()));
      ASSERT_TRUE(original->ReadF32(slice.name, whole).ok());
      if (source.shape.size() == 2) {
        const int64_t cols = source.shape[1];
        std::vector<std::byte> row(static_cast<size_t>(DTypeBytes(dtype, cols).value()));
        for (int64_t r = 0; r < source.shape[0]; ++r) {
          const std::span<float> values = std::span<float>(whole).subspan(r * cols, cols);
          ASSERT_TRUE(ConvertFromF32(dtype, values, row.data()).ok());
          ConvertToF32(dtype, row.data(), values);
        }
      }
      std::vector<float> expected;
      const std::vector<int64_t> shape = SliceShape(source.shape, slice);
      for (int64_t r = 0; r < (shape.size() == 2 ? shape[0] : 1); ++r) {
        for (int64_t c = 0; c < shape.back(); ++c) {
          const int64_t row = slice.split_dim == 0 ? slice.begin + r : r;
          const int64_t col = slice.split_dim == 1 ? slice.begin + c : c;
          expected.push_back(whole[row * source.shape.back() + col]);
        }
      }
      std::vector<float> got(expected.size());
      ASSERT_TRUE(shard->checkpoint->ReadF32(slice.name, got).ok()) << slice.name;
      EXPECT_EQ(got, expected) << DTypeName(dtype) << " " << slice.name;
    }
  }
  EXPECT_EQ(saw_cut, DTypeBlockElements(dtype) > 1);
}

INSTANTIATE_TEST_SUITE_P(EveryConversion, ConvertedShards,
                         testing::Values(DType::kBF16, DType::kF16, DType::kQ8_0, DType::kQ4_0),
                         [](const testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

// The tokenizer files beside a model folder travel with its shards, byte for
// byte, so a job over the shards finds the tokenizer as beside the model.
TEST(ShardWriter, TokenizerFilesBesideTheSourceAreCopied) {
  const std::string model = TestPath("with_tokenizer", true);
  ASSERT_TRUE(WriteTestSafetensorsModel(model, TestConfig(2, false)));
  ASSERT_TRUE(WriteBytes(model + "/tokenizer.json", "{\"model\": {\"type\": \"BPE\"}}\n"));
  ASSERT_TRUE(WriteBytes(model + "/tokenizer_config.json", "{\"eos_token\": \"</s>\"}"));
  std::unique_ptr<MappedCheckpoint> checkpoint = Open(model);
  ASSERT_TRUE(checkpoint);
  Result<ShardPlan> plan = MakeShardPlan(checkpoint->config(), 2, 1, std::nullopt);
  ASSERT_TRUE(plan) << plan.error().message;
  const std::string out = TestPath("with_tokenizer_shards", true);
  Result<ShardJobReport> report = WriteShards(*checkpoint, model, *plan, std::nullopt, out, nullptr);
  ASSERT_TRUE(report) << report.error().message;
  for (const char* name : kTokenizerFiles) {
    Result<std::string> original = ReadTextFile(model + "/" + name);
    Result<std::string> copy = ReadTextFile(out + "/" + name);
    ASSERT_TRUE(original && copy) << name;
    EXPECT_EQ(*copy, *original) << name;
  }
}

class ShardFolder : public testing::Test {
 protected:
  void SetUp() override {
    model_ = TestPath(std::string(testing::UnitTest::GetInstance()->current_test_info()->name()) + ".bin");
    out_ = TestPath(std::string(testing::UnitTest::GetInstance()->current_test_info()->name()) + "_out");
    ASSERT_TRUE(WriteTestLlama2cModel(model_, TestConfig(5, false)));
    checkpoint_ = Open(model_);
    ASSERT_TRUE(checkpoint_);
    Result<ShardJobReport> report = Shard(*checkpoint_, out_, 3, 1);
    ASSERT_TRUE(report) << report.error().message;
  }

  std::string RankFile(int rank) const { return out_ + "/" + ShardFileName(rank, 3); }

  void FlipByte(const std::string& path, uint64_t offset) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(static_cast<char>(c ^ 0x55));
  }

  std::string OpenFails(const ShardJob& job) {
    Result<RankShardCheckpoint> shard = OpenRankShard(out_, job);
    if (shard) {
      ADD_FAILURE() << "opened a bad shard";
      return "";
    }
    EXPECT_EQ(shard.error().message.find('\n'), std::string::npos);
    return shard.error().message;
  }

  std::string model_, out_;
  std::unique_ptr<MappedCheckpoint> checkpoint_;
};

TEST_F(ShardFolder, RerunOverFinishedOutputVerifiesAndSkips) {
  struct stat before;
  ASSERT_EQ(::stat(RankFile(1).c_str(), &before), 0);
  Result<ShardJobReport> again = Shard(*checkpoint_, out_, 3, 1);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->files_written, 0);
  EXPECT_EQ(again->files_verified, 3);
  struct stat after;
  ASSERT_EQ(::stat(RankFile(1).c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
}

TEST_F(ShardFolder, DamagedFileIsRewrittenOnRerun) {
  FlipByte(RankFile(1), fs::file_size(RankFile(1)) - 3);
  Result<ShardJobReport> again = Shard(*checkpoint_, out_, 3, 1);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->files_written, 1);
  EXPECT_EQ(again->files_verified, 2);
  ExpectShardsMatchOriginal(out_, *checkpoint_);
}

TEST_F(ShardFolder, OtherPlanOverTheSameFolderRewritesEverything) {
  Result<ShardJobReport> again = Shard(*checkpoint_, out_, 3, 1, std::vector<int64_t>{3, 1, 1});
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->files_written, 3);
  ExpectShardsMatchOriginal(out_, *checkpoint_);
  EXPECT_EQ(ReadManifest(out_)->plan.ranks[2].layers.end, 3);
}

TEST_F(ShardFolder, FailedRunLeavesNoManifest) {
  FlipByte(RankFile(2), fs::file_size(RankFile(2)) - 3);
  fs::create_directories(RankFile(2) + ".partial");  // rank 2's temporary file cannot be created
  Result<ShardJobReport> again = Shard(*checkpoint_, out_, 3, 1);
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("rank-00002-of-00003.safetensors.partial: cannot create"),
            std::string::npos)
      << again.error().message;
  EXPECT_FALSE(fs::exists(out_ + "/manifest.json"));
  EXPECT_FALSE(OpenRankShard(out_, Job(0, 3)));
}

TEST_F(ShardFolder, ChecksumMismatch) {
  FlipByte(RankFile(0), fs::file_size(RankFile(0)) - 3);
  const std::string message = OpenFails(Job(0, 3));
  EXPECT_NE(message.find(RankFile(0) + ": checksum mismatch: crc32c "), std::string::npos) << message;
}

TEST_F(ShardFolder, JobWithAnotherWorldSize) {
  EXPECT_EQ(OpenFails(Job(0, 2)),
            out_ + ": these shards were made for pp=3 tp=1 (3 ranks); this job has 2 ranks");
  EXPECT_EQ(OpenFails(Job(0, 3, 1, 3)),
            out_ + ": these shards were made for pp=3 tp=1 (3 ranks); this job asks for pp=1 tp=3");
}

// Puts `file` in place of rank `rank`'s file and makes the manifest's size and
// checksum agree, so that only the file's own metadata can tell.
void Substitute(const std::string& out, int rank, const std::string& file) {
  fs::copy_file(file, out + "/" + ShardFileName(rank, 3), fs::copy_options::overwrite_existing);
  Manifest manifest = *ReadManifest(out);
  ShardFile& entry = manifest.files[static_cast<size_t>(rank)];
  entry.bytes = fs::file_size(file);
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Crc32c crc;
  crc.Update(std::as_bytes(std::span(bytes.data(), bytes.size())));
  entry.crc32c = crc.HexDigest();
  ASSERT_TRUE(WriteBytes(out + "/manifest.json", ManifestToJson(manifest)));
}

TEST_F(ShardFolder, ShardOfAnotherRank) {
  Substitute(out_, 0, RankFile(1));
  const std::string message = OpenFails(Job(0, 3));
  EXPECT_NE(message.find(RankFile(0) + ": a shard of another rank: metadata inferno.rank = 1"),
            std::string::npos)
      << message;
}

TEST_F(ShardFolder, ShardOfAnotherPlan) {
  const std::string other = TestPath("other_plan");
  ASSERT_TRUE(Shard(*checkpoint_, other, 3, 1, std::vector<int64_t>{1, 1, 3}));
  Substitute(out_, 0, other + "/" + ShardFileName(0, 3));
  const std::string message = OpenFails(Job(0, 3));
  EXPECT_NE(message.find(RankFile(0) + ": a shard of another plan: metadata inferno.plan_sha256"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace inferno
