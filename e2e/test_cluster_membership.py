"""Cluster membership end to end: views, failure detection, fencing, rejoin, quarantine.

Every member runs on its own loopback address (helpers/cluster.py); partitions drop traffic
between addresses with an iptables chain that is removed even when a test fails. Figures are
printed (run with -s to see them); the 250 ms bounds come from the design (§3.4: heartbeats
every 25 ms, dead after 225 ms of silence).
"""

from __future__ import annotations

import signal
import time

import pytest
from helpers.cluster import Cluster, mono_raw_ms, wait_until
from helpers.server import is_redis_binary, keep_bin

pytestmark = pytest.mark.skipif(is_redis_binary(keep_bin()),
                                reason="cluster suites need keep-server")

# Detection (225 ms) plus one heartbeat period (25 ms): the design's bound.
DETECTION_BOUND_MS = 250


@pytest.fixture
def make_cluster(server_log_dir, request):
    made: list[Cluster] = []

    def make(n: int, **kw) -> Cluster:
        c = Cluster(n, server_log_dir, name=request.node.name[:40], **kw)
        made.append(c)
        return c.start()

    yield make
    problems = []
    for c in made:
        c.close()
        # Every member leaves cleanly on SIGTERM (exit 0) unless a test killed it.
        problems += c.problems(allowed_exits=(0, -9))
    assert not problems, "\n".join(problems)


def down_in(view: dict, member_id: str) -> bool:
    return any(m["id"] == member_id and m["state"] == "down" for m in view["members"])


def up_in(view: dict, member_id: str) -> bool:
    return any(m["id"] == member_id and m["state"] in ("up", "joining") for m in view["members"])


def wait_agree_down(survivors, victim_id: str, timeout: float = 3.0) -> list[dict]:
    def agreed():
        views = [m.cluster_view() for m in survivors]
        if all(down_in(v, victim_id) for v in views) and \
                len({v["owners_digest"] for v in views}) == 1:
            return views
        return None
    return wait_until(agreed, timeout, what=f"survivors to agree {victim_id} is down")


def key_served_by(member, prefix: str = "k") -> bytes:
    """A key whose slot `member` serves (it answers without a redirect)."""
    for i in range(2000):
        key = f"{prefix}{i}".encode()
        r = member.call("GET", key)
        if r.kind != "error":
            return key
    raise AssertionError(f"{member.id} serves none of 2000 keys")


@pytest.mark.timeout(60)
def test_three_members_agree_on_a_view(make_cluster):
    c = make_cluster(3)
    views = [m.cluster_view() for m in c.members]
    assert len({v["owners_digest"] for v in views}) == 1
    for v in views:
        assert v["phase"] == "serving" and v["fenced"] is False
        assert [m["state"] for m in v["members"]] == ["up", "up", "up"]
        assert sum(m["slots"] for m in v["members"]) == 16384
        # Members booting together ask each other for their slots (empty pulls): none left.
        assert v["handoff"]["in_flight"] == 0
        assert v["slot_hash"] == "keyed"
    # Each member serves about a third; together every slot once.
    assert sum(v["slots_owned"] for v in views) == 16384
    for v in views:
        assert 4500 < v["slots_owned"] < 6500
    # A key is served by exactly one member; the others redirect to it.
    key = key_served_by(c.members[0])
    for m in c.members[1:]:
        r = m.call("GET", key)
        assert r.kind == "error" and r.value.startswith(b"MOVED ")
        slot, endpoint = r.value.split()[1:]
        assert endpoint.decode() == f"{c.members[0].host}:{c.members[0].client_port}"
    assert c.members[0].call("SET", key, b"v").value == b"OK"
    for m in c.members:
        assert m.ready()
        assert "keep_cluster_view_epoch" in m.metrics()


@pytest.mark.timeout(60)
def test_kill9_member_survivors_agree_within_bound(make_cluster):
    c = make_cluster(3)
    victim, survivors = c.members[2], c.members[:2]
    epochs = [m.cluster_view()["epoch"] for m in survivors]
    t_kill = mono_raw_ms()
    victim.kill9()
    views = wait_agree_down(survivors, victim.id)
    figure = max(v["view_built_monotonic_raw_ms"] for v in views) - t_kill
    print(f"\nkill -9: survivors agreed on the new view {figure:.0f} ms after the kill")
    assert figure <= DETECTION_BOUND_MS
    for v, before in zip(views, epochs):
        assert v["epoch"] > before and not v["fenced"]
        assert sum(m["slots"] for m in v["members"] if m["id"] != victim.id) == 16384
    # 2 of 3 is a majority: the survivors keep serving every key.
    for i in range(50):
        r = survivors[0].call("GET", f"x{i}")
        assert r.kind != "error" or r.value.startswith(b"MOVED"), r


@pytest.mark.timeout(60)
def test_sigstop_then_sigcont_rejoins(make_cluster):
    c = make_cluster(3)
    victim, survivors = c.members[1], [c.members[0], c.members[2]]
    t_stop = mono_raw_ms()
    victim.signal(signal.SIGSTOP)
    try:
        views = wait_agree_down(survivors, victim.id)
        figure = max(v["view_built_monotonic_raw_ms"] for v in views) - t_stop
        print(f"\nSIGSTOP: survivors agreed on the new view {figure:.0f} ms after the stop")
        assert figure <= DETECTION_BOUND_MS
        epochs = [v["epoch"] for v in views]
        time.sleep(max(0.0, 1.0 - (mono_raw_ms() - t_stop) / 1000))
    finally:
        victim.signal(signal.SIGCONT)
    # Same incarnation, heard again: a new view with the member back, and all three agree.
    c.wait_settled(c.members, timeout=5)
    for m, before in zip(survivors, epochs):
        v = m.cluster_view()
        assert up_in(v, victim.id) and v["epoch"] > before
    assert victim.cluster_view()["incarnation"] == \
        next(x["incarnation"] for x in c.members[0].cluster_view()["members"] if x["id"] == victim.id)


@pytest.mark.timeout(90)
def test_partition_minority_fences_and_heals(make_cluster):
    c = make_cluster(5)
    minority, majority = c.members[:2], c.members[2:]
    keys = {m.id: key_served_by(m) for m in c.members}
    for m in c.members:
        assert m.call("SET", keys[m.id], b"before").value == b"OK"
    t_cut = c.partition(minority, majority)
    try:
        def fenced_everywhere():
            views = [m.cluster_view() for m in minority]
            return views if all(v["fenced"] for v in views) else None
        views = wait_until(fenced_everywhere, 3.0, what="the minority to fence itself")
        figure = max(v["view_built_monotonic_raw_ms"] for v in views) - t_cut
        print(f"\npartition 2|3: the minority fenced itself {figure:.0f} ms after the cut")
        assert figure <= DETECTION_BOUND_MS
        for m in minority:
            r = m.call("GET", keys[m.id])
            assert (r.kind, r.value) == ("error", b"CLUSTERDOWN The cluster is down")
            r = m.call("LOCK", b"lk:" + keys[m.id], b"me", b"500")
            assert (r.kind, r.value) == ("error", b"CLUSTERDOWN The cluster is down")
            assert m.http("GET", "/readyz")[0] == 503
            # Keyless commands still work, so operators can look inside.
            assert m.call("PING").value == b"PONG"
        # The majority takes over: unfenced, and it serves the minority's slots (empty).
        wait_agree_down(majority, minority[0].id)
        for m in majority:
            assert not m.cluster_view()["fenced"]
        for mk in majority:
            r = mk.call("GET", keys[mk.id])
            assert r.value == b"before"
    finally:
        c.heal()
    t_heal = mono_raw_ms()

    def serving_again():
        return all(m.call("GET", keys[m.id]).kind != "error" for m in minority)
    wait_until(serving_again, 5.0, interval=0.01, what="the minority to serve again")
    print(f"healed: the minority serves again {mono_raw_ms() - t_heal:.0f} ms after the heal")
    c.wait_settled(c.members, timeout=5)


@pytest.mark.timeout(60)
def test_dead_members_slots_open_empty_with_lock_quarantine(make_cluster):
    c = make_cluster(3, max_lock_ttl=1000)
    victim, survivors = c.members[0], c.members[1:]
    key = key_served_by(victim, prefix="q")
    assert victim.call("SET", key, b"lost-with-the-member").value == b"OK"
    # The victim may itself still be in a join quarantine (it joined members already serving).
    wait_until(lambda: victim.call("LOCK", b"{" + key + b"}:lock", b"owner-a", b"1000").kind
               == "int", 5.0, interval=0.02, what="a first lock")
    victim.kill9()
    t_dead = time.monotonic()
    wait_agree_down(survivors, victim.id)
    # Follow the redirect to the new owner of the slot.
    r = survivors[0].call("GET", key)
    owner = survivors[0]
    if r.kind == "error" and r.value.startswith(b"MOVED"):
        endpoint = r.value.split()[2].decode()
        owner = next(m for m in survivors if f"{m.host}:{m.client_port}" == endpoint)
        r = owner.call("GET", key)
    assert r.kind == "bulk" and r.value is None  # the slot opened empty
    lock_key = b"{" + key + b"}:lock"
    r = owner.call("LOCK", lock_key, b"owner-b", b"1000")
    assert r.kind == "error" and r.value.startswith(b"TRYAGAIN"), r
    # Other commands on the slot work during the quarantine.
    assert owner.call("SET", key, b"new").value == b"OK"

    def lock_granted():
        return owner.call("LOCK", lock_key, b"owner-b", b"1000").kind == "int"
    wait_until(lock_granted, 5.0, interval=0.02, what="the quarantine to end")
    waited = time.monotonic() - t_dead
    # Quarantine = max-lock-ttl + detection + margin: the dead member's lease has expired.
    assert waited >= 1.0, waited
    print(f"\nLOCK refused for {waited * 1000:.0f} ms after the crash (max-lock-ttl 1000 ms)")


@pytest.mark.timeout(60)
def test_restarted_member_is_a_new_life_with_its_locks_quarantined(make_cluster):
    c = make_cluster(3, max_lock_ttl=1000)
    victim = c.members[2]
    key = key_served_by(victim, prefix="r")
    lock_key = b"{" + key + b"}:lock"
    wait_until(lambda: victim.call("LOCK", lock_key, b"owner-a", b"1000").kind == "int", 5.0,
               interval=0.02, what="a first lock")
    old = victim.cluster_view()["incarnation"]
    victim.kill9()
    victim.start()  # same id and ports, new process: a new incarnation, its data gone

    def back():
        views = [m.cluster_view() for m in c.members]
        incarnations = {x["incarnation"] for v in views for x in v["members"]
                        if x["id"] == victim.id}
        return incarnations != {old} and len(incarnations) == 1 and views
    wait_until(back, 10.0, interval=0.02, what="every member to know the new life")
    c.wait_settled(c.members, timeout=10)
    assert victim.call("GET", key).value is None
    # The old life may have granted a lock that is still held: LOCK waits out the quarantine.
    r = victim.call("LOCK", lock_key, b"owner-b", b"1000")
    assert r.kind == "error" and r.value.startswith(b"TRYAGAIN"), r
    # It learned of its previous life from its peers' heartbeats (known_incarnation).
    assert b"peers knew a previous life" in victim.log_path.read_bytes()
    wait_until(lambda: victim.call("LOCK", lock_key, b"owner-b", b"1000").kind == "int", 5.0,
               interval=0.02, what="the quarantine to end")


@pytest.mark.timeout(60)
def test_leave_hands_the_slots_over_and_reports_left(make_cluster):
    c = make_cluster(3)
    leaver, stayers = c.members[2], c.members[:2]
    key = key_served_by(leaver, prefix="l")
    status, body = leaver.http("POST", "/v1/leave")
    assert status == 202 and body["phase"] in ("leaving", "left")
    wait_until(lambda: leaver.cluster_view()["phase"] == "left", 5.0, interval=0.02,
               what="the leaver to report left")
    v = leaver.cluster_view()
    assert v["slots_owned"] == 0 and v["handoff"]["in_flight"] == 0
    assert leaver.http("GET", "/readyz")[0] == 503
    assert leaver.http("GET", "/healthz")[0] == 200  # still running, for the operator to see
    # The ready file reports the phase too.
    wait_until(lambda: leaver.ready_file_fields().get("phase") == "left", 2.0,
               what="the ready file to say left")
    assert leaver.ready_file_fields()["settled"] == "false"
    # The others stop counting it as an owner and serve its slots; it redirects there.
    def taken_over():
        views = [m.cluster_view() for m in stayers]
        ok = all(next(x for x in w["members"] if x["id"] == leaver.id)["state"] == "left"
                 and w["slots_owned"] > 0 for w in views)
        return ok and sum(w["slots_owned"] for w in views) == 16384
    wait_until(taken_over, 5.0, interval=0.02, what="the others to take the slots over")
    r = leaver.call("GET", key)
    assert r.kind == "error" and r.value.startswith(b"MOVED ")
    endpoint = r.value.split()[2].decode()
    assert endpoint in {f"{m.host}:{m.client_port}" for m in stayers}
    # A second leave is harmless.
    assert leaver.http("POST", "/v1/leave")[0] == 202
