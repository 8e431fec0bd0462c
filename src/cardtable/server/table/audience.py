"""What a table's audience gets (``docs/protocol.md``): each seat's ``update`` with its own view and legal actions,
the spectators' shared one (sent off the owner's path), broadcasts, the coalesced ``table`` announcements, and the
``TABLE`` and ``snapshot`` messages a connection is sent.

:class:`Audience` is a part of :class:`~cardtable.server.table.owner.Table`; it declares the table's attributes
it reads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from cardtable.engine import Action, Event, HandState, Match
from cardtable.server.core import messages
from cardtable.server.core.settings import Settings
from cardtable.server.storage.rows import TableRow
from cardtable.server.table.connections import Connection
from cardtable.server.table.seats import SeatState


class Audience:
    """The fan-out of a live table to its connections: seated persons and spectators."""

    id: str
    row: TableRow
    settings: Settings
    match: Match
    full_options: dict[str, Any]
    seats: list[SeatState]
    spectators: set[Connection]
    state: HandState | None
    hand_index: int
    version: int
    starts_at: float | None
    _announce: asyncio.TimerHandle | None
    _to_watch: list[tuple[str, tuple[Connection, ...]]]
    _watch_flush: asyncio.Handle | None
    _announced_at: float

    if TYPE_CHECKING:
        @property
        def game(self) -> str: ...

        def turn_dict(self) -> dict[str, Any] | None: ...

        def kept(self, seat: int) -> bool: ...

        @property
        def status(self) -> str: ...

    def _updates(self, state: HandState, events: list[Event], version: int) -> dict[int | None, str]:
        """Each viewer's ``update`` at ``version`` (seats with a connection, and ``None`` for the spectators,
        who all get the same text), encoded once per viewer."""
        texts: dict[int | None, str] = {}
        acting = self.acting()
        encode = messages.encode
        for viewer in self._viewers():
            texts[viewer] = encode({
                "type": "update", "v": version, "events": state.events_for(events, viewer),
                "view": state.view(viewer), "legal": self.legal_for(viewer, acting),
            })
        return texts

    def _viewers(self) -> list[int | None]:
        viewers: list[int | None] = [seat.row.seat for seat in self.seats if seat.connections]
        if self.spectators:
            viewers.append(None)
        return viewers

    def _send_by_seat(self, texts: dict[int | None, str]) -> None:
        for seat in self.seats:
            text = texts.get(seat.row.seat)
            if text is not None:
                for connection in seat.connections:
                    connection.send(text)
        if self.spectators and None in texts:
            self._send_spectators(texts[None])

    def flush_seats(self) -> None:
        """Write what the seats' connections have queued, now (``Outbox.flush``): the owner calls it once a step has
        queued its acks and updates, so that they leave in that step, each connection's in one write."""
        for seat in self.seats:
            for connection in seat.connections:
                connection.outbox.flush()

    def _send_spectators(self, text: str) -> None:
        """Queue ``text`` for every spectator, off the owner's path: the spectators present now get it in a callback
        right after the owner's current step, so a seat's ack and updates never wait behind a large audience
        (``bench/fanout.py``). Messages to spectators keep their order (:meth:`flush_spectators`)."""
        if not self.spectators:
            return
        self._to_watch.append((text, tuple(self.spectators)))
        if self._watch_flush is None:
            self._watch_flush = asyncio.get_running_loop().call_soon(self.flush_spectators)

    def flush_spectators(self) -> None:
        """Hand spectators what :meth:`_send_spectators` queued (called before any message to one spectator)."""
        self._watch_flush = None
        pending, self._to_watch = self._to_watch, []
        for text, connections in pending:
            for connection in connections:
                connection.send(text)

    def acting(self) -> Collection[int]:
        """The seats that may act now: none before the start, between hands, after the end."""
        state = self.state
        if state is None or state.is_over or self.status != "playing":
            return ()
        return state.to_act()

    def legal_for(self, seat: int | None, acting: Collection[int] | None = None) -> list[Action]:
        """``seat``'s legal actions now: empty for a spectator, between hands, for a seat that may not act and for a
        seat its stand-in keeps (``turn_clock.py``). ``acting`` is :meth:`acting` when the caller already has it (one
        update, many viewers)."""
        if seat is None or self.state is None or self.kept(seat):
            return []
        if seat not in (self.acting() if acting is None else acting):
            return []
        return self.state.legal_actions(seat)

    def all_connections(self) -> list[Connection]:
        """Every connection at the table, seated or watching."""
        connections = [connection for seat in self.seats for connection in seat.connections]
        connections.extend(self.spectators)
        return connections

    def broadcast(self, message: dict[str, Any]) -> None:
        """Send the same message to every connection (encoded once; queueing never waits, ``Connection.send``)."""
        text = messages.encode(message)
        for seat in self.seats:
            for connection in seat.connections:
                connection.send(text)
        self._send_spectators(text)

    def announce(self) -> None:
        """Tell every connection that seats, connections or status changed: one ``table`` message with the table
        as it is when sent, at most one per ``table_message_interval_s`` (changes in between are coalesced), so
        connections coming and going cost each connection O(1) messages a second, not one per change."""
        if self._announce is not None:
            return
        loop = asyncio.get_running_loop()
        wait = self._announced_at + self.settings.table_message_interval_s - loop.time()
        if wait <= 0:
            self._send_table()
        else:
            self._announce = loop.call_later(wait, self._send_table)

    def _send_table(self) -> None:
        self._announce = None
        self._announced_at = asyncio.get_running_loop().time()
        self.broadcast({"type": "table", "table": self.to_dict()})

    def to_dict(self) -> dict[str, Any]:
        """The protocol's ``TABLE``: never a token."""
        seats: list[dict[str, Any]] = []
        for seat in self.seats:
            row = seat.row
            if row.kind == "open":
                seats.append({"seat": row.seat, "kind": "open"})
            elif row.kind == "bot":
                seats.append({"seat": row.seat, "kind": "bot", "bot": row.bot, "name": row.name,
                              "replaceable": seat.replaceable and self.status == "open"})
            else:
                account = seat.account[1] if seat.account and seat.account[0] == row.token_hash else None
                seats.append({"seat": row.seat, "kind": "person", "name": row.name, "connected": bool(seat.connections),
                              "standin": seat.standin, "account": account})
        starts_at = self.starts_at if self.status == "open" else None
        return {
            "id": self.id, "game": self.game, "options": self.full_options, "status": self.status, "seats": seats,
            "rated": not self.row.seed_chosen,
            "hand": max(self.hand_index, 0), "totals": list(self.match.totals), "winners": self.match.winners()
            if self.match.is_over else None, "created": self.row.created,
            "starts_at": None if starts_at is None else int(starts_at * 1000),
            "starts_in_ms": None if starts_at is None else max(0, int((starts_at - time.time()) * 1000)),
            "pace": self.row.pace, "turn_clock": self.row.turn_clock, "turn": self.turn_dict(),
        }

    def snapshot(self, seat: int | None) -> dict[str, Any]:
        """The protocol's ``snapshot`` for ``seat`` (``None``: a spectator)."""
        state = self.state
        return {
            "type": "snapshot", "v": self.version, "table": self.to_dict(),
            "view": None if state is None else state.view(seat), "legal": self.legal_for(seat),
            "hand": max(self.hand_index, 0), "totals": list(self.match.totals),
            "results": [{"scores": list(r.scores), "ended": r.ended} for r in self.match.results],
        }

    def send_snapshot(self, connection: Connection) -> None:
        """Send ``connection`` a snapshot for its seat (after what spectators still have queued, to keep the order)."""
        if connection.seat is None:
            self.flush_spectators()
        connection.send_message(self.snapshot(connection.seat))
