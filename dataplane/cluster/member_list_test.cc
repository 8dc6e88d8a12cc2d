#include "dataplane/cluster/member_list.h"

#include <gtest/gtest.h>

namespace keep::cluster {
namespace {

TEST(MemberList, ParsesInline) {
  MemberList list;
  ASSERT_EQ(ParseInlineMembers("a@127.0.0.1:7000:7001:2, b@host-b:7000:7001:4:7100", &list), "");
  ASSERT_EQ(list.members.size(), 2u);
  EXPECT_EQ(list.members[0].id, "a");
  EXPECT_EQ(list.members[0].shards, 2);
  EXPECT_EQ(list.members[0].shard_port_base, 0);
  EXPECT_EQ(list.members[1].host, "host-b");
  EXPECT_EQ(list.members[1].shard_port_base, 7100);
  EXPECT_EQ(list.members[1].PortForSlot(5), 7101);
  EXPECT_EQ(list.members[0].PortForSlot(5), 7000);
  EXPECT_EQ(ValidateMembers(list, "a"), "");
}

TEST(MemberList, RefusesBadInline) {
  MemberList list;
  EXPECT_NE(ParseInlineMembers("", &list), "");
  EXPECT_NE(ParseInlineMembers("a@h:1:2", &list), "");
  EXPECT_NE(ParseInlineMembers("a@h:1:2:1,,b@h:3:4:1", &list), "");
  EXPECT_NE(ParseInlineMembers("noat:1:2:3", &list), "");
  EXPECT_NE(ParseInlineMembers("a@h:x:2:1", &list), "");
  EXPECT_NE(ParseInlineMembers("a@h:70000:2:1", &list), "");
  EXPECT_NE(ParseInlineMembers("a@h:1:1:1", &list), "");
  EXPECT_NE(ParseInlineMembers("a@h:1:2:0", &list), "");
  EXPECT_NE(ParseInlineMembers("a b@h:1:2:1", &list), "");
  EXPECT_NE(ParseInlineMembers(std::string(100, 'x') + "@h:1:2:1", &list), "");
}

TEST(MemberList, ParsesJson) {
  MemberList list;
  ASSERT_EQ(ParseMembersJson(R"({"version": 3, "members": [
      {"id": "keep-0", "host": "127.0.0.1", "client_port": 7000, "peer_port": 7001, "shards": 2},
      {"id": "keep-1", "host": "127.0.0.2", "client_port": 7000, "peer_port": 7001}]})",
                             &list),
            "");
  EXPECT_EQ(list.version, 3u);
  ASSERT_EQ(list.members.size(), 2u);
  EXPECT_EQ(list.members[1].shards, 1);
  MemberList round;
  ASSERT_EQ(ParseMembersJson(MembersToJson(list), &round), "");
  EXPECT_EQ(round.members.size(), 2u);
  EXPECT_TRUE(round.members[0].SameEndpoints(list.members[0]));
}

TEST(MemberList, RefusesBadJson) {
  MemberList list;
  EXPECT_NE(ParseMembersJson("{", &list), "");
  EXPECT_NE(ParseMembersJson("[]", &list), "");
  EXPECT_NE(ParseMembersJson(R"({"members": 1})", &list), "");
  EXPECT_NE(ParseMembersJson(R"({"version": -1, "members": []})", &list), "");
  EXPECT_NE(ParseMembersJson(R"({"members": [{"id": "a"}]})", &list), "");
  EXPECT_NE(
      ParseMembersJson(
          R"({"members": [{"id": "a", "host": "h", "client_port": 1, "peer_port": 2, "x": 1}]})",
          &list),
      "");
  EXPECT_NE(ParseMembersJson(R"({"members": [], "extra": true})", &list), "");
  EXPECT_NE(ParseMembersJson(std::string("\x00\xff garbage", 10), &list), "");
}

TEST(MemberList, Validates) {
  MemberList list;
  EXPECT_NE(ValidateMembers(list, ""), "");  // empty
  ASSERT_EQ(ParseInlineMembers("a@h:1:2:1,a@h2:1:2:1", &list), "");
  EXPECT_NE(ValidateMembers(list, "a").find("appears twice"), std::string::npos);
  ASSERT_EQ(ParseInlineMembers("a@h:1:2:1,b@h:3:2:1", &list), "");
  EXPECT_NE(ValidateMembers(list, "a").find("used twice"), std::string::npos);
  ASSERT_EQ(ParseInlineMembers("a@h:1:2:1,b@h:3:4:1", &list), "");
  EXPECT_EQ(ValidateMembers(list, "a"), "");
  EXPECT_NE(ValidateMembers(list, "c").find("not in the member list"), std::string::npos);
}

TEST(MemberList, AcceptsOneChangeAtATime) {
  MemberList a, b;
  ASSERT_EQ(ParseInlineMembers("a@h:1:2:1,b@h:3:4:1,c@h:5:6:1", &a), "");
  a.version = 2;
  ASSERT_EQ(ParseInlineMembers("a@h:1:2:1,b@h:3:4:1,c@h:5:6:1,d@h:7:8:1", &b), "");
  b.version = 3;
  EXPECT_EQ(CheckOneChange(a, b), "");
  ASSERT_EQ(ParseInlineMembers("a@h:1:2:1,b@h:3:4:1", &b), "");
  b.version = 3;
  EXPECT_EQ(CheckOneChange(a, b), "");
  ASSERT_EQ(ParseInlineMembers("a@h:1:2:1,d@h:7:8:1,c@h:5:6:1", &b), "");  // swap b for d
  b.version = 3;
  EXPECT_NE(CheckOneChange(a, b).find("one member at a time"), std::string::npos);
  ASSERT_EQ(ParseInlineMembers("a@h:1:2:1,b@h:3:4:2,c@h:5:6:1", &b), "");
  b.version = 3;
  EXPECT_NE(CheckOneChange(a, b).find("remove it"), std::string::npos);
  b = a;
  b.version = 1;
  EXPECT_NE(CheckOneChange(a, b).find("older"), std::string::npos);
  b.version = 2;
  EXPECT_EQ(CheckOneChange(a, b), "");
}

}  // namespace
}  // namespace keep::cluster
