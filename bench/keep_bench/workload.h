// What each workload sends. Every command is encoded once, at start, into a template whose key
// (and lock token) are fixed-width fields; sending a request is a memcpy of the template into the
// connection's output buffer and an in-place rewrite of the key digits, so the hot path never
// allocates or formats. Keys are `<prefix><n>` with n zero-padded to the width of --keys - 1
// (key:0042 for 10000 keys). Each workload family has its own prefix so that running workloads
// one after another on one server never makes INCR meet a 128-byte value:
//   key:  get, set, mixed and coord's lookups and short-lived values
//   ctr:  incr and coord's counters      rl:  ratelimit      lock:  lock and coord's locks
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/keep_bench/options.h"
#include "bench/keep_bench/protocol.h"

namespace keep::bench {

// xoshiro256** seeded through splitmix64: fast, and each connection gets its own stream.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n) by multiply-shift (Lemire), no division.
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// Zipf over ranks 1..n with P(k) proportional to k^-s, by Hörmann and Derflinger's
// rejection-inversion: O(1) time and memory per sample whatever n is (no CDF table).
class ZipfSampler {
 public:
  ZipfSampler(uint64_t n, double exponent);
  uint64_t Sample(Rng& rng) const;

 private:
  double H(double x) const { return std::exp(-exponent_ * std::log(x)); }
  double HIntegral(double x) const;
  double HIntegralInverse(double x) const;

  uint64_t n_;
  double exponent_;
  double h_integral_x1_;
  double h_integral_n_;
  double s_;
};

// Picks key indexes in [0, keys) with the configured distribution. For zipf, rank 1 (the hottest)
// is key 0, rank 2 key 1, and so on.
class KeyPicker {
 public:
  explicit KeyPicker(const Options& options);
  uint64_t Pick(Rng& rng) const {
    if (zipf_enabled_) return zipf_.Sample(rng) - 1;
    return rng.Below(keys_);
  }

 private:
  uint64_t keys_;
  bool zipf_enabled_;
  ZipfSampler zipf_;
};

// What the driver must do with a request's reply.
enum class ReplyAction : uint8_t {
  kNone,
  // A lock acquire: on +OK, release it right away (the same key, the connection's token).
  kReleaseOnOk,
  // A counter INCR: on :1 (the counter was just created), give it its window with PEXPIRE.
  kExpireOnCreate,
};

struct Template {
  std::string bytes;
  // Offset of the key's digits in bytes; npos when the command has no key.
  size_t digits_offset = std::string::npos;
  ReplyAction action = ReplyAction::kNone;
  // Index of the follow-up template for kReleaseOnOk / kExpireOnCreate.
  int follow_up = -1;
};

// Per-connection request generator: owns the connection's templates (its lock token is baked in).
class RequestSource {
 public:
  // One scheduled request appended to *out; *key and *template_index say what was sent.
  void Next(Rng& rng, std::string* out, uint64_t* key, int* template_index) const;
  // The follow-up a reply calls for, appended to *out; false when none.
  bool FollowUp(int template_index, uint64_t key, const Reply& reply, std::string* out,
                int* follow_up_index) const;

  // Writes the key index as fixed-width digits at `at` (exposed for tests).
  void PatchKey(char* at, uint64_t key) const;
  const std::vector<Template>& templates() const { return templates_; }

 private:
  friend class Workload;
  void Append(int index, uint64_t key, std::string* out) const;

  const KeyPicker* picker_ = nullptr;
  std::vector<Template> templates_;
  // Scheduled requests draw a template by weight: cumulative weights over templates_.
  std::vector<uint32_t> cumulative_weights_;
  uint32_t total_weight_ = 0;
  int key_width_ = 1;
};

class Workload {
 public:
  // Script SHA1s come from SCRIPT LOAD on the server (empty when the workload has no script).
  Workload(const Options& options, const Codec& codec, std::string ratelimit_sha,
           std::string lock_release_sha);
  RequestSource MakeSource(int connection_index) const;
  int key_width() const { return key_width_; }

  static const char* kRateLimitScript;
  static const char* kLockReleaseScript;
  // Lifetime of coord's short-lived values and of counters created by INCR.
  static constexpr uint64_t kShortLivedMs = 5000;
  static constexpr uint64_t kCounterWindowMs = 60000;

 private:
  const Options& options_;
  const Codec& codec_;
  KeyPicker picker_;
  std::string ratelimit_sha_;
  std::string lock_release_sha_;
  std::string value_;
  int key_width_;
};

// Digits needed for indexes 0..keys-1.
int KeyWidth(uint64_t keys);

}  // namespace keep::bench
