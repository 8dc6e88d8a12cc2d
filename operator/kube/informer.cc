#include "operator/kube/informer.h"

#include <chrono>
#include <random>
#include <thread>

#include "operator/kube/client.h"

namespace keep::kube {

using nlohmann::json;

ApiListWatcher::ApiListWatcher(Client& client, std::string collection_path,
                               std::string label_selector)
    : client_(client), path_(std::move(collection_path)), selector_(std::move(label_selector)) {}

ListWatcher::ListResult ApiListWatcher::List() {
  ListResult out;
  std::string path = path_;
  if (!selector_.empty()) path += "?labelSelector=" + UrlEncode(selector_);
  Response r = client_.Get(path);
  out.status = r.status;
  if (r.ok() && r.body.is_object()) {
    out.items = r.body.value("items", json::array());
    if (out.items.is_null()) out.items = json::array();
    out.resource_version = r.body["metadata"].value("resourceVersion", "");
  }
  return out;
}

ListWatcher::WatchResult ApiListWatcher::Watch(const std::string& rv, int timeout_seconds,
                                               const std::function<bool(const json&)>& on_event) {
  std::string path = path_ + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + UrlEncode(rv) +
                     "&timeoutSeconds=" + std::to_string(timeout_seconds);
  if (!selector_.empty()) path += "&labelSelector=" + UrlEncode(selector_);
  WatchEnd end = client_.Watch(path, on_event);
  WatchResult out;
  out.status = end.status;
  out.transport_error = end.status == 0;
  return out;
}

Informer::Informer(ListWatcher& lw, Handler on_change) : lw_(lw), on_change_(std::move(on_change)) {
  seed_ = static_cast<unsigned>(std::random_device{}());
}

std::string Informer::KeyOf(const json& object) {
  const json& md = object.value("metadata", json::object());
  std::string ns = md.value("namespace", "");
  std::string name = md.value("name", "");
  return ns.empty() ? name : ns + "/" + name;
}

std::optional<json> Informer::Get(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = cache_.find(key);
  if (it == cache_.end()) return std::nullopt;
  return it->second;
}

std::map<std::string, json> Informer::Snapshot() const {
  std::lock_guard lock(mu_);
  return cache_;
}

std::string Informer::resource_version() const {
  std::lock_guard lock(mu_);
  return rv_;
}

bool Informer::Relist() {
  ListWatcher::ListResult list = lw_.List();
  if (list.status != 200) return false;
  std::map<std::string, json> fresh;
  for (const auto& item : list.items) fresh[KeyOf(item)] = item;
  std::vector<std::string> changed;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, obj] : cache_) {
      if (!fresh.count(key)) changed.push_back(key);  // deleted while we were not watching
    }
    for (const auto& [key, obj] : fresh) {
      auto it = cache_.find(key);
      if (it == cache_.end() || it->second != obj) changed.push_back(key);
    }
    cache_ = std::move(fresh);
    rv_ = list.resource_version;
  }
  ++relists_;
  need_list_ = false;
  synced_ = true;
  for (const auto& key : changed) {
    auto obj = Get(key);
    on_change_(key, obj ? &*obj : nullptr);
  }
  return true;
}

bool Informer::WatchOnce() {
  // client-go draws the watch timeout from [5, 10) minutes so watches do not expire together.
  std::mt19937 rng(seed_++);
  int timeout = 300 + static_cast<int>(rng() % 300);
  bool gone = false;
  ListWatcher::WatchResult r = lw_.Watch(resource_version(), timeout, [&](const json& event) {
    std::string type = event.value("type", "");
    const json& obj = event.contains("object") ? event["object"] : json();
    if (type == "ERROR") {
      if (obj.is_object() && obj.value("code", 0) == 410) gone = true;
      return false;
    }
    std::string rv =
        obj.is_object() ? obj.value("metadata", json::object()).value("resourceVersion", "") : "";
    if (type == "BOOKMARK") {
      std::lock_guard lock(mu_);
      if (!rv.empty()) rv_ = rv;
      return true;
    }
    std::string key = KeyOf(obj);
    {
      std::lock_guard lock(mu_);
      if (type == "DELETED") {
        cache_.erase(key);
      } else if (type == "ADDED" || type == "MODIFIED") {
        cache_[key] = obj;
      } else {
        return true;
      }
      if (!rv.empty()) rv_ = rv;
    }
    on_change_(key, type == "DELETED" ? nullptr : &obj);
    return true;
  });
  if (gone || r.status == 410) {
    need_list_ = true;
    return true;  // relist at once: the history we resumed from is gone
  }
  if (r.status != 200) {
    // Anything else (transport error, 5xx, 429): back off, resume from the same version; a
    // version too old shows up as 410 on the next try.
    return false;
  }
  return true;
}

bool Informer::Step() {
  try {
    return need_list_ ? Relist() : WatchOnce();
  } catch (const std::exception&) {
    need_list_ = true;  // an event of an unexpected shape: start over from a list
    return false;
  }
}

void Informer::Run(const std::atomic<bool>& stop) {
  int backoff_ms = 100;
  while (!stop) {
    if (Step()) {
      backoff_ms = 100;
      continue;
    }
    for (int waited = 0; waited < backoff_ms && !stop; waited += 50) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    backoff_ms = std::min(backoff_ms * 2, 30000);
  }
}

}  // namespace keep::kube
