#!/usr/bin/env bash
# Side-by-side comparison: keep-server (1 and 2 shards) against redis-server on this machine, with
# the floor (keep-floor, 1 and 2 threads) as the reference for what the kernel alone costs, and an
# optional third server (PEER_SERVER=/path/to/binary, started with --port P).
#
# Every workload runs against every server in turn, several rounds (servers alternate within each
# round, so drift hits all of them). Server CPU per request comes from /proc/PID/stat (utime +
# stime around the run), throughput and latency from keep-bench --json. Output: one table, then
# one machine-readable line per figure:
#   RATIO <workload> <metric> keep=<v> redis=<v> keep/redis=<x>
# where keep= and redis= are each server's figure over the rounds (the mean for CPU per request and
# throughput, the median for latency) and keep/redis is, for CPU and throughput, the mean over
# rounds of the two servers' ratio within the round, for latency the ratio of the two medians (see
# bench/README.md, "Figures"). What a second thread costs (keep2/keep, floor2/floor) is also split
# into user and system time per request (user_us_per_req, system_us_per_req: the ratio of means).
# Method and how to read it: bench/README.md.
#
# With redis and keep2 among the servers, a last section compares GET over the binary protocol
# (libkeep, batching on and off) with redis-benchmark's GET at pipeline 1:
#   RATIO binary_get throughput ... and RATIO binary_get_batching <metric> on=.. off=.. on/off=..
#
# Between the RATIO lines and that section, issue 4's targets, each judged on this run's figures
# (those whose servers and workloads ran), and one line counting them:
#   TARGET <workload> <metric> keep/redis=<x> <=0.8 met|missed
# and, for each CPU target against redis-server, the one-thread floor judged by the same bound, so a
# run says itself where the kernel's path alone is above it (bench/README.md, "The floor moves"):
#   FLOOR <workload> cpu_us_per_req floor/redis=<x> <=0.8 met|missed
# and, where a sharding target missed, one line with what the second thread cost the floor
# (floor2/floor) and Keep (keep2/keep), in all and in user and system time, from RATIO lines of
# their own.
# Whether two runs agree: bench/agreement.sh RUN1.log RUN2.log.
# Settings (environment): ROUNDS (rounds of the plain shapes the targets judge: GET and SET at
# pipeline 1 and 16; default 8), DURATION (s per run of those and of the binary section, 0.6),
# EXTRA_ROUNDS (ping, the other closed-loop workloads and the binary section, 3), EXTRA_DURATION
# (s per run of ping and the other closed-loop workloads, 0.4), WARMUP (s, 0.2), OPEN_ROUNDS
# (rounds of the open-loop workloads, 5), OPEN_DURATION (s per open-loop run, 1.5),
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
DURATION=${DURATION:-0.6}
WARMUP=${WARMUP:-0.2}
ROUNDS=${ROUNDS:-8}
EXTRA_ROUNDS=${EXTRA_ROUNDS:-3}
EXTRA_DURATION=${EXTRA_DURATION:-0.4}
OPEN_ROUNDS=${OPEN_ROUNDS:-5}
OPEN_DURATION=${OPEN_DURATION:-1.5}
CONNECTIONS=${CONNECTIONS:-50}
KEYS=${KEYS:-10000}
VALUE_SIZE=${VALUE_SIZE:-128}
RATE=${RATE:-20000}
BENCH_THREADS=${BENCH_THREADS:-1}
HOST=127.0.0.1

# name|keep-bench arguments|populate first (1/0)|servers that run it|rounds|seconds per run
# The floor answers every request with a fixed reply, so its cost is the same for any request of one
# shape: it runs the plain GET/SET/PING shapes (p1, p16, open loop), which bound the rest. The open
# loop's targets judge one shard against redis-server, and the one-thread floor's tails there are
# the machine's own: two shards and the two-thread floor do not run it (the two-thread floor is read
# against keep2's CPU per request at p1 and p16). Rounds and seconds: empty = ROUNDS and DURATION.
# GET and SET at pipeline 1 and 16 are what the targets judge, and a run's figure moves with the
# state the shared machine is in during it, which a longer run does not average out (runs of 0.7 s
# and of 2 s spread alike here, keep/redis CPU per request 0.55-0.82 run to run): so they get many
# short rounds rather than a few long ones. The workloads no target judges, PING among them, get
# EXTRA_ROUNDS runs of EXTRA_DURATION: `make bench` has to fit in 10 minutes from a fresh clone,
# whose build alone took 112-133 s on 2026-12-06's seventh VM. The open loop's p99.9 is the
# 30th-worst of 30,000 latencies (1.5 s at 20000/s): one scheduling hiccup of the machine in a run
# (the VM's own housekeeping takes a CPU for 1-8 ms every second or two) moves it several-fold, so
# it gets OPEN_ROUNDS rounds and the median rejects up to two such runs (with three rounds, one run
# of keep's open-loop SET at 3.4 ms made its median p99.9 1.18x redis's in one make bench).
# Who runs a workload (of the servers started: SERVERS chooses among them), and how long.
ALL="redis keep keep2 floor floor2 peer"
STORING="redis keep keep2 peer"
OPEN_LOOP="redis keep floor peer"
UNJUDGED="$EXTRA_ROUNDS|$EXTRA_DURATION"
WORKLOAD_TABLE=(
  "ping|--workload ping|0|$ALL|$UNJUDGED"
  "get_p1|--workload get|1|$ALL"
  "get_p16|--workload get --pipeline 16|1|$ALL"
  "set_p1|--workload set|0|$ALL"
  "set_p16|--workload set --pipeline 16|0|$ALL"
  "mixed|--workload mixed --ratio 9:1|1|$STORING|$UNJUDGED"
  "incr|--workload incr|0|$STORING|$UNJUDGED"
  "ratelimit_native|--workload ratelimit --ratelimit-form native|0|$STORING|$UNJUDGED"
  "ratelimit_lua|--workload ratelimit --ratelimit-form lua|0|$STORING|$UNJUDGED"
  "ratelimit_gcra|--workload ratelimit --ratelimit-form gcra|0|$STORING|$UNJUDGED"
  "ratelimit_native_p16|--workload ratelimit --ratelimit-form native --pipeline 16|0|$STORING|$UNJUDGED"
  "ratelimit_gcra_p16|--workload ratelimit --ratelimit-form gcra --pipeline 16|0|$STORING|$UNJUDGED"
  "ratelimit_lua_p16|--workload ratelimit --ratelimit-form lua --pipeline 16|0|$STORING|$UNJUDGED"
  "lock_native|--workload lock --lock-release native|0|$STORING|$UNJUDGED"
  "lock_lua|--workload lock --lock-release lua|0|$STORING|$UNJUDGED"
  "coord_native|--workload coord --lock-release native|1|$STORING|$UNJUDGED"
  "coord_lua|--workload coord --lock-release lua|1|$STORING|$UNJUDGED"
  "get_open|--workload get --rate $RATE|1|$OPEN_LOOP|$OPEN_ROUNDS|$OPEN_DURATION"
  "set_open|--workload set --rate $RATE|0|$OPEN_LOOP|$OPEN_ROUNDS|$OPEN_DURATION"
)
METRICS=(cpu_us_per_req throughput p99_us p999_us)
# What each run records: CPU per request also as its user and system parts, the server's own code
# and the kernel's path (read for what a second thread costs, below).
RUN_METRICS=(cpu_us_per_req user_us_per_req system_us_per_req throughput p50_us p99_us p999_us)
# CPU per request and throughput add up over requests and seconds: a server's figure is its mean
# over rounds, and against another server the mean of the two's ratios within each round (see
# summarize). The user and system parts are means too, but a run holds few clock ticks of either
# (the floor's user time at pipeline 16: about four), so a round's ratio of them is mostly
# rounding: against another server they take the ratio of the two means.
is_paired() { [[ $1 == cpu_us_per_req || $1 == throughput ]]; }

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

# The helpers below set variables instead of printing: a command substitution forks, and at a few
# hundred runs the forks of a dozen per run took longer than a third of the runs themselves.

# cpu_ticks PID: USER_TICKS and SYSTEM_TICKS = utime and stime of every thread, from
# /proc/PID/stat after the comm field, and TICKS their sum.
cpu_ticks() {
  local stat f
  read -r stat <"/proc/$1/stat"
  stat=${stat##*) }
  read -r -a f <<<"$stat"
  USER_TICKS=${f[11]}
  SYSTEM_TICKS=${f[12]}
  TICKS=$((USER_TICKS + SYSTEM_TICKS))
}

# steal_ticks: STEAL_TICKS and ALL_TICKS = the time the hypervisor gave this VM's CPUs to others, and
# the time of all CPUs, from /proc/stat's first line (STEAL_TICKS 0 where it has no steal column).
steal_ticks() {
  local f
  read -r -a f </proc/stat
  STEAL_TICKS=${f[8]:-0}
  ALL_TICKS=$((f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7] + STEAL_TICKS))
}

# json_load FILE: J[field] = the value of every field of keep-bench's one-line JSON (flat: numbers
# and strings, strings unquoted).
declare -A J
json_load() {
  local rest="" value re='"([A-Za-z0-9_]+)":("([^"\\]|\\.)*"|[^],}{[]*)'
  J=()
  IFS= read -r -d '' rest <"$1" || true
  while [[ $rest =~ $re ]]; do
    value=${BASH_REMATCH[2]}
    [[ $value == \"* ]] && value=${value:1:${#value}-2}
    J[${BASH_REMATCH[1]}]=$value
    rest=${rest#*"${BASH_REMATCH[0]}"}
  done
}

# us_per_request TICKS REQUESTS: US = server CPU per request in microseconds, 3 decimals.
us_per_request() {
  if (($2 > 0)); then
    local ns=$((($1 * 1000000000 / CLK_TCK + $2 / 2) / $2))
    printf -v US '%d.%03d' $((ns / 1000)) $((ns % 1000))
  else
    US=n/a
  fi
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
declare -A RESULT BY_ROUND NOTE STATUS ROUNDS_OF

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
  json_load "$out"
  if [[ ${J[errors]} != 0 ]]; then
    NOTE[$wl|$name]="-${J[first_error]:0:90}"
    return 1
  fi
  return 0
}

# run NAME WORKLOAD ROUND SECONDS POPULATE ARGS: one measured run, appending each metric to
# RESULT and keeping it by round in BY_ROUND.
run_one() {
  local name=$1 wl=$2 round=$3 seconds=$4 populate=$5
  shift 5
  local port=${PORT[$name]} pid=${PID[$name]} out="$WORK/run.json" rc=0
  LAST_RUN=failed
  flushall "$port"
  if ((populate)); then
    "$KEEP_BENCH" "${COMMON[@]}" --port "$port" --populate-only --quiet >/dev/null 2>&1 || true
  fi
  local user_before system_before steal_before all_before
  cpu_ticks "$pid"
  user_before=$USER_TICKS
  system_before=$SYSTEM_TICKS
  steal_ticks
  steal_before=$STEAL_TICKS
  all_before=$ALL_TICKS
  "$KEEP_BENCH" "${COMMON[@]}" --port "$port" --duration "$seconds" --warmup "$WARMUP" \
    --no-populate --json --quiet "$@" >"$out" 2>"$WORK/run.err" || rc=$?
  cpu_ticks "$pid"
  steal_ticks
  if ((rc != 0)); then
    STATUS[$wl|$name]=fail
    NOTE[$wl|$name]="run failed: $(head -c 100 "$WORK/run.err")"
    echo "compare.sh: $wl on ${LABEL[$name]} failed: $(cat "$WORK/run.err")" >&2
    return 0
  fi
  json_load "$out"
  local user=$((USER_TICKS - user_before)) system=$((SYSTEM_TICKS - system_before))
  us_per_request $((user + system)) "${J[requests_total]}"
  J[cpu_us_per_req]=$US
  us_per_request "$user" "${J[requests_total]}"
  J[user_us_per_req]=$US
  us_per_request "$system" "${J[requests_total]}"
  J[system_us_per_req]=$US
  LAST_RUN="${J[cpu_us_per_req]} us/req, ${J[throughput]%.*} req/s, p99 ${J[p99_us]} us,"
  LAST_RUN+=" p99.9 ${J[p999_us]} us, steal $((STEAL_TICKS - steal_before)) of"
  LAST_RUN+=" $((ALL_TICKS - all_before)) ticks"
  local metric
  for metric in "${RUN_METRICS[@]}"; do
    RESULT[$wl|$name|$metric]+="${J[$metric]} "
    BY_ROUND[$wl|$name|$metric|$round]=${J[$metric]}
  done
  if [[ ${J[errors]} != 0 ]]; then
    NOTE[$wl|$name]="${J[errors]} error replies in ${J[requests]}: -${J[first_error]:0:80}"
  fi
}

median() {
  tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) { print "n/a"; exit }
           if (NR % 2) printf "%.3f", v[(NR + 1) / 2]; else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# summarize: SUMMARY[M|wl|name|metric] = a server's figure over its rounds, and for CPU per request
# and throughput SUMMARY[P|wl|a|b|metric] = the mean over rounds of a's figure over b's in the same
# round, for every two servers (see ratio_line), all in one awk. CPU per request (and its user and
# system parts) and throughput are averaged: they add up over requests and seconds, and a server's
# runs here fall into a fast and a slow mode of the machine (redis-server's SET at pipeline 16:
# 1.1-1.25 or 1.6-2.2 us per request), where the median of eight jumps from one mode to the other as
# the count in each moves by one. The latency percentiles take the median: one hiccup moves a run's
# p99.9 several-fold.
declare -A SUMMARY
summarize() {
  local key wl name other metric round list k v
  while read -r k v; do SUMMARY[$k]=$v; done < <(
    for key in "${!RESULT[@]}"; do
      echo "M|$key ${RESULT[$key]}"
      IFS='|' read -r wl name metric <<<"$key"
      is_paired "$metric" || continue
      for other in "${STARTED[@]}"; do
        [[ $other != "$name" && -n ${RESULT[$wl|$other|$metric]:-} ]] || continue
        list=""
        for ((round = 1; round <= ROUNDS_OF[$wl]; round++)); do
          list+="${BY_ROUND[$wl|$name|$metric|$round]:-n/a}/${BY_ROUND[$wl|$other|$metric|$round]:-n/a} "
        done
        echo "P|$wl|$name|$other|$metric $list"
      done
    done | awk '{
      n = 0
      mean = $1 !~ /\|p[0-9]+_us$/
      for (i = 2; i <= NF; i++) {
        if (split($i, ab, "/") == 2) {
          if (ab[1] + 0 > 0 && ab[2] + 0 > 0) v[++n] = ab[1] / ab[2]
        } else if ($i ~ /^[0-9.]+$/) v[++n] = $i + 0
      }
      for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      if (n == 0) { print $1, "n/a"; next }
      if (mean) { sum = 0; for (i = 1; i <= n; i++) sum += v[i]; printf "%s %.3f\n", $1, sum / n }
      else printf "%s %.3f\n", $1, (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }')
}

# value WL NAME METRIC: V = the server's figure over its rounds (n/a, or fail if every run failed).
value() {
  local wl=$1 name=$2 metric=$3
  if [[ ${STATUS[$wl|$name]:-} == n/a ]]; then
    V=n/a
  elif [[ ${STATUS[$wl|$name]:-} == fail && -z ${RESULT[$wl|$name|$metric]:-} ]]; then
    V=fail
  else
    V=${SUMMARY[M|$wl|$name|$metric]:-n/a}
    if [[ $metric == throughput ]]; then V=${V%.*}; fi
  fi
}

has() { [[ " ${STARTED[*]} " == *" $1 "* ]]; }
# runs_on SERVER RUNNERS: the server was started and is among the workload's runners.
runs_on() { has "$1" && [[ " $2 " == *" $1 "* ]]; }

started_at=$(date +%s)
# What one cache line costs to cross between the two CPUs: a shard hop moves a few such lines
# (a forwarded batch, its replies, ring indices), so this is the machine's share of keep2's cost.
if [[ -x $BIN/keep-core-pingpong ]] && pingpong=$("$BIN/keep-core-pingpong" 2>/dev/null); then
  echo "compare.sh: one cache line's round trip between two CPUs: $pingpong ns (median of 5)"
fi
echo "compare.sh: servers: $(for s in "${STARTED[@]}"; do printf '%s on %s, ' "${LABEL[$s]}" "${PORT[$s]}"; done)"
echo "compare.sh: $ROUNDS rounds of ${DURATION}s of the shapes the targets judge and $EXTRA_ROUNDS of ${EXTRA_DURATION}s of the others (+${WARMUP}s warm-up per run); open loop at $RATE req/s, $OPEN_ROUNDS rounds of ${OPEN_DURATION}s; $CONNECTIONS connections, $KEYS keys, ${VALUE_SIZE}-byte values"

max_rounds=0
for entry in "${WORKLOAD_TABLE[@]}"; do
  IFS='|' read -r wl args _ runners wl_rounds _ <<<"$entry"
  selected "$wl" || continue
  read -r -a wl_args <<<"$args"
  ROUNDS_OF[$wl]=${wl_rounds:-$ROUNDS}
  if ((ROUNDS_OF[$wl] > max_rounds)); then max_rounds=${ROUNDS_OF[$wl]}; fi
  for name in "${STARTED[@]}"; do
    runs_on "$name" "$runners" || continue
    probe "$name" "$wl" "${wl_args[@]}" || STATUS[$wl|$name]=n/a
  done
done
# Rounds outermost: each round runs every workload once on every server. The machine's slow spells
# last seconds (one server's CPU per request up by 60% for two 2 s runs in a row, user and system
# time alike), and a workload whose rounds all ran within one minute could catch one spell in
# several of them; spread over the whole script, the spells fall on workloads about evenly.
for ((round = 1; round <= max_rounds; round++)); do
  for entry in "${WORKLOAD_TABLE[@]}"; do
    IFS='|' read -r wl args populate runners _ wl_seconds <<<"$entry"
    selected "$wl" && ((round <= ROUNDS_OF[$wl])) || continue
    read -r -a wl_args <<<"$args"
    for name in "${STARTED[@]}"; do
      runs_on "$name" "$runners" || continue
      [[ ${STATUS[$wl|$name]:-} != n/a ]] || continue
      run_one "$name" "$wl" "$round" "${wl_seconds:-$DURATION}" "$populate" "${wl_args[@]}"
      printf 'compare.sh: %-17s round %d on %-16s %s\n' "$wl" "$round" "${LABEL[$name]}" "$LAST_RUN" >&2
    done
  done
done
summarize

echo
printf '%-17s %-16s %11s %11s %9s %9s %9s  %s\n' workload server cpu_us/req req/s p50_us p99_us p999_us note
for entry in "${WORKLOAD_TABLE[@]}"; do
  IFS='|' read -r wl _ _ runners _ <<<"$entry"
  selected "$wl" || continue
  first=$wl
  for name in "${STARTED[@]}"; do
    runs_on "$name" "$runners" || continue
    row=()
    for metric in cpu_us_per_req throughput p50_us p99_us p999_us; do
      value "$wl" "$name" "$metric"
      row+=("$V")
    done
    printf '%-17s %-16s %11s %11s %9s %9s %9s  %s\n' "$first" "${LABEL[$name]}" "${row[@]}" \
      "${NOTE[$wl|$name]:-}"
    first=""
  done
done
echo

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.3f", a / b; else print "n/a" }'; }

# ratio_line WORKLOAD METRIC A B: the RATIO line of A against B: each one's figure over its
# rounds, then for CPU per request and throughput (is_paired) the mean over rounds of A's figure
# over B's in the same round (see summarize). Their runs are seconds apart, so what the machine
# drifts by between rounds cancels (here one server's CPU per request moved from 9 to 17 us over
# minutes, and back); the ratio of the two servers' means would keep it. Rounds where either run
# failed are left out. A percentile is not drift but hiccups, independent from run to run and
# several-fold: there the ratio of the two medians, each of which has dropped its server's worst
# runs (a round's ratio carries the hiccup of either run: open-loop SET p99 keep/redis was 3.4,
# 0.78 and 1.18 in three rounds whose medians were 467 and 557 us). The user and system parts of
# CPU per request: the ratio of the two means (see is_paired).
# ratio_of WORKLOAD METRIC A B: VA, VB = the two figures, R = the ratio ratio_line prints.
ratio_of() {
  local wl=$1 metric=$2 a=$3 b=$4
  value "$wl" "$a" "$metric"
  VA=$V
  value "$wl" "$b" "$metric"
  VB=$V
  if is_paired "$metric"; then
    R=${SUMMARY[P|$wl|$a|$b|$metric]:-n/a}
  else
    R=$(ratio "$VA" "$VB")
  fi
}
ratio_line() {
  ratio_of "$@"
  echo "RATIO $1 $2 $3=$VA $4=$VB $3/$4=$R"
}

for entry in "${WORKLOAD_TABLE[@]}"; do
  IFS='|' read -r wl _ _ runners _ <<<"$entry"
  selected "$wl" || continue
  has "$REFERENCE" || continue
  for metric in "${METRICS[@]}"; do
    for name in keep keep2 peer; do
      runs_on "$name" "$runners" && [[ $name != "$REFERENCE" ]] || continue
      ratio_line "$wl" "$metric" "$name" "$REFERENCE"
    done
  done
  has redis || continue
  for name in floor floor2; do
    runs_on "$name" "$runners" || continue
    ratio_line "$wl" cpu_us_per_req "$name" redis
  done
done
# Keep against the floor with as many threads: what Keep spends above the kernel's path, and for
# two shards the sharding target (keep2/floor2 at pipeline 1 and 16). Then what a second thread
# costs each: two shards against one, the two-thread floor against the one-thread floor, and where
# the floor runs too, that cost's user and system parts: the target takes it to be the kernel's,
# and a second shard's forwarding shows in Keep's user time.
for entry in "${WORKLOAD_TABLE[@]}"; do
  IFS='|' read -r wl _ _ runners _ <<<"$entry"
  selected "$wl" || continue
  for pair in keep:floor keep2:floor2 keep2:keep floor2:floor; do
    IFS=: read -r a b <<<"$pair"
    runs_on "$a" "$runners" && runs_on "$b" "$runners" || continue
    ratio_line "$wl" cpu_us_per_req "$a" "$b"
  done
  runs_on floor "$runners" && runs_on floor2 "$runners" || continue
  for pair in keep2:keep floor2:floor; do
    IFS=: read -r a b <<<"$pair"
    runs_on "$a" "$runners" && runs_on "$b" "$runners" || continue
    ratio_line "$wl" user_us_per_req "$a" "$b"
    ratio_line "$wl" system_us_per_req "$a" "$b"
  done
done
# Keep's native commands against the Redis recipe each replaces (the Lua script by EVALSHA on
# redis-server): the figure the coordination commands exist for.
for pair in "ratelimit_native|ratelimit_lua" "ratelimit_gcra|ratelimit_lua" \
  "ratelimit_native_p16|ratelimit_lua_p16" "ratelimit_gcra_p16|ratelimit_lua_p16" \
  "lock_native|lock_lua" "coord_native|coord_lua"; do
  IFS='|' read -r native recipe <<<"$pair"
  selected "$native" && selected "$recipe" && has redis || continue
  value "$recipe" redis cpu_us_per_req
  r=$V
  for name in keep keep2; do
    has "$name" || continue
    value "$native" "$name" cpu_us_per_req
    k=$V
    label=${native/_native/}_native_vs_lua
    [[ $native == *gcra* ]] && label=${native/_gcra/}_gcra_vs_lua
    echo "RATIO $label cpu_us_per_req $name=$k redis=$r $name/redis=$(ratio "$k" "$r")"
  done
done

# Issue 4's targets (workload|metric|server|against|bound), each judged on this run's figures: CPU
# per request of one shard against redis-server, of two shards against the two-thread floor,
# throughput at pipeline 16, and the open-loop tails. A target whose servers or workload did not run
# is left out and counted as not measured.
TARGETS=(
  "get_p1|cpu_us_per_req|keep|redis|<=0.8" "set_p1|cpu_us_per_req|keep|redis|<=0.8"
  "get_p16|cpu_us_per_req|keep|redis|<=0.5" "set_p16|cpu_us_per_req|keep|redis|<=0.5"
  "get_p1|cpu_us_per_req|keep2|floor2|<=1.2" "set_p1|cpu_us_per_req|keep2|floor2|<=1.2"
  "get_p16|cpu_us_per_req|keep2|floor2|<=1.2" "set_p16|cpu_us_per_req|keep2|floor2|<=1.2"
  "get_p16|throughput|keep|redis|>=1.2" "set_p16|throughput|keep|redis|>=1.2"
  "get_open|p99_us|keep|redis|<=1" "get_open|p999_us|keep|redis|<=1"
  "set_open|p99_us|keep|redis|<=1" "set_open|p999_us|keep|redis|<=1"
)
# judge RATIO BOUND: met or missed, BOUND being <=x or >=x.
judge() {
  awk -v r="$1" -v op="${2:0:2}" -v limit="${2:2}" \
    'BEGIN { ok = op == "<=" ? r + 0 <= limit + 0 : r + 0 >= limit + 0; print ok ? "met" : "missed" }'
}
targets_met=0
targets_judged=0
targets_missed=""
sharding_missed=""  # workloads whose sharding target (keep2/floor2) missed
for target in "${TARGETS[@]}"; do
  IFS='|' read -r wl metric a b bound <<<"$target"
  selected "$wl" && has "$a" && has "$b" || continue
  ratio_of "$wl" "$metric" "$a" "$b"
  [[ $R != n/a ]] || continue
  verdict=$(judge "$R" "$bound")
  echo "TARGET $wl $metric $a/$b=$R $bound $verdict"
  ((++targets_judged))
  if [[ $verdict == met ]]; then
    ((++targets_met))
  else
    targets_missed+=" $wl $metric $a/$b=$R;"
    if [[ $a/$b == keep2/floor2 ]]; then sharding_missed+=" $wl"; fi
  fi
done
if ((targets_judged > 0)); then
  summary="compare.sh: issue 4's targets: $targets_met of $targets_judged met"
  if ((targets_judged < ${#TARGETS[@]})); then
    summary+=", $((${#TARGETS[@]} - targets_judged)) not measured in this run"
  fi
  echo "$summary${targets_missed:+ (missed:${targets_missed%;})}"
fi
floors_judged=0
floors_above=0
floors_missed=""
for target in "${TARGETS[@]}"; do
  IFS='|' read -r wl metric a b bound <<<"$target"
  [[ $metric == cpu_us_per_req && $a == keep && $b == redis ]] || continue
  selected "$wl" && has floor && has redis || continue
  ratio_of "$wl" "$metric" floor redis
  [[ $R != n/a ]] || continue
  verdict=$(judge "$R" "$bound")
  echo "FLOOR $wl $metric floor/redis=$R $bound $verdict"
  ((++floors_judged))
  if [[ $verdict == missed ]]; then
    ((++floors_above))
    floors_missed+=" $wl floor/redis=$R;"
  fi
done
if ((floors_above > 0)); then
  floors_missed=${floors_missed%;}
  echo "compare.sh: the one-thread floor, which stores nothing, is itself above the bound of" \
    "$floors_above of the $floors_judged CPU targets against redis-server in this run:" \
    "${floors_missed# }"
fi
# Where a sharding target missed, what the second thread cost the floor and Keep, in all and in
# user and system time: the target (keep2/floor2 <= 1.2) takes a second thread to cost any server
# 1.5-2x, the kernel's share; where the floor's second thread costs little, it asks two shards to
# cost about what one does, and a second shard's own work shows in Keep's user time.
second_thread_costs=""
for wl in $sharding_missed; do
  has keep && has floor || continue
  second_thread_costs+=" $wl"
  for pair in floor2:floor keep2:keep; do
    IFS=: read -r a b <<<"$pair"
    ratio_of "$wl" cpu_us_per_req "$a" "$b"
    second_thread_costs+=" $a/$b=$R"
    ratio_of "$wl" user_us_per_req "$a" "$b"
    second_thread_costs+=" (user $R,"
    ratio_of "$wl" system_us_per_req "$a" "$b"
    second_thread_costs+=" system $R)"
  done
  second_thread_costs+=";"
done
if [[ -n $second_thread_costs ]]; then
  second_thread_costs=${second_thread_costs%;}
  echo "compare.sh: where two shards missed the two-thread floor's bound, the second thread cost" \
    "the floor and Keep, per request:${second_thread_costs} (the bound takes a second thread to cost" \
    "any server 1.5-2x)"
fi

# The binary protocol (design §2.7): GET through libkeep (keep-bench --protocol binary: the
# CONNECTIONS callers share one libkeep connection) on the 2-shard keep-server, batching on and off,
# next to redis-benchmark's RESP GET at pipeline 1 with as many clients against redis-server, in
# the same run. BINARY=0 skips it; REDIS_BENCH_REQUESTS sets redis-benchmark's -n.
BINARY=${BINARY:-1}
REDIS_BENCH_REQUESTS=${REDIS_BENCH_REQUESTS:-100000}
binary_run() {  # binary_run LABEL [keep-bench flags]: appends to BIN_RESULT
  local label=$1 port=${PORT[keep2]} pid=${PID[keep2]} out="$WORK/binary.json" before
  shift
  flushall "$port"
  "$KEEP_BENCH" --protocol binary --host "$HOST" --port "$port" --keys "$KEYS" \
    --value-size "$VALUE_SIZE" --populate-only --quiet >/dev/null 2>&1 || true
  cpu_ticks "$pid"
  before=$TICKS
  if ! "$KEEP_BENCH" --protocol binary "${COMMON[@]}" --port "$port" --duration "$DURATION" \
    --warmup "$WARMUP" --no-populate --json --quiet "$@" >"$out" 2>"$WORK/binary.err"; then
    echo "compare.sh: binary get ($label) failed: $(cat "$WORK/binary.err")" >&2
    return 0
  fi
  cpu_ticks "$pid"
  json_load "$out"
  us_per_request $((TICKS - before)) "${J[requests_total]}"
  BIN_RESULT[$label|throughput]+="${J[throughput]} "
  BIN_RESULT[$label|p99_us]+="${J[p99_us]} "
  BIN_RESULT[$label|cpu_us_per_req]+="$US "
}
redis_benchmark_run() {
  local pid=${PID[redis]} before csv rps
  cpu_ticks "$pid"
  before=$TICKS
  csv=$(redis-benchmark -h "$HOST" -p "${PORT[redis]}" -t get -c "$CONNECTIONS" -P 1 -r "$KEYS" \
    -n "$REDIS_BENCH_REQUESTS" --csv -q 2>/dev/null | grep '^"GET"' || true)
  cpu_ticks "$pid"
  rps=$(cut -d, -f2 <<<"$csv" | tr -d '"')
  [[ -n $rps ]] || return 0
  BIN_RESULT[redis_p1|throughput]+="$rps "
  BIN_RESULT[redis_p1|p99_us]+="$(awk -v ms="$(cut -d, -f7 <<<"$csv" | tr -d '"')" 'BEGIN { printf "%.1f", ms * 1000 }') "
  us_per_request $((TICKS - before)) "$REDIS_BENCH_REQUESTS"
  BIN_RESULT[redis_p1|cpu_us_per_req]+="$US "
}
if ((BINARY)) && selected binary_get && has keep2 && has redis && command -v redis-benchmark >/dev/null; then
  declare -A BIN_RESULT
  for round in $(seq "$EXTRA_ROUNDS"); do
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
