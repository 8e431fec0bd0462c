"""The event loop's lag (``docs/deploy.md``, "The server's tail"): how late a timer on the server's loop fires.

A :class:`LoopLagMonitor` sets a timer every ``interval_s`` and records, in a fixed histogram, how many ms after its
due time each one ran. A timer due at a random moment waits as long as a message arriving then would wait for the
loop, so the histogram is the loop's share of every latency: garbage collections, long callbacks, a burst of work,
the process not being scheduled. It costs one timer callback per interval (100 a second at 10 ms) and a few
integer operations each; it is off unless ``loop_lag_interval_ms`` is set (``cardtable serve``), and is then read
at ``GET /api/loop-lag`` and logged in one line when the server stops. On uvloop (``cardtable serve``) timers
count whole ms, so lags up to about 1 ms are the timer's own.

>>> histogram = LagHistogram()
>>> for ms in (0.1, 0.2, 0.3, 12.0):
...     histogram.add(ms)
>>> histogram.samples, histogram.quantile(0.5) <= 0.25, histogram.quantile(0.99) >= 12.0
(4, True, True)
"""

from __future__ import annotations

import asyncio
import bisect
import math
import time
from typing import Any

BUCKET_RATIO = 1.1
"""Each histogram bucket's upper edge is this many times the last: a quantile is read within 10%."""

SMALLEST_MS = 0.05
"""The first bucket's upper edge in ms: every lag below it is counted there."""

LARGEST_MS = 60_000.0
"""The last finite bucket edge in ms; longer lags go into one more bucket (their largest is kept apart)."""

EDGES_MS: tuple[float, ...] = tuple(
    SMALLEST_MS * BUCKET_RATIO**i for i in range(int(math.log(LARGEST_MS / SMALLEST_MS, BUCKET_RATIO)) + 2)
)
"""Upper edges of the histogram's buckets in ms (geometric, from :data:`SMALLEST_MS` past :data:`LARGEST_MS`)."""


class LagHistogram:
    """Counts of lags (ms) in the buckets of :data:`EDGES_MS`, with their number, sum and largest value.

    :meth:`to_dict` gives what ``GET /api/loop-lag`` serves; :meth:`from_dict` reads it back, and :meth:`minus`
    gives the lags between two readings (what a benchmark's measuring window saw)."""

    __slots__ = ("counts", "max_ms", "samples", "total_ms")

    def __init__(self) -> None:
        self.counts = [0] * (len(EDGES_MS) + 1)
        """Samples per bucket: ``counts[i]`` lags of at most ``EDGES_MS[i]`` ms (above the bucket before); the last,
        longer than every edge."""
        self.samples = 0
        """Lags counted."""
        self.total_ms = 0.0
        """Their sum in ms."""
        self.max_ms = 0.0
        """The largest in ms."""

    def add(self, lag_ms: float) -> None:
        """Count one lag of ``lag_ms`` ms (negative counts as 0)."""
        lag_ms = max(0.0, lag_ms)
        self.counts[bisect.bisect_left(EDGES_MS, lag_ms)] += 1
        self.samples += 1
        self.total_ms += lag_ms
        if lag_ms > self.max_ms:
            self.max_ms = lag_ms

    def quantile(self, q: float) -> float:
        """The lag in ms that a share ``q`` (0 to 1) of the samples do not exceed, read as its bucket's upper edge
        (at most :data:`BUCKET_RATIO` times too high, and never above :attr:`max_ms`); ``nan`` without samples.
        ``ValueError`` for ``q`` outside 0..1."""
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantile must be between 0 and 1, not {q}")
        if not self.samples:
            return math.nan
        rank = max(1, math.ceil(q * self.samples))
        seen = 0
        for i, count in enumerate(self.counts):
            seen += count
            if seen >= rank:
                return min(EDGES_MS[i], self.max_ms) if i < len(EDGES_MS) else self.max_ms
        return self.max_ms

    def to_dict(self) -> dict[str, Any]:
        """``{"samples", "total_ms", "max_ms", "counts"}`` (``counts``: per bucket of :data:`EDGES_MS`, then the
        bucket past the last edge), with ``p50_ms``, ``p99_ms`` and ``edges_ms`` for a reader without this module."""
        return {
            "samples": self.samples,
            "total_ms": self.total_ms,
            "max_ms": self.max_ms,
            "p50_ms": _finite(self.quantile(0.5)),
            "p99_ms": _finite(self.quantile(0.99)),
            "edges_ms": list(EDGES_MS),
            "counts": list(self.counts),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LagHistogram:
        """The histogram of a :meth:`to_dict`; ``ValueError`` when its ``counts`` do not fit :data:`EDGES_MS`."""
        counts = [int(c) for c in data["counts"]]
        if len(counts) != len(EDGES_MS) + 1:
            raise ValueError(f"expected {len(EDGES_MS) + 1} bucket counts, not {len(counts)}")
        histogram = cls()
        histogram.counts = counts
        histogram.samples = int(data["samples"])
        histogram.total_ms = float(data["total_ms"])
        histogram.max_ms = float(data["max_ms"])
        return histogram

    def minus(self, earlier: LagHistogram) -> LagHistogram:
        """The lags counted since ``earlier`` (a reading of the same histogram). Its :attr:`max_ms` is the upper
        edge of its highest bucket with a sample (capped by this one's largest): the largest of the span is not
        kept apart."""
        out = LagHistogram()
        out.counts = [a - b for a, b in zip(self.counts, earlier.counts, strict=True)]
        out.samples = self.samples - earlier.samples
        out.total_ms = self.total_ms - earlier.total_ms
        top = max((i for i, c in enumerate(out.counts) if c > 0), default=None)
        if top is not None:
            out.max_ms = self.max_ms if top >= len(EDGES_MS) else min(EDGES_MS[top], self.max_ms)
        return out

    def summary(self) -> str:
        """One line: samples, p50, p99 and largest lag in ms."""
        return (
            f"{self.samples} samples, p50 {self.quantile(0.5):.2f} ms, p99 {self.quantile(0.99):.2f} ms, "
            f"max {self.max_ms:.2f} ms"
        )


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


class LoopLagMonitor:
    """A timer every ``interval_s`` seconds on the running loop; how late each fires (ms, by ``time.perf_counter``,
    not the loop's clock, whose resolution is 1 ms on uvloop) goes into :attr:`histogram`. ``ValueError`` for an
    interval that is not positive. :meth:`start` on the loop, :meth:`stop` when done."""

    def __init__(self, interval_s: float) -> None:
        if not interval_s > 0:
            raise ValueError(f"loop lag interval must be more than 0 seconds, not {interval_s}")
        self.interval_s = interval_s
        self.histogram = LagHistogram()
        """Every lag measured since :meth:`start`."""
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0

    def start(self) -> None:
        """Start timing (on the running loop); again after :meth:`stop` goes on adding to the same histogram."""
        if self._handle is None:
            self._schedule(time.perf_counter())

    def stop(self) -> None:
        """Stop the timer."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _schedule(self, now: float) -> None:
        self._due = now + self.interval_s
        self._handle = asyncio.get_running_loop().call_later(self.interval_s, self._tick)

    def _tick(self) -> None:
        now = time.perf_counter()
        self.histogram.add((now - self._due) * 1000.0)
        self._schedule(now)
