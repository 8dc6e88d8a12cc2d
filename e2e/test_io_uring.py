"""A shard makes each turn's socket reads, then its writes, in one io_uring call (`--io-uring`,
default yes) or as plain system calls (`--io-uring=no`, and wherever the kernel refuses io_uring).
Both must serve exactly the same bytes: pipelines of small and large values across many
connections, replies in order, a client that vanishes mid-request, and garbage on one connection
that leaves the others alone."""
from __future__ import annotations

import socket
import subprocess
import time

import pytest

from helpers.resp import RawConnection, encode_command, encode_commands
from helpers.server import free_port, keep_bin


@pytest.fixture(params=["yes", "no"])
def io_server(request, tmp_path):
    port = free_port()
    ready = tmp_path / "ready"
    log = open(tmp_path / "server.log", "wb")
    proc = subprocess.Popen(
        [str(keep_bin()), "--bind", "127.0.0.1", "--port", str(port), "--shards", "2",
         f"--io-uring={request.param}", "--ready-file", str(ready)],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while not ready.exists():
            assert proc.poll() is None, (tmp_path / "server.log").read_text()
            assert time.monotonic() < deadline, "keep-server did not become ready"
            time.sleep(0.02)
        yield request.param, port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _field(conn: RawConnection, section: str, name: str) -> str:
    for line in conn.call("INFO", section).value.decode().splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    raise AssertionError(f"INFO {section} has no {name}")


def test_info_says_which_calls_are_made(io_server):
    mode, port = io_server
    conn = RawConnection("127.0.0.1", port)
    api = _field(conn, "server", "multiplexing_api")
    if mode == "no":
        assert api == "epoll"
    else:
        # On a kernel that refuses io_uring the server falls back to plain calls and says so.
        assert api in ("epoll+io_uring", "epoll")
    before = int(_field(conn, "stats", "socket_system_calls"))
    conn.send(encode_commands([("SET", f"k{i}", "v") for i in range(200)]))
    assert all(r.value == b"OK" for r in conn.read_replies(200))
    after = int(_field(conn, "stats", "socket_system_calls"))
    assert after > before


def test_pipelines_of_small_and_large_values_on_many_connections(io_server):
    _, port = io_server
    conns = [RawConnection("127.0.0.1", port) for _ in range(20)]
    sizes = [0, 1, 100, 16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, 200_000, 3 * 1024 * 1024]
    for n, conn in enumerate(conns):
        commands = []
        for i, size in enumerate(sizes):
            commands.append(("SET", f"c{n}:{i}", bytes([65 + (n + i) % 26]) * size))
            commands.append(("GET", f"c{n}:{i}"))
        commands.append(("PING",))
        conn.send(encode_commands(commands))
    for n, conn in enumerate(conns):
        replies = conn.read_replies(2 * len(sizes) + 1, timeout=30)
        for i, size in enumerate(sizes):
            assert replies[2 * i].value == b"OK"
            assert replies[2 * i + 1].value == bytes([65 + (n + i) % 26]) * size, (n, i, size)
        assert replies[-1].value == b"PONG"


def test_vanishing_and_garbage_clients_leave_the_others_intact(io_server):
    _, port = io_server
    good = RawConnection("127.0.0.1", port)
    assert good.call("SET", "kept", "value").value == b"OK"
    for _ in range(10):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(encode_command("SET", "half", "x" * 100_000)[:50_000])  # then gone
        s.close()
    bad = RawConnection("127.0.0.1", port)
    bad.send(b"*2\r\n$3\r\nGET\r\n$-5\r\n")
    reply = bad.read_reply()
    assert reply.kind == "error" and b"Protocol error" in reply.value
    assert good.call("GET", "kept").value == b"value"
    assert good.call("EXISTS", "half").value == 0
