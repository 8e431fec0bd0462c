"""The paths between processes (``server/cluster.py``), with two or more processes in ONE test process (each its own
``Store``, ``Cluster`` and ``Manager``) on one real PostgreSQL database and one real Redis: a lobby operation on a
table owned elsewhere is done by its owner and its answer (or its refusal) comes back; the lobby shows what the
owner published; a lock over all processes excludes; a hand-over lets another process take every table at once; a
renewal extends the leases, lets go of tables that were not created and drops those whose lease was lost; a
connection to a table owned elsewhere is relayed to its owner and told to reconnect when the owner changes.
(The multi-process tests of ``tests/test_server_cluster.py`` run real servers, which a mutation test cannot see.)"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from redis import Redis as SyncRedis
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from sqlalchemy import select
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from cardtable.server.cluster.calls import LOBBY, RemoteTable
from cardtable.server.cluster.lease import LEASE_PREFIX
from cardtable.server.cluster.mailbox import channel
from cardtable.server.cluster.member import Cluster
from cardtable.server.cluster.ownership import ClusterSettings
from cardtable.server.cluster.redis_clients import ALIVE_PREFIX
from cardtable.server.cluster.relay import OPEN_TIMEOUT_S
from cardtable.server.core.errors import TableError
from cardtable.server.core.settings import Settings
from cardtable.server.edge.app import create_app
from cardtable.server.lobby.manager import Manager
from cardtable.server.storage import schema
from cardtable.server.storage.store import Store
from cardtable.server.table.actions import QueuedAction
from cardtable.server.table.owner import Table
from cluster_harness import stored_tables, wait_for
from polling import until
from services import Postgres, free_port, new_database
from table_helpers import play_first_legal

SETTINGS = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=0)

WAIT_S = 5.0
"""Seconds to wait for a step that takes well under one here (a message between processes, a take), so that a
broken step fails the test soon."""


@dataclass
class Process:
    """One server process's parts, in this test process."""

    store: Store
    cluster: Cluster
    manager: Manager
    closed: bool = False

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        await self.manager.close()
        await self.cluster.close()
        await self.store.close()


@pytest.fixture
async def url(postgres: Postgres) -> str:
    return new_database(postgres)


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[Redis]:
    opened_client = Redis.from_url(redis_url)
    yield opened_client
    await opened_client.aclose()


@contextlib.asynccontextmanager
async def opened_processes(
    url: str, redis_url: str, client: Redis
) -> AsyncIterator[Callable[..., Awaitable[Process]]]:
    """Opens processes on the database ``url`` and the Redis ``redis_url``: the opener takes ``ClusterSettings`` as
    keywords (``sweep_s`` 600 unless given; ``keeper=False``: leases renewed by ``Cluster.renew`` rather than by the
    keeper's thread) and returns each process once it listens to its messages (seen through ``client``); every one
    opened ends, last first, when the block does."""
    opened: list[Process] = []

    async def open_process(keeper: bool = True, **settings: Any) -> Process:
        store = await Store.open(url, cluster=True)
        cluster = await Cluster.open(redis_url, store, ClusterSettings(**{"sweep_s": 600, **settings}))
        if not keeper:
            cluster.keeper = None
        process = Process(store, cluster, await Manager.open(store, SETTINGS, cluster))
        opened.append(process)

        async def subscribed() -> bool:
            ((_, count),) = await client.pubsub_numsub(channel(cluster.process))
            return bool(count)

        await until(subscribed, WAIT_S, "the process's subscription")
        return process

    yield open_process
    for process in reversed(opened):
        await process.close()


@pytest.fixture
async def processes(
    url: str, redis_url: str, client: Redis
) -> AsyncIterator[Callable[..., Awaitable[Process]]]:
    """Opens a process (``ClusterSettings`` as keywords; ``keeper=False``: leases renewed by ``Cluster.renew``
    rather than by the keeper's thread) listening to its messages; every one opened ends with the test."""
    async with opened_processes(url, redis_url, client) as open_process:
        yield open_process


async def new_table(process: Process) -> tuple[Table, str]:
    """A two-person Nerts table created at ``process`` by ana: the table and ana's token."""
    table, _, token = await process.manager.create("nerts", {"players": 2}, None, "ana", None, 60)
    assert isinstance(table, Table)
    return table, token


async def refusal(operation: Awaitable[object]) -> TableError:
    with pytest.raises(TableError) as refused:
        await operation
    return refused.value


async def test_a_lobby_operation_on_a_table_owned_elsewhere_is_done_by_its_owner_and_answered_back(
    processes: Callable[..., Awaitable[Process]],
) -> None:
    """Joining, leaving and starting a table through a process that does not own it: the owner does it (the seat
    is taken there, the token given back works there) and the answer is the owner's table; the owner's refusal
    comes back with its status, code and parameters."""
    a, b = await processes(), await processes()
    table, ana = await new_table(a)
    joined, seat, bo = await b.manager.join(table.id, "bo", None)
    assert isinstance(joined, RemoteTable) and joined.id == table.id and joined.game == "nerts"
    assert seat == 1 and table.seats[1].row.name == "bo" and table.id not in b.manager.tables
    assert joined.to_dict() == table.to_dict()
    assert table.seat_of(bo) == 1  # the token given through b holds the seat at its owner

    bad = await refusal(b.manager.leave(table.id, "not a token"))
    assert (bad.status, bad.code) == (403, "token.bad")
    taken = await refusal(b.manager.join(table.id, "cy", 1))
    assert (taken.status, taken.code, taken.params) == (409, "seat.taken", {"seat": 1})

    started = await b.manager.start(table.id, ana)
    assert isinstance(started, RemoteTable) and started.to_dict()["status"] == "playing" == table.status
    late = await refusal(b.manager.join(table.id, "cy", None))
    assert (late.status, late.code) == (409, "table.started")
    unknown = await refusal(b.cluster.call(a.cluster.process, table.id, "shuffle", {}))
    assert (unknown.status, unknown.code, unknown.params) == (
        422,
        "request.invalid",
        {"field": "method", "detail": "unknown"},
    )
    broken = await refusal(b.cluster.call(a.cluster.process, table.id, "join", {}))  # no name: it fails there
    assert (broken.status, broken.code, broken.params) == (503, "http.error", {"status": 503})
    assert str(broken).startswith("the operation failed")
    assert not b.cluster.calls.waiting  # every answered call forgotten


async def test_a_call_that_finds_no_owner_is_answered_503(
    processes: Callable[..., Awaitable[Process]],
) -> None:
    """A lobby operation forwarded to a process that does not answer (it died) fails with 503 after the call
    time-out, and one reaching a process that no longer holds the table (dropped, or stopping) is answered 503 by
    it: the client tries again and reaches the new owner."""
    a, b = await processes(), await processes(call_timeout_s=0.3)
    table, _ = await new_table(a)
    silent = await refusal(b.cluster.call("gone-1", table.id, "join", {"name": "bo"}))
    assert (silent.status, silent.code, silent.params) == (503, "http.error", {"status": 503})
    assert not b.cluster.calls.waiting

    other, _ = await new_table(a)
    await a.cluster.drop(other)
    moved = await refusal(b.cluster.call(a.cluster.process, other.id, "join", {"name": "bo"}))
    assert (moved.status, moved.code, moved.params) == (503, "http.error", {"status": 503})
    assert "moved" in str(moved)
    assert [s.row.kind for s in table.seats] == ["person", "open"]

    a.cluster.draining = True  # stopping: what it still holds is not joined there any more
    stopping = await refusal(b.cluster.call(a.cluster.process, table.id, "join", {"name": "bo"}))
    assert (stopping.status, stopping.code, stopping.params) == (503, "http.error", {"status": 503})
    assert [s.row.kind for s in table.seats] == ["person", "open"]


async def test_the_lobby_shows_a_table_as_its_owner_published_it(
    processes: Callable[..., Awaitable[Process]], client: Redis
) -> None:
    """Each renewal publishes the owner's view of its tables; another process's lobby reads it (one Redis read),
    a table not published is left out, and a table that ended is taken out of the published lobby."""
    a, b = await processes(), await processes()
    table, _ = await new_table(a)
    assert await b.cluster.lobby([]) == {}
    await a.cluster.renew()
    assert await b.cluster.lobby([table.id, "no-such-table"]) == {table.id: table.to_dict()}
    assert await b.manager.table_dict(table.id) == table.to_dict()
    await a.manager.join(table.id, "bo", None)
    await a.cluster.renew()
    assert (await b.cluster.lobby([table.id]))[table.id]["seats"][1]["name"] == "bo"

    table.row.status = "finished"  # ended here: let go, and out of the lobby
    await a.cluster.drop(table)
    assert not await client.hexists(LOBBY, table.id)
    live, _ = await new_table(a)
    await a.cluster.renew()
    await a.cluster.drop(live)  # still live (moving elsewhere): its last published view stays
    assert await client.hexists(LOBBY, live.id)


async def test_a_lock_over_all_processes_lets_one_holder_in_at_a_time(
    processes: Callable[..., Awaitable[Process]], client: Redis
) -> None:
    """Play now is serialised over every process: while one process holds a lock, another's waits, and gets it as
    soon as the first lets go; a lock is held by its name only."""
    a, b = await processes(), await processes()
    order: list[str] = []

    async def second() -> None:
        order.append("b waits")
        async with b.cluster.lock("play:nerts"):
            order.append("b in")

    async with a.cluster.lock("play:nerts"):
        order.append("a in")
        waiting = asyncio.create_task(second())
        await until(lambda: order[-1] == "b waits", WAIT_S)
        async with b.cluster.lock("play:anemone"):  # another lock: not held
            order.append("b other")
        for _ in range(3):  # b has tried meanwhile (it polls every 0.1 s)
            await asyncio.sleep(0.1)  # not a wait: b must stay blocked while these polls of its pass
            assert not waiting.done()
        assert await client.exists("ct:lock:play:nerts")
        order.append("a out")
    await asyncio.wait_for(waiting, WAIT_S)
    assert order == ["a in", "b waits", "b other", "a out", "b in"]
    assert not await client.exists("ct:lock:play:nerts")  # released at once, not left to expire


async def test_without_redis_a_process_refuses_what_needs_it_and_reads_the_lobby_from_the_database(
    url: str,
) -> None:
    """Redis away: a lock is not had (503: try again), a new table is not claimed (503), and the lobby of other
    processes' tables reads as nothing published (the database's view is shown instead)."""
    store = await Store.open(url, cluster=True)
    nowhere = Redis(port=free_port(), retry=None)  # nothing listens there
    cluster = Cluster(nowhere, store, ClusterSettings(), "alone-1")
    try:
        with pytest.raises(TableError) as busy:
            async with cluster.lock("play:nerts"):
                pass
        assert busy.value.status == 503
        claim = await refusal(cluster.claim_new("t1"))
        assert claim.status == 503 and "t1" not in cluster.owned and "t1" not in store.fences
        assert await cluster.lobby(["t1"]) == {}
    finally:
        await nowhere.aclose()
        await store.close()


async def test_handing_over_lets_another_process_take_every_table_at_once(
    processes: Callable[..., Awaitable[Process]], client: Redis
) -> None:
    """SIGTERM: every table of the stopping process is taken by another process at once (named on
    ``ct:released``, no sweep needed: the sweep here runs every 10 minutes), at a higher epoch, and plays on
    there; a process that is itself stopping takes none."""
    a, b = await processes(), await processes()
    made = [await new_table(a) for _ in range(3)]
    ids = {t.id for t, _ in made}
    epochs = {t: a.cluster.owned[t] for t in ids}
    await a.cluster.hand_over()
    await until(lambda: ids <= set(b.manager.tables), WAIT_S)
    assert not a.manager.tables and not a.cluster.owned
    assert all(b.cluster.owned[t] > epochs[t] for t in ids)
    assert await b.cluster.leases.owners(sorted(ids)) == [
        (b.cluster.process, b.cluster.owned[t]) for t in sorted(ids)
    ]
    table, token = made[0]
    _, seat, _ = await b.manager.join(table.id, "bo", None)  # played on there, seat and token kept
    assert seat == 1 and b.manager.tables[table.id].seat_of(token) == 0

    c = await processes()
    await c.cluster.hand_over()  # stopping too: takes nothing b lets go
    await b.cluster.hand_over()
    await until(lambda: lease_count(client, ids, 0), WAIT_S, "the leases released")
    assert not c.manager.tables and not c.cluster.owned
    assert await client.exists(ALIVE_PREFIX + c.cluster.process)
    await c.close()  # gone: no longer alive for the processes it relayed connections to
    assert not await client.exists(ALIVE_PREFIX + c.cluster.process)


async def lease_count(client: Redis, ids: set[str], count: int) -> bool:
    return int(await client.exists(*(LEASE_PREFIX + t for t in ids))) == count


async def test_a_renewal_without_the_keeper_extends_leases_drops_lost_tables_and_lets_go_of_unmade_ones(
    processes: Callable[..., Awaitable[Process]], client: Redis
) -> None:
    """A process renewing on its event loop (no keeper thread): each renewal extends every lease held to a whole
    lease time and marks the process alive; a table whose lease another process holds now is dropped here and
    that lease left alone; a table claimed but never created (``forget_new``) has its lease released."""
    a = await processes(keeper=False, lease_ms=3000)
    kept, _ = await new_table(a)
    lost, _ = await new_table(a)
    await client.pexpire(LEASE_PREFIX + kept.id, 500)
    await client.delete(ALIVE_PREFIX + a.cluster.process)
    theirs = f"elsewhere-1:{a.cluster.owned[lost.id] + 1}"
    await client.set(LEASE_PREFIX + lost.id, theirs, px=30_000)
    await a.cluster.claim_new("unmade")
    assert await a.cluster.leases.owner("unmade") == (a.cluster.process, a.cluster.owned["unmade"])
    a.cluster.forget_new("unmade")
    await a.cluster.renew()
    assert 2000 < await client.pttl(LEASE_PREFIX + kept.id) <= 3000
    assert await client.pttl(ALIVE_PREFIX + a.cluster.process) > 2000
    assert (
        lost.id not in a.manager.tables and lost.id not in a.cluster.owned and lost.id not in a.store.fences
    )
    assert await client.get(LEASE_PREFIX + lost.id) == theirs.encode()
    assert await a.cluster.leases.owner("unmade") is None and "unmade" not in a.cluster.owned
    assert "unmade" not in a.store.fences
    assert kept.id in a.manager.tables and a.cluster.owned[kept.id] == a.store.fences[kept.id]
    assert await client.hexists(LOBBY, kept.id) and not await client.hexists(LOBBY, "unmade")


async def test_tables_nobody_owns_are_taken_by_the_sweep_and_play_on(
    url: str, processes: Callable[..., Awaitable[Process]], client: Redis
) -> None:
    """Tables whose owner died (nobody holds their lease) are taken by a running process's periodic sweep, with no
    request for them (their bots and clocks go on), each under a lease of its own, and play on there."""
    ids = await stored_tables(url, 3, SETTINGS)
    a = await processes(sweep_s=0.1)
    await until(lambda: set(ids) <= set(a.manager.tables), WAIT_S)
    assert await a.cluster.leases.owners(ids) == [(a.cluster.process, a.cluster.owned[t]) for t in ids]
    assert all(a.store.fences[t] == a.cluster.owned[t] for t in ids)
    ok, _ = await play_first_legal(a.manager.tables[ids[0]])
    assert ok


async def test_a_table_whose_writes_are_refused_is_dropped_here_and_its_lease_let_go(
    url: str, processes: Callable[..., Awaitable[Process]]
) -> None:
    """A process whose write for a table is refused by the database (another process took the table there) does
    not acknowledge it and stops serving the table: out of its tables and fences, its lease released so that the
    process now holding the table at the database can serve it."""
    a = await processes()
    (table_id,) = await stored_tables(url, 1, SETTINGS)
    table = await a.cluster.take(table_id)
    assert isinstance(table, Table)
    epoch = a.cluster.owned[table_id]
    other = await Store.open(url, cluster=True)
    try:
        assert await other.take(table_id, epoch + 1) == epoch + 1  # another process took it at the database
    finally:
        await other.close()
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    state = table.state
    assert state is not None
    table.submit_action(QueuedAction(0, state.legal_actions(0)[0], future=future))
    await until(lambda: table_id not in a.manager.tables, WAIT_S)
    assert not future.done() or future.exception() is not None or not future.result()[0]  # not acknowledged
    assert table_id not in a.cluster.owned and table_id not in a.store.fences
    await until(lambda: lease_gone(a, table_id), WAIT_S, "the lease let go")


async def lease_gone(process: Process, table_id: str) -> bool:
    return await process.cluster.leases.owner(table_id) is None


async def test_a_process_whose_loop_runs_keeps_its_tables_lease_after_lease(
    processes: Callable[..., Awaitable[Process]],
) -> None:
    """A process at work keeps its tables: over several lease times its leases stay its own at the same epoch
    (renewed by the keeper, which the event loop tells it is alive), and its tables stay served."""
    a = await processes(lease_ms=1500)  # renewed every 0.5 s, on time even on a loaded machine
    table, _ = await new_table(a)
    held = (a.cluster.process, a.cluster.owned[table.id])
    loop = asyncio.get_running_loop()
    until_time = loop.time() + 6.5  # a loop silent for three lease times would have lost its leases by then
    while loop.time() < until_time:
        assert await a.cluster.leases.owner(table.id) == held
        await asyncio.sleep(0.05)  # not a wait: the lease is checked over 6.5 s of running
    assert a.manager.tables.get(table.id) is table


async def test_a_process_that_cannot_renew_its_leases_stops_serving_its_tables(
    processes: Callable[..., Awaitable[Process]], client: Redis
) -> None:
    """Renewing on the event loop (no keeper): when Redis does not answer the renewals, every table is dropped
    here while Redis is still away, before its lease could have passed to another process."""
    a = await processes(keeper=False, lease_ms=600)
    made = [await new_table(a) for _ in range(2)]
    loop = asyncio.get_running_loop()
    await client.execute_command("CLIENT", "PAUSE", "3000", "ALL")  # Redis away for 3 s: 5 lease times
    paused = loop.time()
    await until(lambda: not a.manager.tables, WAIT_S)
    assert loop.time() - paused < 3.0  # while Redis is still away: no renewal came back
    assert not a.cluster.owned and not a.store.fences
    assert all(table.id not in a.manager.tables for table, _ in made)


async def test_the_sweep_comes_early_only_for_a_lease_whose_holder_missed_a_renewal(
    url: str, processes: Callable[..., Awaitable[Process]], client: Redis
) -> None:
    """The sweep plans its next run at the expiry of another process's lease that has less than half a lease time
    left (its holder missed a renewal: likely dead), not at a lease just renewed elsewhere, nor at one of its own."""
    mine, fresh, late = await stored_tables(url, 3, SETTINGS)
    a = await processes()  # a 5 s lease: a renewed one has more than 3.3 s left
    assert isinstance(await a.cluster.take(mine), Table)
    await client.pexpire(LEASE_PREFIX + mine, 1000)  # its own, short: not another's missed renewal
    for table_id in (fresh, late):  # renewed elsewhere just now
        await client.set(LEASE_PREFIX + table_id, "elsewhere-1:3", px=4500)
    assert await a.cluster.sweep() == 0
    assert a.cluster._expiring_s is None  # when the next sweep comes
    await client.pexpire(LEASE_PREFIX + late, 2000)  # its holder missed a renewal: expires in 2 s
    assert await a.cluster.sweep() == 0
    assert a.cluster._expiring_s is not None and 1.5 < a.cluster._expiring_s <= 2.0


async def test_a_process_does_not_start_without_redis(url: str) -> None:
    """``serve --redis`` with no Redis at the address: opening fails at once with a connection error (the operator
    sees why), rather than serving as one of several processes that cannot reach the others."""
    store = await Store.open(url, cluster=True)
    try:
        with pytest.raises(RedisConnectionError):
            await Cluster.open(f"redis://127.0.0.1:{free_port()}/0", store)
    finally:
        await store.close()


async def test_a_table_held_up_by_a_lock_does_not_hold_up_the_others_in_the_sweep(
    url: str, processes: Callable[..., Awaitable[Process]]
) -> None:
    """One free table whose row another transaction holds locked (an old owner's write in flight) makes the sweep's
    take of its chunk time out: the sweep then takes the tables one at a time, so the others are taken and served
    at once, and the held one by a later sweep once the lock is gone."""
    ids = await stored_tables(url, 3, SETTINGS)
    held = ids[1]
    a = await processes(lease_ms=600)  # a take times out after two lease times: 1.2 s
    other = await Store.open(url)
    try:
        async with other.engine.begin() as conn:
            tables = schema.tables
            await conn.execute(select(tables.c.id).where(tables.c.id == held).with_for_update())
            assert await a.cluster.sweep() == 2
            assert set(a.manager.tables) == set(ids) - {held} == set(a.cluster.owned) == set(a.store.fences)
            assert await a.cluster.leases.owner(held) is None  # left for the next sweep, here or elsewhere
        assert await a.cluster.sweep() == 1 and set(a.manager.tables) == set(ids)
    finally:
        await other.close()


async def test_a_table_that_ended_meanwhile_is_not_taken(
    url: str, processes: Callable[..., Awaitable[Process]], client: Redis
) -> None:
    """A table that ended before it could be taken (its record says finished) is neither served, owned nor fenced
    here, and keeps no lease: no process plays it again."""
    table_id, live = await stored_tables(url, 2, SETTINGS)
    a = await processes()
    await a.store.update_status(table_id, "finished", finished="2026-11-25T00:00:00Z")
    taken = await a.cluster.take_many([table_id, live])
    assert list(taken) == [live] and set(a.manager.tables) == {live}
    assert set(a.cluster.owned) == {live} == set(a.store.fences)
    assert not await client.exists(LEASE_PREFIX + table_id)


async def test_a_connection_waits_for_an_owner_that_missed_its_renewals_but_not_for_a_live_one(
    url: str, processes: Callable[..., Awaitable[Process]], client: Redis
) -> None:
    """Locating a table whose owner's lease has less than half a lease time left (it missed renewals: likely dead)
    waits for that lease to expire and takes the table here, so the client is not relayed to a dead process;
    a table whose owner renewed on time is located at that owner at once."""
    late, fresh = await stored_tables(url, 2, SETTINGS)
    a = await processes()  # a 5 s lease
    await client.set(LEASE_PREFIX + late, "gone-1:3", px=2000)  # 2 s left: renewals missed
    await client.set(LEASE_PREFIX + fresh, "elsewhere-1:3", px=4000)  # renewed a second ago
    assert await a.cluster.locate(fresh) == "elsewhere-1"
    located = await a.cluster.locate(late)
    assert isinstance(located, Table) and a.manager.tables[late] is located
    assert await a.cluster.leases.owner(late) == (a.cluster.process, a.cluster.owned[late])


async def test_a_table_still_being_created_here_is_answered_try_again_not_missing(
    processes: Callable[..., Awaitable[Process]],
) -> None:
    """A request for a table whose lease this process holds while the table is not (yet) in play here, such as one
    being created, is answered 503 (try again): it is never told that the table does not exist."""
    a = await processes()
    await a.cluster.claim_new("being-made")
    moving = await refusal(a.cluster.locate("being-made"))
    assert (moving.status, moving.code, moving.params) == (503, "http.error", {"status": 503})
    assert "moving" in str(moving)


# -- connections relayed between processes (real apps, each on its own event loop) ---------------------------

ORIGIN = {"Origin": "http://testserver"}
RELAY_SETTINGS = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, lease_ms=30_000, sweep_s=600)
"""A long lease: no renewal comes by itself while a test looks (each is called by the test)."""


@pytest.fixture
def db(postgres: Postgres) -> str:
    return new_database(postgres)


@contextlib.contextmanager
def listening_apps(db: str, redis_url: str, settings: Settings, count: int) -> Iterator[list[TestClient]]:
    """``count`` server processes (apps with ``--redis``) on one database and one Redis, each listening."""
    with contextlib.ExitStack() as stack:
        clients = [stack.enter_context(TestClient(create_app(db, settings, redis_url))) for _ in range(count)]
        for app in clients:
            with SyncRedis.from_url(redis_url) as redis:
                name = channel(cluster_of(app).process)
                wait_for(lambda: redis.pubsub_numsub(name)[0][1], WAIT_S, "the process to listen")  # noqa: B023
        yield clients


@pytest.fixture
def apps(db: str, redis_url: str) -> Iterator[list[TestClient]]:
    """Three server processes (apps with ``--redis``) on one database and one Redis."""
    with listening_apps(db, redis_url, RELAY_SETTINGS, 3) as clients:
        yield clients


def cluster_of(client: TestClient) -> Cluster:
    cluster = client.app.state.manager.cluster  # type: ignore[attr-defined]
    assert isinstance(cluster, Cluster)
    return cluster


def tables_of(client: TestClient) -> dict[str, Table]:
    tables: dict[str, Table] = client.app.state.manager.tables  # type: ignore[attr-defined]
    return tables


def hello(ws: Any, token: str | None) -> dict[str, Any]:
    """Say hello and return the snapshot."""
    ws.send_json({"type": "hello", "token": token})
    while (message := ws.receive_json())["type"] != "snapshot":
        pass
    return message  # type: ignore[no-any-return]


def close_code(ws: Any) -> int:
    """The code the server closes ``ws`` with (the messages before it are skipped)."""
    with pytest.raises(WebSocketDisconnect) as closed:
        while True:
            ws.receive_json()
    return closed.value.code


def connected(client: TestClient, table_id: str) -> list[bool]:
    return [seat.get("connected", False) for seat in tables_of(client)[table_id].to_dict()["seats"]]


def test_a_connection_to_a_table_owned_elsewhere_is_relayed_and_moves_with_the_table(
    apps: list[TestClient],
) -> None:
    """A player connected through a process that does not own the table is served by the owner (the seat shows as
    connected there, the snapshot is the seat's); when the owner hands over (SIGTERM) the player is told to
    reconnect (1012), and connecting again reaches the table at its new owner."""
    a, b, _ = apps
    made = a.post("/api/tables", json={"game": "nerts", "options": {"players": 2}}, headers=ORIGIN)
    assert made.status_code == 201, made.text
    tid, token = made.json()["table"]["id"], made.json()["token"]
    assert tid in tables_of(a)
    with b.websocket_connect(f"/ws/tables/{tid}") as ws:
        snapshot = hello(ws, token)
        assert snapshot["table"]["id"] == tid and tid not in tables_of(b)
        wait_for(lambda: connected(a, tid) == [True, False], WAIT_S, "the seat connected at the owner")
        a.portal.call(cluster_of(a).hand_over)  # type: ignore[union-attr]
        assert close_code(ws) == 1012
    wait_for(
        lambda: tid in tables_of(b) or tid in tables_of(apps[2]), WAIT_S, "another process to take the table"
    )
    with b.websocket_connect(f"/ws/tables/{tid}") as ws:
        assert hello(ws, token)["table"]["seats"][0]["connected"]


def test_a_relay_whose_table_changed_owner_is_told_to_reconnect_at_the_next_renewal(
    apps: list[TestClient], redis_url: str, db: str
) -> None:
    """A relayed connection whose table another process now holds (the owner lost its lease) is closed with 1012
    by the renewal of the process it came through, so that the client reconnects to the new owner; one whose
    owner is unchanged stays, whatever else that process takes meanwhile."""
    a, b, _ = apps
    (free,) = asyncio.run(stored_tables(db, 1, SETTINGS))
    made = a.post("/api/tables", json={"game": "nerts", "options": {"players": 2}}, headers=ORIGIN)
    tid, token = made.json()["table"]["id"], made.json()["token"]
    with b.websocket_connect(f"/ws/tables/{tid}") as ws, SyncRedis.from_url(redis_url) as redis:
        hello(ws, token)
        # a late answer to a call (after its time-out) is ignored: the relays through b go on
        late = {"op": "reply", "id": "late", "ok": True, "result": {}}
        a.portal.call(cluster_of(a).send, cluster_of(b).process, late)  # type: ignore[union-attr]
        joined = b.post(f"/api/tables/{tid}/join", json={"name": "bo"}, headers=ORIGIN)  # answered after it
        assert joined.status_code == 200, joined.text
        b.portal.call(cluster_of(b).renew)  # type: ignore[union-attr]
        assert isinstance(b.portal.call(cluster_of(b).take, free), Table)  # type: ignore[union-attr]
        assert [r.connection.closed for r in cluster_of(b).relays.origin_sides.values()] == [False]  # same owner: kept
        redis.set(LEASE_PREFIX + tid, f"elsewhere-1:{cluster_of(a).owned[tid] + 1}", px=30_000)
        b.portal.call(cluster_of(b).renew)  # type: ignore[union-attr]
        assert [r.connection.closed for r in cluster_of(b).relays.origin_sides.values()] in ([True], [])
        assert close_code(ws) == 1012


def test_the_owner_ends_connections_relayed_from_a_process_that_stopped(
    apps: list[TestClient], redis_url: str
) -> None:
    """The owner's renewal ends the connections relayed from a process no longer alive (one of several, then the
    only one): their seats show as not connected, while those relayed from a live process stay."""
    a, b, c = apps
    made = a.post("/api/tables", json={"game": "nerts", "options": {"players": 2}}, headers=ORIGIN)
    tid, ana = made.json()["table"]["id"], made.json()["token"]
    joined = a.post(f"/api/tables/{tid}/join", json={"name": "bo"}, headers=ORIGIN)
    assert joined.status_code == 200, joined.text
    bo = joined.json()["token"]
    with (
        b.websocket_connect(f"/ws/tables/{tid}") as from_b,
        c.websocket_connect(f"/ws/tables/{tid}") as from_c,
        SyncRedis.from_url(redis_url) as redis,
    ):
        hello(from_b, ana)
        hello(from_c, bo)
        wait_for(lambda: connected(a, tid) == [True, True], WAIT_S, "both seats connected at the owner")
        a.portal.call(cluster_of(a).renew)  # type: ignore[union-attr]
        assert connected(a, tid) == [True, True]  # both alive: both kept
        redis.delete(ALIVE_PREFIX + cluster_of(c).process)  # c died (as its owner sees it)
        a.portal.call(cluster_of(a).renew)  # type: ignore[union-attr]
        wait_for(lambda: connected(a, tid) == [True, False], WAIT_S, "the seat relayed from c let go")
        redis.delete(ALIVE_PREFIX + cluster_of(b).process)
        a.portal.call(cluster_of(a).renew)  # type: ignore[union-attr]
        wait_for(lambda: connected(a, tid) == [False, False], WAIT_S, "the seat relayed from b let go")


def test_a_relayed_connection_counts_against_its_clients_address_at_the_owner(
    db: str, redis_url: str
) -> None:
    """The per-address cap of a table (``max_connections_per_address_per_table``) holds for connections relayed from
    another process: the owner sees the client's own address, not the relaying process's, so a second connection
    from one address is refused there (429, ``connection.address_limit``, closed) and accepted once the first is
    gone."""
    settings = dataclasses.replace(RELAY_SETTINGS, max_connections_per_address_per_table=1)
    with listening_apps(db, redis_url, settings, 2) as (a, b):
        made = a.post("/api/tables", json={"game": "nerts", "options": {"players": 2}}, headers=ORIGIN)
        assert made.status_code == 201, made.text
        tid = made.json()["table"]["id"]
        with a.websocket_connect(f"/ws/tables/{tid}") as direct:
            hello(direct, None)
            with b.websocket_connect(f"/ws/tables/{tid}") as relayed:
                relayed.send_json({"type": "hello", "token": None})
                refused = relayed.receive_json()
                assert (refused["type"], refused["code"]) == ("error", "connection.address_limit"), refused
                assert close_code(relayed) == 1000
        with b.websocket_connect(f"/ws/tables/{tid}") as relayed:
            assert hello(relayed, None)["table"]["id"] == tid


def test_a_relay_to_a_process_that_no_longer_has_the_table_is_told_to_reconnect_at_once(
    apps: list[TestClient],
) -> None:
    """A connection relayed to the process named by the lease, which no longer holds the table (it let it go a
    moment ago), is answered by that process: closed with 1012 (reconnect) at once, not after the origin's
    ``OPEN_TIMEOUT_S`` wait for an answer that never comes; the origin keeps no relay for it."""
    a, b, _ = apps
    made = a.post("/api/tables", json={"game": "nerts", "options": {"players": 2}}, headers=ORIGIN)
    assert made.status_code == 201, made.text
    tid = made.json()["table"]["id"]
    tables_of(a).pop(tid)  # the owner let go of it; its lease still names it
    started = time.monotonic()
    with b.websocket_connect(f"/ws/tables/{tid}") as ws:
        ws.send_json({"type": "hello", "token": made.json()["token"]})
        assert close_code(ws) == 1012
    assert time.monotonic() - started < OPEN_TIMEOUT_S / 2, "closed by the origin's timeout, not by the owner"
    wait_for(lambda: not cluster_of(b).relays.origin_sides, WAIT_S, "the origin to let the relay go")
