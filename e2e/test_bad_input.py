"""Hostile and malformed input: the server must answer like Redis (exact error text), close the
connection where Redis does, and stay up for everyone else.

Every test here runs with a *witness*: a separate client connected before the test, holding
data it wrote. After the test the server process must be alive with no sanitizer report, the
witness connection must still answer, and its data must be intact.
"""

from __future__ import annotations

import random
import socket
import threading
import time

import pytest

from helpers.clients import make_client
from helpers.resp import (ConnectionClosed, RawConnection, Reply, ReplyTimeout, encode_command,
                          encode_commands)
from helpers.witness import Witness

I64_MAX = "9223372036854775807"


@pytest.fixture(autouse=True)
def witness(keep_server):
    w = Witness(keep_server.host, keep_server.port, server=keep_server)
    yield w
    try:
        w.check()
    finally:
        w.close()


def err(text: str) -> Reply:
    return Reply("error", text.encode())


# --------------------------------------------------------------------------------------------
# Command-level errors (connection stays open).

COMMAND_ERRORS = {
    "arity-get": (("GET",), "ERR wrong number of arguments for 'get' command"),
    "arity-set": (("SET", "k"), "ERR wrong number of arguments for 'set' command"),
    "arity-get-extra": (("GET", "a", "b"), "ERR wrong number of arguments for 'get' command"),
    "arity-mset-odd": (("MSET", "a", "1", "b"), "ERR wrong number of arguments for 'mset' command"),
    "wrongtype-incr": (("INCR", "bad:str"), "ERR value is not an integer or out of range"),
    "wrongtype-incrby": (("INCRBY", "bad:str", "5"), "ERR value is not an integer or out of range"),
    "wrongtype-incrbyfloat": (("INCRBYFLOAT", "bad:str", "1"), "ERR value is not a valid float"),
    "garbage-incrbyfloat-arg": (("INCRBYFLOAT", "f", "1x"), "ERR value is not a valid float"),
    "ttl-negative": (("SET", "k", "v", "EX", "-1"), "ERR invalid expire time in 'set' command"),
    "ttl-zero": (("SET", "k", "v", "EX", "0"), "ERR invalid expire time in 'set' command"),
    "ttl-px-zero": (("SET", "k", "v", "PX", "0"), "ERR invalid expire time in 'set' command"),
    "ttl-non-numeric": (("SET", "k", "v", "EX", "ten"),
                        "ERR value is not an integer or out of range"),
    "ttl-overflow-ex": (("SET", "k", "v", "EX", I64_MAX),
                        "ERR invalid expire time in 'set' command"),
    "ttl-overflow-px": (("SET", "k", "v", "PX", I64_MAX),
                        "ERR invalid expire time in 'set' command"),
    "ttl-setex-zero": (("SETEX", "k", "0", "v"), "ERR invalid expire time in 'setex' command"),
    "ttl-expire-overflow": (("EXPIRE", "bad:str", I64_MAX),
                            "ERR invalid expire time in 'expire' command"),
    "ttl-getex-negative": (("GETEX", "bad:str", "EX", "-5"),
                           "ERR invalid expire time in 'getex' command"),
    "unknown-command": (("foo", "a"), "ERR unknown command 'foo', with args beginning with: 'a' "),
    "unknown-command-noargs": (("foo",), "ERR unknown command 'foo', with args beginning with: "),
    "syntax": (("SET", "k", "v", "NX", "XX"), "ERR syntax error"),
}


@pytest.mark.parametrize("case", list(COMMAND_ERRORS))
def test_command_error(case, raw, keep_server):
    cmd, text = COMMAND_ERRORS[case]
    c = raw(keep_server)
    assert c.call("SET", "bad:str", "abc") == Reply("simple", b"OK")
    assert c.call(*cmd) == err(text)
    # The connection stays usable and nothing was written by the failed command.
    assert c.call("PING") == Reply("simple", b"PONG")
    assert c.call("EXISTS", "k", "f") == Reply("int", 0)
    assert c.call("GET", "bad:str") == Reply("bulk", b"abc")


# --------------------------------------------------------------------------------------------
# Protocol errors: Redis answers one error and closes the connection.

TOO_BIG = 70 * 1024  # beyond Redis's 64 KiB inline / header-line limit

PROTOCOL_ERRORS = {
    "bulk-1gib": (b"*1\r\n$1073741824\r\n", "ERR Protocol error: invalid bulk length"),
    "bulk-negative": (b"*1\r\n$-1\r\n", "ERR Protocol error: invalid bulk length"),
    "bulk-not-number": (b"*1\r\n$abc\r\n", "ERR Protocol error: invalid bulk length"),
    "multibulk-not-number": (b"*abc\r\n", "ERR Protocol error: invalid multibulk length"),
    "multibulk-too-many": (b"*3000000000\r\n", "ERR Protocol error: invalid multibulk length"),
    "multibulk-float": (b"*1.5\r\n", "ERR Protocol error: invalid multibulk length"),
    "expected-dollar": (b"*1\r\nx\r\n", "ERR Protocol error: expected '$', got 'x'"),
    "expected-dollar-colon": (b"*2\r\n$3\r\nGET\r\n:1\r\n",
                              "ERR Protocol error: expected '$', got ':'"),
    "unbalanced-double-quote": (b'SET "a b\r\n',
                                "ERR Protocol error: unbalanced quotes in request"),
    "unbalanced-single-quote": (b"SET 'a\r\n", "ERR Protocol error: unbalanced quotes in request"),
    "quote-not-followed-by-space": (b'GET "a"b\r\n',
                                    "ERR Protocol error: unbalanced quotes in request"),
    "inline-too-big": (b"a" * TOO_BIG, "ERR Protocol error: too big inline request"),
    "mbulk-count-too-big": (b"*" + b"1" * TOO_BIG,
                            "ERR Protocol error: too big mbulk count string"),
    "bulk-count-too-big": (b"*1\r\n$" + b"1" * TOO_BIG,
                           "ERR Protocol error: too big bulk count string"),
}


@pytest.mark.parametrize("case", list(PROTOCOL_ERRORS))
def test_protocol_error_then_close(case, raw, keep_server):
    data, text = PROTOCOL_ERRORS[case]
    c = raw(keep_server)
    c.send_draining(data, timeout=10)
    assert c.read_reply(timeout=5) == err(text)
    assert c.wait_closed(5), f"server kept the connection open after '{text}'"
    assert c.buf == b"", f"unexpected bytes after the error: {bytes(c.buf[:200])!r}"


def test_protocol_error_after_valid_commands(raw, keep_server):
    """Complete commands before the bad bytes are executed and answered first, in order."""
    c = raw(keep_server)
    c.send(encode_command("SET", "pe:k", "v") + b"PING\r\n" + encode_command("GET", "pe:k")
           + b"*1\r\n$1073741824\r\n")
    assert c.read_replies(3) == [Reply("simple", b"OK"), Reply("simple", b"PONG"),
                                 Reply("bulk", b"v")]
    assert c.read_reply() == err("ERR Protocol error: invalid bulk length")
    assert c.wait_closed(5)


@pytest.mark.parametrize("size", [1, 17, 512, 8192, 262144])
@pytest.mark.parametrize("flavour", ["any", "resp-start", "text"])
def test_random_garbage(size, flavour, raw, keep_server):
    rng = random.Random(size * 31 + len(flavour))
    if flavour == "text":
        data = bytes(rng.choice(b"abcdefgh \"'\r\n*$:+-0123456789") for _ in range(size))
    else:
        data = rng.randbytes(size)
        if flavour == "resp-start":
            data = b"*" + data[1:]
    c = raw(keep_server, timeout=5)
    sent_all = c.send_draining(data, timeout=20)
    c.read_available(0.15)
    got = bytes(c.buf)
    if data[0] >= 0x20 and got:  # RESP side: anything said must be an error reply (or replies)
        assert got.startswith(b"-"), f"non-error reply to garbage: {got[:200]!r}"
    c.close(reset=True)
    # Server alive and serving new connections (the witness checks the rest).
    with RawConnection(keep_server.host, keep_server.port, timeout=5) as c2:
        assert c2.call("PING") == Reply("simple", b"PONG")
    del sent_all


# --------------------------------------------------------------------------------------------
# Segmentation, disconnects, connection storms, pipelining.


def test_command_split_across_tiny_segments(raw, keep_server):
    rng = random.Random(7)
    value = bytes(rng.randrange(256) for _ in range(100 * 1024))
    data = encode_command("SET", "seg:key", value) + encode_command("GET", "seg:key")
    c = raw(keep_server)  # TCP_NODELAY is on: each send() is its own segment
    pos, pieces = 0, 0
    while pos < len(data):
        n = rng.randint(1, 7)
        c.sock.sendall(data[pos:pos + n])
        pos += n
        pieces += 1
        if pieces % 400 == 0:
            time.sleep(0.001)  # let the server see partial input many times over
    assert c.read_replies(2, timeout=15) == [Reply("simple", b"OK"), Reply("bulk", value)]


def test_pipeline_split_byte_by_byte(raw, keep_server):
    cmds = [("SET", f"bb:{i}", f"v{i}") for i in range(20)] + [("MGET",) + tuple(
        f"bb:{i}" for i in range(20))] + [("PING",)]
    data = encode_commands(cmds) + b"PING\r\nECHO inline\r\n"
    c = raw(keep_server)
    for i in range(len(data)):
        c.sock.sendall(data[i:i + 1])
        if i % 100 == 0:
            time.sleep(0.001)
    replies = c.read_replies(len(cmds) + 2, timeout=10)
    assert replies[:20] == [Reply("simple", b"OK")] * 20
    assert replies[20] == Reply("array", [Reply("bulk", f"v{i}".encode()) for i in range(20)])
    assert replies[21:] == [Reply("simple", b"PONG"), Reply("simple", b"PONG"),
                            Reply("bulk", b"inline")]


@pytest.mark.parametrize("cut", ["after-header", "mid-bulk-length", "half-bulk",
                                 "before-last-crlf", "half-inline"])
@pytest.mark.parametrize("how", ["fin", "rst"])
def test_disconnect_mid_command(cut, how, raw, keep_server):
    full = encode_command("SET", "half:key", b"x" * 100)
    pieces = {
        "after-header": b"*3\r\n",
        "mid-bulk-length": b"*3\r\n$3\r\nSET\r\n$1",
        "half-bulk": full[:len(full) - 52],
        "before-last-crlf": full[:-2],
        "half-inline": b"SET half:key val",
    }
    c = raw(keep_server)
    c.send(pieces[cut])
    time.sleep(0.05)
    c.close(reset=(how == "rst"))
    time.sleep(0.05)
    with RawConnection(keep_server.host, keep_server.port, timeout=5) as c2:
        assert c2.call("EXISTS", "half:key") == Reply("int", 0)
        assert c2.call("PING") == Reply("simple", b"PONG")


@pytest.mark.parametrize("how", ["fin", "rst"])
def test_disconnect_mid_reply(how, raw, keep_server):
    big = b"B" * (10 * 1024 * 1024)
    setter = make_client(keep_server)
    setter.set("midreply:big", big)
    setter.set("midreply:small", "s")
    c = raw(keep_server)
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.send(encode_command("GET", "midreply:big") * 3
           + encode_command("MGET", "midreply:big", "midreply:small", "midreply:big"))
    time.sleep(0.2)  # the server is now blocked writing ~50 MB we never read
    c.close(reset=(how == "rst"))
    time.sleep(0.1)
    assert setter.strlen("midreply:big") == len(big)
    assert setter.get("midreply:small") == b"s"
    setter.delete("midreply:big")
    setter.close()


@pytest.mark.timeout(90)
def test_thousand_connections_opened_and_dropped(keep_server):
    socks = []
    try:
        for i in range(1000):
            s = socket.create_connection((keep_server.host, keep_server.port), timeout=5)
            socks.append(s)
            if i % 2 == 0:
                s.sendall(b"PING\r\n")  # some with a request in flight, never read
            if i % 7 == 0:
                s.sendall(encode_command("SET", f"storm:{i}", "v"))
        # Everyone is connected at once: a late one still gets served.
        with RawConnection(keep_server.host, keep_server.port, timeout=10) as c:
            assert c.call("PING") == Reply("simple", b"PONG")
    finally:
        import struct
        for i, s in enumerate(socks):
            if i % 3 == 0:  # a third with RST
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
    time.sleep(0.3)
    with RawConnection(keep_server.host, keep_server.port, timeout=10) as c:
        assert c.call("PING") == Reply("simple", b"PONG")
        assert c.call("EXISTS", *[f"storm:{i}" for i in range(0, 1000, 7)]) == Reply(
            "int", len(range(0, 1000, 7)))
    # New connections keep working after the storm.
    clients = [RawConnection(keep_server.host, keep_server.port, timeout=5) for _ in range(20)]
    try:
        for cl in clients:
            assert cl.call("PING") == Reply("simple", b"PONG")
    finally:
        for cl in clients:
            cl.close()


def test_pipeline_10k_in_one_write(raw, keep_server):
    cmds, want = [], []
    counter = 0
    for i in range(10000):
        if i % 3 == 0:
            counter += 1
            cmds.append(("INCR", "pipe:ctr"))
            want.append(Reply("int", counter))
        elif i % 3 == 1:
            cmds.append(("SET", f"pipe:{i}", f"val:{i}"))
            want.append(Reply("simple", b"OK"))
        else:
            cmds.append(("GET", f"pipe:{i - 1}"))  # a key on any shard, set just before
            want.append(Reply("bulk", f"val:{i - 1}".encode()))
    c = raw(keep_server)
    data = encode_commands(cmds)
    assert c.send_draining(data, timeout=20)
    got = c.read_replies(len(cmds), timeout=20)
    bad = [(i, cmds[i], g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not bad, f"{len(bad)} replies wrong or out of order; first: {bad[:5]}"


def test_pipeline_mixes_forwarded_writes_and_split_reads_in_order(raw, keep_server):
    # Single-key requests travel to their shard in one batch per turn and multi-key ones in
    # parts of their own: a part must never overtake a write forwarded before it.
    cmds, want = [], []
    for i in range(3000):
        cmds.append(("SET", f"mix:{i}", f"v{i}"))
        want.append(Reply("simple", b"OK"))
        if i >= 1:
            cmds.append(("MGET", f"mix:{i}", f"mix:{i - 1}", f"mix:{i}:never"))
            want.append(Reply("array", [Reply("bulk", f"v{i}".encode()),
                                        Reply("bulk", f"v{i - 1}".encode()), Reply("bulk", None)]))
        if i >= 2:
            cmds.append(("DEL", f"mix:{i - 2}", f"mix:{i - 2}:never"))
            want.append(Reply("int", 1))
            cmds.append(("GET", f"mix:{i - 2}"))
            want.append(Reply("bulk", None))
    c = raw(keep_server)
    assert c.send_draining(encode_commands(cmds), timeout=20)
    got = c.read_replies(len(cmds), timeout=20)
    bad = [(i, cmds[i], g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not bad, f"{len(bad)} replies wrong or out of order; first: {bad[:5]}"


def test_replies_from_four_shards_leave_in_request_order(raw, server_factory):
    # With more than one other shard, a later request's reply can come back before an earlier
    # one's: it waits for its turn, and the local replies produced between them wait too.
    s = server_factory("keep-4shards", shards=4)
    cmds, want = [], []
    for i in range(4000):
        cmds.append(("SET", f"ord:{i}", "x" * (i % 300)))
        want.append(Reply("simple", b"OK"))
        cmds.append(("GET", f"ord:{i // 2}"))
        want.append(Reply("bulk", b"x" * ((i // 2) % 300)))
        if i % 7 == 0:
            cmds.append(("MGET", f"ord:{i}", f"ord:{i // 3}", "ord:never"))
            want.append(Reply("array", [Reply("bulk", b"x" * (i % 300)),
                                        Reply("bulk", b"x" * ((i // 3) % 300)),
                                        Reply("bulk", None)]))
        if i % 5 == 0:
            cmds.append(("PING",))
            want.append(Reply("simple", b"PONG"))
    c = raw(s)
    assert c.send_draining(encode_commands(cmds), timeout=30)
    got = c.read_replies(len(cmds), timeout=30)
    bad = [(i, cmds[i], g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not bad, f"{len(bad)} replies wrong or out of order; first: {bad[:3]}"
    # The same connection goes on working, and a connection closed with replies still owed by
    # other shards leaves the server intact.
    c.send(encode_commands([("GET", "ord:1")]))
    assert c.read_replies(1, timeout=5) == [Reply("bulk", b"x")]
    gone = raw(s)
    gone.send(encode_commands([("GET", f"ord:{i}") for i in range(2000)]))
    gone.close(reset=True)
    c.send(encode_commands([("DBSIZE",)]))
    assert c.read_replies(1, timeout=5) == [Reply("int", 4000)]


def test_inline_commands(raw, keep_server):
    c = raw(keep_server)

    def exchange(data: bytes, expected: bytes):
        c.send(data)
        assert c.read_exactly(len(expected), 5) == expected
        c.send(b"PING\r\n")  # nothing unexpected queued before the next reply
        assert c.read_exactly(7, 5) == b"+PONG\r\n"

    exchange(b"PING\r\n", b"+PONG\r\n")
    exchange(b"SET inl:a b\r\n", b"+OK\r\n")
    exchange(b"GET inl:a\r\nEXISTS inl:a inl:zz\r\n", b"$1\r\nb\r\n:1\r\n")
    exchange(b'SET "inl:sp ace" "va\\x00l\\n"\r\nSTRLEN "inl:sp ace"\r\n', b"+OK\r\n:5\r\n")
    exchange(b"ping\n", b"+PONG\r\n")  # LF only
    exchange(b"  ECHO   spaced   \r\n", b"$6\r\nspaced\r\n")


# --------------------------------------------------------------------------------------------
# Server limits: each in its own server instance.


def test_maxclients(server_factory):
    s = server_factory("maxclients", maxclients=10)
    w = Witness(s.host, s.port, server=s)  # client 1 of 10
    conns = []
    try:
        for _ in range(9):
            c = RawConnection(s.host, s.port, timeout=5)
            conns.append(c)
            assert c.call("PING") == Reply("simple", b"PONG")
        extra = RawConnection(s.host, s.port, timeout=5)
        conns.append(extra)
        assert extra.read_reply(timeout=5) == err("ERR max number of clients reached")
        assert extra.wait_closed(5)
        # Existing clients are unaffected; closing one frees a slot.
        assert conns[0].call("PING") == Reply("simple", b"PONG")
        conns[1].close()
        ok = False
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not ok:
            time.sleep(0.1)
            c = RawConnection(s.host, s.port, timeout=5)
            conns.append(c)
            try:
                ok = c.call("PING") == Reply("simple", b"PONG")
            except (ConnectionClosed, ReplyTimeout):
                ok = False
            if not ok:
                c.close()
        assert ok, "a freed client slot was never reusable"
        w.check()
    finally:
        for c in conns:
            c.close()
        w.close()


@pytest.mark.timeout(30)
def test_idle_timeout(server_factory):
    s = server_factory("idle-timeout", timeout=1)
    w = Witness(s.host, s.port, server=s)
    active = make_client(s)
    idle = RawConnection(s.host, s.port, timeout=10)
    assert idle.call("PING") == Reply("simple", b"PONG")
    t0 = time.monotonic()
    closed_at = None
    while time.monotonic() - t0 < 6:
        assert active.ping() is True  # an active client is never timed out
        w.client.ping()  # keep the witness active too
        if not idle.is_open():
            closed_at = time.monotonic() - t0
            break
        time.sleep(0.2)
    assert closed_at is not None, "idle connection still open 6 s after --timeout 1"
    assert closed_at >= 0.9, f"idle connection closed too early ({closed_at:.2f}s)"
    assert active.ping() is True
    w.check()
    w.close()
    active.close()
    idle.close()


def test_query_buffer_limit(server_factory):
    limit = 1024 * 1024  # redis-server's minimum for client-query-buffer-limit
    s = server_factory("qbuf-limit", client_query_buffer_limit=limit)
    w = Witness(s.host, s.port, server=s)
    c = RawConnection(s.host, s.port, timeout=10)
    other = RawConnection(s.host, s.port, timeout=10)
    try:
        # A request that never completes and keeps growing past the limit.
        c.send_draining(b"*3\r\n$3\r\nSET\r\n$4\r\nqbuf\r\n$4000000\r\n", timeout=5)
        sent_all = c.send_draining(b"x" * (3 * limit), timeout=10)
        assert c.wait_closed(5), "a client with an unfinished request past " \
                                 "--client-query-buffer-limit was not disconnected"
        del sent_all
        assert other.call("SET", "qbuf:ok", b"y" * (limit // 2)) == Reply("simple", b"OK")
        assert other.call("EXISTS", "qbuf") == Reply("int", 0)
        w.check()
    finally:
        c.close()
        other.close()
        w.close()


def test_proto_max_bulk_len(server_factory):
    limit = 1024 * 1024  # redis-server's minimum for proto-max-bulk-len
    s = server_factory("bulk-limit", proto_max_bulk_len=limit)
    w = Witness(s.host, s.port, server=s)
    c = RawConnection(s.host, s.port, timeout=10)
    try:
        assert c.call("SET", "b", b"z" * limit) == Reply("simple", b"OK")  # exactly the limit
        assert c.call("SET", "h", b"z" * (limit // 2 + 10)) == Reply("simple", b"OK")
        assert c.call("APPEND", "h", b"z" * (limit // 2)) == err(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)")
        assert c.call("SETRANGE", "h", str(limit), "x") == err(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)")
        assert c.call("STRLEN", "h") == Reply("int", limit // 2 + 10)
        c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (limit + 1))
        assert c.read_reply(timeout=5) == err("ERR Protocol error: invalid bulk length")
        assert c.wait_closed(5)
        w.check()
    finally:
        c.close()
        w.close()


def test_concurrent_abuse_while_serving(keep_server):
    """Garbage, disconnects and big replies on some connections while others do real work."""
    stop = threading.Event()
    errors: list[str] = []

    def abuser(seed: int):
        rng = random.Random(seed)
        while not stop.is_set():
            try:
                with RawConnection(keep_server.host, keep_server.port, timeout=2) as c:
                    c.send(rng.choice([b"*1\r\n$1073741824\r\n", b"*abc\r\n",
                                       rng.randbytes(300), b"*3\r\n$3\r\nSET\r\n$1\r\n"]))
                    c.read_available(0.02)
            except OSError:
                pass

    threads = [threading.Thread(target=abuser, args=(i,), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    try:
        cl = make_client(keep_server)
        for i in range(300):
            cl.set(f"abuse:{i}", i)
            if cl.get(f"abuse:{i}") != str(i).encode():
                errors.append(f"abuse:{i} read back wrong")
        cl.close()
    finally:
        stop.set()
        for t in threads:
            t.join(5)
    assert not errors, errors[:5]


def test_deep_pipeline_of_mixed_forms_then_a_protocol_error(raw, keep_server):
    """A pipeline far deeper than what a connection runs per turn, multibulk and inline requests
    mixed, on keys of every shard, ending in a protocol error: every request is answered in order,
    then the error, then the close; another client is served meanwhile."""
    wire, want = [], []
    counter = 0
    for i in range(30000):
        if i % 7 == 0:
            wire.append(b"PING\r\n")
            want.append(Reply("simple", b"PONG"))
        elif i % 7 == 1:
            counter += 1
            wire.append(b"INCR deep:ctr\r\n")
            want.append(Reply("int", counter))
        elif i % 2 == 0:
            wire.append(encode_command("SET", f"deep:{i}", f"v{i}"))
            want.append(Reply("simple", b"OK"))
        else:
            wire.append(encode_command("GET", f"deep:{i - 1}"))
            was_set = (i - 1) % 7 > 1
            want.append(Reply("bulk", f"v{i - 1}".encode()) if was_set else Reply("bulk", None))
    wire.append(b"*1\r\n$1073741824\r\n")
    c = raw(keep_server)
    other = raw(keep_server)
    sender = threading.Thread(target=c.send_draining, args=(b"".join(wire), 30))
    sender.start()
    seen = []
    try:
        for _ in range(20):
            seen.append(other.call("GET", "deep:ctr", timeout=5))
    finally:
        sender.join(30)
    got = c.read_replies(len(want), timeout=30)
    bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not bad, f"{len(bad)} replies wrong or out of order; first: {bad[:5]}"
    assert c.read_reply(timeout=5) == err("ERR Protocol error: invalid bulk length")
    assert c.wait_closed(5)
    assert all(r.kind in ("bulk", "nil") for r in seen), seen
