#include "dataplane/core/store.h"

#include <cstring>
#include <unordered_map>

namespace keep::core {

struct Store::Entry {
  std::string key;
  std::string value;
  int64_t expire_at = kNoExpiry;
  ValueType type = ValueType::kString;
};

namespace {
struct TransparentHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
struct TransparentEqual {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};
}  // namespace

struct Store::Impl {
  // Entries are heap nodes so a Ref survives rehashing; the key lives in the entry.
  std::unordered_map<std::string_view, std::unique_ptr<Entry>, TransparentHash, TransparentEqual>
      map;
  size_t with_expiry = 0;
  size_t used_bytes = 0;
  size_t expire_cursor = 0;
};

Store::Store() : impl_(std::make_unique<Impl>()) {}
Store::~Store() = default;

bool Store::ExpiredAt(Ref ref) const {
  return ref->expire_at != kNoExpiry && ref->expire_at <= now_ms_;
}

Store::Ref Store::Find(std::string_view key) {
  auto it = impl_->map.find(key);
  if (it == impl_->map.end()) return nullptr;
  Ref ref = it->second.get();
  if (ExpiredAt(ref)) {
    Erase(ref);
    ++expired_keys_;
    return nullptr;
  }
  return ref;
}

Store::Ref Store::Insert(std::string_view key, std::string_view value, ValueType type) {
  auto entry = std::make_unique<Entry>();
  entry->key.assign(key);
  entry->value.assign(value);
  entry->type = type;
  Ref ref = entry.get();
  impl_->used_bytes += key.size() + value.size() + sizeof(Entry);
  impl_->map.emplace(std::string_view(ref->key), std::move(entry));
  return ref;
}

bool Store::Erase(std::string_view key) {
  auto it = impl_->map.find(key);
  if (it == impl_->map.end()) return false;
  Erase(it->second.get());
  return true;
}

void Store::Erase(Ref ref) {
  if (ref->expire_at != kNoExpiry) --impl_->with_expiry;
  impl_->used_bytes -= ref->key.size() + ref->value.size() + sizeof(Entry);
  impl_->map.erase(std::string_view(ref->key));
}

std::string_view Store::Key(Ref ref) const { return ref->key; }
std::string_view Store::Value(Ref ref) const { return ref->value; }
ValueType Store::Type(Ref ref) const { return ref->type; }

void Store::SetValue(Ref ref, std::string_view value) {
  impl_->used_bytes += value.size() - ref->value.size();
  ref->value.assign(value);
}

char* Store::ResizeValue(Ref ref, size_t length) {
  impl_->used_bytes += length - ref->value.size();
  ref->value.resize(length, '\0');
  return ref->value.data();
}

int64_t Store::ExpireAt(Ref ref) const { return ref->expire_at; }

void Store::SetExpireAt(Ref ref, int64_t deadline_ms) {
  if (ref->expire_at == kNoExpiry && deadline_ms != kNoExpiry) ++impl_->with_expiry;
  if (ref->expire_at != kNoExpiry && deadline_ms == kNoExpiry) --impl_->with_expiry;
  ref->expire_at = deadline_ms;
}

size_t Store::Size() const { return impl_->map.size(); }
size_t Store::KeysWithExpiry() const { return impl_->with_expiry; }
size_t Store::UsedBytes() const { return impl_->used_bytes; }

void Store::Clear() {
  impl_->map.clear();
  impl_->with_expiry = 0;
  impl_->used_bytes = 0;
}

uint64_t Store::Scan(uint64_t cursor, size_t count,
                     const std::function<void(std::string_view key, Ref ref)>& visit) {
  auto& map = impl_->map;
  size_t buckets = map.bucket_count();
  size_t bucket = cursor;
  size_t seen = 0;
  while (bucket < buckets && seen < count) {
    for (auto it = map.begin(bucket); it != map.end(bucket); ++it) {
      Ref ref = it->second.get();
      ++seen;
      if (!ExpiredAt(ref)) visit(ref->key, ref);
    }
    ++bucket;
  }
  return bucket >= buckets ? 0 : bucket;
}

size_t Store::ExpireSome(size_t budget) {
  auto& map = impl_->map;
  if (impl_->with_expiry == 0 || map.empty()) return 0;
  size_t buckets = map.bucket_count();
  size_t erased = 0;
  size_t examined = 0;
  while (examined < budget) {
    if (impl_->expire_cursor >= buckets) impl_->expire_cursor = 0;
    size_t bucket = impl_->expire_cursor++;
    for (auto it = map.begin(bucket); it != map.end(bucket);) {
      Ref ref = (it++)->second.get();
      ++examined;
      if (ExpiredAt(ref)) {
        Erase(ref);
        ++expired_keys_;
        ++erased;
      }
    }
    ++examined;  // empty buckets cost too, so the budget bounds the walk
  }
  return erased;
}

Store::Ref Store::RandomKey(uint64_t random) {
  auto& map = impl_->map;
  while (!map.empty()) {
    size_t buckets = map.bucket_count();
    size_t start = random % buckets;
    for (size_t i = 0; i < buckets; ++i) {
      size_t bucket = (start + i) % buckets;
      size_t size = map.bucket_size(bucket);
      if (size == 0) continue;
      auto it = map.begin(bucket);
      std::advance(it, (random >> 20) % size);
      Ref ref = it->second.get();
      if (ExpiredAt(ref)) {
        Erase(ref);
        ++expired_keys_;
        break;  // the map changed: draw again
      }
      return ref;
    }
    random = random * 6364136223846793005ull + 1442695040888963407ull;
  }
  return nullptr;
}

}  // namespace keep::core
