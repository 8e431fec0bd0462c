"""Taking and giving up seats at live tables (``join``, ``leave``), starting a table (``start``), and a connection's
``hello`` and goodbye at its table; each runs on the table's owner, here or at the process that owns it
(:meth:`~cardtable.server.lobby.routing.Routing.route`).

:class:`Joining` is a part of :class:`~cardtable.server.lobby.manager.Manager`; it declares the attributes it
reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from cardtable.server.cluster.calls import RemoteTable
from cardtable.server.core.clock import Clock
from cardtable.server.core.errors import TableError
from cardtable.server.core.settings import Settings
from cardtable.server.lobby.daily_private import private_on, private_refusal
from cardtable.server.lobby.play_now import PLAY_NOW_BOTS
from cardtable.server.lobby.routing import on_owner, seated, shown
from cardtable.server.lobby.turn_based import Joiner, check_person_seat, table_pace
from cardtable.server.storage.store import Store
from cardtable.server.table.catch_up import send_catch_up
from cardtable.server.table.connections import Connection
from cardtable.server.table.owner import Table
from cardtable.server.table.seat_accounts import unbind_seat

T = TypeVar("T")


class Joining:
    """Seats taken, given up and started, and connections seated."""

    store: Store
    settings: Settings
    clock: Clock
    tables: dict[str, Table]

    if TYPE_CHECKING:
        async def route(self, table_id: str, method: str, args: dict[str, Any],
                        here: Callable[[Table], Awaitable[T]], there: Callable[[dict[str, Any]], T]) -> T: ...

        def arm_autostart(self, table: Table, delay_s: float, *, on_hello: bool) -> None: ...

        @staticmethod
        def _disarm_autostart(table: Table) -> None: ...

        @staticmethod
        def only_bots_besides_one_person(table: Table) -> bool: ...

        async def _begin(self, table: Table) -> None: ...

    async def join(self, table_id: str, name: str, seat: int | None,
                   joiner: Joiner | None = None) -> tuple[Table | RemoteTable, int, str]:
        """Take ``seat`` (or the first open one, else the first bot seat a person may take, whose bot then leaves);
        returns the table, the seat and its new token. With a cluster, a table owned by another process is joined
        there (the answer's table is then a ``RemoteTable``).

        ``joiner``: who asks, for a join a request asks for (``None``: the server itself, already checked). At a
        turn-based table the joiner must be signed in and under ``turn_based_tables_max``: ``TableError`` 401
        ``account.not_signed_in`` or 409 ``turn_based.too_many`` (``lobby/turn_based.check_person_seat``)."""
        if joiner is not None and await self.is_turn_based(table_id):
            await check_person_seat(self.store, self.settings, joiner.account_id)
        return await self.route(table_id, "join", {"name": name, "seat": seat},
                                lambda table: self._join_here(table, name, seat), seated)

    async def is_turn_based(self, table_id: str) -> bool:
        """Whether ``table_id`` is a turn-based table: the live table's ``pace`` when it is held here, else the
        stored one (``lobby/turn_based.table_pace``); ``False`` when there is no such table."""
        live = self.tables.get(table_id)
        pace = live.row.pace if live is not None else await table_pace(self.store, table_id)
        return pace == "turn-based"

    async def _join_here(self, table: Table, name: str, seat: int | None) -> tuple[Table, int, str]:
        async def take() -> tuple[int, str]:
            taken = await table.take_seat(name, seat)
            if table.play_now and table.autostart is None:
                self.arm_autostart(table, self.settings.play_now_start_s, on_hello=False)
            table.announce()
            return taken

        taken_seat, token = await on_owner(table, take)
        return table, taken_seat, token

    async def leave(self, table_id: str, token: str) -> Table | RemoteTable:
        """Give up the token's seat. Before the start it opens again (at a Play now table its bot comes back) and
        is untied from its account (``seat_accounts.unbind_seat``). After the start the stand-in bot plays it at once,
        with no grace wait; the token stays valid and the stand-in leaves when the person connects again with it
        (a person gone at the end is last in the match's results, ``results.py``)."""
        return await self.route(table_id, "leave", {"token": token}, lambda table: self._leave_here(table, token),
                                shown)

    async def _leave_here(self, table: Table, token: str) -> Table:
        async def go() -> None:
            seat = table.seat_of(token)
            bot = PLAY_NOW_BOTS[table.game] if table.status == "open" and table.play_now else None
            row = table.release_seat(seat, bot)
            if table.status == "open":
                if not any(s.row.kind == "person" for s in table.seats):
                    self._disarm_autostart(table)
                await unbind_seat(self.store, table, seat)
            await self.store.update_seat(table.id, row)
            table.announce()

        await on_owner(table, go)
        return table

    async def start(self, table_id: str, token: str) -> Table | RemoteTable:
        """Start the game (a seated person, every seat taken): the first hand is dealt at once."""
        return await self.route(table_id, "start", {"token": token}, lambda table: self._start_here(table, token),
                                shown)

    async def _start_here(self, table: Table, token: str) -> Table:
        async def go() -> None:
            table.seat_of(token)
            if table.status != "open":
                raise TableError(409, "table.started", "the game has already started")
            if any(s.row.kind == "open" for s in table.seats):
                raise TableError(409, "table.not_ready", "not startable: every seat must be taken first")
            await self._begin(table)

        await on_owner(table, go)
        return table

    async def hello(self, table: Table, connection: Connection, token: str | None) -> None:
        """Seat ``connection`` by ``token`` (``None``: a spectator) and send ``welcome`` then a snapshot (and, to a
        seat at a turn-based table in play, ``catch_up``: what happened since its last move, ``table/catch_up.py``).

        ``TableError`` 403 for a wrong token (the connection stays, unseated), 429 beyond the table's connection
        caps (:meth:`Table.admit`), 403 ``daily.private`` for a spectator of a daily table while its day lasts
        (``daily_private.py``).
        """

        async def go() -> None:
            if token is None and table.row.daily is not None and private_on(table.row.daily, self.clock.today()):
                raise private_refusal(table.id, table.row.daily)
            seat = None if token is None else table.seat_of(token)
            table.admit(connection, seat)
            changed = table.attach(connection, seat)
            for row in changed:
                await self.store.update_seat(table.id, row)
            connection.send_message({"type": "welcome", "seat": seat, "table": table.to_dict()})
            table.send_snapshot(connection)
            if seat is not None and table.row.turn_based and table.status == "playing":
                await send_catch_up(self.store, table.id, seat, connection)
            if seat is not None:
                table.announce()
                if table.status == "open" and table.start_on_hello and self.only_bots_besides_one_person(table):
                    await self._begin(table)

        await on_owner(table, go)


    async def goodbye(self, table: Table, connection: Connection) -> None:
        """Forget a closed connection (a person's grace timer starts when their last connection goes)."""

        async def go() -> None:
            was_seated = connection.seat is not None
            table.detach(connection)
            if was_seated:
                table.announce()

        if table.task is not None and not table.task.done():
            await on_owner(table, go)
