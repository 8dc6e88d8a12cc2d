#include "operator/builders.h"

#include <gtest/gtest.h>

namespace keep::op {
namespace {

Json Kc(const std::string& spec_json) {
  return {{"apiVersion", "keep.dev/v1alpha1"},
          {"kind", "KeepCluster"},
          {"metadata", {{"name", "c"}, {"namespace", "ns"}, {"uid", "u-1"}, {"generation", 4}}},
          {"spec", Json::parse(spec_json)}};
}

const Json& Container(const Json& sts) { return sts["spec"]["template"]["spec"]["containers"][0]; }

std::string EnvValue(const Json& container, const std::string& name) {
  for (const auto& e : container["env"]) {
    if (e["name"] == name) return e.contains("value") ? e["value"].get<std::string>() : "<ref>";
  }
  return "";
}

TEST(ParseClusterSpec, AppliesDefaults) {
  ClusterSpec s = ParseClusterSpec(Kc("{}"));
  EXPECT_EQ(s.members, 3);
  EXPECT_EQ(s.shards, 1);
  EXPECT_EQ(s.slot_hash, "keyed");
  EXPECT_EQ(s.image, "keep/keep-server:latest");
  EXPECT_TRUE(s.pdb_enabled);
  EXPECT_EQ(s.generation, 4);
  ClusterSpec q = ParseClusterSpec(Kc(R"({"resources":{"cpu":2,"memory":"1Gi"}})"));
  EXPECT_EQ(q.cpu, "2");
  EXPECT_EQ(q.memory, "1Gi");
}

TEST(Builders, StatefulSetHasStableNamesOnDeleteProbeAndBind) {
  ClusterSpec s =
      ParseClusterSpec(Kc(R"({"members":3,"shards":2,"slotHash":"crc16","maxmemory":"1gb"})"));
  Json sts = BuildStatefulSet(s, 3);
  EXPECT_EQ(sts["metadata"]["name"], "c");
  EXPECT_EQ(sts["spec"]["replicas"], 3);
  EXPECT_EQ(sts["spec"]["serviceName"], "c-headless");
  EXPECT_EQ(sts["spec"]["updateStrategy"]["type"], "OnDelete");
  const Json& owner = sts["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["kind"], "KeepCluster");
  EXPECT_EQ(owner["uid"], "u-1");
  EXPECT_TRUE(owner["controller"].get<bool>());
  const Json& c = Container(sts);
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"], "/readyz");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["port"], "admin");
  EXPECT_EQ(c["args"][0], "--bind=$(POD_IP)");
  EXPECT_NE(std::find(c["args"].begin(), c["args"].end(), "--shards=2"), c["args"].end());
  EXPECT_EQ(c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"], "status.podIP");
  EXPECT_EQ(EnvValue(c, "KEEP_MEMBER_ID"), "$(POD_NAME)");
  EXPECT_EQ(EnvValue(c, "KEEP_MEMBERS_FILE"), "/etc/keep/members.json");
  EXPECT_EQ(EnvValue(c, "KEEP_SLOT_HASH"), "crc16");
  EXPECT_EQ(EnvValue(c, "KEEP_MAXMEMORY"), "1gb");
  EXPECT_EQ(EnvValue(c, "KEEP_ADMIN_PORT"), "7002");
  // Not pinned: Burstable, cpu request = shards, no cpu limit.
  EXPECT_EQ(c["resources"]["requests"]["cpu"], "2");
  EXPECT_FALSE(c["resources"].contains("limits"));
  EXPECT_EQ(sts["spec"]["selector"]["matchLabels"]["keep.dev/cluster"], "c");
}

TEST(Builders, CpuPinningIsGuaranteedWithIntegerCpus) {
  ClusterSpec s = ParseClusterSpec(
      Kc(R"({"shards":2,"cpuPinning":true,"resources":{"cpu":2,"memory":"2Gi"}})"));
  Json sts = BuildStatefulSet(s, 1);
  const Json& r = Container(sts)["resources"];
  EXPECT_EQ(r["requests"]["cpu"], "2");
  EXPECT_EQ(r["limits"]["cpu"], "2");
  EXPECT_EQ(r["requests"]["memory"], "2Gi");
  EXPECT_EQ(r["limits"]["memory"], "2Gi");
  const Json& args = Container(sts)["args"];
  EXPECT_NE(std::find(args.begin(), args.end(), "--pin=auto"), args.end());
}

TEST(Builders, HugePagesRequestsLimitsAndVolume) {
  ClusterSpec s = ParseClusterSpec(
      Kc(R"({"hugePages":{"size":"2Mi","amount":"256Mi"},"resources":{"memory":"1Gi"}})"));
  Json sts = BuildStatefulSet(s, 1);
  const Json& c = Container(sts);
  EXPECT_EQ(c["resources"]["requests"]["hugepages-2Mi"], "256Mi");
  EXPECT_EQ(c["resources"]["limits"]["hugepages-2Mi"], "256Mi");
  bool volume = false, mount = false;
  for (const auto& v : sts["spec"]["template"]["spec"]["volumes"]) {
    if (v["name"] == "hugepages") volume = v["emptyDir"]["medium"] == "HugePages";
  }
  for (const auto& m : c["volumeMounts"]) {
    if (m["name"] == "hugepages") mount = m["mountPath"] == "/dev/hugepages";
  }
  EXPECT_TRUE(volume);
  EXPECT_TRUE(mount);
  EXPECT_EQ(EnvValue(c, "KEEP_HUGEPAGES_DIR"), "/dev/hugepages");
}

TEST(Builders, SchedulingIsCopiedToThePod) {
  ClusterSpec s = ParseClusterSpec(Kc(
      R"({"scheduling":{"nodeSelector":{"disk":"ssd"},"tolerations":[{"key":"k","operator":"Exists"}]}})"));
  Json sts = BuildStatefulSet(s, 1);
  const Json& pod = sts["spec"]["template"]["spec"];
  EXPECT_EQ(pod["nodeSelector"]["disk"], "ssd");
  EXPECT_EQ(pod["tolerations"][0]["key"], "k");
}

TEST(Builders, ConfigMapCarriesMembersAndToml) {
  ClusterSpec s = ParseClusterSpec(Kc(
      R"({"config":{"maxclients":"500"},"keyClasses":[{"name":"locks","prefix":"L","policy":"pinned"}]})"));
  Json cm = BuildConfigMap(s, MemberList::Initial(s));
  Json members = Json::parse(cm["data"]["members.json"].get<std::string>());
  EXPECT_EQ(members["version"], 1);
  EXPECT_EQ(members["members"].size(), 3u);
  std::string toml = cm["data"]["keep.toml"];
  EXPECT_NE(toml.find("maxclients = \"500\""), std::string::npos);
  EXPECT_NE(toml.find("key-classes = \"locks:L:pinned\""), std::string::npos);
}

TEST(Builders, ServicesAndPdb) {
  ClusterSpec s = ParseClusterSpec(Kc("{}"));
  Json headless = BuildHeadlessService(s);
  EXPECT_EQ(headless["spec"]["clusterIP"], "None");
  EXPECT_TRUE(headless["spec"]["publishNotReadyAddresses"].get<bool>());
  Json client = BuildClientService(s);
  EXPECT_EQ(client["metadata"]["name"], "c");
  EXPECT_EQ(client["spec"]["ports"][0]["port"], 7000);
  Json pdb = BuildPodDisruptionBudget(s);
  EXPECT_EQ(pdb["spec"]["maxUnavailable"], 1);
  EXPECT_EQ(pdb["apiVersion"], "policy/v1");
}

TEST(Builders, SecretAndTuner) {
  ClusterSpec s = ParseClusterSpec(Kc(R"({"irqAffinity":{"mode":"away","interface":"eth1"}})"));
  Json secret = BuildSecret(s, "a", "b");
  EXPECT_EQ(secret["metadata"]["name"], "c-secrets");
  EXPECT_EQ(secret["stringData"]["peer-secret"], "b");
  Json ds = BuildTunerDaemonSet(s);
  const Json& c = ds["spec"]["template"]["spec"]["containers"][0];
  EXPECT_TRUE(c["securityContext"]["privileged"].get<bool>());
  EXPECT_NE(std::find(c["args"].begin(), c["args"].end(), "--mode=away"), c["args"].end());
  EXPECT_NE(std::find(c["args"].begin(), c["args"].end(), "--interface=eth1"), c["args"].end());
  EXPECT_EQ(ds["spec"]["template"]["spec"]["serviceAccountName"], "c-node-tuner");
  EXPECT_EQ(BuildTunerRole(s)["rules"][0]["verbs"], Json::parse(R"(["get","list","watch"])"));
}

}  // namespace
}  // namespace keep::op
