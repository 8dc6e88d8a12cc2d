#include "bench/keep_bench/workload.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace keep::bench {
namespace {

// log1p(x)/x and expm1(x)/x, continuous through x = 0.
double Helper1(double x) {
  if (std::fabs(x) > 1e-8) return std::log1p(x) / x;
  return 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}
double Helper2(double x) {
  if (std::fabs(x) > 1e-8) return std::expm1(x) / x;
  return 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
}

uint64_t SplitMix(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string Digits(int width) { return std::string(static_cast<size_t>(width), '0'); }

}  // namespace

Rng::Rng(uint64_t seed) {
  for (auto& s : s_) s = SplitMix(seed);
}

ZipfSampler::ZipfSampler(uint64_t n, double exponent) : n_(n), exponent_(exponent) {
  h_integral_x1_ = HIntegral(1.5) - 1;
  h_integral_n_ = HIntegral(static_cast<double>(n_) + 0.5);
  s_ = 2 - HIntegralInverse(HIntegral(2.5) - H(2));
}

double ZipfSampler::HIntegral(double x) const {
  double log_x = std::log(x);
  return Helper2((1 - exponent_) * log_x) * log_x;
}

double ZipfSampler::HIntegralInverse(double x) const {
  double t = x * (1 - exponent_);
  if (t < -1) t = -1;
  return std::exp(Helper1(t) * x);
}

uint64_t ZipfSampler::Sample(Rng& rng) const {
  for (;;) {
    double u = h_integral_n_ + rng.Unit() * (h_integral_x1_ - h_integral_n_);
    double x = HIntegralInverse(u);
    double rounded = std::floor(x + 0.5);
    uint64_t k = rounded < 1 ? 1 : static_cast<uint64_t>(rounded);
    if (k > n_) k = n_;
    double kd = static_cast<double>(k);
    if (kd - x <= s_ || u >= HIntegral(kd + 0.5) - H(kd)) return k;
  }
}

KeyPicker::KeyPicker(const Options& options)
    : keys_(options.keys),
      zipf_enabled_(options.distribution == Distribution::kZipf),
      zipf_(options.keys, options.zipf_exponent) {}

int KeyWidth(uint64_t keys) {
  int width = 1;
  for (uint64_t max = keys - 1; max >= 10; max /= 10) ++width;
  return width;
}

void RequestSource::PatchKey(char* at, uint64_t key) const {
  for (int i = key_width_ - 1; i >= 0; --i) {
    at[i] = static_cast<char>('0' + key % 10);
    key /= 10;
  }
}

void RequestSource::Append(int index, uint64_t key, std::string* out) const {
  const Template& t = templates_[static_cast<size_t>(index)];
  size_t base = out->size();
  out->append(t.bytes);
  if (t.digits_offset != std::string::npos) PatchKey(out->data() + base + t.digits_offset, key);
}

void RequestSource::Next(Rng& rng, std::string* out, uint64_t* key, int* template_index) const {
  int index = 0;
  if (cumulative_weights_.size() > 1) {
    auto draw = static_cast<uint32_t>(rng.Below(total_weight_));
    while (draw >= cumulative_weights_[static_cast<size_t>(index)]) ++index;
  }
  *key = picker_->Pick(rng);
  *template_index = index;
  Append(index, *key, out);
}

bool RequestSource::FollowUp(int template_index, uint64_t key, const Reply& reply, std::string* out,
                             int* follow_up_index) const {
  const Template& t = templates_[static_cast<size_t>(template_index)];
  bool wanted = false;
  switch (t.action) {
    case ReplyAction::kNone:
      return false;
    case ReplyAction::kReleaseOnOk:
      wanted = reply.kind == ReplyKind::kOk;
      break;
    case ReplyAction::kExpireOnCreate:
      wanted = reply.kind == ReplyKind::kInteger && reply.integer == 1;
      break;
  }
  if (!wanted) return false;
  *follow_up_index = t.follow_up;
  Append(t.follow_up, key, out);
  return true;
}

const char* Workload::kRateLimitScript =
    "local c = redis.call('INCR', KEYS[1]) if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) "
    "end return c";
const char* Workload::kLockReleaseScript =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 "
    "end";

Workload::Workload(const Options& options, const Codec& codec, std::string ratelimit_sha,
                   std::string lock_release_sha)
    : options_(options),
      codec_(codec),
      picker_(options),
      ratelimit_sha_(std::move(ratelimit_sha)),
      lock_release_sha_(std::move(lock_release_sha)),
      value_(options.value_size, 'v'),
      key_width_(KeyWidth(options.keys)) {}

RequestSource Workload::MakeSource(int connection_index) const {
  RequestSource source;
  source.picker_ = &picker_;
  source.key_width_ = key_width_;
  // Fixed width, so every connection's templates have the same length.
  char token_buffer[32];
  std::snprintf(token_buffer, sizeof token_buffer, "tok-%08d", connection_index);
  const std::string token = token_buffer;
  const std::string digits = Digits(key_width_);
  const std::string ttl = std::to_string(options_.lock_ttl_ms);

  // Adds a template whose key is args[key_arg] = prefix + digits; returns its index.
  auto add = [&](std::vector<std::string> args, int key_arg, uint32_t weight,
                 ReplyAction action = ReplyAction::kNone) {
    std::vector<std::string_view> views(args.begin(), args.end());
    Template t;
    std::vector<size_t> offsets;
    codec_.Encode(views, &t.bytes, &offsets);
    if (key_arg >= 0) {
      // The digits are the tail of the key argument.
      t.digits_offset = offsets[static_cast<size_t>(key_arg)] +
                        args[static_cast<size_t>(key_arg)].size() - digits.size();
    }
    t.action = action;
    source.templates_.push_back(std::move(t));
    source.total_weight_ += weight;
    source.cumulative_weights_.push_back(source.total_weight_);
    return static_cast<int>(source.templates_.size() - 1);
  };
  auto release_args = [&](const std::string& key) -> std::vector<std::string> {
    if (options_.lock_release == LockRelease::kNative) return {"DELIFEQ", key, token};
    return {"EVALSHA", lock_release_sha_, "1", key, token};
  };
  const std::string key = "key:" + digits;
  const std::string ctr = "ctr:" + digits;
  const std::string lock = "lock:" + digits;
  const std::string rl = "rl:" + digits;

  switch (options_.workload) {
    case WorkloadKind::kPing:
      add({"PING"}, -1, 1);
      break;
    case WorkloadKind::kGet:
      add({"GET", key}, 1, 1);
      break;
    case WorkloadKind::kSet:
      add({"SET", key, value_}, 1, 1);
      break;
    case WorkloadKind::kMixed:
      add({"GET", key}, 1, options_.ratio_reads);
      add({"SET", key, value_}, 1, options_.ratio_writes);
      break;
    case WorkloadKind::kIncr:
      add({"INCR", ctr}, 1, 1);
      break;
    case WorkloadKind::kRateLimit:
      if (options_.ratelimit_form == RateLimitForm::kNative) {
        add({"RATE.FIXED", rl, std::to_string(options_.ratelimit_limit),
             std::to_string(options_.ratelimit_window_ms)},
            1, 1);
      } else if (options_.ratelimit_form == RateLimitForm::kGcra) {
        // redis-cell's arguments: burst and rate per period in whole seconds.
        std::string limit = std::to_string(options_.ratelimit_limit);
        add({"CL.THROTTLE", rl, limit, limit,
             std::to_string(std::max<uint64_t>(1, options_.ratelimit_window_ms / 1000))},
            1, 1);
      } else {
        add({"EVALSHA", ratelimit_sha_, "1", rl, std::to_string(options_.ratelimit_window_ms)}, 3,
            1);
      }
      break;
    case WorkloadKind::kLock: {
      int acquire = add({"SET", lock, token, "NX", "PX", ttl}, 1, 1, ReplyAction::kReleaseOnOk);
      int release =
          add(release_args(lock), options_.lock_release == LockRelease::kNative ? 1 : 3, 0);
      source.templates_[static_cast<size_t>(acquire)].follow_up = release;
      break;
    }
    case WorkloadKind::kCoord: {
      // The mix, per scheduled request: 40% GET lookups, 25% counters (INCR, and PEXPIRE when
      // INCR created the counter), 15% locks (SET NX PX, released at once when acquired), 20%
      // short-lived values (SET PX 5000, over the same keys the lookups read).
      add({"GET", key}, 1, 40);
      int incr = add({"INCR", ctr}, 1, 25, ReplyAction::kExpireOnCreate);
      int acquire = add({"SET", lock, token, "NX", "PX", ttl}, 1, 15, ReplyAction::kReleaseOnOk);
      add({"SET", key, value_, "PX", std::to_string(kShortLivedMs)}, 1, 20);
      int expire = add({"PEXPIRE", ctr, std::to_string(kCounterWindowMs)}, 1, 0);
      int release =
          add(release_args(lock), options_.lock_release == LockRelease::kNative ? 1 : 3, 0);
      source.templates_[static_cast<size_t>(incr)].follow_up = expire;
      source.templates_[static_cast<size_t>(acquire)].follow_up = release;
      break;
    }
  }
  return source;
}

}  // namespace keep::bench
