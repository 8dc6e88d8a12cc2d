#include "operator/builders.h"

#include <sstream>

namespace keep::op {

namespace {

Json Meta(const ClusterSpec& spec, const std::string& name) {
  return {{"name", name},
          {"namespace", spec.ns},
          {"labels", spec.Labels()},
          {"ownerReferences", Json::array({spec.OwnerReference()})}};
}

std::string TomlQuote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out + "\"";
}

constexpr const char* kSecretDir = "/var/run/keep/secrets";
constexpr const char* kConfigDir = "/etc/keep";
constexpr const char* kHugePagesDir = "/dev/hugepages";

}  // namespace

Json BuildSecret(const ClusterSpec& spec, const std::string& cluster_secret,
                 const std::string& peer_secret) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", Meta(spec, spec.SecretName())},
          {"type", "Opaque"},
          {"stringData", {{"secret", cluster_secret}, {"peer-secret", peer_secret}}}};
}

std::string BuildToml(const ClusterSpec& spec) {
  std::ostringstream out;
  out << "# keep-server settings for KeepCluster " << spec.ns << "/" << spec.name
      << " (written by keep-operator; per-member settings come from KEEP_* variables)\n";
  for (const auto& [k, v] : spec.config) out << k << " = " << TomlQuote(v) << "\n";
  if (!spec.key_classes.empty()) {
    // One line per class: "name:prefix-byte:policy" (prefix empty: every other byte).
    std::string classes;
    for (const auto& c : spec.key_classes) {
      if (!classes.empty()) classes += ",";
      classes += c.value("name", "") + ":" + c.value("prefix", "") + ":" + c.value("policy", "");
    }
    out << "key-classes = " << TomlQuote(classes) << "\n";
  }
  return out.str();
}

Json BuildConfigMap(const ClusterSpec& spec, const MemberList& list) {
  return {
      {"apiVersion", "v1"},
      {"kind", "ConfigMap"},
      {"metadata", Meta(spec, spec.ConfigMapName())},
      {"data", {{"members.json", list.ToJson().dump(2) + "\n"}, {"keep.toml", BuildToml(spec)}}}};
}

namespace {

Json ServicePorts() {
  return Json::array({{{"name", "client"}, {"port", kClientPort}, {"targetPort", "client"}},
                      {{"name", "peer"}, {"port", kPeerPort}, {"targetPort", "peer"}},
                      {{"name", "admin"}, {"port", kAdminPort}, {"targetPort", "admin"}}});
}

}  // namespace

Json BuildHeadlessService(const ClusterSpec& spec) {
  // Members find each other by DNS before they are ready (they must, to join).
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", Meta(spec, spec.HeadlessServiceName())},
          {"spec",
           {{"clusterIP", "None"},
            {"publishNotReadyAddresses", true},
            {"selector", spec.SelectorLabels()},
            {"ports", ServicePorts()}}}};
}

Json BuildClientService(const ClusterSpec& spec) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata", Meta(spec, spec.ClientServiceName())},
      {"spec",
       {{"type", "ClusterIP"},
        {"selector", spec.SelectorLabels()},
        {"ports",
         Json::array({{{"name", "client"}, {"port", kClientPort}, {"targetPort", "client"}}})}}}};
}

namespace {

Json EnvField(const std::string& name, const std::string& path) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}};
}
Json EnvValue(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

Json Resources(const ClusterSpec& spec) {
  std::string cpu = spec.cpu.value_or(std::to_string(spec.shards));
  Json requests = {{"cpu", cpu}};
  Json limits = Json::object();
  if (spec.memory) {
    requests["memory"] = *spec.memory;
    limits["memory"] = *spec.memory;
  }
  if (spec.cpu_pinning) {
    // Guaranteed QoS with integer CPUs: the static CPU manager gives exclusive cores.
    requests["cpu"] = std::to_string(spec.shards);
    limits["cpu"] = std::to_string(spec.shards);
  }
  if (spec.huge_pages) {
    std::string key = "hugepages-" + spec.huge_pages->size;
    requests[key] = spec.huge_pages->amount;
    limits[key] = spec.huge_pages->amount;
  }
  Json r = {{"requests", requests}};
  if (!limits.empty()) r["limits"] = limits;
  return r;
}

}  // namespace

Json BuildStatefulSet(const ClusterSpec& spec, int replicas) {
  // Cluster wiring goes in KEEP_* variables rather than flags: a keep-server that predates a
  // setting ignores an unknown variable but refuses an unknown flag.
  Json env = Json::array(
      {EnvField("POD_IP", "status.podIP"), EnvField("POD_NAME", "metadata.name"),
       EnvValue("KEEP_MEMBER_ID", "$(POD_NAME)"),
       EnvValue("KEEP_MEMBERS_FILE", std::string(kConfigDir) + "/members.json"),
       EnvValue("KEEP_PEER_PORT", std::to_string(kPeerPort)),
       EnvValue("KEEP_ADMIN_PORT", std::to_string(kAdminPort)),
       EnvValue("KEEP_SLOT_HASH", spec.slot_hash),
       EnvValue("KEEP_SECRET_FILE", std::string(kSecretDir) + "/cluster/secret"),
       EnvValue("KEEP_PEER_SECRET_FILE", std::string(kSecretDir) + "/peer/peer-secret")});
  if (spec.maxmemory) env.push_back(EnvValue("KEEP_MAXMEMORY", *spec.maxmemory));
  if (spec.huge_pages) env.push_back(EnvValue("KEEP_HUGEPAGES_DIR", kHugePagesDir));

  Json args = Json::array({"--bind=$(POD_IP)", "--port=" + std::to_string(kClientPort),
                           "--shards=" + std::to_string(spec.shards),
                           "--shard-port-base=" + std::to_string(kShardPortBase),
                           // auto pins exactly when the kubelet gave one exclusive CPU per shard.
                           std::string("--pin=") + (spec.cpu_pinning ? "auto" : "never"),
                           std::string("--config=") + kConfigDir + "/keep.toml"});
  Json ports = Json::array({{{"name", "client"}, {"containerPort", kClientPort}},
                            {{"name", "peer"}, {"containerPort", kPeerPort}},
                            {{"name", "admin"}, {"containerPort", kAdminPort}}});
  Json mounts = Json::array({{{"name", "config"}, {"mountPath", kConfigDir}, {"readOnly", true}},
                             {{"name", "cluster-secret"},
                              {"mountPath", std::string(kSecretDir) + "/cluster"},
                              {"readOnly", true}},
                             {{"name", "peer-secret"},
                              {"mountPath", std::string(kSecretDir) + "/peer"},
                              {"readOnly", true}}});
  Json volumes = Json::array(
      {{{"name", "config"}, {"configMap", {{"name", spec.ConfigMapName()}}}},
       {{"name", "cluster-secret"},
        {"secret",
         {{"secretName", spec.ClusterSecretName()},
          {"items", Json::array({{{"key", "secret"}, {"path", "secret"}}})}}}},
       {{"name", "peer-secret"},
        {"secret",
         {{"secretName", spec.PeerSecretName()},
          {"items", Json::array({{{"key", "peer-secret"}, {"path", "peer-secret"}}})}}}}});
  if (spec.huge_pages) {
    mounts.push_back({{"name", "hugepages"}, {"mountPath", kHugePagesDir}});
    volumes.push_back({{"name", "hugepages"}, {"emptyDir", {{"medium", "HugePages"}}}});
  }
  Json container = {{"name", "keep"},
                    {"image", spec.image},
                    {"imagePullPolicy", spec.image_pull_policy},
                    {"args", args},
                    {"env", env},
                    {"ports", ports},
                    {"volumeMounts", mounts},
                    {"resources", Resources(spec)},
                    {"readinessProbe",
                     {{"httpGet", {{"path", "/readyz"}, {"port", "admin"}}},
                      {"periodSeconds", 2},
                      {"timeoutSeconds", 1},
                      {"failureThreshold", 2}}}};
  Json pod_spec = {{"containers", Json::array({container})},
                   {"volumes", volumes},
                   {"enableServiceLinks", false},
                   // SIGTERM is a clean leave; give the handoff its whole budget.
                   {"terminationGracePeriodSeconds", spec.leave_timeout_seconds + 30}};
  const Json& sched = spec.scheduling;
  if (sched.is_object()) {
    for (const char* key :
         {"nodeSelector", "tolerations", "topologySpreadConstraints", "affinity"}) {
      if (sched.contains(key)) pod_spec[key] = sched[key];
    }
  }
  Json pod_labels = spec.Labels();
  return {{"apiVersion", "apps/v1"},
          {"kind", "StatefulSet"},
          {"metadata", Meta(spec, spec.StatefulSetName())},
          {"spec",
           {{"replicas", replicas},
            {"serviceName", spec.HeadlessServiceName()},
            {"podManagementPolicy", "Parallel"},
            {"updateStrategy", {{"type", "OnDelete"}}},
            {"selector", {{"matchLabels", spec.SelectorLabels()}}},
            {"template", {{"metadata", {{"labels", pod_labels}}}, {"spec", pod_spec}}}}}};
}

Json BuildPodDisruptionBudget(const ClusterSpec& spec) {
  return {
      {"apiVersion", "policy/v1"},
      {"kind", "PodDisruptionBudget"},
      {"metadata", Meta(spec, spec.name)},
      {"spec", {{"maxUnavailable", 1}, {"selector", {{"matchLabels", spec.SelectorLabels()}}}}}};
}

Json BuildServiceMonitor(const ClusterSpec& spec) {
  return {{"apiVersion", "monitoring.coreos.com/v1"},
          {"kind", "ServiceMonitor"},
          {"metadata", Meta(spec, spec.name)},
          {"spec",
           {{"selector", {{"matchLabels", spec.SelectorLabels()}}},
            {"endpoints", Json::array({{{"port", "admin"}, {"path", "/metrics"}}})}}}};
}

Json BuildPrometheusRule(const ClusterSpec& spec) {
  std::string sel = "namespace=\"" + spec.ns + "\",pod=~\"" + spec.name + "-[0-9]+\"";
  Json rules = Json::array(
      {{{"alert", "KeepMemberFenced"},
        {"expr", "max by (pod) (keep_fenced{" + sel + "}) == 1"},
        {"for", "1m"},
        {"labels", {{"severity", "critical"}}},
        {"annotations", {{"summary", "Keep member {{ $labels.pod }} is fenced (no majority)"}}}},
       {{"alert", "KeepHandoffStuck"},
        {"expr", "max by (pod) (keep_handoff_in_flight{" + sel + "}) > 0"},
        {"for", "10m"},
        {"labels", {{"severity", "warning"}}},
        {"annotations",
         {{"summary", "Keep member {{ $labels.pod }} has a handoff in flight for 10m"}}}},
       {{"alert", "KeepMemberDown"},
        {"expr", "up{" + sel + "} == 0"},
        {"for", "2m"},
        {"labels", {{"severity", "warning"}}},
        {"annotations", {{"summary", "Keep member {{ $labels.pod }} is not scraped"}}}}});
  return {{"apiVersion", "monitoring.coreos.com/v1"},
          {"kind", "PrometheusRule"},
          {"metadata", Meta(spec, spec.name)},
          {"spec", {{"groups", Json::array({{{"name", "keep-" + spec.name}, {"rules", rules}}})}}}};
}

Json BuildTunerServiceAccount(const ClusterSpec& spec) {
  return {
      {"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", Meta(spec, spec.TunerName())}};
}

Json BuildTunerRole(const ClusterSpec& spec) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "Role"},
          {"metadata", Meta(spec, spec.TunerName())},
          {"rules", Json::array({{{"apiGroups", Json::array({""})},
                                  {"resources", Json::array({"pods"})},
                                  {"verbs", Json::array({"get", "list", "watch"})}}})}};
}

Json BuildTunerRoleBinding(const ClusterSpec& spec) {
  return {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "RoleBinding"},
      {"metadata", Meta(spec, spec.TunerName())},
      {"roleRef",
       {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", spec.TunerName()}}},
      {"subjects",
       Json::array(
           {{{"kind", "ServiceAccount"}, {"name", spec.TunerName()}, {"namespace", spec.ns}}})}};
}

Json BuildTunerDaemonSet(const ClusterSpec& spec) {
  const IrqAffinity& irq = *spec.irq_affinity;
  Json labels = {{"app.kubernetes.io/name", "keep-node-tuner"}, {"keep.dev/cluster", spec.name}};
  Json args = Json::array({"--host-proc=/host/proc", "--host-sys=/host/sys", "--mode=" + irq.mode,
                           "--namespace=" + spec.ns, "--node=$(NODE_NAME)",
                           "--selector=" + spec.SelectorString(),
                           "--state-dir=/var/lib/keep-node-tuner/" + spec.ns + "-" + spec.name});
  if (!irq.interface_name.empty()) args.push_back("--interface=" + irq.interface_name);
  Json container = {
      {"name", "tuner"},
      {"image", irq.tuner_image},
      {"args", args},
      {"env", Json::array({EnvField("NODE_NAME", "spec.nodeName")})},
      {"securityContext", {{"privileged", true}}},
      {"resources", {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}}},
      {"volumeMounts",
       Json::array({{{"name", "proc"}, {"mountPath", "/host/proc"}},
                    {{"name", "sys"}, {"mountPath", "/host/sys"}, {"readOnly", true}},
                    {{"name", "state"}, {"mountPath", "/var/lib/keep-node-tuner"}}})}};
  Json pod_spec = {
      {"serviceAccountName", spec.TunerName()},
      {"containers", Json::array({container})},
      {"volumes",
       Json::array({{{"name", "proc"}, {"hostPath", {{"path", "/proc"}}}},
                    {{"name", "sys"}, {"hostPath", {{"path", "/sys"}}}},
                    {{"name", "state"},
                     {"hostPath",
                      {{"path", "/var/lib/keep-node-tuner"}, {"type", "DirectoryOrCreate"}}}}})}};
  if (spec.scheduling.is_object()) {
    for (const char* key : {"nodeSelector", "tolerations"}) {
      if (spec.scheduling.contains(key)) pod_spec[key] = spec.scheduling[key];
    }
  }
  return {{"apiVersion", "apps/v1"},
          {"kind", "DaemonSet"},
          {"metadata", Meta(spec, spec.TunerName())},
          {"spec",
           {{"selector", {{"matchLabels", labels}}},
            {"template", {{"metadata", {{"labels", labels}}}, {"spec", pod_spec}}}}}};
}

}  // namespace keep::op
