"""Whose turn it is at the seats a signed-in player holds (issue 29; ``GET /api/me/seats``, ``docs/protocol.md``):
each seat's ``turn``, the time left in its bank, its deadline, and the last trick completed at its table, the seats
where it is the player's turn first (``players/accounts.py``'s ``my_seats`` calls :func:`with_turns`).

A table held in this process's memory says whose turn it is in its ``TABLE`` dict's ``turn``; any other is read
from its stored ``turn_banks`` (the seat with a deadline is to move). The last trick comes from the stored record
(``storage/tricks.py``): only cards played face up, never a card in a hand.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from cardtable.server.core.clock import iso_of_ms, unix_ms
from cardtable.server.storage.rows import TableRow
from cardtable.server.storage.tricks import fold_tricks

if TYPE_CHECKING:
    from cardtable.server.storage.store import Store

log = logging.getLogger("cardtable.server.players.seat_turns")


class LiveTable(Protocol):
    """A table held in memory (``server/table/owner.py``'s ``Table``): its stored row."""

    row: TableRow


def _last_tricks(rows: list[TableRow]) -> dict[str, list[dict[str, Any]] | None]:
    """``{table id: [{"seat", "card"}] of its last completed trick, or None}``; a record that does not fold is
    logged and given ``None``."""
    out: dict[str, list[dict[str, Any]] | None] = {}
    for row in rows:
        try:
            trick = fold_tricks(row).last_trick()
        except ValueError:
            log.exception("table %s: its last trick could not be read from its record", row.id)
            trick = None
        out[row.id] = None if trick is None else [play.to_dict(with_at=False) for play in trick.plays]
    return out


def _stored_turn(row: TableRow, seat: int, now_ms: int) -> tuple[bool, int | None, int | None]:
    """``(turn, bank_ms, deadline_ms)`` of ``seat`` from ``row.turn_banks``; before any bank is stored, its
    bank is the clock's whole ``start_s``."""
    bank = next((b for b in row.turn_banks if b.seat == seat), None)
    if bank is None:
        start_s = (row.turn_clock or {}).get("start_s")
        return False, None if start_s is None else int(start_s) * 1000, None
    if bank.deadline_ms is None:
        return False, bank.bank_ms, None
    return True, max(0, bank.deadline_ms - now_ms), bank.deadline_ms


def _live_turn(turn: Mapping[str, Any], seat: int) -> tuple[bool, int | None, int | None]:
    """``(turn, bank_ms, deadline_ms)`` of ``seat`` from a live ``TABLE`` dict's ``turn``."""
    banks = turn.get("banks_ms") or []
    bank = int(banks[seat]) if seat < len(banks) and banks[seat] is not None else None
    mine = turn.get("seat") == seat
    deadline = turn.get("deadline_ms") if mine else None
    return mine, bank, None if deadline is None else int(deadline)


async def with_turns(
    store: Store,
    entries: list[dict[str, Any]],
    live: Mapping[str, LiveTable],
    stored: Mapping[str, TableRow],
    now_ms: int | None = None,
) -> list[dict[str, Any]]:
    """``entries`` (``[{"table": TABLE, "seat", "token"}]``, the seats ``my_seats`` lists) with, on each:
    ``"turn": bool`` (this seat is to move), ``"bank_ms": int | None`` (milliseconds left in its bank now; for the
    seat to move, until its deadline; ``None`` at a real-time table), ``"deadline": ISO | None`` (only when it is
    this seat's turn) and ``"last_trick": [{"seat", "card"}] | None`` (the last trick completed at the table, in play
    order; ``None`` at a real-time table or before the first trick). Ordered: the seats to move first, by deadline
    then table id, then the rest by table id.

    ``live``: the tables held in this process's memory by id (their ``TABLE`` dict's ``turn`` says whose turn it
    is); ``stored``: the stored rows of the others (their ``turn_banks`` are read again, with the records, in one
    load); ``now_ms``: Unix milliseconds (default: now).
    """
    now = unix_ms() if now_ms is None else now_ms
    turn_based = sorted(
        {
            entry["table"]["id"]
            for entry in entries
            if (row := _row_of(entry["table"]["id"], live, stored)) is not None and row.turn_based
        }
    )
    rows = (
        {row.id: row for row in await store.load_tables(table_ids=turn_based, with_hands=True)}
        if turn_based
        else {}
    )
    last_tricks = await asyncio.to_thread(_last_tricks, list(rows.values())) if rows else {}
    keyed = []
    for entry in entries:
        table_id, seat = entry["table"]["id"], int(entry["seat"])
        row = rows.get(table_id)
        turn: tuple[bool, int | None, int | None] = (False, None, None)
        if row is not None:
            shown = entry["table"].get("turn")
            turn = (
                _live_turn(shown, seat)
                if table_id in live and isinstance(shown, Mapping)
                else _stored_turn(row, seat, now)
            )
        mine, bank_ms, deadline_ms = turn
        entry.update(
            turn=mine,
            bank_ms=bank_ms,
            deadline=None if deadline_ms is None else iso_of_ms(deadline_ms),
            last_trick=last_tricks.get(table_id),
        )
        keyed.append(((0, deadline_ms or 0) if mine else (1, 0), table_id, seat, entry))
    keyed.sort(key=lambda item: item[:3])
    return [item[3] for item in keyed]


def _row_of(table_id: str, live: Mapping[str, LiveTable], stored: Mapping[str, TableRow]) -> TableRow | None:
    table = live.get(table_id)
    return table.row if table is not None else stored.get(table_id)
