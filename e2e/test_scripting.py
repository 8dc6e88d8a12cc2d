"""EVAL/EVALSHA/SCRIPT end to end: the popular Lua recipes run unchanged and give the same
results on keep-server as on a real redis-server; scripts are atomic under concurrency; bad
input gets Redis's errors.

Runaway scripts (lua-time-limit, 5 s by default and not a command-line flag) are covered by the
unit tests (script_family_test.cc) with a short limit, not here.
"""

from __future__ import annotations

import threading

import pytest
import redis

from helpers.clients import make_client

FIXED_WINDOW = """
local c = redis.call('INCR', KEYS[1])
if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return c
"""

# A common GET/SET token bucket: state "tokens:last_ms" in one key, the caller passes the time.
TOKEN_BUCKET = """
local capacity = tonumber(ARGV[1])
local refill_per_ms = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local tokens = capacity
local last = now
local state = redis.call('GET', KEYS[1])
if state then
  local sep = string.find(state, ':')
  tokens = tonumber(string.sub(state, 1, sep - 1))
  last = tonumber(string.sub(state, sep + 1))
end
tokens = math.min(capacity, tokens + (now - last) * refill_per_ms)
local allowed = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
end
redis.call('SET', KEYS[1], tokens .. ':' .. now, 'PX', 60000)
return {allowed, math.floor(tokens)}
"""

RELEASE_IF_OWNER = """
if redis.call('GET',KEYS[1]) == ARGV[1] then return redis.call('DEL',KEYS[1]) else return 0 end
"""

SLIDING_WINDOW = """
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now - tonumber(ARGV[2]))
local count = redis.call('ZCARD', KEYS[1])
if count < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], now, now)
  return 1
end
return 0
"""

READ_MODIFY_WRITE = """
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
redis.call('SET', KEYS[1], v + tonumber(ARGV[1]))
local n = redis.call('INCR', KEYS[2])
return v + tonumber(ARGV[1])
"""


def both(keep, redis_ref, fn):
    """Runs fn(client) on both servers and returns the pair of results (or exceptions)."""
    out = []
    for client in (keep, redis_ref):
        try:
            out.append(fn(client))
        except redis.ResponseError as e:
            out.append(("error", str(e)))
    return out


def test_fixed_window_limiter(keep, redis_ref):
    for client in (keep, redis_ref):
        script = client.register_script(FIXED_WINDOW)
        got = [script(keys=["rl:{user1}"], args=[60000]) for _ in range(5)]
        assert got == [1, 2, 3, 4, 5]
        assert 0 < client.pttl("rl:{user1}") <= 60000


def test_token_bucket(keep, redis_ref):
    results = []
    for client in (keep, redis_ref):
        script = client.register_script(TOKEN_BUCKET)
        now = 1_000_000
        seq = []
        for i in range(8):
            seq.append(script(keys=["tb:{api}"], args=[5, "0.001", now + i * 100, 1]))
        seq.append(script(keys=["tb:{api}"], args=[5, "0.001", now + 10_000, 1]))
        results.append(seq)
    assert results[0] == results[1]
    assert [r[0] for r in results[0][:6]] == [1, 1, 1, 1, 1, 0]  # capacity 5
    assert results[0][-1][0] == 1  # refilled after 10 s


def test_lock_release_if_owner(keep, redis_ref):
    for client in (keep, redis_ref):
        release = client.register_script(RELEASE_IF_OWNER)
        assert client.set("lock:{res}", "token-a", nx=True, px=10000)
        assert release(keys=["lock:{res}"], args=["token-b"]) == 0
        assert client.get("lock:{res}") == b"token-a"
        assert release(keys=["lock:{res}"], args=["token-a"]) == 1
        assert client.exists("lock:{res}") == 0
        assert release(keys=["lock:{res}"], args=["token-a"]) == 0


def test_sliding_window_with_sorted_sets_fails_clearly(keep):
    script = keep.register_script(SLIDING_WINDOW)
    with pytest.raises(redis.ResponseError) as e:
        script(keys=["sw:{u}"], args=[1000, 100, 5])
    assert "Unknown Redis command called from script" in str(e.value)


def test_evalsha_noscript_and_script_commands(keep, redis_ref):
    for client in (keep, redis_ref):
        client.script_flush()
        body = "return {KEYS[1], ARGV[1]}"
        sha = client.script_load(body)
        assert client.script_exists(sha, "0" * 40) == [True, False]
        assert client.evalsha(sha, 1, "k", "v") == [b"k", b"v"]
        client.script_flush()
        assert client.script_exists(sha) == [False]
        with pytest.raises(redis.exceptions.NoScriptError):
            client.evalsha(sha, 1, "k", "v")
        # redis-py's Script retries with SCRIPT LOAD after NOSCRIPT.
        script = client.register_script(body)
        assert script(keys=["k"], args=["v"]) == [b"k", b"v"]


@pytest.mark.parametrize("args", [
    ("return 1+1", 0),
    ("return {1,2,3,'x',nil,5}", 0),
    ("return 3.99", 0),
    ("return true", 0),
    ("return false", 0),
    ("return {ok='FINE'}", 0),
    ("return redis.status_reply('FINE')", 0),
    ("return redis.error_reply('My error')", 0),
    ("return cjson.decode(cjson.encode({1,2,3}))[2]", 0),
    ("return redis.sha1hex('abc')", 0),
    ("return redis.call('GET', KEYS[1])", 1, "missing"),
    ("return redis.pcall('INCR', KEYS[1])", 1, "{s}str"),
    ("return 1", -1),
    ("return 1", 3, "a"),
    ("return 1", "x"),
    ("retur 1", 0),
    ("a = 1", 0),
    ("return os", 0),
    ("return io", 0),
    ("return 1", 2, "{t}a", "{t}b"),
])
def test_same_replies_as_redis(keep, redis_ref, args):
    for client in (keep, redis_ref):
        client.set("{s}str", "abc")
    got = both(keep, redis_ref, lambda c: c.eval(*args))
    assert got[0] == got[1]


def test_errors_raised_by_redis_call(keep, redis_ref):
    # The message is Redis's; the " script: <sha>, on @user_script:N." suffix too, except after a
    # tail call where LuaJIT has no position to report.
    for body in ["local r = redis.call('nosuch') return r",
                 "redis.call('SET', KEYS[1], 'v', 'bad')",
                 "error('boom')"]:
        got = both(keep, redis_ref, lambda c: c.eval(body, 1, "k"))
        assert got[0] == got[1], body


def test_cross_slot_keys_are_refused(keep):
    with pytest.raises(redis.ResponseError) as e:
        keep.eval("return 1", 2, "a", "b")
    assert str(e.value) == "CROSSSLOT Keys in request don't hash to the same slot"


def test_scripts_are_atomic_under_concurrency(keep_server):
    threads, rounds = 16, 200
    keys = ["rmw:{hot}:value", "rmw:{hot}:count"]
    setup = make_client(keep_server)
    setup.delete(*keys)
    sha = setup.script_load(READ_MODIFY_WRITE)
    errors = []

    def worker():
        c = make_client(keep_server)
        try:
            for _ in range(rounds):
                c.evalsha(sha, 2, keys[0], keys[1], 3)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
        finally:
            c.close()

    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    assert int(setup.get(keys[0])) == threads * rounds * 3
    assert int(setup.get(keys[1])) == threads * rounds
    setup.close()


def test_engine_survives_bad_scripts(keep):
    for body in ["retur 1", "error('x')", "return redis.call()", "a = 1", "return nil .. 1"]:
        with pytest.raises(redis.ResponseError):
            keep.eval(body, 0)
    assert keep.eval("return redis.call('INCR', KEYS[1])", 1, "after") == 1
