#include "operator/plan.h"

#include <gtest/gtest.h>

namespace keep::op {
namespace {

class PlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    obs.spec.name = "c";
    obs.spec.ns = "ns";
    obs.spec.members = 3;
    obs.spec.leave_timeout_seconds = 300;
    obs.now_unix = 1000;
    obs.update_revision = "rev1";
  }
  // A settled cluster of `n` members, all serving.
  void Settled(int n) {
    ClusterSpec sized = obs.spec;
    sized.members = n;
    obs.list = MemberList::Initial(sized);
    obs.members.clear();
    for (int i = 0; i < n; ++i) obs.members[obs.spec.PodName(i)] = Serving(obs.spec.PodName(i));
  }
  MemberObservation Serving(const std::string& name) {
    MemberObservation m;
    m.name = name;
    m.pod_exists = m.pod_ready = m.running = m.answered = true;
    m.pod_ip = "127.0.0.2";
    m.phase = "serving";
    m.slots = 5000;
    m.revision = "rev1";
    return m;
  }
  Observation obs;
};

TEST_F(PlanTest, CreatesTheWholeListAtOnce) {
  Plan p = PlanStep(obs);
  EXPECT_EQ(p.step, Step::kCreate);
  EXPECT_EQ(p.list.members.size(), 3u);
  EXPECT_EQ(p.list.version, 1);
}

TEST_F(PlanTest, SteadyWhenEverythingMatches) {
  Settled(3);
  Plan p = PlanStep(obs);
  EXPECT_EQ(p.step, Step::kSteady);
  EXPECT_TRUE(p.operation.empty());
}

TEST_F(PlanTest, ScaleUpAddsOneMemberThenWaitsForItsSlots) {
  Settled(3);
  obs.spec.members = 5;
  Plan p = PlanStep(obs);
  EXPECT_EQ(p.step, Step::kAddMember);
  EXPECT_EQ(p.member, "c-3");
  EXPECT_EQ(p.list.members.size(), 4u);
  EXPECT_EQ(p.list.version, 2);
  EXPECT_EQ(p.operation.type, "Join");
  // Resumed from the recorded operation (e.g. after an operator restart).
  obs.list = p.list;
  obs.operation = p.operation;
  MemberObservation joining = Serving("c-3");
  joining.phase = "joining";
  joining.slots = 0;
  joining.pod_ready = false;
  obs.members["c-3"] = joining;
  p = PlanStep(obs);
  EXPECT_EQ(p.step, Step::kWaitJoin);
  EXPECT_EQ(p.list.members.size(), 4u);  // no second member while one is joining
  obs.members["c-3"] = Serving("c-3");
  p = PlanStep(obs);
  EXPECT_EQ(p.step, Step::kSteady);
  EXPECT_TRUE(p.operation.empty());
  obs.operation = p.operation;
  EXPECT_EQ(PlanStep(obs).member, "c-4");
}

TEST_F(PlanTest, ScaleUpWaitsForReadyMembers) {
  Settled(3);
  obs.spec.members = 4;
  obs.members["c-1"].pod_ready = false;
  EXPECT_EQ(PlanStep(obs).step, Step::kSteady);
}

TEST_F(PlanTest, ScaleDownNeverShrinksBeforeLeft) {
  Settled(5);
  obs.spec.members = 3;
  Plan p = PlanStep(obs);
  EXPECT_EQ(p.step, Step::kStartLeave);
  EXPECT_EQ(p.member, "c-4");
  EXPECT_EQ(p.list.members.size(), 5u);
  obs.operation = p.operation;
  // Not leaving yet (the POST was lost): ask again.
  EXPECT_EQ(PlanStep(obs).step, Step::kStartLeave);
  obs.members["c-4"].phase = "leaving";
  p = PlanStep(obs);
  EXPECT_EQ(p.step, Step::kWaitLeave);
  EXPECT_EQ(p.list.members.size(), 5u);
  EXPECT_FALSE(p.leave_overdue);
  // Past the timeout: visible, still never shrinks.
  obs.now_unix += 301;
  p = PlanStep(obs);
  EXPECT_EQ(p.step, Step::kWaitLeave);
  EXPECT_TRUE(p.leave_overdue);
  EXPECT_EQ(p.list.members.size(), 5u);
  obs.members["c-4"].phase = "left";
  p = PlanStep(obs);
  EXPECT_EQ(p.step, Step::kRemoveMember);
  EXPECT_EQ(p.list.members.size(), 4u);
  EXPECT_EQ(p.list.IndexOf("c-4"), -1);
  EXPECT_EQ(p.list.version, 2);
  EXPECT_TRUE(p.operation.empty());
}

TEST_F(PlanTest, ScaleDownBelowAMajorityInOneChangeIsRefused) {
  Settled(5);
  obs.spec.members = 2;  // a majority of 5 is 3
  Plan p = PlanStep(obs);
  EXPECT_EQ(p.step, Step::kSteady);
  EXPECT_TRUE(p.operation.empty());
  EXPECT_EQ(p.list.members.size(), 5u);
  EXPECT_NE(p.refused.find("below a majority (3) of the current 5"), std::string::npos)
      << p.refused;
  // In steps it goes: 5 -> 3 starts a leave, and from 3, 2 is a majority again.
  obs.spec.members = 3;
  EXPECT_EQ(PlanStep(obs).step, Step::kStartLeave);
  EXPECT_TRUE(PlanStep(obs).refused.empty());
  Settled(3);
  obs.spec.members = 1;  // two of three at once: refused
  EXPECT_FALSE(PlanStep(obs).refused.empty());
  obs.spec.members = 2;
  p = PlanStep(obs);
  EXPECT_EQ(p.step, Step::kStartLeave);
  EXPECT_TRUE(p.refused.empty());
  Settled(2);
  obs.spec.members = 1;  // one member at a time is always allowed
  EXPECT_EQ(PlanStep(obs).step, Step::kStartLeave);
}

TEST_F(PlanTest, ACleanExitAfterTheLeaveCountsAsLeft) {
  Settled(4);
  obs.spec.members = 3;
  obs.members["c-3"].restart_count = 2;
  Plan p = PlanStep(obs);
  obs.operation = p.operation;
  EXPECT_EQ(obs.operation.restart_count, 2);
  // The process exited 0 and was restarted before we looked.
  MemberObservation& m = obs.members["c-3"];
  m.restart_count = 3;
  m.last_exit_code = 0;
  m.phase = "joining";
  EXPECT_EQ(PlanStep(obs).step, Step::kRemoveMember);
  // A crash (exit 1) is not a leave.
  m.last_exit_code = 137;
  EXPECT_EQ(PlanStep(obs).step, Step::kStartLeave);
  // Terminated 0 right now.
  m.exit_code_now = 0;
  EXPECT_EQ(PlanStep(obs).step, Step::kRemoveMember);
}

TEST_F(PlanTest, NoAdminAnswerMeansWaitingNotShrinking) {
  Settled(4);
  obs.spec.members = 3;
  for (auto& [name, m] : obs.members) m.answered = false;
  Plan p = PlanStep(obs);
  obs.operation = p.operation;
  for (int i = 0; i < 3; ++i) {
    p = PlanStep(obs);
    EXPECT_EQ(p.step, Step::kStartLeave);
    EXPECT_EQ(p.list.members.size(), 4u);
  }
}

TEST_F(PlanTest, RollingUpdateLeavesDeletesAndRejoinsOneAtATime) {
  Settled(3);
  obs.update_revision = "rev2";
  Plan p = PlanStep(obs);
  EXPECT_EQ(p.step, Step::kStartLeave);
  EXPECT_EQ(p.member, "c-2");
  EXPECT_EQ(p.operation.type, "Replace");
  obs.operation = p.operation;
  obs.members["c-2"].phase = "left";
  p = PlanStep(obs);
  EXPECT_EQ(p.step, Step::kDeletePod);
  EXPECT_EQ(p.list.members.size(), 3u);  // a replaced member stays in the list
  obs.members["c-2"].pod_deleting = true;
  EXPECT_EQ(PlanStep(obs).step, Step::kWaitReplace);
  MemberObservation fresh = Serving("c-2");
  fresh.revision = "rev2";
  fresh.phase = "joining";
  fresh.pod_ready = false;
  obs.members["c-2"] = fresh;
  EXPECT_EQ(PlanStep(obs).step, Step::kWaitReplace);
  obs.members["c-2"] = Serving("c-2");
  obs.members["c-2"].revision = "rev2";
  p = PlanStep(obs);
  EXPECT_EQ(p.step, Step::kSteady);
  EXPECT_TRUE(p.operation.empty());
  obs.operation = p.operation;
  EXPECT_EQ(PlanStep(obs).member, "c-1");
}

TEST_F(PlanTest, ManualUpdateStrategyLeavesPodsAlone) {
  Settled(3);
  obs.spec.update_type = "Manual";
  obs.update_revision = "rev2";
  EXPECT_EQ(PlanStep(obs).step, Step::kSteady);
}

TEST(Operation, ReadsTheStatusForm) {
  Operation op = Operation::FromJson(Json::parse(
      R"({"type":"Leave","member":"c-4","startedAt":"2026-12-02T10:00:00Z","restartCount":3})"));
  EXPECT_EQ(op.type, "Leave");
  EXPECT_EQ(op.member, "c-4");
  EXPECT_EQ(op.started_unix, 1796205600);
  EXPECT_EQ(op.restart_count, 3);
  EXPECT_TRUE(Operation::FromJson(Json()).empty());
}

}  // namespace
}  // namespace keep::op
