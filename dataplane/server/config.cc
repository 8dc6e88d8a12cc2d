#include "dataplane/server/config.h"

#include <toml++/toml.h>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

namespace keep::server {

namespace {

enum class Kind { kString, kInt, kSize, kBool, kPin, kFile };

struct Setting {
  std::string_view name;
  Kind kind;
  std::string_view help;
  // Applies a textual value; returns an error message or "".
  std::function<std::string(Config&, std::string_view)> apply;
  bool secret_file = false;  // value is a path whose contents are the secret
};

std::optional<int64_t> ParseInt(std::string_view text) {
  int64_t value = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<bool> ParseBool(std::string_view text) {
  if (text == "yes" || text == "true" || text == "1" || text == "on") return true;
  if (text == "no" || text == "false" || text == "0" || text == "off") return false;
  return std::nullopt;
}

std::string Bad(std::string_view name, std::string_view value, std::string_view expected) {
  return "invalid value '" + std::string(value) + "' for " + std::string(name) + ": expected " +
         std::string(expected);
}

// Builds an apply function for an integer-like field with bounds.
std::function<std::string(Config&, std::string_view)> IntField(std::string_view name,
                                                               int64_t Config::*field, int64_t min,
                                                               int64_t max, bool size) {
  return [=](Config& config, std::string_view text) -> std::string {
    auto value = size ? ParseSize(text) : ParseInt(text);
    if (!value || *value < min || *value > max) {
      return Bad(name, text,
                 (size ? "a size (e.g. 64mb) from " : "an integer from ") + std::to_string(min) +
                     " to " + std::to_string(max));
    }
    config.*field = *value;
    return "";
  };
}

std::function<std::string(Config&, std::string_view)> PortField(std::string_view name,
                                                                int Config::*field, int min) {
  return [=](Config& config, std::string_view text) -> std::string {
    auto value = ParseInt(text);
    if (!value || *value < min || *value > 65535) {
      return Bad(name, text, "an integer from " + std::to_string(min) + " to 65535");
    }
    config.*field = static_cast<int>(*value);
    return "";
  };
}

// Reads a secret from a file (one line; trailing newlines dropped) into `field`.
std::function<std::string(Config&, std::string_view)> SecretFile(std::string_view name,
                                                                 std::string Config::*field) {
  return [=](Config& c, std::string_view v) -> std::string {
    std::ifstream in{std::string(v)};
    if (!in) return "cannot read " + std::string(name) + " '" + std::string(v) + "'";
    std::stringstream contents;
    contents << in.rdbuf();
    std::string secret = contents.str();
    while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
    if (secret.empty()) return std::string(name) + " '" + std::string(v) + "' is empty";
    c.*field = secret;
    return "";
  };
}

std::function<std::string(Config&, std::string_view)> StringField(std::string Config::*field) {
  return [=](Config& c, std::string_view v) -> std::string {
    c.*field = std::string(v);
    return "";
  };
}

const std::vector<Setting>& Settings() {
  static const std::vector<Setting> settings = {
      {"bind", Kind::kString, "address the client port listens on (default 127.0.0.1)",
       [](Config& c, std::string_view v) -> std::string {
         if (v.empty()) return Bad("bind", v, "an IPv4 address");
         c.bind = std::string(v);
         return "";
       }},
      {"port", Kind::kInt, "client port for RESP and the binary protocol (default 7000)",
       PortField("port", &Config::port, 0)},
      {"shards", Kind::kInt, "shard threads; 0 = one per CPU of the budget (default 0)",
       [](Config& c, std::string_view v) -> std::string {
         auto value = ParseInt(v);
         if (!value || *value < 0 || *value > 256) return Bad("shards", v, "0 to 256");
         c.shards = static_cast<int>(*value);
         return "";
       }},
      {"pin", Kind::kPin, "pin shards to CPUs: never | auto | always (default auto)",
       [](Config& c, std::string_view v) -> std::string {
         if (v == "never")
           c.pin = PinMode::kNever;
         else if (v == "auto")
           c.pin = PinMode::kAuto;
         else if (v == "always")
           c.pin = PinMode::kAlways;
         else
           return Bad("pin", v, "never, auto or always");
         return "";
       }},
      {"shard-port-base", Kind::kInt,
       "shard i also listens on base+i so clients reach a shard directly; 0 = off (default 0)",
       PortField("shard-port-base", &Config::shard_port_base, 0)},
      {"config", Kind::kString, "TOML file with settings (flags and KEEP_* variables win)",
       [](Config& c, std::string_view v) -> std::string {
         c.config_file = std::string(v);
         return "";
       }},
      {"ready-file", Kind::kString, "file written once the server is serving",
       [](Config& c, std::string_view v) -> std::string {
         c.ready_file = std::string(v);
         return "";
       }},
      {"maxclients", Kind::kInt, "maximum client connections (default 10000)",
       IntField("maxclients", &Config::maxclients, 1, 1'000'000, false)},
      {"tcp-backlog", Kind::kInt, "listen backlog (default 511)",
       IntField("tcp-backlog", &Config::tcp_backlog, 1, 65535, false)},
      {"proto-max-bulk-len", Kind::kSize, "largest bulk string a client may send (default 512mb)",
       IntField("proto-max-bulk-len", &Config::proto_max_bulk_len, 1024 * 1024, int64_t{1} << 40,
                true)},
      {"client-query-buffer-limit", Kind::kSize,
       "unparsed input a client may buffer before it is disconnected (default 1gb)",
       IntField("client-query-buffer-limit", &Config::client_query_buffer_limit, 1024 * 1024,
                int64_t{1} << 40, true)},
      {"client-output-buffer-limit", Kind::kSize,
       "unsent replies a client may accumulate before it is disconnected (default 256mb)",
       IntField("client-output-buffer-limit", &Config::client_output_buffer_limit, 64 * 1024,
                int64_t{1} << 40, true)},
      {"timeout", Kind::kInt, "close a client idle for this many seconds; 0 = never (default 0)",
       IntField("timeout", &Config::timeout_seconds, 0, 365ll * 24 * 3600, false)},
      {"max-lock-ttl", Kind::kInt,
       "longest lease LOCK grants, in ms; also sets the crash quarantine (default 60000)",
       IntField("max-lock-ttl", &Config::max_lock_ttl_ms, 1, 24ll * 3600 * 1000, false)},
      {"lua-time-limit", Kind::kInt,
       "abort a script running longer than this, in ms (default 5000)",
       IntField("lua-time-limit", &Config::lua_time_limit_ms, 1, 3600ll * 1000, false)},
      {"maxmemory", Kind::kSize,
       "memory cap over all shards (split evenly), e.g. 4gb; 0 = no cap (default 0)",
       IntField("maxmemory", &Config::maxmemory, 0, int64_t{1} << 50, true)},
      {"io-uring", Kind::kBool,
       "batch each turn's socket reads and writes in one io_uring call each; falls back to plain "
       "calls where the kernel refuses io_uring (default yes)",
       [](Config& c, std::string_view v) -> std::string {
         auto value = ParseBool(v);
         if (!value) return Bad("io-uring", v, "yes or no");
         c.io_uring = *value;
         return "";
       }},
      {"enable-debug-command", Kind::kBool, "allow DEBUG (POPULATE, SLEEP, ...) (default off)",
       [](Config& c, std::string_view v) -> std::string {
         auto value = ParseBool(v);
         if (!value) return Bad("enable-debug-command", v, "yes or no");
         c.enable_debug_command = *value;
         return "";
       }},
      {"requirepass-file", Kind::kFile,
       "file holding the password clients must AUTH with (or KEEP_REQUIREPASS)",
       [](Config& c, std::string_view v) -> std::string {
         std::ifstream in{std::string(v)};
         if (!in) return "cannot read requirepass-file '" + std::string(v) + "'";
         std::stringstream contents;
         contents << in.rdbuf();
         std::string secret = contents.str();
         while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) {
           secret.pop_back();
         }
         if (secret.empty()) return "requirepass-file '" + std::string(v) + "' is empty";
         c.requirepass = secret;
         return "";
       },
       true},
      {"members", Kind::kString,
       "cluster members inline: id@host:client_port:peer_port:shards[:shard_port_base],...",
       StringField(&Config::members)},
      {"members-file", Kind::kString, "cluster members as a JSON file (see dataplane/cluster)",
       StringField(&Config::members_file)},
      {"member-id", Kind::kString, "this process's id in the member list",
       StringField(&Config::member_id)},
      {"slot-hash", Kind::kString, "key to slot: keyed | crc16 (default keyed)",
       [](Config& c, std::string_view v) -> std::string {
         if (v == "keyed")
           c.slot_hash_crc16 = false;
         else if (v == "crc16")
           c.slot_hash_crc16 = true;
         else
           return Bad("slot-hash", v, "keyed or crc16");
         return "";
       }},
      {"secret-file", Kind::kFile,
       "file holding the cluster secret that keys slots (or KEEP_SECRET)",
       SecretFile("secret-file", &Config::cluster_secret), true},
      {"peer-secret-file", Kind::kFile,
       "file holding the secret that authenticates members (or KEEP_PEER_SECRET)",
       SecretFile("peer-secret-file", &Config::peer_secret), true},
      {"admin-port", Kind::kInt,
       "admin HTTP port (metrics, health, cluster API); cluster mode: 0 = client port + 2; a "
       "single node only when set (default 0)",
       PortField("admin-port", &Config::admin_port, 0)},
      {"admin-token-file", Kind::kFile,
       "file holding the admin token (default: derived from the peer secret)",
       SecretFile("admin-token-file", &Config::admin_token), true},
  };
  return settings;
}

const Setting* FindSetting(std::string_view name) {
  for (const Setting& s : Settings()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string EnvName(std::string_view name) {
  std::string env = "KEEP_";
  for (char c : name) env.push_back(c == '-' ? '_' : static_cast<char>(std::toupper(c)));
  return env;
}

std::string TomlValueText(const toml::node& node, bool* ok) {
  *ok = true;
  if (auto s = node.value<std::string>()) return *s;
  if (node.is_boolean()) return *node.value<bool>() ? "yes" : "no";
  if (node.is_integer()) return std::to_string(*node.value<int64_t>());
  *ok = false;
  return "";
}

// The [[key_class]] array of tables (README "Key classes"): name, bytes, policy, all strings.
std::string ParseKeyClasses(const toml::node& node, std::vector<core::KeyClassSpec>* out) {
  const toml::array* array = node.as_array();
  if (array == nullptr || !array->is_array_of_tables()) {
    return "key_class must be an array of tables ([[key_class]])";
  }
  for (const toml::node& element : *array) {
    const toml::table& entry = *element.as_table();
    core::KeyClassSpec spec;
    for (auto&& [field, value] : entry) {
      std::optional<std::string> text = value.value<std::string>();
      if (!text) return "key_class field '" + std::string(field.str()) + "' must be a string";
      if (field == "name") {
        spec.name = *text;
      } else if (field == "bytes") {
        spec.bytes = *text;
      } else if (field == "policy") {
        spec.policy = *text;
      } else {
        return "unknown key_class field '" + std::string(field.str()) +
               "' (expected name, bytes, policy)";
      }
    }
    if (spec.policy.empty()) spec.policy = "lru";
    if (spec.bytes.empty() && !spec.name.empty() && spec.name != "default") {
      return "key_class '" + spec.name + "' has no bytes";
    }
    out->push_back(std::move(spec));
  }
  return "";
}

}  // namespace

std::optional<int64_t> ParseSize(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) ||
                                  (digits == 0 && text[0] == '-'))) {
    ++digits;
  }
  auto number = ParseInt(text.substr(0, digits));
  if (!number) return std::nullopt;
  std::string unit;
  for (char c : text.substr(digits)) unit.push_back(static_cast<char>(std::tolower(c)));
  static const std::map<std::string, int64_t> kUnits = {
      {"", 1},           {"b", 1},
      {"k", 1000},       {"kb", 1024},
      {"m", 1000000},    {"mb", 1024 * 1024},
      {"g", 1000000000}, {"gb", 1024ll * 1024 * 1024},
  };
  auto it = kUnits.find(unit);
  if (it == kUnits.end()) return std::nullopt;
  if (*number > INT64_MAX / it->second) return std::nullopt;
  return *number * it->second;
}

std::string ConfigReference() {
  std::string out;
  for (const Setting& s : Settings()) {
    out += "  --" + std::string(s.name);
    if (s.kind != Kind::kBool) out += " VALUE";
    out += "\n      " + std::string(s.help) + " [env " + EnvName(s.name) + "]\n";
  }
  return out;
}

LoadResult LoadConfig(const std::vector<std::string>& argv,
                      const std::vector<std::string>& environment) {
  LoadResult result;
  std::map<std::string, std::string, std::less<>> from_flags;
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      result.exit_ok = true;
      result.message =
          "usage: keep-server [--setting value ...]\n\nSettings (flag, then KEEP_* "
          "variable, then the --config TOML file):\n" +
          ConfigReference();
      return result;
    }
    if (arg == "--version" || arg == "-v") {
      result.exit_ok = true;
      result.message = "keep-server 0.1.0 (Redis 7.0 compatible)";
      return result;
    }
    if (!arg.starts_with("--")) {
      result.message = "unexpected argument '" + std::string(arg) + "' (settings are --name value)";
      return result;
    }
    arg.remove_prefix(2);
    std::string name, value;
    bool has_value = false;
    if (size_t eq = arg.find('='); eq != std::string_view::npos) {
      name = std::string(arg.substr(0, eq));
      value = std::string(arg.substr(eq + 1));
      has_value = true;
    } else {
      name = std::string(arg);
    }
    const Setting* setting = FindSetting(name);
    if (setting == nullptr) {
      result.message = "unknown setting --" + name;
      return result;
    }
    if (setting->kind == Kind::kBool) {
      if (!has_value) value = "yes";
    } else if (!has_value) {
      if (i + 1 >= argv.size()) {
        result.message = "--" + name + " needs a value";
        return result;
      }
      value = argv[++i];
    }
    from_flags[name] = value;
  }

  std::map<std::string, std::string, std::less<>> from_env;
  for (const std::string& entry : environment) {
    if (!entry.starts_with("KEEP_")) continue;
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string env_name = entry.substr(0, eq);
    std::string value = entry.substr(eq + 1);
    if (env_name == "KEEP_REQUIREPASS") {
      from_env["requirepass"] = value;
      continue;
    }
    if (env_name == "KEEP_SECRET" || env_name == "KEEP_PEER_SECRET") {
      from_env[env_name == "KEEP_SECRET" ? "secret" : "peer-secret"] = value;
      continue;
    }
    const Setting* match = nullptr;
    for (const Setting& s : Settings()) {
      if (EnvName(s.name) == env_name) match = &s;
    }
    // KEEP_* variables that are not settings belong to other tools (test harnesses, the
    // cluster secrets of later components) and are left alone.
    if (match != nullptr) from_env[std::string(match->name)] = value;
  }
  if (from_env.count("requirepass") &&
      (from_flags.count("requirepass-file") || from_env.count("requirepass-file"))) {
    result.message = "KEEP_REQUIREPASS and requirepass-file are both set: choose one";
    return result;
  }

  std::map<std::string, std::string, std::less<>> from_file;
  std::vector<core::KeyClassSpec> key_classes;
  std::string config_path;
  if (auto it = from_flags.find("config"); it != from_flags.end())
    config_path = it->second;
  else if (auto it = from_env.find("config"); it != from_env.end())
    config_path = it->second;
  if (!config_path.empty()) {
    toml::table table;
    try {
      table = toml::parse_file(config_path);
    } catch (const toml::parse_error& error) {
      std::ostringstream message;
      message << "cannot load config file '" << config_path << "': " << error.description()
              << " (line " << error.source().begin.line << ")";
      result.message = message.str();
      return result;
    }
    for (auto&& [key, node] : table) {
      std::string name(key.str());
      if (name == "key_class") {
        std::string error = ParseKeyClasses(node, &key_classes);
        if (!error.empty()) {
          result.message = error + " in " + config_path;
          return result;
        }
        continue;
      }
      const Setting* setting = FindSetting(name);
      if (setting == nullptr || name == "config") {
        result.message = "unknown setting '" + name + "' in " + config_path;
        return result;
      }
      bool ok = false;
      std::string text = TomlValueText(node, &ok);
      if (!ok) {
        result.message = "setting '" + name + "' in " + config_path + " has an unsupported type";
        return result;
      }
      from_file[name] = text;
    }
  }

  Config config;
  for (const Setting& setting : Settings()) {
    const std::string* value = nullptr;
    std::string source;
    if (auto it = from_flags.find(setting.name); it != from_flags.end()) {
      value = &it->second;
      source = "--" + std::string(setting.name);
    } else if (auto it = from_env.find(setting.name); it != from_env.end()) {
      value = &it->second;
      source = EnvName(setting.name);
    } else if (auto it = from_file.find(setting.name); it != from_file.end()) {
      value = &it->second;
      source = std::string(setting.name) + " in " + config_path;
    }
    if (value == nullptr) continue;
    std::string error = setting.apply(config, *value);
    if (!error.empty()) {
      result.message = error + " (from " + source + ")";
      return result;
    }
  }
  if (auto it = from_env.find("requirepass"); it != from_env.end()) {
    config.requirepass = it->second;
  }
  if (!key_classes.empty()) {
    core::KeyClassTable table;
    std::string error;
    if (!core::KeyClassTable::Build(key_classes, &table, &error)) {
      result.message = error + " in " + config_path;
      return result;
    }
    config.key_classes = std::move(key_classes);
  }
  // Secrets come from files or KEEP_SECRET / KEEP_PEER_SECRET, never from flags (design §2.8).
  for (auto [env, file, field] :
       {std::tuple{"secret", "secret-file", &Config::cluster_secret},
        std::tuple{"peer-secret", "peer-secret-file", &Config::peer_secret}}) {
    auto it = from_env.find(env);
    if (it == from_env.end()) continue;
    if (from_flags.count(file) || from_env.count(file) || from_file.count(file)) {
      result.message = std::string("KEEP_") +
                       (std::string_view(env) == "secret" ? "SECRET" : "PEER_SECRET") + " and " +
                       file + " are both set: choose one";
      return result;
    }
    if (it->second.empty()) {
      result.message =
          std::string(env) == "secret" ? "KEEP_SECRET is empty" : "KEEP_PEER_SECRET is empty";
      return result;
    }
    config.*field = it->second;
  }
  if (!config.members.empty() && !config.members_file.empty()) {
    result.message = "members and members-file are both set: choose one";
    return result;
  }
  if (config.shard_port_base != 0 && config.port != 0 && config.shard_port_base <= config.port &&
      config.port < config.shard_port_base + std::max(config.shards, 1)) {
    result.message = "port " + std::to_string(config.port) +
                     " falls inside the shard port range starting at shard-port-base " +
                     std::to_string(config.shard_port_base);
    return result;
  }
  result.config = config;
  return result;
}

}  // namespace keep::server
