#!/usr/bin/env bash
# Side-by-side comparison: keep-server (1 and 2 shards) against redis-server on this machine, with
# the floor (keep-floor, 1 and 2 threads) as the reference for what the kernel alone costs, and an
# optional third server (PEER_SERVER=/path/to/binary, started with --port P).
#
# Every workload runs against every server in turn, ROUNDS times (servers alternate within each
# round, so drift hits all of them). Server CPU per request comes from /proc/PID/stat (utime +
# stime around the run), throughput and latency from keep-bench --json. Output: one table, then
# one machine-readable line per figure:
#   RATIO <workload> <metric> keep=<v> redis=<v> keep/redis=<x>
# Method and how to read it: bench/README.md.
#
# With redis and keep2 among the servers, a last section compares GET over the binary protocol
# (libkeep, batching on and off) with redis-benchmark's GET at pipeline 1:
#   RATIO binary_get throughput ... and RATIO binary_get_batching <metric> on=.. off=.. on/off=..
# Settings (environment): DURATION (s per run, default 2), WARMUP (s, 0.3), ROUNDS (2),
# OPEN_ROUNDS (rounds of the open-loop workloads, 3),
# CONNECTIONS (50), KEYS (10000), VALUE_SIZE (128), RATE (open-loop req/s, 20000),
# BENCH_THREADS (1), WORKLOADS (space-separated subset of the names below), SERVERS (subset of
# redis keep keep2 floor floor2 peer), BIN (build/bin), KEEP_SERVER, KEEP_BENCH, KEEP_FLOOR,
# REDIS_SERVER (/usr/bin/redis-server), PEER_SERVER, PEER_ARGS (extra arguments for it),
# PEER_LABEL (its name in the table), REFERENCE (the server the RATIO lines divide by: redis, or
# keep when comparing two builds of Keep without redis-server).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$ROOT/build/bin}
KEEP_SERVER=${KEEP_SERVER:-$BIN/keep-server}
KEEP_BENCH=${KEEP_BENCH:-$BIN/keep-bench}
KEEP_FLOOR=${KEEP_FLOOR:-$BIN/keep-floor}
REDIS_SERVER=${REDIS_SERVER:-/usr/bin/redis-server}
PEER_SERVER=${PEER_SERVER:-}
PEER_ARGS=${PEER_ARGS:-}
DURATION=${DURATION:-2}
WARMUP=${WARMUP:-0.3}
ROUNDS=${ROUNDS:-2}
OPEN_ROUNDS=${OPEN_ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-50}
KEYS=${KEYS:-10000}
VALUE_SIZE=${VALUE_SIZE:-128}
RATE=${RATE:-20000}
BENCH_THREADS=${BENCH_THREADS:-1}
HOST=127.0.0.1

# name|keep-bench arguments|populate first (1/0)|floors that run it|rounds
# The floor answers every request with a fixed reply, so its cost is the same for any request of
# one shape: it runs the plain GET/SET/PING shapes (p1, p16, open loop), which bound the rest.
# Floors: 2 = both, 1 = the one-thread floor (the two-thread floor is read against keep2's CPU
# per request, which the open loop does not compare), 0 = none. Rounds: empty = ROUNDS. The open
# loop's p99.9 is the 40th-worst of 40,000 latencies: one scheduling hiccup of the machine in a
# run moves it several-fold, so it gets OPEN_ROUNDS rounds and the median rejects one such run
# (the mean of two, which the median of two is, does not).
WORKLOAD_TABLE=(
  "ping|--workload ping|0|2"
  "get_p1|--workload get|1|2"
  "get_p16|--workload get --pipeline 16|1|2"
  "set_p1|--workload set|0|2"
  "set_p16|--workload set --pipeline 16|0|2"
  "mixed|--workload mixed --ratio 9:1|1|0"
  "incr|--workload incr|0|0"
  "ratelimit_native|--workload ratelimit --ratelimit-form native|0|0"
  "ratelimit_lua|--workload ratelimit --ratelimit-form lua|0|0"
  "ratelimit_gcra|--workload ratelimit --ratelimit-form gcra|0|0"
  "ratelimit_native_p16|--workload ratelimit --ratelimit-form native --pipeline 16|0|0"
  "ratelimit_gcra_p16|--workload ratelimit --ratelimit-form gcra --pipeline 16|0|0"
  "ratelimit_lua_p16|--workload ratelimit --ratelimit-form lua --pipeline 16|0|0"
  "lock_native|--workload lock --lock-release native|0|0"
  "lock_lua|--workload lock --lock-release lua|0|0"
  "coord_native|--workload coord --lock-release native|1|0"
  "coord_lua|--workload coord --lock-release lua|1|0"
  "get_open|--workload get --rate $RATE|1|1|$OPEN_ROUNDS"
  "set_open|--workload set --rate $RATE|0|1|$OPEN_ROUNDS"
)
METRICS=(cpu_us_per_req throughput p99_us p999_us)

die() {
  echo "compare.sh: $*" >&2
  exit 1
}

for tool in "$KEEP_BENCH" "$KEEP_FLOOR" "$REDIS_SERVER"; do
  [[ -x $tool ]] || die "$tool is missing: build first (make build)"
done
CLK_TCK=$(getconf CLK_TCK)
WORK=$(mktemp -d /tmp/keep-compare.XXXXXX)

declare -A PID PORT LABEL
STARTED=()

cleanup() {
  local name pid
  for name in "${STARTED[@]}"; do
    pid=${PID[$name]}
    kill -TERM "$pid" 2>/dev/null || true
  done
  for name in "${STARTED[@]}"; do
    pid=${PID[$name]}
    for _ in $(seq 30); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Sets FREE_PORT to a loopback port nobody listens on (the kernel's pick for an ephemeral bind).
USED_PORTS=" "
free_port() {
  while :; do
    FREE_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    [[ $USED_PORTS == *" $FREE_PORT "* ]] || break
  done
  USED_PORTS+="$FREE_PORT "
}

port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# start NAME LABEL COMMAND... (the command gets its port through $P in the arguments)
start_server() {
  local name=$1 label=$2
  shift 2
  free_port
  local port=$FREE_PORT
  local args=("${@//@PORT@/$port}")
  "${args[@]}" >"$WORK/$name.log" 2>&1 &
  PID[$name]=$!
  PORT[$name]=$port
  LABEL[$name]=$label
  STARTED+=("$name")
  for _ in $(seq 100); do
    port_open "$port" && return 0
    kill -0 "${PID[$name]}" 2>/dev/null || break
    sleep 0.05
  done
  cat "$WORK/$name.log" >&2
  die "$label did not start listening on $HOST:$port"
}

# CPU ticks (utime + stime of every thread) of a process, from /proc/PID/stat after the comm field.
cpu_ticks() {
  local stat
  stat=$(<"/proc/$1/stat")
  stat=${stat##*) }
  read -r -a f <<<"$stat"
  echo $((f[11] + f[12]))
}

# A best-effort FLUSHALL so every run starts from the same state (locks, counters, windows).
flushall() {
  {
    exec 3<>"/dev/tcp/$HOST/$1"
    printf '*1\r\n$8\r\nFLUSHALL\r\n' >&3
    read -r -t 5 _ <&3
    exec 3>&-
  } 2>/dev/null || true
}

json_get() { grep -o "\"$1\":[^,}]*" "$2" | head -n1 | cut -d: -f2- | tr -d '"'; }

SERVERS=${SERVERS:-redis keep keep2 floor floor2${PEER_SERVER:+ peer}}
REFERENCE=${REFERENCE:-redis}
for s in $SERVERS; do
  case $s in
    redis) start_server redis redis-server "$REDIS_SERVER" --save "" --appendonly no \
      --bind "$HOST" --port @PORT@ --daemonize no ;;
    keep)
      [[ -x $KEEP_SERVER ]] || die "$KEEP_SERVER is missing: build first (make build)"
      start_server keep "keep 1 shard" "$KEEP_SERVER" --bind "$HOST" --port @PORT@ --shards 1 ;;
    keep2)
      [[ -x $KEEP_SERVER ]] || die "$KEEP_SERVER is missing: build first (make build)"
      start_server keep2 "keep 2 shards" "$KEEP_SERVER" --bind "$HOST" --port @PORT@ --shards 2 ;;
    floor) start_server floor "floor 1 thread" "$KEEP_FLOOR" --bind "$HOST" --port @PORT@ --threads 1 ;;
    floor2) start_server floor2 "floor 2 threads" "$KEEP_FLOOR" --bind "$HOST" --port @PORT@ --threads 2 ;;
    peer)
      [[ -n $PEER_SERVER && -x $PEER_SERVER ]] || die "PEER_SERVER='$PEER_SERVER' is not executable"
      # shellcheck disable=SC2086 # PEER_ARGS is a list of words
      start_server peer "${PEER_LABEL:-$(basename "$PEER_SERVER")}" "$PEER_SERVER" $PEER_ARGS --port @PORT@ ;;
    *) die "unknown server '$s' in SERVERS" ;;
  esac
done

COMMON=(--host "$HOST" --connections "$CONNECTIONS" --threads "$BENCH_THREADS" --keys "$KEYS"
  --value-size "$VALUE_SIZE")
declare -A RESULT NOTE STATUS

selected() {
  [[ -z ${WORKLOADS:-} ]] && return 0
  [[ " $WORKLOADS " == *" $1 "* ]]
}

# probe NAME WORKLOAD ARGS: a few hundred requests; any error reply or a refused setup = n/a.
probe() {
  local name=$1 wl=$2
  shift 2
  local out="$WORK/probe.json" rc=0
  flushall "${PORT[$name]}"
  "$KEEP_BENCH" "${COMMON[@]}" --port "${PORT[$name]}" --connections 2 --threads 1 --requests 300 \
    --json --quiet "$@" >"$out" 2>"$WORK/probe.err" || rc=$?
  if ((rc == 3)); then
    NOTE[$wl|$name]=$(sed -e 's/^keep-bench: //' -e 's/: this workload needs.*//' "$WORK/probe.err" | cut -c1-90)
    return 1
  elif ((rc != 0)); then
    NOTE[$wl|$name]="probe failed: $(cut -c1-100 "$WORK/probe.err")"
    return 1
  fi
  if [[ $(json_get errors "$out") != 0 ]]; then
    NOTE[$wl|$name]="-$(json_get first_error "$out" | cut -c1-90)"
    return 1
  fi
  return 0
}

# run NAME WORKLOAD POPULATE ARGS: one measured run, appending each metric to RESULT.
run_one() {
  local name=$1 wl=$2 populate=$3
  shift 3
  local port=${PORT[$name]} pid=${PID[$name]} out="$WORK/run.json" rc=0
  flushall "$port"
  if ((populate)); then
    "$KEEP_BENCH" "${COMMON[@]}" --port "$port" --populate-only --quiet >/dev/null 2>&1 || true
  fi
  local before after
  before=$(cpu_ticks "$pid")
  "$KEEP_BENCH" "${COMMON[@]}" --port "$port" --duration "$DURATION" --warmup "$WARMUP" \
    --no-populate --json --quiet "$@" >"$out" 2>"$WORK/run.err" || rc=$?
  after=$(cpu_ticks "$pid")
  if ((rc != 0)); then
    STATUS[$wl|$name]=fail
    NOTE[$wl|$name]="run failed: $(head -c 100 "$WORK/run.err")"
    echo "compare.sh: $wl on ${LABEL[$name]} failed: $(cat "$WORK/run.err")" >&2
    return 0
  fi
  local total requests errors
  total=$(json_get requests_total "$out")
  requests=$(json_get requests "$out")
  errors=$(json_get errors "$out")
  local cpu
  cpu=$(awk -v t=$((after - before)) -v hz="$CLK_TCK" -v n="$total" \
    'BEGIN { if (n > 0) printf "%.3f", t / hz * 1e6 / n; else print "n/a" }')
  RESULT[$wl|$name|cpu_us_per_req]+="$cpu "
  RESULT[$wl|$name|throughput]+="$(json_get throughput "$out") "
  RESULT[$wl|$name|p50_us]+="$(json_get p50_us "$out") "
  RESULT[$wl|$name|p99_us]+="$(json_get p99_us "$out") "
  RESULT[$wl|$name|p999_us]+="$(json_get p999_us "$out") "
  RESULT[$wl|$name|errors]+="$errors "
  if [[ $errors != 0 ]]; then
    NOTE[$wl|$name]="$errors error replies in $requests: -$(json_get first_error "$out" | cut -c1-80)"
  fi
}

median() {
  tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) { print "n/a"; exit }
           if (NR % 2) printf "%.3f", v[(NR + 1) / 2]; else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

value() {
  local wl=$1 name=$2 metric=$3
  if [[ ${STATUS[$wl|$name]:-} == n/a ]]; then
    echo n/a
  elif [[ ${STATUS[$wl|$name]:-} == fail && -z ${RESULT[$wl|$name|$metric]:-} ]]; then
    echo fail
  elif [[ $metric == throughput ]]; then
    median "${RESULT[$wl|$name|$metric]:-}" | cut -d. -f1
  else
    median "${RESULT[$wl|$name|$metric]:-}"
  fi
}

runs_on() {
  local name=$1 floors=$2
  case $name in
    floor) ((floors >= 1)) ;;
    floor2) ((floors >= 2)) ;;
    *) return 0 ;;
  esac
}

started_at=$(date +%s)
# What one cache line costs to cross between the two CPUs: a shard hop moves a few such lines
# (a forwarded batch, its replies, ring indices), so this is the machine's share of keep2's cost.
if [[ -x $BIN/keep-core-pingpong ]] && pingpong=$("$BIN/keep-core-pingpong" 2>/dev/null); then
  echo "compare.sh: one cache line's round trip between two CPUs: $pingpong ns (median of 5)"
fi
echo "compare.sh: servers: $(for s in "${STARTED[@]}"; do printf '%s on %s, ' "${LABEL[$s]}" "${PORT[$s]}"; done)"
echo "compare.sh: $ROUNDS rounds ($OPEN_ROUNDS for the open loop) of ${DURATION}s (+${WARMUP}s warm-up) per run, $CONNECTIONS connections, $KEYS keys, ${VALUE_SIZE}-byte values, open loop at $RATE req/s"

for entry in "${WORKLOAD_TABLE[@]}"; do
  IFS='|' read -r wl args populate floors wl_rounds <<<"$entry"
  selected "$wl" || continue
  read -r -a wl_args <<<"$args"
  for name in "${STARTED[@]}"; do
    runs_on "$name" "$floors" || continue
    probe "$name" "$wl" "${wl_args[@]}" || STATUS[$wl|$name]=n/a
  done
  for round in $(seq "${wl_rounds:-$ROUNDS}"); do
    for name in "${STARTED[@]}"; do
      runs_on "$name" "$floors" || continue
      [[ ${STATUS[$wl|$name]:-} != n/a ]] || continue
      printf 'compare.sh: %-17s round %d on %s\n' "$wl" "$round" "${LABEL[$name]}" >&2
      run_one "$name" "$wl" "$populate" "${wl_args[@]}"
    done
  done
done
elapsed=$(($(date +%s) - started_at))

echo
printf '%-17s %-16s %11s %11s %9s %9s %9s  %s\n' workload server cpu_us/req req/s p50_us p99_us p999_us note
for entry in "${WORKLOAD_TABLE[@]}"; do
  IFS='|' read -r wl _ _ floors _ <<<"$entry"
  selected "$wl" || continue
  first=1
  for name in "${STARTED[@]}"; do
    runs_on "$name" "$floors" || continue
    printf '%-17s %-16s %11s %11s %9s %9s %9s  %s\n' "$([[ $first == 1 ]] && echo "$wl")" \
      "${LABEL[$name]}" "$(value "$wl" "$name" cpu_us_per_req)" \
      "$(value "$wl" "$name" throughput)" "$(value "$wl" "$name" p50_us)" \
      "$(value "$wl" "$name" p99_us)" "$(value "$wl" "$name" p999_us)" "${NOTE[$wl|$name]:-}"
    first=0
  done
done
echo

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.3f", a / b; else print "n/a" }'; }

has() { [[ " ${STARTED[*]} " == *" $1 "* ]]; }

for entry in "${WORKLOAD_TABLE[@]}"; do
  IFS='|' read -r wl _ _ floors _ <<<"$entry"
  selected "$wl" || continue
  has "$REFERENCE" || continue
  for metric in "${METRICS[@]}"; do
    r=$(value "$wl" "$REFERENCE" "$metric")
    for name in keep keep2 peer; do
      has "$name" && [[ $name != "$REFERENCE" ]] || continue
      k=$(value "$wl" "$name" "$metric")
      echo "RATIO $wl $metric $name=$k $REFERENCE=$r $name/$REFERENCE=$(ratio "$k" "$r")"
    done
  done
  has redis || continue
  r=$(value "$wl" redis cpu_us_per_req)
  for name in floor floor2; do
    has "$name" && runs_on "$name" "$floors" || continue
    f=$(value "$wl" "$name" cpu_us_per_req)
    echo "RATIO $wl cpu_us_per_req $name=$f redis=$r $name/redis=$(ratio "$f" "$r")"
  done
done
# Keep's native commands against the Redis recipe each replaces (the Lua script by EVALSHA on
# redis-server): the figure the coordination commands exist for.
for pair in "ratelimit_native|ratelimit_lua" "ratelimit_gcra|ratelimit_lua" \
  "ratelimit_native_p16|ratelimit_lua_p16" "ratelimit_gcra_p16|ratelimit_lua_p16" \
  "lock_native|lock_lua" "coord_native|coord_lua"; do
  IFS='|' read -r native recipe <<<"$pair"
  selected "$native" && selected "$recipe" && has redis || continue
  r=$(value "$recipe" redis cpu_us_per_req)
  for name in keep keep2; do
    has "$name" || continue
    k=$(value "$native" "$name" cpu_us_per_req)
    label=${native/_native/}_native_vs_lua
    [[ $native == *gcra* ]] && label=${native/_gcra/}_gcra_vs_lua
    echo "RATIO $label cpu_us_per_req $name=$k redis=$r $name/redis=$(ratio "$k" "$r")"
  done
done

# The binary protocol (design §2.7): GET through libkeep (keep-bench --protocol binary: the
# CONNECTIONS callers share one libkeep connection) on the 2-shard keep-server, batching on and off,
# next to redis-benchmark's RESP GET at pipeline 1 with as many clients against redis-server, in
# the same run. BINARY=0 skips it; REDIS_BENCH_REQUESTS sets redis-benchmark's -n.
BINARY=${BINARY:-1}
REDIS_BENCH_REQUESTS=${REDIS_BENCH_REQUESTS:-200000}
binary_run() {  # binary_run LABEL [keep-bench flags]: appends to BIN_RESULT
  local label=$1 port=${PORT[keep2]} pid=${PID[keep2]} out="$WORK/binary.json" before after
  shift
  flushall "$port"
  "$KEEP_BENCH" --protocol binary --host "$HOST" --port "$port" --keys "$KEYS" \
    --value-size "$VALUE_SIZE" --populate-only --quiet >/dev/null 2>&1 || true
  before=$(cpu_ticks "$pid")
  if ! "$KEEP_BENCH" --protocol binary "${COMMON[@]}" --port "$port" --duration "$DURATION" \
    --warmup "$WARMUP" --no-populate --json --quiet "$@" >"$out" 2>"$WORK/binary.err"; then
    echo "compare.sh: binary get ($label) failed: $(cat "$WORK/binary.err")" >&2
    return 0
  fi
  after=$(cpu_ticks "$pid")
  BIN_RESULT[$label|throughput]+="$(json_get throughput "$out") "
  BIN_RESULT[$label|p99_us]+="$(json_get p99_us "$out") "
  BIN_RESULT[$label|cpu_us_per_req]+="$(awk -v t=$((after - before)) -v hz="$CLK_TCK" \
    -v n="$(json_get requests_total "$out")" 'BEGIN { if (n > 0) printf "%.3f", t / hz * 1e6 / n; else print "n/a" }') "
}
redis_benchmark_run() {
  local pid=${PID[redis]} before after csv rps
  before=$(cpu_ticks "$pid")
  csv=$(redis-benchmark -h "$HOST" -p "${PORT[redis]}" -t get -c "$CONNECTIONS" -P 1 -r "$KEYS" \
    -n "$REDIS_BENCH_REQUESTS" --csv -q 2>/dev/null | grep '^"GET"' || true)
  after=$(cpu_ticks "$pid")
  rps=$(cut -d, -f2 <<<"$csv" | tr -d '"')
  [[ -n $rps ]] || return 0
  BIN_RESULT[redis_p1|throughput]+="$rps "
  BIN_RESULT[redis_p1|p99_us]+="$(awk -v ms="$(cut -d, -f7 <<<"$csv" | tr -d '"')" 'BEGIN { printf "%.1f", ms * 1000 }') "
  BIN_RESULT[redis_p1|cpu_us_per_req]+="$(awk -v t=$((after - before)) -v hz="$CLK_TCK" \
    -v n="$REDIS_BENCH_REQUESTS" 'BEGIN { printf "%.3f", t / hz * 1e6 / n }') "
}
if ((BINARY)) && selected binary_get && has keep2 && has redis && command -v redis-benchmark >/dev/null; then
  declare -A BIN_RESULT
  for round in $(seq "$ROUNDS"); do
    printf 'compare.sh: %-17s round %d\n' binary_get "$round" >&2
    binary_run batching_on
    binary_run batching_off --no-batching
    redis_benchmark_run
  done
  bin_value() {
    local m
    m=$(median "${BIN_RESULT[$1|$2]:-}")
    [[ $2 == throughput && $m != n/a ]] && m=${m%.*}
    echo "$m"
  }
  echo
  printf '%-34s %11s %11s %9s\n' "GET, $CONNECTIONS clients" cpu_us/req req/s p99_us
  for label in batching_off batching_on redis_p1; do
    case $label in
      batching_off) name="keep 2 shards, libkeep, no batching" ;;
      batching_on) name="keep 2 shards, libkeep, batching" ;;
      redis_p1) name="redis-server, redis-benchmark -P 1" ;;
    esac
    printf '%-34s %11s %11s %9s\n' "$name" "$(bin_value $label cpu_us_per_req)" \
      "$(bin_value $label throughput)" "$(bin_value $label p99_us)"
  done
  echo
  on=$(bin_value batching_on throughput)
  echo "RATIO binary_get throughput keep2_binary_batching=$on redis_benchmark_p1=$(bin_value redis_p1 throughput) keep2/redis=$(ratio "$on" "$(bin_value redis_p1 throughput)")"
  for metric in cpu_us_per_req throughput p99_us; do
    a=$(bin_value batching_on $metric)
    b=$(bin_value batching_off $metric)
    echo "RATIO binary_get_batching $metric on=$a off=$b on/off=$(ratio "$a" "$b")"
  done
fi
elapsed=$(($(date +%s) - started_at))
echo "compare.sh: done in ${elapsed}s"
