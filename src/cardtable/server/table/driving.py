"""What moves a live table besides its people: the hand's clock (its timed actions, ``state.clock_action()``, and
the stall warning before a ``rotate``) and the bots that play its driven seats (bot seats, and the stand-ins of
absent persons), re-read after every change.

:class:`Driving` is a part of :class:`~cardtable.server.table.owner.Table`; it declares the table's attributes it
reads.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from cardtable.engine import Action, HandState
from cardtable.server.core.settings import Settings
from cardtable.server.storage.rows import TableRow
from cardtable.server.table.actions import QueuedAction
from cardtable.server.table.bots import drive_seat
from cardtable.server.table.seats import SeatState


class Driving:
    """The clock's timers and the bot tasks of a live table."""

    id: str
    row: TableRow
    settings: Settings
    seats: list[SeatState]
    state: HandState | None
    version: int
    creator: str | None
    hand_start: float
    changed: asyncio.Event
    _clock_key: tuple[int, Action] | None
    _clock_handles: list[asyncio.TimerHandle]
    _bot_tasks: dict[int, tuple[str, asyncio.Task[None]]]

    if TYPE_CHECKING:
        @property
        def game(self) -> str: ...

        @property
        def status(self) -> str: ...

        def submit_action(self, play: QueuedAction) -> None: ...

        def broadcast(self, message: dict[str, Any]) -> None: ...

        def turn_changed(self) -> None: ...

    def now_ms(self) -> int:
        """Milliseconds since the current hand began, by the server's monotonic clock."""
        return int((time.monotonic() - self.hand_start) * 1000)

    def _after_change(self) -> None:
        self._schedule_clock()
        self._sync_bots()
        self.turn_changed()  # a turn-based table's deadline (turn_clock.py)
        self.changed.set()
        self.changed = asyncio.Event()

    def _schedule_clock(self) -> None:
        state = self.state
        clock = None
        if self.status == "playing" and state is not None and not state.is_over:
            clock = state.clock_action()
        key = None if clock is None else (clock[0], dict(clock[1]))  # a copy: compared by value next time
        if key == self._clock_key:
            return
        for handle in self._clock_handles:
            handle.cancel()
        self._clock_handles = []
        self._clock_key = key
        if clock is None:
            return
        due, action = clock
        loop = asyncio.get_running_loop()
        now = self.now_ms()
        self._clock_handles.append(
            loop.call_later(max(0.0, (due - now) / 1000.0), self.submit_action, QueuedAction(None, dict(action), due=due))
        )
        if action.get("type") == "rotate":
            warn_at = due - 10_000
            self._clock_handles.append(loop.call_later(max(0.0, (warn_at - now) / 1000.0), self._warn, due))

    def _warn(self, due: int) -> None:
        if self._clock_key is not None and self._clock_key[0] == due:
            self.broadcast({"type": "warning", "kind": "stall", "in_ms": max(0, due - self.now_ms())})

    def driven_seats(self) -> dict[int, str]:
        """Seats a bot plays now, and which bot: bot seats, and persons away or gone (their stand-in)."""
        out: dict[int, str] = {}
        for seat in self.seats:
            if seat.row.kind == "bot" and seat.row.bot:
                out[seat.row.seat] = seat.row.bot
            elif seat.row.kind == "person" and seat.standin:
                out[seat.row.seat] = seat.standin
        return out

    def _sync_bots(self) -> None:
        wanted = self.driven_seats() if self.status == "playing" else {}
        for seat, (spec, task) in list(self._bot_tasks.items()):
            if wanted.get(seat) != spec or task.done():
                task.cancel()
                del self._bot_tasks[seat]
        for seat, spec in wanted.items():
            if seat not in self._bot_tasks:
                task = asyncio.create_task(drive_seat(self, seat, spec), name=f"bot-{self.id}-{seat}")
                self._bot_tasks[seat] = (spec, task)
