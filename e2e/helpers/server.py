"""Start and stop keep-server / redis-server processes for the end-to-end suites.

`ServerProcess` picks a free port, starts the binary with its stderr/stdout in a log file, waits
(bounded) for its ready file or a PING, and on stop sends SIGTERM, then SIGKILL after a timeout.
It knows two flavours of command line:

  keep:  keep-server --bind 127.0.0.1 --port P --shards 2 --shard-port-base 0 --ready-file F ...
  redis: redis-server --bind 127.0.0.1 --port P --save "" --appendonly no ...

so the same tests run against keep-server or, as a stand-in, a second redis-server
(KEEP_SERVER_BIN=/usr/bin/redis-server).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

from .resp import RawConnection, Reply

REPO = Path(__file__).resolve().parents[2]
DEFAULT_KEEP_BIN = REPO / "build" / "bin" / "keep-server"
DEFAULT_REDIS_BIN = Path("/usr/bin/redis-server")

# Lines that mean the process hit a sanitizer or crashed, even if it kept running or exited 0.
CRASH_PATTERNS = re.compile(
    rb"(ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|"
    rb"ERROR: ThreadSanitizer|runtime error: |UndefinedBehaviorSanitizer|"
    rb"==\d+==ERROR|Segmentation fault|stack-buffer-overflow|heap-use-after-free|"
    rb"REDIS BUG REPORT|Assertion .* failed|terminate called)"
)


_LIVE: set["ServerProcess"] = set()


def _die_with_parent() -> None:
    """In the child before exec: get SIGKILL if the test runner dies (even by SIGKILL)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort
        pass


@atexit.register
def _kill_leftovers() -> None:
    for s in list(_LIVE):
        s._kill_quietly()


def keep_bin() -> Path:
    return Path(os.environ.get("KEEP_SERVER_BIN", str(DEFAULT_KEEP_BIN)))


def redis_bin() -> Path:
    return Path(os.environ.get("REDIS_SERVER_BIN", str(DEFAULT_REDIS_BIN)))


def is_redis_binary(path: Path) -> bool:
    return "redis-server" in Path(path).name


def free_port() -> int:
    """A port the kernel reports free right now (bind port 0). Races are handled by retrying."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_pair() -> int:
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


class ServerStartError(Exception):
    pass


class ServerProcess:
    """One server process. Options use keep's flag names (without dashes, '_' for '-')."""

    def __init__(self, binary: Path, log_dir: Path, name: str, *, shards: int = 2,
                 options: dict | None = None, host: str = "127.0.0.1"):
        self.binary = Path(binary)
        self.flavour = "redis" if is_redis_binary(self.binary) else "keep"
        self.log_dir = Path(log_dir)
        self.name = name
        self.shards = shards
        self.options = dict(options or {})
        self.host = host
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self.log_path = self.log_dir / f"{name}.log"
        self.ready_file = self.log_dir / f"{name}.ready"
        self.returncode: int | None = None
        self.stopped_by_us = False
        self.died_before_stop = False
        self._log_scan_offset = 0

    # -- command line ----------------------------------------------------------------------
    def argv(self, port: int) -> list[str]:
        if self.flavour == "keep":
            argv = [str(self.binary), "--bind", self.host, "--port", str(port),
                    "--shards", str(self.shards), "--shard-port-base", "0",
                    "--ready-file", str(self.ready_file)]
            for key, value in self.options.items():
                flag = "--" + key.replace("_", "-")
                if value is True:
                    argv.append(flag)
                elif value is False or value is None:
                    continue
                else:
                    argv += [flag, str(value)]
            return argv
        argv = [str(self.binary), "--bind", self.host, "--port", str(port),
                "--save", "", "--appendonly", "no", "--daemonize", "no",
                "--protected-mode", "no", "--logfile", "", "--dir", str(self.log_dir)]
        for key, value in self.options.items():
            flag = "--" + key.replace("_", "-")
            if value is True:
                argv += [flag, "yes"]
            elif value is False or value is None:
                continue
            else:
                argv += [flag, str(value)]
        return argv

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, ready_timeout: float = 10.0, attempts: int = 3) -> "ServerProcess":
        if not self.binary.exists():
            raise ServerStartError(
                f"server binary {self.binary} does not exist (build it, or set KEEP_SERVER_BIN="
                f"/usr/bin/redis-server to run the suites against a redis-server stand-in)")
        last_error = ""
        for _ in range(attempts):
            port = free_port()
            try:
                self.ready_file.unlink()
            except FileNotFoundError:
                pass
            log = open(self.log_path, "ab")
            log.write(f"==== starting {' '.join(self.argv(port))}\n".encode())
            log.flush()
            self._log_scan_offset = log.tell()
            self.proc = subprocess.Popen(self.argv(port), stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, cwd=str(self.log_dir),
                                         start_new_session=True, preexec_fn=_die_with_parent)
            _LIVE.add(self)
            log.close()
            self.port = port
            self.returncode = None
            self.stopped_by_us = False
            ok, last_error = self._wait_ready(ready_timeout)
            if ok:
                return self
            self._kill_quietly()
            if b"in use" not in self.log_bytes()[-4096:].lower():
                break  # a real failure, not a port race: don't retry
        raise ServerStartError(f"{self.name} did not become ready: {last_error}\n"
                               f"--- log tail ---\n{self.log_tail()}")

    def _wait_ready(self, timeout: float) -> tuple[bool, str]:
        deadline = time.monotonic() + timeout
        last = "no attempt"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False, f"exited with {self.proc.returncode} during startup"
            if self.flavour == "keep" and not self.ready_file.exists():
                # Accept a PING too, but prefer the ready file: give it most of the time.
                if time.monotonic() < deadline - timeout / 2:
                    time.sleep(0.02)
                    continue
            try:
                with RawConnection(self.host, self.port, timeout=1.0,
                                   connect_timeout=0.5) as c:
                    r = c.call("PING", timeout=1.0)
                    if r == Reply("simple", b"PONG"):
                        return True, ""
                    last = f"PING answered {r!r}"
            except Exception as e:  # noqa: BLE001 - any failure means "not yet"
                last = f"PING failed: {e!r}"
            time.sleep(0.05)
        return False, f"not ready after {timeout}s ({last})"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, wait up to `timeout`, then SIGKILL. Returns the exit code (<0: signal)."""
        if self.proc is None:
            return None
        if self.proc.poll() is not None and not self.stopped_by_us:
            self.died_before_stop = True
        if self.proc.poll() is None:
            self.stopped_by_us = True
            try:
                self.proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
                self.returncode = self.proc.returncode
                with open(self.log_path, "ab") as log:
                    log.write(f"==== SIGTERM ignored for {timeout}s: SIGKILLed\n".encode())
                raise AssertionError(f"{self.name} did not exit within {timeout}s of SIGTERM; "
                                     f"killed\n--- log tail ---\n{self.log_tail()}")
        self.returncode = self.proc.returncode
        _LIVE.discard(self)
        return self.returncode

    def _kill_quietly(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        _LIVE.discard(self)

    # -- logs and crash checks -------------------------------------------------------------
    def log_bytes(self) -> bytes:
        try:
            return self.log_path.read_bytes()
        except FileNotFoundError:
            return b""

    def log_tail(self, n: int = 6000) -> str:
        return self.log_bytes()[-n:].decode(errors="replace")

    def new_crash_reports(self) -> str | None:
        """Sanitizer/crash lines written to the log since the last call (None if none)."""
        data = self.log_bytes()
        new = data[self._log_scan_offset:]
        self._log_scan_offset = len(data)
        m = CRASH_PATTERNS.search(new)
        if m:
            start = max(0, m.start() - 200)
            return new[start:start + 6000].decode(errors="replace")
        return None

    def check_healthy(self) -> None:
        """Assert the process is running and has logged no crash/sanitizer report."""
        report = self.new_crash_reports()
        if not self.alive():
            code = self.proc.returncode if self.proc else None
            how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
            raise AssertionError(f"{self.name} (port {self.port}) is not running ({how})\n"
                                 f"--- log tail ---\n{self.log_tail()}")
        if report:
            raise AssertionError(f"{self.name} logged a crash/sanitizer report:\n{report}")

    def check_clean_exit(self) -> None:
        """After stop(): exit code 0 on SIGTERM and no crash report in the whole log."""
        code = self.returncode
        data = self.log_bytes()
        m = CRASH_PATTERNS.search(data)
        problems = []
        if self.died_before_stop:
            problems.append(f"died before the suite stopped it: exit code {code}"
                            + (f" (signal {-code})" if code and code < 0 else ""))
        elif code != 0:
            problems.append(f"exit code {code}" + (f" (signal {-code})" if code and code < 0
                                                   else "") + " after SIGTERM, expected 0")
        if m:
            problems.append("crash/sanitizer report in log: "
                            + data[max(0, m.start() - 200):m.start() + 2000].decode(
                                errors="replace"))
        if problems:
            raise AssertionError(f"{self.name}: " + "; ".join(problems)
                                 + f"\n--- log tail ---\n{self.log_tail(3000)}")
