"""Multi-member keep-server clusters for e2e/test_cluster_*.py.

`Cluster(n, log_dir, ...)` starts n keep-server members, each on its own loopback address
(127.A.B.1..n with A, B random per cluster, so concurrent suites do not collide), with its own
client, peer (UDP heartbeats) and admin ports. Secrets go through KEEP_SECRET/KEEP_PEER_SECRET,
never flags. Every wait is bounded; `close()` stops every process it started (SIGKILL after a
bounded SIGTERM), and removes the iptables chain `partition()` installed, even when a test fails.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import random
import signal
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from .resp import RawConnection
from .server import _LIVE, CRASH_PATTERNS, _die_with_parent, keep_bin

PEER_SECRET = "e2e-peer-secret"
CLUSTER_SECRET = "e2e-cluster-secret"
ADMIN_TOKEN = hmac.new(PEER_SECRET.encode(), b"keep-admin", hashlib.sha256).hexdigest()


def mono_raw_ms() -> float:
    """CLOCK_MONOTONIC_RAW, the clock the members time their views with (same machine)."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW) / 1e6


def free_port(host: str, udp_too: bool = False) -> int:
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        if not udp_too:
            return port
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                u.bind((host, port))
            return port
        except OSError:
            continue
    raise RuntimeError("no free port")


def crc16(data: bytes) -> int:
    """Redis Cluster's CRC16-XMODEM (`--slot-hash crc16`)."""
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def crc16_slot(key: bytes) -> int:
    """A key's slot under `--slot-hash crc16`, with Redis's hash-tag rule."""
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    return crc16(key) % 16384


def wait_until(predicate, timeout: float, interval: float = 0.005, what: str = "condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except (OSError, ValueError, urllib.error.URLError) as e:
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def heartbeat_datagram(member_id: str, incarnation: int, sequence: int, *, key: str = PEER_SECRET,
                       state: int = 1, epoch: int = 1, known: int = 0) -> bytes:
    """A heartbeat as dataplane/cluster/heartbeat.h lays it out, with a MAC under `key`."""
    ident = member_id.encode()
    body = b"KHB\x01" + struct.pack("<BBH", state, 0, len(ident))
    body += struct.pack("<QQQQ", incarnation, sequence, epoch, known)
    body += struct.pack("<IIII", 0, 0, 0, 0) + ident
    return body + hmac.new(key.encode(), body, hashlib.sha256).digest()


class Member:
    def __init__(self, cluster: "Cluster", index: int, host: str):
        self.cluster = cluster
        self.index = index
        self.id = f"keep-{index}"
        self.host = host
        # Each port is free when picked and released at once, so the kernel may hand the same one
        # out again: a member given one port twice cannot listen on its second use.
        taken: set[int] = set()

        def pick(udp_too: bool = False) -> int:
            for _ in range(100):
                port = free_port(host, udp_too=udp_too)
                if port not in taken:
                    taken.add(port)
                    return port
            raise RuntimeError("no free port")

        self.client_port = pick()
        self.peer_port = pick(udp_too=True)
        self.admin_port = pick()
        self.shard_port_base = 0
        if cluster.shard_ports:
            # Shard ports need `shards` consecutive free ports; try a few bases.
            for _ in range(50):
                base = random.randint(20000, 60000)
                if taken.intersection(range(base, base + cluster.shards)):
                    continue
                try:
                    for i in range(cluster.shards):
                        with socket.socket() as s:
                            s.bind((host, base + i))
                    self.shard_port_base = base
                    break
                except OSError:
                    continue
        self.proc: subprocess.Popen | None = None
        self.log_path = cluster.log_dir / f"{cluster.name}-{self.id}.log"
        self.ready_file = cluster.log_dir / f"{cluster.name}-{self.id}.ready"

    def entry(self) -> dict:
        e = {"id": self.id, "host": self.host, "client_port": self.client_port,
             "peer_port": self.peer_port, "shards": self.cluster.shards}
        if self.shard_port_base:
            e["shard_port_base"] = self.shard_port_base
        return e

    def inline(self) -> str:
        s = f"{self.id}@{self.host}:{self.client_port}:{self.peer_port}:{self.cluster.shards}"
        return s + (f":{self.shard_port_base}" if self.shard_port_base else "")

    # -- process ---------------------------------------------------------------------------
    def argv(self, members: str) -> list[str]:
        c = self.cluster
        argv = [str(keep_bin()), "--bind", self.host, "--members", members,
                "--member-id", self.id, "--admin-port", str(self.admin_port),
                "--ready-file", str(self.ready_file),
                "--slot-hash", c.slot_hash, "--max-lock-ttl", str(c.max_lock_ttl),
                "--pin", "never"]
        for k, v in c.extra.items():
            argv += ["--" + k.replace("_", "-"), str(v)]
        return argv

    def start(self, members: str | None = None) -> None:
        members = members or self.cluster.inline()
        env = dict(os.environ, KEEP_SECRET=CLUSTER_SECRET, KEEP_PEER_SECRET=PEER_SECRET)
        log = open(self.log_path, "ab")
        log.write(f"==== starting {' '.join(self.argv(members))}\n".encode())
        log.flush()
        self.proc = subprocess.Popen(self.argv(members), stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                     preexec_fn=_die_with_parent)
        log.close()
        _LIVE.add(self)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self, timeout: float = 10.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGCONT)
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        _LIVE.discard(self)
        return self.proc.returncode

    def _kill_quietly(self) -> None:  # for helpers.server's atexit net
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    def log_tail(self, n: int = 3000) -> str:
        try:
            return self.log_path.read_bytes()[-n:].decode(errors="replace")
        except FileNotFoundError:
            return ""

    # -- admin API -------------------------------------------------------------------------
    def http(self, method: str, path: str, body=None, token: str | None = ADMIN_TOKEN,
             timeout: float = 2.0) -> tuple[int, object]:
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(f"http://{self.host}:{self.admin_port}{path}", data=data,
                                     method=method)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")

    def cluster_view(self) -> dict:
        status, body = self.http("GET", "/v1/cluster")
        assert status == 200, body
        return body

    def metrics(self) -> str:
        status, body = self.http("GET", "/metrics")
        assert status == 200
        return body

    def ready(self) -> bool:
        return self.http("GET", "/readyz")[0] == 200

    def ready_file_fields(self) -> dict:
        """The ready file's `key=value` fields (empty while it does not exist)."""
        try:
            words = self.ready_file.read_text().split()
        except FileNotFoundError:
            return {}
        return dict(w.split("=", 1) for w in words if "=" in w)

    def call(self, *args, timeout: float = 2.0):
        with RawConnection(self.host, self.client_port, timeout=timeout,
                           connect_timeout=timeout) as c:
            return c.call(*args, timeout=timeout)


class Cluster:
    def __init__(self, n: int, log_dir: Path, *, name: str = "cluster", shards: int = 1,
                 slot_hash: str = "keyed", max_lock_ttl: int = 1000, shard_ports: bool = False,
                 extra: dict | None = None):
        self.log_dir = Path(log_dir)
        self.name = name
        self.shards = shards
        self.slot_hash = slot_hash
        self.max_lock_ttl = max_lock_ttl
        self.shard_ports = shard_ports
        self.extra = dict(extra or {})
        prefix = f"127.{random.randint(100, 250)}.{random.randint(1, 250)}"
        self.members = [Member(self, i, f"{prefix}.{i + 1}") for i in range(n)]
        self.chain: str | None = None

    def inline(self) -> str:
        return ",".join(m.inline() for m in self.members)

    def members_json(self, version: int = 1, members=None) -> dict:
        return {"version": version, "members": [m.entry() for m in (members or self.members)]}

    def start(self, timeout: float = 15.0) -> "Cluster":
        for m in self.members:
            m.start()
        self.wait_settled(self.members, timeout)
        return self

    def wait_settled(self, members, timeout: float = 15.0) -> None:
        """Every member in `members` ready, and all agree on who owns which slot."""
        ids = {m.id for m in members}

        def settled():
            views = [m.cluster_view() for m in members]
            if not all(v["phase"] == "serving" and not v["fenced"] for v in views):
                return False
            if not all(x["state"] == "up" for v in views for x in v["members"] if x["id"] in ids):
                return False
            return len({v["owners_digest"] for v in views}) == 1 and views
        wait_until(settled, timeout, interval=0.02, what="the cluster to settle")

    def partition(self, group_a, group_b) -> float:
        """Drops every packet between the two groups (both directions) until heal(). The rules
        go into a chain of their own that is hooked into INPUT last, so the cut happens at once;
        returns CLOCK_MONOTONIC_RAW (ms) right after it happened."""
        self.chain = f"KEEP{os.getpid() % 100000}{random.randint(0, 999)}"
        _iptables("-N", self.chain)
        for a in group_a:
            for b in group_b:
                _iptables("-A", self.chain, "-s", a.host, "-d", b.host, "-j", "DROP")
                _iptables("-A", self.chain, "-s", b.host, "-d", a.host, "-j", "DROP")
        before = mono_raw_ms()
        _iptables("-I", "INPUT", "-j", self.chain)
        after = mono_raw_ms()
        # The rule took effect somewhere in between; report the earliest moment, so figures
        # measured from it are never flattering.
        return before if after - before < 50 else after

    def heal(self) -> None:
        if self.chain is None:
            return
        chain, self.chain = self.chain, None
        _iptables("-D", "INPUT", "-j", chain, check=False)
        # A chain may have been created without its hook (a failure in between): flush and
        # delete it all the same.
        _iptables("-F", chain, check=False)
        _iptables("-X", chain, check=False)

    def close(self) -> None:
        try:
            self.heal()
        finally:
            for m in self.members:
                m.stop()

    def teardown(self, allowed_exits=(0,)) -> list[str]:
        """close(), then the problems found (see problems())."""
        self.close()
        return self.problems(allowed_exits)

    def problems(self, allowed_exits=(0,)) -> list[str]:
        """After close(): members that exited badly or logged a crash/sanitizer report."""
        out = []
        for m in self.members:
            if m.proc is None:
                continue
            if m.proc.returncode not in allowed_exits:
                out.append(f"{m.id} exited with {m.proc.returncode}\n{m.log_tail()}")
            try:
                log = m.log_path.read_bytes()
            except FileNotFoundError:
                log = b""
            found = CRASH_PATTERNS.search(log)
            if found:
                out.append(f"{m.id} logged a crash report: "
                           f"{log[max(0, found.start() - 200):found.start() + 2000]!r}")
        return out


def _iptables(*args, check: bool = True) -> None:
    r = subprocess.run(["iptables", "-w", "5", *args], capture_output=True, timeout=10)
    if check and r.returncode != 0:
        raise RuntimeError(f"iptables {' '.join(args)} failed: {r.stderr.decode()}")


def iptables_available() -> bool:
    try:
        return subprocess.run(["iptables", "-w", "5", "-L", "INPUT", "-n"], capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
