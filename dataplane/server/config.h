// keep-server configuration (design §2.9): every setting has one name used as the flag
// (`--name`), the environment variable (`KEEP_NAME`, dashes as underscores) and the TOML key,
// taken in that order of precedence. Unknown names and bad values stop startup with a message
// that names them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/core/key_classes.h"

namespace keep::server {

enum class PinMode { kNever, kAuto, kAlways };

struct Config {
  std::string bind = "127.0.0.1";
  int port = 7000;
  int shards = 0;  // 0: one per CPU of the budget
  PinMode pin = PinMode::kAuto;
  int shard_port_base = 0;  // 0: no per-shard ports
  std::string config_file;
  std::string ready_file;
  int64_t maxclients = 10000;
  int64_t tcp_backlog = 511;
  int64_t proto_max_bulk_len = 512ll * 1024 * 1024;
  int64_t client_query_buffer_limit = 1024ll * 1024 * 1024;
  int64_t client_output_buffer_limit = 256ll * 1024 * 1024;
  int64_t timeout_seconds = 0;  // idle client timeout, 0: never
  bool enable_debug_command = false;
  bool io_uring = true;  // --io-uring: SocketBatch on io_uring where the kernel allows it
  int64_t max_lock_ttl_ms = 60000;   // longest lease LOCK grants
  int64_t lua_time_limit_ms = 5000;  // a script running longer is aborted
  std::string requirepass;           // from KEEP_REQUIREPASS or --requirepass-file only
  int64_t maxmemory = 0;             // bytes over all shards; 0: no cap
  // The [[key_class]] tables of the config file (validated: they build a KeyClassTable).
  std::vector<core::KeyClassSpec> key_classes;
  // Cluster (design §3): members inline or as a JSON file, and which of them this process is.
  std::string members;
  std::string members_file;
  std::string member_id;
  bool slot_hash_crc16 = false;  // --slot-hash crc16 (default keyed)
  std::string cluster_secret;    // from KEEP_SECRET or --secret-file only
  std::string peer_secret;       // from KEEP_PEER_SECRET or --peer-secret-file only
  std::string admin_token;       // from --admin-token-file only
  int admin_port = 0;            // 0: client port + 2 (cluster mode only)
};

// The outcome of loading: a config, or a message for the user (and whether it is an error or
// the answer to --help/--version).
struct LoadResult {
  std::optional<Config> config;
  std::string message;
  bool exit_ok = false;  // --help or --version: print message and exit 0
};

// `environment` is a list of "NAME=value" strings (environ), passed in so tests control it.
LoadResult LoadConfig(const std::vector<std::string>& argv,
                      const std::vector<std::string>& environment);

// Redis-style sizes: "1024", "64k" (1000), "64kb" (1024), "mb", "m", "gb", "g".
std::optional<int64_t> ParseSize(std::string_view text);

// The reference table of settings (name, default, help) for --help and the README.
std::string ConfigReference();

}  // namespace keep::server
