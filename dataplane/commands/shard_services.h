// Shard-level services that server and connection commands need (client lists, statistics,
// configuration, shutdown). Implemented by the shard; unit tests use a fake. Only admin
// commands call these, never the key path, so an interface with virtual calls is fine here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dataplane/commands/command.h"

namespace keep::commands {

// The Redis version Keep answers as in HELLO and INFO: the one whose behaviour it reproduces.
inline constexpr std::string_view kRedisCompatVersion = "7.0.15";

// Key classes INFO reports (a table has at most KeyClassTable::kMaxClasses).
inline constexpr size_t kMaxReportedClasses = 64;

// Counters one shard reports for INFO; the INFO combiner sums them over the shards.
struct ShardStats {
  uint64_t keys = 0;
  uint64_t keys_with_expiry = 0;
  uint64_t expired_keys = 0;
  uint64_t used_bytes = 0;
  uint64_t connected_clients = 0;
  uint64_t total_connections_received = 0;
  uint64_t rejected_connections = 0;
  uint64_t total_commands_processed = 0;
  uint64_t net_input_bytes = 0;
  uint64_t net_output_bytes = 0;
  uint64_t cross_shard_requests = 0;
  uint64_t cross_shard_direct_replies = 0;
  // Socket reads and writes (SocketBatch): shards making them through io_uring (1 each), and the
  // system calls they took (one per batch on io_uring, one per read or write without).
  uint64_t io_uring_shards = 0;
  uint64_t socket_system_calls = 0;
  uint64_t keyspace_hits = 0;
  uint64_t keyspace_misses = 0;
  uint64_t client_output_buffer_bytes = 0;
  uint64_t client_query_buffer_bytes = 0;
  uint64_t used_cpu_user_us = 0;
  uint64_t used_cpu_sys_us = 0;
  uint64_t dataset_bytes = 0;  // keys and values as clients see them
  // How late expiry runs (the store's ExpiryLagMs); the member's figure is the largest shard's.
  uint64_t expiry_lag_ms = 0;
  // Binary subscription events a slow subscriber lost (its output was over the limit).
  uint64_t pubsub_dropped_events = 0;
  // Event-loop turns and the time they worked (not the wait in epoll_wait), as Redis's
  // eventloop_cycles / eventloop_duration_sum; the longest turn is what a request that arrived
  // at its start waited at worst (the member's figure is the largest shard's).
  uint64_t eventloop_cycles = 0;
  uint64_t eventloop_duration_sum_us = 0;
  uint64_t eventloop_duration_max_us = 0;
  // Memory: used_bytes is what the cap measures (live allocations and connection buffers);
  // reserved_bytes what the store holds from the OS (Store::UsedBytes); maxmemory the cap.
  uint64_t reserved_bytes = 0;
  uint64_t maxmemory = 0;
  uint64_t evicted_keys = 0;
  // Active defragmentation (Store::DefragSome): free bytes inside the slab's pages, shards with a
  // pass under way, records moved and records looked at and left.
  uint64_t allocator_frag_bytes = 0;
  uint64_t active_defrag_running = 0;
  uint64_t active_defrag_hits = 0;
  uint64_t active_defrag_misses = 0;
  // Per key class, indexed like the KeyClassTable.
  uint64_t class_keys[kMaxReportedClasses] = {};
  uint64_t class_bytes[kMaxReportedClasses] = {};
  uint64_t class_evicted[kMaxReportedClasses] = {};
  uint64_t class_expired[kMaxReportedClasses] = {};
};

// CLIENT KILL filters (the new form; the old "ip:port" form maps to addr).
struct ClientKillFilter {
  std::string addr;
  std::string laddr;
  uint64_t id = 0;
  bool has_id = false;
  bool skip_me = true;
  uint64_t caller_id = 0;
};

// Process-wide facts INFO reports.
struct ServerFacts {
  std::string run_id;
  std::string version;
  std::string executable;
  std::string config_file;
  int tcp_port = 0;
  int shard_count = 1;
  std::vector<int> shard_ports;  // port of shard i; empty when shard ports are off
  int64_t start_ms = 0;
  int pid = 0;
  uint64_t maxmemory = 0;
  bool cluster_enabled = false;  // started with a member list (INFO's cluster_enabled)
};

class ShardServices {
 public:
  virtual ~ShardServices() = default;

  virtual void CollectStats(ShardStats* stats) = 0;
  // Appends one CLIENT LIST line ("id=... addr=... \n") per connection of this shard; when
  // `ids` is not empty only those clients.
  virtual void AppendClientList(std::string* out, const std::vector<uint64_t>& ids) = 0;
  // Closes matching connections of this shard (after their pending replies); returns how many.
  virtual int KillClients(const ClientKillFilter& filter) = 0;
  virtual void RequestShutdown() = 0;
  virtual const ServerFacts& facts() = 0;

  // CONFIG GET: (name, value) pairs whose names match the glob `pattern`.
  virtual void ConfigGet(std::string_view pattern,
                         std::vector<std::pair<std::string, std::string>>* out) = 0;
  // CONFIG SET of one parameter on this shard; returns an error message (without '-') or "".
  virtual std::string ConfigSet(std::string_view name, std::string_view value) = 0;
  virtual void ResetStats() = 0;
  // Pub/sub. Subscribe and Unsubscribe register the calling client's connection (kLocal
  // commands run on the connection's shard); the client's own sets are kept by the caller.
  virtual void Subscribe(const ClientState& client, PubSubKind kind, std::string_view name) = 0;
  virtual void Unsubscribe(const ClientState& client, PubSubKind kind, std::string_view name) = 0;
  // Delivers to this shard's subscribers of `channel` (and, for kChannel, of matching
  // patterns); returns how many received it.
  virtual int64_t Publish(PubSubKind kind, std::string_view channel, std::string_view message) = 0;
  // Active channels (or patterns) of this shard, and subscriber counts.
  virtual void ActiveSubscriptions(PubSubKind kind, std::vector<std::string>* out) = 0;
  virtual int64_t SubscriberCount(PubSubKind kind, std::string_view name) = 0;

  // Whether this shard owns `key` (DEBUG POPULATE creates only the keys it owns).
  virtual bool OwnsKey(std::string_view key) = 0;
};

}  // namespace keep::commands
