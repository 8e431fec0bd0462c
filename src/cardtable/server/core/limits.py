"""Every limit the server counts (``docs/deploy.md``, "Limits"; ``docs/protocol.md``, "Limits"), in one place and
one naming scheme: a class is named for the rule it counts by, in the plural when it holds one per key (an address,
a name), and ``Shared`` when Redis counts it over every process of a service (``--redis``).

- :class:`TokenBucket`: ``rate`` a second, ``burst`` at once; a WebSocket connection's message budget (checked on
  every message and control frame) and a table creation budget per address.
- :class:`TokenBuckets`: a :class:`TokenBucket` per address (lobby reads, joins), with ``Retry-After``.
- :class:`ConnectionCounts`: open HTTP connections per address (a count, not a rate).
- :class:`MovingWindows`: events per key within a moving window (sign-in failures, sign-ups, sign-ins).
- :class:`SharedLimits`: open WebSockets per address and token buckets per address (table creations, joins), in
  Redis.
- :class:`SharedMovingWindows`: :class:`MovingWindows` in Redis, on the ``limits`` library's moving window.

Only :class:`SharedMovingWindows` is the ``limits`` library's (``bench/limiters.py`` and the report of issue 26 say
why the others are not): it has no token bucket (its windows let a burst through again each window, where a bucket
refills at its rate), no count of open connections, no clock a test can set and no bound on the keys a memory
storage holds within one window; and on the per-message path its memory strategies answer 9 to 35 times fewer checks a
second than :class:`TokenBucket` (47,000 against 1,157,000 a second for its moving window within the burst).
"""

from __future__ import annotations

import itertools
import math
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

from limits import RateLimitItem, RateLimitItemPerSecond
from limits.aio.storage import RedisStorage
from limits.aio.strategies import MovingWindowRateLimiter
from redis.asyncio import Redis

from cardtable.server.core.messages import RATE_BURST, RATE_PER_SECOND

FAILURE_WINDOW_S = 15 * 60.0
"""The window of :class:`MovingWindows` unless told otherwise, in seconds (``server/players/accounts.py``'s sign-in
limits)."""

MAX_FAILURE_KEYS = 100_000
"""Most keys a :class:`MovingWindows` remembers events of (memory is bounded whatever names and addresses are tried)."""


# -- counted in this process --------------------------------------------------------------------------------------

class TokenBucket:
    """A token bucket: ``rate`` messages per second, ``burst`` at once (``docs/protocol.md``, "Limits")."""

    __slots__ = ("_last", "_tokens", "burst", "rate")

    def __init__(self, rate: float = RATE_PER_SECOND, burst: float = RATE_BURST) -> None:
        self.rate = rate
        self.burst = burst
        self._tokens = burst
        self._last = time.monotonic()

    def allow(self) -> bool:
        """Take one token; False (and nothing taken) when the bucket is empty."""
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def wait_s(self) -> float:
        """Seconds until the next token is there (0.0 when one is; ``inf`` at rate 0). Takes nothing."""
        missing = 1.0 - (self._tokens + (time.monotonic() - self._last) * self.rate)
        if missing <= 0.0:
            return 0.0
        return missing / self.rate if self.rate > 0 else float("inf")

    def full(self) -> bool:
        """Whether the bucket has refilled to its burst (nothing taken lately: the limiter may be forgotten)."""
        now = time.monotonic()
        return self._tokens + (now - self._last) * self.rate >= self.burst


class TokenBuckets:
    """A token bucket per client address (``rate`` requests a second, ``burst`` at once), for requests that cost the
    server far more than the client, such as lobby reads: :meth:`take` counts one and says how long to wait when
    the address has none left. Counted in this process only. Buckets that have refilled are forgotten whenever the
    number held doubles (at least :data:`FORGET_AT`), so memory follows the addresses seen lately."""

    FORGET_AT = 1024

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self.buckets: dict[str, TokenBucket] = {}
        self._forget_at = self.FORGET_AT

    def take(self, address: str) -> int:
        """Count one request from ``address``: 0 if allowed, else whole seconds until one is (at least 1; for
        ``Retry-After``); a refused request takes nothing."""
        bucket = self.buckets.get(address)
        if bucket is None:
            if len(self.buckets) >= self._forget_at:
                self.buckets = {a: b for a, b in self.buckets.items() if not b.full()}
                self._forget_at = max(self.FORGET_AT, 2 * len(self.buckets))
            bucket = self.buckets[address] = TokenBucket(rate=self.rate, burst=self.burst)
        if bucket.allow():
            return 0
        wait = bucket.wait_s()
        return max(1, math.ceil(min(wait, 86400.0)))


class ConnectionCounts:
    """Open HTTP connections per client address, shared by every connection of one server."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.counts: Counter[str] = Counter()

    def take(self, address: str) -> bool:
        """Count a new connection from ``address``; False (and not counted) if it already has ``limit``."""
        if self.counts[address] >= self.limit:
            return False
        self.counts[address] += 1
        return True

    def release(self, address: str) -> None:
        """Forget one connection from ``address``."""
        self.counts[address] -= 1
        if self.counts[address] <= 0:
            del self.counts[address]


class MovingWindows:
    """Failed sign-ins per key (a name key, an address) in a sliding window of ``window_s`` seconds, read from
    ``clock`` (seconds, monotonic; tests pass their own)."""

    def __init__(self, window_s: float = FAILURE_WINDOW_S, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s = window_s
        self.clock = clock
        self._failures: dict[str, deque[float]] = {}

    def _recent(self, key: str, now: float) -> deque[float]:
        times = self._failures.setdefault(key, deque())
        while times and times[0] <= now - self.window_s:
            times.popleft()
        return times

    def wait_s(self, key: str, limit: int) -> int:
        """Seconds until ``key`` may try again (0: now)."""
        now = self.clock()
        times = self._recent(key, now)
        if len(times) < limit:
            if not times:
                self._failures.pop(key, None)
            return 0
        return max(1, int(times[-limit] + self.window_s - now + 0.999))

    def fail(self, key: str) -> None:
        """Count one failure for ``key``."""
        now = self.clock()
        self._recent(key, now).append(now)
        if len(self._failures) > MAX_FAILURE_KEYS:  # bounded memory
            self._forget_some(now)

    def _forget_some(self, now: float) -> None:
        """Forget the keys whose failures have all left the window; if that is not half of them (a flood of new
        names or addresses within one window), forget the keys seen first until half are left."""
        self._failures = {k: v for k, v in self._failures.items() if v and v[-1] > now - self.window_s}
        extra = len(self._failures) - MAX_FAILURE_KEYS // 2
        if extra > 0:
            for old in list(itertools.islice(self._failures, extra)):
                del self._failures[old]

    def clear(self, key: str) -> None:
        """Forget ``key``'s failures (after a successful sign-in)."""
        self._failures.pop(key, None)

    # The routes call these; with several processes a :class:`SharedMovingWindows` answers them from Redis instead.
    async def check(self, key: str, limit: int) -> int:
        """:meth:`wait_s`, awaited."""
        return self.wait_s(key, limit)

    async def note_failure(self, key: str, limit: int) -> None:
        """:meth:`fail`, awaited (every failure is counted, also past ``limit``)."""
        self.fail(key)

    async def forget(self, key: str, limit: int) -> None:
        """:meth:`clear`, awaited."""
        self.clear(key)


# -- counted in Redis, over every process -------------------------------------------------------------------------

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
"""A :class:`TokenBucket` in a Redis hash, taken atomically (``limits`` has no token bucket)."""


class SharedLimits:
    """Per-address limits counted in ``redis`` with every other process's (``--redis``; ``docs/deploy.md``):

    - Open WebSockets per address: a sorted set ``ct:sockets:{address}`` of connection ids scored by when each entry
      expires; each process refreshes its own connections with its lease renewals, so the connections of a process
      that died stop counting within a lease time (a count with leases: not a rate, so not ``limits``'s).
    - Token buckets per address (table creations, joins): a hash ``ct:creates:{key}`` taken by a Lua script
      (atomic), the same rule as :class:`TokenBucket`.

    ``life_ms``: how long a connection of a process that stopped refreshing keeps counting; ``control``: the client
    :meth:`refresh` uses (the renewals'), ``redis`` by default."""

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


class SharedMovingWindows:
    """:class:`MovingWindows`' awaited methods counted in ``redis`` over every process: events per key within
    ``window_s`` seconds (whole seconds), on the ``limits`` library's moving window (a Redis list of times per key
    and limit, ``ct:fail/{key}/{limit}/{window_s}/second``). Unlike :class:`MovingWindows`, a key holds at most
    ``limit`` events: a failure noted past it (requests checked at once, failed together) is not counted."""

    def __init__(self, redis: Redis, window_s: float) -> None:
        self.window_s = window_s
        self.storage = RedisStorage("async+redis://", implementation="redispy", key_prefix="ct",
                                    connection_pool=redis.connection_pool)  # type: ignore[arg-type]
        self.windows = MovingWindowRateLimiter(self.storage)
        self._items: dict[int, RateLimitItem] = {}

    def _item(self, limit: int) -> RateLimitItem:
        item = self._items.get(limit)
        if item is None:
            item = self._items[limit] = RateLimitItemPerSecond(limit, int(self.window_s), namespace="fail")
        return item

    async def check(self, key: str, limit: int) -> int:
        """Seconds until ``key`` may try again: 0 with fewer than ``limit`` events in the last ``window_s``."""
        stats = await self.windows.get_window_stats(self._item(limit), key)
        if stats.remaining > 0:
            return 0
        return max(1, int(stats.reset_time - time.time() + 0.999))

    async def note_failure(self, key: str, limit: int) -> None:
        """Count one event for ``key`` (not past ``limit``)."""
        await self.windows.hit(self._item(limit), key)

    async def forget(self, key: str, limit: int) -> None:
        """Forget ``key``'s events (a successful sign-in)."""
        await self.windows.clear(self._item(limit), key)
