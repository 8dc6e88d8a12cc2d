"""libkeep's cluster routing (dataplane/client/cluster_client.h) through keep-bench --protocol
binary, against a 3-member cluster with keyed slots and a port per shard (design §3.6).

With the cluster secret the client places every key on its slot itself after the first topology
fetch and sends it straight to the owning shard: no MOVED at all in a stable cluster, and every
key ends up on the member that owns its slot. Without the secret it still works, one MOVED per
misplaced request. When a member leaves (SIGTERM) during a run, the client follows BUSY and MOVED
and refreshes its view, and the run finishes without an error; nothing written is lost.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from helpers.cluster import CLUSTER_SECRET, Cluster
from helpers.server import is_redis_binary, keep_bin

pytestmark = pytest.mark.skipif(is_redis_binary(keep_bin()),
                                reason="cluster suites need keep-server")

VALUE = b"v" * 128  # keep-bench's values at the default --value-size


def bench_path():
    path = keep_bin().parent / "keep-bench"
    assert path.exists(), f"{path} is not built (cmake --build build --target keep-bench)"
    return path


def bench_argv(member, *args: str) -> list[str]:
    return [str(bench_path()), "--host", member.host, "--port", str(member.client_port),
            "--protocol", "binary", "--json", "--quiet", *args]


def bench_env(secret: bool) -> dict:
    env = dict(os.environ)
    env.pop("KEEP_SECRET", None)
    if secret:
        env["KEEP_SECRET"] = CLUSTER_SECRET
    return env


def run_bench(member, *args: str, secret: bool = True, timeout: float = 60) -> dict:
    r = subprocess.run(bench_argv(member, *args), env=bench_env(secret), capture_output=True,
                       timeout=timeout)
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


def key_names(n: int) -> list[bytes]:
    width = len(str(max(n - 1, 0)))
    return [f"key:{i:0{width}d}".encode() for i in range(n)]


def owners_by_slot(member) -> list[tuple[str, int] | None]:
    owners: list[tuple[str, int] | None] = [None] * 16384
    for entry in member.call("CLUSTER", "SLOTS").value:
        first, last, node = entry.value[0].value, entry.value[1].value, entry.value[2].value
        for slot in range(first, last + 1):
            owners[slot] = (node[0].value.decode(), node[1].value)
    return owners


@pytest.fixture
def cluster(server_log_dir, request):
    c = Cluster(3, server_log_dir, name=request.node.name[:40], shards=2, shard_ports=True)
    try:
        c.start()
        yield c
    finally:
        problems = c.teardown(allowed_exits=(0, -9))
    assert not problems, "\n".join(problems)


@pytest.mark.timeout(120)
def test_keys_go_straight_to_the_member_owning_their_slot(cluster):
    n = 3000
    m0, m1 = cluster.members[0], cluster.members[1]
    d = run_bench(m0, "--populate-only", "--keys", str(n))
    assert d == {"populated": n, "cluster": True, "moved": 0}, d
    # Read back through another seed, over several sockets: every key is found where the
    # client's own slot map says, without a single redirect.
    d = run_bench(m1, "--workload", "get", "--no-populate", "--keys", str(n), "--requests", "6000",
                  "--connections", "8", "--sockets", "2")
    assert (d["cluster"], d["slot_mode"], d["moved"]) == (True, "keyed", 0), d
    assert (d["requests"], d["errors"], d["nils"], d["unfinished"]) == (6000, 0, 0, 0), d
    assert d["busy_retries"] == d["fenced_retries"] == d["connection_retries"] == 0, d
    # Every key is on the member that owns its slot, and only there.
    owners = owners_by_slot(m0)
    by_host = {m.host: m for m in cluster.members}
    on_member = {m.id: 0 for m in cluster.members}
    for key in key_names(n):
        slot = m0.call("CLUSTER", "KEYSLOT", key).value
        host, _ = owners[slot]
        owner = by_host[host]
        assert owner.call("GET", key).value == VALUE, key
        on_member[owner.id] += 1
        if on_member[owner.id] <= 20:  # a sample: the others redirect rather than serve
            other = next(m for m in cluster.members if m is not owner)
            r = other.call("GET", key)
            assert r.kind == "error" and r.value.startswith(b"MOVED %d " % slot), r
    assert sum(on_member.values()) == n
    assert all(count > n // 6 for count in on_member.values()), on_member
    # The members hold exactly those keys: nothing went to a shard that does not own it.
    assert sum(m.call("DBSIZE").value for m in cluster.members) == n


@pytest.mark.timeout(90)
def test_without_the_secret_keys_are_placed_by_moved(cluster):
    n = 300
    m0 = cluster.members[0]
    d = run_bench(m0, "--populate-only", "--keys", str(n), secret=False)
    assert d["populated"] == n and d["cluster"] is True, d
    # Requests go to the members in turn; a member serves the keys its shards own and
    # redirects the others (about two thirds).
    assert n // 3 < d["moved"] < n, d
    d = run_bench(m0, "--workload", "get", "--no-populate", "--keys", str(n), "--requests", "600",
                  "--connections", "4", secret=False)
    assert (d["slot_mode"], d["errors"], d["nils"]) == ("none", 0, 0), d


@pytest.mark.timeout(150)
def test_a_member_leaving_during_a_run_costs_no_errors(cluster):
    n = 2000
    seed, victim = cluster.members[0], cluster.members[2]
    assert run_bench(seed, "--populate-only", "--keys", str(n))["populated"] == n
    proc = subprocess.Popen(bench_argv(seed, "--workload", "mixed", "--no-populate", "--keys",
                                       str(n), "--duration", "6", "--connections", "8"),
                            env=bench_env(True), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(1.5)
        victim.signal(signal.SIGTERM)
        # A clean leave: the member hands its slots over and exits 0.
        assert victim.proc.wait(timeout=30) == 0, victim.log_tail()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()
    d = json.loads(out)
    assert d["cluster"] is True and d["requests"] > 0, d
    assert (d["errors"], d["unfinished"]) == (0, 0), d
    # The victim's slots were refused (BUSY during the handoff, MOVED once gone) or its
    # connections closed, and the client followed.
    assert d["moved"] + d["busy_retries"] + d["connection_retries"] > 0, d
    # One socket: two fetches to start (the seed, then every member), then refreshes.
    assert d["topology_refreshes"] > 2, d
    # Nothing acknowledged was lost: every key is still found, through the remaining members,
    # and the client routes by the new view straight away.
    survivors = [m for m in cluster.members if m is not victim]
    cluster.wait_settled(survivors, timeout=20)
    d = run_bench(survivors[1], "--workload", "get", "--no-populate", "--keys", str(n),
                  "--requests", "4000", "--connections", "8")
    assert (d["errors"], d["nils"], d["moved"]) == (0, 0, 0), d


@pytest.mark.timeout(150)
def test_a_crash_during_a_lock_run_waits_out_the_lock_quarantine(cluster):
    """kill -9 of a member: its slots open empty on their new owners, where LOCK answers BUSY
    with the quarantine's remaining time (about 1.3 s here). The client retries on the lost
    connection, refreshes its view, honours the BUSY wait within its 5 s budget, and no request
    fails."""
    seed, victim = cluster.members[0], cluster.members[2]
    proc = subprocess.Popen(bench_argv(seed, "--workload", "lock", "--keys", "500", "--duration",
                                       "5", "--connections", "8", "--lock-ttl-ms", "500"),
                            env=bench_env(True), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(1.5)
        victim.kill9()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()
    d = json.loads(out)
    assert (d["errors"], d["unfinished"]) == (0, 0), d
    assert d["connection_retries"] > 0 and d["busy_retries"] > 0, d


def test_cluster_flags_bad_input(keep_server, tmp_path):
    """--cluster on needs a cluster; a secret file must hold a secret; auto against a single node
    keeps the single-endpoint path."""
    def bench(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(bench_path()), "--host", keep_server.host, "--port",
                               str(keep_server.port), "--protocol", "binary", "--json",
                               "--quiet", "--workload", "ping", "--requests", "100", *args],
                              env=bench_env(False), capture_output=True, timeout=30)
    r = bench("--cluster", "on")
    assert r.returncode == 2 and b"single node" in r.stderr, r.stderr
    assert r.stdout == b""
    (tmp_path / "empty").write_text("")
    for path in (tmp_path / "missing", tmp_path / "empty"):
        r = bench("--secret-file", str(path))
        assert r.returncode == 1 and b"cannot read a secret" in r.stderr, r.stderr
    r = bench("--cluster", "sometimes")
    assert r.returncode == 1 and b"--cluster" in r.stderr, r.stderr
    r = bench()
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert (d["cluster"], d["errors"], d["requests"]) == (False, 0, 100), d
    assert "moved" not in d


@pytest.mark.timeout(90)
def test_keep_cli_cluster_sends_each_command_to_its_keys_owner(cluster):
    cli = keep_bin().parent / "keep-cli"
    m0 = cluster.members[0]

    def run(*args: str, secret: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([str(cli), "-h", m0.host, "-p", str(m0.client_port), *args],
                              env=bench_env(secret), capture_output=True, text=True, timeout=30)

    owners = owners_by_slot(m0)
    by_host = {m.host: m for m in cluster.members}

    def owner_of(key: str):
        return by_host[owners[m0.call("CLUSTER", "KEYSLOT", key).value][0]]

    keys = [f"cli:{i}" for i in range(12)]
    foreign = next(k for k in keys if owner_of(k) is not m0)
    # Without --cluster the member redirects what it does not own.
    r = run("set", foreign, "x")
    assert r.returncode == 1 and r.stdout.startswith("(error) MOVED "), r
    for k in keys:
        assert run("--cluster", "set", k, "v" + k).stdout == "OK\n"
    for k in keys:
        assert run("--cluster", "get", k).stdout == f'"v{k}"\n'
        assert owner_of(k).call("GET", k).value == f"v{k}".encode()
    # Without the secret the client cannot place keys, and follows MOVED instead.
    assert run("--cluster", "get", foreign, secret=False).stdout == f'"v{foreign}"\n'
    r = run("--cluster", "--resp", "get", foreign)
    assert r.returncode == 1 and "--resp" in r.stderr, r


@pytest.mark.timeout(90)
def test_crc16_slots_are_placed_without_a_secret(server_log_dir):
    """--slot-hash crc16: the client recognises Redis Cluster's slots by itself (as redis-py's
    RedisCluster does) and needs no secret for zero MOVED."""
    c = Cluster(3, server_log_dir, name="libkeep-crc16", shards=2, shard_ports=True,
                slot_hash="crc16")
    try:
        c.start()
        m0 = c.members[0]
        d = run_bench(m0, "--populate-only", "--keys", "1000", secret=False)
        assert d == {"populated": 1000, "cluster": True, "moved": 0}, d
        d = run_bench(m0, "--workload", "mixed", "--keys", "1000", "--no-populate", "--requests",
                      "3000", "--connections", "4", secret=False)
        assert (d["slot_mode"], d["moved"], d["errors"], d["nils"]) == ("crc16", 0, 0, 0), d
    finally:
        problems = c.teardown(allowed_exits=(0, -9))
    assert not problems, "\n".join(problems)
