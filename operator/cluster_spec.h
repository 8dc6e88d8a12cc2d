// A KeepCluster's spec read into a struct, with the CRD's defaults applied again so objects
// built from it do not depend on the API server having defaulted them; names and labels of
// the objects the operator owns.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace keep::op {

using Json = nlohmann::json;

inline constexpr int kClientPort = 7000;
inline constexpr int kPeerPort = 7001;
inline constexpr int kAdminPort = 7002;
inline constexpr int kShardPortBase = 7100;
inline constexpr const char* kFieldManager = "keep-operator";
inline constexpr const char* kApiVersion = "keep.dev/v1alpha1";

struct HugePages {
  std::string size;    // 2Mi or 1Gi
  std::string amount;  // quantity
};

struct IrqAffinity {
  std::string mode;  // onto | away
  std::string interface_name;
  std::string tuner_image;
};

struct ClusterSpec {
  std::string name;
  std::string ns;
  std::string uid;
  int64_t generation = 0;

  int members = 3;
  std::string image = "keep/keep-server:latest";
  std::string image_pull_policy = "IfNotPresent";
  int shards = 1;
  std::optional<std::string> cpu;
  std::optional<std::string> memory;
  std::optional<std::string> maxmemory;
  bool cpu_pinning = false;
  std::optional<HugePages> huge_pages;
  std::optional<IrqAffinity> irq_affinity;
  std::string slot_hash = "keyed";
  std::string tls_mode = "off";
  std::string tls_secret;
  std::string cluster_secret_name;  // empty: generated NAME-secrets
  std::string peer_secret_name;     // empty: generated NAME-secrets
  Json key_classes = Json::array();
  std::map<std::string, std::string> config;
  Json scheduling = Json::object();
  bool pdb_enabled = true;
  bool service_monitor = false;
  bool prometheus_rule = false;
  std::string update_type = "LeaveRejoin";
  int leave_timeout_seconds = 300;

  // Names of owned objects.
  std::string SecretName() const { return name + "-secrets"; }
  std::string ClusterSecretName() const {
    return cluster_secret_name.empty() ? SecretName() : cluster_secret_name;
  }
  std::string PeerSecretName() const {
    return peer_secret_name.empty() ? SecretName() : peer_secret_name;
  }
  std::string ConfigMapName() const { return name + "-config"; }
  std::string HeadlessServiceName() const { return name + "-headless"; }
  std::string ClientServiceName() const { return name; }
  std::string StatefulSetName() const { return name; }
  std::string PodName(int ordinal) const { return name + "-" + std::to_string(ordinal); }
  std::string MemberHost(int ordinal) const {
    return PodName(ordinal) + "." + HeadlessServiceName() + "." + ns + ".svc.cluster.local";
  }
  std::string TunerName() const { return name + "-node-tuner"; }

  Json SelectorLabels() const;
  Json Labels() const;
  std::string SelectorString() const;
  // ownerReferences entry making the KeepCluster the controller of an object.
  Json OwnerReference() const;
};

// Reads a KeepCluster object. Quantities given as integers become strings.
ClusterSpec ParseClusterSpec(const Json& keep_cluster);

}  // namespace keep::op
