"""Taking tables over (``server/cluster/ownership.py``: ``take``, ``take_many``, ``sweep``, ``locate``), in one process on a
real PostgreSQL and Redis: the sweep takes free tables in chunks and notes when a missed lease expires, a
connection to a table being taken here waits for that take (it is never told the table does not exist), a table
dropped while its take finishes is not handed out, one to a
table whose owner missed a renewal waits for its lease to expire and is served here (not relayed to the dead
owner), and a table that is not live is not found."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from redis.asyncio import Redis

from cardtable.server.cluster import ownership as cluster_module
from cardtable.server.cluster.lease import LEASE_PREFIX
from cardtable.server.cluster.member import Cluster
from cardtable.server.cluster.ownership import ClusterSettings
from cardtable.server.core.settings import Settings
from cardtable.server.lobby.manager import Manager
from cardtable.server.storage.store import Store
from cardtable.server.table.owner import Table
from cluster_harness import stored_tables
from services import Postgres, new_database
from table_helpers import play_first_legal

SETTINGS = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=0, chosen_seeds=1)  # seeded deals


@pytest.fixture
async def url(postgres: Postgres) -> AsyncIterator[str]:
    yield new_database(postgres)


async def one_process(url: str, redis_url: str) -> tuple[Store, Cluster, Manager]:
    store = await Store.open(url, cluster=True)
    cluster = await Cluster.open(redis_url, store, ClusterSettings(sweep_s=600))  # sweeps only when called here
    return store, cluster, await Manager.open(store, SETTINGS, cluster)


async def close(store: Store, cluster: Cluster, manager: Manager) -> None:
    await manager.close()
    await cluster.close()
    await store.close()


async def test_the_sweep_takes_free_tables_in_chunks_and_notes_a_missed_lease(
        url: str, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster_module, "TAKE_CHUNK", 2)
    ids = await stored_tables(url, 6, SETTINGS, seeded=True)
    store, cluster, manager = await one_process(url, redis_url)
    redis = Redis.from_url(redis_url)
    try:
        # a process that missed its renewals holds ids[0]: 1.5 s left of a 5 s lease
        await redis.set(LEASE_PREFIX + ids[0], "gone-1:7", px=1500)
        assert await cluster.sweep() == 5
        assert set(manager.tables) == set(ids[1:]) == set(cluster.owned) == set(store.fences)
        assert cluster._expiring_s is not None and 1.0 < cluster._expiring_s <= 1.5
        owners = await cluster.leases.owners(ids[1:])
        assert owners == [(cluster.process, cluster.owned[t]) for t in ids[1:]]
        assert await cluster.sweep() == 0  # all owned, the missed lease not yet expired
        await asyncio.sleep(cluster._expiring_s + 0.1)  # not a wait: the missed lease's time runs out
        assert await cluster.sweep() == 1 and ids[0] in manager.tables
        assert cluster._expiring_s is None
        # each taken table plays on: its stored record takes an action at its new epoch
        table = manager.tables[ids[0]]
        ok, _ = await play_first_legal(table)
        assert ok
    finally:
        await redis.aclose()
        await close(store, cluster, manager)


async def test_a_connection_to_a_table_being_taken_here_waits_for_that_take(
        url: str, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (table_id,) = await stored_tables(url, 1, SETTINGS, seeded=True)
    store, cluster, manager = await one_process(url, redis_url)
    load = store.load_tables
    loading = asyncio.Event()

    async def slow_load(**kwargs: Any) -> Any:
        if kwargs.get("table_ids"):  # the take's load of the records: the lease is ours, the table not yet here
            loading.set()
            await asyncio.sleep(0.5)  # not a wait: a slow load, injected
        return await load(**kwargs)

    monkeypatch.setattr(store, "load_tables", slow_load)
    try:
        sweep = asyncio.create_task(cluster.take_many([table_id]))
        await loading.wait()
        assert await cluster.leases.owner(table_id) == (cluster.process, cluster.owned[table_id])
        located = await cluster.locate(table_id)
        taken = await sweep
        assert isinstance(located, Table) and located is taken[table_id] is manager.tables[table_id]
    finally:
        await close(store, cluster, manager)


async def test_only_a_table_that_is_not_live_is_not_found(url: str, redis_url: str) -> None:
    table_id, other = await stored_tables(url, 2, SETTINGS, seeded=True)
    store, cluster, manager = await one_process(url, redis_url)
    try:
        await store.update_status(table_id, "finished", finished="2026-11-25T00:00:00Z")
        assert await cluster.locate(table_id) is None
        assert await cluster.locate("no-such-table") is None
        assert table_id not in cluster.owned and await cluster.leases.owner(table_id) is None
        redis = Redis.from_url(redis_url)
        try:
            await redis.set(LEASE_PREFIX + other, "elsewhere-1:3", px=5000)
        finally:
            await redis.aclose()
        assert await cluster.locate(other) == "elsewhere-1"
    finally:
        await close(store, cluster, manager)


async def test_a_table_dropped_while_its_take_finishes_is_not_handed_out(
        url: str, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    table_id, other = await stored_tables(url, 2, SETTINGS, seeded=True)
    store, cluster, manager = await one_process(url, redis_url)
    restore = cluster_module.restore_seat_accounts

    async def dropped_meanwhile(store: Store, tables: dict[str, Table]) -> None:
        await restore(store, tables)
        await cluster.drop(tables[table_id])  # its first write failed while the take was finishing

    monkeypatch.setattr(cluster_module, "restore_seat_accounts", dropped_meanwhile)
    try:
        taken = await cluster.take_many([table_id, other])
        assert list(taken) == [other] and taken[other] is manager.tables[other]
        assert table_id not in manager.tables and table_id not in cluster.owned
        monkeypatch.setattr(cluster_module, "restore_seat_accounts", restore)
        table = await cluster.take(table_id)  # its lease was released: taken again, and live
        assert table is not None and manager.tables[table_id] is table
    finally:
        await close(store, cluster, manager)


async def test_a_table_whose_owner_missed_a_renewal_is_served_here_once_its_lease_expires(
        url: str, redis_url: str) -> None:
    (table_id,) = await stored_tables(url, 1, SETTINGS, seeded=True)
    store, cluster, manager = await one_process(url, redis_url)
    redis = Redis.from_url(redis_url)
    try:
        await redis.set(LEASE_PREFIX + table_id, "gone-1:3", px=600)  # a 5 s lease with 0.6 s left: not renewed
        located = await cluster.locate(table_id)  # not relayed to the dead owner: waited for, then taken here
        assert isinstance(located, Table) and located is manager.tables[table_id]
        assert await cluster.leases.owner(table_id) == (cluster.process, cluster.owned[table_id])
    finally:
        await redis.aclose()
        await close(store, cluster, manager)
