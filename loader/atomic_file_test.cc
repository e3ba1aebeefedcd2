#include "loader/atomic_file.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace inferno {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string TempPath(const std::string& name) { return std::string(std::getenv("TEST_TMPDIR")) + "/" + name; }

TEST(AtomicFile, FinalNameAppearsOnlyAfterCommit) {
  const std::string path = TempPath("a.bin");
  Result<AtomicFile> file = AtomicFile::Create(path);
  ASSERT_TRUE(file) << file.error().message;
  ASSERT_TRUE(file->Write(std::string("hello")));
  EXPECT_FALSE(Exists(path));
  EXPECT_TRUE(Exists(path + ".partial"));
  ASSERT_TRUE(file->Commit());
  EXPECT_FALSE(Exists(path + ".partial"));
  std::ifstream in(path);
  std::stringstream contents;
  contents << in.rdbuf();
  EXPECT_EQ(contents.str(), "hello");
}

TEST(AtomicFile, AbandonedFileLeavesNothingBehind) {
  const std::string path = TempPath("b.bin");
  {
    Result<AtomicFile> file = AtomicFile::Create(path);
    ASSERT_TRUE(file);
    ASSERT_TRUE(file->Write(std::string("half")));
  }
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(Exists(path + ".partial"));
}

TEST(AtomicFile, UncreatableDirectoryIsAnErrorNamingThePath) {
  Result<AtomicFile> file = AtomicFile::Create(TempPath("no/such/dir/c.bin"));
  ASSERT_FALSE(file);
  EXPECT_NE(file.error().message.find("no/such/dir/c.bin.partial"), std::string::npos);
}

}  // namespace
}  // namespace inferno
