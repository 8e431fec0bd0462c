"""The two sides of a relayed connection (``server/cluster/relay.py``), in one process, checked message by message:
the owner's side (:class:`OwnerSide`) hands the table what its client sent as ASGI events (``websocket.receive``
with the text, ``websocket.disconnect`` with the code the table sees: 1000 for a client that left, 1012 to
reconnect, 1006 for an origin process that is gone), closes its client once; the origin's side (``Relays.relay``)
carries a real Starlette ``WebSocket``'s frames to the owner as text and says ``bye`` when its client leaves, or
its socket breaks, but not when the owner closed it; an ``open`` the owner cannot serve, or whose serving fails
(logged, naming the table), closes with :data:`RECONNECT_CODE`; ``end_orphans`` ends what a gone process left.

The mailboxes here run no publisher nor listener: what a process sends another waits in its mailbox
(``Mailbox.queued``), and a message is handed over as the listener hands it (``Mailbox.receive``, MessagePack)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
from redis.asyncio import Redis
from starlette.websockets import WebSocket

from cardtable.server.cluster.lease import Leases
from cardtable.server.cluster.mailbox import Mailbox, channel
from cardtable.server.cluster.redis_clients import ALIVE_PREFIX
from cardtable.server.cluster.relay import OriginSide, OwnerSide, Relays
from cardtable.server.core.errors import RECONNECT_CODE
from cardtable.server.table.connections import Connection
from polling import until

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DISCONNECT = "websocket.disconnect"


@asynccontextmanager
async def processes(url: str, *names: str) -> AsyncIterator[dict[str, Relays]]:
    """The relays of each named process, on the Redis at ``url`` (used only by ``end_orphans``)."""
    clients: list[Redis] = []
    relays: dict[str, Relays] = {}
    try:
        for name in names:
            redis, control = Redis.from_url(url), Redis.from_url(url)
            clients += [redis, control]
            relays[name] = Relays(Mailbox(redis, control, name, lambda: None))
        yield relays
    finally:
        for client in clients:
            await client.aclose()


def sent(relays: Relays, process: str) -> list[dict[str, Any]]:
    """What ``relays``' process sent ``process`` since the last look (taken out of its mailbox)."""
    queue = relays.mailbox.queued(process)
    out = list(queue)
    queue.clear()
    return out


def deliver(relays: Relays, *bodies: dict[str, Any]) -> None:
    """Hand ``bodies`` to ``relays``' process as its listener does: one pub/sub message on its channel."""
    mailbox = relays.mailbox
    mailbox.receive(channel(mailbox.process).encode(), msgspec.msgpack.encode(list(bodies)))


class Lobby:
    """This process's lobby as the relays see it (``TableHost``): the tables owned here."""

    def __init__(self, *table_ids: str) -> None:
        self.tables = {t: TableStandIn(t) for t in table_ids}


class TableStandIn:
    """A table, as far as ``_open`` reads one: its id."""

    def __init__(self, table_id: str) -> None:
        self.id = table_id


class Client:
    """A client's socket as the origin holds it: a real Starlette ``WebSocket`` over ASGI channels, already
    accepted. :meth:`frame` queues what the client sends; :attr:`sent` is what reached it, :attr:`close_code` how
    it was closed. ``breaks``: its connection breaks instead of delivering the next frame."""

    def __init__(self) -> None:
        self.incoming: asyncio.Queue[dict[str, Any] | Exception] = asyncio.Queue()
        self.sent: list[str] = []
        self.close_code: int | None = None
        self.websocket = WebSocket(
            {"type": "websocket", "path": "/ws/tables/t1", "headers": []}, self._receive, self._send
        )

    async def accepted(self) -> WebSocket:
        self.incoming.put_nowait({"type": "websocket.connect"})
        await self.websocket.accept()
        return self.websocket

    def frame(self, **message: Any) -> None:
        self.incoming.put_nowait({"type": "websocket.receive", **message})

    def leave(self, code: int = 1000) -> None:
        self.incoming.put_nowait({"type": DISCONNECT, "code": code})

    def breaks(self) -> None:
        self.incoming.put_nowait(ConnectionResetError("connection reset by peer"))

    async def _receive(self) -> dict[str, Any]:
        message = await self.incoming.get()
        if isinstance(message, Exception):
            raise message
        return message

    async def _send(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "websocket.send":
            self.sent.append(message["text"])
        elif message["type"] == "websocket.close":
            self.close_code = message["code"]


async def start_relay(origin: Relays, client: Client) -> tuple[asyncio.Task[None], str]:
    """``origin`` relays ``client`` to table ``t1`` owned by process ``owner``: the task and the connection id
    (from the ``open`` it sent)."""
    websocket = await client.accepted()
    task = asyncio.create_task(origin.relay(websocket, "t1", "owner", "1.2.3.4", max_outbox=10))
    queued = await until(lambda: origin.mailbox.queued("owner"))
    assert queued[0]["op"] == "open"
    return task, str(queued[0]["conn"])


async def test_an_owner_side_closes_its_client_once_and_hands_the_table_a_disconnect_event(
    redis_url: str,
) -> None:
    """The table's ``close()`` closes the client's socket through its process once, with 1000 by default, and each
    close hands the table's loop an ASGI ``websocket.disconnect`` with the code; nothing is sent after it."""
    async with processes(redis_url, "owner") as relays:
        owner = relays["owner"]
        side = OwnerSide(owner, "origin", "c1")
        await side.close()
        assert sent(owner, "origin") == [{"op": "close", "conn": "c1", "code": 1000}]
        assert await side.receive() == {"type": DISCONNECT, "code": 1000}
        await side.close(4404)  # closed already: nothing more goes out, the loop still gets its event
        await side.send_text('{"type":"update"}')
        assert sent(owner, "origin") == []
        assert await side.receive() == {"type": DISCONNECT, "code": 4404}


async def test_a_client_s_frames_and_its_bye_reach_the_table_as_asgi_events(redis_url: str) -> None:
    """What the client sends reaches the table as ``websocket.receive`` with its text; its ``bye`` (it left) as
    ``websocket.disconnect`` 1000, after which the table's sends and close go nowhere (no socket to close). A
    message naming no connection finds none and raises nothing (a raise would reset every relay of the process)."""
    async with processes(redis_url, "owner") as relays:
        owner = relays["owner"]
        side = owner.owner_sides["c1"] = OwnerSide(owner, "origin", "c1")
        deliver(owner, {"op": "in", "conn": "c1", "data": '{"type":"hello"}'})
        assert await side.receive() == {"type": "websocket.receive", "text": '{"type":"hello"}'}
        deliver(
            owner,
            {"op": "in", "data": "x"},
            {"op": "bye"},
            {"op": "opened"},
            {"op": "out", "data": ["y"]},
            {"op": "close", "code": 4000},
        )
        assert side.inbox.empty() and not side.closed
        deliver(owner, {"op": "bye", "conn": "c1"})
        assert await side.receive() == {"type": DISCONNECT, "code": 1000}
        await side.send_text('{"type":"update"}')
        await side.close(RECONNECT_CODE)
        assert sent(owner, "origin") == []


async def test_a_reset_ends_every_owner_side_with_a_disconnect_to_reconnect(redis_url: str) -> None:
    """When messages may have been lost, every connection relayed here ends as if its client had left with
    :data:`RECONNECT_CODE` (``websocket.disconnect``); ``end_owner_sides`` ends only those of the origins named."""
    async with processes(redis_url, "owner") as relays:
        owner = relays["owner"]
        a = owner.owner_sides["a1"] = OwnerSide(owner, "pa", "a1")
        b = owner.owner_sides["b1"] = OwnerSide(owner, "pb", "b1")
        owner.end_owner_sides({"pb"}, 4001)
        assert a.inbox.empty()
        assert await b.receive() == {"type": DISCONNECT, "code": 4001}
        owner.reset()
        assert await a.receive() == {"type": DISCONNECT, "code": RECONNECT_CODE}
        assert await b.receive() == {"type": DISCONNECT, "code": RECONNECT_CODE}


async def test_end_orphans_ends_what_a_gone_process_left(redis_url: str) -> None:
    """An origin process whose ``ct:alive:`` key is gone has its connections here ended with 1006 (one origin, or
    several at once), those of a live one are left; a connection relayed from here whose table moved to another
    process, or has no owner any more, is closed with :data:`RECONNECT_CODE`, one to a table still owned stays."""
    async with processes(redis_url, "owner", "origin") as relays:
        owner, origin = relays["owner"], relays["origin"]
        redis = owner.mailbox.redis
        await redis.set(ALIVE_PREFIX + "alive", "1")
        await redis.set(ALIVE_PREFIX + "later", "1")
        alive = owner.owner_sides["c1"] = OwnerSide(owner, "alive", "c1")
        later = owner.owner_sides["c2"] = OwnerSide(owner, "later", "c2")
        gone = owner.owner_sides["c3"] = OwnerSide(owner, "gone", "c3")
        await Leases(redis, "owner", 10_000).acquire("t-stays")
        await Leases(redis, "other", 10_000).acquire("t-moved")
        connections = {t: Connection() for t in ("t-stays", "t-moved", "t-none")}
        for t, connection in connections.items():
            origin.origin_sides[t] = OriginSide(connection, t, "owner")
        leases = Leases(redis, "owner", 10_000)
        await owner.end_orphans(redis, leases)  # three origins: one pipeline
        assert await gone.receive() == {"type": DISCONNECT, "code": 1006}
        assert alive.inbox.empty() and later.inbox.empty()
        await origin.end_orphans(redis, leases)
        assert not connections["t-stays"].closed
        assert connections["t-moved"].close_code == RECONNECT_CODE and connections["t-moved"].closed
        assert connections["t-none"].close_code == RECONNECT_CODE and connections["t-none"].closed
        del owner.owner_sides["c3"], owner.owner_sides["c2"]  # their serving ended
        await redis.delete(ALIVE_PREFIX + "alive")
        await owner.end_orphans(redis, leases)  # one origin
        assert await alive.receive() == {"type": DISCONNECT, "code": 1006}


async def test_an_open_the_owner_cannot_serve_closes_to_reconnect(redis_url: str) -> None:
    """An ``open`` for a table not here, to a process that stops, or before the app set how to serve one, is
    answered with a ``close`` :data:`RECONNECT_CODE` alone (no ``opened``): the client connects again."""
    async with processes(redis_url, "owner") as relays:
        owner = relays["owner"]
        owner.host = Lobby("t1")  # type: ignore[assignment]
        # the app has not set how to serve one yet
        deliver(owner, {"op": "open", "conn": "c1", "table": "t1", "from": "origin", "address": "1.2.3.4"})
        assert sent(owner, "origin") == [{"op": "close", "conn": "c1", "code": RECONNECT_CODE}]

        async def serve(table: Any, websocket: Any, address: str) -> None:
            raise AssertionError("not to be served")

        owner.serve = serve
        deliver(owner, {"op": "open", "conn": "c2", "table": "t9", "from": "origin", "address": "1.2.3.4"})
        owner.draining = True
        deliver(owner, {"op": "open", "conn": "c3", "table": "t1", "from": "origin", "address": "1.2.3.4"})
        assert sent(owner, "origin") == [
            {"op": "close", "conn": c, "code": RECONNECT_CODE} for c in ("c2", "c3")
        ]
        assert owner.owner_sides == {}


async def test_a_relayed_connection_is_served_with_its_address_and_its_failure_logged(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An ``open`` is answered ``opened`` and served with the client's address (``?`` when unknown); the table's
    close code reaches the client, not a second close; a serving that fails is logged with its traceback, naming
    the table, and its client is told to reconnect."""
    async with processes(redis_url, "owner") as relays:
        owner = relays["owner"]
        owner.host = Lobby("t1")  # type: ignore[assignment]
        served: list[str] = []

        async def serve(table: Any, websocket: Any, address: str) -> None:
            served.append(address)
            if address == "?":
                raise RuntimeError("the table broke")
            await websocket.close(4404)

        owner.serve = serve
        deliver(owner, {"op": "open", "conn": "c1", "table": "t1", "from": "origin", "address": "1.2.3.4"})
        await until(lambda: "c1" not in owner.owner_sides)
        assert served == ["1.2.3.4"]
        assert sent(owner, "origin") == [
            {"op": "opened", "conn": "c1"},
            {"op": "close", "conn": "c1", "code": 4404},
        ]
        with caplog.at_level(logging.ERROR, logger="cardtable.server.cluster.relay"):
            deliver(owner, {"op": "open", "conn": "c2", "table": "t1", "from": "origin"})
            await until(lambda: "c2" not in owner.owner_sides)
        assert served == ["1.2.3.4", "?"]
        assert sent(owner, "origin") == [
            {"op": "opened", "conn": "c2"},
            {"op": "close", "conn": "c2", "code": RECONNECT_CODE},
        ]
        [record] = [r for r in caplog.records if r.name == "cardtable.server.cluster.relay"]
        assert record.levelno == logging.ERROR and record.exc_info is not None
        assert record.getMessage() == "a relayed connection to table t1 failed"


async def test_a_relayed_client_s_frames_go_to_the_owner_as_text_and_its_leaving_says_bye(
    redis_url: str,
) -> None:
    """The origin sends the owner each frame of its client in order, as text (a binary frame decoded, bad UTF-8
    replaced, an empty one empty), and when its client leaves, a ``bye`` and nothing more; it forgets the
    connection."""
    async with processes(redis_url, "origin") as relays:
        origin = relays["origin"]
        client = Client()
        task, conn = await start_relay(origin, client)
        client.frame(text='{"type":"hello"}')
        client.frame(bytes=b'{"type":"ping"}')
        client.frame(bytes=b"")
        client.frame(bytes=b"\xff!")
        client.leave(1001)
        await asyncio.wait_for(task, 10)
        assert sent(origin, "owner")[1:] == [
            {"op": "in", "conn": conn, "data": '{"type":"hello"}'},
            {"op": "in", "conn": conn, "data": '{"type":"ping"}'},
            {"op": "in", "conn": conn, "data": ""},
            {"op": "in", "conn": conn, "data": "\ufffd!"},
            {"op": "bye", "conn": conn},
        ]
        assert origin.origin_sides == {}


async def test_a_relayed_client_whose_socket_breaks_ends_quietly_with_a_bye(redis_url: str) -> None:
    """A client socket that breaks under the origin ends its relay without an error, and the owner is told
    (``bye``) so that the table lets the connection go."""
    async with processes(redis_url, "origin") as relays:
        origin = relays["origin"]
        client = Client()
        task, conn = await start_relay(origin, client)
        client.breaks()
        await asyncio.wait_for(task, 10)  # no exception
        assert sent(origin, "owner")[1:] == [{"op": "bye", "conn": conn}]
        assert origin.origin_sides == {}


async def test_the_owner_s_close_reaches_the_client_and_is_not_echoed_back(redis_url: str) -> None:
    """The owner's ``close`` closes the client's socket with its code (1000 when it names none) after what was
    sent before it; the origin sends no ``bye`` back for a connection its owner ended."""
    async with processes(redis_url, "origin") as relays:
        origin = relays["origin"]
        client = Client()
        task, conn = await start_relay(origin, client)
        deliver(
            origin,
            {"op": "out", "conn": conn, "data": ['{"type":"snapshot"}']},
            {"op": "close", "conn": conn, "code": 4404},
        )
        await asyncio.wait_for(task, 10)
        assert client.sent == ['{"type":"snapshot"}'] and client.close_code == 4404
        assert sent(origin, "owner")[1:] == []
        other = Client()
        task, conn = await start_relay(origin, other)
        deliver(origin, {"op": "close", "conn": conn})
        await asyncio.wait_for(task, 10)
        assert other.close_code == 1000
        assert sent(origin, "owner")[1:] == []
