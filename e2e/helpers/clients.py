"""redis-py clients for the suites (bytes in, bytes out; bounded socket waits)."""

from __future__ import annotations

import redis


def make_client(server, **kw) -> redis.Redis:
    kw.setdefault("socket_timeout", 10)
    kw.setdefault("socket_connect_timeout", 5)
    return redis.Redis(host=server.host, port=server.port, decode_responses=False, **kw)
