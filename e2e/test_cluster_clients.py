"""Cluster-aware clients and bad input against a 3-member cluster.

redis-py's RedisCluster and `redis-cli -c` run against `--slot-hash crc16` members whose shards
each advertise a shard port; the bad-input tests send forged, replayed, truncated and garbage
heartbeats, invalid member lists and unauthenticated admin calls, and check that each is
refused, counted, and that the cluster is unharmed.
"""

from __future__ import annotations

import re
import socket
import subprocess
import urllib.error

import pytest
import redis
from helpers.cluster import Cluster, Member, crc16_slot as key_slot, heartbeat_datagram, wait_until
from helpers.server import is_redis_binary, keep_bin

pytestmark = pytest.mark.skipif(is_redis_binary(keep_bin()),
                                reason="cluster suites need keep-server")


@pytest.fixture(scope="module")
def crc_cluster(server_log_dir):
    c = Cluster(3, server_log_dir, name="crc16", shards=2, slot_hash="crc16", shard_ports=True)
    try:
        c.start()
        yield c
    finally:
        c.close()
    assert not c.problems(), "\n".join(c.problems())


@pytest.fixture
def keyed_cluster(server_log_dir, request):
    c = Cluster(3, server_log_dir, name=request.node.name[:40])
    try:
        c.start()
        yield c
    finally:
        c.close()
    assert not c.problems(), "\n".join(c.problems())


@pytest.mark.timeout(60)
def test_cluster_commands_describe_every_shard(crc_cluster):
    m0 = crc_cluster.members[0]
    rc = redis.Redis(host=m0.host, port=m0.client_port, decode_responses=True)
    info = rc.execute_command("CLUSTER", "INFO")
    assert "cluster_state:ok" in info and "cluster_slots_assigned:16384" in info
    assert "cluster_known_nodes:6" in info
    nodes = rc.execute_command("CLUSTER", "NODES")
    lines = [l for l in (nodes if isinstance(nodes, str) else nodes).splitlines() if l]
    assert len(lines) == 6
    assert sum("myself" in l for l in lines) == 1
    for line in lines:
        fields = line.split()
        assert re.fullmatch(r"[0-9a-f]{40}", fields[0])
        assert re.fullmatch(r"[\d.]+:\d+@\d+", fields[1])
    myid = rc.execute_command("CLUSTER", "MYID")
    assert any(l.startswith(myid) and "myself" in l for l in lines)
    # KEYSLOT is Redis's CRC16 in this mode.
    for key in [b"foo", b"{user1000}.following", b"", b"\xff\x00bin"]:
        assert rc.execute_command("CLUSTER", "KEYSLOT", key) == key_slot(key)
    # Every slot is covered exactly once by CLUSTER SLOTS, each range served by a shard port.
    raw = redis.Redis(host=m0.host, port=m0.client_port)
    covered = 0
    ports = {m.shard_port_base + i for m in crc_cluster.members for i in range(2)}
    for start, end, node, *replicas in raw.execute_command("CLUSTER", "SLOTS"):
        covered += end - start + 1
        assert node[1] in ports and not replicas
    assert covered == 16384
    shards = raw.execute_command("CLUSTER", "SHARDS")
    assert len(shards) == 6
    # COUNTKEYSINSLOT counts on the owning shard.
    cluster = redis.RedisCluster(host=m0.host, port=m0.client_port)
    for i in range(5):
        cluster.set(f"{{cnt}}:{i}", "x")
    owner = cluster.get_node_from_key("{cnt}")
    direct = redis.Redis(host=owner.host, port=owner.port)
    assert direct.execute_command("CLUSTER", "COUNTKEYSINSLOT", key_slot(b"cnt")) == 5
    # Bad input: clear errors, connection intact.
    for args, err in [(("CLUSTER",), "wrong number of arguments"),
                      (("CLUSTER", "NOPE"), "unknown subcommand"),
                      (("CLUSTER", "KEYSLOT"), "wrong number of arguments for 'cluster|keyslot'"),
                      (("CLUSTER", "COUNTKEYSINSLOT", "x"), "not an integer"),
                      (("CLUSTER", "COUNTKEYSINSLOT", "16384"), "Invalid slot"),
                      (("CLUSTER", "COUNTKEYSINSLOT", "-1"), "Invalid slot")]:
        with pytest.raises(redis.ResponseError, match=err):
            raw.execute_command(*args)
    assert raw.ping()


@pytest.mark.timeout(60)
def test_redis_py_cluster_routes_without_redirects(crc_cluster):
    m0 = crc_cluster.members[0]
    rc = redis.RedisCluster(host=m0.host, port=m0.client_port, decode_responses=True)
    assert len(rc.get_nodes()) == 6  # every shard of every member is a node
    for i in range(300):
        assert rc.set(f"key:{i}", f"v{i}")
    for i in range(300):
        assert rc.get(f"key:{i}") == f"v{i}"
    assert rc.mset_nonatomic({"{t}a": "1", "{t}b": "2"}) and rc.mget("{t}a", "{t}b") == ["1", "2"]
    # The topology is exact: each key is served, without a redirect, by the node the client
    # picked from CLUSTER SLOTS.
    for i in range(0, 300, 7):
        node = rc.get_node_from_key(f"key:{i}")
        direct = redis.Redis(host=node.host, port=node.port, decode_responses=True)
        assert direct.get(f"key:{i}") == f"v{i}"
    # And a member that does not own a key redirects to the right shard port.
    key = b"key:0"
    node = rc.get_node_from_key("key:0")
    other = next(m for m in crc_cluster.members if m.host != node.host)
    r = other.call("GET", key)
    assert r.kind == "error" and r.value == f"MOVED {key_slot(key)} {node.host}:{node.port}".encode()


@pytest.mark.timeout(60)
def test_redis_cli_follows_redirects(crc_cluster):
    m = crc_cluster.members[1]

    def cli(*args):
        r = subprocess.run(["redis-cli", "-c", "-h", m.host, "-p", str(m.client_port), *args],
                           capture_output=True, timeout=10)
        return r.stdout.decode().strip()
    for i in range(20):
        assert cli("SET", f"cli:{i}", f"value{i}") == "OK"
    for i in range(20):
        assert cli("GET", f"cli:{i}") == f"value{i}"


# -------------------------------------------------------------------------------------------
# Bad input.


@pytest.mark.timeout(30)
def test_metrics_are_valid_prometheus_text(crc_cluster):
    text = crc_cluster.members[0].metrics()
    for name in ("keep_cluster_member_up", "keep_cluster_view_epoch", "keep_cluster_fenced",
                 "keep_cluster_heartbeats_lost_total", "keep_cluster_heartbeats_rejected_total"):
        assert f"# HELP {name} " in text and f"# TYPE {name} " in text
    r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                       capture_output=True, timeout=20)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()


def rejected(member, reason: str) -> int:
    m = re.search(rf'keep_cluster_heartbeats_rejected_total{{reason="{reason}"}} (\d+)',
                  member.metrics())
    return int(m.group(1))


@pytest.mark.timeout(60)
def test_bad_heartbeats_are_rejected_and_counted(keyed_cluster):
    c = keyed_cluster
    target, other = c.members[0], c.members[1]
    before = target.cluster_view()
    incarnation = next(x["incarnation"] for x in before["members"] if x["id"] == other.id)
    counts = {r: rejected(target, r) for r in ("forged", "replayed", "malformed",
                                               "unknown_member")}
    good_for_replay = heartbeat_datagram(other.id, incarnation, 1)  # a sequence long past
    forged = heartbeat_datagram(other.id, incarnation, 10**12, key="wrong-secret")
    tampered = bytearray(heartbeat_datagram(other.id, incarnation, 10**12))
    tampered[4] = 3  # claims "left"; the MAC no longer matches
    stranger = heartbeat_datagram("intruder", 5, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        dest = (target.host, target.peer_port)
        for _ in range(5):
            s.sendto(forged, dest)
            s.sendto(bytes(tampered), dest)
            s.sendto(good_for_replay, dest)
            s.sendto(stranger, dest)
            s.sendto(good_for_replay[:40], dest)  # truncated
            s.sendto(b"", dest)
            s.sendto(b"\x00" * 1500, dest)
            s.sendto(b"KHB\x01" + b"\xff" * 200, dest)

    def all_counted():
        return (rejected(target, "forged") >= counts["forged"] + 10
                and rejected(target, "replayed") >= counts["replayed"] + 5
                and rejected(target, "malformed") >= counts["malformed"] + 15
                and rejected(target, "unknown_member") >= counts["unknown_member"] + 5)
    wait_until(all_counted, 3.0, interval=0.05, what="the rejections to be counted")
    after = target.cluster_view()
    assert after["epoch"] == before["epoch"]  # nothing changed the view
    assert all(m["state"] == "up" for m in after["members"])
    assert "rejected a" in target.log_tail(20000)
    c.wait_settled(c.members, timeout=3)


@pytest.mark.timeout(60)
def test_admin_api_refuses_bad_calls(keyed_cluster):
    c = keyed_cluster
    m = c.members[0]
    listed = c.members_json(version=5)
    # Unauthenticated or wrong token.
    assert m.http("PUT", "/v1/members", listed, token=None)[0] == 401
    assert m.http("PUT", "/v1/members", listed, token="nope")[0] == 401
    assert m.http("POST", "/v1/leave", token=None)[0] == 401
    assert 'reason="unauthorized"} 3' in m.metrics()
    # Bad JSON and invalid lists.
    status, body = m.http("PUT", "/v1/members", b"{not json")
    assert status == 400 and "JSON" in body["error"]
    dup = c.members_json(version=5)
    dup["members"].append(dict(dup["members"][0]))
    status, body = m.http("PUT", "/v1/members", dup)
    assert status == 400 and "appears twice" in body["error"]
    assert m.http("PUT", "/v1/members", b"\x00\xff" * 100)[0] == 400
    # Over the 1 MiB body limit: a 413, or the connection closed while the client still sends.
    try:
        assert m.http("PUT", "/v1/members", b"x" * (2 * 1024 * 1024))[0] == 413
    except urllib.error.URLError:
        pass
    # Two members at once.
    extra = [{"id": f"new-{i}", "host": f"127.0.0.{200 + i}", "client_port": 7000,
              "peer_port": 7001, "shards": 1} for i in range(2)]
    two = c.members_json(version=6)
    two["members"] += extra
    status, body = m.http("PUT", "/v1/members", two)
    assert status == 409 and "one member at a time" in body["error"]
    # Unknown paths and methods.
    assert m.http("GET", "/v1/nothing")[0] == 404
    assert m.http("DELETE", "/v1/cluster")[0] == 405
    # Garbage on the admin socket: a 400 and nothing else breaks.
    with socket.create_connection((m.host, m.admin_port), timeout=2) as s:
        s.sendall(b"\x16\x03\x01 garbage\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 400")
    # Abrupt disconnects: half a request, then a reset; half a body, then a close.
    with socket.create_connection((m.host, m.admin_port), timeout=2) as s:
        s.sendall(b"GET /v1/clu")
    with socket.create_connection((m.host, m.admin_port), timeout=2) as s:
        s.sendall(b"PUT /v1/members HTTP/1.1\r\nContent-Length: 1000\r\n\r\n{\"ver")
    # The cluster is unharmed.
    c.wait_settled(c.members, timeout=3)
    assert m.http("PUT", "/v1/members", c.members_json(version=5))[0] == 200


@pytest.mark.timeout(60)
def test_one_member_change_at_a_time_is_applied(keyed_cluster):
    c = keyed_cluster
    # Announce a fourth member that never starts: 3 of 4 still form a majority, nothing moves
    # until it is heard; then remove it again.
    ghost = Member(c, 3, c.members[0].host.rsplit(".", 1)[0] + ".4")
    grown = c.members_json(version=2, members=c.members + [ghost])
    for m in c.members:
        status, body = m.http("PUT", "/v1/members", grown)
        assert status == 200 and body["changed"] is True, body
    for m in c.members:
        v = wait_until(lambda: (lambda v: v if len(v["members"]) == 4 else None)(m.cluster_view()),
                       2.0, what="the view of the new list")
        assert v["members_version"] == 2 and not v["fenced"]
        assert next(x for x in v["members"] if x["id"] == ghost.id)["state"] == "down"
    shrunk = c.members_json(version=3)
    for m in c.members:
        assert m.http("PUT", "/v1/members", shrunk)[0] == 200
    c.wait_settled(c.members, timeout=3)


@pytest.mark.timeout(30)
def test_invalid_member_lists_stop_startup(server_log_dir):
    binary = str(keep_bin())
    env = {"KEEP_SECRET": "s", "KEEP_PEER_SECRET": "p", "PATH": "/usr/bin:/bin"}
    cases = [
        (["--members", "a@127.0.0.1:7000:7001:1,a@127.0.0.2:7000:7001:1", "--member-id", "a"],
         "appears twice"),
        (["--members", "a@127.0.0.1:7000:7001:1,b@127.0.0.1:7000:7003:1", "--member-id", "a"],
         "used twice"),
        (["--members", "a@127.0.0.1:7000:7001:1", "--member-id", "zz"], "not in the member list"),
        (["--members", "a@127.0.0.1:7000", "--member-id", "a"], "id@host:client_port"),
        (["--members", "a@127.0.0.1:7000:7001:1"], "member-id"),
    ]
    for args, message in cases:
        r = subprocess.run([binary, *args], capture_output=True, timeout=10, env=env)
        assert r.returncode != 0 and message in r.stderr.decode(), (args, r.stderr)
    # Secrets are required in cluster mode and never printed.
    r = subprocess.run([binary, "--members", "a@127.0.0.1:7000:7001:1", "--member-id", "a"],
                       capture_output=True, timeout=10, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode != 0 and "peer secret" in r.stderr.decode()
    r = subprocess.run([binary, "--secret", "x"], capture_output=True, timeout=10, env=env)
    assert r.returncode != 0 and "unknown setting --secret" in r.stderr.decode()
