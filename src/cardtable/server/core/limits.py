"""Per-address limits of one process: open connections per address and token buckets per address
(``docs/deploy.md``, "Limits")."""

from __future__ import annotations

import math
from collections import Counter

from cardtable.server.core.messages import RateLimiter


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


class AddressBuckets:
    """A token bucket per client address (``rate`` requests a second, ``burst`` at once), for requests that cost the
    server far more than the client, such as lobby reads: :meth:`take` counts one and says how long to wait when
    the address has none left. Counted in this process only. Buckets that have refilled are forgotten whenever the
    number held doubles (at least :data:`FORGET_AT`), so memory follows the addresses seen lately."""

    FORGET_AT = 1024

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self.buckets: dict[str, RateLimiter] = {}
        self._forget_at = self.FORGET_AT

    def take(self, address: str) -> int:
        """Count one request from ``address``: 0 if allowed, else whole seconds until one is (at least 1; for
        ``Retry-After``); a refused request takes nothing."""
        bucket = self.buckets.get(address)
        if bucket is None:
            if len(self.buckets) >= self._forget_at:
                self.buckets = {a: b for a, b in self.buckets.items() if not b.full()}
                self._forget_at = max(self.FORGET_AT, 2 * len(self.buckets))
            bucket = self.buckets[address] = RateLimiter(self.rate, self.burst)
        if bucket.allow():
            return 0
        wait = bucket.wait_s()
        return max(1, math.ceil(min(wait, 86400.0)))
