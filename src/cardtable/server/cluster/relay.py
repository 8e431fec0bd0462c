"""Messages between the processes of a service, and the WebSocket connections relayed through them, on Redis
pub/sub (``docs/architecture.md``, "Several server processes": "Relay").

- :class:`Mailbox`: each process listens on its channel ``ct:proc:{process}``. What one loop turn queues for another
  process (:meth:`Mailbox.send`) is published as one pub/sub message, a MessagePack array of at most
  :data:`MAX_FRAMES` maps ``{"op": ...}``, in the order queued. The publisher writes on a Redis connection of its
  own that asks for no replies (``CLIENT REPLY OFF``): a publish is one socket write, with no round trip to wait for
  nor reply to parse. A publish that fails (Redis away) loses what it carried, so every relayed connection is then
  closed with :data:`RECONNECT_CODE` (its client reconnects and resyncs), as when the listener's connection breaks.
- :class:`Relays`: a connection to a table owned by another process. The process holding the client's socket (the
  origin) publishes its frames to the owner (``open``, ``in``, ``bye``); the owner serves them with the very same
  connection code as a direct connection (``server/edge/ws.py``) on a :class:`RemoteSocket`, whose sends go back to the
  origin (``opened``, ``out``, ``close``). The texts the owner sends one connection in a row travel as one ``out``
  (a list of texts), and the origin queues them on a :class:`~cardtable.server.table.actions.Peer` whose writer sends them:
  the same outbox as a direct connection, so a relayed slow reader is dropped as a direct one is (``max_outbox``).

Relay frames are a format between processes of one version: restart every process together to change it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
from redis.asyncio import Redis
from redis.asyncio.connection import AbstractConnection

from cardtable.server.core.errors import RECONNECT_CODE
from cardtable.server.table.connections import Peer, write_outbox

if TYPE_CHECKING:
    from starlette.websockets import WebSocket

    from cardtable.server.cluster.host import ServeRelayed, TableHost

log = logging.getLogger("cardtable.server.cluster.relay")


MAX_FRAMES = 512
"""Most messages published to one process as one pub/sub message."""

OPEN_TIMEOUT_S = 5.0
"""Seconds a relayed connection waits for the owner to answer ``open`` before it is closed with
:data:`RECONNECT_CODE` (the owner is gone, or missed the message)."""

PUBLISH_TIMEOUT_S = 5.0
"""Seconds one write of the publisher may take (Redis not reading: unreachable) before it counts as failed."""

_encode_frames = msgspec.msgpack.Encoder().encode
_decode_frames = msgspec.msgpack.Decoder(list[dict[str, Any]]).decode

Handler = Callable[[dict[str, Any]], None]


def channel(process: str) -> str:
    """The pub/sub channel of ``process``: ``ct:proc:{process}``."""
    return f"ct:proc:{process}"


async def _as_is(response: Any) -> Any:
    """The subscriber's push handler: a pub/sub message as it came. (redis-py's default handler formats every
    message into a debug line whether or not debug logging is on: half of what receiving one cost.)"""
    return response


class Mailbox:
    """This process's messages to and from the others. ``redis``: the client whose pool the subscriber uses;
    ``control``: the client whose connection settings the publisher's own connection copies; ``process``: this
    process's id; ``on_lost``: called when messages may have been lost (the subscriber reconnected, or a publish
    failed). Fill :attr:`handlers` (op -> what handles a message of that op: called in the listener, must not
    wait) and :attr:`channels` (other channels to listen on -> what handles their text messages) before
    :meth:`listen_loop` starts."""

    def __init__(self, redis: Redis, control: Redis, process: str, on_lost: Callable[[], None]) -> None:
        self.redis = redis
        self.control = control
        self.process = process
        self.on_lost = on_lost
        self.handlers: dict[str, Handler] = {}
        self.channels: dict[str, Callable[[str], None]] = {}
        self._pending: dict[str, list[dict[str, Any]]] = {}
        """Channel -> messages queued for it since the last publish, in order."""
        self._wake: asyncio.Future[None] | None = None
        self._writing = False
        self.received = 0
        """Messages received (for the benchmark and tests)."""
        self.published = 0
        """Pub/sub messages published."""

    # -- sending ----------------------------------------------------------------------------------------

    def send(self, process: str, message: dict[str, Any]) -> None:
        """Queue ``message`` for ``process`` (published in order, after this loop turn; never waits)."""
        self.queued(process).append(message)

    def queued(self, process: str) -> list[dict[str, Any]]:
        """The messages queued for ``process`` and not yet published (append to it to queue one more)."""
        name = channel(process)
        queue = self._pending.get(name)
        if queue is None:
            queue = self._pending[name] = []
            wake = self._wake
            if wake is not None:
                self._wake = None
                if not wake.done():
                    wake.set_result(None)
        return queue

    def idle(self) -> bool:
        """Whether everything queued has been written."""
        return not self._pending and not self._writing

    async def _publisher(self) -> AbstractConnection:
        """A connection of the publisher's own, that Redis sends no replies on. ``ResponseError`` when Redis
        refuses ``CLIENT REPLY`` (an ACL): replies nobody reads would pile up in Redis."""
        pool = self.control.connection_pool
        conn = pool.connection_class(**{**pool.connection_kwargs, "socket_timeout": None,
                                        "health_check_interval": 0})
        try:
            async with asyncio.timeout(PUBLISH_TIMEOUT_S):
                await conn.connect()  # type: ignore[no-untyped-call]
                # OFF has no reply when Redis takes it: the ON after it answers OK (an error if OFF was refused),
                # and then it is off for good.
                await conn.send_packed_command(conn.pack_commands(
                    [("CLIENT", "REPLY", "OFF"), ("CLIENT", "REPLY", "ON")]), check_health=False)
                if await conn.read_response() not in (b"OK", "OK"):
                    raise ConnectionError("Redis did not take CLIENT REPLY OFF")
                await conn.send_command("CLIENT", "REPLY", "OFF")
        except BaseException:
            with contextlib.suppress(Exception):
                await conn.disconnect(nowait=True)
            raise
        return conn

    async def publish_loop(self) -> None:
        """Publish what is queued, one pub/sub message per process (per :data:`MAX_FRAMES`) after each loop turn
        that queued anything. Runs until cancelled."""
        conn: AbstractConnection | None = None
        try:
            while True:
                if not self._pending:
                    self._wake = asyncio.get_running_loop().create_future()
                    await self._wake
                pending, self._pending = self._pending, {}
                commands = [("PUBLISH", name, _encode_frames(messages[i:i + MAX_FRAMES]))
                            for name, messages in pending.items() for i in range(0, len(messages), MAX_FRAMES)]
                self._writing = True
                try:
                    if conn is None or not conn.is_connected:  # never one redis-py reconnected (replies on)
                        conn = await self._publisher()
                    async with asyncio.timeout(PUBLISH_TIMEOUT_S):
                        await conn.send_packed_command(conn.pack_commands(commands), check_health=False)
                    self.published += len(commands)
                except Exception as error:  # Redis away: those messages are lost; the relays start again
                    log.warning("publishing %d messages failed: %r", sum(map(len, pending.values())), error)
                    if conn is not None:
                        with contextlib.suppress(Exception):
                            await conn.disconnect(nowait=True)
                    conn = None
                    self.on_lost()
                    await asyncio.sleep(0.2)
                finally:
                    self._writing = False
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.disconnect(nowait=True)

    # -- receiving --------------------------------------------------------------------------------------

    async def listen_loop(self) -> None:
        """Listen on this process's channel (and :attr:`channels`), handing each message to its handler;
        reconnects when the connection breaks (then :attr:`on_lost`). Runs until cancelled."""
        first = True
        while True:
            pubsub = self.redis.pubsub(ignore_subscribe_messages=True, push_handler_func=_as_is)
            try:
                await pubsub.subscribe(channel(self.process), *self.channels)
                if not first:  # messages may have been lost meanwhile: every relay starts again
                    self.on_lost()
                first = False
                while True:
                    message = await pubsub.get_message(timeout=1.0)
                    if message is not None and message["type"] == "message":
                        self.receive(message["channel"], message["data"])  # bytes: responses are not decoded
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("the pub/sub connection failed (%s): reconnecting", error)
                self.on_lost()
                await asyncio.sleep(0.5)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]

    def receive(self, name: bytes, data: bytes) -> None:
        """Handle one pub/sub message: ``data`` published on channel ``name``."""
        other = self.channels.get(name.decode())
        if other is not None:
            other(data.decode())
            return
        try:
            bodies = _decode_frames(data)
        except (msgspec.DecodeError, TypeError):
            log.warning("ignored a malformed message on %s", name)
            return
        self.received += len(bodies)
        handlers = self.handlers
        for body in bodies:
            handler = handlers.get(body.get("op", ""))
            if handler is not None:
                handler(body)


class RemoteSocket:
    """The owner's side of a relayed connection, shaped like the Starlette ``WebSocket`` that ``server/edge/ws.py``
    serves: frames arrive in :attr:`inbox` (ASGI ``websocket.receive`` / ``websocket.disconnect`` events), and
    what is sent goes back to the process holding the client's socket."""

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
class Relayed:
    """The origin's side of a relayed connection: the client's ``peer`` (its outbox, drained by the socket's
    writer), the ``table`` and its ``owner`` process."""

    peer: Peer
    table: str
    owner: str
    answered: bool = False
    """Whether the owner answered ``open`` yet."""
    by_owner: bool = False
    """Whether the owner closed it (no ``bye`` to send back)."""
    timer: asyncio.TimerHandle | None = field(default=None)


class Relays:
    """The relayed connections of this process, both sides: :attr:`relays` (origin: the client's socket is
    here) and :attr:`remotes` (owner: the table is here). ``mailbox``: how messages travel."""

    def __init__(self, mailbox: Mailbox) -> None:
        self.mailbox = mailbox
        self.manager: TableHost | None = None
        self.serve: ServeRelayed | None = None
        """How a connection relayed here is served (set by the app); without it one is closed with
        :data:`RECONNECT_CODE`."""
        self.draining = False
        """Set when this process stops: ``open`` is answered with :data:`RECONNECT_CODE`."""
        self.relays: dict[str, Relayed] = {}
        """Origin side: connection id -> its relay."""
        self.remotes: dict[str, RemoteSocket] = {}
        """Owner side: connection id -> its socket."""
        mailbox.handlers.update(out=self._out, close=self._close, opened=self._opened, open=self._open,
                                bye=self._bye)
        mailbox.handlers["in"] = self._in

    # -- origin side ---------------------------------------------------------------------------------

    async def relay(self, websocket: WebSocket, table_id: str, owner: str, address: str,
                    max_outbox: int) -> None:
        """Serve a client connection to ``table_id``, owned by process ``owner``, by relaying it both ways until
        either end closes. The owner's messages wait in a :class:`Peer` outbox (``max_outbox`` at most: a slower
        client is dropped, as a direct one is); a relay the owner does not answer within
        :data:`OPEN_TIMEOUT_S` is closed with :data:`RECONNECT_CODE`."""
        conn = uuid.uuid4().hex
        relayed = Relayed(Peer(address=address, max_outbox=max_outbox), table_id, owner)
        self.relays[conn] = relayed
        self.mailbox.send(owner, {"op": "open", "conn": conn, "table": table_id, "from": self.mailbox.process,
                                  "address": address})
        relayed.timer = asyncio.get_running_loop().call_later(OPEN_TIMEOUT_S, self._unanswered, relayed)

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
        down = asyncio.create_task(write_outbox(websocket, relayed.peer))
        try:
            await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (up, down):
                task.cancel()
            for task in (up, down):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if relayed.timer is not None:
                relayed.timer.cancel()
            self.relays.pop(conn, None)
            if not relayed.by_owner:  # the client left, or was dropped here (slow): the owner ends its side
                self.mailbox.send(owner, {"op": "bye", "conn": conn})

    def reconnect(self, table_ids: set[str] | None = None) -> None:
        """Close the relayed connections here (those to ``table_ids``, all by default) with
        :data:`RECONNECT_CODE`: their clients connect again, to whichever process then owns the table."""
        for relayed in list(self.relays.values()):
            if table_ids is None or relayed.table in table_ids:
                self._close_relayed(relayed, RECONNECT_CODE)

    def _close_relayed(self, relayed: Relayed, code: int) -> None:
        if relayed.timer is not None:
            relayed.timer.cancel()
            relayed.timer = None
        relayed.answered = True
        if not relayed.peer.closed:
            relayed.peer.close_code = code
            relayed.peer.close()

    def _unanswered(self, relayed: Relayed) -> None:
        relayed.timer = None
        if not relayed.answered:
            self._close_relayed(relayed, RECONNECT_CODE)

    def _answered(self, body: dict[str, Any]) -> Relayed | None:
        relayed = self.relays.get(body.get("conn", ""))
        if relayed is not None and not relayed.answered:
            relayed.answered = True
            if relayed.timer is not None:
                relayed.timer.cancel()
                relayed.timer = None
        return relayed

    def _opened(self, body: dict[str, Any]) -> None:
        self._answered(body)

    def _out(self, body: dict[str, Any]) -> None:
        relayed = self._answered(body)
        if relayed is not None:
            send = relayed.peer.send
            for text in body["data"]:
                send(text)

    def _close(self, body: dict[str, Any]) -> None:
        relayed = self._answered(body)
        if relayed is not None:
            relayed.by_owner = True
            self._close_relayed(relayed, int(body.get("code", 1000)))

    # -- owner side ----------------------------------------------------------------------------------

    def _in(self, body: dict[str, Any]) -> None:
        remote = self.remotes.get(body.get("conn", ""))
        if remote is not None:
            remote.inbox.put_nowait({"type": "websocket.receive", "text": body["data"]})

    def _bye(self, body: dict[str, Any]) -> None:
        remote = self.remotes.get(body.get("conn", ""))
        if remote is not None:
            remote.closed = True
            remote.inbox.put_nowait({"type": "websocket.disconnect", "code": 1000})

    def _open(self, body: dict[str, Any]) -> None:
        manager, serve = self.manager, self.serve
        assert manager is not None
        origin, conn = str(body["from"]), str(body["conn"])
        table = manager.tables.get(str(body.get("table")))
        if table is None or self.draining or serve is None:
            self.mailbox.send(origin, {"op": "close", "conn": conn, "code": RECONNECT_CODE})
            return
        remote = RemoteSocket(self, origin, conn)
        self.remotes[conn] = remote
        self.mailbox.send(origin, {"op": "opened", "conn": conn})

        async def run() -> None:
            try:
                await serve(table, remote, str(body.get("address", "?")))  # type: ignore[arg-type]
            except Exception:
                log.exception("a relayed connection to table %s failed", table.id)
            finally:
                self.remotes.pop(conn, None)
                await remote.close(RECONNECT_CODE)  # not ended by its client nor closed by its writer: reconnect

        asyncio.get_running_loop().create_task(run())

    def end_remotes(self, origins: set[str] | None = None, code: int = RECONNECT_CODE) -> None:
        """End the connections relayed here from ``origins`` (from every process by default), as if their
        clients had left with ``code``."""
        for remote in list(self.remotes.values()):
            if origins is None or remote.origin in origins:
                remote.inbox.put_nowait({"type": "websocket.disconnect", "code": code})

    def reset(self) -> None:
        """Messages may have been lost: every relayed connection, both sides, starts again (its client
        reconnects)."""
        self.reconnect()
        self.end_remotes()
