"""Play now (a seat at once: at a waiting Play now table, or at a new one against bots) and starting tables by
themselves: a table of one person and bots when its creator connects or after ``solo_start_s``, a Play now table
after ``play_now_start_s`` while another person could still join it, else at once (:class:`LobbyPresence`).

:class:`PlayNow` is a part of :class:`~cardtable.server.lobby.manager.Manager`; it declares the attributes it
reads.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any, TypeVar

from redis.asyncio import Redis

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

LOBBY_PRESENCE_S = 10.0
"""Seconds a client counts as in the lobby after it last asked for the lobby's tables (the web lobby asks every
5 s) or pressed Play now: while another client is, a new Play now table waits ``play_now_start_s`` for them."""

LOBBY = "lobby"
"""The :class:`LobbyPresence` key of the lobby's table lists (any game); ``play:GAME`` is Play now's of GAME."""

VISITOR = re.compile(r"[0-9A-Za-z_-]{8,64}")
"""A well-formed ``X-Visitor`` header (the web client's random id per browser); any other value is ignored."""


def visitor_key(address: str, header: str | None) -> str:
    """Who a lobby request is from, for :class:`LobbyPresence`: the client's address, with the browser's
    ``X-Visitor`` id when it sends a well-formed one (two people behind one address are two visitors).

    >>> visitor_key("203.0.113.7", "4f3a9c01b2d4e5f6"), visitor_key("203.0.113.7", "no spaces!")
    ('203.0.113.7 4f3a9c01b2d4e5f6', '203.0.113.7')
    """
    if header is not None and VISITOR.fullmatch(header):
        return f"{address} {header}"
    return address


_SEEN = """
local since = tonumber(ARGV[3])
local other = 0
for i = 1, #KEYS do
  local v = redis.call('hmget', KEYS[i], 'w1', 't1', 'w2', 't2')
  if (v[1] and v[1] ~= ARGV[1] and tonumber(v[2]) >= since) or (v[3] and v[3] ~= ARGV[1] and tonumber(v[4]) >= since) then
    other = 1
  end
end
local v = redis.call('hmget', KEYS[1], 'w1', 't1')
if v[1] == ARGV[1] then
  redis.call('hset', KEYS[1], 't1', ARGV[2])
elseif v[1] then
  redis.call('hset', KEYS[1], 'w1', ARGV[1], 't1', ARGV[2], 'w2', v[1], 't2', v[2])
else
  redis.call('hset', KEYS[1], 'w1', ARGV[1], 't1', ARGV[2])
end
redis.call('pexpire', KEYS[1], ARGV[4])
return other
"""
""":meth:`LobbyPresence.visit` in Redis, atomically: KEYS the keys (the first one noted), ARGV the visitor, now,
``since`` (Unix seconds) and the hash's life in ms."""


class LobbyPresence:
    """Who was in the lobby lately: for each key (:data:`LOBBY`, ``play:GAME``) the last two different visitors
    (client addresses, ``core/addresses.py``) and when each was last seen, so "was anyone but me here within
    :data:`LOBBY_PRESENCE_S`" is O(1) per request, whatever the number of visitors (the last visitor other than
    me is always one of the last two). With ``redis`` (several processes) the pairs are Redis hashes
    (``ct:lobby:KEY``) shared by every process; else they are held here. ``clock``: Unix seconds."""

    def __init__(self, redis: Redis | None = None, clock: Callable[[], float] = time.time,
                 window_s: float = LOBBY_PRESENCE_S) -> None:
        self.redis = redis
        self.clock = clock
        self.window_s = window_s
        self.last: dict[str, list[tuple[str, float]]] = {}
        """Here (one process): per key, ``(visitor, seen at)`` of the last two different visitors, newest first."""

    async def visit(self, visitor: str, keys: tuple[str, ...]) -> bool:
        """Note ``visitor`` at ``keys[0]`` now; True when a visitor other than ``visitor`` was seen at any of
        ``keys`` within the window (before this visit). Redis errors propagate (the caller decides)."""
        now = self.clock()
        since = now - self.window_s
        if self.redis is not None:
            names = [f"ct:lobby:{key}" for key in keys]
            life_ms = str(int(self.window_s * 1000) + 1000)
            other = await self.redis.eval(_SEEN, len(names), *names, visitor, repr(now), repr(since), life_ms)
            return bool(other)
        seen = any(who != visitor and at >= since for key in keys for who, at in self.last.get(key, ()))
        pair = self.last.get(keys[0], [])
        self.last[keys[0]] = [(visitor, now), *[p for p in pair if p[0] != visitor][:1]]
        return seen


class PlayNow:
    """Play now and the autostart of tables."""

    store: Store
    settings: Settings
    tables: dict[str, Table]
    cluster: Cluster | None
    _play_now_lock: asyncio.Lock
    presence: LobbyPresence

    if TYPE_CHECKING:
        async def route(self, table_id: str, method: str, args: dict[str, Any],
                        here: Callable[[Table], Awaitable[T]], there: Callable[[dict[str, Any]], T]) -> T: ...

        async def join(self, table_id: str, name: str, seat: int | None) -> tuple[Table | RemoteTable, int, str]: ...

        async def create(self, game: str, options: dict[str, Any], seats: list[dict[str, Any]] | None, name: str,
                         seed: int | None, grace_seconds: float | None,
                         autostart: bool = True) -> tuple[Table, int, str]: ...

        def _list(self, table: Table) -> None: ...

    async def in_lobby(self, visitor: str, game: str | None = None) -> bool:
        """Note that client ``visitor`` (:func:`visitor_key`) asked for the lobby's tables (``game`` ``None``) or pressed
        Play now of ``game``; True when another client did either (for Play now: read the lobby, or pressed Play
        now of the same game) within :data:`LOBBY_PRESENCE_S`, that is, when another person could still join a
        new Play now table (:meth:`play_now`'s ``countdown``). With a cluster it is counted in Redis over every
        process; should Redis not answer, True (the countdown, as before)."""
        keys = (LOBBY,) if game is None else (f"play:{game}", LOBBY)
        try:
            return await self.presence.visit(visitor, keys)
        except Exception:  # Redis away for a moment: keep the countdown
            return True

    async def play_now(self, game: str, name: str, bot: str | None = None,
                       avoid: Collection[str] = (), countdown: bool = True) -> tuple[Table | RemoteTable, int, str]:
        """Seat ``name`` at once: at the oldest waiting Play now table of ``game`` with a free seat (an open seat, or a bot
        seat a person may take), or else at a new 4-seat table against three medium bots (:data:`PLAY_NOW_BOTS`)
        that others may still join. With ``countdown`` (another person could still join: :meth:`in_lobby`) the new
        table starts by itself after ``Settings.play_now_start_s``; without, it starts at once: when its person's
        connection says ``hello``, or after ``min(solo_start_s, play_now_start_s)`` without one.

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
                return await self._play_now_new(game, name, bot, countdown)
        async with self._play_now_lock:
            for table in list(self.tables.values()):
                if table.game != game or table.id in avoid:
                    continue
                try:
                    return await self._play_join(table.id, name, bot)
                except TableError:
                    continue  # it filled or started meanwhile: look further
            return await self._play_now_new(game, name, bot, countdown)

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

    async def _play_now_new(self, game: str, name: str, bot: str | None,
                            countdown: bool = True) -> tuple[Table, int, str]:
        """A new Play now table for ``name`` against three ``bot`` (default the game's medium bot); without
        ``countdown`` it starts as a table of one person and bots does (:meth:`play_now`)."""
        bot = bot or PLAY_NOW_BOTS[game]
        seats = [{"kind": "open"}] + [{"kind": "bot", "bot": bot}] * (PLAY_NOW_SEATS - 1)
        table, seat, token = await self.create(game, {"players": PLAY_NOW_SEATS}, seats, name, None, None,
                                               autostart=False)

        async def mark() -> None:
            table.mark_play_now()
            if countdown:
                self.arm_autostart(table, self.settings.play_now_start_s, on_hello=False)
            else:
                self.arm_autostart(table, min(self.settings.solo_start_s, self.settings.play_now_start_s),
                                   on_hello=True)
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
