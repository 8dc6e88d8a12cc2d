"""keep-bench's open loop (`--rate`) against a real keep-server, over RESP and over the binary
protocol (through libkeep): the requests follow the schedule (the server sees them arrive at the
rate, not in a burst), the JSON reports the run with its latency percentiles, and latency counts
from each request's intended send time, so a stalled server shows its whole queueing delay
(coordinated omission corrected) rather than one slow request per connection.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
import urllib.request

import pytest
from helpers.clients import make_client
from helpers.server import ServerProcess, free_port, keep_bin

pytestmark = [pytest.mark.keep_only, pytest.mark.timeout(60)]

PERCENTILES = ("p50_us", "p90_us", "p99_us", "p999_us", "max_us")


def bench_path():
    path = keep_bin().parent / "keep-bench"
    assert path.exists(), f"{path} is not built (cmake --build build --target keep-bench)"
    return path


def run_bench(server, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([str(bench_path()), "--host", server.host, "--port", str(server.port),
                           "--json", "--quiet", *args], capture_output=True, timeout=timeout)


def start_bench(server, *args: str) -> subprocess.Popen:
    return subprocess.Popen([str(bench_path()), "--host", server.host, "--port", str(server.port),
                             "--json", "--quiet", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def finish(proc: subprocess.Popen, timeout: float = 30) -> dict:
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()
    return json.loads(out)


def check_report(d: dict, protocol: str, rate: float, requests: int) -> None:
    assert (d["protocol"], d["mode"], d["rate"]) == (protocol, "open", rate)
    assert d["errors"] == 0 and d["unfinished"] == 0, d
    assert d["requests"] == requests, d
    assert all(d[p] > 0 for p in PERCENTILES), d
    assert [d[p] for p in PERCENTILES] == sorted(d[p] for p in PERCENTILES), d
    assert 0 < d["mean_us"] <= d["max_us"]


@pytest.mark.parametrize("protocol", ["binary", "resp"])
def test_open_loop_sends_at_the_rate(server_factory, protocol):
    """2000 requests/s for 3 s over 8 connections: the server's command count, sampled while the
    run goes on, grows at 2000/s, and the report has every request and its percentiles."""
    server = server_factory(f"keep-bench-{protocol}")
    client = make_client(server)
    rate, seconds = 2000, 3
    samples: list[tuple[float, int]] = []
    proc = start_bench(server, "--protocol", protocol, "--workload", "set", "--rate", str(rate),
                       "--duration", str(seconds), "--connections", "8")
    try:
        while proc.poll() is None:
            samples.append((time.monotonic(),
                            client.info("stats")["total_commands_processed"]))
            time.sleep(0.1)
    finally:
        d = finish(proc)
        client.close()
    check_report(d, protocol, rate, rate * seconds)
    assert abs(d["throughput"] - rate) <= 0.02 * rate
    # The middle of the run, away from connecting and draining: the arrival rate the server saw.
    t0 = samples[0][0]
    middle = [(t, n) for t, n in samples if 0.75 <= t - t0 <= seconds - 0.5]
    assert len(middle) >= 5, samples
    (ta, na), (tb, nb) = middle[0], middle[-1]
    seen = (nb - na) / (tb - ta)
    # Sampling jitter on a shared 2-core machine: a burst or a stall would be far outside this.
    assert 0.8 * rate <= seen <= 1.2 * rate, (seen, samples)


@pytest.mark.parametrize("protocol", ["binary", "resp"])
def test_open_loop_latency_counts_from_the_intended_send_time(server_factory, protocol):
    """The server is stopped (SIGSTOP) for 0.5 s in the middle of a 2 s run at 2000/s. Every
    request due during the stop waits on the client and its latency counts from when it was due:
    about a fifth of all requests are over 100 ms, so p90 is. (Measured from the actual send, only
    the few requests in flight at the stop would be slow.)"""
    server = server_factory(f"keep-bench-stall-{protocol}")
    rate = 2000
    proc = start_bench(server, "--protocol", protocol, "--workload", "set", "--rate", str(rate),
                       "--duration", "2", "--connections", "4")
    stopper = threading.Timer(0.9, lambda: server.proc.send_signal(signal.SIGSTOP))
    resumer = threading.Timer(1.4, lambda: server.proc.send_signal(signal.SIGCONT))
    stopper.start()
    resumer.start()
    try:
        d = finish(proc)
    finally:
        stopper.cancel()
        resumer.cancel()
        server.proc.send_signal(signal.SIGCONT)
    check_report(d, protocol, rate, 2 * rate)
    assert d["p90_us"] >= 100_000, d
    assert d["max_us"] >= 400_000, d


def test_binary_open_loop_bad_input(keep_server):
    """Flags the open loop cannot run are refused with exit 1 and a message naming them."""
    for args, text in ((["--rate", "0"], "--rate"), (["--rate", "-5"], "--rate"),
                       (["--rate", "fast"], "--rate"),
                       (["--rate", "100", "--ratelimit-form", "lua", "--workload", "ratelimit"],
                        "Lua")):
        r = run_bench(keep_server, "--protocol", "binary", "--duration", "1", *args)
        assert r.returncode == 1, (args, r.stderr)
        assert text in r.stderr.decode(), (args, r.stderr)
        assert r.stdout == b""


def test_metrics_off_server_answers_without_counting(server_log_dir):
    """bench/metrics_cost.sh's 'off' side, keep-server-nometrics, is keep-server with only the
    request-path counting compiled out: it answers the same, and its /metrics counts no command
    where keep-server's counts every one."""
    off = keep_bin().parent / "keep-server-nometrics"
    assert off.exists(), f"{off} is not built (make build)"
    counted = {}
    for binary in (keep_bin(), off):
        admin_port = free_port()
        server = ServerProcess(binary, server_log_dir, f"metrics-{binary.name}", shards=1,
                               options={"admin-port": admin_port})
        server.start()
        try:
            client = make_client(server)
            assert client.set("k", "v")
            for _ in range(20):
                assert client.get("k") == b"v"
            client.close()
            with urllib.request.urlopen(f"http://{server.host}:{admin_port}/metrics",
                                        timeout=5) as response:
                text = response.read().decode()
            counted[binary.name] = sum(
                float(value) for value in re.findall(
                    r'^keep_commands_total\{[^}]*command="get"[^}]*\} (\S+)$', text, re.M))
            server.stop()
            server.check_clean_exit()
        finally:
            server._kill_quietly()
    assert counted[keep_bin().name] == 20
    assert counted["keep-server-nometrics"] == 0
