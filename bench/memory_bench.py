#!/usr/bin/env python3
"""Memory acceptance figures for keep-server against redis-server (bench/memory.sh runs this).

  a) DEBUG POPULATE 10,000,000 key 8 on each: RSS growth per key and used bytes per key.
  b) 10M keys loaded by pipelined SETs while a second client runs GETs: GET p99.9 and max.
  c) 2M keys with 1-3 s TTLs: time after the last deadline until memory is back within 5% of
     the pre-load level, with the GET p99 with and without expiry running.
  d) --maxmemory 64mb, policy lru: peak RSS under a write load of 4x the cap; hit ratio of a
     read-through Zipf trace on Keep against an exact-LRU simulation holding as many keys.

Only loopback; every process started here is stopped here. Figures are printed as
`FIGURE <name> <value>` lines after the human-readable ones.
"""

from __future__ import annotations

import bisect
import collections
import multiprocessing as mp
import os
import random
import signal
import socket
import subprocess
import sys
import time

HOST = "127.0.0.1"
MB = 1024 * 1024
FIGURES: list[tuple[str, str]] = []
# An empty store uses about 2 KB: 5% of that is less than one connection's buffers, so the
# used_memory criterion of the expiry figure is "within 5% or 64 KiB".
USED_SLACK = 64 * 1024


def figure(name: str, value) -> None:
    FIGURES.append((name, str(value)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Conn:
    """A minimal RESP2 client: call() for one command, pipeline() for many."""

    def __init__(self, port: int, timeout: float = 300.0):
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0

    @staticmethod
    def encode(*args) -> bytes:
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def _line(self) -> bytes:
        while True:
            end = self.buf.find(b"\r\n", self.pos)
            if end >= 0:
                line = bytes(self.buf[self.pos:end])
                self.pos = end + 2
                return line
            self._fill()

    def _fill(self) -> None:
        if self.pos > 1 << 20:
            del self.buf[:self.pos]
            self.pos = 0
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            return RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) - self.pos < n + 2:
                self._fill()
            data = bytes(self.buf[self.pos:self.pos + n])
            self.pos += n + 2
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ValueError(f"unexpected reply {line!r}")

    def call(self, *args):
        self.sock.sendall(self.encode(*args))
        return self.read()

    def pipeline(self, payload: bytes, count: int) -> list:
        self.sock.sendall(payload)
        return [self.read() for _ in range(count)]

    def pipeline_errors(self, payload: bytes, count: int) -> int:
        """pipeline() for commands whose replies are one line each (SET: +OK or -ERR): counts the
        error replies without parsing each reply in Python, which was most of a loader's time."""
        self.sock.sendall(payload)
        errors = 0
        while count > 0:
            lines = self.buf.count(b"\r\n", self.pos)
            if lines == 0:
                self._fill()
                continue
            end = self.pos
            if lines <= count:
                end = self.buf.rfind(b"\r\n") + 2
            else:
                for _ in range(count):
                    end = self.buf.find(b"\r\n", end) + 2
                lines = count
            errors += self.buf.count(b"\n-", self.pos, end) + self.buf.startswith(b"-", self.pos)
            self.pos = end
            count -= lines
        return errors

    def info(self, section: str) -> dict:
        text = self.call("INFO", section).decode()
        out = {}
        for line in text.split("\r\n"):
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                out[k] = int(v) if v.lstrip("-").isdigit() else v
        return out


class Server:
    def __init__(self, kind: str, binary: str, extra: list[str] | None = None):
        self.kind = kind
        self.port = free_port()
        if kind == "keep":
            argv = [binary, "--port", str(self.port), "--bind", HOST] + (extra or [])
        else:
            argv = [binary, "--port", str(self.port), "--bind", HOST, "--save", "",
                    "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no"] + \
                   (extra or [])
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.conn = Conn(self.port)
                if self.conn.call("PING") == b"PONG":
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError(f"{kind} did not start: {argv}")
            time.sleep(0.05)
        time.sleep(0.3)  # first turns: spare chunks faulted in

    def rss(self) -> int:
        with open(f"/proc/{self.proc.pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class niced:
    """Runs a block at a lower CPU priority (this thread only; Linux nice is per thread)."""

    def __init__(self, niceness: int):
        self.niceness = niceness

    def __enter__(self):
        self.before = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, self.before + self.niceness)

    def __exit__(self, *exc):
        try:
            os.setpriority(os.PRIO_PROCESS, 0, self.before)  # allowed for root only
        except PermissionError:
            pass


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


def get_prober(port: int, stop, out, interval: float, keys: int, prefix: str) -> None:
    """A second client: one GET at a time every `interval` s; latencies (s) go to `out`."""
    conn = Conn(port)
    lat = []
    rng = random.Random(7)
    next_at = time.perf_counter()
    while not stop.is_set():
        key = f"{prefix}{rng.randrange(keys)}"
        t0 = time.perf_counter()
        conn.call("GET", key)
        lat.append(time.perf_counter() - t0)
        next_at += interval
        delay = next_at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        else:
            next_at = time.perf_counter()
    out.put(lat)


class Prober:
    def __init__(self, port: int, keys: int, prefix: str = "key:", interval: float = 0.0005):
        self.stop_event = mp.Event()
        self.queue = mp.Queue()
        self.proc = mp.Process(target=get_prober,
                               args=(port, self.stop_event, self.queue, interval, keys, prefix))
        self.proc.start()

    def finish(self) -> list[float]:
        self.stop_event.set()
        lat = self.queue.get(timeout=60)
        self.proc.join(10)
        return lat


def set_batches(conn: Conn, prefix: str, start: int, stop: int, value: bytes,
                batch: int = 2000, ttl_ms=None, width: int = 0) -> int:
    """Pipelined SETs of prefix+i; returns the number of error replies."""
    errors = 0
    vlen = b"$%d\r\n%s\r\n" % (len(value), value)
    head = prefix.encode()
    for b in range(start, stop, batch):
        end = min(stop, b + batch)
        keys = [b"%s%0*d" % (head, width, i) for i in range(b, end)]
        if ttl_ms is None:
            parts = [b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n%s" % (len(key), key, vlen)
                     for key in keys]
        else:
            parts = []
            for key in keys:
                ttl = b"%d" % ttl_ms()
                parts.append(b"*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n%s$2\r\nPX\r\n$%d\r\n%s\r\n"
                             % (len(key), key, vlen, len(ttl), ttl))
        errors += conn.pipeline_errors(b"".join(parts), end - b)
    return errors


# --- a) DEBUG POPULATE ------------------------------------------------------------------------

def populate_figures(keep_bin: str, redis_bin: str, count: int) -> None:
    print(f"== a) DEBUG POPULATE {count} key 8: memory per key")
    digits = sum(len(str(i)) for i in range(0, count, max(1, count // 100000)))
    logical = 4 + digits / len(range(0, count, max(1, count // 100000))) + 8
    for kind, binary, extra in (("keep", keep_bin, ["--shards", "2", "--enable-debug-command"]),
                                ("redis", redis_bin, ["--enable-debug-command", "yes"])):
        server = Server(kind, binary, extra)
        try:
            before_rss = server.rss()
            before_used = server.conn.info("memory")["used_memory"]
            t0 = time.monotonic()
            reply = server.conn.call("DEBUG", "POPULATE", count, "key", 8)
            seconds = time.monotonic() - t0
            if isinstance(reply, Exception):
                raise reply
            time.sleep(0.5)
            keys = server.conn.call("DBSIZE")
            rss = (server.rss() - before_rss) / keys
            used = (server.conn.info("memory")["used_memory"] - before_used) / keys
            print(f"  {kind:5}: {keys} keys in {seconds:.1f} s; RSS growth {rss:.1f} B/key, "
                  f"used_memory growth {used:.1f} B/key, logical (key+value) {logical:.1f} B/key")
            figure(f"populate_{kind}_rss_bytes_per_key", f"{rss:.1f}")
            figure(f"populate_{kind}_used_bytes_per_key", f"{used:.1f}")
        finally:
            server.stop()
    figure("populate_logical_bytes_per_key", f"{logical:.1f}")


# --- b) GET latency while 10M keys load ---------------------------------------------------------

def shard_cpu_wait_ms(pid: int) -> float:
    """Time the process's shard threads spent runnable but waiting for a CPU (schedstat)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as f:
                if not f.read().startswith("keep-shard"):
                    continue
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e6


class WakeLatency:
    """keep-wake-latency beside a probe: how late this machine wakes a sleeping thread meanwhile."""

    def __init__(self, keep_bin: str):
        tool = os.path.join(os.path.dirname(keep_bin), "keep-wake-latency")
        self.proc = None
        if os.access(tool, os.X_OK):
            self.proc = subprocess.Popen([tool, "--seconds", "0"], stdout=subprocess.PIPE,
                                         text=True)

    def finish(self) -> dict:
        if self.proc is None:
            return {}
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=30)
        fields = dict(f.split("=", 1) for f in out.split()[1:] if "=" in f)
        return {k: float(v) for k, v in fields.items()}


def load_latency_figures(keep_bin: str, count: int, control_count: int, niceness: int) -> None:
    print(f"== b) GET latency while {count} keys load (pipelined SETs, 2000 per batch)")
    shards = os.environ.get("LOAD_SHARDS", "2")
    # Twice: the probe on the server being loaded, then (the control) on an idle second server
    # while the first is loaded the same way. The control's tail is what this machine's scheduler
    # adds to any probe while two shards and a loader keep its cores busy; the server's longest
    # turn (INFO stats eventloop_duration_max) is the server's own worst stall. The control loads
    # half as many keys: the same load for half as long (some 14k probes still), which saved
    # `make bench` 8-12 s of its 10 minutes.
    for label in ("loaded", "control"):
        keys = count if label == "loaded" else control_count
        server = Server("keep", keep_bin, ["--shards", shards])
        idle = Server("keep", keep_bin, ["--shards", shards]) if label == "control" else None
        try:
            prober = Prober((idle or server).port, keys)
            machine = WakeLatency(keep_bin)
            server.conn.call("CONFIG", "RESETSTAT")
            # A shard that waits for a CPU stalls its requests as surely as a long turn does,
            # but it is the machine's doing: counted apart.
            probed_pid = (idle or server).proc.pid
            wait_before = shard_cpu_wait_ms(probed_pid)
            t0 = time.monotonic()
            with niced(niceness):
                set_batches(Conn(server.port), "key:", 0, keys, b"v" * 8)
            seconds = time.monotonic() - t0
            lat = prober.finish()
            wake = machine.finish()
            waited = shard_cpu_wait_ms(probed_pid) - wait_before
            stats = server.conn.info("stats")
            longest_turn = stats["eventloop_duration_max"] / 1e3
            mean_turn = stats["eventloop_duration_sum"] / max(1, stats["eventloop_cycles"]) / 1e3
            p999, worst = percentile(lat, 0.999) * 1e3, max(lat) * 1e3
            target = "the loaded server" if idle is None else "an idle server (control)"
            print(f"  loaded {keys} keys in {seconds:.1f} s; {len(lat)} GETs to {target}: "
                  f"p99 {percentile(lat, 0.99) * 1e3:.3f} ms, p99.9 {p999:.3f} ms, max "
                  f"{worst:.3f} ms; loaded server's turns: longest {longest_turn:.3f} ms, mean "
                  f"{mean_turn:.3f} ms; the probed server's shards waited {waited:.0f} ms in all "
                  f"for a CPU")
            prefix = "load" if idle is None else "load_control"
            if wake:
                print(f"  meanwhile a thread sleeping to deadlines 0.5 ms apart woke late by p99 "
                      f"{wake['p99_us'] / 1e3:.3f} ms, p99.9 {wake['p999_us'] / 1e3:.3f} ms, max "
                      f"{wake['max_us'] / 1e3:.3f} ms (keep-wake-latency: the machine's own "
                      f"delay before any woken thread runs)")
                figure(f"{prefix}_wake_latency_p999_ms", f"{wake['p999_us'] / 1e3:.3f}")
                figure(f"{prefix}_wake_latency_max_ms", f"{wake['max_us'] / 1e3:.3f}")
            figure(f"{prefix}_shard_cpu_wait_ms", f"{waited:.0f}")
            figure(f"{prefix}_get_p999_ms", f"{p999:.3f}")
            figure(f"{prefix}_get_max_ms", f"{worst:.3f}")
            figure(f"{prefix}_longest_turn_ms", f"{longest_turn:.3f}")
        finally:
            server.stop()
            if idle is not None:
                idle.stop()


# --- c) expiry reclaim --------------------------------------------------------------------------

def expiry_figures(keep_bin: str, count: int, niceness: int) -> None:
    print(f"== c) {count} keys with 1-3 s TTLs: memory reclaim after the last deadline")
    server = Server("keep", keep_bin, ["--shards", "2"])
    try:
        conn = server.conn
        time.sleep(1.0)
        base_used = conn.info("memory")["used_memory"]
        base_rss = server.rss()
        # The GETs ask for the keys that will expire (misses before the load and after expiry).
        # The level without expiry is measured on both sides of the experiment (2 s before the
        # load, 2 s after memory is back), since this machine's own latency drifts by 2x over
        # tens of seconds: one window before alone made the ratio the drift's as much as Keep's.
        prober = Prober(server.port, count, "exp:")
        time.sleep(2.0)
        quiet_before = prober.finish()
        rng = random.Random(1)
        prober = Prober(server.port, count, "exp:")
        time.sleep(0.3)
        base_used = conn.info("memory")["used_memory"]  # with the probe's connection open
        t0 = time.monotonic()
        loader = Conn(server.port)
        with niced(niceness):
            set_batches(loader, "exp:", 0, count, b"e" * 16,
                        ttl_ms=lambda: rng.randint(1000, 3000))
        loader.sock.close()  # the loading client goes away; its buffers are not dataset
        load_s = time.monotonic() - t0
        # Keys already expire while they load, but a loading phase's GETs also queue behind the
        # loader's batches: the expiry figure is what follows, until memory is back.
        loading = prober.finish()
        prober = Prober(server.port, count, "exp:")
        last_deadline = time.monotonic() + 3.0  # the last batch's longest TTL
        peak_used = conn.info("memory")["used_memory"]
        recovered = rss_recovered = None
        while time.monotonic() < last_deadline + 30:
            now = time.monotonic()
            if recovered is None and now >= last_deadline and \
                    conn.info("memory")["used_memory"] <= max(base_used * 1.05,
                                                              base_used + USED_SLACK):
                recovered = now - last_deadline
            if rss_recovered is None and now >= last_deadline and server.rss() <= base_rss * 1.05:
                rss_recovered = now - last_deadline
            if recovered is not None and (rss_recovered is not None or
                                          now > last_deadline + max(10, 2 * recovered)):
                break
            time.sleep(0.05)
        busy = prober.finish()
        prober = Prober(server.port, count, "exp:")
        time.sleep(2.0)
        quiet_after = prober.finish()
        quiet = quiet_before + quiet_after
        left = conn.call("DBSIZE")
        print(f"  loaded in {load_s:.1f} s; used_memory {base_used} -> peak {peak_used} -> "
              f"{conn.info('memory')['used_memory']}, RSS {base_rss} -> {server.rss()}, "
              f"{left} keys left")
        for what, seconds, name in (("used_memory", recovered, "expiry_reclaim_seconds"),
                                    ("RSS", rss_recovered, "expiry_rss_reclaim_seconds")):
            if seconds is None:
                print(f"  {what} NOT back within 5% of its pre-load level after the last deadline")
                figure(name, "inf")
            else:
                print(f"  {what} back within 5% (used_memory: or 64 KiB) of its pre-load level {max(0.0, seconds):.2f} s "
                      f"after the last deadline")
                figure(name, f"{max(0.0, seconds):.2f}")
        print(f"  GET p99 without expiry {percentile(quiet, 0.99) * 1e3:.3f} ms (before the load "
              f"{percentile(quiet_before, 0.99) * 1e3:.3f}, after "
              f"{percentile(quiet_after, 0.99) * 1e3:.3f}); while the keys "
              f"expire, from the end of the load until memory is back, "
              f"{percentile(busy, 0.99) * 1e3:.3f} ms (max {max(busy) * 1e3:.3f} ms, "
              f"{percentile(busy, 0.99) / percentile(quiet, 0.99):.2f}x); while they load "
              f"{percentile(loading, 0.99) * 1e3:.3f} ms (max {max(loading) * 1e3:.3f} ms)")
        figure("expiry_get_p99_quiet_ms", f"{percentile(quiet, 0.99) * 1e3:.3f}")
        figure("expiry_get_p99_busy_ms", f"{percentile(busy, 0.99) * 1e3:.3f}")
        figure("expiry_get_p99_loading_ms", f"{percentile(loading, 0.99) * 1e3:.3f}")
    finally:
        server.stop()


# --- d) eviction --------------------------------------------------------------------------------

def zipf_trace(universe: int, length: int, exponent: float, seed: int) -> list[int]:
    cumulative = []
    total = 0.0
    for rank in range(1, universe + 1):
        total += rank ** -exponent
        cumulative.append(total)
    rng = random.Random(seed)
    perm = list(range(universe))
    rng.shuffle(perm)  # hot keys spread over the keyspace, not numbered first
    return [perm[bisect.bisect_left(cumulative, rng.random() * total)] for _ in range(length)]


def eviction_figures(keep_bin: str, cap_mb: int, trace_length: int) -> None:
    print(f"== d) --maxmemory {cap_mb}mb, lru: 4x the cap of writes, then a Zipf trace")
    cap = cap_mb * MB
    value = b"v" * 100
    writes = 4 * cap // 128
    # Keys w:0.. grow a digit at w:1000000, which moves later records to the next size class
    # (see the README for what that costs); keys w:0000000.. all have one record size. The
    # second server stays up for the trace.
    server = None
    try:
        for label, width, name in (("keys growing a digit", 0,
                                    "evict_peak_rss_growth_over_cap_drifting"),
                                   ("fixed-width keys", 7, "evict_peak_rss_growth_over_cap")):
            if server is not None:
                server.stop()
            server = Server("keep", keep_bin, ["--shards", "2", "--maxmemory", f"{cap_mb}mb"])
            conn = server.conn
            base_rss = server.rss()
            peak = base_rss
            for start in range(0, writes, 50000):
                set_batches(conn, "w:", start, min(writes, start + 50000), value, width=width)
                peak = max(peak, server.rss())
            stats = conn.info("stats")
            memory = conn.info("memory")
            print(f"  {writes} writes of 100-byte values, {label}: peak RSS {peak / MB:.1f} MiB "
                  f"(baseline {base_rss / MB:.1f}, growth {(peak - base_rss) / MB:.1f}) vs cap "
                  f"{cap_mb} MiB; used_memory {memory['used_memory'] / MB:.1f} MiB (reserved "
                  f"{memory['used_memory_reserved'] / MB:.1f}); evicted {stats['evicted_keys']}")
            figure(name, f"{(peak - base_rss) / cap:.3f}")

        universe = 2 * conn.call("DBSIZE") * 2  # about 4x what fits
        trace = zipf_trace(universe, trace_length, 0.99, 11)
        half = len(trace) // 2
        hits = misses = 0
        batch = 200
        for b in range(0, len(trace), batch):
            keys = trace[b:b + batch]
            payload = b"".join(Conn.encode("GET", b"z:%07d" % k) for k in keys)
            replies = conn.pipeline(payload, len(keys))
            fill = [k for k, r in zip(keys, replies) if r is None]
            if b >= half:
                hits += len(keys) - len(fill)
                misses += len(fill)
            if fill:
                payload = b"".join(Conn.encode("SET", b"z:%07d" % k, value) for k in fill)
                conn.pipeline(payload, len(fill))
        fits = conn.call("DBSIZE")
        keep_ratio = hits / (hits + misses)
        # Exact LRU over the same trace, holding as many keys as Keep holds at the end.
        lru = collections.OrderedDict()
        sim_hits = sim_total = 0
        for i, k in enumerate(trace):
            hit = k in lru
            if hit:
                lru.move_to_end(k)
            else:
                lru[k] = True
                if len(lru) > fits:
                    lru.popitem(last=False)
            if i >= half:
                sim_hits += hit
                sim_total += 1
        lru_ratio = sim_hits / sim_total
        print(f"  Zipf(0.99) trace of {len(trace)} reads over {universe} keys, read-through "
              f"(second half measured): Keep hit ratio {keep_ratio:.3f}, exact LRU with "
              f"{fits} keys {lru_ratio:.3f} ({(lru_ratio - keep_ratio) * 100:+.1f} points)")
        figure("evict_keep_hit_ratio", f"{keep_ratio:.3f}")
        figure("evict_exact_lru_hit_ratio", f"{lru_ratio:.3f}")
    finally:
        if server is not None:
            server.stop()


def main() -> int:
    keep_bin, redis_bin = sys.argv[1], sys.argv[2]
    # The loaders here are CPU-hungry Python on a machine the servers share: let the servers and
    # the latency probes (started as their own processes before any load) go first.
    niceness = int(os.environ.get("LOADER_NICE", "10"))
    parts = os.environ.get("PARTS", "a b c d").split()
    populate = int(os.environ.get("POPULATE_KEYS", "10000000"))
    load = int(os.environ.get("LOAD_KEYS", "10000000"))
    control_load = int(os.environ.get("CONTROL_KEYS", str(load // 2)))
    expiring = int(os.environ.get("EXPIRY_KEYS", "2000000"))
    cap_mb = int(os.environ.get("CAP_MB", "64"))
    trace = int(os.environ.get("TRACE_LENGTH", "1000000"))
    t0 = time.monotonic()
    if "a" in parts:
        populate_figures(keep_bin, redis_bin, populate)
    if "b" in parts:
        load_latency_figures(keep_bin, load, control_load, niceness)
    if "c" in parts:
        expiry_figures(keep_bin, expiring, niceness)
    if "d" in parts:
        eviction_figures(keep_bin, cap_mb, trace)
    print(f"== done in {time.monotonic() - t0:.0f} s")
    for name, value in FIGURES:
        print(f"FIGURE {name} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
