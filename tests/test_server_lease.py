"""Leases in Redis (``server/lease.py``) and the fence at the database (``Store.take``, ``Store.fences``), on a real
Redis and on SQLite and PostgreSQL: one holder at a time, renewal only by the holder, and a write from an owner
whose epoch is no longer the table's is refused with nothing stored."""

from __future__ import annotations

import asyncio

import pytest
from redis.asyncio import Redis

from cardtable.server.lease import Leases
from cardtable.server.store import Fenced, SeatRow, Store, TableRow


def test_one_holder_at_a_time_and_only_it_renews_or_releases(redis_url: str) -> None:
    async def go() -> None:
        redis = Redis.from_url(redis_url)
        try:
            first, second = Leases(redis, "p1", 300), Leases(redis, "p2", 300)
            epoch = await first.acquire("t")
            assert epoch == 1
            assert await second.acquire("t") is None
            assert await first.owner("t") == ("p1", 1)
            assert await second.renew({"t": 1}) == {"t"}  # not its lease
            assert not await second.release("t", 1)
            assert await first.renew({"t": 1}) == set()
            await asyncio.sleep(0.5)  # expired: the next holder has a higher epoch
            assert await first.owners(["t", "u"]) == [None, None]
            assert await second.acquire("t") == 3  # the failed attempt above counted 2
            assert await first.renew({"t": 1}) == {"t"}
            assert await second.move_epoch("t", 3, 7)
            assert await second.owner("t") == ("p2", 7)
            assert await second.release("t", 7)
            assert await first.acquire("t") == 8
        finally:
            await redis.aclose()

    asyncio.run(go())


def _row(table_id: str) -> TableRow:
    return TableRow(id=table_id, game="nerts", options={"players": 2}, status="playing", seed=1, grace_seconds=60.0,
                    created="2026-11-23T00:00:00Z", seats=[SeatRow(seat=0, kind="bot", bot="greedy"),
                                                           SeatRow(seat=1, kind="bot", bot="greedy")])


def test_a_stale_owner_stores_nothing(db_url: str) -> None:
    async def go() -> None:
        old, new = await Store.open(db_url), await Store.open(db_url)
        try:
            old.fences["t1"] = 1
            await old.insert_table(_row("t1"))
            await old.insert_hand("t1", 0, {"cards": []})
            await old.insert_actions("t1", 0, [(0, 0, 10, {"type": "flip"})])
            assert await new.take("t1", 1) == 2  # as high as the stored one already: one more
            new.fences["t1"] = 2
            with pytest.raises(Fenced):
                await old.insert_actions("t1", 0, [(1, 0, 20, {"type": "flip"})])
            with pytest.raises(Fenced):
                await old.update_status("t1", "finished")
            await new.insert_actions("t1", 0, [(1, 1, 30, {"type": "flip"})])
            (row,) = await new.load_tables(table_id="t1", with_hands=True)
            assert row.status == "playing"
            assert row.hands[0].actions == [(0, 10, {"type": "flip"}), (1, 30, {"type": "flip"})]
            assert await new.take("t1", 9) == 9
            assert await new.take("unknown", 1) is None
        finally:
            await old.close()
            await new.close()

    asyncio.run(go())
