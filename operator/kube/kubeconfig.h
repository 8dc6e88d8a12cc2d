// Where the Kubernetes API server is and how to authenticate to it: from a kubeconfig file
// (client certificates, bearer token, CA; inline `-data` or file paths) or from the in-cluster
// service account (token file re-read on rotation, CA file).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace keep::kube {

struct ClusterConfig {
  std::string server;  // https://host:port
  std::string ca_pem;  // CA bundle to verify the server (empty: system roots)
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;       // static bearer token
  std::string token_file;  // re-read on every use (service-account token rotation)
  bool insecure_skip_verify = false;
  std::string namespace_name = "default";
};

struct ConfigResult {
  std::optional<ClusterConfig> config;
  std::string error;
};

// Parses kubeconfig YAML. `base_dir` resolves relative file paths; `context` empty means the
// file's current-context. Files named by the config are read here.
ConfigResult ParseKubeconfig(std::string_view yaml, const std::string& base_dir,
                             const std::string& context);

// The in-cluster config: KUBERNETES_SERVICE_HOST/PORT(_HTTPS) from `getenv`, token, CA and
// namespace from `sa_dir` (normally /var/run/secrets/kubernetes.io/serviceaccount).
ConfigResult InClusterConfig(const std::function<std::optional<std::string>(const char*)>& getenv,
                             const std::string& sa_dir);

// --kubeconfig, else $KUBECONFIG, else in-cluster, else ~/.kube/config.
ConfigResult LoadConfig(const std::string& kubeconfig_flag);

std::optional<std::string> ReadFile(const std::string& path);
std::string Base64Decode(std::string_view in);

}  // namespace keep::kube
