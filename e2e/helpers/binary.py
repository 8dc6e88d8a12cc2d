"""Keep's binary protocol for the e2e suites: a small encoder of the frames of
dataplane/proto/binary_protocol.md, a raw connection with bounded reads, and decoders of the
reply bodies the suites check (TOPOLOGY, MOVED, BUSY)."""

from __future__ import annotations

import select
import socket
import struct
import time
from dataclasses import dataclass, field

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


# ---- Reply bodies ----------------------------------------------------------------------------

MEMBER_STATES = {0: "joining", 1: "up", 2: "leaving", 3: "left", 4: "down"}
TOPOLOGY_CLUSTER, TOPOLOGY_FENCED = 0x01, 0x02


@dataclass
class Endpoint:
    host: str
    port: int
    ranges: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Member:
    id: str
    host: str
    client_port: int
    state: str
    endpoints: list[Endpoint]


@dataclass
class Topology:
    epoch: int
    flags: int
    self_index: int
    endpoints: list[Endpoint]
    members: list[Member]

    @property
    def fenced(self) -> bool:
        return bool(self.flags & TOPOLOGY_FENCED)

    def owner_of(self, slot: int) -> Endpoint | None:
        for e in self.endpoints:
            if any(first <= slot <= last for first, last in e.ranges):
                return e
        return None


def parse_topology(body: bytes) -> Topology:
    """Decodes a TOPOLOGY body strictly (every byte accounted for)."""
    epoch, n = struct.unpack_from("<QH", body)
    off = 10
    endpoints = []
    for _ in range(n):
        port, host_len = struct.unpack_from("<HH", body, off)
        off += 4
        host = body[off:off + host_len].decode()
        off += host_len
        (count,) = struct.unpack_from("<H", body, off)
        off += 2
        ranges = [struct.unpack_from("<HH", body, off + 4 * i) for i in range(count)]
        off += 4 * count
        endpoints.append(Endpoint(host, port, ranges))
    flags, self_index, m = struct.unpack_from("<BHH", body, off)
    off += 5
    members = []
    for _ in range(m):
        (id_len,) = struct.unpack_from("<H", body, off)
        ident = body[off + 2:off + 2 + id_len].decode()
        off += 2 + id_len
        (host_len,) = struct.unpack_from("<H", body, off)
        host = body[off + 2:off + 2 + host_len].decode()
        off += 2 + host_len
        client_port, state, first, count = struct.unpack_from("<HBHH", body, off)
        off += 7
        members.append(Member(ident, host, client_port, MEMBER_STATES[state],
                              endpoints[first:first + count]))
    assert off == len(body), f"{len(body) - off} trailing bytes in a TOPOLOGY body"
    return Topology(epoch, flags, self_index, endpoints, members)


@dataclass
class Moved:
    slot: int
    epoch: int
    host: str
    port: int


def parse_moved(body: bytes) -> Moved:
    slot, epoch, port, host_len = struct.unpack_from("<HQHH", body)
    return Moved(slot, epoch, body[14:14 + host_len].decode(), port)
