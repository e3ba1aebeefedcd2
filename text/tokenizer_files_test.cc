#include "text/tokenizer_files.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "text/hf_tokenizer/real_tokenizers.h"

namespace inferno {
namespace {

namespace fs = std::filesystem;

std::string TempFolder(const std::string& name) {
  const fs::path folder = fs::path(std::getenv("TEST_TMPDIR")) / name;
  fs::create_directories(folder);
  return folder.string();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A llama2.c tokenizer.bin: max length 1, then 259 one-byte pieces.
std::string Llama2cTokenizerBytes() {
  std::string bytes;
  const auto put_int = [&](int32_t v) { bytes.append(reinterpret_cast<const char*>(&v), 4); };
  put_int(1);
  for (int id = 0; id < 259; ++id) {
    const float score = 0.0f;
    bytes.append(reinterpret_cast<const char*>(&score), 4);
    put_int(1);
    bytes.push_back(static_cast<char>(id % 256));
  }
  return bytes;
}

TEST(LoadTokenizer, ByteLevelFlagGivesTheByteTokenizerWithLlama2cStops) {
  auto loaded = LoadTokenizer(std::string(kByteLevelTokenizer), "");
  ASSERT_TRUE(loaded) << loaded.error().ToString();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->tokenizer->vocab_size(), ByteTokenizer::kVocabSize);
  EXPECT_EQ((*loaded)->stop_ids, (std::vector<int32_t>{kLlama2cEosId, kLlama2cBosId}));
}

TEST(LoadTokenizer, WithoutFlagAFolderWithoutTokenizerJsonGivesNone) {
  auto loaded = LoadTokenizer(std::nullopt, TempFolder("empty_model"));
  ASSERT_TRUE(loaded) << loaded.error().ToString();
  EXPECT_FALSE(loaded->has_value());
}

TEST(LoadTokenizer, AFolderFlagWithoutTokenizerJsonIsNotFoundNamingIt) {
  const std::string folder = TempFolder("no_tokenizer");
  auto loaded = LoadTokenizer(folder, "");
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().kind, ErrorKind::kNotFound);
  EXPECT_EQ(loaded.error().message, "--tokenizer: the folder '" + folder + "' holds no tokenizer.json");
}

TEST(LoadTokenizer, AMissingFileIsNotFound) {
  auto loaded = LoadTokenizer(TempFolder("x") + "/absent.json", "");
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().kind, ErrorKind::kNotFound);
}

TEST(LoadTokenizer, ALlama2cFileIsReadByContentWhateverItsName) {
  const std::string path = TempFolder("llama2c") + "/tokenizer.json";
  WriteFile(path, Llama2cTokenizerBytes());
  auto loaded = LoadTokenizer(path, "");
  ASSERT_TRUE(loaded) << loaded.error().ToString();
  EXPECT_EQ((*loaded)->tokenizer->vocab_size(), 259);
  EXPECT_EQ((*loaded)->bos_id, kLlama2cBosId);
  EXPECT_EQ((*loaded)->sha256.size(), 64u);
}

TEST(LoadTokenizer, MalformedJsonIsAOneLineErrorNamingTheFile) {
  const std::string path = TempFolder("bad_json") + "/tokenizer.json";
  WriteFile(path, "{\"model\": ");
  auto loaded = LoadTokenizer(path, "");
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find(path), std::string::npos) << loaded.error().message;
  EXPECT_EQ(loaded.error().message.find('\n'), std::string::npos);
}

TEST(LoadTokenizer, WithoutFlagTheModelFoldersTokenizerJsonIsUsed) {
  const std::optional<std::string> real = hf::FindRealTokenizer("llama3");
  if (!real)
    GTEST_SKIP() << "no llama3 tokenizer in " << hf::RealTokenizersDir() << " (tools/fetch_tokenizers.sh)";
  const std::string model = TempFolder("llama3_model");
  fs::copy_file(*real, model + "/tokenizer.json", fs::copy_options::overwrite_existing);
  auto loaded = LoadTokenizer(std::nullopt, model);
  ASSERT_TRUE(loaded) << loaded.error().ToString();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->source, model + "/tokenizer.json");
  EXPECT_EQ((*loaded)->tokenizer->vocab_size(), 128256);
  EXPECT_EQ((*loaded)->bos_id, std::nullopt) << "this file's post-processor is ByteLevel alone";
  EXPECT_TRUE((*loaded)->stop_ids.empty());
  // And as a folder flag.
  auto by_folder = LoadTokenizer(model, "");
  ASSERT_TRUE(by_folder) << by_folder.error().ToString();
  EXPECT_EQ((*by_folder)->sha256, (*loaded)->sha256);
}

// tokenizer_config.json beside a tokenizer.json gives its eos_token as a
// stop id and its chat template.
TEST(LoadTokenizer, TheTokenizerConfigBesideGivesEosAndChatTemplate) {
  const std::optional<std::string> real = hf::FindRealTokenizer("llama3");
  if (!real)
    GTEST_SKIP() << "no llama3 tokenizer in " << hf::RealTokenizersDir() << " (tools/fetch_tokenizers.sh)";
  const std::string model = TempFolder("llama3_with_config");
  fs::copy_file(*real, model + "/tokenizer.json", fs::copy_options::overwrite_existing);
  fs::copy_file(fs::path(*real).parent_path() / "tokenizer_config.json", model + "/tokenizer_config.json",
                fs::copy_options::overwrite_existing);
  auto loaded = LoadTokenizer(std::nullopt, model);
  ASSERT_TRUE(loaded) << loaded.error().ToString();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->stop_ids, std::vector<int32_t>{128001}) << "<|end_of_text|>";
  ASSERT_TRUE((*loaded)->chat_config.has_value());
  EXPECT_EQ((*loaded)->chat_config->bos_token, "<|begin_of_text|>");
  EXPECT_EQ((*loaded)->bos_id, std::nullopt)
      << "no add_bos_token: the post-processor, which adds none, decides";
  WriteFile(model + "/tokenizer_config.json", R"({"bos_token": "<|begin_of_text|>", "add_bos_token": true})");
  auto with_bos = LoadTokenizer(std::nullopt, model);
  ASSERT_TRUE(with_bos) << with_bos.error().ToString();
  EXPECT_EQ((*with_bos)->bos_id, 128000) << "add_bos_token: true adds bos_token";
  WriteFile(model + "/tokenizer_config.json", R"({"eos_token": "<|no_such_token|>"})");
  auto bad = LoadTokenizer(std::nullopt, model);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("eos_token '<|no_such_token|>' is not a token of"), std::string::npos)
      << bad.error().message;
}

TEST(StopIds, AreTheModelsEosIdsThenTheTokenizersOwnEachOnce) {
  ModelConfig config;
  config.vocab_size = 300;
  config.eos_token_ids = {2, 290};
  LoadedTokenizer tokenizer;
  tokenizer.stop_ids = {kLlama2cEosId, kLlama2cBosId};
  auto ids = StopIds(config, tokenizer);
  ASSERT_TRUE(ids) << ids.error().ToString();
  EXPECT_EQ(*ids, (std::vector<int32_t>{2, 290, 1}));
  config.eos_token_ids = {300};
  auto outside = StopIds(config, tokenizer);
  ASSERT_FALSE(outside);
  EXPECT_EQ(outside.error().message, "eos_token_id 300 is outside the model's vocabulary of 300");
}

}  // namespace
}  // namespace inferno
