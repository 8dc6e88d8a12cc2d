"""Forwarded requests whose connection owes nothing else are answered on the socket by the shard
that owns their keys (no return hop): a request that is all its client has sent, and a whole
pipeline whose replies from other shards all travel in one batch to one shard, which then writes
the forwarding shard's own replies of the pipeline, in request order, with its own. The replies
stay correct and in order, later requests wait for them, what the socket cannot take is sent by
the connection's shard, and a client gone meanwhile never has its replies reach another client.

Shards are reached through their own ports (`--shard-port-base`) and keys are placed with
`--slot-hash crc16`, so each test knows which shard a connection is on and which owns a key."""
from __future__ import annotations

import random
import time

import pytest

from helpers.cluster import crc16_slot
from helpers.resp import RawConnection, Reply, encode_command, encode_commands
from helpers.server import free_port_pair

SHARDS = 2


def _keys_of(shard: int, prefix: str, count: int) -> list[str]:
    keys, i = [], 0
    while len(keys) < count:
        key = f"{prefix}{i}"
        if crc16_slot(key.encode()) % SHARDS == shard:
            keys.append(key)
        i += 1
    return keys


def _server(server_factory, name: str):
    base = free_port_pair()
    server = server_factory(name, shards=SHARDS, shard_port_base=base, slot_hash="crc16",
                            enable_debug_command=True)
    return server, base


def _stat(conn: RawConnection, name: str) -> int:
    info = conn.call("INFO", "stats").value.decode()
    for line in info.splitlines():
        if line.startswith(name + ":"):
            return int(line.split(":", 1)[1])
    raise AssertionError(f"INFO stats has no {name}")


def test_one_request_at_a_time_is_answered_by_the_owning_shard(server_factory):
    server, base = _server(server_factory, "keep-direct")
    remote = _keys_of(1, "direct:", 200)
    local = _keys_of(0, "direct:", 50)
    c = RawConnection("127.0.0.1", base, timeout=5)  # shard 0's port
    before = _stat(c, "cross_shard_direct_replies")
    for i, key in enumerate(remote):
        assert c.call("SET", key, f"v{i}" * (i % 40 + 1)) == Reply("simple", b"OK")
        assert c.call("GET", key) == Reply("bulk", (f"v{i}" * (i % 40 + 1)).encode())
    for key in local:
        assert c.call("GET", key) == Reply("bulk", None)
    # Errors from the owning shard come back the same way.
    assert c.call("INCR", remote[0]) == Reply(
        "error", b"ERR value is not an integer or out of range")
    direct = _stat(c, "cross_shard_direct_replies") - before
    # The SET and GET of every remote key went one at a time: most were answered directly (a
    # reply still on its way back when the next request arrives makes that one go the long way).
    assert direct >= 200, direct
    # Large values too: the owning shard writes what the socket takes, the rest is sent for it.
    big = "x" * (3 << 20)
    assert c.call("SET", remote[1], big) == Reply("simple", b"OK")
    for _ in range(3):
        assert c.call("GET", remote[1], timeout=10) == Reply("bulk", big.encode())
    c.close()


def test_pipelines_are_answered_by_the_shard_that_owns_their_forwarded_keys(server_factory):
    server, base = _server(server_factory, "keep-direct-pipeline")
    remote = _keys_of(1, "pipe:", 64)
    local = _keys_of(0, "pipe:", 64)
    c = RawConnection("127.0.0.1", base, timeout=5)  # shard 0's port
    values = {}
    for i, key in enumerate(remote + local):
        values[key] = f"{key}={i}".encode() * (i % 7 + 1)
        assert c.call("SET", key, values[key]) == Reply("simple", b"OK")
    before = _stat(c, "cross_shard_direct_replies")
    rng = random.Random(7)
    forwarded = 0
    for round_ in range(200):
        commands, expected = [], []
        for _ in range(rng.choice((2, 5, 16, 40))):
            pick = rng.random()
            key = rng.choice(remote if pick < 0.5 else local)
            forwarded += key in remote and pick < 0.9
            if pick < 0.7:
                commands.append(("GET", key))
                expected.append(Reply("bulk", values[key]))
            elif pick < 0.9:
                values[key] = f"{key}@{round_}".encode()
                commands.append(("SET", key, values[key]))
                expected.append(Reply("simple", b"OK"))
            else:
                commands.append(("ECHO", key))
                expected.append(Reply("bulk", key.encode()))
        c.send(encode_commands(commands))
        assert c.read_replies(len(commands), timeout=5) == expected, round_
        assert c.read_available(0) == b""
    direct = _stat(c, "cross_shard_direct_replies") - before
    # Each pipeline arrives in one read here, so its forwarded requests travel in one batch.
    assert direct >= forwarded * 3 // 4, (direct, forwarded)
    # Large replies on either side: a local one beyond what a batch carries keeps the pipeline on
    # the long way; a remote one the socket cannot take at once is finished by shard 0.
    big_local = b"L" * (200 << 10)
    big_remote = b"R" * (3 << 20)
    assert c.call("SET", local[0], big_local) == Reply("simple", b"OK")
    assert c.call("SET", remote[0], big_remote) == Reply("simple", b"OK")
    for _ in range(3):
        c.send(encode_commands([("GET", local[1]), ("GET", remote[0]), ("GET", local[2]),
                                ("GET", remote[1]), ("GET", local[0]), ("GET", remote[2])]))
        assert c.read_replies(6, timeout=10) == [
            Reply("bulk", values[local[1]]), Reply("bulk", big_remote),
            Reply("bulk", values[local[2]]), Reply("bulk", values[remote[1]]),
            Reply("bulk", big_local), Reply("bulk", values[remote[2]])]
    assert c.read_available(0.05) == b""
    c.close()


FIRST_SENDS = {
    "alone": ([("GET", "{remote}")], [b"r1"]),
    "pipeline": ([("ECHO", "a"), ("GET", "{remote}"), ("GET", "{local}"), ("GET", "{remote2}")],
                 [b"a", b"r1", b"l0", b"r2"]),
}


@pytest.mark.parametrize("first", sorted(FIRST_SENDS))
def test_requests_sent_while_a_direct_reply_is_owed_wait_for_it(server_factory, first):
    server, base = _server(server_factory, "keep-direct-wait")
    (remote, remote2) = _keys_of(1, "wait:", 2)
    (local,) = _keys_of(0, "wait:", 1)
    setup = RawConnection("127.0.0.1", server.port, timeout=5)
    for key, value in ((remote, "r1"), (remote2, "r2"), (local, "l0")):
        assert setup.call("SET", key, value) == Reply("simple", b"OK")
    names = {"remote": remote, "remote2": remote2, "local": local}
    commands = [tuple(arg.format(**names) for arg in command) for command in FIRST_SENDS[first][0]]
    first_replies = [Reply("bulk", value) for value in FIRST_SENDS[first][1]]
    sleeper = RawConnection("127.0.0.1", base + 1, timeout=5)  # shard 1's port
    c = RawConnection("127.0.0.1", base, timeout=5)
    for round_ in range(5):
        # Shard 1 is busy for 300 ms: the first requests go to it (answered directly later, shard
        # 0's own replies among them), and what follows, local or forwarded, must not overtake.
        sleeper.send(encode_command("DEBUG", "SLEEP", "0.3"))
        time.sleep(0.05)
        c.send(encode_commands(commands))
        time.sleep(0.05)
        c.send(encode_commands([("PING",), ("GET", local), ("GET", remote2), ("ECHO", "e"),
                                ("GET", remote)]))
        got = c.read_replies(len(first_replies) + 5, timeout=5)
        assert got == first_replies + [
            Reply("simple", b"PONG"), Reply("bulk", b"l0"), Reply("bulk", b"r2"),
            Reply("bulk", b"e"), Reply("bulk", b"r1")], round_
        assert sleeper.read_reply(timeout=5) == Reply("simple", b"OK")
        assert c.read_available(0.05) == b""
    c.close()
    sleeper.close()
    setup.close()


@pytest.mark.parametrize("pipelined", [False, True])
def test_a_client_gone_before_its_direct_reply_leaves_it_to_nobody_else(server_factory, pipelined):
    server, base = _server(server_factory, "keep-direct-gone")
    (remote,) = _keys_of(1, "gone:", 1)
    setup = RawConnection("127.0.0.1", server.port, timeout=5)
    assert setup.call("SET", remote, "secret") == Reply("simple", b"OK")
    sleeper = RawConnection("127.0.0.1", base + 1, timeout=5)
    sent = [("ECHO", "mine"), ("GET", remote), ("ECHO", "also mine")] if pipelined else [
        ("GET", remote)]
    for round_ in range(3):
        sleeper.send(encode_command("DEBUG", "SLEEP", "0.4"))
        time.sleep(0.05)
        for reset in (True, False):
            gone = RawConnection("127.0.0.1", base, timeout=5)
            gone.send(encode_commands(sent))
            time.sleep(0.02)
            gone.close(reset=reset)
        time.sleep(0.05)
        # New clients of the same shard (one may get the closed one's descriptor number): each
        # sees its own replies only, before and after the owning shard answers the gone one.
        fresh = [RawConnection("127.0.0.1", base, timeout=5) for _ in range(8)]
        for f in fresh:
            f.send(encode_command("PING"))
        for f in fresh:
            assert f.read_reply(timeout=5) == Reply("simple", b"PONG")
        assert sleeper.read_reply(timeout=5) == Reply("simple", b"OK")
        for f in fresh:
            assert f.read_available(0.05) == b"", round_
            assert f.call("GET", remote) == Reply("bulk", b"secret")
            assert f.read_available(0.02) == b""
            f.close()
    assert setup.call("DBSIZE") == Reply("int", 1)
    sleeper.close()
    setup.close()


def _key_of_length(shard: int, length: int) -> str:
    for i in range(33, 100000):
        key = chr(i) if length == 1 else f"{i:x}".rjust(length, "k")
        if len(key.encode()) == length and crc16_slot(key.encode()) % SHARDS == shard:
            return key
    raise AssertionError(f"no key of length {length} on shard {shard}")


def test_forwarded_arguments_of_every_short_length_arrive_intact(server_factory):
    """The forwarding shard copies short arguments a word at a time: keys and values of every
    length from 1 to 40 bytes (either side of the 4, 8 and 16 byte boundaries), one at a time and
    pipelined, must reach the owning shard and come back byte for byte."""
    server, base = _server(server_factory, "keep-forward-lengths")
    c = RawConnection("127.0.0.1", base, timeout=5)  # shard 0's port
    keys = [_key_of_length(1, length) for length in range(1, 41)]
    values = [bytes(range(65, 65 + length)) for length in range(0, 40)]
    for key, value in zip(keys, values):
        assert c.call("SET", key, value) == Reply("simple", b"OK"), key
        assert c.call("GET", key) == Reply("bulk", value), key
        assert c.call("STRLEN", key) == Reply("int", len(value)), key
    commands, expected = [], []
    for key, value in zip(keys, reversed(values)):
        commands += [("SET", key, value), ("GET", key), ("APPEND", key, "!")]
        expected += [Reply("simple", b"OK"), Reply("bulk", value), Reply("int", len(value) + 1)]
    c.send(encode_commands(commands))
    assert c.read_replies(len(commands), timeout=10) == expected
