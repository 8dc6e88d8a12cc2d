#include "operator/reconciler.h"

#include <gtest/gtest.h>

namespace keep::op {
namespace {

Json Cond(const Json& status, const std::string& type) {
  for (const auto& c : status["conditions"]) {
    if (c["type"] == type) return c;
  }
  return Json();
}

class StatusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    obs.spec.name = "c";
    obs.spec.ns = "ns";
    obs.spec.members = 2;
    obs.spec.generation = 7;
    obs.list = MemberList::Initial(obs.spec);
    for (const char* name : {"c-0", "c-1"}) {
      MemberObservation m;
      m.name = name;
      m.pod_exists = m.running = m.pod_ready = m.answered = true;
      m.pod_ip = "127.0.0.9";
      m.phase = "serving";
      m.slots = 8192;
      obs.members[name] = m;
    }
  }
  Observation obs;
};

TEST_F(StatusTest, ReadyClusterReportsMembersSlotsAndConditions) {
  Plan plan = PlanStep(obs);
  Json st = Reconciler::BuildStatus(obs, plan, Json::object(), "", "T1");
  EXPECT_EQ(st["phase"], "Ready");
  EXPECT_EQ(st["observedGeneration"], 7);
  EXPECT_EQ(st["members"], 2);
  EXPECT_EQ(st["readyMembers"], 2);
  EXPECT_EQ(st["memberListVersion"], 1);
  EXPECT_EQ(st["selector"], "app.kubernetes.io/name=keep,keep.dev/cluster=c");
  EXPECT_EQ(st["memberStatuses"][1]["state"], "serving");
  EXPECT_EQ(st["memberStatuses"][1]["slots"], 8192);
  EXPECT_EQ(Cond(st, "Ready")["status"], "True");
  EXPECT_EQ(Cond(st, "Progressing")["status"], "False");
  EXPECT_EQ(Cond(st, "Degraded")["status"], "False");
  EXPECT_EQ(Cond(st, "HandoffInProgress")["status"], "False");
  EXPECT_EQ(Cond(st, "Ready")["observedGeneration"], 7);
  EXPECT_FALSE(st.contains("operation"));
  // Unchanged conditions keep their transition time; changed ones take the new one.
  obs.members["c-1"].phase = "leaving";
  obs.members["c-1"].pod_ready = false;
  obs.spec.members = 1;
  plan = PlanStep(obs);
  Json next = Reconciler::BuildStatus(obs, plan, st, "", "T2");
  EXPECT_EQ(next["phase"], "Scaling");
  EXPECT_EQ(next["operation"]["type"], "Leave");
  EXPECT_EQ(next["operation"]["member"], "c-1");
  EXPECT_EQ(Cond(next, "Ready")["lastTransitionTime"], "T2");
  EXPECT_EQ(Cond(next, "Degraded")["lastTransitionTime"], "T1");
  EXPECT_EQ(Cond(next, "HandoffInProgress")["status"], "True");
}

TEST_F(StatusTest, UnansweredMembersAndFailures) {
  for (auto& [name, m] : obs.members) {
    m.answered = false;
    m.pod_ready = false;
  }
  Plan plan = PlanStep(obs);
  Json st = Reconciler::BuildStatus(obs, plan, Json::object(), "", "T");
  EXPECT_EQ(st["phase"], "Creating");
  EXPECT_EQ(st["memberStatuses"][0]["state"], "Unreachable");
  EXPECT_FALSE(st["memberStatuses"][0].contains("slots"));
  EXPECT_EQ(Cond(st, "Ready")["status"], "False");
  EXPECT_EQ(Cond(st, "Progressing")["status"], "True");
  // Once it has been Ready, losing members is Degraded, not Creating.
  Json was_ready = {{"phase", "Ready"}};
  EXPECT_EQ(Reconciler::BuildStatus(obs, plan, was_ready, "", "T")["phase"], "Degraded");
  Json failed = Reconciler::BuildStatus(obs, plan, Json::object(), "Secret x not found", "T");
  EXPECT_EQ(failed["phase"], "Degraded");
  EXPECT_EQ(Cond(failed, "Degraded")["message"], "Secret x not found");
  obs.members["c-0"].answered = true;
  obs.members["c-0"].phase = "fenced";
  EXPECT_EQ(Cond(Reconciler::BuildStatus(obs, plan, Json::object(), "", "T"), "Degraded")["reason"],
            "MemberFenced");
}

TEST(ObjectPath, FromKindAndApiVersion) {
  Json sts = {{"apiVersion", "apps/v1"},
              {"kind", "StatefulSet"},
              {"metadata", {{"name", "c"}, {"namespace", "ns"}}}};
  EXPECT_EQ(ObjectPath(sts), "/apis/apps/v1/namespaces/ns/statefulsets/c");
  Json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "c-config"}, {"namespace", "ns"}}}};
  EXPECT_EQ(ObjectPath(cm), "/api/v1/namespaces/ns/configmaps/c-config");
}

}  // namespace
}  // namespace keep::op
