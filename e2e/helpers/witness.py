"""A bystander client: connected and holding data before a test, checked after it.

Bad-input tests use it to show that abusing one connection leaves the server up, other
connections working and other clients' data intact.
"""

from __future__ import annotations

import os

import redis


class Witness:
    def __init__(self, host: str, port: int, server=None, nkeys: int = 20):
        self.server = server
        self.client = redis.Redis(host=host, port=port, decode_responses=False,
                                  socket_timeout=10, socket_connect_timeout=5,
                                  single_connection_client=True)
        tag = os.urandom(6).hex()
        # Binary-unsafe bytes on purpose; the key spread covers both shards.
        self.data = {f"witness:{tag}:{i}".encode(): b"v\x00\r\n\xff" + str(i).encode() * (i + 1)
                     for i in range(nkeys)}
        self.client.mset(self.data)
        self.client.set(f"witness:{tag}:counter".encode(), 41)
        self.client.incr(f"witness:{tag}:counter".encode())
        self.data[f"witness:{tag}:counter".encode()] = b"42"

    def check(self) -> None:
        if self.server is not None:
            self.server.check_healthy()
        assert self.client.ping() is True, "witness connection no longer answers PING"
        keys = list(self.data)
        got = self.client.mget(keys)
        bad = {k: (v, g) for (k, v), g in zip(self.data.items(), got) if v != g}
        assert not bad, f"witness data changed: {bad}"

    def close(self) -> None:
        self.client.close()
