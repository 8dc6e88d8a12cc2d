#include "operator/kube/kubeconfig.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace keep::kube {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("kubeconfig_test_" + std::to_string(getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(path_ / name) << text;
    return (path_ / name).string();
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
  static inline int counter_ = 0;
};

TEST(Base64, Decodes) {
  EXPECT_EQ(Base64Decode("aGVsbG8="), "hello");
  EXPECT_EQ(Base64Decode("aGVs\nbG8gd29ybGQ="), "hello world");
  EXPECT_EQ(Base64Decode(""), "");
}

TEST(Kubeconfig, ClientCertificatesFromRelativeFiles) {
  TempDir dir;
  dir.Write("ca.crt", "CA PEM");
  dir.Write("admin.crt", "CERT PEM");
  dir.Write("admin.key", "KEY PEM");
  std::string yaml = R"(apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority: ca.crt
users:
- name: admin
  user:
    client-certificate: admin.crt
    client-key: admin.key
contexts:
- name: ctx
  context: {cluster: c, user: admin, namespace: team}
current-context: ctx
)";
  ConfigResult r = ParseKubeconfig(yaml, dir.path(), "");
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->server, "https://127.0.0.1:6443");
  EXPECT_EQ(r.config->ca_pem, "CA PEM");
  EXPECT_EQ(r.config->client_cert_pem, "CERT PEM");
  EXPECT_EQ(r.config->client_key_pem, "KEY PEM");
  EXPECT_EQ(r.config->namespace_name, "team");
  EXPECT_TRUE(r.config->token.empty());
}

TEST(Kubeconfig, InlineDataTokenAndNamedContext) {
  std::string yaml = R"(
clusters:
- {name: a, cluster: {server: "https://a:1", certificate-authority-data: Q0E=}}
- {name: b, cluster: {server: "https://b:2", insecure-skip-tls-verify: true}}
users:
- {name: u, user: {token: abc}}
- {name: v, user: {client-certificate-data: Q0VSVA==, client-key-data: S0VZ}}
contexts:
- {name: one, context: {cluster: a, user: v}}
- {name: two, context: {cluster: b, user: u}}
current-context: one
)";
  ConfigResult one = ParseKubeconfig(yaml, "", "");
  ASSERT_TRUE(one.config) << one.error;
  EXPECT_EQ(one.config->ca_pem, "CA");
  EXPECT_EQ(one.config->client_cert_pem, "CERT");
  EXPECT_EQ(one.config->client_key_pem, "KEY");
  ConfigResult two = ParseKubeconfig(yaml, "", "two");
  ASSERT_TRUE(two.config) << two.error;
  EXPECT_EQ(two.config->server, "https://b:2");
  EXPECT_TRUE(two.config->insecure_skip_verify);
  EXPECT_EQ(two.config->token, "abc");
  EXPECT_EQ(two.config->namespace_name, "default");
}

TEST(Kubeconfig, ErrorsNameTheProblem) {
  EXPECT_NE(ParseKubeconfig("{{{", "", "").error.find("not valid YAML"), std::string::npos);
  EXPECT_NE(ParseKubeconfig("- a\n- b\n", "", "").error.find("not a mapping"), std::string::npos);
  std::string no_ctx = "clusters: []\ncontexts: []\ncurrent-context: x\n";
  EXPECT_NE(ParseKubeconfig(no_ctx, "", "").error.find("no context 'x'"), std::string::npos);
  std::string missing_file = R"(
clusters: [{name: c, cluster: {server: "https://x", certificate-authority: /nonexistent/ca}}]
contexts: [{name: k, context: {cluster: c}}]
current-context: k
)";
  EXPECT_NE(ParseKubeconfig(missing_file, "", "").error.find("/nonexistent/ca"), std::string::npos);
  std::string cert_without_key = R"(
clusters: [{name: c, cluster: {server: "https://x"}}]
users: [{name: u, user: {client-certificate-data: Q0VSVA==}}]
contexts: [{name: k, context: {cluster: c, user: u}}]
current-context: k
)";
  EXPECT_FALSE(ParseKubeconfig(cert_without_key, "", "").config);
}

TEST(InCluster, ReadsServiceAccountFiles) {
  TempDir dir;
  dir.Write("token", "tok\n");
  dir.Write("ca.crt", "CA");
  dir.Write("namespace", "keep-system");
  auto env = [](const char* name) -> std::optional<std::string> {
    std::string n = name;
    if (n == "KUBERNETES_SERVICE_HOST") return "10.0.0.1";
    if (n == "KUBERNETES_SERVICE_PORT_HTTPS") return "443";
    return std::nullopt;
  };
  ConfigResult r = InClusterConfig(env, dir.path());
  ASSERT_TRUE(r.config) << r.error;
  EXPECT_EQ(r.config->server, "https://10.0.0.1:443");
  EXPECT_EQ(r.config->ca_pem, "CA");
  EXPECT_EQ(r.config->token_file, dir.path() + "/token");
  EXPECT_EQ(r.config->namespace_name, "keep-system");

  auto no_env = [](const char*) -> std::optional<std::string> { return std::nullopt; };
  EXPECT_FALSE(InClusterConfig(no_env, dir.path()).config);
  TempDir empty;
  EXPECT_NE(InClusterConfig(env, empty.path()).error.find("token"), std::string::npos);
}

}  // namespace
}  // namespace keep::kube
