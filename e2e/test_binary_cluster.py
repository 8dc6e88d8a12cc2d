"""Keep's binary protocol against real keep-server clusters (dataplane/proto/binary_protocol.md
§3, §4 TOPOLOGY; design §3.4-3.6).

Every member runs on its own loopback address with shard ports (helpers/cluster.py). TOPOLOGY
must answer from the member's view (members, epoch, every shard's endpoint and its slot ranges,
coalesced), agree with CLUSTER SLOTS and across members, and name endpoints that serve their
slots. The statuses only a cluster produces are checked with their payloads: MOVED (slot, the
deciding view's epoch, the owning shard's endpoint), BUSY for a LOCK under the quarantine that
follows a crash, FENCED on a member that lost its majority. After each, the connection that got
the status stays usable and other clients are unharmed.
"""

from __future__ import annotations

import signal
import struct
import time

import pytest
from helpers.binary import (BUSY, COMMAND, FENCED, GET, LOCK, MOVED, NIL, OK, PING, SET,
                            TOPOLOGY, TOPOLOGY_CLUSTER, TOPOLOGY_FENCED, BinConn, command_body,
                            frame, parse_moved, parse_topology, u64)
from helpers.cluster import Cluster, wait_until
from helpers.server import is_redis_binary, keep_bin

pytestmark = pytest.mark.skipif(is_redis_binary(keep_bin()),
                                reason="cluster suites need keep-server")

CLUSTERDOWN = b"CLUSTERDOWN The cluster is down"


def start(c: Cluster) -> Cluster:
    """Starts the cluster; when it does not settle, the failure shows each member's view and the
    tail of its log, which is what tells a stuck handoff from a member that never came up."""
    try:
        return c.start()
    except AssertionError as e:
        views = []
        for m in c.members:
            try:
                v = m.cluster_view()
                views.append(f"{m.id}: phase={v['phase']} fenced={v['fenced']} epoch={v['epoch']} "
                             f"members={[x['state'] for x in v['members']]} "
                             f"owners={v['owners_digest']} handoff={v['handoff']}\n"
                             f"{m.log_tail(1500)}")
            except (OSError, AssertionError, ValueError) as error:
                views.append(f"{m.id}: no view ({error!r})")
        raise AssertionError(f"{e}\n" + "\n".join(views)) from None


@pytest.fixture(scope="module")
def cluster(server_log_dir):
    """Three members, two shards each, each shard on its own port."""
    c = Cluster(3, server_log_dir, name="binary", shards=2, shard_ports=True)
    try:
        start(c)
        yield c
    finally:
        problems = c.teardown(allowed_exits=(0, -9))
    assert not problems, "\n".join(problems)


@pytest.fixture
def make_cluster(server_log_dir, request):
    made: list[Cluster] = []

    def make(n: int, **kw) -> Cluster:
        c = Cluster(n, server_log_dir, name=request.node.name[:40], shard_ports=True, **kw)
        made.append(c)
        return start(c)

    yield make
    problems = []
    for c in made:
        problems += c.teardown(allowed_exits=(0, -9))
    assert not problems, "\n".join(problems)


@pytest.fixture
def bconn():
    conns: list[BinConn] = []

    def connect(host: str, port: int) -> BinConn:
        c = BinConn(port, host=host)
        conns.append(c)
        return c

    yield connect
    for c in conns:
        c.close()


def topology_of(conn: BinConn, rid: int = 900):
    r = conn.call(frame(rid, TOPOLOGY))
    assert r.status == OK, r
    return parse_topology(r.body)


def slot_of(member, key: bytes) -> int:
    return member.call("CLUSTER", "KEYSLOT", key).value


def slot_map(topology) -> list[tuple[str, int] | None]:
    """slot -> (host, port) of the endpoint listing it; asserts no slot is listed twice."""
    owners: list[tuple[str, int] | None] = [None] * 16384
    for e in topology.endpoints:
        for first, last in e.ranges:
            assert 0 <= first <= last <= 16383, (e, first, last)
            for slot in range(first, last + 1):
                assert owners[slot] is None, f"slot {slot} listed twice"
                owners[slot] = (e.host, e.port)
    return owners


def resp_slot_map(member) -> list[tuple[str, int] | None]:
    """slot -> (host, port) from CLUSTER SLOTS over RESP."""
    owners: list[tuple[str, int] | None] = [None] * 16384
    reply = member.call("CLUSTER", "SLOTS")
    for entry in reply.value:
        first, last, node = entry.value[0].value, entry.value[1].value, entry.value[2].value
        host, port = node[0].value.decode(), node[1].value
        for slot in range(first, last + 1):
            owners[slot] = (host, port)
    return owners


def member_owning(cluster: Cluster, topology, slot: int):
    owner = topology.owner_of(slot)
    for tm in topology.members:
        if owner in tm.endpoints:
            return next(m for m in cluster.members if m.id == tm.id), owner
    raise AssertionError(f"slot {slot} has no owner in {topology}")


def check_topology(cluster: Cluster, member, topology) -> None:
    view = member.cluster_view()
    assert topology.flags == TOPOLOGY_CLUSTER
    assert topology.epoch == view["epoch"] > 0
    assert topology.members[topology.self_index].id == member.id
    assert [m.id for m in topology.members] == [m["id"] for m in view["members"]]
    by_id = {m.id: m for m in cluster.members}
    slots_in_view = {m["id"]: m["slots"] for m in view["members"]}
    for tm in topology.members:
        m = by_id[tm.id]
        assert (tm.host, tm.client_port, tm.state) == (m.host, m.client_port, "up")
        # Every shard of every member is an endpoint: its shard port, in shard order.
        assert [(e.host, e.port) for e in tm.endpoints] == \
            [(m.host, m.shard_port_base + i) for i in range(cluster.shards)]
        assert sum(last - first + 1 for e in tm.endpoints for first, last in e.ranges) == \
            slots_in_view[tm.id]
        if cluster.shards > 1:
            # Shard i serves its member's slots with slot mod shards == i, so consecutive slots
            # alternate between shards and every range is one slot.
            for i, e in enumerate(tm.endpoints):
                assert all(first == last and first % cluster.shards == i
                           for first, last in e.ranges), e
    assert sum(len(tm.endpoints) for tm in topology.members) == len(topology.endpoints)
    owners = slot_map(topology)
    assert None not in owners, "a slot no endpoint lists"
    for e in topology.endpoints:
        # Coalesced: ranges in order, and no range starts right where the previous one ended.
        assert all(a[1] + 1 < b[0] for a, b in zip(e.ranges, e.ranges[1:])), e


@pytest.mark.timeout(60)
def test_topology_is_the_cluster_view(cluster, bconn):
    maps = []
    for m in cluster.members:
        for port in (m.client_port, m.shard_port_base + 1):
            topology = topology_of(bconn(m.host, port))
            check_topology(cluster, m, topology)
            maps.append(slot_map(topology))
        # The same owners as CLUSTER SLOTS over RESP.
        assert maps[-1] == resp_slot_map(m)
    # Every member (and every shard of it) reports the same owners.
    assert all(mp == maps[0] for mp in maps)


@pytest.mark.timeout(60)
def test_topology_ranges_coalesce_with_one_shard_per_member(make_cluster, bconn):
    """One shard per member: an endpoint's runs of consecutive slots are single ranges, so the
    reply lists exactly as many ranges as the slot map has runs."""
    c = make_cluster(3, shards=1)
    m = c.members[1]
    topology = topology_of(bconn(m.host, m.client_port))
    check_topology(c, m, topology)
    owners = slot_map(topology)
    runs = 1 + sum(owners[s] != owners[s - 1] for s in range(1, 16384))
    assert sum(len(e.ranges) for e in topology.endpoints) == runs < 16384
    assert max(last - first for e in topology.endpoints for first, last in e.ranges) > 0


@pytest.mark.timeout(60)
def test_every_endpoint_serves_its_slots(cluster, bconn):
    m0 = cluster.members[0]
    topology = topology_of(bconn(m0.host, m0.client_port))
    conns = {}
    for e in topology.endpoints:
        c = conns[(e.host, e.port)] = bconn(e.host, e.port)
        assert c.call(frame(1, PING)).body == b"PONG"
    served = set()
    for i in range(200):
        key = f"route:{i}".encode()
        e = topology.owner_of(slot_of(m0, key))
        c = conns[(e.host, e.port)]
        assert c.call(frame(2, SET, key, u64(0) + b"v" + key)).status == OK
        assert c.call(frame(3, GET, key)).body == b"v" + key
        served.add((e.host, e.port))
    assert len(served) == len(topology.endpoints) == 6


@pytest.mark.timeout(60)
def test_moved_names_the_owning_shard_and_the_view_epoch(cluster, bconn):
    m0 = cluster.members[0]
    topology = topology_of(bconn(m0.host, m0.client_port))
    key = b"moved-key"
    slot = slot_of(m0, key)
    owner_member, owner = member_owning(cluster, topology, slot)
    other = next(m for m in cluster.members if m is not owner_member)
    # Epochs are per member: MOVED carries the epoch of the view of the member that answered.
    seen_by_other = topology_of(bconn(other.host, other.client_port))
    assert seen_by_other.owner_of(slot) == owner
    mine = next(k for k in (f"mine:{i}".encode() for i in range(2000))
                if other.call("GET", k).kind != "error")
    for port in (other.client_port, other.shard_port_base, other.shard_port_base + 1):
        c = bconn(other.host, port)
        for rid, request in ((1, frame(1, GET, key)), (2, frame(2, SET, key, u64(0) + b"x")),
                             (3, frame(3, LOCK, key, u64(1000) + b"me")),
                             (4, frame(4, COMMAND, body=command_body(b"GET", key)))):
            r = c.call(request)
            assert (r.id, r.status) == (rid, MOVED), r
            moved = parse_moved(r.body)
            assert (moved.slot, moved.epoch, moved.host, moved.port) == \
                (slot, seen_by_other.epoch, owner.host, owner.port)
        # The connection that was redirected goes on: PING, and a key its member owns.
        assert c.call(frame(5, PING)).body == b"PONG"
        assert c.call(frame(6, SET, mine, u64(0) + b"here")).status == OK
        assert c.call(frame(7, GET, mine)).body == b"here"
    # Following the redirect reaches the owning shard, which serves the key.
    d = bconn(owner.host, owner.port)
    assert d.call(frame(1, SET, key, u64(0) + b"at-owner")).status == OK
    assert d.call(frame(2, GET, key)).body == b"at-owner"
    # RESP clients are unharmed and see the same redirect in their own form.
    r = other.call("GET", key)
    assert r.kind == "error" and r.value == f"MOVED {slot} {owner.host}:{owner.port}".encode()
    assert owner_member.call("PING").value in (b"PONG", "PONG")


@pytest.mark.timeout(90)
def test_lock_quarantine_after_a_crash_is_busy(make_cluster, bconn):
    c = make_cluster(3, max_lock_ttl=1000, shards=2)
    # The first member started is the victim: its slots were its own from the first view rather
    # than gained by a join.
    victim, survivors = c.members[0], c.members[1:]
    before = topology_of(bconn(victim.host, victim.client_port))
    key = next(k for k in (f"q{i}".encode() for i in range(5000))
               if member_owning(c, before, slot_of(victim, k))[0] is victim)
    slot = slot_of(victim, key)
    lock_key = b"{" + key + b"}:lock"
    assert slot_of(victim, lock_key) == slot
    # The victim grants a lock in the slot (once its own join quarantine, if any, has passed):
    # that lock is what the quarantine on the new owner protects.
    at_victim = bconn(before.owner_of(slot).host, before.owner_of(slot).port)
    wait_until(lambda: at_victim.call(frame(1, LOCK, lock_key, u64(1000) + b"owner-a")).status
               == OK, 5.0, interval=0.02, what="a first lock at the victim")
    epoch_before = topology_of(bconn(survivors[0].host, survivors[0].client_port)).epoch
    victim.kill9()
    t_dead = time.monotonic()

    def new_owner():
        t = topology_of(bconn(survivors[0].host, survivors[0].client_port))
        states = {m.id: m.state for m in t.members}
        if states[victim.id] != "down" or t.owner_of(slot) is None:
            return None
        return t
    after = wait_until(new_owner, 5.0, interval=0.02, what="a view without the victim")
    assert after.epoch > epoch_before and not after.fenced
    owner = after.owner_of(slot)
    assert owner not in next(m for m in after.members if m.id == victim.id).endpoints
    conn = bconn(owner.host, owner.port)
    # The dead member's lock may still be held: LOCK in its slot answers BUSY until max-lock-ttl
    # plus the detection time has passed.
    r = conn.call(frame(1, LOCK, lock_key, u64(1000) + b"owner-b"))
    elapsed = time.monotonic() - t_dead
    assert r.status == BUSY, (r, f"{elapsed:.3f} s after the crash")
    # BUSY carries the quarantine's remaining time: max-lock-ttl (1000 ms) plus the detection
    # time and a margin, less what has passed since the crash.
    (retry_ms,) = struct.unpack("<I", r.body)
    assert 1000 - elapsed * 1000 < retry_ms <= 3000, (retry_ms, elapsed)
    # The slot itself serves (it opened empty) and the connection goes on.
    assert conn.call(frame(2, GET, key)).status == NIL
    assert conn.call(frame(3, SET, key, u64(0) + b"new")).status == OK
    assert conn.call(frame(4, PING)).body == b"PONG"
    # Once the quarantine has passed, the same connection gets the lock.
    wait_until(lambda: conn.call(frame(5, LOCK, lock_key, u64(1000) + b"owner-b")).status == OK,
               5.0, interval=0.02, what="the quarantine to end")
    assert time.monotonic() - t_dead >= 1.0
    # Other members and clients were unharmed throughout.
    for m in survivors:
        assert m.call("PING").value in (b"PONG", "PONG")


@pytest.mark.timeout(90)
def test_fenced_member_answers_fenced_and_recovers(make_cluster, bconn):
    c = make_cluster(3, shards=1)
    survivor, stopped = c.members[0], c.members[1:]
    before = topology_of(bconn(survivor.host, survivor.client_port))
    key = next(k for k in (f"f{i}".encode() for i in range(5000))
               if member_owning(c, before, slot_of(survivor, k))[0] is survivor)
    conn = bconn(survivor.host, survivor.shard_port_base)
    assert conn.call(frame(1, SET, key, u64(0) + b"kept")).status == OK
    for m in stopped:
        m.signal(signal.SIGSTOP)
    try:
        wait_until(lambda: survivor.cluster_view()["fenced"], 5.0, interval=0.02,
                   what="the survivor to fence itself")
        # Reads and writes, typed and COMMAND, are refused with FENCED and Redis's text.
        for rid, request in ((2, frame(2, GET, key)), (3, frame(3, SET, key, u64(0) + b"no")),
                             (4, frame(4, COMMAND, body=command_body(b"GET", key))),
                             (5, frame(5, LOCK, key + b"l", u64(1000) + b"me"))):
            r = conn.call(request)
            assert (r.id, r.status, r.body) == (rid, FENCED, CLUSTERDOWN), r
        # The connection is still open: PING and TOPOLOGY answer, and say why.
        assert conn.call(frame(6, PING)).body == b"PONG"
        t = topology_of(conn, 7)
        assert t.flags == TOPOLOGY_CLUSTER | TOPOLOGY_FENCED
        assert {m.id: m.state for m in t.members} == \
            {survivor.id: "up", stopped[0].id: "down", stopped[1].id: "down"}
        # Another client, binary and RESP, gets the same answer; nothing breaks.
        other = bconn(survivor.host, survivor.client_port)
        assert other.call(frame(1, GET, key)).status == FENCED
        r = survivor.call("GET", key)
        assert r.kind == "error" and r.value == CLUSTERDOWN
    finally:
        for m in stopped:
            m.signal(signal.SIGCONT)
    c.wait_settled(c.members, timeout=20)
    # The same connection serves again once the member hears a majority.
    wait_until(lambda: conn.call(frame(8, GET, key)).status != FENCED, 5.0, interval=0.02,
               what="the survivor to serve again")
    after = topology_of(conn, 9)
    assert after.flags == TOPOLOGY_CLUSTER and after.epoch > before.epoch
    owner_member, owner = member_owning(c, after, slot_of(survivor, key))
    d = bconn(owner.host, owner.port)
    assert d.call(frame(1, SET, key, u64(0) + b"again")).status == OK
    assert d.call(frame(2, GET, key)).body == b"again"
