#include "operator/plan.h"

#include <algorithm>
#include <ctime>

namespace keep::op {

Json Operation::ToJson() const {
  if (empty()) return nullptr;
  return {{"type", type},
          {"member", member},
          {"startedAt", started_unix},
          {"restartCount", restart_count}};
}

Operation Operation::FromJson(const Json& j) {
  Operation op;
  if (!j.is_object()) return op;
  op.type = j.value("type", "");
  op.member = j.value("member", "");
  if (j.contains("startedAt") && j["startedAt"].is_number_integer()) {
    op.started_unix = j["startedAt"].get<int64_t>();
  } else if (j.contains("startedAt") && j["startedAt"].is_string()) {
    tm t{};
    std::string ts = j["startedAt"].get<std::string>();
    if (strptime(ts.c_str(), "%Y-%m-%dT%H:%M:%SZ", &t) != nullptr) op.started_unix = timegm(&t);
  }
  op.restart_count = j.value("restartCount", 0);
  return op;
}

const char* StepName(Step step) {
  switch (step) {
    case Step::kCreate:
      return "Create";
    case Step::kSteady:
      return "Steady";
    case Step::kAddMember:
      return "AddMember";
    case Step::kWaitJoin:
      return "WaitJoin";
    case Step::kStartLeave:
      return "StartLeave";
    case Step::kWaitLeave:
      return "WaitLeave";
    case Step::kRemoveMember:
      return "RemoveMember";
    case Step::kDeletePod:
      return "DeletePod";
    case Step::kWaitReplace:
      return "WaitReplace";
  }
  return "?";
}

// A member has left when it says so, or when its process exited cleanly (it exits after
// `left`) since the step began: the exit may be all we see if it was quick.
bool MemberLeft(const MemberObservation& m, const Operation& op) {
  if (m.answered && m.phase == "left") return true;
  if (m.exit_code_now == 0) return true;
  return m.restart_count > op.restart_count && m.last_exit_code == 0;
}

namespace {

bool Joined(const MemberObservation& m) {
  return m.pod_ready && m.answered && m.phase == "serving" && m.slots > 0;
}

const MemberObservation* Find(const Observation& obs, const std::string& name) {
  auto it = obs.members.find(name);
  return it == obs.members.end() ? nullptr : &it->second;
}

bool Overdue(const Observation& obs) {
  return obs.now_unix - obs.operation.started_unix > obs.spec.leave_timeout_seconds;
}

Operation Start(const Observation& obs, const std::string& type, const std::string& member) {
  Operation op;
  op.type = type;
  op.member = member;
  op.started_unix = obs.now_unix;
  if (const auto* m = Find(obs, member)) op.restart_count = m->restart_count;
  return op;
}

}  // namespace

Plan PlanStep(const Observation& obs) {
  Plan plan;
  const ClusterSpec& spec = obs.spec;
  if (!obs.list) {
    plan.step = Step::kCreate;
    plan.list = MemberList::Initial(spec);
    plan.message = "creating " + std::to_string(spec.members) + " members";
    return plan;
  }
  plan.list = *obs.list;
  plan.operation = obs.operation;
  const Operation& op = obs.operation;
  const int n = static_cast<int>(plan.list.members.size());

  if (!op.empty()) {
    plan.member = op.member;
    const MemberObservation* m = Find(obs, op.member);
    MemberObservation none;
    if (m == nullptr) m = &none;
    if (op.type == "Join") {
      if (Joined(*m)) {
        plan.operation = Operation{};
        plan.step = Step::kSteady;
        plan.message = op.member + " joined with " + std::to_string(m->slots) + " slots";
      } else {
        plan.step = Step::kWaitJoin;
        plan.leave_overdue = Overdue(obs);
        plan.message =
            op.member + " is joining (" +
            (m->answered ? "phase " + m->phase + ", " + std::to_string(m->slots) + " slots"
                         : std::string("not answering yet")) +
            ")";
      }
      return plan;
    }
    if (op.type == "Leave") {
      if (MemberLeft(*m, op) || !m->pod_exists) {
        // Never shrink before `left`: a missing pod here means it was already removed.
        int idx = plan.list.IndexOf(op.member);
        if (idx >= 0) {
          plan.list.members.erase(plan.list.members.begin() + idx);
          ++plan.list.version;
        }
        plan.operation = Operation{};
        plan.step = Step::kRemoveMember;
        plan.message = op.member + " left; removing it from the member list";
        return plan;
      }
      plan.leave_overdue = Overdue(obs);
      bool leaving = m->answered && m->phase == "leaving";
      plan.step = leaving ? Step::kWaitLeave : Step::kStartLeave;
      plan.message = op.member + (leaving ? " is handing its slots over" : " asked to leave");
      if (plan.leave_overdue) plan.message += " (past the leave timeout)";
      return plan;
    }
    if (op.type == "Replace") {
      bool new_pod = m->pod_exists && !m->pod_deleting && m->revision == obs.update_revision;
      if (new_pod) {
        if (Joined(*m)) {
          plan.operation = Operation{};
          plan.step = Step::kSteady;
          plan.message = op.member + " replaced and rejoined";
        } else {
          plan.step = Step::kWaitReplace;
          plan.leave_overdue = Overdue(obs);
          plan.message = op.member + " restarted with the new template, rejoining";
        }
        return plan;
      }
      if (!m->pod_exists || m->pod_deleting) {
        plan.step = Step::kWaitReplace;
        plan.message = op.member + " pod is being recreated";
        return plan;
      }
      if (MemberLeft(*m, op)) {
        plan.step = Step::kDeletePod;
        plan.message = op.member + " left; deleting its pod to restart it with the new template";
        return plan;
      }
      plan.leave_overdue = Overdue(obs);
      bool leaving = m->answered && m->phase == "leaving";
      plan.step = leaving ? Step::kWaitLeave : Step::kStartLeave;
      plan.message = op.member + (leaving ? " is handing its slots over before its restart"
                                          : " asked to leave for its restart");
      return plan;
    }
    plan.operation = Operation{};  // unknown: drop it and decide afresh
  }

  bool all_ready = n > 0;
  for (const auto& member : plan.list.members) {
    const MemberObservation* m = Find(obs, member.id);
    if (m == nullptr || !m->pod_ready) all_ready = false;
  }
  if (n < spec.members) {
    if (!all_ready) {
      plan.message = "waiting for every member to be ready before adding one";
      return plan;
    }
    Member added = MemberList::ForOrdinal(spec, n);
    plan.list.members.push_back(added);
    ++plan.list.version;
    plan.step = Step::kAddMember;
    plan.member = added.id;
    plan.operation = Start(obs, "Join", added.id);
    plan.message = "adding member " + added.id;
    return plan;
  }
  if (n > spec.members) {
    // Removing a single member is always one clean leave; more than that in one change must
    // keep a majority of the current list.
    const int majority = n / 2 + 1;
    if (n - spec.members >= 2 && spec.members < majority) {
      plan.refused = "members " + std::to_string(spec.members) + " is below a majority (" +
                     std::to_string(majority) + ") of the current " + std::to_string(n) +
                     " members: scale down to at least " + std::to_string(majority) +
                     " first, then further";
      plan.message = "scale-down refused: " + plan.refused;
      return plan;
    }
    const std::string& last = plan.list.members.back().id;
    plan.step = Step::kStartLeave;
    plan.member = last;
    plan.operation = Start(obs, "Leave", last);
    plan.message = "removing member " + last + ": asked to leave";
    return plan;
  }
  if (spec.update_type == "LeaveRejoin" && all_ready && !obs.update_revision.empty()) {
    for (int i = n - 1; i >= 0; --i) {
      const MemberObservation* m = Find(obs, plan.list.members[i].id);
      if (m != nullptr && m->pod_exists && !m->revision.empty() &&
          m->revision != obs.update_revision) {
        plan.step = Step::kStartLeave;
        plan.member = m->name;
        plan.operation = Start(obs, "Replace", m->name);
        plan.message = "replacing " + m->name + " with the new template: asked to leave";
        return plan;
      }
    }
  }
  plan.message = all_ready ? "all members ready" : "waiting for members to be ready";
  return plan;
}

}  // namespace keep::op
