#include "operator/cluster_spec.h"

namespace keep::op {

namespace {

std::optional<std::string> Quantity(const Json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return std::nullopt;
  const Json& v = obj[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return v.dump();
  return std::nullopt;
}

}  // namespace

Json ClusterSpec::SelectorLabels() const {
  return {{"app.kubernetes.io/name", "keep"}, {"keep.dev/cluster", name}};
}

Json ClusterSpec::Labels() const {
  Json l = SelectorLabels();
  l["app.kubernetes.io/instance"] = name;
  l["app.kubernetes.io/managed-by"] = kFieldManager;
  return l;
}

std::string ClusterSpec::SelectorString() const {
  return "app.kubernetes.io/name=keep,keep.dev/cluster=" + name;
}

Json ClusterSpec::OwnerReference() const {
  return {{"apiVersion", kApiVersion}, {"kind", "KeepCluster"},     {"name", name}, {"uid", uid},
          {"controller", true},        {"blockOwnerDeletion", true}};
}

ClusterSpec ParseClusterSpec(const Json& kc) {
  ClusterSpec s;
  const Json md = kc.value("metadata", Json::object());
  s.name = md.value("name", "");
  s.ns = md.value("namespace", "");
  s.uid = md.value("uid", "");
  s.generation = md.value("generation", 0);
  const Json spec = kc.value("spec", Json::object());
  s.members = spec.value("members", 3);
  s.image = spec.value("image", s.image);
  s.image_pull_policy = spec.value("imagePullPolicy", s.image_pull_policy);
  s.shards = spec.value("shards", 1);
  if (spec.contains("resources")) {
    s.cpu = Quantity(spec["resources"], "cpu");
    s.memory = Quantity(spec["resources"], "memory");
  }
  if (spec.contains("maxmemory")) s.maxmemory = spec["maxmemory"].get<std::string>();
  s.cpu_pinning = spec.value("cpuPinning", false);
  if (spec.contains("hugePages") && spec["hugePages"].is_object()) {
    HugePages hp;
    hp.size = spec["hugePages"].value("size", "2Mi");
    hp.amount = Quantity(spec["hugePages"], "amount").value_or("0");
    s.huge_pages = hp;
  }
  if (spec.contains("irqAffinity") && spec["irqAffinity"].is_object()) {
    IrqAffinity irq;
    irq.mode = spec["irqAffinity"].value("mode", "onto");
    irq.interface_name = spec["irqAffinity"].value("interface", "");
    irq.tuner_image = spec["irqAffinity"].value("tunerImage", "keep/keep-node-tuner:latest");
    s.irq_affinity = irq;
  }
  s.slot_hash = spec.value("slotHash", s.slot_hash);
  if (spec.contains("tls")) {
    s.tls_mode = spec["tls"].value("mode", "off");
    s.tls_secret = spec["tls"].value("secretName", "");
  }
  if (spec.contains("secrets")) {
    s.cluster_secret_name = spec["secrets"].value("clusterSecretName", "");
    s.peer_secret_name = spec["secrets"].value("peerSecretName", "");
  }
  if (spec.contains("keyClasses")) s.key_classes = spec["keyClasses"];
  if (spec.contains("config") && spec["config"].is_object()) {
    for (const auto& [k, v] : spec["config"].items()) {
      s.config[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }
  if (spec.contains("scheduling")) s.scheduling = spec["scheduling"];
  if (spec.contains("podDisruptionBudget")) {
    s.pdb_enabled = spec["podDisruptionBudget"].value("enabled", true);
  }
  if (spec.contains("monitoring")) {
    s.service_monitor = spec["monitoring"].value("serviceMonitor", false);
    s.prometheus_rule = spec["monitoring"].value("prometheusRule", false);
  }
  if (spec.contains("updateStrategy")) {
    s.update_type = spec["updateStrategy"].value("type", s.update_type);
    s.leave_timeout_seconds = spec["updateStrategy"].value("leaveTimeoutSeconds", 300);
  }
  return s;
}

}  // namespace keep::op
