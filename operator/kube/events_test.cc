#include "operator/kube/events.h"

#include <gtest/gtest.h>

namespace keep::kube {
namespace {

TEST(EventRecorder, BuildsAnEventsV1Object) {
  EventRecorder rec(nullptr, "keep.dev/keep-operator", "op-1");
  nlohmann::json kc = {
      {"apiVersion", "keep.dev/v1alpha1"},
      {"kind", "KeepCluster"},
      {"metadata", {{"name", "c"}, {"namespace", "ns"}, {"uid", "u1"}, {"resourceVersion", "9"}}}};
  auto e1 = rec.Build(kc, "Normal", "MemberAdded", "ScaleUp", "adding member c-3");
  auto e2 = rec.Build(kc, "Normal", "MemberAdded", "ScaleUp", "again");
  EXPECT_EQ(e1["apiVersion"], "events.k8s.io/v1");
  EXPECT_EQ(e1["metadata"]["namespace"], "ns");
  EXPECT_NE(e1["metadata"]["name"], e2["metadata"]["name"]);
  EXPECT_EQ(e1["metadata"]["name"].get<std::string>().rfind("c.", 0), 0u);
  EXPECT_EQ(e1["regarding"]["kind"], "KeepCluster");
  EXPECT_EQ(e1["regarding"]["uid"], "u1");
  EXPECT_EQ(e1["reason"], "MemberAdded");
  EXPECT_EQ(e1["action"], "ScaleUp");
  EXPECT_EQ(e1["note"], "adding member c-3");
  EXPECT_EQ(e1["reportingController"], "keep.dev/keep-operator");
  EXPECT_EQ(e1["reportingInstance"], "op-1");
  std::string t = e1["eventTime"];
  EXPECT_EQ(t.size(), 27u);  // 2026-01-02T03:04:05.123456Z (MicroTime)
  EXPECT_EQ(t.back(), 'Z');
}

}  // namespace
}  // namespace keep::kube
