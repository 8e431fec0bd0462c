"""A seat at a live table (:class:`SeatState`): its stored row, its connections, and who plays for its absent
person."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from cardtable.server.storage.rows import SeatRow
from cardtable.server.table.connections import Connection


@dataclass(slots=True)
class SeatState:
    """A seat at a live table: the stored :class:`SeatRow` plus who is connected and who plays for an absent person."""

    row: SeatRow
    connections: set[Connection] = field(default_factory=set)
    standin: str | None = None
    away_timer: asyncio.TimerHandle | None = None
    replaceable: bool = False
    """A bot seat a joining person may take before the start (Play now tables)."""
    account: tuple[str, str] | None = None
    """``(token hash, account name)`` when the seat was tied to an account (``server/players/accounts.py``); it counts only
    while the seat's token hash is that one, so a seat left and taken again is nobody's account."""
