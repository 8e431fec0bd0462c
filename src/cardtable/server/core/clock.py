"""The server's wall clock (UTC, to the second): the stamps stored in the database and sent to clients, and the
day (:class:`Clock`, injectable: one per app, ``app.state.clock``, so tests can move the date)."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta


def now_iso() -> str:
    """The current UTC time as ``2026-11-22T21:00:00Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def unix_ms() -> int:
    """The current time in Unix milliseconds (turn-based tables' deadlines, ``server/table/turn_clock.py``)."""
    return int(time.time() * 1000)


def iso_of_ms(ms: int) -> str:
    """Unix milliseconds ``ms`` as ``2026-11-22T21:00:00Z`` (UTC, to the second)."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Clock:
    """The server's clock for what follows the calendar (the daily deal changes at 00:00 UTC): the real UTC time
    moved by :attr:`offset` (zero unless a test moves it with :meth:`shift`).

    >>> clock = Clock()
    >>> clock.shift(days=1)
    >>> clock.today() == (datetime.now(UTC) + timedelta(days=1)).date()
    True
    """

    def __init__(self) -> None:
        self.offset = timedelta(0)
        """How far this clock is ahead of the real UTC time."""

    def now(self) -> datetime:
        """The time (UTC, aware)."""
        return datetime.now(UTC) + self.offset

    def today(self) -> date:
        """Today's date in UTC."""
        return self.now().date()

    def shift(self, days: float = 0.0, seconds: float = 0.0) -> None:
        """Move the clock on by ``days`` and ``seconds`` (negative: back)."""
        self.offset += timedelta(days=days, seconds=seconds)
