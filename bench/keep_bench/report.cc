#include "bench/keep_bench/report.h"

#include <cstdio>

namespace keep::bench {
namespace {

double Us(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

std::string Fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string WorkloadDetail(const Options& o) {
  switch (o.workload) {
    case WorkloadKind::kMixed:
      return "ratio " + std::to_string(o.ratio_reads) + ":" + std::to_string(o.ratio_writes);
    case WorkloadKind::kRateLimit:
      return std::string("form ") + RateLimitFormName(o.ratelimit_form) + ", limit " +
             std::to_string(o.ratelimit_limit) + " per " + std::to_string(o.ratelimit_window_ms) +
             " ms";
    case WorkloadKind::kLock:
    case WorkloadKind::kCoord:
      return std::string("release ") + LockReleaseName(o.lock_release);
    default:
      return "";
  }
}

}  // namespace

std::string JsonEscape(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
          out += buffer;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

std::string FormatJson(const Options& o, const Results& r) {
  const Histogram& h = r.histogram;
  std::string j = "{";
  auto field = [&j](const char* name, const std::string& value, bool quoted) {
    if (j.size() > 1) j += ",";
    j += "\"";
    j += name;
    j += "\":";
    if (quoted) {
      j += '"';
      j += JsonEscape(value);
      j += '"';
    } else {
      j += value;
    }
  };
  field("workload", WorkloadName(o.workload), true);
  field("protocol", ProtocolName(o.protocol), true);
  if (o.protocol == Protocol::kBinary) {
    field("batching", o.batching ? "true" : "false", false);
    field("sockets", std::to_string(o.sockets > 0 ? o.sockets : o.threads), false);
    field("cluster", r.cluster ? "true" : "false", false);
    if (r.cluster) {
      field("slot_mode", r.slot_mode, true);
      field("moved", std::to_string(r.moved), false);
      field("busy_retries", std::to_string(r.busy_retries), false);
      field("fenced_retries", std::to_string(r.fenced_retries), false);
      field("connection_retries", std::to_string(r.connection_retries), false);
      field("topology_refreshes", std::to_string(r.topology_refreshes), false);
    }
  }
  field("host", o.host, true);
  field("port", std::to_string(o.port), false);
  field("threads", std::to_string(o.threads), false);
  field("connections", std::to_string(o.connections), false);
  field("pipeline", std::to_string(o.pipeline), false);
  field("rate", Fixed(o.rate, 1), false);
  field("mode", o.rate > 0 ? "open" : "closed", true);
  field("keys", std::to_string(o.keys), false);
  field("value_size", std::to_string(o.value_size), false);
  field("distribution", DistributionName(o.distribution), true);
  field("zipf_exponent", Fixed(o.zipf_exponent, 3), false);
  field("ratio", std::to_string(o.ratio_reads) + ":" + std::to_string(o.ratio_writes), true);
  field("ratelimit_form", RateLimitFormName(o.ratelimit_form), true);
  field("lock_release", LockReleaseName(o.lock_release), true);
  field("warmup_s", Fixed(o.warmup_s, 3), false);
  field("duration_s", Fixed(o.duration_s, 3), false);
  field("requests_asked", std::to_string(o.requests), false);
  field("populated", std::to_string(r.populated), false);
  field("requests", std::to_string(r.requests), false);
  field("requests_total", std::to_string(r.requests_total), false);
  field("errors", std::to_string(r.errors), false);
  field("nils", std::to_string(r.nils), false);
  field("follow_ups", std::to_string(r.follow_ups), false);
  field("unfinished", std::to_string(r.unfinished), false);
  field("seconds", Fixed(r.seconds, 6), false);
  field("throughput", Fixed(r.throughput, 1), false);
  field("mean_us", Fixed(h.Mean() / 1000.0, 3), false);
  field("p50_us", Fixed(Us(h.Percentile(0.50)), 3), false);
  field("p90_us", Fixed(Us(h.Percentile(0.90)), 3), false);
  field("p99_us", Fixed(Us(h.Percentile(0.99)), 3), false);
  field("p999_us", Fixed(Us(h.Percentile(0.999)), 3), false);
  field("max_us", Fixed(Us(h.Max()), 3), false);
  field("first_error", r.first_error, true);
  j += "}";
  return j;
}

std::string FormatTable(const Options& o, const Results& r) {
  const Histogram& h = r.histogram;
  std::string detail = WorkloadDetail(o);
  std::string t;
  t += "keep-bench " + std::string(WorkloadName(o.workload)) +
       (detail.empty() ? "" : " (" + detail + ")") + " against " + o.host + ":" +
       std::to_string(o.port) + " over " + ProtocolName(o.protocol) + "\n";
  t += "  " + std::to_string(o.threads) + " threads, " + std::to_string(o.connections) +
       " connections, pipeline " + std::to_string(o.pipeline) + ", " +
       (o.rate > 0 ? "open loop at " + Fixed(o.rate, 0) + " req/s" : std::string("closed loop")) +
       ", " + std::to_string(o.keys) + " keys (" + DistributionName(o.distribution) + "), " +
       std::to_string(o.value_size) + "-byte values\n";
  if (o.protocol == Protocol::kBinary) {
    t += "  libkeep: the connections are callers sharing " +
         std::to_string(o.sockets > 0 ? o.sockets : o.threads) + " socket(s), batching " +
         (o.batching ? "on" : "off") + "\n";
    if (r.cluster) {
      t += "  cluster: routed by slot (" + r.slot_mode + "), " + std::to_string(r.moved) +
           " MOVED followed, " + std::to_string(r.busy_retries) + " BUSY retried, " +
           std::to_string(r.topology_refreshes) + " topology refreshes\n";
    }
  }
  t += "\n";
  auto row = [&t](const std::string& name, const std::string& value) {
    char buffer[128];
    std::snprintf(buffer, sizeof buffer, "  %-14s %14s\n", name.c_str(), value.c_str());
    t += buffer;
  };
  row("requests", std::to_string(r.requests));
  row("seconds", Fixed(r.seconds, 3));
  row("throughput", Fixed(r.throughput, 0) + " /s");
  row("errors", std::to_string(r.errors));
  row("nil replies", std::to_string(r.nils));
  if (r.follow_ups > 0) row("follow-ups", std::to_string(r.follow_ups));
  if (r.unfinished > 0) row("unfinished", std::to_string(r.unfinished));
  t += "\n  latency (us)\n";
  row("mean", Fixed(h.Mean() / 1000.0, 1));
  row("p50", Fixed(Us(h.Percentile(0.50)), 1));
  row("p90", Fixed(Us(h.Percentile(0.90)), 1));
  row("p99", Fixed(Us(h.Percentile(0.99)), 1));
  row("p99.9", Fixed(Us(h.Percentile(0.999)), 1));
  row("max", Fixed(Us(h.Max()), 1));
  if (!r.first_error.empty()) t += "\n  first error reply: -" + r.first_error + "\n";
  return t;
}

}  // namespace keep::bench
