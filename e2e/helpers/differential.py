"""Run the same command sequence against two servers and collect every difference.

A sequence is a list of steps. A plain tuple is a command whose replies must be identical
(wire type, bytes, error text). Wrappers change how a step is compared:

    Approx(tol, *cmd)   integer replies may differ by up to `tol` (TTL/PTTL over time)
    Sorted(*cmd)        array replies compared as sorted lists (KEYS)
    Run(*cmd)           executed on both, not compared (setup)
    Sleep(seconds)      pause between steps (expiry over time)

Arguments may be `Now(offset_s)` / `NowMs(offset_ms)`, evaluated once per step so both servers
see the same absolute time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import redis

from .resp import ConnectionClosed, RawConnection, Reply, ReplyTimeout


@dataclass(frozen=True)
class Now:
    offset_s: int = 0

    def value(self) -> str:
        return str(int(time.time()) + self.offset_s)


@dataclass(frozen=True)
class NowMs:
    offset_ms: int = 0

    def value(self) -> str:
        return str(int(time.time() * 1000) + self.offset_ms)


class Step:
    mode = "exact"

    def __init__(self, *args, tol: int = 0):
        self.args = args
        self.tol = tol

    def resolve(self) -> tuple:
        return tuple(a.value() if isinstance(a, (Now, NowMs)) else a for a in self.args)

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.args!r}"


class Exact(Step):
    pass


class Approx(Step):
    mode = "approx"

    def __init__(self, tol: int, *args):
        super().__init__(*args, tol=tol)


class Sorted(Step):
    mode = "sorted"


class Run(Step):
    mode = "run"


class Sleep(Step):
    mode = "sleep"

    def __init__(self, seconds: float):
        super().__init__()
        self.seconds = seconds


def as_step(s) -> Step:
    return s if isinstance(s, Step) else Exact(*s)


def short(x, n: int = 300) -> str:
    s = repr(x)
    return s if len(s) <= n else s[:n] + f"...<{len(s)} chars>"


# -- comparing ---------------------------------------------------------------------------------


def _int_of(r):
    if isinstance(r, Reply) and r.kind == "int":
        return r.value
    if isinstance(r, int) and not isinstance(r, bool):
        return r
    return None


def _sorted_of(r):
    if isinstance(r, Reply) and r.kind in ("array", "set") and r.value is not None:
        return sorted(r.value, key=repr)
    if isinstance(r, list):
        return sorted(r, key=repr)
    return r


def same(step: Step, a, b) -> bool:
    if step.mode == "approx":
        ia, ib = _int_of(a), _int_of(b)
        if ia is None or ib is None:
            return a == b
        # Negative sentinels (-1 no TTL, -2 no key) must match exactly.
        if ia < 0 or ib < 0:
            return ia == ib
        return abs(ia - ib) <= step.tol
    if step.mode == "sorted":
        return _sorted_of(a) == _sorted_of(b)
    return a == b


# -- running -----------------------------------------------------------------------------------


def _raw_call(conn: RawConnection, args):
    try:
        return conn.call(*args)
    except ConnectionClosed as e:
        return Reply("CLOSED", str(e))
    except ReplyTimeout:
        return Reply("TIMEOUT", None)


def _py_call(client: redis.Redis, args):
    try:
        return client.execute_command(*args)
    except redis.exceptions.ResponseError as e:  # exact class and message
        return ("EXC", type(e).__name__, str(e))
    except redis.exceptions.RedisError as e:
        return ("EXC", type(e).__name__, str(e))


def run_pair(keep, ref, steps, via: str = "raw") -> list[str]:
    """Run `steps` on both (`keep` first, then `ref`, step by step). Returns mismatch texts."""
    call = _raw_call if via == "raw" else _py_call
    mismatches = []
    for i, s in enumerate(as_step(x) for x in steps):
        if s.mode == "sleep":
            time.sleep(s.seconds)
            continue
        args = s.resolve()
        got = call(keep, args)
        want = call(ref, args)
        if s.mode == "run":
            continue
        if not same(s, got, want):
            mismatches.append(f"step {i} {short(args, 200)}:\n      keep:  {short(got)}\n"
                              f"      redis: {short(want)}")
        if isinstance(got, Reply) and got.kind in ("CLOSED", "TIMEOUT"):
            mismatches.append("  (keep connection lost; stopping this sequence)")
            break
    return mismatches
