"""The step between two hands of a match (``docs/protocol.md``, "Between hands"): the next hand starts when every
person connected at the table has pressed Ready, or when the table's countdown runs out for those who have not.

Bots are always ready; a person with no connection (away, or played by a stand-in) holds nobody up. With nobody
to wait for (a table of bots, or every person away) the next hand starts after the server's ``hand_pause_s``, as
before the ready step existed. Who is ready lives in the owner's memory only: it is not part of the record, and a
table rebuilt between hands (a restart, another process taking it) opens a fresh step.

:class:`HandOver` is a part of :class:`~cardtable.server.table.owner.Table`; it declares the table's attributes it
reads. Everything here runs on the table's owner.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cardtable.engine import Match
from cardtable.server.core.settings import Settings
from cardtable.server.storage.rows import TableRow
from cardtable.server.table.seats import SeatState

MAX_READY_SECONDS = 600.0
"""Longest countdown between hands a table may set (``ready_seconds``), in seconds."""


class HandOver:
    """The ready step of a live table between two hands: who pressed Ready, and when the next hand starts."""

    row: TableRow
    settings: Settings
    match: Match
    seats: list[SeatState]
    hand_index: int
    ready: set[int]
    """Seats whose person pressed Ready in the step now open (empty outside it)."""
    next_hand_due: float | None
    """When the next hand starts unless every person is ready first, by the event loop's clock (seconds); ``None``
    outside the step."""
    countdown_due: float | None
    """When the step's countdown runs out (event loop's clock, seconds): :attr:`next_hand_due` is earlier only while
    nobody is waited for."""

    if TYPE_CHECKING:

        @property
        def status(self) -> str: ...

        def broadcast(self, message: dict[str, Any]) -> None: ...

        def submit_call(self, fn: Callable[[], Awaitable[Any]]) -> asyncio.Future[Any]: ...

        def _schedule_next_hand(self, delay: float) -> None: ...

    @property
    def ready_seconds(self) -> float:
        """The table's countdown between hands for people who have not pressed Ready, in seconds: its own
        ``ready_seconds``, else the server's ``default_ready_s``."""
        own = self.row.ready_seconds
        return self.settings.default_ready_s if own is None else own

    def between_hands(self) -> bool:
        """Whether the ready step is open: a hand is over, the match is not, and the next hand has not started."""
        return self.next_hand_due is not None

    def waiting_seats(self) -> list[int]:
        """Seats whose person is connected, played by nobody else, and has not pressed Ready: the people the next
        hand waits for."""
        return [
            seat.row.seat
            for seat in self.seats
            if seat.row.kind == "person"
            and seat.connections
            and seat.standin is None
            and seat.row.seat not in self.ready
        ]

    def ready_seats(self) -> list[int]:
        """Seats that are ready: bot seats, and persons who pressed Ready in this step (a person away is in
        neither this nor :meth:`waiting_seats`)."""
        return [
            seat.row.seat
            for seat in self.seats
            if seat.row.kind == "bot" or (seat.row.kind == "person" and seat.row.seat in self.ready)
        ]

    def open_ready_step(self, restored: bool = False) -> None:
        """Open the step after a hand that did not end the match: nobody has pressed Ready yet; the next hand
        starts in :attr:`ready_seconds` if a person is there to wait for, else in the server's ``hand_pause_s``.
        Tells everyone (a ``next_hand`` message). ``restored``: the table was just rebuilt between hands, nobody is
        connected yet, and the countdown is given to every person still seated (they are reconnecting)."""
        self.ready = set()
        people = any(seat.row.kind == "person" and not seat.row.left for seat in self.seats)
        wait = people if restored else bool(self.waiting_seats())
        if self.row.turn_based:  # nobody is waited for: the next hand is dealt after the pause (turn_clock.py)
            wait = False
        delay = self.ready_seconds if wait else self.settings.hand_pause_s
        self._set_due(delay)
        self.countdown_due = self.next_hand_due
        self.send_ready_state()

    def close_ready_step(self) -> None:
        """Forget the step (the next hand is starting, or the table stops)."""
        self.ready = set()
        self.next_hand_due = self.countdown_due = None

    def press_ready(self, seat: int) -> None:
        """``seat``'s person pressed Ready. Outside the step (the next hand already started: the press crossed it)
        or pressed already, nothing changes; otherwise everyone is told, and the next hand starts at once if
        nobody else is waited for."""
        if not self.between_hands() or seat in self.ready or self.seats[seat].row.kind != "person":
            return
        self.ready.add(seat)
        self.refresh_ready(pressed=True)

    def refresh_ready(self, pressed: bool = False) -> None:
        """Look again at who is waited for after a change during the step (a press, a person connecting, leaving
        or taken over by a stand-in) and tell everyone. Nobody left to wait for: after a press the next hand starts
        at once; after someone went away, within ``hand_pause_s`` (a moment to come back: a reload, a network
        change). Somebody waited for again (back in time, or newly connected): the countdown as it was."""
        due, full = self.next_hand_due, self.countdown_due
        if due is None or full is None:
            return
        now = asyncio.get_running_loop().time()
        if self.waiting_seats():
            if due != full:
                self._set_due(max(0.0, full - now))
                self.next_hand_due = full
        elif pressed:
            self._set_due(0.0)
        elif due > now + self.settings.hand_pause_s:
            self._set_due(self.settings.hand_pause_s)
        self.send_ready_state()

    def ready_state(self) -> dict[str, Any]:
        """The ``next_hand`` message: ``hand`` (the next hand's index), the ``ready`` and ``waiting`` seats,
        ``starts_at`` (Unix time in ms, by the server's clock) and ``starts_in_ms`` (from now), as ``TABLE``'s."""
        loop_now = asyncio.get_running_loop().time()
        left_s = max(0.0, (self.next_hand_due or loop_now) - loop_now)
        return {
            "type": "next_hand",
            "hand": self.hand_index + 1,
            "ready": self.ready_seats(),
            "waiting": self.waiting_seats(),
            "starts_at": int((time.time() + left_s) * 1000),
            "starts_in_ms": int(left_s * 1000),
        }

    def send_ready_state(self) -> None:
        """Broadcast :meth:`ready_state` while the step is open."""
        if self.between_hands():
            self.broadcast(self.ready_state())

    def presence_changed(self) -> None:
        """A person connected, left or was taken over during the step: queue :meth:`refresh_ready` on the owner,
        after what is being done now (a new connection's ``welcome`` and snapshot go out first)."""
        if self.between_hands():
            self.submit_call(self._refresh_later)

    async def _refresh_later(self) -> None:
        self.refresh_ready()

    def _set_due(self, delay: float) -> None:
        self.next_hand_due = asyncio.get_running_loop().time() + delay
        self._schedule_next_hand(delay)
