"""keep-cli as a new user meets it: one-shot commands over the binary protocol against a real
keep-server, --resp, help for every command, commands from a pipe, and errors (including BUSY and
MOVED, from the binary-protocol stand-in keep-fake-server) printed legibly with exit status 1."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers.server import free_port

pytestmark = [pytest.mark.timeout(60), pytest.mark.keep_only]

BIN = Path(os.environ.get("KEEP_BIN_DIR",
                          Path(__file__).resolve().parent.parent / "build" / "bin"))
CLI = BIN / "keep-cli"
FAKE = BIN / "keep-fake-server"


def cli(port: int, *args: str, stdin: str | None = None, env: dict | None = None):
    return subprocess.run([str(CLI), "-p", str(port), *args], input=stdin, capture_output=True,
                          text=True, timeout=20, env={**os.environ, "HOME": "/tmp", **(env or {})})


@pytest.fixture(scope="module", autouse=True)
def _binaries():
    if not CLI.exists():
        pytest.fail(f"{CLI} is not built (make build)")


def test_set_get_over_binary(keep_server, keep):
    p = keep_server.port
    r = cli(p, "set", "a", "1")
    assert (r.returncode, r.stdout, r.stderr) == (0, "OK\n", "")
    assert keep.get(b"a") == b"1"  # the same data as RESP clients see
    assert cli(p, "get", "a").stdout == '"1"\n'
    assert cli(p, "incr", "a").stdout == "(integer) 2\n"
    assert cli(p, "get", "missing").stdout == "(nil)\n"
    keep.set(b"bin", b"a\x00\nb")
    assert cli(p, "get", "bin").stdout == '"a\\x00\\nb"\n'
    cli(p, "set", "b", "2")
    assert cli(p, "mget", "a", "b", "zz").stdout == '1) "2"\n2) "2"\n3) (nil)\n'
    assert cli(p, "lock", "l", "me", "10000").stdout.startswith("(integer) ")
    assert cli(p, "ping").stdout == "PONG\n"
    # The connection is a binary one: CLIENT LIST shows keep-cli's HELLO name.
    assert "name=keep-cli" in cli(p, "client", "list").stdout


def test_resp_flag(keep_server, keep):
    p = keep_server.port
    assert cli(p, "--resp", "set", "r", "x").stdout == "OK\n"
    assert cli(p, "--resp", "get", "r").stdout == '"x"\n'
    assert keep.get(b"r") == b"x"


def test_errors_are_legible_with_exit_status_1(keep_server, keep):
    p = keep_server.port
    keep.set(b"s", b"text")
    r = cli(p, "incr", "s")
    assert r.returncode == 1
    assert r.stdout == "(error) ERR value is not an integer or out of range\n"
    r = cli(p, "nosuchcommand", "x")
    assert r.returncode == 1 and r.stdout.startswith("(error) ERR unknown command")
    r = cli(p, "get")
    assert r.returncode == 1 and "wrong number of arguments" in r.stdout
    r = cli(free_port(), "get", "a")
    assert r.returncode == 1
    assert "Could not connect to Keep at 127.0.0.1" in r.stderr


@pytest.mark.parametrize("args", [["get", "--help"], ["help", "get"], ["SET", "--help"],
                                  ["mset", "--help"], ["help", "getdel"], ["delprefix", "--help"],
                                  ["cl.throttle", "--help"]])
def test_help_for_every_command(keep_server, args):
    r = cli(keep_server.port, *args)
    assert r.returncode == 0, r
    assert "summary:" in r.stdout, r.stdout


def test_help_and_usage():
    r = subprocess.run([str(CLI), "--help"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0 and r.stdout.startswith("Usage: keep-cli")
    assert "--resp" in r.stdout and "KEEP_SECRET" in r.stdout
    r = subprocess.run([str(CLI), "help"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0 and "help <command>" in r.stdout and "GET key" in r.stdout


def test_commands_from_a_pipe(keep_server, keep):
    r = cli(keep_server.port, stdin="set p 1\nincr p\nget p\n\nbogus\n")
    assert r.stdout.splitlines()[:3] == ["OK", "(integer) 2", '"2"']
    assert r.stdout.splitlines()[3].startswith("(error) ERR unknown command")
    assert r.returncode == 1
    assert keep.get(b"p") == b"2"


def test_interactive_session_history_and_help(keep_server, tmp_path):
    """Under a pseudo-terminal: the prompt, help, a command, quit; the line lands in history."""
    import pty
    import select
    import time

    pid, fd = pty.fork()
    if pid == 0:
        os.environ["HOME"] = str(tmp_path)
        os.execv(str(CLI), [str(CLI), "-p", str(keep_server.port)])
    out = b""

    def expect(token: bytes, timeout: float = 10.0):
        nonlocal out
        deadline = time.monotonic() + timeout
        while token not in out:
            left = deadline - time.monotonic()
            assert left > 0, out
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                try:
                    out += os.read(fd, 4096)
                except OSError:
                    break
        assert token in out, out

    try:
        expect(b"> ")
        os.write(fd, b"help\n")
        expect(b"help <command>")
        os.write(fd, b"set tty 1\n")
        expect(b"OK")
        os.write(fd, b"get tty\n")
        expect(b'"1"')
        os.write(fd, b"quit\n")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                assert os.waitstatus_to_exitcode(status) == 0
                break
            time.sleep(0.05)
        else:
            raise AssertionError("keep-cli did not quit")
        pid = 0
    finally:
        if pid:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        os.close(fd)
    history = (tmp_path / ".keepcli_history").read_text()
    assert "set tty 1" in history


@pytest.fixture
def fake_server():
    if not FAKE.exists():
        pytest.fail(f"{FAKE} is not built (make build)")
    port = free_port()
    proc = subprocess.Popen([str(FAKE), "--port", str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("listening on")
        yield port
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_busy_and_moved_printed_legibly(fake_server):
    r = cli(fake_server, "get", "moved")
    assert r.returncode == 1
    assert r.stdout == "(error) MOVED 1234 10.0.0.9:7002 (view epoch 3)\n"
    r = cli(fake_server, "get", "stuck")
    assert r.returncode == 1
    assert r.stdout.startswith("(error) BUSY retry after")
    # BUSY a couple of times is retried by libkeep: the user only sees the answer.
    assert cli(fake_server, "set", "busy1", "v").stdout == "OK\n"
