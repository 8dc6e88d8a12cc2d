#!/usr/bin/env bash
# What the request-path metrics cost: keep-server as built (per-command counters and latency
# histograms on) against the same server with them compiled out (keep-server-nometrics, built
# beside it by `make build`), one shard each, through compare.sh (so both run in the same rounds,
# A B A B; redis-server is not needed here). Prints
#   RATIO metrics_cost <workload> cpu_us_per_req on=<v> off=<v> on/off=<x>
# Settings: as compare.sh (BIN, build/bin, holds both servers).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$ROOT/build/bin}
NOMETRICS_SERVER=$BIN/keep-server-nometrics
if [[ ! -x $NOMETRICS_SERVER ]]; then
  echo "metrics_cost.sh: $NOMETRICS_SERVER is missing: run make build first" >&2
  exit 1
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Only the two servers run (no redis-server): their RATIO lines divide one by the other.
SERVERS="keep peer" REFERENCE=keep PEER_SERVER="$NOMETRICS_SERVER" \
  PEER_ARGS="--bind 127.0.0.1 --shards 1" PEER_LABEL="keep 1 shard, metrics off" \
  WORKLOADS=${WORKLOADS:-"get_p1 get_p16 set_p16"} "$ROOT/bench/compare.sh" | tee "$out"

# on/off is the inverse of compare.sh's paired peer/keep (the mean over rounds of the two runs'
# ratio within a round).
grep '^RATIO [^ ]* cpu_us_per_req peer=' "$out" | while read -r _ wl _ peer keep paired; do
  on=${keep#keep=}
  off=${peer#peer=}
  awk -v wl="$wl" -v on="$on" -v off="$off" -v paired="${paired#peer/keep=}" 'BEGIN {
    r = (paired + 0 > 0) ? sprintf("%.3f", 1 / paired) : "n/a"
    printf "RATIO metrics_cost %s cpu_us_per_req on=%s off=%s on/off=%s\n", wl, on, off, r }'
done
