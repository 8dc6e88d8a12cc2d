// The reconcile decision, a pure function of what the API server and the members report
// (design §5): create, add one member, leave one member, replace one member, or wait. The
// step in progress is recorded in the KeepCluster's status (`status.operation`), so a restarted
// operator resumes it; no decision depends on the operator's memory.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "operator/cluster_spec.h"
#include "operator/member_list.h"

namespace keep::op {

// One member as observed: its pod (from the API server) and its own report (GET /v1/cluster).
struct MemberObservation {
  std::string name;
  bool pod_exists = false;
  bool pod_deleting = false;
  std::string pod_ip;
  bool pod_ready = false;
  bool running = false;
  std::string revision;  // the pod's controller-revision-hash
  int restart_count = 0;
  int exit_code_now = -1;   // state.terminated.exitCode, -1 when not terminated
  int last_exit_code = -1;  // lastState.terminated.exitCode, -1 when none
  bool answered = false;    // the admin endpoint answered /v1/cluster
  std::string phase;        // joining | serving | leaving | left | fenced
  int slots = 0;
  int64_t epoch = 0;
  std::string incarnation;
  bool handoff_in_flight = false;
  std::vector<std::string> known_members;  // ids in the member's own list
};

struct Operation {
  std::string type;  // Join | Leave | Replace; empty: none
  std::string member;
  int64_t started_unix = 0;
  int restart_count = 0;  // the member's restartCount when the step started
  bool empty() const { return type.empty(); }
  Json ToJson() const;
  static Operation FromJson(const Json& j);
};

struct Observation {
  ClusterSpec spec;
  std::optional<MemberList> list;  // from the ConfigMap; nullopt before creation
  bool statefulset_exists = false;
  std::string update_revision;
  std::map<std::string, MemberObservation> members;  // by pod name
  Operation operation;
  int64_t now_unix = 0;
};

enum class Step {
  kCreate,        // write the initial list and every object
  kSteady,        // nothing to change
  kAddMember,     // list += NAME-n, tell the members, grow the StatefulSet
  kWaitJoin,      // the new member is pulling its slots
  kStartLeave,    // POST /v1/leave to the member (again, if it is not leaving)
  kWaitLeave,     // the member is handing its slots over
  kRemoveMember,  // the member has left: list -= it, tell the others, shrink
  kDeletePod,     // Replace: the member has left, delete its pod (it comes back new)
  kWaitReplace,   // Replace: waiting for the new pod to join
};

struct Plan {
  Step step = Step::kSteady;
  MemberList list;             // the list to write (replicas = its size)
  Operation operation;         // the operation to record (empty clears it)
  std::string member;          // the member the step acts on
  bool leave_overdue = false;  // a leave or join is past spec.leave_timeout_seconds
  std::string message;         // what is happening, for status and events
  // Why the spec's change is not carried out (empty when it is): a scale-down below a majority
  // of the current list in one change, which would leave the cluster without the members that
  // vouch for its views while it shrinks.
  std::string refused;
};

Plan PlanStep(const Observation& obs);
bool MemberLeft(const MemberObservation& m, const Operation& op);
const char* StepName(Step step);

}  // namespace keep::op
