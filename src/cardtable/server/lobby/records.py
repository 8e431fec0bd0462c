"""What the lobby shows of tables: ``TABLE`` of a live or stored table, the pages of the lobby's lists (live tables
here, or every process's from the database), and the record and replay of a finished table.

:class:`Records` is a part of :class:`~cardtable.server.lobby.manager.Manager`; it declares the attributes it
reads.
"""

from __future__ import annotations

from typing import Any

from cardtable import records
from cardtable.engine import HandState
from cardtable.games import get_game
from cardtable.replay import fold
from cardtable.server.cluster.member import Cluster
from cardtable.server.core.clock import Clock
from cardtable.server.core.errors import TableError
from cardtable.server.core.settings import Settings
from cardtable.server.lobby.daily_private import private_on
from cardtable.server.lobby.listing import LiveLists
from cardtable.server.storage.rows import TableRow, record_of
from cardtable.server.storage.store import Store
from cardtable.server.table.owner import Table

ENDED = ("finished", "abandoned")
"""Statuses of tables whose record is published; ``abandoned``: in play with no person connected too long."""


def _table_from_row(row: TableRow) -> dict[str, Any]:
    """``TABLE`` for a finished table read from the database (no live owner)."""
    info = get_game(row.game)
    options = {spec.name: spec.default for spec in info.option_specs}
    options.update(row.options)
    seats: list[dict[str, Any]] = []
    for seat in row.seats:
        if seat.kind == "open":
            seats.append({"seat": seat.seat, "kind": "open"})
        elif seat.kind == "bot":
            seats.append({"seat": seat.seat, "kind": "bot", "bot": seat.bot, "name": seat.name})
        else:
            seats.append({"seat": seat.seat, "kind": "person", "name": seat.name, "connected": False,
                          "standin": None})
    return {
        "id": row.id, "game": row.game, "options": options, "status": row.status, "seats": seats,
        "hand": max((row.hands_played or 1) - 1, 0), "totals": row.totals or [0] * len(row.seats),
        "winners": row.winners, "created": row.created, "rated": not row.seed_chosen, "pace": row.pace,
        "turn_clock": row.turn_clock,
    }


class Records:
    """The lobby's reads of tables."""

    store: Store
    settings: Settings
    tables: dict[str, Table]
    cluster: Cluster | None
    listing: LiveLists
    clock: Clock

    async def table_dict(self, table_id: str) -> dict[str, Any]:
        """``TABLE`` for a live or finished table; ``TableError`` 404 if unknown."""
        table = self.tables.get(table_id)
        if table is not None:
            return table.to_dict()
        rows = await self.store.load_tables(table_id=table_id)
        if rows and self.cluster is not None and rows[0].status in ("open", "playing"):
            published = (await self.cluster.lobby([table_id])).get(table_id)
            if published is not None:
                return published
        if not rows:
            raise TableError(404, "table.not_found", f"no table {table_id!r}", {"table": table_id})
        return _table_from_row(rows[0])

    def _list(self, table: Table) -> None:
        """Put ``table`` in the lobby's list of its status (one process only; several list from the database); a
        daily table while its day lasts is never listed (``daily_private.py``)."""
        if self.cluster is None and not private_on(table.row.daily, self.clock.today()):
            self.listing.add(table)

    async def list_tables(self, status: str, limit: int | None = None,
                          cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """One page of ``TABLE``s with ``status`` and the next page's cursor (``None``: no more).

        ``open`` and ``playing``: live tables, oldest first; ``finished``: finished and abandoned tables from the
        database, newest first. ``limit`` defaults to ``page_size`` and is capped at ``max_page_size``; ``cursor``
        is the previous page's (``created~id`` or ``finished~id``); ``TableError`` 422 for a malformed one. The
        daily deal's tables are left out while their day lasts (``daily_private.py``)."""
        size = min(limit or self.settings.page_size, self.settings.max_page_size)
        after: tuple[str, str] | None = None
        if cursor:
            stamp, sep, last_id = cursor.partition("~")
            if not sep or not last_id:
                raise TableError(422, "request.invalid", "cursor: not a cursor this server gave (X-Next-Cursor)",
                                 {"field": "cursor", "detail": "not a cursor this server gave"})
            after = (stamp, last_id)
        if status == "finished":
            rows = await self.store.ended_tables(ENDED, after, size + 1, self.clock.today().isoformat())
            more = len(rows) > size
            rows = rows[:size]
            tables = [_table_from_row(r) for r in rows]
            last = rows[-1] if rows else None
            return tables, f"{last.finished}~{last.id}" if more and last is not None else None
        if self.cluster is not None:  # every process's tables, from the database: one page of the index
            chosen = await self.store.load_tables(statuses=(status,), after=after, limit=size + 1,
                                                  public_on=self.clock.today().isoformat())
            more = len(chosen) > size
            chosen = chosen[:size]
            shown = await self.stored_dicts(chosen)
            return [shown[r.id] for r in chosen], f"{chosen[-1].created}~{chosen[-1].id}" if more else None
        page = self.listing.page(status, after, size + 1, self.tables)
        more = len(page) > size
        page = page[:size]
        return [t.to_dict() for t in page], f"{page[-1].row.created}~{page[-1].id}" if more else None

    async def stored_dicts(self, rows: list[TableRow]) -> dict[str, dict[str, Any]]:
        """``TABLE`` of each stored table of ``rows``, by id: a table played here as it is now, one played by
        another process as its owner last published it (one Redis read for all, ``Cluster.lobby``), else as
        stored."""
        published = {} if self.cluster is None else await self.cluster.lobby(
            [r.id for r in rows if r.id not in self.tables])
        return {r.id: self.tables[r.id].to_dict() if r.id in self.tables
                else published.get(r.id) or _table_from_row(r) for r in rows}

    async def record(self, table_id: str) -> records.Record:
        """The record of a finished table; ``TableError`` 404 if unknown, 409 while it is open or in play."""
        return record_of(await self._ended_row(table_id))

    async def _ended_row(self, table_id: str) -> TableRow:
        """The stored row, with its hands, of a finished table; ``TableError`` as :meth:`record`."""
        rows = await self.store.load_tables(table_id=table_id, with_hands=True)
        if not rows:
            raise TableError(404, "table.not_found", f"no table {table_id!r}", {"table": table_id})
        if rows[0].status not in ENDED:
            raise TableError(409, "table.not_finished", "the game is not finished: its record is published at the end")
        return rows[0]

    async def replay(self, table_id: str) -> dict[str, Any]:
        """``{"record": RECORD, "steps": [...], "hands": [{"scores": [...], "ended": ...}], "totals": [...]}`` for a
        finished table (``docs/protocol.md``, replay): one step per hand start and per action, then each hand's
        scores (points per seat) and the match totals, as ``cardtable replay --json`` gives them. Each step of a
        turn-based table also says ``at``, when its action was made (ISO 8601 UTC; ``None`` for a hand's start or
        an action stored without a time)."""
        row = await self._ended_row(table_id)
        record = record_of(row)
        steps: list[dict[str, Any]] = []
        anemone = record.game == "anemone"

        def step(h: int, index: int | None, state: HandState) -> None:
            entry = None if index is None else record.hands[h].actions[index]
            hands = None
            if anemone:
                hands = [list(state.view(s).get("hand") or []) for s in range(state.players)]
            steps.append({"hand": h, "index": index, "seat": None if entry is None else entry.seat,
                          "action": None if entry is None else entry.action, "view": state.view(None),
                          "hands": hands})
            if row.turn_based:
                steps[-1]["at"] = None if entry is None else entry.at

        summary = fold(record, on_step=step).to_dict()
        return {"record": record.to_dict(), "steps": steps, "hands": summary["hands"], "totals": summary["totals"]}
