"""bench/memory_bench.py's loader: set_batches counts error replies from the raw reply lines
(Conn.pipeline_errors) instead of parsing each reply, so it must count exactly what the server
refused, across reply chunks of any size, and leave the connection in step for the next call.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

_SPEC = importlib.util.spec_from_file_location(
    "memory_bench", Path(__file__).resolve().parents[1] / "bench" / "memory_bench.py")
memory_bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(memory_bench)


@pytest.fixture
def conn(keep_server, keep):
    c = memory_bench.Conn(keep_server.port, timeout=30)
    yield c
    c.sock.close()


def test_set_batches_loads_every_key_and_reports_no_errors(conn, keep):
    assert memory_bench.set_batches(conn, "mb:", 0, 5003, b"x" * 300, batch=1000) == 0
    assert keep.dbsize() == 5003
    assert keep.get("mb:0") == b"x" * 300
    assert keep.get("mb:5002") == b"x" * 300
    assert conn.call("PING") == b"PONG"


def test_pipeline_errors_counts_refusals_wherever_they_fall(conn, keep):
    ok = conn.encode("SET", "k", "v")
    wrong_arity = conn.encode("SET", "k")
    unknown = conn.encode("NOSUCHCOMMAND", "a")
    payload = wrong_arity + ok * 700 + unknown + ok * 1300 + wrong_arity
    assert conn.pipeline_errors(payload, 2003) == 3
    # The connection is in step: the next reply is the next command's.
    assert conn.call("ECHO", "after") == b"after"
    assert keep.get("k") == b"v"


def test_pipeline_errors_on_a_value_of_the_wrong_kind_keeps_the_data(conn, keep):
    keep.set("word", "abc")
    payload = conn.encode("SET", "plain", "1") + conn.encode("INCR", "word")
    assert conn.pipeline_errors(payload, 2) == 1
    assert keep.get("word") == b"abc"
    assert conn.call("GET", "plain") == b"1"


def test_pipeline_errors_leaves_later_replies_for_the_next_call(conn):
    ok = conn.encode("SET", "k", "v")
    bad = conn.encode("SET", "k")
    first = ok * 5 + bad
    second = bad + ok * 10 + bad
    # Both batches go out at once: the first call may find the second's replies already read.
    assert conn.pipeline_errors(first + second, 6) == 1
    assert conn.pipeline_errors(b"", 12) == 2
    assert conn.call("PING") == b"PONG"
