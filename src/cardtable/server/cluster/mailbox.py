"""Messages between the processes of a service, on Redis pub/sub (``docs/architecture.md``, "Several server
processes": "Relay", "Transport").

Each process listens on its channel ``ct:proc:{process}``. What one loop turn queues for another process
(:meth:`Mailbox.send`) is published as one pub/sub message, a MessagePack array of at most :data:`MAX_FRAMES` maps
``{"op": ...}``, in the order queued. The publisher writes on a Redis connection of its own that asks for no replies
(``CLIENT REPLY OFF``): a publish is one socket write, with no round trip to wait for nor reply to parse. A publish
that fails (Redis away) loses what it carried, so the mailbox's owner is told (``on_lost``: every relayed connection
is then closed with :data:`~cardtable.server.core.errors.RECONNECT_CODE`, its client reconnects and resyncs), as when
the listener's connection breaks.

Messages between processes are a format of one version: restart every process together to change it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import msgspec
from redis.asyncio import Redis
from redis.asyncio.connection import AbstractConnection

log = logging.getLogger("cardtable.server.cluster.mailbox")


MAX_FRAMES = 512
"""Most messages published to one process as one pub/sub message."""

PUBLISH_TIMEOUT_S = 5.0
"""Seconds one write of the publisher may take (Redis not reading: unreachable) before it counts as failed."""

PUBLISH_RETRY_S = 0.2
"""Seconds the publisher waits after a failed publish before it publishes what was queued since."""

LISTEN_WAIT_S = 1.0
"""Seconds the listener waits for a message before it looks again (a broken connection shows up then at the
latest)."""

RESUBSCRIBE_S = 0.5
"""Seconds the listener waits after its connection broke before it subscribes again."""

_PUBLISHER_CONNECTION = {"socket_timeout": None, "health_check_interval": 0}
"""How the publisher's own connection differs from the control client's: a publish's time is bounded by
:data:`PUBLISH_TIMEOUT_S` instead, and there is no health check (no reply would come to a ``PING``)."""

_REPLY_OFF = ("CLIENT", "REPLY", "OFF")
_REPLY_ON = ("CLIENT", "REPLY", "ON")

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
        conn = pool.connection_class(**{**pool.connection_kwargs, **_PUBLISHER_CONNECTION})
        try:
            async with asyncio.timeout(PUBLISH_TIMEOUT_S):
                await conn.connect()  # type: ignore[no-untyped-call]
                # OFF has no reply when Redis takes it: the ON after it answers OK (``ResponseError`` is raised
                # here when OFF was refused), and then it is off for good.
                await conn.send_packed_command(conn.pack_commands([_REPLY_OFF, _REPLY_ON]))
                await conn.read_response()
                await conn.send_command(*_REPLY_OFF)
        except BaseException:
            await _close(conn)
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
                    if conn is not None and not await _usable(conn):  # closed by Redis while idle (its timeout)
                        await _close(conn)
                        conn = None
                    if conn is None:  # never one redis-py reconnected (replies on)
                        conn = await self._publisher()
                    async with asyncio.timeout(PUBLISH_TIMEOUT_S):
                        await conn.send_packed_command(conn.pack_commands(commands))
                    self.published += len(commands)
                except Exception as error:  # Redis away: those messages are lost; the relays start again
                    log.warning("publishing %d messages failed: %r", sum(map(len, pending.values())), error)
                    conn = None  # already disconnected: by redis-py's send_packed_command, or by _publisher
                    self.on_lost()
                    await asyncio.sleep(PUBLISH_RETRY_S)
                finally:
                    self._writing = False
        finally:
            if conn is not None:
                await _close(conn)

    # -- receiving --------------------------------------------------------------------------------------

    async def listen_loop(self) -> None:
        """Listen on this process's channel (and :attr:`channels`), handing each message to its handler;
        reconnects when the connection breaks (then :attr:`on_lost`). Runs until cancelled."""
        first = True
        while True:
            pubsub = self.redis.pubsub(push_handler_func=_as_is)  # subscribe confirmations: not "message"
            try:
                await pubsub.subscribe(channel(self.process), *self.channels)
                if not first:  # messages may have been lost meanwhile: every relay starts again
                    self.on_lost()
                first = False
                while True:
                    message = await pubsub.get_message(timeout=LISTEN_WAIT_S)
                    if message is not None and message["type"] == "message":
                        self.receive(message["channel"], message["data"])  # bytes: responses are not decoded
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("the pub/sub connection failed (%s): reconnecting", error)
                self.on_lost()
                await asyncio.sleep(RESUBSCRIBE_S)
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


async def _usable(conn: AbstractConnection) -> bool:
    """Whether the publisher's connection can still carry a publish: connected, with nothing to read. Replies are
    off on it, so anything readable is the end of the stream (Redis closed it: ``CLIENT KILL``, its ``timeout``)
    or an error; a write into such a socket would succeed and the message be lost unseen."""
    try:
        return conn.is_connected and not await conn.can_read()
    except Exception:  # the socket is gone
        return False


async def _close(conn: AbstractConnection) -> None:
    """Close the publisher's connection at once (nothing buffered is worth waiting for); never raises."""
    with contextlib.suppress(Exception):
        await conn.disconnect(nowait=True)
