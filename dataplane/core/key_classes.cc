#include "dataplane/core/key_classes.h"

#include <cstdio>

namespace keep::core {

namespace {

constexpr std::string_view kPolicyNames[] = {"lru", "ttl", "none", "pinned"};

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// One byte at text[*pos] (itself or \xHH); advances *pos.
bool ReadByte(std::string_view text, size_t* pos, int* byte) {
  if (*pos >= text.size()) return false;
  if (text[*pos] == '\\') {
    if (*pos + 4 > text.size() || (text[*pos + 1] != 'x' && text[*pos + 1] != 'X')) return false;
    int hi = HexDigit(text[*pos + 2]);
    int lo = HexDigit(text[*pos + 3]);
    if (hi < 0 || lo < 0) return false;
    *byte = hi * 16 + lo;
    *pos += 4;
    return true;
  }
  *byte = static_cast<unsigned char>(text[*pos]);
  *pos += 1;
  return true;
}

std::string Printable(int byte) {
  char buf[8];
  if (byte > 0x20 && byte < 0x7f && byte != '\\') {
    std::snprintf(buf, sizeof(buf), "'%c'", byte);
  } else {
    std::snprintf(buf, sizeof(buf), "\\x%02x", byte);
  }
  return buf;
}

}  // namespace

std::string_view PolicyName(EvictionPolicy policy) {
  return kPolicyNames[static_cast<int>(policy)];
}

std::string_view RedisPolicyName(EvictionPolicy policy) {
  switch (policy) {
    case EvictionPolicy::kLru:
      return "allkeys-lru";
    case EvictionPolicy::kTtl:
      return "volatile-ttl";
    case EvictionPolicy::kNone:
    case EvictionPolicy::kPinned:
      break;
  }
  return "noeviction";
}

bool ParsePolicy(std::string_view name, EvictionPolicy* policy) {
  for (int i = 0; i < 4; ++i) {
    if (name == kPolicyNames[i]) {
      *policy = static_cast<EvictionPolicy>(i);
      return true;
    }
  }
  return false;
}

std::string ParseByteSet(std::string_view text, std::bitset<256>* bytes) {
  bytes->reset();
  if (text.empty()) return "empty byte set";
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t start = pos;
    int first = 0;
    if (!ReadByte(text, &pos, &first) || (text[start] == ',' || text[start] == '-')) {
      return "bad byte set '" + std::string(text) + "' at offset " + std::to_string(start);
    }
    int last = first;
    if (pos < text.size() && text[pos] == '-') {
      ++pos;
      size_t at = pos;
      if (!ReadByte(text, &pos, &last) || text[at] == ',') {
        return "bad byte set '" + std::string(text) + "' at offset " + std::to_string(at);
      }
      if (last < first) {
        return "bad range " + Printable(first) + "-" + Printable(last) + " in byte set '" +
               std::string(text) + "' (start after end)";
      }
    }
    for (int b = first; b <= last; ++b) bytes->set(static_cast<size_t>(b));
    if (pos == text.size()) break;
    if (text[pos] != ',') {
      return "bad byte set '" + std::string(text) + "' at offset " + std::to_string(pos);
    }
    ++pos;
    if (pos == text.size()) return "bad byte set '" + std::string(text) + "': trailing comma";
  }
  return "";
}

KeyClassTable::KeyClassTable() {
  classes_.push_back({"default", EvictionPolicy::kLru});
  class_of_.fill(kDefaultClass);
}

bool KeyClassTable::Build(const std::vector<KeyClassSpec>& specs, KeyClassTable* table,
                          std::string* error) {
  KeyClassTable built;
  std::array<int, 256> owner;
  owner.fill(-1);
  for (const KeyClassSpec& spec : specs) {
    if (spec.name.empty()) {
      *error = "key_class: a class has an empty name";
      return false;
    }
    EvictionPolicy policy;
    if (!ParsePolicy(spec.policy, &policy)) {
      *error = "key_class '" + spec.name + "': unknown policy '" + spec.policy +
               "' (expected lru, ttl, none or pinned)";
      return false;
    }
    if (spec.name == "default") {
      if (!spec.bytes.empty()) {
        *error = "key_class 'default': takes no bytes (it holds every byte no class names)";
        return false;
      }
      built.classes_[kDefaultClass].policy = policy;
      continue;
    }
    for (size_t i = 1; i < built.classes_.size(); ++i) {
      if (built.classes_[i].name == spec.name) {
        *error = "key_class '" + spec.name + "' is defined twice";
        return false;
      }
    }
    if (built.classes_.size() >= kMaxClasses) {
      *error = "key_class: at most " + std::to_string(kMaxClasses) + " classes";
      return false;
    }
    std::bitset<256> bytes;
    std::string problem = ParseByteSet(spec.bytes, &bytes);
    if (!problem.empty()) {
      *error = "key_class '" + spec.name + "': " + problem;
      return false;
    }
    const int index = static_cast<int>(built.classes_.size());
    for (int b = 0; b < 256; ++b) {
      if (!bytes.test(static_cast<size_t>(b))) continue;
      if (owner[b] >= 0) {
        *error = "key_class '" + spec.name + "': byte " + Printable(b) + " is also in class '" +
                 built.classes_[owner[b]].name + "' (ranges overlap)";
        return false;
      }
      owner[b] = index;
      built.class_of_[b] = static_cast<uint8_t>(index);
    }
    built.classes_.push_back({spec.name, policy});
  }
  *table = std::move(built);
  return true;
}

bool KeyClassTable::AnyEvictable() const {
  for (const Class& c : classes_) {
    if (c.policy == EvictionPolicy::kLru || c.policy == EvictionPolicy::kTtl) return true;
  }
  return false;
}

}  // namespace keep::core
