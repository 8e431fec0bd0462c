"""Leases in Redis (``server/cluster/lease.py``) and the fence at the database (``Store.take``, ``Store.fences``), on a real
Redis and on SQLite and PostgreSQL: one holder at a time, renewal only by the holder, and a write from an owner
whose epoch is no longer the table's is refused with nothing stored."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable

import pytest
from redis import Redis as SyncRedis
from redis.asyncio import Redis
from sqlalchemy import select, text
from sqlalchemy.engine import Connection

from cardtable.server.cluster import lease as lease_module
from cardtable.server.cluster.lease import (
    EPOCH_PREFIX,
    LEASE_PREFIX,
    LeaseKeeper,
    Leases,
    lease_value,
    parse_lease,
)
from cardtable.server.storage.rows import SeatRow, TableRow
from cardtable.server.storage.store import Store
from cardtable.server.storage.writer import Fenced
from cluster_harness import TcpProxy
from polling import until
from services import Postgres, free_port, new_database


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
            await asyncio.sleep(0.5)  # not a wait: the lease's time runs out. Expired: the next holder has a higher epoch
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


def test_many_leases_in_one_call_each(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lease_module, "CHUNK", 2)  # several chunks: the results still line up with the tables

    async def go() -> None:
        redis = Redis.from_url(redis_url)
        try:
            first, second = Leases(redis, "p1", 1000), Leases(redis, "p2", 1000)
            assert await second.acquire("b") == 1
            assert await first.acquire_many(["a", "b", "c", "d", "e"]) == {"a": 1, "c": 1, "d": 1, "e": 1}
            assert await first.owner("b") == ("p2", 1)  # held: not taken, but its counter went up
            assert await first.renew({"a": 1, "b": 2, "c": 1, "d": 9, "e": 1}) == {"b", "d"}
            seen = await first.owners_and_ttls(["a", "b", "zz", "e", "c"])
            assert [owner for owner, _ in seen] == [("p1", 1), ("p2", 1), None, ("p1", 1), ("p1", 1)]
            assert all(500 < ttl <= 1000 for owner, ttl in seen if owner is not None) and seen[2][1] == -2
            assert await second.acquire_many(["a", "zz"]) == {"zz": 1}
            assert await first.acquire_many([]) == {} and await first.renew({}) == set()
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


async def test_a_batch_with_one_stale_table_refuses_only_that_tables_writes(db_url: str) -> None:
    old, new = await Store.open(db_url), await Store.open(db_url)
    try:
        for table_id in ("t1", "t2", "t3"):
            if table_id != "t3":  # t3 is not fenced (as with one process)
                old.fences[table_id] = 1
            await old.insert_table(_row(table_id))
            await old.insert_hand(table_id, 0, {"cards": []})
        assert await new.take("t1", 1) == 2
        before = old.commits
        writes = [  # queued together: one group commit
            old.insert_actions("t1", 0, [(0, 0, 10, {"type": "flip"})]),
            old.insert_actions("t2", 0, [(0, 1, 11, {"type": "flip"}), (1, 0, 12, {"type": "stuck"})]),
            old.update_seat("t1", SeatRow(seat=0, kind="person", name="ana", token_hash="h")),
            old.update_seat("t2", SeatRow(seat=1, kind="person", name="bo", token_hash="h2")),
            old.insert_actions("t3", 0, [(0, 0, 13, {"type": "flip"})]),
            old.update_status("t1", "finished", finished="2026-11-24T00:00:00Z"),
            old.insert_hand("t1", 1, {"cards": [1]}),
        ]
        results = await asyncio.gather(*writes, return_exceptions=True)
        assert old.commits - before == 1
        refused = [i for i, r in enumerate(results) if isinstance(r, Fenced)]
        assert refused == [0, 2, 5, 6]
        assert all(r is None for i, r in enumerate(results) if i not in refused)
        assert all((r.table_id, r.epoch) == ("t1", 1) for r in results if isinstance(r, Fenced))
        rows = {row.id: row for row in await new.load_tables(with_hands=True)}
        t1, t2, t3 = rows["t1"], rows["t2"], rows["t3"]
        assert (t1.status, len(t1.hands), t1.hands[0].actions, t1.seats[0].kind) == ("playing", 1, [], "bot")
        assert t2.hands[0].actions == [(1, 11, {"type": "flip"}), (0, 12, {"type": "stuck"})]
        assert t2.seats[1] == SeatRow(seat=1, kind="person", name="bo", token_hash="h2")
        assert t3.hands[0].actions == [(0, 13, {"type": "flip"})]
        # the stale owner's next batch is refused again, the new owner's stored
        new.fences["t1"] = 2
        stale = old.insert_actions("t1", 0, [(0, 0, 14, {"type": "flip"})])
        fresh = new.insert_actions("t1", 0, [(0, 1, 15, {"type": "flip"})])
        with pytest.raises(Fenced):
            await stale
        await fresh
        (t1,) = await new.load_tables(table_id="t1", with_hands=True)
        assert t1.hands[0].actions == [(1, 15, {"type": "flip"})]
    finally:
        await old.close()
        await new.close()


async def test_a_take_waits_for_the_old_owners_transaction_in_flight(postgres: Postgres) -> None:
    url = new_database(postgres)
    old, new = await Store.open(url), await Store.open(url)
    try:
        old.fences["t1"] = 1
        await old.insert_table(_row("t1"))
        await old.insert_hand("t1", 0, {"cards": []})
        fenced = asyncio.Event()

        def slow(conn: Connection) -> None:  # runs after the batch's fence: the row is locked
            fenced.set()
            conn.execute(text("SELECT pg_sleep(0.5)"))

        action = old.insert_actions("t1", 0, [(0, 0, 10, {"type": "flip"})])
        old.write(slow)
        await fenced.wait()
        assert await new.take("t1", 1) == 2
        async with new.engine.connect() as conn:  # the take returned once the old transaction was over
            sleeping = (await conn.execute(text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' "
                "AND query LIKE 'SELECT pg_sleep%'"))).scalar_one()
        assert sleeping == 0
        await action
        (t1,) = await new.load_tables(table_id="t1", with_hands=True)
        assert t1.hands[0].actions == [(0, 10, {"type": "flip"})]
    finally:
        await old.close()
        await new.close()


async def test_a_batch_of_actions_only_refuses_only_the_stale_tables_actions(db_url: str) -> None:
    old, new = await Store.open(db_url), await Store.open(db_url)
    try:
        for table_id in ("t1", "t2", "t3"):
            if table_id != "t3":
                old.fences[table_id] = 1
            await old.insert_table(_row(table_id))
        assert await new.take("t1", 1) == 2
        before = old.commits
        writes = [old.insert_actions("t2", 0, [(0, 0, 10, {"type": "flip"})]),
                  old.insert_actions("t1", 0, [(0, 0, 11, {"type": "flip"}), (1, 1, 12, {"type": "flip"})]),
                  old.insert_actions("t3", 0, [(0, 1, 13, {"type": "stuck"})]),
                  old.insert_actions("t2", 0, [(1, 1, 14, {"type": "flip"})])]
        results = await asyncio.gather(*writes, return_exceptions=True)
        assert old.commits - before == 1
        assert results[0] is None and results[2] is None and results[3] is None
        assert isinstance(results[1], Fenced) and (results[1].table_id, results[1].epoch) == ("t1", 1)
        assert await _actions(new, "t1") == []
        assert await _actions(new, "t2") == [(0, 0, 10, 1), (0, 1, 14, 1)]
        assert await _actions(new, "t3") == [(0, 1, 13, None)]  # not fenced: no epoch
    finally:
        await old.close()
        await new.close()


async def _actions(store: Store, table_id: str) -> list[tuple[int, int | None, int, int | None]]:
    """``(hand, seat, ms, epoch)`` of the stored actions of ``table_id`` (no hand row needed), in order."""
    from cardtable.server.storage import schema

    a = schema.actions
    async with store.engine.connect() as conn:
        rows = (await conn.execute(select(a.c.hand, a.c.seat, a.c.ms, a.c.epoch).where(a.c.table_id == table_id)
                                   .order_by(a.c.hand, a.c.idx))).all()
    return [tuple(row) for row in rows]  # type: ignore[misc]


async def test_actions_wait_for_a_take_in_flight_and_are_refused_after_it(postgres: Postgres) -> None:
    url = new_database(postgres)
    old, new = await Store.open(url), await Store.open(url)
    try:
        old.fences["t1"] = 1
        await old.insert_table(_row("t1"))
        async with new.engine.connect() as conn:  # a take, its transaction held open
            await conn.execute(text("UPDATE tables SET epoch = 2 WHERE id = 't1'"))
            stale = old.insert_actions("t1", 0, [(0, 0, 10, {"type": "flip"})])
            await asyncio.sleep(0.3)  # not a wait: time in which the write must NOT get through the lock
            assert not stale.done()  # waiting for the row lock
            await conn.commit()
        with pytest.raises(Fenced):
            await stale
        assert await _actions(new, "t1") == []
    finally:
        await old.close()
        await new.close()


async def test_taking_many_tables_raises_each_epoch_and_skips_those_not_live(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        for table_id in ("t1", "t2", "t3"):
            await store.insert_table(_row(table_id))
        await store.update_status("t3", "finished", finished="2026-11-24T00:00:00Z")
        assert await store.take("t2", 4) == 4
        assert await store.take_many({"t1": 3, "t2": 4, "t3": 5, "unknown": 1}) == {"t1": 3, "t2": 5}
        assert await store.take_many({}) == {}
        assert [row.id for row in await store.load_tables(table_ids=["t3", "t1", "zz"])] == ["t1", "t3"]
    finally:
        await store.close()


def test_a_lease_whose_epoch_moves_still_expires_and_only_its_holder_moves_it(redis_url: str) -> None:
    async def go() -> None:
        redis = Redis.from_url(redis_url)
        try:
            first, second = Leases(redis, "p1", 800), Leases(redis, "p2", 800)
            assert await first.acquire("t") == 1
            await redis.pexpire(LEASE_PREFIX + "t", 100)  # about to lapse: the move gives it a whole lease again
            assert await first.move_epoch("t", 1, 5)
            assert await first.owner("t") == ("p1", 5)
            assert 500 < await redis.pttl(LEASE_PREFIX + "t") <= 800  # expires: never a lease for good
            assert await redis.get(EPOCH_PREFIX + "t") == b"5"
            assert not await second.move_epoch("t", 5, 9)  # not its lease: the lease is left as it was
            assert await first.owner("t") == ("p1", 5) and await redis.pttl(LEASE_PREFIX + "t") <= 800
            assert await redis.get(EPOCH_PREFIX + "t") == b"9"  # the counter follows the database's epoch
            assert not await first.move_epoch("t", 1, 3)  # an old epoch of its own: not its lease any more
            assert await first.owner("t") == ("p1", 5)
            assert await redis.get(EPOCH_PREFIX + "t") == b"9"  # never lowered
            assert await first.release("t", 5) and await first.owner("t") is None
            assert await second.acquire("t") == 10  # the next owner's epoch is above every one seen
            assert 0 < await redis.pttl(LEASE_PREFIX + "t") <= 800
        finally:
            await redis.aclose()

    asyncio.run(go())


def test_lease_values_name_the_process_and_the_epoch() -> None:
    assert lease_value("host-1-ab", 7) == "host-1-ab:7"
    assert parse_lease(b"host:1:ab:7") == ("host:1:ab", 7)  # a process id with colons (an IPv6 host name)
    assert parse_lease("p:12") == ("p", 12) and parse_lease(None) is None


def test_renewing_extends_each_lease_to_a_whole_lease_time(redis_url: str) -> None:
    async def go() -> None:
        redis = Redis.from_url(redis_url)
        try:
            leases = Leases(redis, "p1", 1000)
            assert await leases.acquire_many(["a", "b"]) == {"a": 1, "b": 1}
            for key in ("a", "b"):
                await redis.pexpire(LEASE_PREFIX + key, 50)
            assert await leases.renew({"a": 1, "b": 1}) == set()
            for key in ("a", "b"):
                assert 800 < await redis.pttl(LEASE_PREFIX + key) <= 1000
        finally:
            await redis.aclose()

    asyncio.run(go())


async def redis_ms(redis: Redis) -> int:
    """Redis' own clock (``TIME``), in milliseconds: what ``PEXPIRETIME`` is measured against."""
    seconds, micros = await redis.time()
    return int(seconds) * 1000 + int(micros) // 1000


class Reported:
    """What a :class:`LeaseKeeper` reported lost, as the event loop received it."""

    def __init__(self) -> None:
        self.calls: list[dict[str, int]] = []

    def __call__(self, lost: dict[str, int]) -> None:
        self.calls.append(dict(lost))


async def test_the_keeper_renews_reports_lost_leases_and_marks_the_process_alive(
        redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lease_module, "CHUNK", 2)  # several chunks: the lost ones still line up with their tables
    redis = Redis.from_url(redis_url)
    mine = Leases(redis, "p1", 1000)
    owned = await mine.acquire_many(["a", "b", "c"])
    assert owned == {"a": 1, "b": 1, "c": 1}
    reported = Reported()
    keeper = LeaseKeeper(redis_url, "p1", 1000, owned, "ct:alive:p1", reported, asyncio.get_running_loop())
    try:
        assert keeper.stall_s == 3.0
        for key in owned:
            await redis.pexpire(LEASE_PREFIX + key, 500)  # shorter than a lease: the renewal's expiry shows
        before = await redis_ms(redis)
        assert keeper.renew_once() == {} and keeper.renewals == 1
        after = await redis_ms(redis)
        for key in [*(LEASE_PREFIX + k for k in owned), "ct:alive:p1"]:  # alive as long as a lease, no longer
            # renewed for one lease time from the moment of the renewal (by Redis' clock: however slow the machine)
            assert before + 1000 <= await redis.execute_command("PEXPIRETIME", key) <= after + 1000, key
        await redis.set(LEASE_PREFIX + "c", "p2:2", px=5000)  # taken by another process after ours expired
        owned["d"] = 4  # ours in the map, not in Redis (lost, Redis restarted)
        assert keeper.renew_once() == {"c": 1, "d": 4}
        assert await mine.owner("c") == ("p2", 2)  # another's lease is never extended or touched
        assert 4000 < await redis.pttl(LEASE_PREFIX + "c") <= 5000
        # the loop silent past the stall time: nothing renewed, nothing reported
        for key in ("a", "b"):
            await redis.pexpire(LEASE_PREFIX + key, 300)
        keeper._beat -= keeper.stall_s + 0.1
        assert keeper.renew_once() is None and keeper.renewals == 2
        assert await redis.pttl(LEASE_PREFIX + "a") <= 300
        keeper.beat()  # alive again
        assert keeper.renew_once() == {"c": 1, "d": 4}
        assert 800 < await redis.pttl(LEASE_PREFIX + "a") <= 1000
        # from its thread: lost leases reach the event loop
        del owned["d"]
        keeper.start()
        await until(lambda: reported.calls)
        assert reported.calls[0] == {"c": 1}
        assert await redis.pttl(LEASE_PREFIX + "a") > 0
    finally:
        await asyncio.to_thread(keeper.stop)
        await redis.aclose()
    assert not keeper._thread.is_alive()


async def test_the_keeper_renews_on_time_from_its_thread_and_stops_when_the_loop_stalls(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    owned = await Leases(redis, "p1", 600).acquire_many(["a"])
    reported = Reported()
    keeper = LeaseKeeper(redis_url, "p1", 600, owned, "ct:alive:p1", reported, asyncio.get_running_loop())
    try:
        keeper.start()
        # a daemon thread (the process may end without stopping it), named for the process in thread dumps
        assert keeper._thread.daemon and keeper._thread.name == "cardtable-leases-p1"
        start = time.monotonic()
        while time.monotonic() - start < 1.5:  # over two lease times: renewed all along, nothing lost
            assert await redis.get(LEASE_PREFIX + "a") == b"p1:1"
            keeper.beat()
            await asyncio.sleep(0.05)  # not a wait: the loop's heartbeat, paced as a running server's
        assert keeper.renewals >= 4 and reported.calls == []
        keeper._beat -= 10.0  # the loop stuck for good: the lease lapses
        await until_async(lambda: redis.exists(LEASE_PREFIX + "a"), want=0)
        assert reported.calls == []
        keeper.beat()  # the loop back: the thread renews again (and finds the lapsed lease lost)
        await until(lambda: reported.calls, 10)
        assert reported.calls[0] == {"a": 1}
    finally:
        await asyncio.to_thread(keeper.stop)
        await redis.aclose()


async def until_async(probe: Callable[[], Awaitable[object]], want: object, timeout: float = 30.0) -> None:
    """Return once ``await probe()`` equals ``want`` (:func:`polling.until`); ``AssertionError`` after ``timeout``."""

    async def equal() -> bool:
        return bool(await probe() == want)

    await until(equal, timeout, f"the probe to give {want!r}")


async def test_the_keeper_drops_every_table_when_redis_is_away(redis_url: str) -> None:
    owned = {"a": 3, "b": 4}
    reported = Reported()
    away = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    keeper = LeaseKeeper(away, "p1", 300, owned, "ct:alive:p1", reported, asyncio.get_running_loop())
    try:
        keeper.start()
        started = time.monotonic()
        await until(lambda: reported.calls)
        # not before LOST_ALL_AFTER of a lease time (another process cannot have taken them before it expires)
        assert time.monotonic() - started >= 0.3 * lease_module.LOST_ALL_AFTER
        assert reported.calls[0] == {"a": 3, "b": 4}
    finally:
        await asyncio.to_thread(keeper.stop)


def test_the_keeper_reports_nothing_once_the_loop_is_closed(redis_url: str) -> None:
    """A report arriving as the process ends (its event loop closed) is dropped without an error."""
    loop = asyncio.new_event_loop()
    loop.close()
    reported = Reported()
    keeper = LeaseKeeper(redis_url, "p1", 600, {"a": 1}, "ct:alive:p1", reported, loop)
    try:
        keeper._report({"a": 1})
        assert reported.calls == []
    finally:
        keeper.stop()


async def test_the_keeper_drops_every_table_when_redis_stops_answering(redis_url: str) -> None:
    """A Redis that takes the connection and never answers (a hung server, a dead link): each renewal gives up
    after a third of a lease time, and every table is dropped before its lease can have expired."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections complete in the backlog; nothing is ever read or written
        owned = {"a": 3}
        reported = Reported()
        keeper = LeaseKeeper(f"redis://127.0.0.1:{silent.getsockname()[1]}/0", "p1", 600, owned, "ct:alive:p1",
                             reported, asyncio.get_running_loop())
        try:
            keeper.start()
            started = time.monotonic()
            await until(lambda: reported.calls, 10)
            assert reported.calls[0] == {"a": 3}
            assert time.monotonic() - started < 3.0  # a few lease times at most, even on a loaded machine
        finally:
            await asyncio.to_thread(keeper.stop)


async def test_the_keeper_drops_every_table_when_redis_goes_away_after_renewing(redis_url: str) -> None:
    """Renewals that worked, then Redis cut off: every table is reported lost once renewals have failed for
    ``LOST_ALL_AFTER`` of a lease time since the last one that worked, and the thread lives on to renew again."""
    proxy = TcpProxy(int(redis_url.rsplit(":", 1)[1].split("/")[0]))
    redis = Redis.from_url(redis_url)
    await redis.set(LEASE_PREFIX + "a", "p1:3", px=600)
    reported = Reported()
    keeper = LeaseKeeper(f"redis://127.0.0.1:{proxy.port}/0", "p1", 600, {"a": 3}, "ct:alive:p1", reported,
                         asyncio.get_running_loop())
    try:
        keeper.start()
        await until(lambda: keeper.renewals >= 2, 10)
        proxy.cut()
        await until(lambda: reported.calls, 10)
        assert reported.calls[0] == {"a": 3}
        assert keeper._thread.is_alive()
    finally:
        await asyncio.to_thread(keeper.stop)
        proxy.close()
        await redis.aclose()


async def test_the_keeper_drops_every_table_before_its_lease_expires(redis_url: str) -> None:
    """``LOST_ALL_AFTER``'s promise: with Redis cut off, the tables are dropped here while their leases still hold
    (so no other process can have taken one yet)."""
    proxy = TcpProxy(int(redis_url.rsplit(":", 1)[1].split("/")[0]))
    direct = SyncRedis.from_url(redis_url)
    direct.set(LEASE_PREFIX + "a", "p1:3", px=1500)
    left_ms: list[int] = []  # the lease's time left in Redis when its loss reached the loop

    def lost(_leases: dict[str, int]) -> None:
        left_ms.append(direct.pttl(LEASE_PREFIX + "a"))

    keeper = LeaseKeeper(f"redis://127.0.0.1:{proxy.port}/0", "p1", 1500, {"a": 3}, "ct:alive:p1", lost,
                         asyncio.get_running_loop())
    try:
        keeper.start()
        await until(lambda: keeper.renewals >= 2, 10)
        proxy.cut()
        await until(lambda: left_ms, 10)
        assert left_ms[0] > 0
    finally:
        await asyncio.to_thread(keeper.stop)
        proxy.close()
        direct.close()
