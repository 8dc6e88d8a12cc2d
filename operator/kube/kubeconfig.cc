#include "operator/kube/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace keep::kube {

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string Base64Decode(std::string_view in) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r' || c == ' ') continue;
    size_t v = kAlphabet.find(c);
    if (v == std::string_view::npos) continue;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

namespace {

// Finds the entry named `name` in a kubeconfig list (clusters, users, contexts).
YAML::Node FindNamed(const YAML::Node& list, const std::string& name) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const auto& item : list) {
    if (item["name"] && item["name"].as<std::string>() == name) return item;
  }
  return YAML::Node();
}

std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

// Reads `<key>-data` (base64) or `<key>` (a file) from `node` into `out`.
bool LoadPem(const YAML::Node& node, const std::string& key, const std::string& base_dir,
             std::string* out, std::string* error) {
  if (node[key + "-data"]) {
    *out = Base64Decode(node[key + "-data"].as<std::string>());
    return true;
  }
  if (node[key]) {
    std::string path = Resolve(base_dir, node[key].as<std::string>());
    auto data = ReadFile(path);
    if (!data) {
      *error = "cannot read " + key + " file " + path;
      return false;
    }
    *out = *data;
  }
  return true;
}

}  // namespace

ConfigResult ParseKubeconfig(std::string_view yaml, const std::string& base_dir,
                             const std::string& context) {
  ConfigResult result;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    result.error = std::string("kubeconfig is not valid YAML: ") + e.what();
    return result;
  }
  if (!root.IsMap()) {
    result.error = "kubeconfig is not a mapping";
    return result;
  }
  try {
    std::string ctx_name = context;
    if (ctx_name.empty() && root["current-context"]) {
      ctx_name = root["current-context"].as<std::string>();
    }
    YAML::Node ctx = FindNamed(root["contexts"], ctx_name);
    if (!ctx && ctx_name.empty() && root["contexts"] && root["contexts"].size() == 1) {
      ctx = root["contexts"][0];
    }
    if (!ctx || !ctx["context"]) {
      result.error = "kubeconfig has no context '" + ctx_name + "'";
      return result;
    }
    const YAML::Node c = ctx["context"];
    std::string cluster_name = c["cluster"] ? c["cluster"].as<std::string>() : "";
    std::string user_name = c["user"] ? c["user"].as<std::string>() : "";
    YAML::Node cluster = FindNamed(root["clusters"], cluster_name);
    if (!cluster || !cluster["cluster"] || !cluster["cluster"]["server"]) {
      result.error = "kubeconfig has no cluster '" + cluster_name + "' with a server";
      return result;
    }
    ClusterConfig config;
    const YAML::Node cl = cluster["cluster"];
    config.server = cl["server"].as<std::string>();
    while (!config.server.empty() && config.server.back() == '/') config.server.pop_back();
    if (cl["insecure-skip-tls-verify"]) {
      config.insecure_skip_verify = cl["insecure-skip-tls-verify"].as<bool>();
    }
    if (!LoadPem(cl, "certificate-authority", base_dir, &config.ca_pem, &result.error)) {
      return result;
    }
    YAML::Node user = FindNamed(root["users"], user_name);
    if (user && user["user"]) {
      const YAML::Node u = user["user"];
      if (!LoadPem(u, "client-certificate", base_dir, &config.client_cert_pem, &result.error) ||
          !LoadPem(u, "client-key", base_dir, &config.client_key_pem, &result.error)) {
        return result;
      }
      if (u["token"]) config.token = u["token"].as<std::string>();
      if (u["tokenFile"]) config.token_file = Resolve(base_dir, u["tokenFile"].as<std::string>());
    } else if (!user_name.empty()) {
      result.error = "kubeconfig has no user '" + user_name + "'";
      return result;
    }
    if (c["namespace"]) config.namespace_name = c["namespace"].as<std::string>();
    if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
      result.error = "kubeconfig user has a client certificate without a key (or a key alone)";
      return result;
    }
    result.config = std::move(config);
  } catch (const YAML::Exception& e) {
    result.error = std::string("kubeconfig: ") + e.what();
  }
  return result;
}

ConfigResult InClusterConfig(const std::function<std::optional<std::string>(const char*)>& getenv,
                             const std::string& sa_dir) {
  ConfigResult result;
  auto host = getenv("KUBERNETES_SERVICE_HOST");
  auto port = getenv("KUBERNETES_SERVICE_PORT_HTTPS");
  if (!port) port = getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || host->empty()) {
    result.error = "not in a cluster: KUBERNETES_SERVICE_HOST/PORT unset";
    return result;
  }
  ClusterConfig config;
  bool v6 = host->find(':') != std::string::npos;
  config.server = "https://" + (v6 ? "[" + *host + "]" : *host) + ":" + *port;
  config.token_file = sa_dir + "/token";
  if (!ReadFile(config.token_file)) {
    result.error = "cannot read the service account token " + config.token_file;
    return result;
  }
  auto ca = ReadFile(sa_dir + "/ca.crt");
  if (!ca) {
    result.error = "cannot read the service account CA " + sa_dir + "/ca.crt";
    return result;
  }
  config.ca_pem = *ca;
  if (auto ns = ReadFile(sa_dir + "/namespace")) config.namespace_name = *ns;
  result.config = std::move(config);
  return result;
}

ConfigResult LoadConfig(const std::string& kubeconfig_flag) {
  auto env = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  std::string path = kubeconfig_flag;
  if (path.empty()) {
    if (auto kc = env("KUBECONFIG"); kc && !kc->empty()) path = kc->substr(0, kc->find(':'));
  }
  if (path.empty()) {
    auto in_cluster = InClusterConfig(env, "/var/run/secrets/kubernetes.io/serviceaccount");
    if (in_cluster.config) return in_cluster;
    if (auto home = env("HOME")) path = *home + "/.kube/config";
  }
  auto text = ReadFile(path);
  if (!text) return ConfigResult{std::nullopt, "cannot read kubeconfig " + path};
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  return ParseKubeconfig(*text, dir, "");
}

}  // namespace keep::kube
