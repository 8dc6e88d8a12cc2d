"""bench/compare.sh end to end, on a tiny configuration: every server gets a run per round, each
run's figures are printed as it ends, and the RATIO lines hold what bench/README.md says they do
(for CPU per request: each server's mean over rounds, and the mean over rounds of the two
servers' ratio within a round; for percentiles the quotient of the two medians). Settings it
cannot use fail with a message, not a half-printed table.
"""

from __future__ import annotations

import math
import os
import re
import statistics
import subprocess
from pathlib import Path

import pytest
from helpers.server import keep_bin

pytestmark = [pytest.mark.keep_only, pytest.mark.timeout(120)]

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "compare.sh"
RUN_LINE = re.compile(r"^compare\.sh: (\S+) +round (\d+) on (.+?) +([0-9.]+) us/req, (\d+) req/s")
LABELS = {"redis-server": "redis", "keep 1 shard": "keep", "floor 1 thread": "floor",
          "keep 2 shards": "keep2", "floor 2 threads": "floor2"}


def run_compare(timeout: float = 100, **settings: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BIN": str(keep_bin().parent), **settings}
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True,
                          timeout=timeout)


def ratio_lines(stdout: str) -> dict[tuple[str, str, str, str], tuple[float, float, float]]:
    """(workload, metric, a, b) -> (a's value, b's value, a/b) from the RATIO lines."""
    lines = {}
    for line in stdout.splitlines():
        m = re.fullmatch(r"RATIO (\S+) (\S+) (\w+)=(\S+) (\w+)=(\S+) (\w+)/(\w+)=(\S+)", line)
        if m:
            wl, metric, a, va, b, vb, ra, rb, r = m.groups()
            assert (ra, rb) == (a, b), line
            lines[(wl, metric, a, b)] = (float(va), float(vb), math.nan if r == "n/a" else float(r))
    return lines


def test_cpu_ratios_are_means_of_rounds_and_of_per_round_ratios():
    rounds = 3
    # PING runs as the workloads no target judges, GET at pipeline 1 as a judged one: both set alike.
    result = run_compare(SERVERS="redis keep floor", WORKLOADS="ping get_p1", ROUNDS=str(rounds),
                         EXTRA_ROUNDS=str(rounds), DURATION="0.2", EXTRA_DURATION="0.2",
                         WARMUP="0.05", BINARY="0")
    assert result.returncode == 0, result.stderr
    assert "compare.sh: done in" in result.stdout

    cpu: dict[tuple[str, str], dict[int, float]] = {}
    for line in result.stderr.splitlines():
        m = RUN_LINE.match(line)
        if m:
            wl, rnd, label, us = m.group(1), int(m.group(2)), m.group(3), float(m.group(4))
            cpu.setdefault((wl, LABELS[label]), {})[rnd] = us
            # The host's share of the run, for reading its tails: /proc/stat's steal time over
            # the same window, against all CPUs' time (some ticks, however short the run).
            steal = re.search(r", steal (\d+) of (\d+) ticks$", line)
            assert steal, line
            assert 0 <= int(steal.group(1)) <= int(steal.group(2)), line
            assert int(steal.group(2)) > 0, line
    for wl in ("ping", "get_p1"):
        for name in ("redis", "keep", "floor"):
            assert sorted(cpu[(wl, name)]) == list(range(1, rounds + 1)), (wl, name)

    lines = ratio_lines(result.stdout)
    for wl in ("ping", "get_p1"):
        for a, b in (("keep", "redis"), ("floor", "redis"), ("keep", "floor")):
            va, vb, r = lines[(wl, "cpu_us_per_req", a, b)]
            assert va == pytest.approx(statistics.mean(cpu[(wl, a)].values()), abs=2e-3)
            assert vb == pytest.approx(statistics.mean(cpu[(wl, b)].values()), abs=2e-3)
            per_round = [cpu[(wl, a)][n] / cpu[(wl, b)][n] for n in range(1, rounds + 1)]
            assert r == pytest.approx(statistics.mean(per_round), abs=2e-3), (wl, a, b)
        assert (wl, "throughput", "keep", "redis") in lines
        for percentile in ("p99_us", "p999_us"):  # the quotient of the two medians
            va, vb, r = lines[(wl, percentile, "keep", "redis")]
            assert r == pytest.approx(va / vb, abs=1e-3), (wl, percentile)

    # Issue 4's one target this run measured, judged on the figure its RATIO line printed; the
    # other thirteen (keep2, the floor at two threads, pipeline 16, the open loop) did not run.
    targets = [line for line in result.stdout.splitlines() if line.startswith("TARGET ")]
    assert len(targets) == 1, targets
    m = re.fullmatch(r"TARGET get_p1 cpu_us_per_req keep/redis=(\S+) <=0\.8 (met|missed)", targets[0])
    assert m, targets[0]
    r = float(m.group(1))
    assert r == lines[("get_p1", "cpu_us_per_req", "keep", "redis")][2]
    assert m.group(2) == ("met" if r <= 0.8 else "missed")
    met = 1 if m.group(2) == "met" else 0
    summary = f"compare.sh: issue 4's targets: {met} of 1 met, 13 not measured in this run"
    assert summary in result.stdout
    if not met:
        assert f"(missed: get_p1 cpu_us_per_req keep/redis={m.group(1)})" in result.stdout

    # The floor judged by the same bound, on its own RATIO line's figure, and named in a summary
    # only when it is above the bound.
    floors = [line for line in result.stdout.splitlines() if line.startswith("FLOOR ")]
    assert len(floors) == 1, floors
    m = re.fullmatch(r"FLOOR get_p1 cpu_us_per_req floor/redis=(\S+) <=0\.8 (met|missed)",
                     floors[0])
    assert m, floors[0]
    r = float(m.group(1))
    assert r == lines[("get_p1", "cpu_us_per_req", "floor", "redis")][2]
    assert m.group(2) == ("met" if r <= 0.8 else "missed")
    above = ("compare.sh: the one-thread floor, which stores nothing, is itself above the bound of"
             " 1 of the 1 CPU targets against redis-server in this run:"
             f" get_p1 floor/redis={m.group(1)}")
    assert (above in result.stdout.splitlines()) == (m.group(2) == "missed")


def test_what_the_second_thread_costs_is_printed_and_named_where_sharding_missed():
    rounds = 2
    result = run_compare(SERVERS="keep keep2 floor floor2", WORKLOADS="get_p1", ROUNDS=str(rounds),
                         DURATION="0.2", WARMUP="0.05", BINARY="0")
    assert result.returncode == 0, result.stderr
    cpu: dict[str, dict[int, float]] = {}
    for line in result.stderr.splitlines():
        m = RUN_LINE.match(line)
        if m:
            cpu.setdefault(LABELS[m.group(3)], {})[int(m.group(2))] = float(m.group(4))
    lines = ratio_lines(result.stdout)
    for two, one in (("keep2", "keep"), ("floor2", "floor")):
        va, vb, r = lines[("get_p1", "cpu_us_per_req", two, one)]
        assert va == pytest.approx(statistics.mean(cpu[two].values()), abs=2e-3)
        assert vb == pytest.approx(statistics.mean(cpu[one].values()), abs=2e-3)
        per_round = [cpu[two][n] / cpu[one][n] for n in range(1, rounds + 1)]
        assert r == pytest.approx(statistics.mean(per_round), abs=2e-3), (two, one)

        # Its user and system parts: each server's add up to its CPU per request (each run's three
        # figures are rounded apart), and their ratio is that of the two means (a 0.2 s run may
        # hold no tick of a floor's user time: then there is no ratio).
        parts = [lines[("get_p1", f"{part}_us_per_req", two, one)] for part in ("user", "system")]
        assert parts[0][0] + parts[1][0] == pytest.approx(va, abs=4e-3), (two, parts)
        assert parts[0][1] + parts[1][1] == pytest.approx(vb, abs=4e-3), (one, parts)
        for part_two, part_one, part_ratio in parts:
            if part_two > 0 and part_one > 0:
                assert part_ratio == pytest.approx(part_two / part_one, abs=1e-3), (two, one, parts)
            else:
                assert math.isnan(part_ratio), (two, one, parts)
    for a, b in (("keep", "floor"), ("keep2", "floor2")):  # split only for a second thread's cost
        assert ("get_p1", "user_us_per_req", a, b) not in lines
        assert ("get_p1", "cpu_us_per_req", a, b) in lines

    m = re.search(r"^TARGET get_p1 cpu_us_per_req keep2/floor2=(\S+) <=1\.2 (met|missed)$",
                  result.stdout, re.MULTILINE)
    assert m, result.stdout

    def cost(two: str, one: str) -> str:
        user, system = (lines[("get_p1", f"{part}_us_per_req", two, one)][2]
                        for part in ("user", "system"))
        shown = ["n/a" if math.isnan(r) else f"{r:.3f}" for r in (user, system)]
        return (f"{two}/{one}={lines[('get_p1', 'cpu_us_per_req', two, one)][2]:.3f}"
                f" (user {shown[0]}, system {shown[1]})")

    named = ("compare.sh: where two shards missed the two-thread floor's bound, the second thread"
             f" cost the floor and Keep, per request: get_p1 {cost('floor2', 'floor')}"
             f" {cost('keep2', 'keep')}"
             " (the bound takes a second thread to cost any server 1.5-2x)")
    assert (named in result.stdout.splitlines()) == (m.group(2) == "missed"), result.stdout


def test_an_unknown_server_or_a_missing_binary_fails_with_a_message(tmp_path):
    result = run_compare(SERVERS="keep nosuch", WORKLOADS="ping", ROUNDS="1", DURATION="0.1",
                         BINARY="0", timeout=30)
    assert result.returncode != 0
    assert "unknown server 'nosuch'" in result.stderr
    assert "RATIO" not in result.stdout

    result = run_compare(SERVERS="keep", WORKLOADS="ping", BIN=str(tmp_path), timeout=30)
    assert result.returncode != 0
    assert "is missing: build first" in result.stderr


def test_each_workload_runs_on_the_servers_its_figures_need_for_its_rounds():
    # The closed-loop workloads no target judges run on the storing servers for EXTRA_ROUNDS; the
    # open loop on one shard, redis-server and the one-thread floor (its targets and noise gauge).
    result = run_compare(SERVERS="redis keep keep2 floor floor2", WORKLOADS="incr get_open",
                         ROUNDS="1", EXTRA_ROUNDS="2", EXTRA_DURATION="0.2", OPEN_ROUNDS="1",
                         OPEN_DURATION="0.3", RATE="2000", WARMUP="0.05", BINARY="0")
    assert result.returncode == 0, result.stderr
    rounds: dict[tuple[str, str], set[int]] = {}
    for line in result.stderr.splitlines():
        m = RUN_LINE.match(line)
        if m:
            rounds.setdefault((m.group(1), LABELS[m.group(3)]), set()).add(int(m.group(2)))
    assert rounds == {("incr", "redis"): {1, 2}, ("incr", "keep"): {1, 2},
                      ("incr", "keep2"): {1, 2}, ("get_open", "redis"): {1},
                      ("get_open", "keep"): {1}, ("get_open", "floor"): {1}}, rounds
    lines = ratio_lines(result.stdout)
    open_loop_pairs = {(a, b) for (wl, _, a, b) in lines if wl == "get_open"}
    assert open_loop_pairs == {("keep", "redis"), ("floor", "redis"), ("keep", "floor")}
