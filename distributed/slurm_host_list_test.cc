#include "distributed/slurm_host_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace inferno {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SlurmHostList, PlainNamesInOrder) {
  Result<std::vector<std::string>> hosts = ExpandSlurmHostList("beta,alpha");
  ASSERT_TRUE(hosts) << hosts.error().ToString();
  EXPECT_THAT(*hosts, ElementsAre("beta", "alpha"));
}

TEST(SlurmHostList, RangesKeepTheLowerBoundsPadding) {
  Result<std::vector<std::string>> hosts = ExpandSlurmHostList("node[08-11,3],gpu-a");
  ASSERT_TRUE(hosts) << hosts.error().ToString();
  EXPECT_THAT(*hosts, ElementsAre("node08", "node09", "node10", "node11", "node3", "gpu-a"));
}

TEST(SlurmHostList, SeveralGroupsExpandToTheirProductLeftmostSlowest) {
  Result<std::vector<std::string>> hosts = ExpandSlurmHostList("r[1-2]n[5,6]-ib,x");
  ASSERT_TRUE(hosts) << hosts.error().ToString();
  EXPECT_THAT(*hosts, ElementsAre("r1n5-ib", "r1n6-ib", "r2n5-ib", "r2n6-ib", "x"));
}

TEST(SlurmHostList, MalformedListsAreRefusedSayingWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "empty host name"},          {"a,,b", "empty host name"},   {"node[01-03", "not closed"},
      {"node[1[2]]", "not closed"},     {"node]1", "without '['"},     {"node[3-1]", "ends below its start"},
      {"node[a-b]", "is not a number"}, {"node[]", "is not a number"}, {"node[1-2-3]", "is not a number"},
  };
  for (const auto& [list, reason] : cases) {
    Result<std::vector<std::string>> hosts = ExpandSlurmHostList(list);
    ASSERT_FALSE(hosts) << list;
    EXPECT_EQ(hosts.error().kind, ErrorKind::kInvalidArgument) << list;
    EXPECT_THAT(hosts.error().message, HasSubstr(reason)) << list;
    EXPECT_THAT(hosts.error().message, HasSubstr(std::string("'") + list + "'")) << list;
  }
}

TEST(SlurmHostList, MoreHostsThanTheLimitIsAnErrorNotAnAllocation) {
  Result<std::vector<std::string>> hosts = ExpandSlurmHostList("n[0-999999999]", 100);
  ASSERT_FALSE(hosts);
  EXPECT_THAT(hosts.error().message, HasSubstr("more than 100 hosts"));
  Result<std::vector<std::string>> product = ExpandSlurmHostList("a[0-9]b[0-9]c[0-9]", 100);
  ASSERT_FALSE(product);
  EXPECT_THAT(product.error().message, HasSubstr("more than 100 hosts"));
  EXPECT_TRUE(ExpandSlurmHostList("a[0-9]b[0-9]", 100));
}

}  // namespace
}  // namespace inferno
