"""Who sits at a live table and who is there: seats taken and given up (for the lobby, on the owner), connections
admitted, attached and detached, and the stand-in bot that plays for a person who left or stayed away longer than
the table's grace.

:class:`Presence` is a part of :class:`~cardtable.server.table.owner.Table`; it declares the table's attributes
it reads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cardtable.server.core.errors import TableError
from cardtable.server.core.settings import Settings
from cardtable.server.core.tokens import hash_token, new_token, token_matches
from cardtable.server.storage.rows import SeatRow, TableRow
from cardtable.server.storage.store import Store
from cardtable.server.table.connections import Connection
from cardtable.server.table.fairness import FairGate
from cardtable.server.table.seats import SeatState

STANDIN_BOTS = {"nerts": "greedy:medium", "anemone": "heuristic"}
"""The bot that plays for a person who left or stayed away longer than the table's grace."""


class Presence:
    """The seats of a live table and the connections at them."""

    id: str
    row: TableRow
    store: Store
    settings: Settings
    seats: list[SeatState]
    spectators: set[Connection]
    gate: FairGate | None
    last_presence: float
    last_person: float
    play_now: bool

    if TYPE_CHECKING:
        @property
        def game(self) -> str: ...

        @property
        def status(self) -> str: ...

        def submit_call(self, fn: Callable[[], Awaitable[Any]]) -> asyncio.Future[Any]: ...

        def all_connections(self) -> list[Connection]: ...

        def send_snapshot(self, connection: Connection) -> None: ...

        def announce(self) -> None: ...

        def _sync_bots(self) -> None: ...

        def presence_changed(self) -> None: ...

        def kept(self, seat: int) -> bool: ...

    # -- seats, for the lobby (on the owner, through submit_call) ------------------------------------------

    def seat_of(self, token: str | None) -> int:
        """The seat ``token`` holds here; ``TableError`` 403 for a missing or wrong token."""
        if token:
            for seat in self.seats:
                if seat.row.kind == "person" and token_matches(token, seat.row.token_hash):
                    return seat.row.seat
        raise TableError(403, "token.bad", "bad token: it holds no seat at this table")

    async def take_seat(self, name: str, seat: int | None) -> tuple[int, str]:
        """Seat the person ``name`` before the start at ``seat`` (or the first open one, else the first bot seat a
        person may take, whose bot then leaves) and store the seat; returns the seat and its new token.
        ``TableError`` 409 ``table.started``, ``seat.taken`` or ``table.full``, 422 ``seat.no_such``."""
        if self.status != "open":
            raise TableError(409, "table.started", "the game has already started")
        if seat is not None:
            if not 0 <= seat < len(self.seats):
                raise TableError(422, "seat.no_such", f"seat: no seat {seat} (the table has {len(self.seats)})",
                                 {"seat": seat, "seats": len(self.seats)})
            chosen = self.seats[seat]
            if chosen.row.kind != "open" and not (chosen.row.kind == "bot" and chosen.replaceable):
                raise TableError(409, "seat.taken", f"seat {seat} is taken", {"seat": seat})
        else:
            free = [s for s in self.seats if s.row.kind == "open"]
            free += [s for s in self.seats if s.row.kind == "bot" and s.replaceable]
            if not free:
                raise TableError(409, "table.full", "the table is full")
            chosen = free[0]
        token = new_token()
        chosen.row.kind, chosen.row.name, chosen.row.token_hash = "person", name, hash_token(token)
        chosen.row.bot, chosen.replaceable = None, False
        await self.store.update_seat(self.id, chosen.row)
        return chosen.row.seat, token

    def release_seat(self, seat: int, bot: str | None = None) -> SeatRow:
        """Give up the person's ``seat``; returns its row, changed, for the caller to store. Its connections watch
        from now on. Before the start the seat opens again, or, with ``bot`` (a Play now table's), that bot sits
        in it again, replaceable; in play the stand-in bot plays it at once, with no grace wait (the token stays
        valid: the stand-in leaves when the person connects again)."""
        state = self.seats[seat]
        for connection in list(state.connections):  # their connections watch from now on
            state.connections.discard(connection)
            connection.seat = None
            self.spectators.add(connection)
            self.send_snapshot(connection)
        if self.status == "open":
            if bot is not None:
                state.row.kind, state.row.name, state.row.token_hash = "bot", f"bot-{state.row.seat}", None
                state.row.bot, state.replaceable = bot, True
            else:
                state.row.kind, state.row.name, state.row.token_hash = "open", None, None
        elif self.status == "playing":
            state.row.left = True
            state.standin = STANDIN_BOTS[self.game]
            if state.away_timer is not None:
                state.away_timer.cancel()
                state.away_timer = None
            self._sync_bots()
            self.presence_changed()  # between hands, a seat left holds nobody (handover.py)
        return state.row

    def mark_play_now(self) -> None:
        """Make this a Play now table: its bot seats are replaceable until the start."""
        self.play_now = True
        for other in self.seats:
            if other.row.kind == "bot":
                other.replaceable = True

    # -- connections and presence (called on the owner through submit_call) -----------------------------

    def people_connected(self) -> bool:
        """Whether a seated person has a connection open."""
        return any(seat.connections for seat in self.seats)

    def admit(self, connection: Connection, seat: int | None) -> None:
        """``TableError`` 429 if ``connection`` may not join as ``seat`` (``None``: a spectator): the seat already has
        ``max_connections_per_token`` connections, the connection's address ``max_connections_per_address_per_table``
        at this table, or the table ``max_spectators`` spectators (``docs/protocol.md``, "Limits")."""
        settings = self.settings
        if seat is None:
            if len(self.spectators) >= settings.max_spectators:
                raise TableError(429, "connection.spectator_limit",
                                 f"too many spectators: this table allows {settings.max_spectators}",
                                 {"limit": settings.max_spectators})
        elif len(self.seats[seat].connections) >= settings.max_connections_per_token:
            limit = settings.max_connections_per_token
            raise TableError(429, "connection.seat_limit", f"too many connections for this seat: at most {limit}",
                             {"limit": limit})
        same = sum(1 for other in self.all_connections() if other.address == connection.address)
        if same >= settings.max_connections_per_address_per_table:
            limit = settings.max_connections_per_address_per_table
            raise TableError(429, "connection.address_limit",
                             f"too many connections to this table from one address: at most {limit}", {"limit": limit})

    def attach(self, connection: Connection, seat: int | None) -> list[SeatRow]:
        """Seat ``connection`` (``None``: as a spectator); returns the seat rows that changed and need storing."""
        connection.seat = seat
        changed: list[SeatRow] = []
        self.last_presence = time.monotonic()
        if seat is None:
            self.spectators.add(connection)
            self.presence_changed()  # between hands, it is told who is ready (handover.py)
            return changed
        self.last_person = self.last_presence
        state = self.seats[seat]
        state.connections.add(connection)
        if state.away_timer is not None:
            state.away_timer.cancel()
            state.away_timer = None
        if self.kept(seat):  # a turn-based seat its stand-in keeps (turn_clock.py): the person watches
            self.presence_changed()
            return changed
        if state.row.left:
            state.row.left = False
            changed.append(state.row)
        if state.standin is not None:
            state.standin = None
            self._sync_bots()
        self.presence_changed()  # between hands, the next hand waits for this person too (handover.py)
        return changed

    def detach(self, connection: Connection) -> None:
        """Forget ``connection``; a person left with no connection is played by a bot after the table's grace."""
        self.spectators.discard(connection)
        if self.gate is not None:
            self.gate.forget(connection)
        self.last_presence = time.monotonic()
        if connection.seat is None:
            return
        self.last_person = self.last_presence
        state = self.seats[connection.seat]
        state.connections.discard(connection)
        if not state.connections:
            self._start_away_timer(state)
            self.presence_changed()  # between hands, a person gone holds nobody (handover.py)

    def _start_away_timer(self, state: SeatState) -> None:
        if self.status != "playing" or state.connections or state.standin is not None or state.row.kind != "person":
            return
        if self.row.turn_based:  # no grace: the seat's time bank decides (turn_clock.py)
            return
        if state.away_timer is not None:
            state.away_timer.cancel()
        loop = asyncio.get_running_loop()

        def fire() -> None:
            state.away_timer = None
            self.submit_call(lambda: self._stand_in(state))

        state.away_timer = loop.call_later(self.row.grace_seconds, fire)

    async def _stand_in(self, state: SeatState) -> None:
        if state.connections or self.status != "playing" or state.row.kind != "person":
            return
        state.standin = STANDIN_BOTS[self.game]
        self._sync_bots()
        self.announce()
