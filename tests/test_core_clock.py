"""``server/core/clock.py``: stamps are UTC whatever the local zone."""

from __future__ import annotations

import time

import pytest

from cardtable.server.core.clock import now_iso


def test_times_are_utc_whatever_the_local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import UTC, datetime, timedelta


    monkeypatch.setenv("TZ", "Asia/Seoul")  # UTC+9, no summer time
    time.tzset()
    try:
        stamp = datetime.strptime(now_iso(), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert abs(stamp - datetime.now(UTC)) < timedelta(minutes=5)
    finally:
        monkeypatch.undo()
        time.tzset()
