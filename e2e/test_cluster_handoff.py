"""Clean handoff end to end (design §3.5): a member that leaves hands every key over, a member
that joins pulls the keys of the slots it gains, and nothing acknowledged is lost, with locks
(tokens, owners), counters and remaining TTLs travelling with their keys.

The members use `--slot-hash crc16` so the test computes slots itself; a small router follows
MOVED and retries TRYAGAIN/CLUSTERDOWN (what every cluster client does), with a bound on time.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest
from helpers.cluster import Cluster, wait_until
from helpers.resp import ConnectionClosed, RawConnection, ReplyTimeout
from helpers.server import is_redis_binary, keep_bin

pytestmark = pytest.mark.skipif(is_redis_binary(keep_bin()),
                                reason="cluster suites need keep-server")

KEYS = 3000
LOCK_TTL_MS = 60000  # locks outlive the test: their holders and tokens must survive the move


class Router:
    """Sends a command to the owner of its key, following MOVED, retrying TRYAGAIN/CLUSTERDOWN
    and a refused connection (a member that just left) until `timeout`."""

    def __init__(self, seeds, timeout: float = 20.0):
        self.seeds = [f"{m.host}:{m.client_port}" for m in seeds]
        self.timeout = timeout
        self.conns: dict[str, RawConnection] = {}
        self.by_key: dict[bytes, str] = {}
        self.retries = 0

    def _conn(self, endpoint: str) -> RawConnection:
        c = self.conns.get(endpoint)
        if c is None:
            host, port = endpoint.rsplit(":", 1)
            c = RawConnection(host, int(port), timeout=5, connect_timeout=2)
            self.conns[endpoint] = c
        return c

    def call(self, key: bytes, *args):
        deadline = time.monotonic() + self.timeout
        endpoint = self.by_key.get(key, self.seeds[0])
        seed = 0
        while True:
            try:
                r = self._conn(endpoint).call(*args, timeout=5)
            except (OSError, ConnectionClosed, ReplyTimeout) as e:  # that member is gone: try a seed
                self.conns.pop(endpoint, None)
                seed += 1
                endpoint = self.seeds[seed % len(self.seeds)]
                last = e
            else:
                if r.kind != "error":
                    self.by_key[key] = endpoint
                    return r
                text = bytes(r.value)
                if text.startswith(b"MOVED "):
                    endpoint = text.split()[2].decode()
                    continue
                if not (text.startswith(b"TRYAGAIN") or text.startswith(b"CLUSTERDOWN")):
                    return r
                last = text
            self.retries += 1
            if time.monotonic() > deadline:
                raise AssertionError(f"{args!r}: no answer within {self.timeout}s ({last!r})")
            time.sleep(0.01)

    def close(self):
        for c in self.conns.values():
            c.close()


@pytest.fixture
def make_cluster(server_log_dir, request):
    made: list[Cluster] = []

    def make(n: int, start: int | None = None) -> Cluster:
        c = Cluster(n, server_log_dir, name=request.node.name[:40], shards=2,
                    slot_hash="crc16", shard_ports=True, max_lock_ttl=LOCK_TTL_MS)
        made.append(c)
        first = c.members[:start or n]
        members = ",".join(m.inline() for m in first)
        for m in first:
            m.start(members)
        c.wait_settled(first, 20)
        return c

    yield make
    problems = []
    for c in made:
        c.close()
        problems += c.problems()
    assert not problems, "\n".join(problems)


def load(router: Router) -> dict:
    """Writes strings (a third with a TTL), counters and locks; returns what each key holds."""
    expected = {}
    for i in range(KEYS):
        kind = i % 4
        key = f"h:{kind}:{i}".encode()
        if kind == 0:
            assert router.call(key, "SET", key, b"v" * (i % 200)).value == b"OK"
            expected[key] = ("string", b"v" * (i % 200), None)
        elif kind == 1:
            assert router.call(key, "SET", key, f"t{i}", "PX", 120000).value == b"OK"
            expected[key] = ("string", f"t{i}".encode(), 120000)
        elif kind == 2:
            assert router.call(key, "INCRBY", key, i).value == i
            expected[key] = ("counter", i, None)
        else:
            token = router.call(key, "LOCK", key, f"owner{i}", LOCK_TTL_MS)
            assert token.kind == "int", token
            expected[key] = ("lock", f"owner{i}".encode(), token.value)
    return expected


def check(router: Router, expected: dict, written_at: float) -> None:
    """`written_at`: when the load began (the remaining TTLs are bounded from it)."""
    lost, wrong = [], []
    for key, (kind, value, extra) in expected.items():
        if kind in ("string", "counter"):
            r = router.call(key, "GET", key)
            want = str(value).encode() if kind == "counter" else value
            if r.value is None:
                lost.append(key)
            elif r.value != want:
                wrong.append((key, r))
            elif extra is not None:
                pttl = router.call(key, "PTTL", key).value
                elapsed_ms = (time.monotonic() - written_at) * 1000
                # Remaining time travels: never longer than set, never shorter than what passed
                # (plus a margin for the transfer itself).
                if not (extra - elapsed_ms - 2000 <= pttl <= extra):
                    wrong.append((key, f"pttl {pttl}"))
        else:
            info = router.call(key, "LOCKINFO", key)
            if info.kind != "array" or not info.value:
                lost.append(key)
                continue
            fields = {bytes(info.value[i].value): info.value[i + 1].value
                      for i in range(0, len(info.value), 2)}
            if fields.get(b"owner") != value or fields.get(b"token") != extra:
                wrong.append((key, fields))
    assert not lost, f"{len(lost)} of {len(expected)} keys lost, e.g. {lost[:5]}"
    assert not wrong, f"{len(wrong)} keys differ, e.g. {wrong[:5]}"


def total_keys(members) -> int:
    return sum(m.call("DBSIZE").value for m in members)


@pytest.mark.timeout(120)
def test_leave_on_sigterm_hands_every_key_over(make_cluster):
    c = make_cluster(3)
    router = Router(c.members)
    try:
        written_at = time.monotonic()
        expected = load(router)
        leaver, stayers = c.members[2], c.members[:2]
        had = leaver.call("DBSIZE").value
        assert had > KEYS // 6, had  # it held its share before leaving
        leaver.signal(signal.SIGTERM)
        assert leaver.proc.wait(timeout=60) == 0
        assert "has left" in leaver.log_tail(20000)
        c.wait_settled(stayers, 10)
        assert total_keys(stayers) == KEYS
        check(router, expected, written_at)
        # The fencing counters travelled too: a lock taken again after release gets a larger token.
        for key, (kind, owner, token) in list(expected.items())[3:400:4]:
            assert router.call(key, "UNLOCK", key, owner).value == 1
            again = router.call(key, "LOCK", key, b"next", 1000)
            assert again.kind == "int" and again.value > token, (key, token, again)
        view = stayers[0].cluster_view()
        assert view["handoff"]["in_flight"] == 0
        metrics = stayers[0].metrics() + stayers[1].metrics()
        assert "keep_handoff_keys_imported_total" in metrics
    finally:
        router.close()


@pytest.mark.timeout(120)
def test_join_pulls_the_slots_it_gains(make_cluster):
    c = make_cluster(4, start=3)
    router = Router(c.members[:3])
    try:
        written_at = time.monotonic()
        expected = load(router)
        old, joiner = c.members[:3], c.members[3]
        grown = c.members_json(version=2)
        for m in old:
            status, body = m.http("PUT", "/v1/members", grown)
            assert status == 200, body
        joiner.start(c.inline())
        c.wait_settled(c.members, 30)
        gained = joiner.call("DBSIZE").value
        # Rendezvous placement gives the fourth member about a quarter of the slots.
        assert KEYS // 8 < gained < KEYS // 2, gained
        assert total_keys(c.members) == KEYS
        check(router, expected, written_at)
        assert joiner.cluster_view()["slots_owned"] > 16384 // 8
    finally:
        router.close()


@pytest.mark.timeout(180)
def test_acknowledged_writes_survive_a_leave_and_a_join_under_load(make_cluster):
    """Writers keep going while one member leaves and later a new one joins: every write
    that was acknowledged is readable at the end, with the last acknowledged value."""
    c = make_cluster(4, start=3)
    stop = threading.Event()
    acknowledged: dict[bytes, int] = {}
    errors: list[str] = []

    def writer(n: int):
        router = Router(c.members, timeout=30)
        try:
            i = 0
            while not stop.is_set():
                key = f"w{n}:{i % 500}".encode()
                r = router.call(key, "SET", key, str(i))
                if r.kind == "error":
                    errors.append(repr(r))
                    return
                acknowledged[key] = i
                i += 1
        except AssertionError as e:
            errors.append(str(e))
        finally:
            router.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)
        leaver = c.members[2]
        leaver.signal(signal.SIGTERM)
        assert leaver.proc.wait(timeout=60) == 0
        stayers = c.members[:2]
        c.wait_settled(stayers, 10)
        time.sleep(0.5)
        # The leaver leaves the list, then a new member is added and joins (one change at a
        # time, as the operator does it).
        joiner = c.members[3]
        shrunk = c.members_json(version=2, members=stayers)
        grown = c.members_json(version=3, members=stayers + [joiner])
        for listed in (shrunk, grown):
            for m in stayers:
                status, body = m.http("PUT", "/v1/members", listed)
                assert status == 200, body
        joiner.start(",".join(m.inline() for m in (c.members[0], c.members[1], joiner)))
        c.wait_settled(stayers + [joiner], 30)
        time.sleep(1.0)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors[:3]
    assert len(acknowledged) == 1500
    router = Router(c.members[:2])
    try:
        for key, value in acknowledged.items():
            assert router.call(key, "GET", key).value == str(value).encode(), key
    finally:
        router.close()
