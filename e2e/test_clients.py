"""Real clients against the server: redis-cli, redis-benchmark, redis-py (incl. RESP3 by raw
socket, since redis-py 4.3 has no protocol=3)."""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
import threading

import pytest

from helpers.clients import make_client
from helpers.resp import Reply, encode_commands

REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
REDIS_BENCHMARK = shutil.which("redis-benchmark") or "/usr/bin/redis-benchmark"


def cli(server, *args, stdin: bytes | None = None,
        timeout: float = 30) -> subprocess.CompletedProcess:
    cmd = [REDIS_CLI, "-h", server.host, "-p", str(server.port), *args]
    try:
        return subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"")[-500:]
        raise AssertionError(f"{' '.join(map(str, cmd))} did not finish in {timeout}s; "
                             f"last output: {out!r}") from None


def ok_out(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 0, f"{p.args} exited {p.returncode}: {p.stderr!r} {p.stdout!r}"
    assert p.stderr.strip() == b"", f"{p.args} wrote to stderr: {p.stderr!r}"
    return p.stdout.decode(errors="replace")


# --------------------------------------------------------------------------------------------
# redis-cli one-shot commands.

CLI_CASES = {
    "ping": ([["PING"]], "PONG\n"),
    "ping-arg": ([["PING", "hello world"]], "hello world\n"),
    "set-get": ([["SET", "foo", "bar"], ["GET", "foo"]], "OK\nbar\n"),
    "get-missing": ([["GET", "nope"]], "\n"),
    "incr": ([["INCR", "n"], ["INCRBY", "n", "41"], ["INCRBYFLOAT", "n", "0.5"]],
             "1\n42\n42.5\n"),
    "mset-mget": ([["MSET", "a", "1", "b", "2"], ["MGET", "a", "b", "zz"]], "OK\n1\n2\n\n"),
    "dbsize": ([["MSET", "a", "1", "b", "2", "c", "3"], ["DBSIZE"]], "OK\n3\n"),
    "expire-ttl": ([["SET", "t", "v", "EX", "100"], ["TTL", "t"], ["PERSIST", "t"],
                    ["TTL", "t"]], "OK\n100\n1\n-1\n"),
    "del-exists": ([["SET", "x", "1"], ["EXISTS", "x", "y"], ["DEL", "x"], ["TYPE", "x"]],
                   "OK\n1\n1\nnone\n"),
    "error-reply": ([["FOO"]], "ERR unknown command 'FOO', with args beginning with: \n\n"),
    "wrongtype": ([["SET", "s", "abc"], ["INCR", "s"]],
                  "OK\nERR value is not an integer or out of range\n\n"),
}


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_redis_cli_one_shot(case, keep, keep_server):
    commands, expected = CLI_CASES[case]
    out = "".join(ok_out(cli(keep_server, *c)) for c in commands)
    assert out == expected


def test_redis_cli_info(keep, keep_server):
    out = ok_out(cli(keep_server, "INFO"))
    lines = [ln.rstrip("\r") for ln in out.splitlines()]
    assert any(ln.startswith("# ") for ln in lines), f"no '# Section' header in INFO:\n{out[:500]}"
    bad = [ln for ln in lines if ln and not ln.startswith("#") and ":" not in ln]
    assert not bad, f"INFO lines that are neither '# Section' nor 'key:value': {bad[:5]}"
    for section in ("server", "clients", "memory", "keyspace"):
        assert ok_out(cli(keep_server, "INFO", section)).strip(), f"INFO {section} is empty"


def test_info_reports_redis_version(keep_server):
    """Client libraries gate features on INFO's redis_version: it must claim Redis 7."""
    out = ok_out(cli(keep_server, "INFO", "server"))
    m = re.search(r"^redis_version:(\d+)\.(\d+)", out, re.M)
    assert m, f"no redis_version in INFO server:\n{out[:800]}"
    assert int(m.group(1)) >= 7, m.group(0)


def test_redis_cli_client_list(keep_server):
    out = ok_out(cli(keep_server, "CLIENT", "LIST"))
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert lines, "CLIENT LIST is empty (it must at least list the caller)"
    for ln in lines:
        assert re.search(r"\bid=\d+", ln) and re.search(r"\baddr=[\d.]+:\d+", ln), ln


def test_redis_cli_command_count_and_docs(keep_server):
    n = int(ok_out(cli(keep_server, "COMMAND", "COUNT")).strip())
    assert n >= 40, f"COMMAND COUNT = {n}: fewer than the commands Keep implements"
    ok_out(cli(keep_server, "COMMAND", "DOCS", "GET"))
    info = ok_out(cli(keep_server, "COMMAND", "INFO", "GET"))
    assert "get" in info.lower()


def test_redis_cli_resp3(keep, keep_server):
    out = ok_out(cli(keep_server, "-3", "SET", "r3", "v"))
    out += ok_out(cli(keep_server, "-3", "GET", "r3"))
    out += ok_out(cli(keep_server, "-3", "GET", "missing"))
    assert out == "OK\nv\n\n"


def test_redis_cli_stdin_binary_value(keep, keep_server):
    value = bytes(range(256)) * 40
    ok_out(cli(keep_server, "-x", "SET", "bin", stdin=value))
    assert keep.get("bin") == value
    assert ok_out(cli(keep_server, "STRLEN", "bin")) == f"{len(value)}\n"


def test_redis_cli_repeat(keep, keep_server):
    assert ok_out(cli(keep_server, "-r", "5", "INCR", "rep")) == "1\n2\n3\n4\n5\n"


def test_redis_cli_scan(keep, keep_server):
    keys = {f"scan:{i}".encode() for i in range(1500)} | {f"other:{i}".encode() for i in range(50)}
    keep.mset({k: b"v" for k in keys})
    out = ok_out(cli(keep_server, "--scan", "--pattern", "scan:*", timeout=10)).splitlines()
    assert len(out) == len(set(out)), "redis-cli --scan printed duplicates"
    assert {x.encode() for x in out} == {k for k in keys if k.startswith(b"scan:")}


def test_redis_cli_pipe_mass_insert(keep, keep_server):
    n = 20000
    data = encode_commands(("SET", f"mass:{i}", f"value:{i}") for i in range(n))
    out = ok_out(cli(keep_server, "--pipe", stdin=data, timeout=60))
    assert f"errors: 0, replies: {n}" in out, out
    assert keep.dbsize() == n
    assert keep.get("mass:12345") == b"value:12345"


# --------------------------------------------------------------------------------------------
# redis-benchmark.


@pytest.mark.timeout(120)
@pytest.mark.parametrize("pipeline", [1, 32])
def test_redis_benchmark(pipeline, keep, keep_server):
    cmd = [REDIS_BENCHMARK, "-h", keep_server.host, "-p", str(keep_server.port),
           "-t", "ping,set,get,incr,mset", "-n", "20000", "-r", "10000", "-q",
           "-P", str(pipeline)]
    p = subprocess.run(cmd, capture_output=True, timeout=100)
    stdout = p.stdout.decode(errors="replace")
    stderr = p.stderr.decode(errors="replace")
    assert p.returncode == 0, f"redis-benchmark exited {p.returncode}: {stderr} {stdout[-2000:]}"
    assert stderr.strip() == "", f"redis-benchmark wrote to stderr: {stderr[:2000]}"
    lines = [ln.strip() for ln in re.split(r"[\r\n]", stdout) if ln.strip()]
    assert not [ln for ln in lines if re.search(r"error|warning", ln, re.I)], lines
    results = {}
    for ln in lines:
        m = re.match(r"^(.+?): ([\d.]+) requests per second", ln)
        if m:
            results[m.group(1)] = float(m.group(2))
    want = ["PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "MSET (10 keys)"]
    missing = [t for t in want if t not in results]
    assert not missing, f"no result line for {missing}; output: {lines[-10:]}"
    zero = {t: v for t, v in results.items() if v <= 0}
    assert not zero, f"zero requests per second: {zero}"
    # The data is really there: INCR hit counter keys, SET/MSET wrote key:* values.
    assert keep.dbsize() > 0


# --------------------------------------------------------------------------------------------
# redis-py and RESP3.


def test_hello3_raw(raw, keep_server):
    c = raw(keep_server)
    r = c.call("HELLO", "3")
    assert r.kind == "map", r
    fields = {k.value: v for k, v in r.value}
    assert fields[b"proto"] == Reply("int", 3)
    assert fields[b"role"] == Reply("bulk", b"master")
    assert fields[b"server"].kind == fields[b"version"].kind == "bulk"
    assert fields[b"id"].kind == "int"
    assert fields[b"modules"] == Reply("array", [])
    c.call("SET", "h3", "v")
    assert c.call("GET", "h3-missing") == Reply("null", None)
    assert c.call("MGET", "h3", "h3-missing") == Reply("array", [Reply("bulk", b"v"),
                                                                 Reply("null", None)])
    assert c.call("HELLO", "2").kind == "array"
    assert c.call("GET", "h3-missing") == Reply("bulk", None)


def test_scan_iter_2000_keys_exactly_once(keep):
    keys = [f"it:{i}".encode() for i in range(2000)]
    pipe = keep.pipeline(transaction=False)
    for k in keys:
        pipe.set(k, b"1")
    pipe.execute()
    for count in (None, 7, 500):
        # Bounded: a cursor that never returns to 0 must fail the test, not hang it.
        got = list(itertools.islice(keep.scan_iter(count=count), 20 * len(keys)))
        assert len(got) == len(set(got)), f"scan_iter(count={count}) returned duplicates"
        assert set(got) == set(keys), (f"count={count}: missing {len(set(keys) - set(got))}, "
                                       f"extra {len(set(got) - set(keys))}")
    got = list(itertools.islice(keep.scan_iter(match="it:1*", count=50), 20 * len(keys)))
    assert sorted(got) == sorted(k for k in keys if k.startswith(b"it:1"))


def test_redispy_pipeline_and_types(keep):
    pipe = keep.pipeline(transaction=False)
    for i in range(1000):
        pipe.set(f"p:{i}", i)
        pipe.incr(f"c:{i % 10}")
    res = pipe.execute()
    assert res[0::2] == [True] * 1000
    assert res[1::2] == [i // 10 + 1 for i in range(1000)]
    assert keep.mget([f"p:{i}" for i in range(0, 1000, 100)]) == [str(i).encode() for i in
                                                                   range(0, 1000, 100)]
    assert keep.set("x", "1", ex=100, get=True) is None
    assert keep.ttl("x") == 100
    assert keep.getex("x", persist=True) == b"1" and keep.ttl("x") == -1
    assert keep.incrbyfloat("x", 0.5) == 1.5
    assert keep.type("x") == b"string"
    assert keep.exists("x", "nope", "x") == 2
    assert keep.copy("{t}a", "{t}b") is False


def test_redispy_many_threads_one_counter(keep_server, keep):
    """Concurrent connections (landing on different shards) all incrementing one key."""
    def work():
        c = make_client(keep_server)
        for _ in range(250):
            c.incr("shared:ctr")
        c.close()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert keep.get("shared:ctr") == b"2000"


def test_client_setname_visible_in_client_list(keep_server):
    c = make_client(keep_server, client_name="e2e-named")
    assert c.client_getname() == "e2e-named" or c.client_getname() == b"e2e-named"
    out = ok_out(cli(keep_server, "CLIENT", "LIST"))
    assert "name=e2e-named" in out, out
    c.close()


# --------------------------------------------------------------------------------------------
# Process contract (Keep only: redis-server has no ready file).


@pytest.mark.keep_only
def test_ready_file_written(keep_server):
    assert keep_server.ready_file.exists(), "keep-server did not write its --ready-file"


def test_sigterm_clean_exit_and_restart(server_factory):
    s = server_factory("sigterm")
    c = make_client(s)
    c.set("k", "v")
    c.close()
    assert s.stop() == 0, f"exit code {s.returncode} on SIGTERM\n{s.log_tail()}"
    s.check_clean_exit()
    s.start()
    c = make_client(s)
    assert c.ping() is True
    c.close()
