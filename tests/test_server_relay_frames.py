"""How the processes of a cluster talk (``server/cluster.py``): what one process queues for another in one loop
turn is published as few pub/sub messages (MessagePack arrays of at most ``MAX_FRAMES``), on a real Redis, and the
receiving process hands each relayed text, unchanged and in order, to its connection."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from cardtable.server.cluster import MAX_FRAMES, Cluster, ClusterSettings, channel
from cardtable.server.store import Store


def test_messages_for_one_process_travel_together_in_order_and_unchanged(redis_url: str, tmp_path: Path) -> None:
    async def go() -> None:
        store = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'relay.db'}")
        sender_redis, listener_redis = Redis.from_url(redis_url), Redis.from_url(redis_url)
        pubsub = listener_redis.pubsub(ignore_subscribe_messages=True)
        publisher: asyncio.Task[None] | None = None
        try:
            await pubsub.subscribe(channel("owner"), channel("third"))
            origin = Cluster(sender_redis, store, ClusterSettings(), "origin")
            owner = Cluster(listener_redis, store, ClusterSettings(), "owner")
            inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
            owner.relays["c1"] = (inbox, "t1", "origin")
            count = MAX_FRAMES + 88
            texts = [f'{{"type":"update","v":{i},"note":"\\"quoted\\" and ünïcode 🂡"}}' for i in range(count)]
            for text in texts:  # queued in one loop turn
                origin.send("owner", {"op": "out", "conn": "c1", "data": text})
            origin.send("third", {"op": "bye", "conn": "c9"})
            publisher = asyncio.create_task(origin._publish_loop())
            received: list[dict[str, Any]] = []
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while inbox.qsize() < count and loop.time() < deadline:
                message = await pubsub.get_message(timeout=1.0)
                if message is not None:
                    received.append(message)
                    if message["channel"] == channel("owner").encode():
                        owner._dispatch(message)
            to_owner = [m for m in received if m["channel"] == channel("owner").encode()]
            assert len(to_owner) == 2  # MAX_FRAMES, then the rest: not one pub/sub message each
            got = [inbox.get_nowait() for _ in range(inbox.qsize())]
            assert [body["data"] for body in got] == texts
            assert {body["op"] for body in got} == {"out"}
            # a malformed message is ignored (logged): the listener goes on
            owner._dispatch({"type": "message", "channel": channel("owner").encode(), "data": b"{not frames"})
            assert inbox.empty()
        finally:
            if publisher is not None:
                publisher.cancel()
            await pubsub.aclose()  # type: ignore[no-untyped-call]
            await sender_redis.aclose()
            await listener_redis.aclose()
            await store.close()

    asyncio.run(go())
