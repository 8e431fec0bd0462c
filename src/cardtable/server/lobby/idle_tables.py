"""Turn-based tables that cost nothing while they wait (issue 29, ``docs/architecture.md``, "Turn-based tables").

A turn-based table in play whose person to move still has time (*waiting*, ``Table.waiting``) needs nothing in
memory: after ``turn_idle_s`` with nobody connected it is let go (its owner stopped; with several processes its
lease released), and it is rebuilt from its record and its stored banks when it is needed again: a connection or
a lobby operation names it (:meth:`IdleTables.load_waiting`), or its deadline falls due (:meth:`sweep_turns`; with
several processes the ownership sweep takes it, ``Store.live_table_ids``). An open turn-based table nobody is
connected to closes after its clock's ``start_s``; a table in play is never abandoned for nobody being there: its
clock and stand-ins finish it.

:class:`IdleTables` is a part of :class:`~cardtable.server.lobby.manager.Manager`; it declares the attributes it
reads.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from cardtable.server.cluster.member import Cluster
from cardtable.server.core.clock import unix_ms
from cardtable.server.core.settings import Settings
from cardtable.server.storage.rows import TableRow
from cardtable.server.storage.store import Store
from cardtable.server.table.owner import Table

log = logging.getLogger("cardtable.server.lobby.idle_tables")

LOAD_CHUNK = 200
"""Tables loaded from the database per query when the server starts."""


class IdleTables:
    """Letting waiting turn-based tables go, and loading them again."""

    store: Store
    settings: Settings
    tables: dict[str, Table]
    cluster: Cluster | None
    _loading: dict[str, asyncio.Future[Table | None]]

    if TYPE_CHECKING:
        def restore(self, row: TableRow) -> Table | None: ...

        async def _let_go(self, table: Table) -> None: ...

        async def _end(self, table: Table, status: str) -> None: ...

    async def restore_active(self) -> int:
        """Rebuild every table open or in play but the waiting turn-based ones (``Store.live_table_ids``), a chunk
        of :data:`LOAD_CHUNK` per query; returns how many were rebuilt (one process, at the start)."""
        ids = await self.store.live_table_ids(unix_ms())
        restored = 0
        for start in range(0, len(ids), LOAD_CHUNK):
            for row in await self.store.load_tables(table_ids=ids[start:start + LOAD_CHUNK], with_hands=True):
                if row.status in ("open", "playing") and row.id not in self.tables:
                    restored += self.restore(row) is not None
        return restored

    async def load_waiting(self, table_id: str) -> Table | None:
        """The table ``table_id`` live here, rebuilt from the database if it is a turn-based table that was let go
        (one process: with several, ``Cluster.locate`` takes it); ``None`` when it is not live anywhere. Two
        requests for the same table at once load it once."""
        table = self.tables.get(table_id)
        if table is not None or self.cluster is not None:
            return table
        pending = self._loading.get(table_id)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Table | None] = asyncio.get_running_loop().create_future()
        self._loading[table_id] = future
        try:
            rows = await self.store.load_tables(table_id=table_id, statuses=("open", "playing"), with_hands=True)
            found = self.tables.get(table_id)
            if found is None and rows and rows[0].turn_based:
                found = self.restore(rows[0])
                if found is not None:
                    log.info("table %s: loaded again", table_id)
            future.set_result(found)
            return found
        except Exception as error:
            future.set_exception(error)
            raise
        finally:
            del self._loading[table_id]
            if future.done() and not future.cancelled():
                future.exception()  # retrieved: nobody else may be waiting

    async def sweep_turns(self, now: float) -> None:
        """The turn-based part of the expiry sweep (``now``: the monotonic clock): waiting tables with nobody
        connected for ``turn_idle_s`` are let go; open ones nobody came to for their ``start_s`` are closed; one
        process loads the tables whose deadline fell due meanwhile (their owner moves for the seat at once)."""
        for table in list(self.tables.values()):
            if not table.row.turn_based or table.broken or table.all_connections():
                continue
            quiet = now - table.last_presence
            if table.status == "playing" and table.waiting() and quiet > self.settings.turn_idle_s:
                await self._let_go(table)
            elif table.status == "open" and quiet > table.turn_start_ms / 1000.0:
                await self._end(table, "closed")
        if self.cluster is None:
            for table_id in await self.store.due_turn_tables(unix_ms()):
                if table_id not in self.tables:
                    await self.load_waiting(table_id)

