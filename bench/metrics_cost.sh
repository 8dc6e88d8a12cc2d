#!/usr/bin/env bash
# What the request-path metrics cost: keep-server as built (per-command counters and latency
# histograms on) against the same server built with -DKEEP_METRICS=OFF, one shard each, through
# compare.sh (so both run in the same rounds, A B A B; redis-server is not needed here). Prints
#   RATIO metrics_cost <workload> cpu_us_per_req on=<v> off=<v> on/off=<x>
# Settings: as compare.sh; NOMETRICS_DIR (build-nometrics) is where the second build goes.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NOMETRICS_DIR=${NOMETRICS_DIR:-$ROOT/build-nometrics}
CCACHE=$(command -v ccache || true)
if [[ ! -f $NOMETRICS_DIR/build.ninja ]]; then
  cmake -S "$ROOT" -B "$NOMETRICS_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKEEP_METRICS=OFF \
    -DKEEP_BENCH=OFF ${CCACHE:+-DCMAKE_CXX_COMPILER_LAUNCHER=ccache} >/dev/null
fi
cmake --build "$NOMETRICS_DIR" -j "$(nproc)" --target keep-server >/dev/null

out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Only the two builds run (no redis-server): their RATIO lines divide one by the other.
SERVERS="keep peer" REFERENCE=keep PEER_SERVER="$NOMETRICS_DIR/bin/keep-server" \
  PEER_ARGS="--bind 127.0.0.1 --shards 1" PEER_LABEL="keep 1 shard, metrics off" \
  WORKLOADS=${WORKLOADS:-"get_p1 get_p16 set_p16"} "$ROOT/bench/compare.sh" | tee "$out"

grep '^RATIO [^ ]* cpu_us_per_req peer=' "$out" | while read -r _ wl _ peer keep _; do
  on=${keep#keep=}
  off=${peer#peer=}
  awk -v wl="$wl" -v on="$on" -v off="$off" 'BEGIN {
    r = (on + 0 > 0 && off + 0 > 0) ? sprintf("%.3f", on / off) : "n/a"
    printf "RATIO metrics_cost %s cpu_us_per_req on=%s off=%s on/off=%s\n", wl, on, off, r }'
done
