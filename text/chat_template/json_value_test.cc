#include "text/chat_template/json_value.h"

#include <gtest/gtest.h>

namespace inferno::chat {
namespace {

TEST(ValueFromJson, KeepsKindsAndKeyOrder) {
  Result<Value> value =
      ValueFromJson(nlohmann::ordered_json::parse(R"({"z": [1, "a", null, true], "a": {"y": -2}})"));
  ASSERT_TRUE(value) << value.error().message;
  const ValueDict& dict = value->as_dict();
  ASSERT_EQ(dict.size(), 2u);
  EXPECT_EQ(dict[0].first, "z");
  EXPECT_EQ(dict[1].first, "a");
  const ValueList& list = dict[0].second.as_list();
  EXPECT_EQ(list[0].as_int(), 1);
  EXPECT_EQ(list[1].as_string(), "a");
  EXPECT_EQ(list[2].kind(), Value::Kind::kNone);
  EXPECT_TRUE(list[3].as_bool());
  EXPECT_EQ(dict[1].second.Get("y").as_int(), -2);
}

TEST(ValueFromJson, AFractionIsRefusedNamingWhere) {
  Result<Value> value = ValueFromJson(nlohmann::ordered_json::parse(R"({"p": {"x": [0, 0.5]}})"));
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(value.error().message.find("0.5 at /p/x/1"), std::string::npos) << value.error().message;
  EXPECT_FALSE(ValueFromJson(nlohmann::ordered_json::parse("18446744073709551615")));
}

}  // namespace
}  // namespace inferno::chat
