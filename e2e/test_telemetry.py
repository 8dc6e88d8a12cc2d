"""Telemetry end to end: a real Prometheus (Debian's) scrapes a 3-member cluster under load, then
every PromQL expression of every dashboard panel must return data, the live exposition must pass
`promtool check metrics`, and every alert whose scenario can be staged here must fire in it.

The alert scenarios run against a copy of telemetry/alerts/keep.rules.yaml whose `for:` durations
are shortened to 1s (the expressions are the committed ones); the `for:` durations themselves and
the two alerts that cannot be staged in a bounded test (a handoff stuck for minutes, expiry
running 5 s behind) are covered by `promtool test rules` (alerts/keep.rules.test.yaml, in ctest).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import redis
from helpers.cluster import Cluster, wait_until
from helpers.prometheus import PROMETHEUS, Prometheus, dashboard_expressions
from helpers.server import is_redis_binary, keep_bin

ROOT = Path(__file__).resolve().parent.parent
TELEMETRY = ROOT / "telemetry"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"

pytestmark = [
    pytest.mark.skipif(is_redis_binary(keep_bin()), reason="telemetry suites need keep-server"),
    pytest.mark.skipif(not os.path.exists(PROMETHEUS), reason="Debian's prometheus is not installed"),
]

# Key classes for the memory alerts: keys starting with 'n' may not be evicted.
KEY_CLASSES = """
[[key_class]]
name = "noevict"
bytes = "n"
policy = "none"
"""


def shortened_rules(work: Path) -> Path:
    text = (TELEMETRY / "alerts" / "keep.rules.yaml").read_text()
    path = work / "keep.rules.yaml"
    path.write_text(re.sub(r"(\n\s+for:) \S+", r"\1 1s", text))
    return path


@pytest.fixture(scope="module")
def observed(tmp_path_factory, server_log_dir):
    """A 3-member cluster (crc16 slots, 2 shards each, an 8 MiB cap with a `none` class) with a
    Prometheus scraping its admin ports every second."""
    work = tmp_path_factory.mktemp("telemetry")
    (work / "keep.toml").write_text(KEY_CLASSES)
    cluster = Cluster(3, server_log_dir, name="telemetry", shards=2, slot_hash="crc16",
                      extra={"config": work / "keep.toml", "maxmemory": "8mb"})
    prometheus = None
    try:
        cluster.start()
        targets = [f"{m.host}:{m.admin_port}" for m in cluster.members]
        prometheus = Prometheus(work, targets, shortened_rules(work))
        yield cluster, prometheus
    finally:
        if prometheus is not None:
            prometheus.close()
        cluster.close()


def run_bench(member, workload: str, seconds: float, *extra: str) -> None:
    bench = keep_bin().parent / "keep-bench"
    subprocess.run([str(bench), "--host", member.host, "--port", str(member.client_port),
                    "--workload", workload, "--duration", str(seconds), "--connections", "4",
                    "--quiet", *extra], check=False, timeout=seconds + 30,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def load(cluster: Cluster, seconds: float = 4.0) -> None:
    """Every member serves commands: keep-bench's workloads against each (keys another member
    owns answer MOVED, which the redirect panels count), plus expiring keys."""
    for m in cluster.members:
        for workload in ("get", "set", "incr", "ratelimit", "lock"):
            run_bench(m, workload, seconds / 5)
        for i in range(200):
            m.call("SET", f"ttl{i}", "v", "PX", "50")


def test_live_scrape_passes_promtool(observed):
    cluster, _ = observed
    load(cluster, 2)
    text = cluster.members[0].metrics()
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(), capture_output=True,
                       timeout=30)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    for family in ("keep_commands_total", "keep_command_duration_seconds_bucket",
                   "keep_cluster_member_up", "keep_cluster_view_epoch", "process_cpu_seconds_total"):
        assert family in text, family


def test_every_dashboard_expression_returns_data(observed):
    cluster, prometheus = observed
    load(cluster, 5)
    time.sleep(3)  # two scrapes after the load, so rate() has points on both sides
    empty = []
    for dashboard, title, expr in dashboard_expressions():
        reply = prometheus.query(expr)
        assert reply["status"] == "success", (dashboard, title, expr, reply)
        if not reply["data"]["result"]:
            empty.append(f"{dashboard} / {title}: {expr}")
    assert not empty, "panels without data:\n" + "\n".join(empty)


def test_alerts_fire_in_their_scenarios(observed):
    cluster, prometheus = observed
    # Every alert expression parses and evaluates.
    rules = (TELEMETRY / "alerts" / "keep.rules.yaml").read_text()
    for expr in re.findall(r"\n\s+expr: (.+)", rules):
        assert prometheus.query(expr)["status"] == "success", expr

    target = cluster.members[0]
    # High error rate: wrong-type errors dominate this member's commands for a while (on a key it
    # owns: a MOVED is a redirect, not a command error).
    key = next(k for k in (f"str{j}" for j in range(1000)) if target.call("SET", k, "x").value in (b"OK", "OK"))
    client = redis.Redis(host=target.host, port=target.client_port, socket_timeout=5)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        pipe = client.pipeline(transaction=False)
        for _ in range(1000):
            pipe.incr(key)
        pipe.execute(raise_on_error=False)
    client.close()
    # Memory near the cap, then a `none` class refusing writes: fill until OOM.
    value = "v" * 1000
    refused = 0
    for i in range(40000):
        reply = target.call("SET", f"n{i}", value)
        if reply.kind == "error" and "OOM" in str(reply.value):
            refused += 1
            if refused > 50:
                break
    assert refused > 0, "the noevict class never answered OOM"
    expected = {"KeepHighErrorRate", "KeepMemoryNearCap", "KeepProtectedClassEvictionAttempted"}
    try:
        wait_until(lambda: expected <= prometheus.firing(), 40, 0.5,
                   "the error-rate and memory alerts to fire")
    except AssertionError as e:
        raise AssertionError(f"{e}; firing: {sorted(prometheus.firing())}") from None

    # A member killed: the others see it down, Prometheus cannot scrape it.
    victim = cluster.members[2]
    victim.kill9()
    wait_until(lambda: {"KeepMemberDown", "KeepScrapeTargetDown"} <= prometheus.firing(), 40, 0.5,
               "member-down to fire")
    # A second one: the last member hears no majority and fences itself.
    cluster.members[1].signal(signal.SIGKILL)
    cluster.members[1].proc.wait(timeout=10)
    wait_until(lambda: "KeepFenced" in prometheus.firing(), 40, 0.5, "fenced to fire")
