"""Per-address limits counted in Redis, over every process of a service (``--redis``; ``docs/deploy.md``).

- Open WebSockets per address: a sorted set ``ct:sockets:{address}`` of connection ids scored by when each entry
  expires; each process refreshes its own connections with its lease renewals, so the connections of a process
  that died stop counting within a lease time.
- Table creations per address: a token bucket ``ct:creates:{address}`` (a Lua script, atomic), the same rule as
  the single process's ``RateLimiter``.
- Sign-in and sign-up failures (``server/players/accounts.py``): a sorted set of failure times per key within a window.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from redis.asyncio import Redis

_BUCKET = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local state = redis.call('hmget', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local allowed = 0
if tokens >= 1 then tokens = tokens - 1 allowed = 1 end
redis.call('hset', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('pexpire', KEYS[1], math.ceil((burst / rate) * 1000) + 1000)
return allowed
"""


class SharedLimits:
    """The limits of one process, counted with every other process's in ``redis``; ``life_ms``: how long a
    connection of a process that stopped refreshing keeps counting; ``control``: the client :meth:`refresh` uses
    (the renewals'), ``redis`` by default."""

    def __init__(self, redis: Redis, life_ms: int, control: Redis | None = None) -> None:
        self.redis = redis
        self.life_ms = life_ms
        self.control = control or redis
        self.sockets: dict[str, str] = {}
        """Connection id -> address, of the connections open at this process."""

    async def open_socket(self, address: str, limit: int) -> str | None:
        """Count one more WebSocket from ``address``: its connection id, or ``None`` (not counted) when
        ``address`` already has ``limit`` open over all processes."""
        key = f"ct:sockets:{address}"
        now = time.time() * 1000
        conn = uuid.uuid4().hex
        pipe = self.redis.pipeline(transaction=True)
        pipe.zremrangebyscore(key, "-inf", now)
        pipe.zcard(key)
        _, count = await pipe.execute()
        if int(count) >= limit:
            return None
        pipe = self.redis.pipeline(transaction=True)
        pipe.zadd(key, {conn: now + self.life_ms})
        pipe.pexpire(key, self.life_ms * 2)
        await pipe.execute()
        self.sockets[conn] = address
        return conn

    async def close_socket(self, conn: str) -> None:
        """Stop counting connection ``conn``."""
        address = self.sockets.pop(conn, None)
        if address is not None:
            await self.redis.zrem(f"ct:sockets:{address}", conn)

    async def refresh(self) -> None:
        """Keep this process's open connections counted for another ``life_ms`` (with each lease renewal): one
        ``ZADD`` of all its connections per address, in one round trip."""
        if not self.sockets:
            return
        expires = time.time() * 1000 + self.life_ms
        by_address: dict[str, dict[str, float]] = {}
        for conn, address in self.sockets.items():
            by_address.setdefault(address, {})[conn] = expires
        pipe = self.control.pipeline(transaction=False)
        for address, conns in by_address.items():
            pipe.zadd(f"ct:sockets:{address}", conns)
            pipe.pexpire(f"ct:sockets:{address}", self.life_ms * 2)
        await pipe.execute()

    async def allow_create(self, address: str, per_second: float, burst: int) -> bool:
        """Take one token from ``address``'s bucket (``per_second`` refill, ``burst`` deep); whether one was left."""
        allowed = await self._eval(_BUCKET, f"ct:creates:{address}", per_second / 1000.0, burst,
                                   int(time.time() * 1000))
        return bool(allowed)

    async def _eval(self, script: str, key: str, *args: Any) -> Any:
        return await self.redis.eval(script, 1, key, *args)

    async def wait_s(self, key: str, limit: int, window_s: float) -> int:
        """Seconds until ``key`` may try again: 0 with fewer than ``limit`` failures in the last ``window_s``."""
        name = f"ct:fail:{key}"
        now = time.time()
        pipe = self.redis.pipeline(transaction=True)
        pipe.zremrangebyscore(name, "-inf", now - window_s)
        pipe.zrange(name, 0, -1, withscores=True)
        _, entries = await pipe.execute()
        if len(entries) < limit:
            return 0
        oldest = float(entries[len(entries) - limit][1])
        return max(1, int(oldest + window_s - now + 0.999))

    async def fail(self, key: str, window_s: float) -> None:
        """Count one failure for ``key``."""
        name = f"ct:fail:{key}"
        pipe = self.redis.pipeline(transaction=True)
        pipe.zadd(name, {uuid.uuid4().hex: time.time()})
        pipe.expire(name, int(window_s) + 1)
        await pipe.execute()

    async def clear(self, key: str) -> None:
        """Forget ``key``'s failures (a successful sign-in)."""
        await self.redis.delete(f"ct:fail:{key}")


class SharedLimiter:
    """The sign-in limiter of ``server/players/accounts.py`` (``Limiter``'s awaited methods) counted in Redis: failures per
    key within ``window_s`` seconds, over every process."""

    def __init__(self, limits: SharedLimits, window_s: float) -> None:
        self.limits = limits
        self.window_s = window_s

    async def check(self, key: str, limit: int) -> int:
        """Seconds until ``key`` may try again (0: now)."""
        return await self.limits.wait_s(key, limit, self.window_s)

    async def note_failure(self, key: str) -> None:
        """Count one failure for ``key``."""
        await self.limits.fail(key, self.window_s)

    async def forget(self, key: str) -> None:
        """Forget ``key``'s failures."""
        await self.limits.clear(key)
