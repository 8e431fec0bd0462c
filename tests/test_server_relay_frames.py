"""How the processes of a cluster talk (``server/cluster/mailbox.py``, ``server/cluster/relay.py``), on a real Redis: what one process queues for another in
one loop turn is published as few pub/sub messages (MessagePack arrays of at most ``MAX_FRAMES``), the texts an
owner sends one relayed connection in a row travel as one ``out``, and the origin hands each text, unchanged and in
order, to its connection's outbox, which drops a slow reader as a direct connection's does. A publish that fails
(Redis away) resets every relay."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from redis.asyncio import Redis

from cardtable.server.cluster import relay as relay_module
from cardtable.server.cluster.mailbox import MAX_FRAMES, Mailbox
from cardtable.server.cluster.relay import OriginSide, OwnerSide, Relays
from cardtable.server.core.errors import RECONNECT_CODE
from cardtable.server.table.connections import Connection
from polling import until
from services import free_port

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class Lost:
    """Counts the calls of a mailbox's ``on_lost``."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


@asynccontextmanager
async def mailboxes(url: str, *names: str) -> AsyncIterator[dict[str, tuple[Mailbox, Lost]]]:
    """A running mailbox (publisher and listener) per process name, on the Redis at ``url``."""
    clients: list[Redis] = []
    tasks: list[asyncio.Task[None]] = []
    boxes: dict[str, tuple[Mailbox, Lost]] = {}
    try:
        for name in names:
            redis, control = Redis.from_url(url), Redis.from_url(url)
            clients += [redis, control]
            lost = Lost()
            box = Mailbox(redis, control, name, lost)
            boxes[name] = (box, lost)
            tasks += [asyncio.create_task(box.publish_loop()), asyncio.create_task(box.listen_loop())]

        async def subscribed() -> bool:
            numsub = dict(await clients[0].pubsub_numsub(*(f"ct:proc:{n}" for n in names)))
            return all(numsub.get(f"ct:proc:{n}".encode()) for n in names)

        await until(subscribed, 10, "each listener subscribed", every=0.02)
        yield boxes
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in clients:
            await client.aclose()


async def test_messages_for_one_process_travel_together_in_order_and_unchanged(redis_url: str) -> None:
    async with mailboxes(redis_url, "origin", "owner", "third") as boxes:
        origin, owner, third = (boxes[n][0] for n in ("origin", "owner", "third"))
        replies_off = (await origin.control.info("commandstats")).get("cmdstat_client|reply", {"calls": 0})["calls"]
        got: list[dict[str, Any]] = []
        owner.handlers["in"] = got.append
        elsewhere: list[dict[str, Any]] = []
        third.handlers["bye"] = elsewhere.append
        count = MAX_FRAMES + 88
        texts = [f'{{"type":"action","seq":{i},"note":"\\"quoted\\" and ünïcode 🂡"}}' for i in range(count)]
        for text in texts:  # queued in one loop turn
            origin.send("owner", {"op": "in", "conn": "c1", "data": text})
        origin.send("third", {"op": "bye", "conn": "c9"})
        await until(lambda: len(got) == count and elsewhere)
        assert [body["data"] for body in got] == texts
        assert elsewhere == [{"op": "bye", "conn": "c9"}]
        assert origin.published == 3  # MAX_FRAMES, then the rest, to the owner; one to the third
        assert boxes["origin"][1].count == 0  # nothing lost
        assert origin.idle()
        # the publisher's connection asked Redis for no replies (one publisher connected, the origin's: off, on to
        # see that off was taken, off)
        stats = await origin.control.info("commandstats")
        assert stats["cmdstat_client|reply"]["calls"] - replies_off == 3
        # a malformed message is ignored (logged): the listener goes on
        owner.receive(b"ct:proc:owner", b"{not frames")
        origin.send("owner", {"op": "in", "conn": "c1", "data": "after"})
        await until(lambda: got[-1]["data"] == "after")


async def test_an_owner_s_texts_in_a_row_travel_as_one_out_and_reach_the_outbox_in_order(redis_url: str) -> None:
    async with mailboxes(redis_url, "origin", "owner") as boxes:
        origin, owner = Relays(boxes["origin"][0]), Relays(boxes["owner"][0])
        connection = Connection(max_outbox=1000)
        origin.origin_sides["c1"] = OriginSide(connection, "t1", "owner")
        outs: list[dict[str, Any]] = []
        handle_out = origin.mailbox.handlers["out"]
        origin.mailbox.handlers["out"] = lambda body: (outs.append(body), handle_out(body))  # type: ignore[func-returns-value]
        remote = OwnerSide(owner, "origin", "c1")
        texts = [f'{{"type":"update","v":{i}}}' for i in range(700)]
        for text in texts[:300]:
            await remote.send_text(text)
        owner.mailbox.send("origin", {"op": "opened", "conn": "c9"})  # another connection's message between
        for text in texts[300:]:
            await remote.send_text(text)
        await until(lambda: connection.outbox.qsize() == len(texts))
        assert [connection.outbox.get_nowait() for _ in texts] == texts
        assert [len(body["data"]) for body in outs] == [300, 400]
        assert origin.origin_sides["c1"].answered
        await remote.close(4000)  # the owner closes: the origin's peer closes with that code, after what is queued
        await until(lambda: connection.closed)
        assert connection.close_code == 4000 and connection.outbox.get_nowait() is None
        await remote.send_text("too late")  # nothing is sent after the close
        await asyncio.sleep(0.2)  # not a wait: time in which nothing may arrive
        assert connection.outbox.empty()


class SlowSocket:
    """A client socket for ``Relays.relay``: its sends wait for :attr:`go`; it records what it sent and the close."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.sent: list[str] = []
        self.closed: int | None = None
        self.left = asyncio.Event()

    async def receive(self) -> dict[str, Any]:
        await self.left.wait()
        return {"type": "websocket.disconnect", "code": 1000}

    async def send_text(self, text: str) -> None:
        await self.go.wait()
        self.sent.append(text)

    async def close(self, code: int = 1000) -> None:
        self.closed = code


async def test_a_slow_relayed_reader_is_dropped_and_the_owner_told(redis_url: str) -> None:
    async with mailboxes(redis_url, "origin", "owner") as boxes:
        origin, owner = Relays(boxes["origin"][0]), Relays(boxes["owner"][0])
        opened: list[dict[str, Any]] = []
        owner.mailbox.handlers["open"] = opened.append  # the owner's side, by hand: no table here
        socket = SlowSocket()
        relay = asyncio.create_task(origin.relay(socket, "t1", "owner", "1.2.3.4", max_outbox=3))  # type: ignore[arg-type]
        await until(lambda: opened)
        conn = opened[0]["conn"]
        assert opened[0]["table"] == "t1" and opened[0]["from"] == "origin" and opened[0]["address"] == "1.2.3.4"
        remote = OwnerSide(owner, "origin", conn)
        owner.owner_sides[conn] = remote
        await remote.send_text("m0")
        relayed = origin.origin_sides[conn]
        await until(lambda: relayed.answered and relayed.connection.outbox.empty())  # the writer took it: a slow socket
        for i in range(1, 5):  # 3 wait, then one too many: what waits is dropped and the connection closed
            await remote.send_text(f"m{i}")
        await until(lambda: relayed.connection.closed)
        assert relayed.connection.outbox.qsize() == 1  # only the close left
        socket.go.set()
        await asyncio.wait_for(relay, 10)
        assert socket.sent == ["m0"] and socket.closed == 1000  # what waited is dropped, as for a direct connection
        event = await asyncio.wait_for(remote.receive(), 10)  # the owner's side ends: "bye"
        assert event["type"] == "websocket.disconnect"
        assert conn not in origin.origin_sides


async def test_a_relay_the_owner_never_answers_closes_to_reconnect(redis_url: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(relay_module, "OPEN_TIMEOUT_S", 0.3)
    async with mailboxes(redis_url, "origin") as boxes:
        origin = Relays(boxes["origin"][0])
        socket = SlowSocket()
        socket.go.set()
        await asyncio.wait_for(origin.relay(socket, "t1", "gone", "?", max_outbox=10), 10)  # type: ignore[arg-type]
        assert socket.closed == RECONNECT_CODE


async def test_a_failed_publish_resets_the_relays(redis_url: str) -> None:
    away = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    redis, control = Redis.from_url(redis_url), Redis.from_url(away, socket_connect_timeout=1)
    lost = Lost()
    box = Mailbox(redis, control, "origin", lost)
    relays = Relays(box)
    box.on_lost = lambda: (lost(), relays.reset())  # type: ignore[func-returns-value]
    connection = Connection()
    relays.origin_sides["c1"] = OriginSide(connection, "t1", "owner")
    publisher = asyncio.create_task(box.publish_loop())
    try:
        box.send("owner", {"op": "in", "conn": "c1", "data": "x"})
        await until(lambda: lost.count >= 1)
        assert connection.closed and connection.close_code == RECONNECT_CODE  # its client reconnects
        await until(box.idle)
    finally:
        publisher.cancel()
        await asyncio.gather(publisher, return_exceptions=True)
        await redis.aclose()
        await control.aclose()


async def test_a_redis_user_that_may_not_turn_replies_off_gets_no_publisher(redis_url: str) -> None:
    admin = Redis.from_url(redis_url)
    await admin.acl_setuser("relay-limited", enabled=True, passwords=["+pw"], keys=["*"], channels=["*"],
                            commands=["+@all", "-client|reply"])
    limited_url = redis_url.replace("redis://", "redis://relay-limited:pw@")
    redis, control = Redis.from_url(redis_url), Redis.from_url(limited_url)
    lost = Lost()
    box = Mailbox(redis, control, "origin", lost)
    publisher = asyncio.create_task(box.publish_loop())
    try:
        box.send("owner", {"op": "in", "conn": "c1", "data": "x"})
        await until(lambda: lost.count >= 1)  # refused: nothing published, the relays start again
        assert box.published == 0
        clients = await admin.client_list()
        assert not [c for c in clients if c.get("user") == "relay-limited"]  # its connection closed, not left
    finally:
        publisher.cancel()
        await asyncio.gather(publisher, return_exceptions=True)
        await admin.acl_deluser("relay-limited")
        for client in (admin, redis, control):
            await client.aclose()
