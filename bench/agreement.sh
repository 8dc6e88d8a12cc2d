#!/usr/bin/env bash
# Whether two runs of bench/compare.sh (or `make bench`) agree: every RATIO figure that both runs
# printed, side by side, with how far apart they are (the larger over the smaller, less one, so
# the order of the runs does not matter), against a tolerance (TOLERANCE, default 0.15).
#
#   bench/agreement.sh RUN1.log RUN2.log
#
# Three groups, each with a count: the figures issue 4 judges (those named by TARGET lines in either
# run), the other CPU-per-request (with its user and system parts) and throughput figures, and the
# latency percentiles. Only the first two can agree run to run: one scheduling hiccup in a run
# moves a p99.9 several-fold, and two identical servers differ by more than 15% on a third of the
# percentile lines (bench/README.md, "Identical servers are the noise gauge"). Exit status 0 when
# both files were read, whatever the figures; 1 when a file is missing or the two runs share no
# RATIO line.
set -euo pipefail

die() {
  echo "agreement.sh: $*" >&2
  exit 1
}

(($# == 2)) || die "usage: agreement.sh RUN1.log RUN2.log (the output of bench/compare.sh or make bench)"
for run in "$1" "$2"; do
  [[ -r $run ]] || die "cannot read '$run'"
done
TOLERANCE=${TOLERANCE:-0.15}
[[ $TOLERANCE =~ ^[0-9]+([.][0-9]+)?$ ]] || die "TOLERANCE='$TOLERANCE' is not a number"

awk -v tolerance="$TOLERANCE" '
  # RATIO <workload> <metric> <a>=<v> <b>=<v> <a>/<b>=<x>; TARGET <workload> <metric> <a>/<b>=<x> ...
  $1 == "RATIO" && NF == 6 {
    split($6, pair, "=")
    key = $2 " " $3 " " pair[1]
    if (FNR == NR) { if (!(key in first)) order[++count] = key; first[key] = pair[2] }
    else second[key] = pair[2]
  }
  $1 == "TARGET" && NF >= 4 {
    split($4, pair, "=")
    judged[$2 " " $3 " " pair[1]] = 1
  }
  function group(key, parts) {
    split(key, parts, " ")
    if (key in judged) return 1
    return parts[2] ~ /^(cpu_us_per_req|user_us_per_req|system_us_per_req|throughput)$/ ? 2 : 3
  }
  END {
    names[1] = "targets"; names[2] = "cpu_throughput"; names[3] = "percentiles"
    titles[1] = "the figures issue 4 judges (TARGET lines)"
    titles[2] = "the other CPU per request (with its user and system parts) and throughput figures"
    titles[3] = "latency percentiles (noise-bound: see bench/README.md)"
    shared = 0
    for (g = 1; g <= 3; g++) {
      printed = 0
      for (i = 1; i <= count; i++) {
        key = order[i]
        if (!(key in second) || group(key) != g) continue
        a = first[key] + 0; b = second[key] + 0
        if (first[key] !~ /^[0-9.]+$/ || second[key] !~ /^[0-9.]+$/ || a <= 0 || b <= 0) continue
        if (!printed) { printf "\n%s\n%-48s %9s %9s %7s\n", titles[g], "figure", "run 1", "run 2", "apart"; printed = 1 }
        apart = (a > b ? a / b : b / a) - 1
        beyond = apart > tolerance + 1e-9
        printf "%-48s %9.3f %9.3f %6.1f%%%s\n", key, a, b, 100 * apart, beyond ? "  beyond" : ""
        ++total[g]; ++shared
        if (beyond) { ++off[g]; list[g] = list[g] sprintf("%s%s (%.1f%%)", list[g] == "" ? "" : "; ", key, 100 * apart) }
      }
    }
    if (shared == 0) { print "agreement.sh: the two runs share no RATIO line" > "/dev/stderr"; exit 1 }
    print ""
    for (g = 1; g <= 3; g++) {
      if (!total[g]) continue
      # The judged figures are few and each matters: name those apart. The rest are marked above.
      printf "AGREEMENT %s %d of %d within %g%%%s\n", names[g], total[g] - off[g], total[g], 100 * tolerance,
             g == 1 && off[g] ? " (beyond: " list[g] ")" : ""
    }
  }
' "$1" "$2"
