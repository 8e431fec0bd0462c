"""Relayed connections: a WebSocket connection to a table owned by another process, carried by the processes'
:class:`~cardtable.server.cluster.mailbox.Mailbox` (``docs/architecture.md``, "Several server processes": "Relay").

The process holding the client's socket (the origin) publishes its frames to the owner (``open``, ``in``, ``bye``);
the owner serves them with the very same connection code as a direct connection (``server/edge/ws.py``) on an
:class:`OwnerSide`, whose sends go back to the origin (``opened``, ``out``, ``close``). The texts the owner sends one
connection in a row travel as one ``out`` (a list of texts), and the origin queues them on its :class:`OriginSide`'s
:class:`~cardtable.server.table.connections.Connection`, whose writer sends them: the same outbox as a direct connection,
so a relayed slow reader is dropped as a direct one is (``max_outbox``). :class:`Relays` holds both sides of every
relayed connection of this process.

Relay frames are a format between processes of one version: restart every process together to change it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from redis.asyncio import Redis

from cardtable.server.cluster.lease import Leases
from cardtable.server.cluster.mailbox import Mailbox
from cardtable.server.cluster.redis_clients import ALIVE_PREFIX
from cardtable.server.core.errors import RECONNECT_CODE
from cardtable.server.table.connections import Connection, write_outbox

if TYPE_CHECKING:
    from starlette.websockets import WebSocket

    from cardtable.server.cluster.host import ServeRelayed, TableHost

log = logging.getLogger("cardtable.server.cluster.relay")

OPEN_TIMEOUT_S = 5.0
"""Seconds a relayed connection waits for the owner to answer ``open`` before it is closed with
:data:`RECONNECT_CODE` (the owner is gone, or missed the message)."""



class OwnerSide:
    """The owner's side of a relayed connection (the table is here), shaped like the Starlette ``WebSocket`` that
    ``server/edge/ws.py`` serves: frames arrive in :attr:`inbox` (ASGI ``websocket.receive`` /
    ``websocket.disconnect`` events), and what is sent goes back to the ``origin`` process, the one holding the
    client's socket, under connection id ``conn``."""

    def __init__(self, relays: Relays, origin: str, conn: str) -> None:
        self.relays = relays
        self.origin = origin
        self.conn = conn
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.closed = False

    async def receive(self) -> dict[str, Any]:
        """The next frame from the client (or ``websocket.disconnect``)."""
        return await self.inbox.get()

    async def send_text(self, text: str) -> None:
        """Send one message to the client, through its process: the texts sent in a row travel as one ``out``."""
        if not self.closed:
            queue = self.relays.mailbox.queued(self.origin)
            last = queue[-1] if queue else None
            if last is not None and last.get("conn") == self.conn and last["op"] == "out":
                last["data"].append(text)
            else:
                queue.append({"op": "out", "conn": self.conn, "data": [text]})

    async def close(self, code: int = 1000) -> None:
        """Close the client's socket with ``code`` (its process closes it) and end this connection."""
        if not self.closed:
            self.closed = True
            self.relays.mailbox.send(self.origin, {"op": "close", "conn": self.conn, "code": code})
        self.inbox.put_nowait({"type": "websocket.disconnect", "code": code})


@dataclass(slots=True, eq=False)
class OriginSide:
    """The origin's side of a relayed connection (the client's socket is here): the client's ``connection`` (its
    outbox, drained by the socket's writer), the ``table`` and its ``owner`` process."""

    connection: Connection
    table: str
    owner: str
    answered: bool = False
    """Whether the owner answered ``open`` yet."""
    by_owner: bool = False
    """Whether the owner closed it (no ``bye`` to send back)."""
    timer: asyncio.TimerHandle | None = field(default=None)


class Relays:
    """The relayed connections of this process, both sides: :attr:`origin_sides` (the client's socket is here)
    and :attr:`owner_sides` (the table is here). ``mailbox``: how messages travel. Set :attr:`host` (this process's
    lobby) and :attr:`serve` before the first ``open`` arrives."""

    def __init__(self, mailbox: Mailbox) -> None:
        self.mailbox = mailbox
        self.host: TableHost | None = None
        """This process's lobby: the tables a relayed connection may be served for."""
        self.serve: ServeRelayed | None = None
        """How a connection relayed here is served (set by the app); without it one is closed with
        :data:`RECONNECT_CODE`."""
        self.draining = False
        """Set when this process stops: ``open`` is answered with :data:`RECONNECT_CODE`."""
        self.origin_sides: dict[str, OriginSide] = {}
        """Connection id -> the origin's side of a connection relayed from here to its table's owner."""
        self.owner_sides: dict[str, OwnerSide] = {}
        """Connection id -> the owner's side of a connection relayed here from its client's process."""
        mailbox.handlers.update(out=self._out, close=self._close, opened=self._opened, open=self._open,
                                bye=self._bye)
        mailbox.handlers["in"] = self._in

    # -- origin side ---------------------------------------------------------------------------------

    async def relay(self, websocket: WebSocket, table_id: str, owner: str, address: str,
                    max_outbox: int) -> None:
        """Serve a client connection to ``table_id``, owned by process ``owner``, by relaying it both ways until
        either end closes. The owner's messages wait in a :class:`Connection` outbox (``max_outbox`` at most: a slower
        client is dropped, as a direct one is); a relay the owner does not answer within
        :data:`OPEN_TIMEOUT_S` is closed with :data:`RECONNECT_CODE`."""
        conn = uuid.uuid4().hex
        side = OriginSide(Connection(address=address, max_outbox=max_outbox), table_id, owner)
        self.origin_sides[conn] = side
        self.mailbox.send(owner, {"op": "open", "conn": conn, "table": table_id, "from": self.mailbox.process,
                                  "address": address})
        side.timer = asyncio.get_running_loop().call_later(OPEN_TIMEOUT_S, self._unanswered, side)

        async def upstream() -> None:
            while True:
                received = await websocket.receive()
                if received["type"] == "websocket.disconnect":
                    return
                data = received.get("text")
                if data is None:
                    data = (received.get("bytes") or b"").decode(errors="replace")
                self.mailbox.send(owner, {"op": "in", "conn": conn, "data": data})

        up = asyncio.create_task(upstream())
        down = asyncio.create_task(write_outbox(websocket, side.connection))
        try:
            await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (up, down):
                task.cancel()
            for task in (up, down):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if side.timer is not None:
                side.timer.cancel()
            self.origin_sides.pop(conn, None)
            if not side.by_owner:  # the client left, or was dropped here (slow): the owner ends its side
                self.mailbox.send(owner, {"op": "bye", "conn": conn})

    def reconnect(self, table_ids: set[str] | None = None) -> None:
        """Close the connections relayed from here (those to ``table_ids``, all by default) with
        :data:`RECONNECT_CODE`: their clients connect again, to whichever process then owns the table."""
        for side in list(self.origin_sides.values()):
            if table_ids is None or side.table in table_ids:
                self._close_origin_side(side, RECONNECT_CODE)

    def _close_origin_side(self, side: OriginSide, code: int) -> None:
        if side.timer is not None:
            side.timer.cancel()
            side.timer = None
        side.answered = True
        if not side.connection.closed:
            side.connection.close_code = code
            side.connection.close()

    def _unanswered(self, side: OriginSide) -> None:
        side.timer = None
        if not side.answered:
            self._close_origin_side(side, RECONNECT_CODE)

    def _answered(self, body: dict[str, Any]) -> OriginSide | None:
        side = self.origin_sides.get(body.get("conn", ""))
        if side is not None and not side.answered:
            side.answered = True
            if side.timer is not None:
                side.timer.cancel()
                side.timer = None
        return side

    def _opened(self, body: dict[str, Any]) -> None:
        self._answered(body)

    def _out(self, body: dict[str, Any]) -> None:
        side = self._answered(body)
        if side is not None:
            send = side.connection.send
            for text in body["data"]:
                send(text)

    def _close(self, body: dict[str, Any]) -> None:
        side = self._answered(body)
        if side is not None:
            side.by_owner = True
            self._close_origin_side(side, int(body.get("code", 1000)))

    # -- owner side ----------------------------------------------------------------------------------

    def _in(self, body: dict[str, Any]) -> None:
        owner_side = self.owner_sides.get(body.get("conn", ""))
        if owner_side is not None:
            owner_side.inbox.put_nowait({"type": "websocket.receive", "text": body["data"]})

    def _bye(self, body: dict[str, Any]) -> None:
        owner_side = self.owner_sides.get(body.get("conn", ""))
        if owner_side is not None:
            owner_side.closed = True
            owner_side.inbox.put_nowait({"type": "websocket.disconnect", "code": 1000})

    def _open(self, body: dict[str, Any]) -> None:
        host, serve = self.host, self.serve
        assert host is not None
        origin, conn = str(body["from"]), str(body["conn"])
        table = host.tables.get(str(body.get("table")))
        if table is None or self.draining or serve is None:
            self.mailbox.send(origin, {"op": "close", "conn": conn, "code": RECONNECT_CODE})
            return
        owner_side = OwnerSide(self, origin, conn)
        self.owner_sides[conn] = owner_side
        self.mailbox.send(origin, {"op": "opened", "conn": conn})

        async def run() -> None:
            try:
                await serve(table, owner_side, str(body.get("address", "?")))  # type: ignore[arg-type]
            except Exception:
                log.exception("a relayed connection to table %s failed", table.id)
            finally:
                self.owner_sides.pop(conn, None)
                await owner_side.close(RECONNECT_CODE)  # not ended by its client nor closed by its writer: reconnect

        asyncio.get_running_loop().create_task(run())

    def end_owner_sides(self, origins: set[str] | None = None, code: int = RECONNECT_CODE) -> None:
        """End the connections relayed here from ``origins`` (from every process by default), as if their
        clients had left with ``code``."""
        for owner_side in list(self.owner_sides.values()):
            if origins is None or owner_side.origin in origins:
                owner_side.inbox.put_nowait({"type": "websocket.disconnect", "code": code})

    def reset(self) -> None:
        """Messages may have been lost: every relayed connection, both sides, starts again (its client
        reconnects)."""
        self.reconnect()
        self.end_owner_sides()

    async def end_orphans(self, redis: Redis, leases: Leases) -> None:
        """End the relayed connections whose other end is gone (one check, made with each lease renewal): here as
        the owner, those from a process no longer alive (``ct:alive:{process}`` gone: closed as with 1006); here as
        the origin, those whose table changed owner or has none any more (closed with :data:`RECONNECT_CODE`).
        ``redis`` answers the liveness checks, ``leases`` who owns each table; Redis errors propagate."""
        # Owner side: connections from a process that stopped.
        origins = sorted({r.origin for r in self.owner_sides.values()})
        if origins:
            alive = await redis.exists(*(ALIVE_PREFIX + o for o in origins)) if len(origins) == 1 else None
            gone: set[str] = set()
            if alive is not None:
                if not alive:
                    gone = set(origins)
            else:
                pipe = redis.pipeline(transaction=False)
                for origin in origins:
                    pipe.exists(ALIVE_PREFIX + origin)
                gone = {o for o, n in zip(origins, await pipe.execute(), strict=True) if not n}
            if gone:  # their close still goes out: if such a process lives after all (a pause, a slow start),
                # its client is told to reconnect instead of waiting for updates that never come
                self.end_owner_sides(gone, 1006)
        # Origin side: relays whose table changed owner (or has none any more).
        if self.origin_sides:
            items = list(self.origin_sides.values())
            relayed = sorted({r.table for r in items})
            now = dict(zip(relayed, await leases.owners(relayed), strict=True))
            moved = {r.table for r in items if (owner := now[r.table]) is None or owner[0] != r.owner}
            if moved:
                self.reconnect(moved)
