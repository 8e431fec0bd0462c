"""All tables of one server: create, join, leave, start, restore on start, records and replays.

The HTTP routes (``lobby.py``) and the WebSocket handler (``ws.py``) call this; every change to a live table runs
on that table's owner (:meth:`Table.submit_call`), so lobby operations and actions never interleave.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import time
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable, Collection
from datetime import UTC, datetime
from typing import Any, TypeVar

from cardtable import bots, records
from cardtable.engine import HandState
from cardtable.games import get_game
from cardtable.replay import fold
from cardtable.server.cluster.ownership import Cluster, RemoteTable
from cardtable.server.core.clock import now_iso
from cardtable.server.core.errors import TableError
from cardtable.server.core.limits import AddressBuckets
from cardtable.server.core.messages import RateLimiter
from cardtable.server.core.settings import Settings
from cardtable.server.core.tokens import hash_token, new_table_id, new_token, token_matches
from cardtable.server.lobby.listing import LiveLists
from cardtable.server.storage.store import SeatRow, Store, TableRow, record_of
from cardtable.server.table.connections import Peer
from cardtable.server.table.owner import STANDIN_BOTS, Table
from cardtable.server.table.seat_accounts import bind_seat_here, unbind_seat

ENDED = ("finished", "abandoned")
"""Statuses of tables whose record is published; ``abandoned``: in play with no person connected too long."""

log = logging.getLogger("cardtable.server.lobby.manager")

PLAY_NOW_BOTS = {"nerts": "greedy:medium", "anemone": "ismcts:medium"}
"""The bots a Play now table seats beside its first person, by game (a medium level)."""

PLAY_NOW_SEATS = 4
"""Seats at a table made by Play now."""

PLAY_NOW_CANDIDATES = 5
"""Several processes: waiting Play now tables (the oldest with a free seat, ``Store.play_now_tables``) Play now
tries before it makes a new one: a bounded read whatever the number of tables open (one might fill, start or
lose its owner meanwhile)."""

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
        "winners": row.winners, "created": row.created, "rated": not row.seed_chosen,
    }


def finished_for_s(row: TableRow) -> float:
    """Seconds since the stored table ``row`` finished (its ``finished`` stamp); 0 when it has none."""
    if not row.finished:
        return 0.0
    try:
        ended = datetime.fromisoformat(row.finished.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return (datetime.now(UTC) - ended).total_seconds()


class Manager:
    """The server's tables. Build with :meth:`open` (restores unfinished tables), :meth:`close` at shutdown."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.tables: dict[str, Table] = {}
        self.creates: dict[str, RateLimiter] = {}
        """Table creations per client address (a token bucket each; idle full ones are forgotten by the sweep)."""
        self.joins = AddressBuckets(settings.joins_per_minute / 60.0, settings.join_burst)
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
        """Set when this process is one of several (``--redis``, ``server/cluster/ownership.py``)."""
        self.listing = LiveLists()
        """The open and playing tables in the lobby's order (one process only: several list from the database)."""

    @classmethod
    async def open(cls, store: Store, settings: Settings, cluster: Cluster | None = None) -> Manager:
        """A manager with every unfinished table rebuilt from its record and running again. With a ``cluster``
        no table is rebuilt here: the cluster takes each table nobody owns (its sweep, or the first request)."""
        manager = cls(store, settings)
        manager.cluster = cluster
        if cluster is None:
            for row in await store.load_tables(statuses=("open", "playing"), with_hands=True):
                manager.restore(row)
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
            for peer in table.all_peers():
                peer.close()
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
        its socket), then is let go (:meth:`_let_go`); its record stays in the database."""
        now = time.monotonic()
        settings = self.settings
        for table in list(self.tables.values()):
            if table.status == "finished" and finished_for_s(table.row) >= settings.finished_table_keep_s:
                await self._let_go(table)
                continue
            if table.broken:
                continue
            if table.status == "open" and not table.all_peers():
                if now - table.last_presence > settings.open_table_idle_s:
                    await self._end(table, "closed")
            elif (table.status == "playing" and not table.people_connected()
                  and now - table.last_person > table.row.grace_seconds + settings.abandon_after_s):
                await self._end(table, "abandoned")
        for address, bucket in list(self.creates.items()):
            if bucket.full():
                del self.creates[address]
        for address in list(self.held):
            self.seats_held(address)

    async def _let_go(self, table: Table) -> None:
        """Drop the finished ``table`` from memory (its connections closed, its owner stopped); with a cluster its
        lease is released. Its record stays in the database: ``TABLE``, record and replay are read from there."""
        log.info("table %s: finished, let go", table.id)
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
        for peer in table.all_peers():
            peer.close()
        await table.stop()

    async def _end(self, table: Table, status: str) -> None:
        async def go() -> bool:
            if status == "closed" and (table.status != "open" or table.all_peers()):
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

    # -- lobby ---------------------------------------------------------------------------------------

    def seats_held(self, address: str) -> int:
        """Seats ``address`` holds at tables open or in play here (see :attr:`held`)."""
        seats = self.held.get(address)
        if not seats:
            self.held.pop(address, None)
            return 0
        for (table_id, seat), token_hash in list(seats.items()):
            table = self.tables.get(table_id)
            if (table is None or table.status not in ("open", "playing") or seat >= len(table.seats)
                    or table.seats[seat].row.token_hash != token_hash):
                del seats[(table_id, seat)]
        if not seats:
            del self.held[address]
        return len(seats)

    def hold_seat(self, address: str, table: Table | RemoteTable, seat: int, token: str) -> None:
        """Count ``seat`` at ``table``, just taken with ``token``, as held by ``address`` (a table played by another
        process is counted there, not here)."""
        if isinstance(table, Table) and self.tables.get(table.id) is table:
            self.held.setdefault(address, {})[(table.id, seat)] = hash_token(token)

    def check_seats(self, address: str) -> None:
        """``TableError`` 409 ``table.seat_limit`` when ``address`` already holds ``max_seats_per_address`` seats."""
        limit = self.settings.max_seats_per_address
        if self.seats_held(address) >= limit:
            raise TableError(409, "table.seat_limit", f"your address already holds {limit} seats: leave one first",
                             {"limit": limit})

    async def check_join(self, address: str) -> None:
        """Count one join from ``address``: ``TableError`` 429 ``table.join_limit`` (``retry_after_s``) beyond
        ``joins_per_minute`` (burst ``join_burst``; over every process with a cluster), then 409
        ``table.seat_limit`` past ``max_seats_per_address`` (:meth:`check_seats`)."""
        settings = self.settings
        rate = f"{settings.joins_per_minute:g}"
        if self.cluster is not None:
            allowed = await self.cluster.limits.allow_create(f"join:{address}", settings.joins_per_minute / 60.0,
                                                             settings.join_burst)
            wait = 0 if allowed else max(1, math.ceil(60.0 / max(settings.joins_per_minute, 1e-9)))
        else:
            wait = self.joins.take(address)
        if wait:
            raise TableError(429, "table.join_limit", f"too many joins from your address: at most {rate} a minute; "
                                                      f"try again in {wait} s", {"rate": rate, "retry_after_s": wait})
        self.check_seats(address)

    def allow_create(self, address: str) -> None:
        """Count one table creation from ``address``; ``TableError`` 429 beyond ``creates_per_minute`` (burst
        ``create_burst``)."""
        bucket = self.creates.get(address)
        if bucket is None:
            bucket = self.creates[address] = RateLimiter(self.settings.creates_per_minute / 60.0,
                                                         self.settings.create_burst)
        if not bucket.allow():
            rate = f"{self.settings.creates_per_minute:g}"
            raise TableError(429, "table.create_limit", f"too many new tables from your address: at most {rate} a "
                                                        "minute", {"rate": rate})

    async def check_create(self, address: str) -> None:
        """:meth:`allow_create`, counted over every process with a cluster (a token bucket in Redis)."""
        if self.cluster is None:
            self.allow_create(address)
            return
        settings = self.settings
        if not await self.cluster.limits.allow_create(address, settings.creates_per_minute / 60.0,
                                                       settings.create_burst):
            rate = f"{settings.creates_per_minute:g}"
            raise TableError(429, "table.create_limit", f"too many new tables from your address: at most {rate} a "
                                                        "minute", {"rate": rate})

    async def create(self, game: str, options: dict[str, Any], seats: list[dict[str, Any]] | None, name: str,
                     seed: int | None, grace_seconds: float | None, autostart: bool = True) -> tuple[Table, int, str]:
        """A new open table; the creator takes the first open seat. Returns the table, that seat and its token.

        With ``autostart`` and every other seat a bot, the table starts by itself: when the creator's first
        connection says ``hello``, or after ``Settings.solo_start_s`` without one (no Start click).
        ``TableError`` (422) for an unknown game, bad options (the engine's message), bad seats or bot specs.

        A chosen ``seed`` deals hands anyone who knows it can compute, so it is taken only at a table whose other
        seats are all bots (else 422 ``table.seed_not_allowed``, unless ``Settings.chosen_seeds``), and such a
        table is never rated (``TableRow.seed_chosen``). Without one the server draws the seed, and each hand's
        shuffle mixes in a server key (``table.hand_seed``).
        """
        try:
            info = get_game(game)
        except ValueError as error:
            raise TableError(422, "game.unknown", str(error), {"game": game}) from None
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
        first_open = next((r for r in rows if r.kind == "open"), None)
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
            created=now_iso(), seats=rows, seed_chosen=seed is not None,
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
        where = await self._where(table_id)
        if not isinstance(where, Table):
            return await self._remote(where, table_id, "play_join", {"name": name, "bot": bot})
        table = where
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
            table.play_now = True
            for other in table.seats:
                if other.row.kind == "bot":
                    other.replaceable = True
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
        for seat in table.seats:
            seat.replaceable = False
        table.row.status = "playing"
        self._list(table)
        await self.store.update_status(table.id, "playing")
        for seat in table.seats:
            table._start_away_timer(seat)
        table.announce()
        await table._start_hand()

    def live(self, table_id: str) -> Table:
        """The live table ``table_id``; ``TableError`` 404 when there is none (unknown or finished earlier)."""
        table = self.tables.get(table_id)
        if table is None:
            raise TableError(404, "table.not_found", f"no table {table_id!r}", {"table": table_id})
        return table

    async def _where(self, table_id: str) -> Table | str:
        """The live table ``table_id`` here or, with a cluster, the process that owns it (the table is taken here
        if nobody owns it); ``TableError`` 404 when it is not live anywhere."""
        table = self.tables.get(table_id)
        if table is not None or self.cluster is None:
            return self.live(table_id)
        try:
            where = await self.cluster.locate(table_id)
        except Exception as error:  # Redis or the database away for a moment
            raise TableError(503, "http.error", f"the table cannot be reached now: {error}", {"status": 503}) from None
        if where is None:
            raise TableError(404, "table.not_found", f"no table {table_id!r}", {"table": table_id})
        return where

    async def _remote(self, owner: str, table_id: str, method: str,
                      args: dict[str, Any]) -> tuple[RemoteTable, int, str]:
        assert self.cluster is not None
        result = await self.cluster.call(owner, table_id, method, args)
        return RemoteTable(result["table"]), int(result.get("seat", -1)), str(result.get("token", ""))

    async def run_local(self, method: str, table_id: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run a lobby operation another process forwarded (``Cluster.call``) on a table owned here: ``join``
        (``name``, ``seat``), ``play_join`` (``name``, ``bot``), ``leave`` or ``start`` (``token``), ``bind``
        (``seat``, ``token``, ``account_id``, ``account_name``: ``seat_accounts.bind_seat_here``). Returns
        ``{"table": TABLE, "seat", "token"}`` (seat and token for the joins); ``TableError`` as the method."""
        if method == "join":
            table, seat, token = await self.join(table_id, str(args["name"]), args.get("seat"))
        elif method == "play_join":
            table, seat, token = await self._play_join(table_id, str(args["name"]), args.get("bot"))
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
        where = await self._where(table_id)
        if isinstance(where, Table):
            return await self.run_local(method, table_id, args)
        assert self.cluster is not None
        return await self.cluster.call(where, table_id, method, args)

    async def join(self, table_id: str, name: str, seat: int | None) -> tuple[Table | RemoteTable, int, str]:
        """Take ``seat`` (or the first open one, else the first bot seat a person may take, whose bot then leaves);
        returns the table, the seat and its new token. With a cluster, a table owned by another process is joined
        there (the answer's table is then a ``RemoteTable``)."""
        where = await self._where(table_id)
        if not isinstance(where, Table):
            return await self._remote(where, table_id, "join", {"name": name, "seat": seat})
        table = where

        async def take() -> tuple[int, str]:
            if table.status != "open":
                raise TableError(409, "table.started", "the game has already started")
            if seat is not None:
                if not 0 <= seat < len(table.seats):
                    raise TableError(422, "seat.no_such", f"seat: no seat {seat} (the table has {len(table.seats)})",
                                     {"seat": seat, "seats": len(table.seats)})
                chosen = table.seats[seat]
                if chosen.row.kind != "open" and not (chosen.row.kind == "bot" and chosen.replaceable):
                    raise TableError(409, "seat.taken", f"seat {seat} is taken", {"seat": seat})
            else:
                free = [s for s in table.seats if s.row.kind == "open"]
                free += [s for s in table.seats if s.row.kind == "bot" and s.replaceable]
                if not free:
                    raise TableError(409, "table.full", "the table is full")
                chosen = free[0]
            token = new_token()
            chosen.row.kind, chosen.row.name, chosen.row.token_hash = "person", name, hash_token(token)
            chosen.row.bot, chosen.replaceable = None, False
            await self.store.update_seat(table.id, chosen.row)
            if table.play_now and table.autostart is None:
                self.arm_autostart(table, self.settings.play_now_start_s, on_hello=False)
            table.announce()
            return chosen.row.seat, token

        taken_seat, token = await on_owner(table, take)
        return table, taken_seat, token

    def seat_of(self, table: Table, token: str | None) -> int:
        """The seat ``token`` holds at ``table``; ``TableError`` 403 for a missing or wrong token."""
        if token:
            for seat in table.seats:
                if seat.row.kind == "person" and token_matches(token, seat.row.token_hash):
                    return seat.row.seat
        raise TableError(403, "token.bad", "bad token: it holds no seat at this table")

    async def leave(self, table_id: str, token: str) -> Table | RemoteTable:
        """Give up the token's seat. Before the start it opens again (at a Play now table its bot comes back) and
        is untied from its account (``seat_accounts.unbind_seat``). After the start the stand-in bot plays it at once,
        with no grace wait; the token stays valid and the stand-in leaves when the person connects again with it
        (a person gone at the end is last in the match's results, ``results.py``)."""
        where = await self._where(table_id)
        if not isinstance(where, Table):
            return (await self._remote(where, table_id, "leave", {"token": token}))[0]
        table = where

        async def go() -> None:
            seat = table.seats[self.seat_of(table, token)]
            for peer in list(seat.peers):  # their connections watch from now on
                seat.peers.discard(peer)
                peer.seat = None
                table.spectators.add(peer)
                table.send_snapshot(peer)
            if table.status == "open":
                if table.play_now:
                    seat.row.kind, seat.row.name, seat.row.token_hash = "bot", f"bot-{seat.row.seat}", None
                    seat.row.bot, seat.replaceable = PLAY_NOW_BOTS[table.game], True
                else:
                    seat.row.kind, seat.row.name, seat.row.token_hash = "open", None, None
                if not any(s.row.kind == "person" for s in table.seats):
                    self._disarm_autostart(table)
                await unbind_seat(self.store, table, seat.row.seat)
            elif table.status == "playing":
                seat.row.left = True
                seat.standin = STANDIN_BOTS[table.game]
                if seat.away_timer is not None:
                    seat.away_timer.cancel()
                    seat.away_timer = None
                table._sync_bots()
            await self.store.update_seat(table.id, seat.row)
            table.announce()

        await on_owner(table, go)
        return table

    async def start(self, table_id: str, token: str) -> Table | RemoteTable:
        """Start the game (a seated person, every seat taken): the first hand is dealt at once."""
        where = await self._where(table_id)
        if not isinstance(where, Table):
            return (await self._remote(where, table_id, "start", {"token": token}))[0]
        table = where

        async def go() -> None:
            self.seat_of(table, token)
            if table.status != "open":
                raise TableError(409, "table.started", "the game has already started")
            if any(s.row.kind == "open" for s in table.seats):
                raise TableError(409, "table.not_ready", "not startable: every seat must be taken first")
            await self._begin(table)

        await on_owner(table, go)
        return table

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
        """Put ``table`` in the lobby's list of its status (one process only; several list from the database)."""
        if self.cluster is None:
            self.listing.add(table)

    async def list_tables(self, status: str, limit: int | None = None,
                          cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """One page of ``TABLE``s with ``status`` and the next page's cursor (``None``: no more).

        ``open`` and ``playing``: live tables, oldest first; ``finished``: finished and abandoned tables from the
        database, newest first. ``limit`` defaults to ``page_size`` and is capped at ``max_page_size``; ``cursor``
        is the previous page's (``created~id`` or ``finished~id``); ``TableError`` 422 for a malformed one."""
        size = min(limit or self.settings.page_size, self.settings.max_page_size)
        after: tuple[str, str] | None = None
        if cursor:
            stamp, sep, last_id = cursor.partition("~")
            if not sep or not last_id:
                raise TableError(422, "request.invalid", "cursor: not a cursor this server gave (X-Next-Cursor)",
                                 {"field": "cursor", "detail": "not a cursor this server gave"})
            after = (stamp, last_id)
        if status == "finished":
            rows = await self.store.ended_tables(ENDED, after, size + 1)
            more = len(rows) > size
            rows = rows[:size]
            tables = [_table_from_row(r) for r in rows]
            last = rows[-1] if rows else None
            return tables, f"{last.finished}~{last.id}" if more and last is not None else None
        if self.cluster is not None:  # every process's tables, from the database: one page of the index
            chosen = await self.store.load_tables(statuses=(status,), after=after, limit=size + 1)
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
        rows = await self.store.load_tables(table_id=table_id, with_hands=True)
        if not rows:
            raise TableError(404, "table.not_found", f"no table {table_id!r}", {"table": table_id})
        if rows[0].status not in ENDED:
            raise TableError(409, "table.not_finished", "the game is not finished: its record is published at the end")
        return record_of(rows[0])

    async def replay(self, table_id: str) -> dict[str, Any]:
        """``{"record": RECORD, "steps": [...]}`` for a finished table (``docs/protocol.md``, replay)."""
        record = await self.record(table_id)
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

        fold(record, on_step=step)
        return {"record": record.to_dict(), "steps": steps}

    async def hello(self, table: Table, peer: Peer, token: str | None) -> None:
        """Seat ``peer`` by ``token`` (``None``: a spectator) and send ``welcome`` then a snapshot.

        ``TableError`` 403 for a wrong token (the connection stays, unseated), 429 beyond the table's connection
        caps (:meth:`Table.admit`).
        """

        async def go() -> None:
            seat = None if token is None else self.seat_of(table, token)
            table.admit(peer, seat)
            changed = table.attach(peer, seat)
            for row in changed:
                await self.store.update_seat(table.id, row)
            peer.send_message({"type": "welcome", "seat": seat, "table": table.to_dict()})
            table.send_snapshot(peer)
            if seat is not None:
                table.announce()
                if table.status == "open" and table.start_on_hello and self.only_bots_besides_one_person(table):
                    await self._begin(table)

        await on_owner(table, go)

    async def goodbye(self, table: Table, peer: Peer) -> None:
        """Forget a closed connection (a person's grace timer starts when their last connection goes)."""

        async def go() -> None:
            was_seated = peer.seat is not None
            table.detach(peer)
            if was_seated:
                table.announce()

        if table.task is not None and not table.task.done():
            await on_owner(table, go)
