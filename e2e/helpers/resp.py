"""A tiny RESP2/RESP3 codec and a raw-socket client for byte-exact protocol tests.

Replies are parsed into `Reply(kind, value)` tuples that keep the wire type, so that a simple
string `+OK` and a bulk string `$2 OK` never compare equal:

    +  -> Reply("simple", b"...")        -  -> Reply("error", b"...")
    :  -> Reply("int", 123)              $  -> Reply("bulk", b"..." or None for $-1)
    *  -> Reply("array", [...] or None)  _  -> Reply("null", None)
    ,  -> Reply("double", b"1.5")        #  -> Reply("bool", True/False)
    (  -> Reply("bignum", b"...")        !  -> Reply("bulkerror", b"...")
    =  -> Reply("verbatim", b"txt:...")  %  -> Reply("map", [(k, v), ...])
    ~  -> Reply("set", [...])            >  -> Reply("push", [...])
    |  -> Reply("attr", [(k, v), ...])   (returned as its own reply)

Every blocking call has a timeout: nothing here can hang a test forever.
"""

from __future__ import annotations

import errno
import select
import socket
import time
from typing import Iterable, NamedTuple


class Reply(NamedTuple):
    kind: str
    value: object

    def __repr__(self) -> str:  # compact, readable in assertion diffs
        if self.kind in ("array", "set", "push") and self.value is not None:
            return f"{self.kind}[{', '.join(repr(v) for v in self.value)}]"
        if self.kind in ("map", "attr"):
            return f"{self.kind}{{{', '.join(f'{k!r}: {v!r}' for k, v in self.value)}}}"
        return f"{self.kind}({self.value!r})"


class Incomplete(Exception):
    """The buffer does not yet hold a whole reply."""


class ProtocolViolation(Exception):
    """The bytes cannot be a RESP reply."""


class ConnectionClosed(Exception):
    """The peer closed the connection (EOF or reset) before a whole reply arrived."""


class ReplyTimeout(Exception):
    """No whole reply arrived in time."""


def _to_bytes(arg) -> bytes:
    if isinstance(arg, bytes):
        return arg
    if isinstance(arg, (bytearray, memoryview)):
        return bytes(arg)
    if isinstance(arg, str):
        return arg.encode()
    if isinstance(arg, (int, float)):
        return repr(arg).encode()
    raise TypeError(f"cannot encode {arg!r}")


def encode_command(*args) -> bytes:
    """A RESP array of bulk strings."""
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        b = _to_bytes(a)
        parts.append(b"$%d\r\n" % len(b))
        parts.append(b)
        parts.append(b"\r\n")
    return b"".join(parts)


def encode_commands(commands: Iterable[Iterable]) -> bytes:
    return b"".join(encode_command(*c) for c in commands)


_AGGREGATE = {b"*": "array", b"~": "set", b">": "push"}
_PAIRS = {b"%": "map", b"|": "attr"}


def parse_reply(buf: bytes | bytearray, pos: int = 0) -> tuple[Reply, int]:
    """Parse one reply at `pos`; return it and the position after it. Raises Incomplete."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        if len(buf) - pos > 1 << 20:
            raise ProtocolViolation("header line longer than 1 MiB")
        raise Incomplete()
    t = bytes(buf[pos:pos + 1])
    line = bytes(buf[pos + 1:end])
    nxt = end + 2
    if t == b"+":
        return Reply("simple", line), nxt
    if t == b"-":
        return Reply("error", line), nxt
    if t == b":":
        return Reply("int", int(line)), nxt
    if t == b"_":
        return Reply("null", None), nxt
    if t == b",":
        return Reply("double", line), nxt
    if t == b"#":
        return Reply("bool", line == b"t"), nxt
    if t == b"(":
        return Reply("bignum", line), nxt
    if t in (b"$", b"!", b"="):
        n = int(line)
        kind = {b"$": "bulk", b"!": "bulkerror", b"=": "verbatim"}[t]
        if n < 0:
            return Reply(kind, None), nxt
        if len(buf) < nxt + n + 2:
            raise Incomplete()
        if buf[nxt + n:nxt + n + 2] != b"\r\n":
            raise ProtocolViolation(f"bulk of {n} bytes not followed by CRLF")
        return Reply(kind, bytes(buf[nxt:nxt + n])), nxt + n + 2
    if t in _AGGREGATE:
        n = int(line)
        if n < 0:
            return Reply(_AGGREGATE[t], None), nxt
        items = []
        p = nxt
        for _ in range(n):
            item, p = parse_reply(buf, p)
            items.append(item)
        return Reply(_AGGREGATE[t], items), p
    if t in _PAIRS:
        n = int(line)
        pairs = []
        p = nxt
        for _ in range(n):
            k, p = parse_reply(buf, p)
            v, p = parse_reply(buf, p)
            pairs.append((k, v))
        return Reply(_PAIRS[t], pairs), p
    raise ProtocolViolation(f"unknown reply type byte {t!r} in {bytes(buf[pos:pos + 80])!r}")


def to_python(r: Reply):
    """Strip wire types: bulk/simple -> bytes, int -> int, null -> None, map -> dict ..."""
    if r.kind in ("array", "set", "push"):
        return None if r.value is None else [to_python(x) for x in r.value]
    if r.kind in ("map", "attr"):
        return {to_python(k): to_python(v) for k, v in r.value}
    return r.value


class RawConnection:
    """A plain TCP connection speaking raw bytes, with bounded waits everywhere."""

    def __init__(self, host: str, port: int, timeout: float = 10.0, nodelay: bool = True,
                 connect_timeout: float = 5.0):
        self.host, self.port = host, port
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=connect_timeout)
        if nodelay:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(timeout)
        self.buf = bytearray()
        self.closed_by_peer = False

    # -- sending ---------------------------------------------------------------------------
    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_command(self, *args) -> None:
        self.sock.sendall(encode_command(*args))

    def send_draining(self, data: bytes, timeout: float = 30.0) -> bool:
        """Send `data` while reading whatever the server answers into the buffer, so a server
        that stops reading until its replies are consumed (backpressure) cannot deadlock us.
        Returns False if the peer closed/reset the connection before everything was sent."""
        view = memoryview(data)
        deadline = time.monotonic() + timeout
        self.sock.setblocking(False)
        try:
            while view:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ReplyTimeout(f"send of {len(data)} bytes: {len(view)} left at timeout")
                r, w, _ = select.select([self.sock], [self.sock], [], remaining)
                if r:
                    try:
                        chunk = self.sock.recv(1 << 20)
                    except BlockingIOError:
                        chunk = None
                    except (ConnectionResetError, BrokenPipeError):
                        self.closed_by_peer = True
                        return False
                    if chunk == b"":
                        self.closed_by_peer = True
                        return False
                    if chunk:
                        self.buf += chunk
                if w:
                    try:
                        n = self.sock.send(view[:1 << 18])
                        view = view[n:]
                    except BlockingIOError:
                        pass
                    except (ConnectionResetError, BrokenPipeError):
                        self.closed_by_peer = True
                        return False
            return True
        finally:
            self.sock.setblocking(True)
            self.sock.settimeout(self.timeout)

    def call(self, *args, timeout: float | None = None) -> Reply:
        self.send_command(*args)
        return self.read_reply(timeout)

    # -- receiving -------------------------------------------------------------------------
    def _fill(self, deadline: float) -> None:
        """Read at least one byte or raise ReplyTimeout / ConnectionClosed."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ReplyTimeout()
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(1 << 20)
        except socket.timeout:
            raise ReplyTimeout() from None
        except (ConnectionResetError, BrokenPipeError) as e:
            self.closed_by_peer = True
            raise ConnectionClosed(str(e)) from None
        if not chunk:
            self.closed_by_peer = True
            raise ConnectionClosed("EOF")
        self.buf += chunk

    def read_reply(self, timeout: float | None = None) -> Reply:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            try:
                reply, pos = parse_reply(self.buf, 0)
                del self.buf[:pos]
                return reply
            except Incomplete:
                pass
            self._fill(deadline)

    def read_replies(self, n: int, timeout: float | None = None) -> list[Reply]:
        """Read n replies; the timeout bounds the whole batch."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        out = []
        pos = 0
        while len(out) < n:
            try:
                reply, pos = parse_reply(self.buf, pos)
                out.append(reply)
                continue
            except Incomplete:
                del self.buf[:pos]
                pos = 0
            self._fill(deadline)
        del self.buf[:pos]
        return out

    def read_available(self, wait: float = 0.3) -> bytes:
        """Whatever arrives within `wait` seconds (until a quiet gap); stops at EOF."""
        deadline = time.monotonic() + wait
        while True:
            try:
                self._fill(deadline)
            except (ReplyTimeout, ConnectionClosed):
                break
        data = bytes(self.buf)
        self.buf.clear()
        return data

    def read_exactly(self, n: int, timeout: float | None = None) -> bytes:
        """Exactly n bytes (fewer only if the peer closes first)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while len(self.buf) < n:
            try:
                self._fill(deadline)
            except ConnectionClosed:
                break
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def read_until_suffix(self, suffix: bytes, timeout: float | None = None) -> tuple[bytes, bool]:
        """Bytes up to and including `suffix` (a sentinel reply), or everything until the peer
        closes. Returns (data, closed)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            i = self.buf.find(suffix)
            if i >= 0:
                data = bytes(self.buf[:i + len(suffix)])
                del self.buf[:i + len(suffix)]
                return data, False
            try:
                self._fill(deadline)
            except ConnectionClosed:
                data = bytes(self.buf)
                self.buf.clear()
                return data, True

    def wait_closed(self, timeout: float = 5.0) -> bool:
        """True when the peer closes (EOF or reset) within `timeout`; data read is kept in buf."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._fill(deadline)
            except ConnectionClosed:
                return True
            except ReplyTimeout:
                return False
            if len(self.buf) > 64 << 20:  # don't hoard a never-ending stream
                self.buf.clear()

    def is_open(self) -> bool:
        """Non-destructive check: no EOF/reset pending (unread data is fine)."""
        if self.closed_by_peer:
            return False
        r, _, _ = select.select([self.sock], [], [], 0)
        if not r:
            return True
        try:
            data = self.sock.recv(1 << 16, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return True
        except OSError as e:
            if e.errno in (errno.ECONNRESET, errno.EPIPE):
                return False
            raise
        return bool(data)

    def close(self, reset: bool = False) -> None:
        try:
            if reset:  # RST instead of FIN: SO_LINGER with a zero timeout
                import struct
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
