"""The memory cap, key classes and eviction over real sockets (design §2.5): RSS stays near the
cap under a write load of several times the cap, pinned keys survive, a `none` class answers
Redis's OOM error, and INFO / MEMORY / CONFIG report it all. Differential cases compare the
replies whose shape is Redis's against a real redis-server."""

from __future__ import annotations

import time

import pytest

from helpers.clients import make_client
from helpers.differential import run_pair
from helpers.resp import Reply

pytestmark = pytest.mark.keep_only

MB = 1024 * 1024
OOM = b"OOM command not allowed when used memory > 'maxmemory'."

CLASSES_TOML = """
[[key_class]]
name = "config"
bytes = "c"
policy = "pinned"

[[key_class]]
name = "ledger"
bytes = "l"
policy = "none"

[[key_class]]
name = "session"
bytes = "s"
policy = "ttl"
"""


def rss_bytes(server) -> int:
    with open(f"/proc/{server.proc.pid}/statm") as f:
        return int(f.read().split()[1]) * 4096


def fill(client, prefix: str, count: int, value: bytes, batch: int = 2000,
         first: int = 0) -> None:
    """Sets prefix+i for i in [first, count) in pipelined batches."""
    for start in range(first, count, batch):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(count, start + batch)):
            pipe.set(f"{prefix}{i}", value)
        pipe.execute()


def config_file(tmp_path, extra: str = "") -> str:
    path = tmp_path / "keep.toml"
    path.write_text(extra + CLASSES_TOML)
    return str(path)


@pytest.mark.timeout(120)
def test_rss_stays_near_the_cap_under_4x_writes(server_factory):
    # Memory comes in 2 MiB chunks per shard: with an 8 MB cap one chunk more or less was 25%
    # of it, and RSS read 0.85x or 1.10x by the luck of the last chunk; at 32 MB it is 6%.
    cap = 32 * MB
    server = server_factory("keep-cap", maxmemory="32mb")
    client = make_client(server)
    client.ping()
    time.sleep(0.3)  # the shards pre-fault their spare chunks on their first turns
    baseline = rss_bytes(server)
    value = b"v" * 100
    keys = 4 * cap // 128  # about 128 bytes of key, value and overhead each
    fill(client, "key:", keys, value)
    grown = rss_bytes(server) - baseline
    info = client.info("memory")
    stats = client.info("stats")
    assert info["maxmemory"] == cap
    assert info["maxmemory_policy"] == "allkeys-lru"
    assert grown <= cap * 1.10, f"RSS grew {grown} bytes over a baseline of {baseline}"
    assert info["used_memory"] <= cap * 1.02
    assert stats["evicted_keys"] > 0
    assert client.dbsize() < keys
    assert client.dbsize() + stats["evicted_keys"] == keys
    # The most recent writes are still there (approximate LRU evicts old keys).
    recent = client.mget([f"key:{i}" for i in range(keys - 100, keys)])
    assert sum(v == value for v in recent) >= 95


@pytest.mark.timeout(60)
def test_an_idle_connection_gives_back_the_buffers_a_burst_grew(server_factory):
    # As Redis resizes an idle client's query buffer: after a big pipeline, a connection quiet
    # for two seconds holds no more than an empty one, and still works.
    server = server_factory("keep-idle-buffers")
    probe = make_client(server)
    probe.ping()
    baseline = probe.info("memory")["used_memory"]
    loader = make_client(server)
    fill(loader, "burst:", 100_000, b"v" * 200, batch=10_000)
    loader.flushall()
    assert probe.info("memory")["used_memory"] > baseline + 64 * 1024
    deadline = time.monotonic() + 10
    while probe.info("memory")["used_memory"] > baseline + 4096:
        assert time.monotonic() < deadline, (baseline, probe.info("memory")["used_memory"])
        time.sleep(0.1)
    assert loader.set("after", "idle") and loader.get("after") == b"idle"


@pytest.mark.timeout(180)
def test_defragmentation_keeps_rss_near_the_cap_when_record_sizes_drift(server_factory):
    # Keys gain a digit at d:1000000, after the cap filled up, so later records land in the next
    # size class while the old ones are evicted one by one: without moving records, the old
    # class's sparse pages would hold on to their memory and RSS would approach twice the cap.
    cap = 24 * MB
    server = server_factory("keep-defrag", maxmemory="24mb")
    client = make_client(server)
    client.ping()
    time.sleep(0.3)
    baseline = rss_bytes(server)
    value = b"v" * 100
    keys = 4 * cap // 128
    peak = 0
    first = 1_000_000 - keys // 2
    for start in range(first, first + keys, 20000):
        fill(client, "d:", min(first + keys, start + 20000), value, first=start)
        peak = max(peak, rss_bytes(server) - baseline)
    memory = client.info("memory")
    stats = client.info("stats")
    assert peak <= cap * 1.10, f"RSS grew {peak} bytes over a baseline of {baseline}"
    assert stats["active_defrag_hits"] > 10000, stats
    assert memory["allocator_frag_bytes"] < cap // 8, memory
    assert memory["used_memory"] <= cap * 1.02
    recent = client.mget([f"d:{i}" for i in range(first + keys - 100, first + keys)])
    assert sum(v == value for v in recent) >= 95


@pytest.mark.timeout(120)
def test_pinned_survive_none_refuses_reads_and_del_work(server_factory, tmp_path):
    server = server_factory("keep-classes", maxmemory="8mb", config=config_file(tmp_path))
    client = make_client(server)
    big = b"p" * 10000
    fill(client, "c:", 300, big)  # 3 MB of pinned data
    client.set("l:1", "ledger")
    client.set("u:lock-victim", "x")
    assert client.execute_command("LOCK", "u:lock", "owner", "30000") is not None
    fill(client, "u:", 4 * 8 * MB // 128, b"v" * 100)  # 4x the cap of lru data
    assert all(v == big for v in client.mget([f"c:{i}" for i in range(300)]))
    assert client.get("l:1") == b"ledger"
    assert client.execute_command("LOCKINFO", "u:lock") is not None
    # Below the pinned data: nothing evictable can bring memory under the cap.
    client.config_set("maxmemory", "2mb")
    deadline = time.monotonic() + 10
    while client.dbsize() > 302 and time.monotonic() < deadline:
        time.sleep(0.05)
    for key in ("l:2", "u:new", "c:new"):
        with pytest.raises(Exception) as error:
            client.set(key, "v")
        assert str(error.value).encode() == OOM
    with pytest.raises(Exception) as error:
        client.incr("l:counter")
    assert str(error.value).encode() == OOM
    # Reads, DEL and EXPIRE still work, and the connection is intact.
    assert client.get("l:1") == b"ledger"
    assert client.get("c:1") == big
    assert client.expire("l:1", 100) is True
    assert client.delete("c:0", "c:1") == 2
    # Raising the cap lets writes through again.
    client.config_set("maxmemory", "0")
    assert client.set("l:2", "v") is True
    keyspace = client.info("keyspace")
    assert keyspace["class_config"]["policy"] == "pinned"
    assert keyspace["class_config"]["keys"] == 298
    assert keyspace["class_default"]["evicted_keys"] > 0
    assert keyspace["class_config"]["evicted_keys"] == 0


@pytest.mark.timeout(60)
def test_ttl_class_evicts_soonest_deadlines_first(server_factory, tmp_path):
    server = server_factory("keep-ttl", maxmemory="4mb", shards=1,
                            config=config_file(tmp_path, 'maxmemory = "4mb"\n'))
    client = make_client(server)
    value = b"s" * 100
    total = 4 * 4 * MB // 140
    for start in range(0, total, 1000):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(total, start + 1000)):
            # Later keys live longer: eviction should take the early ones.
            pipe.set(f"s:{i}", value, ex=3600 + i)
        pipe.execute()
    present = client.execute_command("EXISTS", *[f"s:{i}" for i in range(total - 200, total)])
    early = client.execute_command("EXISTS", *[f"s:{i}" for i in range(0, 200)])
    assert present >= 190
    assert early <= 20
    assert client.info("keyspace")["class_session"]["evicted_keys"] > 0


def test_info_memory_and_config(keep, keep_server, raw):
    info = keep.info("memory")
    for field in ("used_memory", "used_memory_rss", "maxmemory", "used_memory_reserved"):
        assert isinstance(info[field], int), field
    for field in ("used_memory_human", "maxmemory_human", "used_memory_rss_human"):
        assert isinstance(info[field], str), field
    assert info["maxmemory"] == 0
    assert info["maxmemory_policy"] == "allkeys-lru"
    assert info["used_memory_rss"] >= info["used_memory"] > 0
    assert keep.config_get("maxmemory") == {"maxmemory": "0"}
    assert keep.config_get("maxmemory-policy") == {"maxmemory-policy": "allkeys-lru"}
    assert "evicted_keys" in keep.info("stats")
    keep.set("k", "v")
    keep.set("t", "v", ex=100)
    text = raw(keep_server).call("INFO", "keyspace").value.decode()
    lines = [line for line in text.split("\r\n") if line]
    # Redis's section and its db0 line first, so clients parse them as before.
    assert lines[0] == "# Keyspace"
    assert lines[1].startswith("db0:keys=2,expires=1,avg_ttl=")
    assert lines[2] == "# Keyclasses"
    assert lines[3].startswith("class_default:policy=lru,keys=2,bytes=")


def test_config_set_maxmemory(server_factory):
    server = server_factory("keep-config-mm")
    client = make_client(server)
    assert client.config_set("maxmemory", "64mb") is True
    assert client.config_get("maxmemory") == {"maxmemory": str(64 * MB)}
    assert client.info("memory")["maxmemory"] == 64 * MB
    for bad in ("lots", "-5", "1tb", ""):
        with pytest.raises(Exception) as error:
            client.config_set("maxmemory", bad)
        assert "CONFIG SET failed" in str(error.value)
    assert client.config_get("maxmemory") == {"maxmemory": str(64 * MB)}
    assert client.config_set("maxmemory", "0") is True
    assert client.ping()


def test_memory_usage_and_stats(keep, raw):
    keep.set("small", "v")
    keep.set("big", b"x" * 100000)
    small = keep.memory_usage("small")
    big = keep.memory_usage("big")
    assert 0 < small < 100
    assert 100000 < big < 140000
    assert keep.memory_usage("missing") is None
    stats = keep.execute_command("MEMORY", "STATS")
    fields = dict(zip(stats[::2], stats[1::2]))
    assert fields[b"keys.count"] == 2
    assert b"class.default" in fields
    # Bad input: errors, connection intact.
    c = raw(keep.connection_pool.connection_kwargs["port"])
    assert c.call("MEMORY", "USAGE", b"\x00\xff\r\n") == Reply("bulk", None)
    assert c.call("MEMORY", "USAGE", "small", "SAMPLES", "x").kind == "error"
    assert c.call("MEMORY", "STATS", "extra").kind == "error"
    assert c.call("MEMORY", "USAGE", "k" * 100000) == Reply("bulk", None)
    assert c.call("PING") == Reply("simple", b"PONG")


# --- Differential: the replies whose shape is Redis's. ---

MEMORY_CASES = {
    "memory-usage-errors": [("MEMORY", "USAGE"), ("MEMORY",), ("MEMORY", "USAGE", "missing"),
                            ("SET", "k", "v"), ("MEMORY", "USAGE", "k", "SAMPLES"),
                            ("MEMORY", "USAGE", "k", "SAMPLES", "abc"),
                            ("MEMORY", "USAGE", "k", "SAMPLES", "-1"),
                            ("MEMORY", "USAGE", "k", "bogus"), ("MEMORY", "NOSUCH"),
                            ("MEMORY", "USAGE", "missing", "SAMPLES", "5"),
                            ("MEMORY", "STATS", "x")],
    "config-maxmemory": [("CONFIG", "SET", "maxmemory", "lots"),
                         ("CONFIG", "SET", "maxmemory", "0")],
}


@pytest.fixture
def raw_pair(keep_server, redis_server, raw):
    k, r = raw(keep_server), raw(redis_server)
    for c in (k, r):
        assert c.call("FLUSHALL") == Reply("simple", b"OK")
    return k, r


@pytest.mark.parametrize("case", list(MEMORY_CASES))
def test_differential(case, raw_pair):
    mismatches = run_pair(*raw_pair, MEMORY_CASES[case], via="raw")
    assert not mismatches, "\n".join(mismatches)


def test_oom_error_matches_redis(server_factory, tmp_path, raw):
    """A `none` default class over its cap answers exactly what Redis's noeviction does."""
    from helpers.server import ServerProcess, redis_bin
    keep = server_factory("keep-oom", shards=1,
                          config=config_file(tmp_path, '[[key_class]]\nname = "default"\n'
                                                       'policy = "none"\n'))
    reference = ServerProcess(redis_bin(), tmp_path, "redis-oom",
                              options={"maxmemory_policy": "noeviction"})
    reference.start()
    try:
        k, r = raw(keep), raw(reference)
        for c in (k, r):
            assert c.call("SET", "fill:1", "x" * 1000) == Reply("simple", b"OK")
            assert c.call("SET", "fill:2", "y") == Reply("simple", b"OK")
            # A one-byte cap: every write that may grow memory is over it.
            assert c.call("CONFIG", "SET", "maxmemory", "1") == Reply("simple", b"OK")
        steps = [("SET", "k", "v"), ("GET", "fill:1"), ("INCR", "n"), ("APPEND", "fill:1", "x"),
                 ("SETNX", "z", "1"), ("MSET", "a", "1", "b", "2"), ("EXPIRE", "fill:1", "100"),
                 ("DEL", "fill:2"), ("EXISTS", "fill:2"), ("STRLEN", "fill:1"), ("PING",)]
        mismatches = run_pair(k, r, steps, via="raw")
        assert not mismatches, "\n".join(mismatches)
        assert k.call("SET", "k", "v") == Reply("error", OOM)
    finally:
        reference.stop()
