"""Costs that must not grow with the number of tables when several processes serve (issue 25, item 7), on the real
PostgreSQL and Redis of ``tests/services.py``: a lobby page (open tables and finished ones) and a Play now read the
same rows whether 30 or 300 tables wait (indexed queries with keyset cursors, measured by PostgreSQL itself with
``EXPLAIN ANALYZE`` of every query the store ran); ``/api/me/seats`` runs as many queries for 50 seats as for 5; a
lease outlives an event loop blocked longer than the lease (renewed off the loop), while a loop blocked for good
still loses its tables to the other process."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from redis import Redis as SyncRedis
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from cardtable.server.cluster.lease import LEASE_PREFIX, parse_lease
from cardtable.server.cluster.member import Cluster
from cardtable.server.cluster.ownership import ClusterSettings
from cardtable.server.core.settings import Settings
from cardtable.server.edge.app import create_app
from cardtable.server.lobby.manager import Manager
from cardtable.server.storage import schema
from cardtable.server.storage.store import Store
from clients import Statements
from cluster_harness import Proc
from polling import until, wait_for
from services import Postgres, new_database

SETTINGS = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=0, page_size=20,
                    creates_per_minute=10_000, create_burst=10_000, play_now_start_s=600)
ORIGIN = {"Origin": "http://testserver"}
SLACK_ROWS = 8
"""Rows a page may read beyond the same page with ten times fewer tables (the planner's choices may differ a
little; a scan of every table would read hundreds more)."""

pytestmark = pytest.mark.usefixtures("cheap_hashes")  # conftest.py: real Argon2id, small parameters


@pytest.fixture
def url(postgres: Postgres) -> str:
    """A fresh database in the session's PostgreSQL."""
    return new_database(postgres)


def _rows_in(plan: dict[str, Any]) -> int:
    """Rows the scans of ``plan`` (``EXPLAIN (ANALYZE, FORMAT JSON)``) read: returned or removed by a filter, times
    their loops."""
    rows = 0
    if "Scan" in plan["Node Type"]:
        rows += (plan.get("Actual Rows", 0) + plan.get("Rows Removed by Filter", 0)
                 + plan.get("Rows Removed by Index Recheck", 0)) * plan.get("Actual Loops", 1)
    return rows + sum(_rows_in(p) for p in plan.get("Plans", []))


async def rows_read(url: str, statements: Statements) -> int:
    """Rows PostgreSQL reads to answer the reads of ``statements`` again (``EXPLAIN ANALYZE``), through the best
    index it has for each (sequential scans, bitmap scans and sorts are discouraged): with a few hundred rows a
    whole table fits in a few pages and the planner rightly reads it all, as it would not with many thousands;
    what matters is that an index serves each page, in order, in about its own size."""
    conn = await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(hide_password=False))
    try:
        await conn.execute("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off")
        total = 0
        for sql, params in statements.selects:
            plan = json.loads(await conn.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, *(params or ())))
            total += _rows_in(plan[0]["Plan"])
        return total
    finally:
        await conn.close()


async def analyze(store: Store) -> None:
    """Up-to-date planner statistics (autovacuum's job in a deployment)."""
    async with store.engine.begin() as conn:
        await conn.exec_driver_sql("ANALYZE")


async def insert_tables(store: Store, count: int, *, status: str = "open", game: str = "nerts",
                        stamp: str = "2000-01-01T00:00:00", start: int = 0) -> list[str]:
    """``count`` two-seat tables of ``status`` stored by a process gone meanwhile (nobody owns them), each with
    a person and an open seat, ``created`` (and, when ended, ``finished``) times from ``stamp`` one second apart."""
    ids = [f"t{status[:2]}{start + i:06d}" for i in range(count)]
    ended = status in ("finished", "abandoned", "closed")
    rows = [{"id": table_id, "game": game, "options": {"players": 2}, "status": status, "seed": i,
             "grace_seconds": 60.0, "created": f"{stamp}.{start + i:06d}Z",
             "finished": f"{stamp}.{start + i:06d}Z" if ended else None, "epoch": 0}
            for i, table_id in enumerate(ids)]
    seats = [{"table_id": t, "seat": s, "kind": "person" if s == 0 else "open", "name": "someone" if s == 0 else None,
              "bot": None, "token_hash": None, "left": 0} for t in ids for s in range(2)]
    async with store.engine.begin() as conn:
        await conn.execute(schema.tables.insert(), rows)
        await conn.execute(schema.seats.insert(), seats)
    return ids


async def one_process(url: str, redis_url: str, lease_ms: int = 5000) -> tuple[Store, Cluster, Manager]:
    store = await Store.open(url, cluster=True)
    cluster = await Cluster.open(redis_url, store, ClusterSettings(lease_ms=lease_ms, sweep_s=600))
    return store, cluster, await Manager.open(store, SETTINGS, cluster)


async def close(store: Store, cluster: Cluster, manager: Manager) -> None:
    await manager.close()
    await cluster.close()
    await store.close()


async def page_cost(url: str, manager: Manager, status: str, cursor: str | None) -> tuple[int, int, str | None]:
    """Statements and rows read of one lobby page of ``status`` after ``cursor``, and the next cursor."""
    with Statements(manager.store.engine) as statements:
        page, after = await manager.list_tables(status, None, cursor)
    assert len(page) == SETTINGS.page_size
    return len(statements.seen), await rows_read(url, statements), after


async def all_pages(manager: Manager, status: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page, cursor = await manager.list_tables(status, None, cursor)
        out += page
        if cursor is None:
            return out


async def test_a_lobby_page_reads_as_many_rows_with_300_tables_as_with_30(url: str, redis_url: str) -> None:
    store, cluster, manager = await one_process(url, redis_url)
    try:
        own = [(await manager.create("nerts", {"players": 2}, None, "ana", None, 60))[0].id for _ in range(3)]
        await insert_tables(store, 30)
        await insert_tables(store, 30, status="finished", start=0)
        await insert_tables(store, 30, status="abandoned", start=30)
        await insert_tables(store, 30, status="closed", start=60)
        await analyze(store)
        small = {status: (await page_cost(url, manager, status, None))[:2] for status in ("open", "finished")}
        await insert_tables(store, 270, start=30)
        await insert_tables(store, 270, status="finished", start=60)
        await insert_tables(store, 270, status="abandoned", start=330)
        await insert_tables(store, 270, status="closed", start=600)
        await analyze(store)
        deep = {"open": "2000-01-01T00:00:00.000250Z~top000250", "finished": "2000-01-01T00:00:00.000100Z~tfi000100"}
        for status in ("open", "finished"):
            for cursor in (None, deep[status]):  # the first page, and one deep down the list
                statements, rows, _ = await page_cost(url, manager, status, cursor)
                assert statements == small[status][0], (status, cursor)
                assert rows <= small[status][1] + SLACK_ROWS, (status, cursor, small[status], rows)
        # and the pages still hold every table once, in the lobby's order
        listed = await all_pages(manager, "open")
        assert [t["id"] for t in listed[:300]] == [f"top{i:06d}" for i in range(300)]
        assert sorted(t["id"] for t in listed[300:]) == sorted(own)
        assert {t["status"] for t in listed} == {"open"}
        ended = await all_pages(manager, "finished")
        assert len(ended) == 600 and {t["status"] for t in ended} == {"finished", "abandoned"}
        assert [(t["created"], t["id"]) for t in ended] == sorted(((t["created"], t["id"]) for t in ended),
                                                                  reverse=True)
    finally:
        await close(store, cluster, manager)


async def play_now_cost(url: str, manager: Manager, name: str, bot: str | None = None) -> tuple[str, int, int]:
    with Statements(manager.store.engine) as statements:
        table, _, _ = await manager.play_now("nerts", name, bot)
    return table.id, len(statements.selects), await rows_read(url, statements)


async def test_play_now_reads_as_many_rows_with_300_waiting_tables_as_with_30(url: str, redis_url: str) -> None:
    store, cluster, manager = await one_process(url, redis_url)
    try:
        first, _, _ = await manager.play_now("nerts", "ana")
        await insert_tables(store, 30)  # custom tables waiting for people (older than the Play now table)
        await insert_tables(store, 30, game="anemone", start=1000)
        await analyze(store)
        joined, small_statements, small_rows = await play_now_cost(url, manager, "bo")
        assert joined == first.id
        await insert_tables(store, 270, start=30)
        await insert_tables(store, 270, game="anemone", start=1030)
        await analyze(store)
        joined, big_statements, big_rows = await play_now_cost(url, manager, "cy")
        assert joined == first.id
        assert big_statements == small_statements
        assert big_rows <= small_rows + SLACK_ROWS, (small_rows, big_rows)
        assert len(manager.tables) == 1  # no table nobody asked for was taken on the way
        # a player given other bots (their rating's level) gets a table of their own
        other, _, _ = await manager.play_now("nerts", "di", "greedy:hard")
        assert other.id != first.id
        again, _, _ = await manager.play_now("nerts", "ed", "greedy:hard")
        assert again.id == other.id
        assert (await manager.play_now("nerts", "fa"))[0].id in (first.id, other.id)  # no bots asked for: either
    finally:
        await close(store, cluster, manager)


@pytest.fixture
def two_apps(postgres: Postgres, redis: Any, redis_url: str) -> Iterator[tuple[TestClient, TestClient]]:
    db = new_database(postgres)
    with TestClient(create_app(db, SETTINGS, redis_url)) as a, TestClient(create_app(db, SETTINGS, redis_url)) as b:
        yield a, b


def seats_cost(client: TestClient) -> tuple[int, list[dict[str, Any]]]:
    with Statements(client.app.state.store.engine) as statements:  # type: ignore[attr-defined]
        reply = client.get("/api/me/seats")
    assert reply.status_code == 200, reply.text
    return len(statements.seen), reply.json()


def test_my_seats_runs_as_many_queries_for_50_seats_as_for_5(two_apps: tuple[TestClient, TestClient]) -> None:
    a, b = two_apps
    made = a.post("/api/accounts", json={"name": "Kim", "password": "long enough"}, headers=ORIGIN)
    assert made.status_code == 201, made.text
    b.cookies.update(a.cookies)
    tokens: dict[str, str] = {}
    small: dict[int, int] = {}
    for count in (5, 50):
        while len(tokens) < count:
            reply = a.post("/api/tables", headers=ORIGIN, json={"game": "nerts", "options": {"players": 2}})
            assert reply.status_code == 201, reply.text
            tokens[reply.json()["table"]["id"]] = reply.json()["token"]
        for i, client in enumerate((a, b)):  # the owner, and another process that reads each table from the database
            statements, seats = seats_cost(client)
            assert {s["table"]["id"]: s["token"] for s in seats} == tokens
            assert all(s["seat"] == 0 and s["table"]["seats"][0]["name"] == "Kim" for s in seats)
            assert statements == small.setdefault(i, statements), (i, small[i], statements)


def lease_owners(redis: SyncRedis, table_ids: list[str]) -> list[str | None]:
    return [None if (lease := parse_lease(v)) is None else lease[0]
            for v in redis.mget([LEASE_PREFIX + t for t in table_ids])]


@pytest.fixture
def other_process(url: str, redis_url: str, tmp_path: Path) -> Iterator[Proc]:
    """A real ``cardtable serve --redis`` process on the same database, sweeping for free tables every 0.2 s."""
    proc = Proc(url, redis_url, tmp_path / "other.log", options=["--sweep-s", "0.2"]).start()
    yield proc
    if proc.alive:
        proc.stop(signal.SIGKILL)


LEASE_MS = 1000


async def test_a_lease_outlives_a_loop_blocked_longer_than_the_lease(url: str, redis_url: str,
                                                                     other_process: Proc) -> None:
    store, cluster, manager = await one_process(url, redis_url, lease_ms=LEASE_MS)
    redis = SyncRedis.from_url(redis_url)
    try:
        ids = [(await manager.create("nerts", {"players": 2}, None, "ana", None, 60))[0].id for _ in range(10)]
        time.sleep(1.5 * LEASE_MS / 1000)  # one slow turn of the event loop: half as long again as a lease
        assert lease_owners(redis, ids) == [cluster.process] * len(ids)
        await asyncio.sleep(0)  # not a wait: one turn of the loop, in which a wrong drop would have begun
        assert set(ids) <= set(manager.tables)
    finally:
        redis.close()
        await close(store, cluster, manager)


async def test_a_loop_blocked_for_good_loses_its_tables(url: str, redis_url: str, other_process: Proc) -> None:
    store, cluster, manager = await one_process(url, redis_url, lease_ms=LEASE_MS)
    redis = SyncRedis.from_url(redis_url)
    try:
        ids = [(await manager.create("nerts", {"players": 2}, None, "ana", None, 60))[0].id for _ in range(3)]
        mine = cluster.process
        # the loop never comes back (a deadlock, a loop in C): the other process takes every table
        wait_for(lambda: all(o not in (None, mine) for o in lease_owners(redis, ids)), 30, "the other process")
        # back: this process learns it lost them, and lets them go
        await until(lambda: not set(ids) & set(manager.tables), 30, "the tables to be let go", every=0.05)
    finally:
        redis.close()
        await close(store, cluster, manager)
