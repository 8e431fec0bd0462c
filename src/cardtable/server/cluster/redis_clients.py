"""A process's Redis set-up (``docs/architecture.md``, "Several server processes": "Redis connections"): its
clients and their pools, its id among the processes, and the key that says it is alive."""

from __future__ import annotations

import os
import socket
import uuid

from redis.asyncio import BlockingConnectionPool, Redis

REDIS_CONNECTIONS = 50
"""Connections to Redis one process opens at most for its requests (locating tables, counting sockets, relays'
lookups): more at once wait for a free one (5 s at most) rather than fail, as redis-py's default pool does past
its size (a burst of reconnecting clients used to make the publisher and the lease renewals fail too)."""

CONTROL_CONNECTIONS = 2
"""Connections of a process's own client for what must not wait behind requests: the lobby's view of its tables,
the shared counters. (The publisher has a connection of its own, with the same settings; the lease renewals a
thread and a connection of their own, ``LeaseKeeper``.)"""

ALIVE_PREFIX = "ct:alive:"
"""``ct:alive:{process}`` exists while the process runs (renewed with its leases)."""


def new_process_id() -> str:
    """A process id unique over machines and restarts: ``{host}-{pid}-{random}``."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def redis_client(url: str, connections: int) -> Redis:
    """A client of the Redis at ``url`` (``redis://HOST:PORT/DB``) with at most ``connections`` connections: a
    request past them waits for a free one (5 s at most, then ``ConnectionError``), as does connecting, reading and
    writing; connections idle for 10 s are checked before use. Connects on first use."""
    return Redis.from_pool(BlockingConnectionPool.from_url(
        url, max_connections=connections, timeout=5, socket_timeout=5, socket_connect_timeout=5,
        health_check_interval=10))
