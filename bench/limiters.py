"""The per-message check of a WebSocket connection (``server/core/limits.py``'s :class:`TokenBucket`, 30 messages a
second, a burst of 60) against the ``limits`` library's memory storage strategies at the same limit (60 per 2 s, a
window per connection), in calls per second of this process.

Two paths, each at the real limit: *allowed*, every call within the burst (the connections are cycled so that none
passes 60 calls), and *refused*, one connection past its burst (every call after its first 60 refused). The
``limits`` strategies are called as the server would call them (``hit(item, connection id)``): ``moving`` (a log of
times: the closest rule to a token bucket), ``fixed`` and ``sliding`` (a counter per window), and the moving window
of its asyncio API (``aio-moving``). Prints calls per second and how many times slower than the token bucket each is.

    nice -n 10 .venv/bin/python bench/limiters.py --calls 200000 --repeat 3

Each figure is the best of ``--repeat`` runs (the least disturbed by other work on the machine).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable

from limits import RateLimitItemPerSecond
from limits.aio.storage import MemoryStorage as AsyncMemoryStorage
from limits.aio.strategies import MovingWindowRateLimiter as AsyncMovingWindow
from limits.storage import MemoryStorage
from limits.strategies import (
    FixedWindowRateLimiter,
    MovingWindowRateLimiter,
    RateLimiter,
    SlidingWindowCounterRateLimiter,
)

from cardtable.server.core.limits import TokenBucket
from cardtable.server.core.messages import RATE_BURST, RATE_PER_SECOND

BURST = int(RATE_BURST)
ITEM = RateLimitItemPerSecond(BURST, int(RATE_BURST / RATE_PER_SECOND))
"""The same burst and long-run rate as the token bucket: 60 per 2 seconds."""


def keys_for(calls: int, refused: bool) -> list[str]:
    """The connection id of each call: cycled so that none passes the burst, or one id for every call."""
    if refused:
        return ["c0"] * calls
    count = calls // BURST + 1
    return [f"c{i % count}" for i in range(calls)]


def time_buckets(keys: list[str]) -> tuple[float, int]:
    """Seconds for ``TokenBucket.allow`` on each key's bucket, and how many were allowed."""
    buckets = {key: TokenBucket() for key in set(keys)}
    checks = [buckets[key].allow for key in keys]
    started = time.perf_counter()
    allowed = sum(1 for check in checks if check())
    return time.perf_counter() - started, allowed


def time_strategy(make: Callable[[MemoryStorage], RateLimiter], keys: list[str]) -> tuple[float, int]:
    """Seconds for ``hit(ITEM, key)`` of a fresh memory storage's strategy ``make``, and how many were allowed."""
    storage = MemoryStorage()
    strategy = make(storage)
    hit = strategy.hit
    started = time.perf_counter()
    allowed = sum(1 for key in keys if hit(ITEM, key))
    elapsed = time.perf_counter() - started
    storage.reset()
    return elapsed, allowed


def time_async_moving(keys: list[str]) -> tuple[float, int]:
    """Seconds for the asyncio moving window's awaited ``hit(ITEM, key)``, and how many were allowed."""

    async def run() -> tuple[float, int]:
        storage = AsyncMemoryStorage()
        hit = AsyncMovingWindow(storage).hit
        started = time.perf_counter()
        allowed = 0
        for key in keys:
            allowed += await hit(ITEM, key)
        elapsed = time.perf_counter() - started
        await storage.reset()
        return elapsed, allowed

    return asyncio.run(run())


def main() -> None:
    """Parse the arguments, time each limiter on both paths, print calls per second and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200_000, help="checks per run (default 200000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure, the best kept (default 3)")
    args = parser.parse_args()
    runners: dict[str, Callable[[list[str]], tuple[float, int]]] = {
        "token bucket (ours)": time_buckets,
        "limits moving": lambda keys: time_strategy(MovingWindowRateLimiter, keys),
        "limits fixed": lambda keys: time_strategy(FixedWindowRateLimiter, keys),
        "limits sliding": lambda keys: time_strategy(SlidingWindowCounterRateLimiter, keys),
        "limits aio-moving": time_async_moving,
    }
    for path in ("allowed", "refused"):
        keys = keys_for(args.calls, path == "refused")
        print(f"{path}: {args.calls} checks over {len(set(keys))} connection(s), best of {args.repeat}")
        base = 0.0
        for name, runner in runners.items():
            results = [runner(keys) for _ in range(args.repeat)]
            best = min(seconds for seconds, _ in results)
            allowed = results[0][1]
            per_second = args.calls / best
            base = base or per_second
            print(f"  {name:20s} {per_second:12,.0f} calls/s  {base / per_second:6.1f}x  ({allowed} allowed)")


if __name__ == "__main__":
    main()
