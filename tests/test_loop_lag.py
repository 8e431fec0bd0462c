"""``server/core/loop_lag.py``: the event-loop lag monitor. Its histogram reads quantiles within a bucket's width and
the lags of a window between two readings; the monitor sees a loop held up by a long callback; the server serves
it at ``GET /api/loop-lag`` only when ``loop_lag_interval_ms`` is set."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from cardtable.server.core.loop_lag import BUCKET_RATIO, LagHistogram, LoopLagMonitor
from clients import MakeClient, fast_settings
from polling import until, wait_for


def test_quantiles_are_read_within_one_bucket_of_the_true_value() -> None:
    histogram = LagHistogram()
    lags = [0.2] * 980 + [5.0] * 15 + [40.0] * 5  # ms: the 99th percentile is 5 ms, the largest 40 ms
    for lag in lags:
        histogram.add(lag)
    assert histogram.samples == 1000
    assert 0.2 <= histogram.quantile(0.5) <= 0.2 * BUCKET_RATIO
    assert 5.0 <= histogram.quantile(0.99) <= 5.0 * BUCKET_RATIO
    assert histogram.quantile(1.0) == histogram.max_ms == 40.0
    assert histogram.total_ms == pytest.approx(sum(lags))
    with pytest.raises(ValueError, match="between 0 and 1"):
        histogram.quantile(1.5)


def test_a_window_between_two_readings_holds_only_its_own_lags() -> None:
    histogram = LagHistogram()
    for _ in range(100):
        histogram.add(30.0)  # a bad start, before the window
    before = LagHistogram.from_dict(histogram.to_dict())  # as a reader of GET /api/loop-lag gets it
    for _ in range(200):
        histogram.add(0.5)
    window = LagHistogram.from_dict(histogram.to_dict()).minus(before)
    assert window.samples == 200
    assert 0.5 <= window.quantile(0.99) <= 0.5 * BUCKET_RATIO
    assert window.max_ms <= 0.5 * BUCKET_RATIO  # the 30 ms before the window are not its largest
    with pytest.raises(ValueError, match="bucket counts"):
        LagHistogram.from_dict({**histogram.to_dict(), "counts": [1, 2]})


async def test_the_monitor_sees_a_loop_held_up_by_a_long_callback() -> None:
    with pytest.raises(ValueError, match="more than 0"):
        LoopLagMonitor(0)
    monitor = LoopLagMonitor(0.005)
    monitor.start()
    try:
        await until(lambda: monitor.histogram.samples >= 5, what="the first timers")
        asyncio.get_running_loop().call_soon(time.sleep, 0.08)  # the loop can run nothing else for 80 ms
        await until(lambda: monitor.histogram.max_ms >= 50.0, what="a lag as long as the blocking callback")
        assert monitor.histogram.quantile(0.5) < 50.0  # the other timers were on time
    finally:
        monitor.stop()


def test_the_server_serves_its_loop_lag_only_when_asked_to(make_client: MakeClient, tmp_path: Path) -> None:
    off = make_client(fast_settings())
    assert off.get("/api/loop-lag").status_code == 404
    on = make_client(fast_settings(loop_lag_interval_ms=5), f"sqlite+aiosqlite:///{tmp_path / 'on.db'}")

    def read() -> dict[str, Any] | None:
        body: dict[str, Any] = on.get("/api/loop-lag").json()
        return body if body["samples"] >= 3 else None

    body = wait_for(read, what="three loop-lag samples")
    assert body["interval_ms"] == 5.0
    assert body["p99_ms"] is not None and body["p99_ms"] <= body["max_ms"]
    assert len(body["counts"]) == len(body["edges_ms"]) + 1
