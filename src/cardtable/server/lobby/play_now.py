"""Play now (a seat at once: at a waiting Play now table, or at a new one against bots) and starting tables by
themselves: a table of one person and bots when its creator connects or after ``solo_start_s``, a Play now table
after ``play_now_start_s``.

:class:`PlayNow` is a part of :class:`~cardtable.server.lobby.manager.Manager`; it declares the attributes it
reads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any, TypeVar

from cardtable.server.cluster.calls import RemoteTable
from cardtable.server.cluster.member import Cluster
from cardtable.server.core.errors import TableError
from cardtable.server.core.settings import Settings
from cardtable.server.lobby.routing import on_owner, seated
from cardtable.server.storage.store import Store
from cardtable.server.table.owner import Table

T = TypeVar("T")

PLAY_NOW_BOTS = {"nerts": "greedy:medium", "anemone": "ismcts:medium"}
"""The bots a Play now table seats beside its first person, by game (a medium level)."""

PLAY_NOW_SEATS = 4
"""Seats at a table made by Play now."""

PLAY_NOW_CANDIDATES = 5
"""Several processes: waiting Play now tables (the oldest with a free seat, ``Store.play_now_tables``) Play now
tries before it makes a new one: a bounded read whatever the number of tables open (one might fill, start or
lose its owner meanwhile)."""


class PlayNow:
    """Play now and the autostart of tables."""

    store: Store
    settings: Settings
    tables: dict[str, Table]
    cluster: Cluster | None
    _play_now_lock: asyncio.Lock

    if TYPE_CHECKING:
        async def route(self, table_id: str, method: str, args: dict[str, Any],
                        here: Callable[[Table], Awaitable[T]], there: Callable[[dict[str, Any]], T]) -> T: ...

        async def join(self, table_id: str, name: str, seat: int | None) -> tuple[Table | RemoteTable, int, str]: ...

        async def create(self, game: str, options: dict[str, Any], seats: list[dict[str, Any]] | None, name: str,
                         seed: int | None, grace_seconds: float | None,
                         autostart: bool = True) -> tuple[Table, int, str]: ...

        def _list(self, table: Table) -> None: ...

    async def play_now(self, game: str, name: str, bot: str | None = None,
                       avoid: Collection[str] = ()) -> tuple[Table | RemoteTable, int, str]:
        """Seat ``name`` at once: at the oldest waiting Play now table of ``game`` with a free seat (an open seat, or a bot
        seat a person may take), or else at a new 4-seat table against three medium bots (:data:`PLAY_NOW_BOTS`)
        that others may still join and that starts by itself after ``Settings.play_now_start_s``.

        Calls are serialised, so two people pressing Play now together share one table. Returns the table, the
        seat and its token; ``TableError`` 422 (``game.unknown``) for an unknown game. ``bot`` (a signed-in
        player's level, ``cardtable.server.players.leaderboards.play_now_bot``) replaces the medium bots, and then only waiting
        tables without other bots are joined. Tables in ``avoid`` (where the signed-in player already holds a seat:
        one account, one seat) are passed over.
        """
        if game not in PLAY_NOW_BOTS:
            raise TableError(422, "game.unknown", f"unknown game {game!r} (known: {', '.join(PLAY_NOW_BOTS)})",
                             {"game": game})
        if self.cluster is not None:  # serialised over every process, tables from the database
            async with self.cluster.lock(f"play:{game}"):
                for table_id in await self.store.play_now_tables(game, bot, PLAY_NOW_CANDIDATES):
                    if table_id in avoid:
                        continue
                    try:
                        return await self._play_join(table_id, name, bot)
                    except TableError:
                        continue  # full, started, or its owner is away: look further
                return await self._play_now_new(game, name, bot)
        async with self._play_now_lock:
            for table in list(self.tables.values()):
                if table.game != game or table.id in avoid:
                    continue
                try:
                    return await self._play_join(table.id, name, bot)
                except TableError:
                    continue  # it filled or started meanwhile: look further
            return await self._play_now_new(game, name, bot)

    async def _play_join(self, table_id: str, name: str,
                         bot: str | None) -> tuple[Table | RemoteTable, int, str]:
        """Play now at ``table_id`` if it is a waiting table with a free seat (and, with ``bot``, no other bots);
        ``TableError`` 409 when it is not."""
        return await self.route(table_id, "play_join", {"name": name, "bot": bot},
                                lambda table: self._play_join_here(table, name, bot), seated)

    async def _play_join_here(self, table: Table, name: str, bot: str | None) -> tuple[Table | RemoteTable, int, str]:
        if table.status != "open" or table.broken:
            raise TableError(409, "table.started", "the game has already started")
        if not table.play_now:  # a custom table waits for the people it was made for, and may never start
            raise TableError(409, "table.full", "the table is not a Play now table")
        if not any(s.row.kind == "open" or (s.row.kind == "bot" and s.replaceable) for s in table.seats):
            raise TableError(409, "table.full", "the table is full")
        if bot is not None and any(s.row.kind == "bot" and s.row.bot != bot for s in table.seats):
            raise TableError(409, "table.full", "the table is full")
        return await self.join(table.id, name, None)

    async def _play_now_new(self, game: str, name: str, bot: str | None) -> tuple[Table, int, str]:
        """A new Play now table for ``name`` against three ``bot`` (default the game's medium bot)."""
        bot = bot or PLAY_NOW_BOTS[game]
        seats = [{"kind": "open"}] + [{"kind": "bot", "bot": bot}] * (PLAY_NOW_SEATS - 1)
        table, seat, token = await self.create(game, {"players": PLAY_NOW_SEATS}, seats, name, None, None,
                                               autostart=False)

        async def mark() -> None:
            table.mark_play_now()
            self.arm_autostart(table, self.settings.play_now_start_s, on_hello=False)
            table.announce()
            await self.store.mark_play_now(table.id)  # found by the next Play now of any process

        await on_owner(table, mark)
        return table, seat, token

    @staticmethod
    def only_bots_besides_one_person(table: Table) -> bool:
        """True when exactly one seat is a person's and every other seat is a bot."""
        kinds = [s.row.kind for s in table.seats]
        return kinds.count("person") == 1 and kinds.count("bot") == len(kinds) - 1

    def arm_autostart(self, table: Table, delay_s: float, *, on_hello: bool) -> None:
        """Start ``table`` by itself in ``delay_s`` seconds (``TABLE.starts_at``); with ``on_hello`` also as soon as
        a seated person's connection says ``hello``. At that time it starts if every seat is taken and a person
        sits; otherwise it waits for the next join."""
        self._disarm_autostart(table)
        table.start_on_hello = on_hello
        table.starts_at = time.time() + delay_s
        loop = asyncio.get_running_loop()
        table.autostart = loop.call_later(delay_s, lambda: table.submit_call(lambda: self._autostart(table)))

    def disarm(self, table: Table) -> None:
        """Cancel ``table``'s autostart (it is about to stop here)."""
        self._disarm_autostart(table)

    @staticmethod
    def _disarm_autostart(table: Table) -> None:
        if table.autostart is not None:
            table.autostart.cancel()
        table.autostart, table.starts_at, table.start_on_hello = None, None, False

    async def _autostart(self, table: Table) -> None:
        table.autostart = None
        if table.status != "open":
            return
        kinds = [s.row.kind for s in table.seats]
        if "open" in kinds or "person" not in kinds:
            table.starts_at = None  # somebody left: the next person to join arms it again
            table.announce()
            return
        await self._begin(table)

    async def _begin(self, table: Table) -> None:
        """Start ``table`` (on its owner): every seat is taken; the first hand is dealt at once."""
        self._disarm_autostart(table)
        await table.begin_match(lambda: self._list(table))
