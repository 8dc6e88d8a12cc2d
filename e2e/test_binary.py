"""Keep's binary protocol against a real keep-server (dataplane/proto/binary_protocol.md).

A small encoder of the spec's frames (helpers/binary.py) drives every op, every status a single node can
produce, and bad input: truncated frames, lengths beyond the limits, unknown ops, a preface of the
wrong version, a wrong HELLO proof, garbage bytes, disconnects mid-frame. After each, the server
must be alive, other clients (RESP and binary) unharmed, and data intact. The test vectors file
drives the requests it holds. A pub/sub stall checker shows a stalled subscriber learns of its
losses through the sequence numbers and does not slow the publisher.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import random
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest
from helpers.binary import (AUTH, COMMAND, DEL, ERROR, EVENT, EXISTS, EXPIRE, EXPIRE_GT,
                            EXPIRE_LT, EXPIRE_NX, EXPIRE_XX, EXTEND, FIXED_WINDOW, GET, HEARTBEAT,
                            HELLO, INCR, LOCK, LOCKED, MAX_FRAME, NIL, OK, OOM, PING, PUBLISH, SET,
                            SET_GET, SET_KEEPTTL, SET_NX, SET_XX, SUBSCRIBE, THROTTLE, TOO_LARGE,
                            TOPOLOGY, UNLOCK, UNSUBSCRIBE, WRONGTYPE, BUSY, DELPREFIX, BinConn,
                            command_body, frame, hello_body, i64s, parse_topology, preface, u64)
from helpers.clients import make_client
from helpers.server import free_port, free_port_pair, keep_bin

pytestmark = [pytest.mark.timeout(90), pytest.mark.keep_only]

REPO = Path(__file__).resolve().parent.parent
VECTORS = REPO / "dataplane" / "proto" / "binary_test_vectors.txt"


@pytest.fixture
def bconn(keep_server):
    conns = []

    def connect(server=None, **kw) -> BinConn:
        c = BinConn((server or keep_server).port, **kw)
        conns.append(c)
        return c

    yield connect
    for c in conns:
        c.close()


@pytest.fixture
def fresh(keep):
    """A clean keyspace (keep flushes it) and the redis-py client for cross-protocol checks."""
    return keep


def _healthy(keep_server, keep):
    """Another RESP client and a new binary client both work, and the server is alive."""
    assert keep_server.alive()
    assert keep.ping()
    c = BinConn(keep_server.port)
    try:
        assert c.call(frame(1, PING)).body == b"PONG"
    finally:
        c.close()


# ---- Every op ----------------------------------------------------------------------------------


def test_hello_ping_and_strings(bconn, fresh):
    c = bconn()
    assert not c.auth_required and len(c.nonce) == 16
    r = c.call(frame(1, HELLO, body=hello_body()))
    assert r.status == OK
    version, _, _, max_frame, client_id = struct.unpack("<BBHIQ", r.body)
    assert version == 1 and max_frame == MAX_FRAME and client_id > 0
    assert c.call(frame(2, PING)).body == b"PONG"
    assert c.call(frame(3, PING, b"hey")).body == b"hey"
    for i in range(20):  # keys on both shards
        key = f"s:{i}".encode()
        assert c.call(frame(10, SET, key, u64(0) + b"v" + key)).status == OK
        assert c.call(frame(11, GET, key)).body == b"v" + key
        assert fresh.get(key) == b"v" + key  # the same data over RESP
    assert c.call(frame(12, GET, b"absent")).status == NIL
    assert c.call(frame(13, SET, b"s:0", u64(0) + b"x", SET_NX)).status == NIL
    assert c.call(frame(14, SET, b"s:nx", u64(0) + b"x", SET_NX)).status == OK
    assert c.call(frame(15, SET, b"s:xx", u64(0) + b"x", SET_XX)).status == NIL
    r = c.call(frame(16, SET, b"s:0", u64(0) + b"new", SET_GET))
    assert (r.status, r.body) == (OK, b"vs:0")
    assert c.call(frame(17, SET, b"s:ttl", u64(5000) + b"t")).status == OK
    assert 0 < fresh.pttl(b"s:ttl") <= 5000
    assert c.call(frame(18, SET, b"s:ttl", u64(0) + b"t2", SET_KEEPTTL)).status == OK
    assert fresh.pttl(b"s:ttl") > 0
    assert c.call(frame(19, EXISTS, b"s:0")).int == 1
    assert c.call(frame(20, DEL, b"s:0")).int == 1
    assert c.call(frame(21, DEL, b"s:0")).int == 0
    assert c.call(frame(22, EXISTS, b"s:0")).int == 0


def test_incr_and_expire(bconn, fresh):
    c = bconn()
    assert c.call(frame(1, INCR, b"ctr", u64(5) + u64(0))).int == 5
    assert c.call(frame(2, INCR, b"ctr", u64(-7) + u64(0))).int == -2
    assert fresh.ttl(b"ctr") == -1
    # ttl_on_create applies only when this INCR created the key.
    assert c.call(frame(3, INCR, b"fresh", u64(1) + u64(60000))).int == 1
    assert 0 < fresh.pttl(b"fresh") <= 60000
    fresh.set(b"old", b"10")
    assert c.call(frame(4, INCR, b"old", u64(1) + u64(60000))).int == 11
    assert fresh.ttl(b"old") == -1
    fresh.set(b"text", b"abc")
    r = c.call(frame(5, INCR, b"text", u64(1) + u64(60000)))
    assert (r.status, r.body) == (ERROR, b"ERR value is not an integer or out of range")
    assert c.call(frame(6, EXPIRE, b"old", u64(100000))).int == 1
    assert c.call(frame(7, EXPIRE, b"old", u64(200000), EXPIRE_NX)).int == 0
    assert c.call(frame(8, EXPIRE, b"old", u64(200000), EXPIRE_GT)).int == 1
    assert c.call(frame(9, EXPIRE, b"old", u64(1000), EXPIRE_GT)).int == 0
    assert c.call(frame(10, EXPIRE, b"old", u64(1000), EXPIRE_LT)).int == 1
    assert c.call(frame(11, EXPIRE, b"missing", u64(1000), EXPIRE_XX)).int == 0


def test_locks_and_wrongtype(bconn, fresh):
    c = bconn()
    r = c.call(frame(1, LOCK, b"lk", u64(10000) + b"alice"))
    assert r.status == OK and r.int > 0
    token = r.int
    assert c.call(frame(2, LOCK, b"lk", u64(10000) + b"bob")).status == LOCKED
    assert c.call(frame(3, EXTEND, b"lk", u64(20000) + b"bob")).int == 0
    assert c.call(frame(4, EXTEND, b"lk", u64(20000) + b"alice")).int == 1
    # A lock is its own type: string ops answer WRONGTYPE.
    r = c.call(frame(5, GET, b"lk"))
    assert r.status == WRONGTYPE and r.body.startswith(b"WRONGTYPE")
    r = c.call(frame(6, INCR, b"lk", u64(1) + u64(0)))
    assert r.status == WRONGTYPE
    assert c.call(frame(7, UNLOCK, b"lk", b"bob")).int == 0
    assert c.call(frame(8, UNLOCK, b"lk", b"alice")).int == 1
    r = c.call(frame(9, LOCK, b"lk", u64(10000) + b"bob"))
    assert r.status == OK and r.int > token  # fencing tokens grow


def test_rate_limits(bconn, fresh):
    c = bconn()
    r = c.call(frame(1, THROTTLE, b"rl", u64(1) + u64(2) + u64(60) + u64(1)))
    limited, limit, remaining, retry_after, _reset = i64s(r.body)
    assert (r.status, limited, limit, retry_after) == (OK, 0, 2, -1)
    for _ in range(3):
        r = c.call(frame(2, THROTTLE, b"rl", u64(1) + u64(2) + u64(60) + u64(1)))
    assert i64s(r.body)[0] == 1 and i64s(r.body)[3] > 0
    allowed = [i64s(c.call(frame(3, FIXED_WINDOW, b"fw", u64(3) + u64(60000) + u64(1))).body)
               for _ in range(4)]
    assert [a[0] for a in allowed] == [1, 1, 1, 0]
    assert [a[1] for a in allowed][:3] == [2, 1, 0]
    assert all(0 < a[2] <= 60000 for a in allowed)
    r = c.call(frame(4, THROTTLE, b"rl", u64(1) + u64(0) + u64(60) + u64(1)))
    assert r.status == ERROR


def test_delprefix_publish_topology_command(bconn, fresh, keep_server):
    c = bconn()
    for i in range(50):
        fresh.set(f"user:{i}".encode(), b"x")
    fresh.set(b"other", b"y")
    assert c.call(frame(1, DELPREFIX, b"user:")).int == 50
    assert fresh.dbsize() == 1
    assert c.call(frame(2, PUBLISH, b"nobody", b"msg")).int == 0
    r = c.call(frame(3, TOPOLOGY))
    assert r.status == OK
    topology = parse_topology(r.body)
    # Shard ports off: one endpoint, the client port, owning every slot; one member, no id.
    assert (topology.epoch, topology.flags, topology.self_index) == (0, 0, 0)
    assert len(topology.endpoints) == 1
    endpoint = topology.endpoints[0]
    assert (endpoint.host, endpoint.port, endpoint.ranges) == ("127.0.0.1", keep_server.port,
                                                               [(0, 16383)])
    assert [(m.id, m.host, m.client_port, m.state, m.endpoints) for m in topology.members] == \
        [("", "127.0.0.1", endpoint.port, "up", [endpoint])]
    r = c.call(frame(4, COMMAND, body=command_body(b"ECHO", b"hi")))
    assert (r.status, r.body) == (OK, b"$2\r\nhi\r\n")
    r = c.call(frame(5, COMMAND, body=command_body(b"MSET", b"a", b"1", b"b", b"2")))
    assert r.body == b"+OK\r\n"
    r = c.call(frame(6, COMMAND, body=command_body(b"MGET", b"a", b"b", b"zz")))
    assert r.body == b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n"
    r = c.call(frame(7, COMMAND, body=command_body(b"NOSUCH")))
    assert r.status == OK and r.body.startswith(b"-ERR unknown command")
    for refused in (b"SUBSCRIBE", b"hello", b"AUTH", b"monitor", b"RESET"):
        assert c.call(frame(8, COMMAND, body=command_body(refused, b"x"))).status == ERROR
    r = c.call(frame(9, COMMAND, body=b"\x05\x00\x00\x00"))
    assert (r.status, r.body) == (ERROR, b"ERR malformed COMMAND body")


def test_topology_with_shard_ports(server_factory):
    base = free_port_pair()
    server = server_factory("keep-shardports", shard_port_base=base)
    c = BinConn(server.port)
    try:
        r = c.call(frame(1, TOPOLOGY))
        assert r.status == OK
        topology = parse_topology(r.body)
        assert [e.port for e in topology.endpoints] == [base, base + 1]
        # Shard i owns the slots with slot mod 2 == i.
        for i, e in enumerate(topology.endpoints):
            assert e.ranges == [(slot, slot) for slot in range(i, 16384, 2)]
        assert len(topology.members) == 1
        assert topology.members[0].client_port == server.port
        assert topology.members[0].endpoints == topology.endpoints
        # The shard ports speak binary too.
        d = BinConn(base + 1)
        assert d.call(frame(1, PING)).body == b"PONG"
        d.close()
    finally:
        c.close()


def test_subscribe_events_heartbeats_unsubscribe(bconn, fresh):
    subs = [bconn() for _ in range(3)]
    pub = bconn()
    r = subs[0].call(frame(100, SUBSCRIBE, b"news"))
    assert (r.status, r.body) == (OK, u64(0))
    subs[1].call(frame(7, SUBSCRIBE, b"n*", flags=0x01))
    subs[2].call(frame(9, SUBSCRIBE, b"other"))
    assert pub.call(frame(1, PUBLISH, b"news", b"m1")).int == 2
    assert pub.call(frame(2, PUBLISH, b"news", b"m2")).int == 2
    for sub, sid in ((subs[0], 100), (subs[1], 7)):
        for seq, msg in ((1, b"m1"), (2, b"m2")):
            e = sub.read()
            assert (e.id, e.flags) == (sid, EVENT)
            assert struct.unpack_from("<QH", e.body) == (seq, 4)
            assert e.body[10:14] == b"news" and e.body[14:] == msg
    # Idle: a heartbeat carrying the current number.
    start = time.monotonic()
    e = subs[0].read(timeout=2)
    assert (e.id, e.flags, e.body) == (100, EVENT | HEARTBEAT, u64(2))
    assert time.monotonic() - start < 1.0
    e = subs[2].read(timeout=2)
    assert (e.id, e.flags, e.body) == (9, EVENT | HEARTBEAT, u64(0))
    # The same id while live is refused; after UNSUBSCRIBE no frame with that id follows.
    assert subs[0].call(frame(100, SUBSCRIBE, b"x")).status == ERROR
    assert subs[0].call(frame(5, UNSUBSCRIBE, body=struct.pack("<I", 100))).status == OK
    assert subs[0].call(frame(6, UNSUBSCRIBE, body=struct.pack("<I", 100))).status == NIL
    assert pub.call(frame(3, PUBLISH, b"news", b"m3")).int == 1
    with pytest.raises(TimeoutError):
        while True:
            f = subs[0].read(timeout=0.3)
            assert f is not None and f.id != 100
    # RESP subscribers and binary ones see the same publishes.
    p = fresh.pubsub()
    p.subscribe(b"news")
    assert p.get_message(timeout=2)["type"] == "subscribe"
    assert fresh.publish(b"news", b"both") == 2
    assert p.get_message(timeout=2)["data"] == b"both"
    p.close()


def test_forwarded_request_does_not_hold_back_a_local_one(bconn, fresh):
    """A slow script on a key of the other shard, then a GET of a key of this connection's shard:
    the GET's reply goes out first. Which shard owns a key is not visible to a client, so key
    pairs are tried until one has that shape (1 in 4 per pair)."""
    script = (b"local s = redis.call('TIME') repeat local n = redis.call('TIME') "
              b"until (n[1] - s[1]) * 1000000 + (n[2] - s[2]) > 100000 return 1")
    c = bconn()
    for i in range(40):
        c.send(frame(1, COMMAND, body=command_body(b"EVAL", script, b"1", f"ooo:x{i}".encode()))
               + frame(2, GET, f"ooo:y{i}".encode()))
        first, second = c.read(timeout=10), c.read(timeout=10)
        assert {first.id, second.id} == {1, 2}
        assert second.status in (OK, NIL) and first.status in (OK, NIL)
        if first.id == 2:
            assert second.body == b":1\r\n"
            return
    pytest.fail("no key pair had the script on the other shard and the GET on this one")


# ---- Statuses a single node produces -------------------------------------------------------


def test_busy_when_over_the_inflight_limit(bconn, fresh):
    """A burst of requests forwarded to the other shard: past 1024 in flight on one connection
    the server answers BUSY (with a retry-after) instead of queueing; every id is answered."""
    c = bconn()
    # Keys on both shards: whichever shard the connection landed on, half are forwarded.
    keys = [f"busy:{i}".encode() for i in range(8)]
    n = 40000
    batch = b"".join(frame(i + 1, GET, keys[i % len(keys)]) for i in range(n))
    threading.Thread(target=c.send, args=(batch,), daemon=True).start()
    statuses = {}
    busy_body = None
    for _ in range(n):
        r = c.read(timeout=20)
        assert r is not None
        statuses[r.id] = r.status
        if r.status == BUSY:
            busy_body = r.body
    assert len(statuses) == n
    assert set(statuses.values()) <= {NIL, BUSY}
    assert BUSY in statuses.values(), "no BUSY in a burst of 40000 forwarded requests"
    assert struct.unpack("<I", busy_body)[0] >= 1
    assert c.call(frame(1, GET, b"busy:0")).status == NIL


@contextlib.contextmanager
def _auth_server(tmp_path, secret: bytes):
    """A keep-server with --requirepass-file (the shared fixture's readiness PING cannot pass
    auth, so this one waits for the ready file). Stopped with SIGTERM; must exit 0."""
    secret_file = tmp_path / "secret"
    secret_file.write_bytes(secret + b"\n")
    ready = tmp_path / "ready"
    port = free_port()
    log = open(tmp_path / "keep-auth.log", "wb")
    proc = subprocess.Popen([str(keep_bin()), "--bind", "127.0.0.1", "--port", str(port),
                             "--shards", "2", "--ready-file", str(ready),
                             "--requirepass-file", str(secret_file)],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while not ready.exists():
            assert proc.poll() is None, (tmp_path / "keep-auth.log").read_text()
            assert time.monotonic() < deadline, "keep-server with requirepass not ready"
            time.sleep(0.02)
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        log.close()
    assert code == 0, (tmp_path / "keep-auth.log").read_text()


def test_auth_status_and_hello_proof(tmp_path, keep_server, keep):
    secret = b"s3cret"
    with _auth_server(tmp_path, secret) as port:
        _check_auth(port, secret)
    _healthy(keep_server, keep)


def _check_auth(port: int, secret: bytes):
    c = BinConn(port)
    try:
        assert c.auth_required
        r = c.call(frame(1, GET, b"k"))
        assert r.status == AUTH and r.body.startswith(b"NOAUTH")
        assert c.call(frame(2, PING)).body == b"PONG"  # PING needs no auth
        wrong = hmac.new(b"wrong", c.nonce, hashlib.sha256).digest()
        r = c.call(frame(3, HELLO, body=hello_body(proof=wrong)))
        assert (r.status, r.body) == (AUTH, b"AUTH invalid proof")
        assert c.call(frame(4, HELLO, body=hello_body())).status == AUTH  # no proof
        assert c.call(frame(5, GET, b"k")).status == AUTH
        # The proof is bound to this connection's nonce: another connection's does not work.
        other = BinConn(port)
        stolen = hmac.new(secret, other.nonce, hashlib.sha256).digest()
        assert c.call(frame(6, HELLO, body=hello_body(proof=stolen))).status == AUTH
        other.close()
        good = hmac.new(secret, c.nonce, hashlib.sha256).digest()
        assert c.call(frame(7, HELLO, body=hello_body(proof=good))).status == OK
        assert c.call(frame(8, SET, b"k", u64(0) + b"v")).status == OK
        assert c.call(frame(9, GET, b"k")).body == b"v"
        # HELLO with a version other than the preface's.
        assert c.call(frame(10, HELLO, body=hello_body(proof=good, version=2))).status == ERROR
        # RESP on the same port still asks for AUTH with the same secret.
        r = socket.create_connection(("127.0.0.1", port), timeout=5)
        r.sendall(b"GET k\r\nAUTH s3cret\r\nGET k\r\n")
        got = b""
        while got.count(b"\r\n") < 4:
            chunk = r.recv(4096)
            assert chunk
            got += chunk
        r.close()
        assert got.startswith(b"-NOAUTH") and got.endswith(b"+OK\r\n$1\r\nv\r\n")
    finally:
        c.close()


def test_too_large_and_oversize_values(bconn, fresh, keep_server):
    c = bconn()
    # Announced beyond the frame limit: TOO_LARGE with the id, the bytes are skipped as they
    # arrive, and the connection goes on.
    big = frame(5, SET, b"big", u64(0) + b"x" * (MAX_FRAME + 10))
    sender = threading.Thread(target=c.send, args=(big,), daemon=True)
    sender.start()
    r = c.read(timeout=30)
    assert (r.id, r.status) == (5, TOO_LARGE)
    assert r.body == f"TOO_LARGE request of {len(big) - 4} bytes exceeds the limit of " \
                     f"{MAX_FRAME}".encode()
    sender.join(timeout=30)  # the rest of the frame is discarded as it arrives
    assert c.call(frame(6, GET, b"big"), timeout=30).status == NIL
    assert c.call(frame(7, PING)).body == b"PONG"
    _healthy(keep_server, fresh)


def test_value_over_proto_max_bulk_len_is_too_large(server_factory):
    """The RESP limit on an argument holds over the binary protocol too, and the frame limit
    shrinks to 1 MiB + proto-max-bulk-len when that is below 16 MiB."""
    server = server_factory("keep-small-bulk", proto_max_bulk_len="1mb")
    c = BinConn(server.port)
    try:
        r = c.call(frame(1, HELLO, body=hello_body()))
        assert struct.unpack_from("<I", r.body, 4)[0] == (1 << 20) + (1 << 20)
        value = b"v" * ((1 << 20) + 1)
        r = c.call(frame(2, SET, b"big", u64(0) + value), timeout=20)
        assert (r.status, r.body) == (TOO_LARGE, b"TOO_LARGE argument of 1048577 bytes exceeds "
                                                 b"proto-max-bulk-len 1048576")
        r = c.call(frame(3, COMMAND, body=command_body(b"SET", b"big", value)), timeout=20)
        assert r.status == TOO_LARGE
        assert c.call(frame(4, GET, b"big")).status == NIL
        assert c.call(frame(5, SET, b"big", u64(0) + value[:1000])).status == OK
    finally:
        c.close()


OOM_TEXT = b"OOM command not allowed when used memory > 'maxmemory'."
# Keys starting with 'l' may not be evicted: over the cap their writes are refused.
NONE_CLASS = """
[[key_class]]
name = "ledger"
bytes = "l"
policy = "none"
"""


def test_oom_status_when_a_none_class_is_full(server_factory, tmp_path):
    """A `none` key class filled past a small --maxmemory: a binary SET answers OOM with Redis's
    text (INCR too; COMMAND carries the RESP error), while reads, DEL and PING go on working on
    the same connection, and other binary and RESP clients are unharmed."""
    config = tmp_path / "keep.toml"
    config.write_text(NONE_CLASS)
    server = server_factory("keep-bin-oom", maxmemory="4mb", config=str(config))
    c = BinConn(server.port)
    other = BinConn(server.port)
    resp = make_client(server)
    try:
        value = b"v" * 1000
        stored, refused, rid = [], None, 0
        # 4 MiB of 1 KB values is about 4000 keys. The cap is split across the shards, and each
        # shard refuses once it is over its share: go on until a whole batch is refused, so every
        # shard is full (bounded anyway).
        for first in range(0, 20000, 200):
            keys = [f"l:{i}".encode() for i in range(first, first + 200)]
            c.send(b"".join(frame(rid + 1 + j, SET, k, u64(0) + value)
                            for j, k in enumerate(keys)))
            replies = {}
            for _ in keys:
                r = c.read(timeout=10)
                replies[r.id] = r
            batch_refused = 0
            for j, k in enumerate(keys):
                r = replies[rid + 1 + j]
                if r.status == OK:
                    stored.append(k)
                else:
                    batch_refused += 1
                    refused = refused or r
            rid += len(keys)
            if batch_refused == len(keys):
                break
        assert refused is not None, "no OOM after 20000 SETs of 1 KB under a 4 MB cap"
        assert (refused.status, refused.body) == (OOM, OOM_TEXT), refused
        assert len(stored) > 1000
        info = resp.info("memory")
        assert info["used_memory"] >= 0.9 * info["maxmemory"]

        r = c.call(frame(rid + 1, SET, b"l:new", u64(0) + b"x"))
        assert (r.status, r.body) == (OOM, OOM_TEXT)
        r = c.call(frame(rid + 2, INCR, b"l:counter", u64(1) + u64(0)))
        assert (r.status, r.body) == (OOM, OOM_TEXT)
        # COMMAND runs the command and carries its reply, the RESP error included.
        r = c.call(frame(rid + 3, COMMAND, body=command_body(b"SET", b"l:new", b"x")))
        assert (r.status, r.body) == (OK, b"-" + OOM_TEXT + b"\r\n")
        # Reads, EXISTS, DEL and PING still work on the connection that was refused.
        assert c.call(frame(rid + 4, GET, stored[0])).body == value
        assert c.call(frame(rid + 5, GET, b"l:new")).status == NIL
        assert c.call(frame(rid + 6, EXISTS, stored[-1])).int == 1
        assert c.call(frame(rid + 7, PING)).body == b"PONG"
        # Other clients: a binary reader, and RESP, which gets the same error for a write.
        assert other.call(frame(1, GET, stored[1])).body == value
        assert resp.get(stored[2]) == value
        with pytest.raises(Exception) as error:
            resp.set(b"l:resp", b"x")
        assert str(error.value).encode() == OOM_TEXT
        # Deleting makes room: the refused write goes through afterwards.
        for first in range(0, len(stored), 200):
            batch = stored[first:first + 200]
            c.send(b"".join(frame(100000 + i, DEL, k) for i, k in enumerate(batch)))
            for _ in batch:
                assert c.read(timeout=10).int == 1
        r = c.call(frame(rid + 8, SET, b"l:new", u64(0) + b"x"))
        assert r.status == OK, r
        assert other.call(frame(2, GET, b"l:new")).body == b"x"
    finally:
        c.close()
        other.close()
        resp.close()


# ---- Bad input -------------------------------------------------------------------------------


def test_wrong_version_preface(keep_server, fresh):
    c = BinConn(keep_server.port, send_preface=False)
    c.send(preface(7))
    r = c.read()
    assert (r.id, r.status, r.body) == (0, ERROR,
                                        b"ERR unsupported protocol version 7 (server speaks 1)")
    assert c.closed()
    c.close()
    _healthy(keep_server, fresh)


@pytest.mark.parametrize("data", [b"\x00XYZ", b"\x00K", b"\x01\x02\x03\x04", b"\x1f" * 100,
                                  b"\x00KQ\x01"])
def test_not_a_preface_closes(keep_server, fresh, data):
    c = BinConn(keep_server.port, send_preface=False)
    c.send(data)
    if data == b"\x00K":
        c.sock.shutdown(socket.SHUT_WR)  # a preface cut short: nothing to answer
    assert c.closed()
    assert c.buf == b""
    c.close()
    _healthy(keep_server, fresh)


def test_frame_errors_keep_the_connection(bconn, fresh, keep_server):
    c = bconn()
    fresh.set(b"keep", b"me")
    r = c.call(frame(1, 0x7F, b"k"))
    assert r.status == ERROR  # unknown op
    r = c.call(frame(2, GET, b"k", flags=0x80))
    assert r.status == ERROR  # undefined flag bit
    r = c.call(frame(3, TOPOLOGY, b"key-on-a-no-key-op"))
    assert r.status == ERROR
    r = c.call(frame(4, INCR, b"k", b"short"))
    assert (r.status, r.body) == (ERROR, b"ERR malformed INCR body")
    r = c.call(frame(5, SET, b"k", b"\x01"))
    assert r.status == ERROR
    r = c.call(frame(6, UNSUBSCRIBE, body=b"\x01"))
    assert r.status == ERROR
    r = c.call(frame(7, SET, b"k", u64(0) + b"v", SET_NX | SET_XX))
    assert (r.status, r.body) == (ERROR, b"ERR syntax error")
    assert c.call(frame(8, GET, b"keep")).body == b"me"


@pytest.mark.parametrize("bad", [
    struct.pack("<I", 3) + b"\x01\x00\x00",  # length < 8
    struct.pack("<IIBBH", 8, 0, GET, 0, 0),  # id 0
    struct.pack("<IIBBH", 300 << 20, 1, SET, 0, 1),  # beyond the hard limit
])
def test_fatal_frames_error_then_close(bconn, fresh, keep_server, bad):
    c = bconn()
    c.send(bad)
    r = c.read()
    assert (r.id, r.status) == (0, ERROR)
    assert c.closed()
    _healthy(keep_server, fresh)


def test_truncated_frames_and_byte_by_byte(bconn, fresh, keep_server):
    c = bconn()
    data = frame(1, SET, b"slow", u64(0) + b"value") + frame(2, GET, b"slow")
    for i in range(len(data)):  # one byte per write: the frames still decode
        c.send(data[i:i + 1])
    assert c.read().status == OK
    assert c.read().body == b"value"
    # A frame cut short and the connection closed: nothing runs, nothing breaks.
    d = bconn()
    d.send(frame(3, SET, b"slow", u64(0) + b"half-written")[:-4])
    d.close()
    time.sleep(0.1)
    assert fresh.get(b"slow") == b"value"
    _healthy(keep_server, fresh)


def test_garbage_and_abrupt_disconnects(keep_server, fresh):
    fresh.set(b"intact", b"yes")
    rng = random.Random(1234)
    for i in range(30):
        c = BinConn(keep_server.port)
        junk = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 3000)))
        if i % 3 == 0:
            # A frame cut short, completed by junk: it may even run, on its own key.
            junk = frame(1, SET, b"target", u64(0) + b"no")[:rng.randint(1, 20)] + junk
        try:
            c.send(junk)
        except OSError:
            pass
        if i % 2 == 0:
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()  # abrupt (RST for even i), often mid-frame
    # Garbage after a valid request on an open connection: the request is answered.
    c = BinConn(keep_server.port)
    c.send(frame(1, PING) + os.urandom(64))
    assert c.read().body == b"PONG"
    c.close()
    assert fresh.get(b"intact") == b"yes"
    _healthy(keep_server, fresh)


def test_resp_clients_unaffected_by_binary_first_bytes(keep_server, fresh, raw):
    """RESP (first byte >= 0x20) and inline commands still work beside binary connections."""
    b = BinConn(keep_server.port)
    r = raw(keep_server)
    r.send(b"PING\r\n")
    assert r.read_available(wait=0.5).startswith(b"+PONG")
    assert b.call(frame(1, SET, b"mix", u64(0) + b"1")).status == OK
    assert fresh.get(b"mix") == b"1"
    b.close()


# ---- Test vectors ------------------------------------------------------------------------------


def _vectors() -> dict[str, bytes]:
    out = {}
    for line in VECTORS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, hexbytes = line.split(None, 1)
        out[name] = bytes.fromhex(hexbytes.replace(" ", "").replace("|", ""))
    return out


def test_vectors_requests_are_answered(bconn, fresh):
    """Every request vector, sent as is, is answered under its id with a defined status."""
    vectors = _vectors()
    assert vectors["preface_v1"] == preface(1)
    c = bconn()
    requests = {name: v for name, v in vectors.items() if name.startswith("req_")}
    assert len(requests) >= 8
    for name, data in requests.items():
        (rid,) = struct.unpack_from("<I", data, 4)
        op = data[8]
        if op == UNSUBSCRIBE:
            expected = {NIL, OK}
        elif op == HELLO:
            expected = {OK, ERROR}
        else:
            expected = {OK, NIL, LOCKED, WRONGTYPE, ERROR}
        r = c.call(data)
        assert r.status in expected, (name, r)
        assert r.status != ERROR or op in (HELLO, COMMAND), (name, r)


# ---- Pub/sub stall checker ---------------------------------------------------------------------


def _publish_rate(port: int, seconds: float, message: bytes) -> float:
    """Publishes for `seconds` in pipelined batches; returns publishes per second."""
    c = BinConn(port)
    try:
        done, rid = 0, 0
        end = time.monotonic() + seconds
        start = time.monotonic()
        while time.monotonic() < end:
            batch = []
            for _ in range(50):
                rid += 1
                batch.append(frame(rid, PUBLISH, b"stall", message))
            c.send(b"".join(batch))
            for _ in range(50):
                r = c.read(timeout=10)
                assert r.status == OK
            done += 50
        return done / (time.monotonic() - start)
    finally:
        c.close()


def test_stalled_subscriber_sees_the_gap_and_never_slows_the_publisher(keep_server, fresh):
    message = b"x" * 4096
    baseline = _publish_rate(keep_server.port, 1.0, message)

    sub = BinConn(keep_server.port, rcvbuf=8192)
    try:
        assert sub.call(frame(1, SUBSCRIBE, b"stall")).status == OK
        # The subscriber stops reading; the publisher goes on.
        stalled = _publish_rate(keep_server.port, 1.0, message)
        dropped = int(fresh.info("stats")["pubsub_dropped_events"])
        assert dropped > 0
        # A publisher held up by the stalled subscriber would drop to almost nothing; on a loaded
        # 2-core machine its rate swings by half between runs, so only that is asserted here
        # (the figures are printed; bench/ measures speed).
        print(f"publisher rate: {baseline:.0f}/s alone, {stalled:.0f}/s with a stalled subscriber")
        assert stalled >= 0.2 * baseline, (stalled, baseline)

        # Resume reading: the backlog, then a frame whose number shows the gap.
        resumed = time.monotonic()
        last_seq, caught_up, detected = 0, None, None
        while detected is None:
            r = sub.read(timeout=5)
            assert r is not None and r.id == 1
            (seq,) = struct.unpack_from("<Q", r.body)
            if r.flags & HEARTBEAT:
                if seq > last_seq:
                    detected = time.monotonic()
                continue
            if seq != last_seq + 1:
                detected = time.monotonic()
            else:
                caught_up = time.monotonic()
            last_seq = seq
        caught_up = caught_up or resumed
        print(f"gap detected {1000 * (detected - caught_up):.1f} ms after the backlog was read")
        # The spec's promise: within 100 ms (a heartbeat period) of having read what was buffered;
        # the bounds leave room for a loaded machine.
        assert detected - caught_up < 0.3, detected - caught_up
        assert detected - resumed < 2.0
    finally:
        sub.close()
