// List-then-watch cache of one resource (design §5): watches from the list's resourceVersion
// with bookmarks and a server-side timeout, resumes from the last version it saw, and on
// 410 Gone (HTTP status or in-stream ERROR) drops the cache and relists. Every add, update and
// delete (including those a relist reveals) is reported as the object's "namespace/name".
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace keep::kube {

class Client;

// The two calls an informer makes; the real one talks to the API server, tests use a fake.
class ListWatcher {
 public:
  struct ListResult {
    int status = 0;  // HTTP status (200 on success)
    nlohmann::json items = nlohmann::json::array();
    std::string resource_version;
  };
  struct WatchResult {
    int status = 0;  // HTTP status of the watch request (200: streamed until closed)
    bool transport_error = false;
  };
  virtual ~ListWatcher() = default;
  virtual ListResult List() = 0;
  virtual WatchResult Watch(const std::string& resource_version, int timeout_seconds,
                            const std::function<bool(const nlohmann::json&)>& on_event) = 0;
};

// ListWatcher for `collection_path` (e.g. /apis/apps/v1/statefulsets) with a label selector.
class ApiListWatcher : public ListWatcher {
 public:
  ApiListWatcher(Client& client, std::string collection_path, std::string label_selector = "");
  ListResult List() override;
  WatchResult Watch(const std::string& resource_version, int timeout_seconds,
                    const std::function<bool(const nlohmann::json&)>& on_event) override;

 private:
  Client& client_;
  std::string path_;
  std::string selector_;
};

class Informer {
 public:
  using Handler = std::function<void(const std::string& key, const nlohmann::json* object)>;
  Informer(ListWatcher& lw, Handler on_change);

  // One list or one watch stream; Run loops over it. Returns false when it had to back off.
  bool Step();
  void Run(const std::atomic<bool>& stop);

  bool synced() const { return synced_.load(); }
  std::optional<nlohmann::json> Get(const std::string& key) const;
  std::map<std::string, nlohmann::json> Snapshot() const;
  std::string resource_version() const;
  int relists() const { return relists_; }

  static std::string KeyOf(const nlohmann::json& object);

 private:
  bool Relist();
  bool WatchOnce();

  ListWatcher& lw_;
  Handler on_change_;
  mutable std::mutex mu_;
  std::map<std::string, nlohmann::json> cache_;
  std::string rv_;
  bool need_list_ = true;
  std::atomic<bool> synced_{false};
  int relists_ = 0;
  unsigned seed_ = 1;
};

}  // namespace keep::kube
