"""The end of a live table's match: finished (every hand played), or ended early by the expiry sweep (``closed``:
an open table nobody came to; ``abandoned``: a table in play no person came back to). The results and ratings are
recorded (``match_results.py``) and the turn-based clock's deadline is cleared.

:class:`Ending` is a part of :class:`~cardtable.server.table.owner.Table`; it declares the table's attributes it
reads. Everything here runs on the table's owner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cardtable.engine import Match
from cardtable.server.core.clock import now_iso
from cardtable.server.storage.rows import TableRow
from cardtable.server.storage.store import Store
from cardtable.server.table.match_results import record_finished
from cardtable.server.table.seats import SeatState


class Ending:
    """Ending a live table's match."""

    id: str
    row: TableRow
    store: Store
    match: Match
    seats: list[SeatState]
    hand_index: int
    moved: set[int]

    if TYPE_CHECKING:
        @property
        def game(self) -> str: ...

        @property
        def status(self) -> str: ...

        def timed_out_seats(self) -> set[int]: ...

        def announce(self) -> None: ...

        def broadcast(self, message: dict[str, Any]) -> None: ...

        def to_dict(self) -> dict[str, Any]: ...

        def _after_change(self) -> None: ...

    async def _store_end(self, status: str, winners: list[int] | None) -> None:
        """Store the match's end as ``status`` (``finished``, ``abandoned``): now, its totals so far, ``winners``."""
        self.row.status = status
        self.row.finished = now_iso()
        self.row.totals = list(self.match.totals)
        self.row.winners = winners
        self.row.hands_played = self.hand_index + 1
        await self.store.update_status(self.id, status, finished=self.row.finished,
                                       hands_played=self.row.hands_played, totals=self.row.totals, winners=winners)

    async def _finish_match(self) -> None:
        await self._store_end("finished", self.match.winners())
        for seat in self.seats:
            if seat.away_timer is not None:
                seat.away_timer.cancel()
                seat.away_timer = None
        self.announce()
        self._after_change()
        await record_finished(self)

    async def end(self, status: str) -> None:
        """End the table early (the expiry sweep, on the owner): ``closed`` for an open table nobody came to,
        ``abandoned`` for a table in play that no person came back to. The record so far stays; an abandoned
        table is stored with its totals so far and no winners, and is published like a finished one; its results
        are recorded as a finished match's, every person in it counted absent (``results.py``)."""
        if status == "abandoned":
            await self._store_end(status, None)
        else:
            self.row.status = status
            await self.store.update_status(self.id, status)
        self.broadcast({"type": "table", "table": self.to_dict()})
        if status == "abandoned":  # rated too: its absent people are last (closing the browser dodges nothing)
            await record_finished(self)

