"""Where a lobby operation on a live table runs: on the table's owner here (:func:`on_owner`), or, with several
server processes, at the process that owns the table (``Cluster.call``, answered there by :meth:`Routing.run_local`).
:meth:`Routing.route` is the one place that decides which.

:class:`Routing` is a part of :class:`~cardtable.server.lobby.manager.Manager`; it declares the attributes it
reads.
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from cardtable.server.cluster.calls import RemoteTable
from cardtable.server.cluster.member import Cluster
from cardtable.server.core.errors import TableError
from cardtable.server.storage.store import Store
from cardtable.server.table.owner import Table
from cardtable.server.table.seat_accounts import bind_seat_here

T = TypeVar("T")


async def on_owner(table: Table, fn: Callable[[], Awaitable[T]]) -> T:
    """Run ``fn`` on ``table``'s owner (:meth:`Table.submit_call`): its result, or what it raised.

    What it raised comes back with the owner's frames in its traceback, and ``Table._run_call``'s frame holds the
    call, whose future holds the exception: one reference cycle per refusal, which kept each connection refused at
    ``hello`` (``connection.seat_limit``: about 10 objects, its WebSocket among them) until a full collection
    (issue 10, point 5). Those frames have returned by now, so their locals are cleared here."""
    try:
        result: T = await table.submit_call(fn)
    except Exception as error:
        traceback.clear_frames(error.__traceback__)
        raise
    return result



def seated(answer: dict[str, Any]) -> tuple[RemoteTable, int, str]:
    """A join's answer from the process that owns the table (``{"table": TABLE, "seat", "token"}``): the table as
    that process shows it, the seat and its token."""
    return RemoteTable(answer["table"]), int(answer.get("seat", -1)), str(answer.get("token", ""))


def shown(answer: dict[str, Any]) -> RemoteTable:
    """The table of an answer from the process that owns it (``{"table": TABLE, ...}``)."""
    return RemoteTable(answer["table"])


class Routing:
    """Running lobby operations where the table is played."""

    store: Store
    tables: dict[str, Table]
    cluster: Cluster | None

    if TYPE_CHECKING:
        def live(self, table_id: str) -> Table: ...

        async def load_waiting(self, table_id: str) -> Table | None: ...

        async def join(self, table_id: str, name: str, seat: int | None) -> tuple[Table | RemoteTable, int, str]: ...

        async def leave(self, table_id: str, token: str) -> Table | RemoteTable: ...

        async def start(self, table_id: str, token: str) -> Table | RemoteTable: ...

        async def _play_join(self, table_id: str, name: str,
                             bot: str | None) -> tuple[Table | RemoteTable, int, str]: ...

        async def again(self, table_id: str, token: str) -> tuple[Table | RemoteTable, int, str]: ...

        async def again_join_here(self, table: Table, name: str, seat: int) -> tuple[Table, int, str]: ...

    async def route(self, table_id: str, method: str, args: dict[str, Any],
                    here: Callable[[Table], Awaitable[T]], there: Callable[[dict[str, Any]], T]) -> T:
        """Run lobby operation ``method`` on the live table ``table_id`` wherever it is played: ``here(table)`` when
        the table is played here (taken here first if nobody owns it, :meth:`_where`); else the owning process
        runs ``method`` with ``args`` (:meth:`run_local` there, through ``Cluster.call``) and ``there`` reads its
        answer (``{"table": TABLE, ...}``). ``TableError`` as the operation, 404 when the table is not live
        anywhere, 503 when it cannot be reached or its owner does not answer."""
        where = await self._where(table_id)
        if isinstance(where, Table):
            return await here(where)
        assert self.cluster is not None
        return there(await self.cluster.call(where, table_id, method, args))

    async def _where(self, table_id: str) -> Table | str:
        """The live table ``table_id`` here or, with a cluster, the process that owns it (the table is taken here
        if nobody owns it); ``TableError`` 404 when it is not live anywhere."""
        table = self.tables.get(table_id)
        if table is None and self.cluster is None:  # a waiting turn-based table let go (idle_tables.py)
            table = await self.load_waiting(table_id)
        if table is not None or self.cluster is None:
            return self.live(table_id)
        try:
            where = await self.cluster.locate(table_id)
        except Exception as error:  # Redis or the database away for a moment
            raise TableError(503, "http.error", f"the table cannot be reached now: {error}", {"status": 503}) from None
        if where is None:
            raise TableError(404, "table.not_found", f"no table {table_id!r}", {"table": table_id})
        return where

    async def run_local(self, method: str, table_id: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run a lobby operation another process forwarded (``Cluster.call``) on a table owned here: ``join``
        (``name``, ``seat``), ``play_join`` (``name``, ``bot``), ``leave``, ``start`` or ``again`` (``token``),
        ``again_join`` (``name``, ``seat``: ``again.py``), ``bind`` (``seat``, ``token``, ``account_id``,
        ``account_name``: ``seat_accounts.bind_seat_here``). Returns
        ``{"table": TABLE, "seat", "token"}`` (seat and token for the joins); ``TableError`` as the method."""
        if method == "join":
            table, seat, token = await self.join(table_id, str(args["name"]), args.get("seat"))
        elif method == "play_join":
            table, seat, token = await self._play_join(table_id, str(args["name"]), args.get("bot"))
        elif method == "again":  # Play again at a finished table owned here (again.py)
            table, seat, token = await self.again(table_id, str(args["token"]))
        elif method == "again_join":
            table, seat, token = await self.again_join_here(self.live(table_id), str(args["name"]), int(args["seat"]))
        elif method == "bind":  # a signed-in person's seat taken through another process (server/players/accounts.py)
            table = self.live(table_id)
            token = await bind_seat_here(self.store, table, args)
            return {"table": table.to_dict(), "seat": int(args["seat"]), "token": token}
        elif method in ("leave", "start"):
            done = await (self.leave if method == "leave" else self.start)(table_id, str(args["token"]))
            return {"table": done.to_dict()}
        else:
            raise TableError(422, "request.invalid", f"unknown operation {method!r}",
                             {"field": "method", "detail": "unknown"})
        return {"table": table.to_dict(), "seat": seat, "token": token}

    async def operate(self, method: str, table_id: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run lobby operation ``method`` (:meth:`run_local`) on ``table_id`` wherever it is played: here, or at
        the process that owns it (``Cluster.call``). ``TableError`` as the method, 404 when the table is not live,
        503 when its owner does not answer."""
        async def here(_table: Table) -> dict[str, Any]:
            return await self.run_local(method, table_id, args)

        return await self.route(table_id, method, args, here, lambda answer: answer)
