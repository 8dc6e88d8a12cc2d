#include "operator/reconciler.h"

#include <algorithm>
#include <ctime>
#include <set>

#include "operator/builders.h"
#include "operator/kube/leader_election.h"

namespace keep::op {

using kube::ResourcePath;
using kube::Response;

std::string ObjectPath(const Json& object) {
  static const std::map<std::string, std::string> kPlural = {
      {"Secret", "secrets"},
      {"ConfigMap", "configmaps"},
      {"Service", "services"},
      {"ServiceAccount", "serviceaccounts"},
      {"StatefulSet", "statefulsets"},
      {"DaemonSet", "daemonsets"},
      {"PodDisruptionBudget", "poddisruptionbudgets"},
      {"Role", "roles"},
      {"RoleBinding", "rolebindings"},
      {"ServiceMonitor", "servicemonitors"},
      {"PrometheusRule", "prometheusrules"},
      {"KeepCluster", "keepclusters"}};
  const Json& md = object["metadata"];
  return ResourcePath(object["apiVersion"].get<std::string>(),
                      kPlural.at(object["kind"].get<std::string>()), md.value("namespace", ""),
                      md.value("name", ""));
}

bool Reconciler::ApplyObject(const Json& object, std::string* error) {
  Response r = client_.Apply(ObjectPath(object), object, kFieldManager);
  if (!r.ok()) {
    *error = "apply " + object["kind"].get<std::string>() + " " +
             object["metadata"]["name"].get<std::string>() + ": " + std::to_string(r.status) + " " +
             r.error;
    return false;
  }
  return true;
}

bool Reconciler::DeleteIfPresent(const std::string& path) {
  Response r = client_.Delete(path);
  return r.ok() || r.status == 404;
}

bool Reconciler::MonitoringCrdsPresent() {
  std::lock_guard lock(discovery_mu_);
  auto now = std::chrono::steady_clock::now();
  if (discovery_at_ == std::chrono::steady_clock::time_point{} ||
      now - discovery_at_ > std::chrono::seconds(60)) {
    // Discovery is readable by every authenticated user: no RBAC on CRDs needed.
    Response r = client_.Get("/apis/monitoring.coreos.com/v1");
    if (r.status != 0) {
      monitoring_present_ = false;
      if (r.ok() && r.body.contains("resources")) {
        std::set<std::string> kinds;
        for (const auto& res : r.body["resources"]) kinds.insert(res.value("name", ""));
        monitoring_present_ = kinds.count("servicemonitors") && kinds.count("prometheusrules");
      }
      discovery_at_ = now;
    }
  }
  return monitoring_present_;
}

bool Reconciler::EnsureSecrets(const ClusterSpec& spec, std::string* peer_secret,
                               std::string* error) {
  if (spec.cluster_secret_name.empty() || spec.peer_secret_name.empty()) {
    std::string path = ResourcePath("v1", "secrets", spec.ns, spec.SecretName());
    Response got = client_.Get(path);
    if (got.status == 404) {
      Json secret = BuildSecret(spec, RandomSecret(), RandomSecret());
      Response created = client_.Create(
          ResourcePath("v1", "secrets", spec.ns) + "?fieldManager=" + kFieldManager, secret);
      if (!created.ok() && created.status != 409) {
        *error = "create Secret " + spec.SecretName() + ": " + created.error;
        return false;
      }
      Json regarding = {
          {"apiVersion", kApiVersion},
          {"kind", "KeepCluster"},
          {"metadata", {{"name", spec.name}, {"namespace", spec.ns}, {"uid", spec.uid}}}};
      events_.Emit(regarding, "Normal", "SecretGenerated", "Create",
                   "generated the cluster and peer secrets in Secret " + spec.SecretName());
    } else if (!got.ok()) {
      *error = "get Secret " + spec.SecretName() + ": " + got.error;
      return false;
    }
  }
  auto read_key = [&](const std::string& name, const std::string& key, std::string* out) {
    Response r = client_.Get(ResourcePath("v1", "secrets", spec.ns, name));
    if (!r.ok()) {
      *error = "Secret " + name + (r.status == 404 ? " not found" : ": " + r.error);
      return false;
    }
    const Json data = r.body.value("data", Json::object());
    if (!data.contains(key) || !data[key].is_string()) {
      *error = "Secret " + name + " has no key '" + key + "'";
      return false;
    }
    if (out != nullptr) *out = kube::Base64Decode(data[key].get<std::string>());
    return true;
  };
  return read_key(spec.ClusterSecretName(), "secret", nullptr) &&
         read_key(spec.PeerSecretName(), "peer-secret", peer_secret);
}

Observation Reconciler::Observe(const ClusterSpec& spec, const Json& kc) {
  Observation obs;
  obs.spec = spec;
  obs.now_unix = time(nullptr);
  const Json status = kc.value("status", Json::object());
  obs.operation = Operation::FromJson(status.value("operation", Json()));

  Response cm = client_.Get(ResourcePath("v1", "configmaps", spec.ns, spec.ConfigMapName()));
  if (cm.ok() && cm.body.contains("data") && cm.body["data"].contains("members.json")) {
    obs.list = MemberList::FromJson(
        Json::parse(cm.body["data"]["members.json"].get<std::string>(), nullptr, false));
  }
  Response sts =
      client_.Get(ResourcePath("apps/v1", "statefulsets", spec.ns, spec.StatefulSetName()));
  if (sts.ok()) {
    obs.statefulset_exists = true;
    obs.update_revision = sts.body.value("status", Json::object()).value("updateRevision", "");
  }
  Response pods = client_.Get(ResourcePath("v1", "pods", spec.ns) +
                              "?labelSelector=" + kube::UrlEncode(spec.SelectorString()));
  if (pods.ok()) {
    for (const auto& pod : pods.body.value("items", Json::array())) {
      MemberObservation m;
      const Json& md = pod["metadata"];
      m.name = md.value("name", "");
      m.pod_exists = true;
      m.pod_deleting = md.contains("deletionTimestamp");
      m.revision = md.value("labels", Json::object()).value("controller-revision-hash", "");
      const Json st = pod.value("status", Json::object());
      m.pod_ip = st.value("podIP", "");
      for (const auto& c : st.value("conditions", Json::array())) {
        if (c.value("type", "") == "Ready") m.pod_ready = c.value("status", "") == "True";
      }
      for (const auto& cs : st.value("containerStatuses", Json::array())) {
        if (cs.value("name", "") != "keep") continue;
        m.restart_count = cs.value("restartCount", 0);
        const Json state = cs.value("state", Json::object());
        m.running = state.contains("running");
        if (state.contains("terminated"))
          m.exit_code_now = state["terminated"].value("exitCode", -1);
        const Json last = cs.value("lastState", Json::object());
        if (last.contains("terminated"))
          m.last_exit_code = last["terminated"].value("exitCode", -1);
      }
      if (!m.pod_ip.empty() && m.running) {
        AdminReply reply = admin_.GetCluster(m.pod_ip);
        if (reply.status == 200 && reply.body.is_object()) {
          m.answered = true;
          m.phase = reply.body.value("phase", "");
          m.slots = reply.body.value("slots_owned", 0);
          m.epoch = reply.body.value("epoch", 0);
          const Json inc = reply.body.value("incarnation", Json());
          m.incarnation = inc.is_string() ? inc.get<std::string>() : inc.dump();
          const Json handoff = reply.body.value("handoff", Json::object());
          m.handoff_in_flight = handoff.is_object() && handoff.value("in_flight", 0) > 0;
          for (const auto& mem : reply.body.value("members", Json::array())) {
            if (mem.is_object()) m.known_members.push_back(mem.value("id", ""));
          }
        } else {
          metrics_.member_calls_failed.Increment();
        }
      }
      obs.members[m.name] = m;
    }
  }
  return obs;
}

void Reconciler::SyncMemberLists(const Observation& obs, const Plan& plan,
                                 const std::string& token) {
  std::vector<std::string> ids;
  for (const auto& m : plan.list.members) ids.push_back(m.id);
  std::sort(ids.begin(), ids.end());
  Json body = plan.list.ToJson();
  for (const auto& member : plan.list.members) {
    auto it = obs.members.find(member.id);
    if (it == obs.members.end() || !it->second.answered) continue;
    const MemberObservation& m = it->second;
    if (m.phase == "left" || m.phase == "leaving") continue;
    std::vector<std::string> known = m.known_members;
    std::sort(known.begin(), known.end());
    if (known == ids) continue;
    AdminReply r = admin_.PutMembers(m.pod_ip, body, token);
    if (r.status < 200 || r.status >= 300) metrics_.member_calls_failed.Increment();
  }
}

namespace {

Json Condition(const std::string& type, bool status, const std::string& reason,
               const std::string& message, int64_t generation, const Json& old_status,
               const std::string& now) {
  std::string s = status ? "True" : "False";
  std::string since = now;
  for (const auto& c : old_status.value("conditions", Json::array())) {
    if (c.value("type", "") == type && c.value("status", "") == s) {
      since = c.value("lastTransitionTime", now);
    }
  }
  return {{"type", type},
          {"status", s},
          {"reason", reason},
          {"message", message},
          {"observedGeneration", generation},
          {"lastTransitionTime", since}};
}

}  // namespace

Json Reconciler::BuildStatus(const Observation& obs, const Plan& plan, const Json& old_status,
                             const std::string& extra_degraded, const std::string& now) {
  const ClusterSpec& spec = obs.spec;
  int ready = 0;
  bool handoff = false;
  std::string fenced;
  Json members = Json::array();
  for (const auto& member : plan.list.members) {
    Json entry = {{"name", member.id}};
    auto it = obs.members.find(member.id);
    if (it == obs.members.end()) {
      entry["state"] = "Pending";
      entry["ready"] = false;
    } else {
      const MemberObservation& m = it->second;
      if (m.pod_ready) ++ready;
      entry["ready"] = m.pod_ready;
      if (!m.pod_ip.empty()) entry["podIP"] = m.pod_ip;
      if (m.answered) {
        entry["state"] = m.phase;
        entry["slots"] = m.slots;
        entry["epoch"] = m.epoch;
        if (!m.incarnation.empty()) entry["incarnation"] = m.incarnation;
        if (m.phase == "joining" || m.phase == "leaving" || m.handoff_in_flight) handoff = true;
        if (m.phase == "fenced") fenced += (fenced.empty() ? "" : ", ") + m.name;
      } else {
        entry["state"] = m.running ? "Unreachable" : (m.pod_deleting ? "Terminating" : "Pending");
      }
    }
    members.push_back(entry);
  }
  const int n = static_cast<int>(plan.list.members.size());
  bool all_ready = ready == n && n > 0;
  std::string degraded_reason, degraded_message;
  if (!extra_degraded.empty()) {
    degraded_reason = "ReconcileFailed";
    degraded_message = extra_degraded;
  } else if (!plan.refused.empty()) {
    degraded_reason = "ScaleRefused";
    degraded_message = plan.refused;
  } else if (plan.leave_overdue) {
    degraded_reason = "MembershipChangeOverdue";
    degraded_message =
        plan.message + " for more than " + std::to_string(spec.leave_timeout_seconds) + "s";
  } else if (!fenced.empty()) {
    degraded_reason = "MemberFenced";
    degraded_message = "fenced (no majority): " + fenced;
  }
  const Operation& op = plan.operation;
  std::string old_phase = old_status.value("phase", "");
  std::string phase;
  if (!degraded_reason.empty()) {
    phase = "Degraded";
  } else if (op.type == "Replace") {
    phase = "Updating";
  } else if (!op.empty() || n != spec.members) {
    phase = "Scaling";
  } else if (all_ready) {
    phase = "Ready";
  } else if (old_phase.empty() || old_phase == "Creating" || plan.step == Step::kCreate) {
    phase = "Creating";
  } else {
    phase = "Degraded";
    degraded_reason = "MembersNotReady";
    degraded_message =
        std::to_string(n - ready) + " of " + std::to_string(n) + " members not ready";
  }
  bool progressing = phase == "Creating" || phase == "Scaling" || phase == "Updating";
  int64_t gen = spec.generation;
  Json conditions = Json::array(
      {Condition("Ready", phase == "Ready", phase == "Ready" ? "AllMembersReady" : phase,
                 std::to_string(ready) + "/" + std::to_string(n) + " members ready", gen,
                 old_status, now),
       Condition("Progressing", progressing, progressing ? phase : "Settled", plan.message, gen,
                 old_status, now),
       Condition("Degraded", !degraded_reason.empty(),
                 degraded_reason.empty() ? "AsExpected" : degraded_reason, degraded_message, gen,
                 old_status, now),
       Condition("HandoffInProgress", handoff, handoff ? "SlotsMoving" : "NoHandoff",
                 handoff ? "a member is joining or leaving" : "", gen, old_status, now)});
  Json status = {{"observedGeneration", gen},
                 {"phase", phase},
                 {"members", n},
                 {"readyMembers", ready},
                 {"selector", spec.SelectorString()},
                 {"memberListVersion", plan.list.version},
                 {"memberStatuses", members},
                 {"conditions", conditions}};
  if (!op.empty()) {
    status["operation"] = {{"type", op.type},
                           {"member", op.member},
                           {"startedAt",
                            [&] {
                              time_t t = op.started_unix;
                              tm utc{};
                              gmtime_r(&t, &utc);
                              char buf[32];
                              strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &utc);
                              return std::string(buf);
                            }()},
                           {"restartCount", op.restart_count}};
  }
  return status;
}

Reconciler::Result Reconciler::Reconcile(const std::string& ns, const std::string& name) {
  Result result;
  auto started = std::chrono::steady_clock::now();
  metrics_.reconciles.Increment();
  std::string kc_path = ResourcePath(kApiVersion, "keepclusters", ns, name);
  Response got = client_.Get(kc_path);
  if (got.status == 404) return result;  // deleted: the garbage collector removes its objects
  if (!got.ok()) {
    result.error = true;
    result.message = "get KeepCluster: " + std::to_string(got.status) + " " + got.error;
    return result;
  }
  Json kc = got.body;
  if (kc["metadata"].contains("deletionTimestamp")) return result;
  ClusterSpec spec = ParseClusterSpec(kc);
  Json old_status = kc.value("status", Json::object());

  std::string peer_secret, error;
  bool secrets_ok = EnsureSecrets(spec, &peer_secret, &error);
  Observation obs = Observe(spec, kc);
  Plan plan = PlanStep(obs);

  bool ok = secrets_ok;
  std::vector<std::string> failures;
  if (!secrets_ok) failures.push_back(error);
  const Operation& old_op = obs.operation;
  std::string token = peer_secret.empty() ? "" : AdminToken(peer_secret);

  if (ok) {
    auto apply = [&](const Json& object) {
      std::string e;
      if (!ApplyObject(object, &e)) {
        ok = false;
        failures.push_back(e);
      }
    };
    apply(BuildConfigMap(spec, plan.list));
    if (ok) SyncMemberLists(obs, plan, token);
    apply(BuildHeadlessService(spec));
    apply(BuildClientService(spec));
    if (ok && (plan.step == Step::kStartLeave)) {
      auto it = obs.members.find(plan.member);
      if (it != obs.members.end() && !it->second.pod_ip.empty()) {
        AdminReply r = admin_.Leave(it->second.pod_ip, token);
        if (r.status != 202 && r.status != 200) metrics_.member_calls_failed.Increment();
      }
    }
    if (ok && plan.step == Step::kDeletePod) {
      Response del = client_.Delete(ResourcePath("v1", "pods", ns, plan.member));
      if (!del.ok() && del.status != 404) failures.push_back("delete pod: " + del.error);
    }
    apply(BuildStatefulSet(spec, static_cast<int>(plan.list.members.size())));
    if (spec.pdb_enabled) {
      apply(BuildPodDisruptionBudget(spec));
    } else {
      DeleteIfPresent(ResourcePath("policy/v1", "poddisruptionbudgets", ns, spec.name));
    }
    if ((spec.service_monitor || spec.prometheus_rule) && MonitoringCrdsPresent()) {
      if (spec.service_monitor) apply(BuildServiceMonitor(spec));
      if (spec.prometheus_rule) apply(BuildPrometheusRule(spec));
    }
    if (spec.irq_affinity) {
      apply(BuildTunerServiceAccount(spec));
      apply(BuildTunerRole(spec));
      apply(BuildTunerRoleBinding(spec));
      apply(BuildTunerDaemonSet(spec));
    } else {
      DeleteIfPresent(ResourcePath("apps/v1", "daemonsets", ns, spec.TunerName()));
    }
  }

  // Events for each step that changes something.
  auto event = [&](const std::string& type, const std::string& reason, const std::string& action) {
    events_.Emit(kc, type, reason, action, plan.message);
  };
  bool new_op = plan.operation.type != old_op.type || plan.operation.member != old_op.member;
  switch (plan.step) {
    case Step::kCreate:
      event("Normal", "Creating", "Create");
      break;
    case Step::kAddMember:
      event("Normal", "MemberAdded", "ScaleUp");
      break;
    case Step::kStartLeave:
      if (new_op)
        event("Normal", "LeaveRequested",
              plan.operation.type == "Replace" ? "Update" : "ScaleDown");
      break;
    case Step::kRemoveMember:
      event("Normal", "MemberRemoved", "ScaleDown");
      break;
    case Step::kDeletePod:
      event("Normal", "MemberRestarted", "Update");
      break;
    case Step::kSteady:
      if (!old_op.empty())
        event("Normal", old_op.type == "Join" ? "MemberJoined" : "MemberReplaced", old_op.type);
      break;
    default:
      break;
  }
  if (plan.leave_overdue && old_status.value("phase", "") != "Degraded") {
    event("Warning", "MembershipChangeOverdue", "Wait");
  }

  std::string failure_text;
  for (const auto& f : failures) failure_text += (failure_text.empty() ? "" : "; ") + f;
  Json status = BuildStatus(obs, plan, old_status, failure_text, kube::NowRfc3339());
  Json patch = {{"apiVersion", kApiVersion},
                {"kind", "KeepCluster"},
                {"metadata", {{"name", name}, {"namespace", ns}}},
                {"status", status}};
  Response st = client_.Apply(kc_path + "/status", patch, kFieldManager);
  if (!st.ok()) failures.push_back("status: " + st.error);
  metrics_.SetCluster(ns, name, status["members"], status["readyMembers"],
                      status["phase"] == "Degraded");
  if (status["phase"] == "Degraded" && old_status.value("phase", "") != "Degraded" &&
      !plan.leave_overdue) {
    events_.Emit(kc, "Warning", "Degraded", "Reconcile",
                 status["conditions"][2].value("message", ""));
  }

  metrics_.reconcile_seconds.Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  if (!failures.empty()) {
    result.error = true;
    result.message = failure_text;
    return result;
  }
  bool busy = !plan.operation.empty() || status["phase"] != "Ready";
  result.requeue_after = busy ? std::chrono::milliseconds(1000) : std::chrono::milliseconds(30000);
  return result;
}

}  // namespace keep::op
