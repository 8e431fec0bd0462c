"""All tables of one server: create, join, leave, start, restore on start, records and replays.

The HTTP routes (``lobby.py``) and the WebSocket handler (``ws.py``) call this; every change to a live table runs
on that table's owner (:meth:`Table.submit_call`), so lobby operations and actions never interleave.

This module holds the registry of the live tables (open, restore, create, the expiry sweep, ending and letting go,
close); :class:`Manager`'s other parts are in their own modules: seats taken, left and started and connections
seated (``joining.py``), Play now and autostart (``play_now.py``), Play again (``again.py``), listings, records
and replays (``records.py``), where an operation runs (``routing.py``) and the limits per address (``quotas.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from cardtable import bots
from cardtable.games import get_game
from cardtable.server.cluster.member import Cluster
from cardtable.server.core.clock import Clock, now_iso
from cardtable.server.core.errors import TableError
from cardtable.server.core.limits import TokenBucket, TokenBuckets
from cardtable.server.core.settings import Settings
from cardtable.server.core.tokens import hash_token, new_table_id, new_token
from cardtable.server.lobby.again import Again
from cardtable.server.lobby.idle_tables import IdleTables
from cardtable.server.lobby.joining import Joining
from cardtable.server.lobby.listing import LiveLists
from cardtable.server.lobby.play_now import LobbyPresence, PlayNow
from cardtable.server.lobby.quotas import Quotas
from cardtable.server.lobby.records import Records
from cardtable.server.lobby.routing import Routing, on_owner
from cardtable.server.lobby.turn_based import turn_clock_for
from cardtable.server.storage.rows import SeatRow, TableRow
from cardtable.server.storage.store import Store
from cardtable.server.table.owner import Table

log = logging.getLogger("cardtable.server.lobby.manager")


def finished_for_s(row: TableRow) -> float:
    """Seconds since the stored table ``row`` finished (its ``finished`` stamp); 0 when it has none."""
    if not row.finished:
        return 0.0
    try:
        ended = datetime.fromisoformat(row.finished.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return (datetime.now(UTC) - ended).total_seconds()


class Manager(Joining, PlayNow, Again, Records, Routing, Quotas, IdleTables):
    """The server's tables. Build with :meth:`open` (restores unfinished tables), :meth:`close` at shutdown."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.tables: dict[str, Table] = {}
        self.creates: dict[str, TokenBucket] = {}
        """Table creations per client address (a token bucket each; idle full ones are forgotten by the sweep)."""
        self.joins = TokenBuckets(settings.joins_per_minute / 60.0, settings.join_burst)
        """Joins per client address (``joins_per_minute``, ``join_burst``), counted by this process."""
        self.held: dict[str, dict[tuple[str, int], str]] = {}
        """Seats taken here per client address: ``(table id, seat)`` to the token hash it was taken with. A seat
        counts (:meth:`seats_held`) while its table is live here, open or in play, and the seat still has that
        token; the others are forgotten when counted."""
        self._sweeper: asyncio.Task[None] | None = None
        self.sockets: Counter[str] = Counter()
        """Open WebSocket connections per client address (at most ``max_sockets_per_address``)."""
        self._play_now_lock = asyncio.Lock()
        self.cluster: Cluster | None = None
        """Set when this process is one of several (``--redis``, ``server/cluster/member.py``)."""
        self.listing = LiveLists()
        """The open and playing tables in the lobby's order (one process only: several list from the database)."""
        self.presence = LobbyPresence()
        """Who was in the lobby lately (``play_now.py``): whether a new Play now table waits for another person."""
        self._loading: dict[str, asyncio.Future[Table | None]] = {}
        """Turn-based tables being loaded again (``idle_tables.py``), by id."""
        self.clock = Clock()
        """The day, for the daily deal's private tables (``daily_private.py``): the app's clock (``app.state.clock``)."""

    @classmethod
    async def open(cls, store: Store, settings: Settings, cluster: Cluster | None = None) -> Manager:
        """A manager with every unfinished table rebuilt from its record and running again, but the waiting
        turn-based ones (``idle_tables.py``: loaded when needed). With a ``cluster`` no table is rebuilt here: the cluster takes each table nobody owns (its sweep, or the first request)."""
        manager = cls(store, settings)
        manager.cluster = cluster
        if cluster is not None:
            manager.presence = LobbyPresence(cluster.limits.redis)
        if cluster is None:
            await manager.restore_active()
        else:
            cluster.attach(manager)
        manager._sweeper = asyncio.create_task(manager._sweep_loop(), name="cardtable-expiry")
        return manager

    def restore(self, row: TableRow) -> Table | None:
        """Rebuild a stored table (loaded with its hands) from its record and start its owner here; ``None``
        (logged) when the record does not replay."""
        try:
            table = Table(row, get_game(row.game), self.store, self.settings)
            table.fold()
        except ValueError:
            log.exception("table %s: its record does not replay; left out", row.id)
            return None
        self.tables[row.id] = table
        self._list(table)
        table.start_owner()
        if table.status == "open" and self.only_bots_besides_one_person(table):
            self.arm_autostart(table, self.settings.solo_start_s, on_hello=True)
        return table

    async def close(self) -> None:
        """Stop the expiry sweep and every table's owner (their records are already stored); with a cluster, hand
        the tables over first (``Cluster.hand_over``)."""
        if self.cluster is not None:
            await self.cluster.hand_over()
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        for table in self.tables.values():
            self._disarm_autostart(table)
            table.flush_spectators()
            for connection in table.all_connections():
                connection.close()
            await table.stop()

    # -- expiry --------------------------------------------------------------------------------------

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.expiry_check_s)
            try:
                await self.sweep()
            except Exception:
                log.exception("the expiry sweep failed")

    async def sweep(self) -> None:
        """One expiry sweep (every ``expiry_check_s``): an open table with nobody connected for
        ``open_table_idle_s`` is closed (status ``closed``); a table in play with no person connected for its grace
        plus ``abandon_after_s`` ends as ``abandoned`` (record kept, published like a finished one). Each runs on the
        table's owner. A finished table stays live ``finished_table_keep_s`` (the web client watches the end through
        its socket), then is let go (:meth:`_let_go`); its record stays in the database. Turn-based tables have their
        own rules (``idle_tables.py``, :meth:`sweep_turns`)."""
        now = time.monotonic()
        settings = self.settings
        for table in list(self.tables.values()):
            if table.status == "finished" and finished_for_s(table.row) >= settings.finished_table_keep_s:
                await self._let_go(table)
                continue
            if table.broken or table.row.turn_based:  # turn-based: sweep_turns (idle_tables.py)
                continue
            if table.status == "open" and not table.all_connections():
                if now - table.last_presence > settings.open_table_idle_s:
                    await self._end(table, "closed")
            elif (table.status == "playing" and not table.people_connected()
                  and now - table.last_person > table.row.grace_seconds + settings.abandon_after_s):
                await self._end(table, "abandoned")
        await self.sweep_turns(now)
        for address, bucket in list(self.creates.items()):
            if bucket.full():
                del self.creates[address]
        for address in list(self.held):
            self.seats_held(address)

    async def _let_go(self, table: Table) -> None:
        """Drop the finished or waiting turn-based ``table`` from memory (its connections closed, its owner
        stopped); with a cluster its lease is released. Its record stays in the database: ``TABLE``, record and
        replay are read from there, and a waiting table is loaded again when needed (``idle_tables.py``)."""
        log.info("table %s: %s, let go", table.id, table.status)
        if self.cluster is not None:
            await self.cluster.drop(table)
            return
        if self.tables.get(table.id) is not table:
            return
        await self._forget(table)

    async def _forget(self, table: Table) -> None:
        """Take ``table`` out of this process: out of the registry and the listing, its autostart disarmed, its
        connections closed, its owner stopped."""
        self.tables.pop(table.id, None)
        self.listing.discard(table)
        self._disarm_autostart(table)
        table.flush_spectators()
        for connection in table.all_connections():
            connection.close()
        await table.stop()

    async def _end(self, table: Table, status: str) -> None:
        async def go() -> bool:
            if status == "closed" and (table.status != "open" or table.all_connections()):
                return False
            if status == "abandoned" and (table.status != "playing" or table.people_connected()):
                return False
            await table.end(status)
            return True

        try:
            ended = await on_owner(table, go)
        except Exception:
            log.exception("table %s: ending it as %s failed", table.id, status)
            return
        if ended:
            log.info("table %s: %s", table.id, status)
            await self._forget(table)

    # -- new tables ----------------------------------------------------------------------------------

    async def create(self, game: str, options: dict[str, Any], seats: list[dict[str, Any]] | None, name: str,
                     seed: int | None, grace_seconds: float | None, autostart: bool = True,
                     ready_seconds: float | None = None, creator_seat: int | None = None,
                     daily: str | None = None, pace: str = "real-time",
                     turn_clock: dict[str, int] | None = None) -> tuple[Table, int, str]:
        """A new open table; the creator takes the first open seat (``creator_seat`` when given: an open one,
        Play again). Returns the table, that seat and its token.

        With ``autostart`` and every other seat a bot, the table starts by itself: when the creator's first
        connection says ``hello``, or after ``Settings.solo_start_s`` without one (no Start click).
        ``TableError`` (422) for an unknown game, bad options (the engine's message), bad seats or bot specs.

        A chosen ``seed`` deals hands anyone who knows it can compute, so it is taken only at a table whose other
        seats are all bots (else 422 ``table.seed_not_allowed``, unless ``Settings.chosen_seeds``), and such a
        table is never rated (``TableRow.seed_chosen``). Without one the server draws the seed, and each hand's
        shuffle mixes in a server key (``table.hand_seed``).

        ``ready_seconds`` is the countdown between hands for people who have not pressed Ready (``None``: the
        server's ``default_ready_s``; ``server/table/handover.py``); the HTTP body bounds it. ``daily``: the day (ISO
        date) of the daily deal the table plays (``lobby/daily.py``; private while that day lasts).

        ``pace`` ``"turn-based"`` (Enemy Anemone only) makes a turn-based table with ``turn_clock`` (``{"start_s",
        "per_move_s"}``, seconds; default 3 days and 1 day); ``TableError`` 422 ``pace.unsupported``,
        ``turn_clock.too_short`` or ``turn_clock.invalid`` as ``lobby/turn_based.turn_clock_for`` says. That its
        person seats are signed-in players is the caller's check (``turn_based.check_person_seat``).
        """
        try:
            info = get_game(game)
        except ValueError as error:
            raise TableError(422, "game.unknown", str(error), {"game": game}) from None
        clock = turn_clock_for(game, pace, turn_clock, self.settings)
        try:
            match = info.new_match(options)
        except ValueError as error:
            option = str(error).split(":", 1)[0].removeprefix("option ").strip("'")
            raise TableError(422, "options.invalid", str(error), {"option": option, "detail": str(error)}) from None
        players = match.players
        specs = seats if seats is not None else [{"kind": "open"} for _ in range(players)]
        if len(specs) != players:
            raise TableError(
                422, "seats.count", f"seats: {len(specs)} given but this table has {players} seats (option players)",
                {"count": len(specs), "players": players},
            )
        rows: list[SeatRow] = []
        for i, spec in enumerate(specs):
            if spec.get("kind") == "bot":
                try:
                    bot = bots.get_bot(game, spec.get("bot") or "").spec
                except ValueError as error:
                    raise TableError(422, "seats.bad_bot", f"seats[{i}].bot: {error}",
                                     {"seat": i, "bot": str(spec.get("bot"))}) from None
                rows.append(SeatRow(seat=i, kind="bot", bot=bot, name=f"bot-{i}"))
            else:
                rows.append(SeatRow(seat=i, kind="open"))
        first_open = next((r for r in rows if r.kind == "open" and creator_seat in (None, r.seat)), None)
        if first_open is None:
            raise TableError(422, "seats.none_open", "seats: at least one seat must be open, for you")
        if seed is not None and not self.settings.chosen_seeds and sum(r.kind == "open" for r in rows) > 1:
            raise TableError(422, "table.seed_not_allowed", "seed: a chosen seed shows every hand, so only a table "
                             "of one person and bots may have one (and it is not rated)")
        token = new_token()
        first_open.kind, first_open.name, first_open.token_hash = "person", name, hash_token(token)
        row = TableRow(
            id=new_table_id(), game=game, options=dict(options), status="open",
            seed=seed if seed is not None else random.SystemRandom().randrange(2**62),
            grace_seconds=self.settings.default_grace_s if grace_seconds is None else grace_seconds,
            created=now_iso(), seats=rows, seed_chosen=seed is not None, ready_seconds=ready_seconds, daily=daily,
            pace=pace, turn_clock=clock,
        )
        if self.cluster is not None:
            await self.cluster.claim_new(row.id)
        try:
            await self.store.insert_table(row)
        except Exception:
            if self.cluster is not None:
                self.cluster.forget_new(row.id)
            raise
        table = Table(row, info, self.store, self.settings)
        self.tables[row.id] = table
        self._list(table)
        if self.cluster is not None:
            self.cluster.adopt(table)
        table.start_owner()
        if autostart and self.only_bots_besides_one_person(table):
            self.arm_autostart(table, self.settings.solo_start_s, on_hello=True)
        return table, first_open.seat, token

    def live(self, table_id: str) -> Table:
        """The live table ``table_id``; ``TableError`` 404 when there is none (unknown or finished earlier)."""
        table = self.tables.get(table_id)
        if table is None:
            raise TableError(404, "table.not_found", f"no table {table_id!r}", {"table": table_id})
        return table

