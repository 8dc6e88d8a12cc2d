"""Fixtures for the single-node end-to-end suites (e2e/test_*.py).

Servers
  keep_server   session-scoped keep-server (KEEP_SERVER_BIN, default build/bin/keep-server;
                if it names a redis-server binary, that is started with redis flags as a
                stand-in). 2 shards, --enable-debug-command.
  redis_server  session-scoped real redis-server (REDIS_SERVER_BIN, default
                /usr/bin/redis-server), --save "" --appendonly no: the reference for
                differential tests.
  server_factory  start extra servers with options (maxclients, timeout, ...) for one test.

Clients
  keep / redis_ref   function-scoped redis-py clients (decode_responses=False) after FLUSHALL.
  raw                factory of RawConnection (raw bytes, RESP2/3 parser, bounded reads).

Safety nets
  * every test has a wall-clock limit (ini `e2e_timeout`, marker `@pytest.mark.timeout(s)`),
    enforced with SIGALRM: no test hangs forever even if a socket call would;
  * after every test each running server must still be alive with no sanitizer/crash report
    in its log; at the end each must exit 0 on SIGTERM;
  * a failing test's report carries the tail of every running server's log.

These hooks only act on tests directly in e2e/ (subdirectories such as e2e/k8s have their own).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
from pathlib import Path

import pytest
from helpers.clients import make_client
from helpers.resp import RawConnection
from helpers.server import ServerProcess, is_redis_binary, keep_bin, redis_bin

E2E_DIR = Path(__file__).resolve().parent

# Servers started by this session, for health checks and failure reports.
_SERVERS: list[ServerProcess] = []


def _raise_nofile_limit(want: int = 16384) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


# Before any server starts, so the servers inherit it (the 1,000-connection test needs it).
_raise_nofile_limit()


def _ours(item_or_node) -> bool:
    return Path(str(item_or_node.path)).resolve().parent == E2E_DIR


# --------------------------------------------------------------------------------------------
# Per-test timeouts (pytest-timeout is not available).


def pytest_addoption(parser):
    parser.addini("e2e_timeout", "default per-test time limit in seconds (e2e/test_*.py)",
                  default="60")
    parser.addini("e2e_fixture_timeout", "time limit for setup/teardown of one test",
                  default="60")


def pytest_configure(config):
    config.addinivalue_line("markers", "timeout(seconds): per-test time limit (SIGALRM)")
    config.addinivalue_line("markers", "keep_only: Keep-specific behaviour, skipped when "
                                       "KEEP_SERVER_BIN is a redis-server stand-in")


class TestTimeout(BaseException):
    """Raised by SIGALRM when a test runs past its limit (BaseException: not swallowed by
    `except Exception` in retry loops)."""

    __test__ = False


@contextlib.contextmanager
def _alarm(seconds: float, what: str):
    def on_alarm(signum, frame):
        raise TestTimeout(f"{what} exceeded its {seconds:g}s limit")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _limit(item, phase: str) -> float:
    if phase != "call":
        return float(item.config.getini("e2e_fixture_timeout"))
    m = item.get_closest_marker("timeout")
    if m is not None and m.args:
        return float(m.args[0])
    return float(item.config.getini("e2e_timeout"))


def _wrap_phase(item, phase):
    if not _ours(item):
        return contextlib.nullcontext()
    return _alarm(_limit(item, phase), f"{phase} of {item.nodeid}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    with _wrap_phase(item, "setup"):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with _wrap_phase(item, "call"):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    with _wrap_phase(item, "teardown"):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed and _ours(item):
        for s in _SERVERS:
            if s.proc is not None and (s.alive() or call.when == "teardown"):
                rep.sections.append((f"{s.name} log tail ({s.log_path})", s.log_tail(4000)))


def pytest_collection_modifyitems(config, items):
    if not is_redis_binary(keep_bin()):
        return
    skip = pytest.mark.skip(reason="Keep-specific behaviour; KEEP_SERVER_BIN is a redis-server "
                                   "stand-in")
    for item in items:
        if _ours(item) and item.get_closest_marker("keep_only"):
            item.add_marker(skip)


# --------------------------------------------------------------------------------------------
# Servers.


@pytest.fixture(scope="session")
def server_log_dir(tmp_path_factory) -> Path:
    d = os.environ.get("E2E_LOG_DIR")
    if d:
        Path(d).mkdir(parents=True, exist_ok=True)
        return Path(d)
    return tmp_path_factory.mktemp("servers")


def _start(binary, log_dir, name, **kw) -> ServerProcess:
    s = ServerProcess(binary, log_dir, name, **kw)
    _SERVERS.append(s)
    try:
        s.start()
    except Exception as e:  # noqa: BLE001
        s._kill_quietly()
        pytest.fail(str(e), pytrace=False)
    return s


def _stop_and_check(s: ServerProcess) -> None:
    try:
        s.stop()
        s.check_clean_exit()
    finally:
        s._kill_quietly()
        if s in _SERVERS:
            _SERVERS.remove(s)


@pytest.fixture(scope="session")
def standin() -> bool:
    """True when the 'keep' server under test is really a redis-server stand-in."""
    return is_redis_binary(keep_bin())


@pytest.fixture(scope="session")
def keep_server(server_log_dir):
    s = _start(keep_bin(), server_log_dir, "keep-server",
               options={"enable_debug_command": True})
    yield s
    _stop_and_check(s)


@pytest.fixture(scope="session")
def redis_server(server_log_dir):
    s = _start(redis_bin(), server_log_dir, "redis-server-ref",
               options={"enable_debug_command": True})
    yield s
    _stop_and_check(s)


@pytest.fixture
def server_factory(server_log_dir, request):
    """start(name, **options) -> a running server of the kind under test, stopped (and checked
    for a clean exit) at the end of the test."""
    started: list[ServerProcess] = []

    def start(name: str = "keep-extra", **options) -> ServerProcess:
        uniq = f"{name}-{request.node.name}"[:80].replace("/", "_").replace("[", "_") \
            .replace("]", "_")
        s = _start(keep_bin(), server_log_dir, uniq, options=options)
        started.append(s)
        return s

    yield start
    errors = []
    for s in started:
        try:
            _stop_and_check(s)
        except AssertionError as e:
            errors.append(str(e))
    if errors:
        pytest.fail("\n\n".join(errors), pytrace=False)


@pytest.fixture(autouse=True)
def _servers_stay_healthy(request):
    """Fail a test during which a running server died or logged a sanitizer/crash report."""
    if not _ours(request.node):
        yield
        return
    yield
    problems = []
    for s in list(_SERVERS):
        if s.stopped_by_us:
            continue
        try:
            s.check_healthy()
        except AssertionError as e:
            problems.append(str(e))
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


# --------------------------------------------------------------------------------------------
# Clients.


@pytest.fixture
def keep(keep_server):
    c = make_client(keep_server)
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def redis_ref(redis_server):
    c = make_client(redis_server)
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def raw():
    """raw(server_or_port, timeout=10) -> RawConnection; all closed at the end of the test."""
    conns: list[RawConnection] = []

    def connect(server, timeout: float = 10.0, **kw) -> RawConnection:
        host, port = (server.host, server.port) if isinstance(server, ServerProcess) \
            else ("127.0.0.1", int(server))
        c = RawConnection(host, port, timeout=timeout, **kw)
        conns.append(c)
        return c

    yield connect
    for c in conns:
        c.close()
