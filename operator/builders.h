// The objects a KeepCluster owns, built from its spec (pure functions; applied with
// server-side apply, so each carries only the fields the operator owns).
#pragma once

#include <string>

#include "operator/cluster_spec.h"
#include "operator/member_list.h"

namespace keep::op {

// The generated Secret with keys `secret` and `peer-secret`.
Json BuildSecret(const ClusterSpec& spec, const std::string& cluster_secret,
                 const std::string& peer_secret);
// keep.toml: the spec's extra settings and key classes.
std::string BuildToml(const ClusterSpec& spec);
Json BuildConfigMap(const ClusterSpec& spec, const MemberList& list);
Json BuildHeadlessService(const ClusterSpec& spec);
Json BuildClientService(const ClusterSpec& spec);
Json BuildStatefulSet(const ClusterSpec& spec, int replicas);
Json BuildPodDisruptionBudget(const ClusterSpec& spec);
Json BuildServiceMonitor(const ClusterSpec& spec);
Json BuildPrometheusRule(const ClusterSpec& spec);
// The IRQ-affinity node tuner: its ServiceAccount, Role (read pods), RoleBinding, DaemonSet.
Json BuildTunerServiceAccount(const ClusterSpec& spec);
Json BuildTunerRole(const ClusterSpec& spec);
Json BuildTunerRoleBinding(const ClusterSpec& spec);
Json BuildTunerDaemonSet(const ClusterSpec& spec);

}  // namespace keep::op
