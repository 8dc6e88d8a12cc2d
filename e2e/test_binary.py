"""Keep's binary protocol against a real keep-server (dataplane/proto/binary_protocol.md).

A small encoder of the spec's frames (below) drives every op, every status a single node can
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
import select
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest
from helpers.server import free_port, keep_bin

pytestmark = [pytest.mark.timeout(90), pytest.mark.keep_only]

REPO = Path(__file__).resolve().parent.parent
VECTORS = REPO / "dataplane" / "proto" / "binary_test_vectors.txt"

# Ops (binary_protocol.md §4).
HELLO, PING, GET, SET, DEL, EXISTS, INCR, EXPIRE = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08
LOCK, UNLOCK, EXTEND, THROTTLE, FIXED_WINDOW = 0x09, 0x0A, 0x0B, 0x0C, 0x0D
DELPREFIX, PUBLISH, SUBSCRIBE, UNSUBSCRIBE, TOPOLOGY, COMMAND = 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13
# Statuses (§3).
OK, NIL, ERROR, BUSY, MOVED, FENCED, LOCKED, OOM, WRONGTYPE, TOO_LARGE, AUTH = range(11)
EVENT, HEARTBEAT, PREFACE = 0x01, 0x02, 0x04
SET_NX, SET_XX, SET_GET, SET_KEEPTTL = 0x01, 0x02, 0x04, 0x08
EXPIRE_NX, EXPIRE_XX, EXPIRE_GT, EXPIRE_LT = 0x01, 0x02, 0x04, 0x08
MAX_FRAME = (1 << 20) + 16 * 1024 * 1024


def preface(version: int = 1) -> bytes:
    return bytes([0, ord("K"), ord("P"), version])


def frame(rid: int, op: int, key: bytes = b"", body: bytes = b"", flags: int = 0) -> bytes:
    return struct.pack("<IIBBH", 8 + len(key) + len(body), rid, op, flags, len(key)) + key + body


def u64(v: int) -> bytes:
    return struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)


def i64s(body: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(body) // 8}q", body))


def command_body(*args: bytes) -> bytes:
    out = struct.pack("<I", len(args))
    for a in args:
        out += struct.pack("<I", len(a)) + a
    return out


def hello_body(name: bytes = b"e2e", proof: bytes = b"", version: int = 1) -> bytes:
    return bytes([version, len(name)]) + name + bytes([len(proof)]) + proof


class Reply:
    def __init__(self, rid, status, flags, body):
        self.id, self.status, self.flags, self.body = rid, status, flags, body

    def __repr__(self):
        return f"Reply(id={self.id}, status={self.status}, flags={self.flags}, body={self.body!r})"

    @property
    def int(self) -> int:
        assert len(self.body) == 8, self
        return struct.unpack("<q", self.body)[0]


class BinConn:
    """A raw binary-protocol connection with bounded reads."""

    def __init__(self, port: int, host: str = "127.0.0.1", rcvbuf: int | None = None,
                 send_preface: bool = True):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(10)
        self.sock.connect((host, port))
        self.buf = b""
        self.pos = 0
        self.nonce = b""
        self.auth_required = False
        if send_preface:
            self.sock.sendall(preface())
            p = self.read()
            assert p.id == 0 and p.status == OK and p.flags == PREFACE, p
            assert p.body[0] == 1
            self.auth_required = p.body[1] == 1
            self.nonce = p.body[4:20]

    def close(self):
        self.sock.close()

    def send(self, data: bytes):
        self.sock.sendall(data)

    def read(self, timeout: float = 5.0) -> Reply | None:
        """The next frame, or None on EOF; raises TimeoutError after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            # `pos` walks the buffer so a large read is not copied once per frame.
            if len(self.buf) - self.pos >= 12:
                (length,) = struct.unpack_from("<I", self.buf, self.pos)
                if len(self.buf) - self.pos >= 4 + length:
                    rid, status, flags, _ = struct.unpack_from("<IBBH", self.buf, self.pos + 4)
                    body = bytes(self.buf[self.pos + 12:self.pos + 4 + length])
                    self.pos += 4 + length
                    if self.pos == len(self.buf):
                        self.buf, self.pos = b"", 0
                    return Reply(rid, status, flags, body)
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no frame")
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                raise TimeoutError("no frame")
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return None
            self.buf = self.buf[self.pos:] + chunk
            self.pos = 0

    def call(self, data: bytes, timeout: float = 5.0) -> Reply:
        (rid,) = struct.unpack_from("<I", data, 4)
        self.send(data)
        while True:
            r = self.read(timeout)
            assert r is not None, "connection closed"
            if r.id == rid and not r.flags & EVENT:
                return r

    def closed(self, timeout: float = 5.0) -> bool:
        """True if the server closes the connection (after any frames it sends)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.sock], [], [], deadline - time.monotonic())
            if not ready:
                return False
            try:
                chunk = self.sock.recv(1 << 16)
            except ConnectionResetError:
                return True
            if not chunk:
                return True
            self.buf += chunk
        return False


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


def test_delprefix_publish_topology_command(bconn, fresh):
    c = bconn()
    for i in range(50):
        fresh.set(f"user:{i}".encode(), b"x")
    fresh.set(b"other", b"y")
    assert c.call(frame(1, DELPREFIX, b"user:")).int == 50
    assert fresh.dbsize() == 1
    assert c.call(frame(2, PUBLISH, b"nobody", b"msg")).int == 0
    r = c.call(frame(3, TOPOLOGY))
    epoch, n = struct.unpack_from("<QH", r.body)
    assert (r.status, n) == (OK, 1)  # shard ports off: one endpoint, the client port
    port, host_len = struct.unpack_from("<HH", r.body, 10)
    host = r.body[14:14 + host_len]
    ranges, first, last = struct.unpack_from("<HHH", r.body, 14 + host_len)
    assert (host, ranges, first, last) == (b"127.0.0.1", 1, 0, 16383)
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


def _free_port_pair() -> int:
    """A base port whose next port is free too (two shards listen on base and base + 1)."""
    for _ in range(100):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            base = a.getsockname()[1]
            try:
                with socket.socket() as b:
                    b.bind(("127.0.0.1", base + 1))
                return base
            except OSError:
                continue
    raise RuntimeError("no free pair of ports")


def test_topology_with_shard_ports(server_factory):
    base = _free_port_pair()
    server = server_factory("keep-shardports", shard_port_base=base)
    c = BinConn(server.port)
    try:
        r = c.call(frame(1, TOPOLOGY))
        assert r.status == OK
        _epoch, n = struct.unpack_from("<QH", r.body)
        assert n == 2
        off, ports, slots = 10, [], 0
        for _ in range(n):
            port, host_len = struct.unpack_from("<HH", r.body, off)
            off += 4 + host_len
            (ranges,) = struct.unpack_from("<H", r.body, off)
            off += 2
            for _ in range(ranges):
                first, last = struct.unpack_from("<HH", r.body, off)
                off += 4
                slots += last - first + 1
            ports.append(port)
        assert ports == [base, base + 1] and slots == 16384
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
        # The spec's promise: within 100 ms (a heartbeat period) of having read what was buffered;
        # the bounds leave room for a loaded machine.
        assert detected - caught_up < 0.3, detected - caught_up
        assert detected - resumed < 2.0
    finally:
        sub.close()
