#include "operator/member_list.h"

#include <gtest/gtest.h>

namespace keep::op {
namespace {

TEST(MemberList, InitialListUsesStableNamesAndHeadlessDns) {
  ClusterSpec spec;
  spec.name = "c";
  spec.ns = "prod";
  spec.members = 3;
  spec.shards = 2;
  MemberList list = MemberList::Initial(spec);
  EXPECT_EQ(list.version, 1);
  ASSERT_EQ(list.members.size(), 3u);
  EXPECT_EQ(list.members[2].id, "c-2");
  EXPECT_EQ(list.members[2].host, "c-2.c-headless.prod.svc.cluster.local");
  EXPECT_EQ(list.members[2].shards, 2);
  Json j = list.ToJson();
  EXPECT_EQ(j["members"][0],
            Json::parse(R"({"id":"c-0","host":"c-0.c-headless.prod.svc.cluster.local",
                            "client_port":7000,"peer_port":7001,"shards":2})"));
  auto back = MemberList::FromJson(j);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->members, list.members);
  EXPECT_EQ(back->IndexOf("c-1"), 1);
  EXPECT_EQ(back->IndexOf("c-9"), -1);
}

TEST(MemberList, RejectsMalformedJson) {
  EXPECT_FALSE(MemberList::FromJson(Json::parse("[]")));
  EXPECT_FALSE(MemberList::FromJson(Json::parse(R"({"members":[]})")));
  EXPECT_FALSE(MemberList::FromJson(Json::parse(R"({"version":"1","members":[]})")));
  EXPECT_FALSE(MemberList::FromJson(Json::parse(R"({"version":1,"members":[{"host":"x"}]})")));
  EXPECT_TRUE(MemberList::FromJson(Json::parse(R"({"version":1,"members":[]})")));
}

TEST(AdminToken, IsHexHmacSha256OfKeepAdmin) {
  // echo -n keep-admin | openssl dgst -sha256 -hmac secret
  EXPECT_EQ(AdminToken("secret"),
            "17f126e74708dec790bc47b2acb733b44f1163e1f1f9497131d1b531f4ef88c0");
}

TEST(RandomSecret, Is64HexCharsAndDiffers) {
  std::string a = RandomSecret(), b = RandomSecret();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace keep::op
