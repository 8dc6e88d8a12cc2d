#!/usr/bin/env bash
# Memory acceptance figures (design §2.5) for keep-server against redis-server on this machine:
# bytes per key after DEBUG POPULATE, GET latency while 10M keys load, memory reclaim after mass
# expiry, and RSS and hit ratio under eviction. The work is in memory_bench.py; this wrapper
# finds the binaries. Settings (environment): PARTS ("a b c d"), POPULATE_KEYS, LOAD_KEYS,
# CONTROL_KEYS (LOAD_KEYS / 2), EXPIRY_KEYS, CAP_MB, TRACE_LENGTH, BIN (build/bin), KEEP_SERVER,
# REDIS_SERVER.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$ROOT/build/bin}
KEEP_SERVER=${KEEP_SERVER:-$BIN/keep-server}
REDIS_SERVER=${REDIS_SERVER:-/usr/bin/redis-server}

[[ -x $KEEP_SERVER ]] || { echo "memory.sh: $KEEP_SERVER not built (make build)" >&2; exit 1; }
[[ -x $REDIS_SERVER ]] || { echo "memory.sh: $REDIS_SERVER missing (apt-get install redis-server)" >&2; exit 1; }

exec /usr/bin/python3 "$ROOT/bench/memory_bench.py" "$KEEP_SERVER" "$REDIS_SERVER"
