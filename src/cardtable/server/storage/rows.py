"""The stored shapes of a table: its seats, hands and table rows as the store reads and writes them, and the
``cardtable/1`` record of a stored table (:func:`record_of`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cardtable import records


@dataclass(slots=True)
class SeatRow:
    """A stored seat: ``kind`` is ``open``, ``person`` or ``bot``; ``left`` marks a person who left after the start."""

    seat: int
    kind: str
    name: str | None = None
    bot: str | None = None
    token_hash: str | None = None
    left: bool = False


@dataclass(slots=True)
class HandRow:
    """A stored hand: its deal (cards written out) and its actions as ``(seat, ms, action)``; ``times`` (as many as
    the actions, when loaded) says when each was made (ISO 8601 UTC), at turn-based tables, else ``None``."""

    deal: dict[str, Any]
    actions: list[tuple[int | None, int, dict[str, Any]]] = field(default_factory=list)
    times: list[str | None] = field(default_factory=list)


@dataclass(slots=True)
class TurnBank:
    """A seat's time bank at a turn-based table (``server/table/turn_clock.py``): ``bank_ms`` milliseconds it held
    when its current or last turn began, ``deadline_ms`` (Unix milliseconds) when that runs out, only while it is
    the seat's turn, and its ``timeouts`` this match."""

    seat: int
    bank_ms: int
    deadline_ms: int | None = None
    timeouts: int = 0


@dataclass(slots=True)
class TableRow:
    """A stored table; ``options`` are the ones the creator set, ``hands`` filled only by the loaders that say so."""

    id: str
    game: str
    options: dict[str, Any]
    status: str
    seed: int
    grace_seconds: float
    created: str
    finished: str | None = None
    hands_played: int | None = None
    totals: list[int] | None = None
    winners: list[int] | None = None
    seed_chosen: bool = False
    """The creator chose ``seed``: the deals follow from it alone (``table.hand_seed``) and the table is unrated."""
    ready_seconds: float | None = None
    """Seconds the next hand waits for people who have not pressed Ready (``server/table/handover.py``); ``None``:
    the server's ``default_ready_s``."""
    daily: str | None = None
    """The day (ISO date, UTC) of the daily deal played at this table (``server/lobby/daily.py``; private while that
    day lasts, ``server/lobby/daily_private.py``); ``None`` for every other table."""
    pace: str = "real-time"
    """``real-time``, or ``turn-based``: each seat moves when it can, against its time bank (issue 29)."""
    turn_clock: dict[str, int] | None = None
    """A turn-based table's clock, ``{"start_s", "per_move_s"}`` in seconds; ``None`` for a real-time table."""
    seats: list[SeatRow] = field(default_factory=list)
    hands: list[HandRow] = field(default_factory=list)
    turn_banks: list[TurnBank] = field(default_factory=list)
    """A turn-based table's seats' banks, loaded with the hands (``Store.load_tables(with_hands=True)``)."""

    @property
    def turn_based(self) -> bool:
        """Whether the table is turn-based (``pace``)."""
        return self.pace == "turn-based"


def record_of(row: TableRow) -> records.Record:
    """The ``cardtable/1`` record of a stored table (loaded with its hands)."""
    seats = [records.Seat(name=s.name or f"seat-{s.seat}", bot=s.bot if s.kind == "bot" else None)
             for s in row.seats]
    record = records.new_record(row.game, seats, row.options)
    record.hands = [
        records.HandRecord(
            deal=hand.deal,
            actions=[records.ActionRecord(seat=seat, ms=ms, action=action,
                                          at=hand.times[i] if i < len(hand.times) else None)
                     for i, (seat, ms, action) in enumerate(hand.actions)],
        )
        for hand in row.hands
    ]
    return record
