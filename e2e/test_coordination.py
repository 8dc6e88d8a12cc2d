"""Coordination primitives over a real socket: LOCK/UNLOCK/LOCKEXTEND/LOCKINFO, CL.THROTTLE and
RATE.FIXED (design §2.6).

  * a lock checker: many clients contend for a few locks; the server's own answers (a token on
    acquire, 1 on release) must never show two holders of one lock at once, and tokens must grow;
  * CL.THROTTLE against a Python transcription of redis-cell's GCRA;
  * RATE.FIXED windows over real time;
  * bad input for every new command is refused and leaves the server healthy.

Keep-specific: skipped against a redis-server stand-in.
"""

from __future__ import annotations

import random
import threading
import time

import pytest
import redis
from helpers.clients import make_client
from helpers.resp import Reply, to_python

pytestmark = pytest.mark.keep_only


# --------------------------------------------------------------------------------------------
# Locks


def test_lock_basics(keep):
    # Tokens come from the slot's counter, which FLUSHALL does not reset: compare relatively.
    t = keep.execute_command("LOCK", "res", "alice", 5000)
    assert t >= 1
    assert keep.execute_command("LOCK", "res", "bob", 5000) is None
    assert keep.execute_command("LOCK", "res", "alice", 5000) == t  # renewal keeps the token
    info = keep.execute_command("LOCKINFO", "res")
    assert info[:5] == [b"owner", b"alice", b"token", t, b"ttl_ms"]
    assert 4000 < info[5] <= 5000
    assert keep.execute_command("UNLOCK", "res", "bob") == 0
    assert keep.execute_command("LOCKEXTEND", "res", "alice", 100) == 1
    assert 0 < keep.pttl("res") <= 100
    assert keep.execute_command("UNLOCK", "res", "alice") == 1
    assert keep.execute_command("LOCKINFO", "res") is None
    assert keep.execute_command("LOCK", "res", "bob", 5000) == t + 1
    assert keep.delete("res") == 1
    assert keep.execute_command("LOCK", "res", "carol", 50) == t + 2
    time.sleep(0.2)
    assert keep.execute_command("LOCK", "res", "dave", 50) == t + 3  # the lease ran out
    # The Redis recipe keeps working next to the native commands.
    assert keep.set("plain", "tok", nx=True, px=1000)
    assert keep.execute_command("DELIFEQ", "plain", "tok") == 1


def test_lockinfo_resp3(keep_server, keep, raw):
    c = raw(keep_server)  # redis-py 4 speaks RESP2 only
    assert c.call("HELLO", "3").kind == "map"
    assert c.call("LOCKINFO", "r3") == Reply("null", None)
    token = keep.execute_command("LOCK", "r3", "owner", 5000)
    info = c.call("LOCKINFO", "r3")
    assert info.kind == "map"
    fields = to_python(info)
    assert fields[b"owner"] == b"owner" and fields[b"token"] == token
    assert 0 < fields[b"ttl_ms"] <= 5000


@pytest.mark.timeout(60)
def test_lock_checker_no_overlap_and_growing_tokens(keep_server, keep):
    """32 clients, 8 locks, 20 s: holders of one lock never overlap and tokens only grow."""
    locks = [f"lock:{i}" for i in range(4)] + [f"{{same}}:lock:{i}" for i in range(4)]
    duration = 20.0
    ttl_ms = 10_000  # far longer than any hold, so a release must always find its lease
    records: list[tuple[str, int, float, float]] = []
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + duration
    start = threading.Barrier(32)

    def worker(n: int) -> None:
        rng = random.Random(n)
        c = make_client(keep_server)
        mine = []
        try:
            start.wait()
            attempt = 0
            while time.monotonic() < deadline:
                key = rng.choice(locks)
                owner = f"worker-{n}-{attempt}"
                attempt += 1
                token = c.execute_command("LOCK", key, owner, ttl_ms)
                if token is None:
                    time.sleep(rng.uniform(0, 0.003))
                    continue
                acquired = time.monotonic()  # after the grant arrived
                time.sleep(rng.uniform(0, 0.004))
                released = time.monotonic()  # before the release is sent
                if c.execute_command("UNLOCK", key, owner) != 1:
                    errors.append(f"{owner} lost {key} (token {token}) before releasing it")
                mine.append((key, token, acquired, released))
                time.sleep(rng.uniform(0, 0.002))
        except Exception as e:  # noqa: BLE001
            errors.append(f"worker {n}: {e!r}")
        finally:
            c.close()
            with lock:
                records.extend(mine)

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=duration + 20)
    assert not any(t.is_alive() for t in threads), "a worker hung"
    assert not errors, errors[:5]

    by_lock: dict[str, list[tuple[int, float, float]]] = {}
    for key, token, acquired, released in records:
        by_lock.setdefault(key, []).append((token, acquired, released))
    assert set(by_lock) == set(locks), "every lock was acquired at least once"
    for key, holds in by_lock.items():
        holds.sort(key=lambda h: h[1])
        for (t1, a1, r1), (t2, a2, r2) in zip(holds, holds[1:]):
            assert a2 >= r1, f"{key}: token {t2} acquired at {a2} while token {t1} held until {r1}"
            assert t2 > t1, f"{key}: token {t2} after token {t1}"
    # Locks in one slot share one counter: their tokens are all distinct.
    same = [t for key, holds in by_lock.items() if key.startswith("{same}")
            for t, _, _ in holds]
    assert len(same) == len(set(same))
    assert len(records) > 500, f"only {len(records)} acquisitions: the checker proved little"
    assert keep.ping()


# --------------------------------------------------------------------------------------------
# CL.THROTTLE


class CellModel:
    """redis-cell's rate_limit (src/cell/mod.rs) and reply rounding (src/lib.rs), in integer
    nanoseconds. Expiry of the stored TAT never changes an answer, so it is not modelled."""

    def __init__(self):
        self.tat: dict[str, int] = {}

    @staticmethod
    def _trunc_div(a: int, b: int) -> int:
        """Integer division toward zero, as Rust's."""
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b > 0) else -q

    @classmethod
    def _seconds(cls, ns: int) -> int:
        """time::Duration: as_seconds_f64() as i64, plus 1 if subsec_milliseconds() > 0."""
        secs = cls._trunc_div(ns, 1_000_000_000)
        nanos = ns - secs * 1_000_000_000
        result = int(float(secs) + nanos / 1e9)
        if cls._trunc_div(nanos, 1_000_000) > 0:
            result += 1
        return result

    def throttle(self, key, max_burst, count, period, quantity, now_ms):
        now = now_ms * 1_000_000
        interval = int(float(period * 1_000_000_000) / float(count))
        dvt = interval * (max_burst + 1)
        increment = interval * quantity
        tat = self.tat.get(key, now)
        new_tat = max(now, tat) + increment
        diff = now - (new_tat - dvt)
        retry = -1_000_000_000
        if diff < 0:
            if increment <= dvt:
                retry = -diff
            limited, ttl = 1, tat - now
        else:
            limited, ttl = 0, new_tat - now
            self.tat[key] = new_tat
        remaining = 0
        nxt = dvt - ttl
        if nxt > -interval:
            remaining = int(float(self._trunc_div(nxt, 1000)) /
                            float(self._trunc_div(interval, 1000)))
        return [limited, max_burst + 1, remaining, self._seconds(retry), self._seconds(ttl)]


def test_throttle_burst_matches_model(keep):
    """Back-to-back requests (a few ms apart at most) against intervals of seconds or more:
    the reply cannot depend on those milliseconds, so the model runs them all at t=0."""
    model = CellModel()
    traces = [
        ("t1", 4, 1, 60, [1, 1, 2, 0, 3, 1, 6, 1, 0]),
        ("t2", 0, 1, 10, [1, 1, 0, 2]),
        ("t3", 15, 30, 60, [1] * 20 + [0, 5]),
        ("t4", 2, 3, 7, [2, 2, 1, 0, 1]),
    ]
    for key, burst, count, period, quantities in traces:
        for q in quantities:
            got = keep.execute_command("CL.THROTTLE", key, burst, count, period, q)
            assert got == model.throttle(key, burst, count, period, q, 0), (key, q)
    # The state is a normal key: the TAT in nanoseconds, with an expiry.
    assert int(keep.get("t1")) > 0 and 0 < keep.pttl("t1") <= 6 * 60_000


@pytest.mark.timeout(30)
def test_throttle_over_time_matches_model(keep):
    """Requests at moments half an interval away from every edge (1 s intervals, sleeps to the
    x.5 s marks), so scheduling jitter of tens of ms cannot change an answer."""
    model = CellModel()
    plan = [(0.0, 1), (0.0, 1), (0.0, 1), (0.0, 0), (1.5, 1), (1.5, 1), (1.5, 2), (3.5, 1),
            (3.5, 0), (3.5, 3), (6.5, 2), (6.5, 1)]
    t0 = time.monotonic()
    for at, q in plan:
        delay = t0 + at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        elapsed_ms = int((time.monotonic() - t0) * 1000)
        got = keep.execute_command("CL.THROTTLE", "walk", 2, 1, 1, q)
        assert abs(elapsed_ms - at * 1000) < 400, "the client fell too far behind its plan"
        assert got == model.throttle("walk", 2, 1, 1, q, round(at * 1000)), (at, q, got)


# --------------------------------------------------------------------------------------------
# RATE.FIXED


@pytest.mark.timeout(30)
def test_rate_fixed_windows_over_real_time(keep):
    window = 400
    for _ in range(2):  # two consecutive windows behave alike
        allowed, remaining, reset = keep.execute_command("RATE.FIXED", "fw", 3, window)
        assert (allowed, remaining) == (1, 2) and 0 < reset <= window
        assert keep.execute_command("RATE.FIXED", "fw", 3, window, 2)[:2] == [1, 0]
        allowed, remaining, reset = keep.execute_command("RATE.FIXED", "fw", 3, window)
        assert (allowed, remaining) == (0, 0) and 0 < reset <= window
        assert keep.execute_command("RATE.FIXED", "fw", 3, window, 0)[:2] == [1, 0]
        assert keep.get("fw") == b"3"
        assert 0 < keep.pttl("fw") <= window
        time.sleep(reset / 1000 + 0.05)  # past the window's end
        assert keep.exists("fw") == 0
    # A denied request consumes nothing and opens no window.
    assert keep.execute_command("RATE.FIXED", "big", 2, window, 3) == [0, 2, 0]
    assert keep.exists("big") == 0


# --------------------------------------------------------------------------------------------
# Bad input


BAD_INPUT = [
    ["LOCK"], ["LOCK", "k"], ["LOCK", "k", "o"], ["LOCK", "k", "o", "1", "x"],
    ["LOCK", "k", "o", "0"], ["LOCK", "k", "o", "-5"], ["LOCK", "k", "o", "abc"],
    ["LOCK", "k", "o", "1.5"], ["LOCK", "k", "o", "60001"],
    ["LOCK", "k", "o", "99999999999999999999999"], ["LOCK", "k", "o", b"\xff\x00"],
    ["UNLOCK"], ["UNLOCK", "k"], ["UNLOCK", "k", "o", "x"],
    ["LOCKEXTEND", "k", "o"], ["LOCKEXTEND", "k", "o", "0"], ["LOCKEXTEND", "k", "o", "x"],
    ["LOCKEXTEND", "k", "o", "9223372036854775807"],
    ["LOCKINFO"], ["LOCKINFO", "a", "b"],
    ["CL.THROTTLE"], ["CL.THROTTLE", "k", "1", "1"], ["CL.THROTTLE", "k", "1", "1", "1", "1", "1"],
    ["CL.THROTTLE", "k", "x", "1", "1"], ["CL.THROTTLE", "k", "1", "0", "1"],
    ["CL.THROTTLE", "k", "1", "1", "0"], ["CL.THROTTLE", "k", "-1", "1", "1"],
    ["CL.THROTTLE", "k", "1", "1", "1", "-1"], ["CL.THROTTLE", "k", "1", "1", b"\xff\r\n"],
    ["CL.THROTTLE", "k", "1", "1", "9223372036854775807"],
    ["CL.THROTTLE", "k", "9223372036854775807", "1", "1"],
    ["RATE.FIXED"], ["RATE.FIXED", "k", "1"], ["RATE.FIXED", "k", "1", "1", "1", "1"],
    ["RATE.FIXED", "k", "x", "1"], ["RATE.FIXED", "k", "1", "0"], ["RATE.FIXED", "k", "-1", "1"],
    ["RATE.FIXED", "k", "1", "1", "-1"], ["RATE.FIXED", "k", "1", "9223372036854775807"],
]


def test_bad_input_is_refused_and_server_stays_healthy(keep):
    keep.set("str", "v")
    keep.execute_command("LOCK", "lk", "o", 5000)
    wrong_type = [["LOCK", "str", "o", "100"], ["UNLOCK", "str", "o"], ["LOCKINFO", "str"],
                  ["LOCKEXTEND", "str", "o", "100"], ["CL.THROTTLE", "str", "1", "1", "1"],
                  ["CL.THROTTLE", "lk", "1", "1", "1"], ["RATE.FIXED", "str", "1", "100"],
                  ["RATE.FIXED", "lk", "1", "100"]]
    cases = BAD_INPUT + wrong_type
    for args in cases:
        with pytest.raises(redis.ResponseError):
            keep.execute_command(*args)
        assert keep.ping()
    assert keep.get("str") == b"v"
    assert keep.exists("k") == 0
    # Binary keys and owners are just bytes.
    key, owner = b"\xff\x00\r\nkey", b"\x00\xfe\r\nowner"
    token = keep.execute_command("LOCK", key, owner, 1000)
    assert token >= 1
    assert keep.execute_command("LOCKINFO", key)[1] == owner
    assert keep.execute_command("UNLOCK", key, owner) == 1
    assert keep.execute_command("CL.THROTTLE", key, 0, 1, 1) == [0, 1, 0, -1, 1]
    assert keep.execute_command("RATE.FIXED", b"\xfe" + key, 1, 1000)[:2] == [1, 0]
