"""What the table and storage tests share (``tests/test_table_*.py``, ``tests/test_storage_*.py``): table rows,
live tables on a store, a seat's play through the owner's queue, what a connection was sent, a started Nerts
table."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from cardtable.games import get_game
from cardtable.server.core.settings import Settings
from cardtable.server.storage.rows import SeatRow, TableRow
from cardtable.server.storage.store import Store
from cardtable.server.table.actions import QueuedAction
from cardtable.server.table.connections import Connection
from cardtable.server.table.owner import Table

RECORDS = Path(__file__).parent / "records"
"""The record files the tests read (``tests/records/``)."""


def table_row(tid: str, *, status: str = "open", created: str = "2026-01-01T00:00:00Z",
              seats: list[SeatRow] | None = None, game: str = "nerts") -> TableRow:
    """A table's row for the store: two seats (both open unless ``seats``), seed 7, created ``created``."""
    return TableRow(id=tid, game=game, options={"players": 2}, status=status, seed=7, grace_seconds=30.0,
                    created=created, seats=seats or [SeatRow(0, "open"), SeatRow(1, "open")])


async def live_table(store: Store, tid: str, *, status: str = "open", settings: Settings | None = None,
                     seats: list[SeatRow] | None = None, game: str = "nerts") -> Table:
    """A :class:`Table` of :func:`table_row`, stored in ``store``; its owner is not started."""
    row = table_row(tid, status=status, seats=seats, game=game)
    await store.insert_table(row)
    return Table(row, get_game(game), store, settings or Settings(hand_pause_s=60))


async def play(table: Table, seat: int, action: dict[str, Any], ms: int | None = None,
               connection: Connection | None = None) -> tuple[bool, Any]:
    """Queue ``seat``'s ``action`` (stamped ``ms``, from ``connection``, seq 7) on the owner's queue and wait for its
    answer: ``(True, version)`` or ``(False, reason)``."""
    future: asyncio.Future[tuple[bool, Any]] = asyncio.get_running_loop().create_future()
    table.queue.put_nowait(QueuedAction(seat, action, future=future, ms=ms, connection=connection, seq=7))
    return await future


async def play_first_legal(table: Table, seat: int = 0) -> Any:
    """Submit ``seat``'s first legal action as a bot does (``submit_action``: through the fairness gate) and wait
    for the table's answer: ``(True, version)`` or ``(False, reason)``."""
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    state = table.state
    assert state is not None
    table.submit_action(QueuedAction(seat, state.legal_actions(seat)[0], future=future))
    return await future


def messages_of(connection: Connection) -> list[dict[str, Any]]:
    """What ``connection`` was sent and has not been read yet, decoded (taken from its outbox)."""
    out = []
    while not connection.outbox.empty():
        item = connection.outbox.get_nowait()
        if isinstance(item, str):
            out.append(json.loads(item))
    return out


async def started_nerts(store: Store, tid: str) -> tuple[Table, Connection]:
    """A two-person Nerts table in play, its owner running, its first hand dealt, with no fairness gate (actions
    in arrival order); returns the table and a connection attached to seat 0."""
    table = await live_table(store, tid, seats=[SeatRow(0, "person", "ana", None, "h0"),
                                               SeatRow(1, "person", "bo", None, "h1")])
    table.gate = None  # arrival order: this test is about stamps, not races
    table.start_owner()
    connection = Connection()

    async def start() -> None:
        table.attach(connection, 0)
        table.row.status = "playing"
        await table._start_hand()

    await table.submit_call(start)
    return table, connection

