"""Pub/sub over real sockets, compared byte for byte with a real redis-server.

Each scenario drives the same steps against both servers with raw connections: subscribers on
several connections (so, on keep-server, on several shards), a publisher, and the replies and
pushed messages every connection sees.
"""

from __future__ import annotations

import time

import pytest

from helpers.resp import Reply

pytestmark = pytest.mark.timeout(60)


def _drain(conn, n, timeout=5.0):
    return [conn.read_reply(timeout=timeout) for _ in range(n)]


def _run_both(keep_server, redis_server, raw, scenario):
    results = {}
    for name, server in (("keep", keep_server), ("redis", redis_server)):
        results[name] = scenario(lambda: raw(server))
    assert results["keep"] == results["redis"]
    return results["keep"]


def test_subscribe_publish_across_connections(keep_server, redis_server, raw):
    def scenario(connect):
        subscribers = [connect() for _ in range(4)]
        publisher = connect()
        seen = []
        for i, sub in enumerate(subscribers):
            sub.send_command("SUBSCRIBE", "news", f"own:{i}")
            seen.append(_drain(sub, 2))
        seen.append(publisher.call("PUBLISH", "news", "hello"))
        seen.append(publisher.call("PUBLISH", "own:2", "just two"))
        seen.append(publisher.call("PUBLISH", "nobody", "lost"))
        for sub in subscribers:
            seen.append(sub.read_reply())
        seen.append(subscribers[2].read_reply())
        for sub in subscribers:
            assert sub.read_available(wait=0.1) == b""
        return seen

    seen = _run_both(keep_server, redis_server, raw, scenario)
    assert seen[4] == Reply("int", 4)


def test_patterns_and_counts(keep_server, redis_server, raw):
    def scenario(connect):
        sub = connect()
        publisher = connect()
        sub.send_command("PSUBSCRIBE", "user:*", "user:?")
        steps = _drain(sub, 2)
        sub.send_command("SUBSCRIBE", "user:1")
        steps += _drain(sub, 1)
        steps.append(publisher.call("PUBLISH", "user:1", "x"))
        deliveries = _drain(sub, 3)
        # The channel's subscribers hear first; the order among patterns is unspecified.
        steps += deliveries[:1] + sorted(deliveries[1:], key=repr)
        steps.append(publisher.call("PUBSUB", "NUMPAT"))
        steps.append(publisher.call("PUBSUB", "NUMSUB", "user:1", "user:2"))
        steps.append(publisher.call("PUBSUB", "CHANNELS", "user:*"))
        sub.send_command("PUNSUBSCRIBE")
        steps += sorted(_drain(sub, 2), key=repr)
        sub.send_command("UNSUBSCRIBE")
        steps += _drain(sub, 1)
        sub.send_command("UNSUBSCRIBE")
        steps += _drain(sub, 1)  # nothing left: a null channel and 0
        steps.append(publisher.call("PUBSUB", "NUMPAT"))
        return steps

    steps = _run_both(keep_server, redis_server, raw, scenario)
    assert steps[3] == Reply("int", 3)


def test_subscribed_resp2_connection_is_restricted(keep_server, redis_server, raw):
    def scenario(connect):
        sub = connect()
        sub.send_command("SUBSCRIBE", "a")
        steps = _drain(sub, 1)
        steps.append(sub.call("GET", "x"))
        steps.append(sub.call("PING"))
        steps.append(sub.call("PING", "hi"))
        steps.append(sub.call("SUBSCRIBE"))  # arity is checked first
        sub.send_command("UNSUBSCRIBE", "a")
        steps += _drain(sub, 1)
        steps.append(sub.call("GET", "x"))
        steps.append(sub.call("PING"))
        return steps

    _run_both(keep_server, redis_server, raw, scenario)


def test_resp3_pushes_and_commands_while_subscribed(keep_server, redis_server, raw):
    def scenario(connect):
        sub = connect()
        publisher = connect()
        hello = sub.call("HELLO", "3")
        assert hello.kind == "map"
        sub.send_command("SUBSCRIBE", "c")
        steps = _drain(sub, 1)
        steps.append(sub.call("SET", "k", "v"))
        steps.append(sub.call("GET", "k"))
        steps.append(publisher.call("PUBLISH", "c", "m"))
        steps += _drain(sub, 1)
        steps.append(sub.call("DEL", "k"))
        return steps

    steps = _run_both(keep_server, redis_server, raw, scenario)
    assert steps[0].kind == "push"


def test_sharded_channels(keep_server, redis_server, raw):
    def scenario(connect):
        sub = connect()
        publisher = connect()
        sub.send_command("SSUBSCRIBE", "orders")
        steps = _drain(sub, 1)
        steps.append(publisher.call("SPUBLISH", "orders", "o1"))
        steps.append(publisher.call("PUBLISH", "orders", "not sharded"))
        steps += _drain(sub, 1)
        steps.append(publisher.call("PUBSUB", "SHARDCHANNELS"))
        steps.append(publisher.call("PUBSUB", "SHARDNUMSUB", "orders"))
        sub.send_command("SUNSUBSCRIBE", "orders")
        steps += _drain(sub, 1)
        return steps

    _run_both(keep_server, redis_server, raw, scenario)


@pytest.mark.parametrize("command", [
    ("PUBLISH",), ("PUBLISH", "a"), ("PUBLISH", "a", "b", "c"), ("PUBSUB",),
    ("PUBSUB", "NOPE"), ("PUBSUB", "NUMPAT", "x"), ("PUBSUB", "CHANNELS", "a", "b"),
    ("PSUBSCRIBE",), ("SSUBSCRIBE",), ("SPUBLISH", "a"), ("PUBSUB", "HELP"),
])
def test_bad_input_matches_redis(keep_server, redis_server, raw, command):
    def scenario(connect):
        conn = connect()
        return [conn.call(*command), conn.call("PING")]

    _run_both(keep_server, redis_server, raw, scenario)


def test_subscriber_disconnect_is_cleaned_up(keep_server, raw):
    subs = [raw(keep_server) for _ in range(10)]
    for sub in subs:
        sub.send_command("SUBSCRIBE", "gone")
        sub.read_reply()
    for sub in subs:
        sub.close(reset=True)
    publisher = raw(keep_server)
    deadline = time.monotonic() + 5
    while publisher.call("PUBLISH", "gone", "x") != Reply("int", 0):
        assert time.monotonic() < deadline, "closed subscribers still counted"
        time.sleep(0.05)
    assert publisher.call("PUBSUB", "NUMSUB", "gone") == Reply("array", [
        Reply("bulk", b"gone"), Reply("int", 0)])


def test_slow_subscriber_never_slows_the_publisher(server_factory, raw):
    server = server_factory(client_output_buffer_limit="1mb")
    slow = raw(server)
    slow.send_command("SUBSCRIBE", "firehose")
    slow.read_reply()
    publisher = raw(server)
    payload = b"x" * 4096
    started = time.monotonic()
    # 64 MiB of messages to a subscriber that reads nothing: it is cut off at its output limit
    # and the publisher goes on at full speed.
    for _ in range(16):
        publisher.send(b"".join(b"*3\r\n$7\r\nPUBLISH\r\n$8\r\nfirehose\r\n$4096\r\n" + payload +
                                b"\r\n" for _ in range(1024)))
        publisher.read_replies(1024, timeout=20)
    assert time.monotonic() - started < 20
    assert slow.wait_closed(timeout=5)
    assert publisher.call("PUBLISH", "firehose", "after") == Reply("int", 0)


def test_idle_timeout_spares_subscribers(server_factory, raw):
    server = server_factory(timeout=1)
    sub = raw(server)
    sub.send_command("SUBSCRIBE", "quiet")
    sub.read_reply()
    idle = raw(server)
    assert idle.call("PING") == Reply("simple", b"PONG")
    time.sleep(2.5)
    assert idle.wait_closed(timeout=3)
    publisher = raw(server)
    assert publisher.call("PUBLISH", "quiet", "still here") == Reply("int", 1)
    assert sub.read_reply()[1][2] == Reply("bulk", b"still here")
