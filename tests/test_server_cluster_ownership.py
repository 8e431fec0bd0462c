"""What taking and keeping tables (``server/cluster/ownership.py``) promises the operator and the rest of the server,
checked in ONE test process (a mutation test sees only in-process code) on a real PostgreSQL and a real Redis: tables
another process let go are taken together, a chunk at a time, by a background task named ``cardtable-cluster-take``;
the operator's log names the tables taken and their epochs, every table dropped here with the reason, and each
take, renewal or sweep that failed with its error; a take held up by a row lock gives up after two lease times; a
lost lease drops its table in a task named ``cardtable-cluster-drop`` and leaves that lease to its new holder; a
renewal that fails while the leases are kept drops nothing; a table that ended here has its lease let go, and a
hand-over goes on past a lease Redis fails to release; a request for a table owned here needs no Redis, and one for
a table on the move is answered 503 promptly; the sweep runs every ``sweep_s`` (and when a dead owner's lease
expires), goes on after a failure, stops at a hand-over, and leaves a waiting turn-based table to nobody."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
from redis.asyncio import Redis
from sqlalchemy import select

from cardtable.server.cluster import ownership as ownership_module
from cardtable.server.cluster.calls import LOBBY
from cardtable.server.cluster.lease import LEASE_PREFIX
from cardtable.server.cluster.ownership import RELEASED
from cardtable.server.storage import schema
from cardtable.server.storage.store import Store
from cardtable.server.table.actions import QueuedAction
from cardtable.server.table.owner import Table
from cluster_harness import stored_tables
from polling import until
from services import Postgres, new_database
from test_server_cluster_paths import SETTINGS, WAIT_S, Process, new_table, opened_processes, refusal

OWNERSHIP_LOG = "cardtable.server.cluster.ownership"

SHORT_LEASE_MS = 600
"""A short lease (renewed every 0.2 s) for the tests that wait for a renewal or a take's time-out (1.2 s)."""


@pytest.fixture
async def url(postgres: Postgres) -> str:
    return new_database(postgres)


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[Redis]:
    opened_client = Redis.from_url(redis_url)
    yield opened_client
    await opened_client.aclose()


@pytest.fixture
async def processes(
    url: str, redis_url: str, client: Redis
) -> AsyncIterator[Callable[..., Awaitable[Process]]]:
    """Opens a process (``ClusterSettings`` as keywords; ``keeper=False``: leases renewed on the event loop)."""
    async with opened_processes(url, redis_url, client) as open_process:
        yield open_process


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[Callable[[int], list[str]]]:
    """The ownership log's messages at a level or above (formatting each: a message whose arguments do not fit
    its text fails the test)."""
    with caplog.at_level(logging.INFO, logger=OWNERSHIP_LOG):
        yield lambda level: [
            r.getMessage() for r in caplog.records if r.name == OWNERSHIP_LOG and r.levelno == level
        ]


@contextlib.contextmanager
def tasks_started() -> Iterator[list[tuple[str, asyncio.Task[Any]]]]:
    """Every task the event loop starts while entered: ``(its coroutine's qualified name, the task)``; a task's name
    is read from the task (it is set after it is made)."""
    loop = asyncio.get_running_loop()
    before = loop.get_task_factory()
    started: list[tuple[str, asyncio.Task[Any]]] = []

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.Task(coro, loop=loop, **kwargs)
        started.append((coro.__qualname__, task))
        return task

    loop.set_task_factory(factory)
    try:
        yield started
    finally:
        loop.set_task_factory(before)


def ended(started: list[tuple[str, asyncio.Task[Any]]], coroutine: str) -> bool:
    """Whether a task whose coroutine's qualified name ends with ``coroutine`` was started, and all such ended."""
    tasks = [task for qualname, task in started if qualname.endswith(coroutine)]
    return bool(tasks) and all(task.done() for task in tasks)


def names_of(started: list[tuple[str, asyncio.Task[Any]]], coroutine: str) -> list[str]:
    """The names of the tasks started whose coroutine's qualified name has ``coroutine`` in it."""
    return [task.get_name() for qualname, task in started if coroutine in qualname]


def took(messages: list[str]) -> list[tuple[int, list[str]]]:
    """``(count, [each table named])`` of each "took N table(s) (...)" message."""
    out = []
    for message in messages:
        found = re.fullmatch(r"took (\d+) tables? \((.*)\)", message)
        assert found is not None, message
        assert (found[1] == "1") == (" table (" in message), message  # one table, several tables
        out.append((int(found[1]), found[2].split(", ")))
    return out


def at_epochs(named: list[str], process: Process) -> list[str]:
    """How the take's log names each of ``named``: "ID at epoch N", N its epoch at ``process`` now."""
    return [f"{t} at epoch {process.cluster.owned[t]}" for t in named]


async def test_tables_let_go_elsewhere_are_taken_together_by_chunks_in_a_named_task(
    url: str,
    processes: Callable[..., Awaitable[Process]],
    logs: Callable[[int], list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tables named on ``ct:released`` in one read of the subscription (a process handing over) are taken here at
    once, :data:`TAKE_CHUNK` at a time (one lease script, one transaction each), every one of them, by a background
    task named ``cardtable-cluster-take`` (so that a request's measured cost leaves it out); the log says how many
    each chunk took, naming each table at its epoch."""
    monkeypatch.setattr(ownership_module, "TAKE_CHUNK", 2)
    ids = await stored_tables(url, 5, SETTINGS)
    a = await processes()
    with tasks_started() as started:
        for table_id in ids:  # one read of the subscription: no loop turn between them
            a.cluster.mailbox.receive(RELEASED.encode(), table_id.encode())
        await until(lambda: ended(started, "<locals>.take"), WAIT_S, "the take to end")
    takes = [task for qualname, task in started if qualname.endswith("<locals>.take")]
    assert set(ids) <= set(a.manager.tables)
    assert await a.cluster.leases.owners(ids) == [(a.cluster.process, a.cluster.owned[t]) for t in ids]
    assert [task.get_name() for task in takes] == ["cardtable-cluster-take"]
    chunks = took(logs(logging.INFO))
    assert [count for count, _ in chunks] == [2, 2, 1]
    assert [sorted(named) for _, named in chunks] == [
        sorted(at_epochs(sorted(ids)[i : i + 2], a)) for i in (0, 2, 4)
    ]


async def test_the_take_log_names_five_tables_at_their_epochs_and_then_says_there_are_more(
    url: str,
    processes: Callable[..., Awaitable[Process]],
    logs: Callable[[int], list[str]],
) -> None:
    """The operator's line for a take names at most five tables, each at its epoch, and ends with ", ..." when it
    took more than five (a sweep or a hand-over may take hundreds)."""
    ids = await stored_tables(url, 6, SETTINGS)
    a = await processes()
    five = await a.cluster.take_many(ids[:5])
    assert set(five) == set(ids[:5])
    first = at_epochs(ids[:5], a)
    for table in five.values():
        await a.cluster.drop(table)  # let go: still live, so taken again below, at a new epoch
    six = await a.cluster.take_many(ids)
    assert set(six) == set(ids)
    ((count, named),) = took(logs(logging.INFO)[:1])
    assert count == 5 and sorted(named) == sorted(first)
    ((count, named),) = took(logs(logging.INFO)[1:])
    assert count == 6 and len(named) == 6 and named[-1] == "..."
    assert len(set(named[:5]) & set(at_epochs(ids, a))) == 5


@contextlib.asynccontextmanager
async def row_locked(url: str, table_id: str) -> AsyncIterator[None]:
    """The row of ``table_id`` held locked (``FOR UPDATE``) by another connection while entered: an old owner's
    write in flight."""
    other = await Store.open(url)
    try:
        async with other.engine.begin() as conn:
            tables = schema.tables
            await conn.execute(select(tables.c.id).where(tables.c.id == table_id).with_for_update())
            yield
    finally:
        await other.close()


async def test_released_tables_held_up_by_a_lock_are_given_up_after_two_lease_times_with_a_warning(
    url: str,
    processes: Callable[..., Awaitable[Process]],
    logs: Callable[[int], list[str]],
) -> None:
    """A take of released tables that a row lock holds up gives up after two lease times (1.2 s here: never
    stuck, and never as early as a renewal could matter) and tells the operator how many tables it could not take
    and why; nothing of it stays owned here (a later sweep takes them)."""
    held, free = await stored_tables(url, 2, SETTINGS)
    a = await processes(lease_ms=SHORT_LEASE_MS)
    loop = asyncio.get_running_loop()
    async with row_locked(url, held):
        started = loop.time()
        for table_id in (held, free):
            a.cluster.mailbox.receive(RELEASED.encode(), table_id.encode())
        (warning,) = await until(lambda: logs(logging.WARNING), WAIT_S, "the warning")
        waited = loop.time() - started
    assert warning == "taking 2 released tables failed: TimeoutError()"
    assert 1.2 <= waited < 1.65, waited
    assert not a.cluster.owned and not a.manager.tables and not a.store.fences


async def test_a_sweep_held_up_by_a_lock_takes_the_others_one_at_a_time_and_says_which_failed(
    url: str,
    processes: Callable[..., Awaitable[Process]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The sweep's take of a chunk held up by one table's row lock gives up after two lease times (1.2 s here:
    never stuck, nor so soon that an old owner's write in flight has no time), warns that it takes the chunk one
    table at a time, takes the others, and names the one table it could not take and why: its own take gave up
    after two lease times too."""
    ids = await stored_tables(url, 3, SETTINGS)
    held = ids[1]
    a = await processes(lease_ms=SHORT_LEASE_MS)
    with caplog.at_level(logging.WARNING, logger=OWNERSHIP_LOG):
        async with row_locked(url, held):
            started = time.time()
            assert await a.cluster.sweep() == 2
    together, alone = (r for r in caplog.records if r.name == OWNERSHIP_LOG)
    assert together.getMessage() == "taking 3 tables together failed (TimeoutError()): one at a time"
    assert alone.getMessage() == f"table {held}: taking it failed: TimeoutError()"
    assert 1.2 <= together.created - started < 1.65, together.created - started
    assert 1.2 <= alone.created - together.created < 1.8, (
        alone.created - together.created
    )  # and two quick takes
    assert set(a.manager.tables) == set(ids) - {held} == set(a.cluster.owned)


async def test_a_table_closed_here_has_its_lease_let_go_at_the_next_renewal(
    processes: Callable[..., Awaitable[Process]],
) -> None:
    """A table created here and closed here (nobody came to it: the expiry sweep ends it) is let go at the next
    renewal: its lease is released at once rather than left to lapse, and it is no longer owned or fenced here."""
    a = await processes()
    a.manager.settings = dataclasses.replace(
        a.manager.settings, open_table_idle_s=0.0
    )  # closed at the next sweep
    table, _ = await new_table(a)
    assert await a.cluster.leases.owner(table.id) == (a.cluster.process, a.cluster.owned[table.id])
    await a.manager.sweep()
    assert table.id not in a.manager.tables and table.status == "closed"
    await a.cluster.renew()
    assert await a.cluster.leases.owner(table.id) is None
    assert table.id not in a.cluster.owned and table.id not in a.store.fences


async def test_a_table_whose_write_is_refused_is_dropped_with_a_warning_in_a_named_task(
    url: str,
    processes: Callable[..., Awaitable[Process]],
    logs: Callable[[int], list[str]],
) -> None:
    """A write refused by the database (another process took the table there) drops the table here: the operator's
    warning names the table and the refusal, and the drop runs in a background task named
    ``cardtable-cluster-drop``."""
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
    state = table.state
    assert state is not None
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    with tasks_started() as started:
        table.submit_action(QueuedAction(0, state.legal_actions(0)[0], future=future))
        await until(lambda: ended(started, "drop"), WAIT_S, "the table dropped")
    assert table_id not in a.manager.tables and table_id not in a.cluster.owned
    assert names_of(started, "drop") == ["cardtable-cluster-drop"]
    assert logs(logging.WARNING) == [
        f"table {table_id}: a write failed (table {table_id}: epoch {epoch} is no longer the owner's): dropping it here"
    ]


async def test_a_lease_lost_drops_its_table_with_a_warning_and_leaves_the_lease_to_its_holder(
    processes: Callable[..., Awaitable[Process]],
    client: Redis,
    logs: Callable[[int], list[str]],
) -> None:
    """A lease another process holds now (this one missed its renewals) drops its table here, whether the keeper's
    thread finds it (the drop then runs in a task named ``cardtable-cluster-drop``) or a renewal on the event loop
    does; each time the operator's warning names the table, and the lease stays its new holder's."""
    a = await processes(lease_ms=SHORT_LEASE_MS)  # the keeper renews every 0.2 s
    b = await processes(keeper=False)  # renews when the test calls renew
    for process in (a, b):
        table, _ = await new_table(process)
        theirs = f"elsewhere-1:{process.cluster.owned[table.id] + 1}"
        await client.set(LEASE_PREFIX + table.id, theirs, px=30_000)
        with tasks_started() as started:
            if process is b:
                await b.cluster.renew()
            await until(lambda: table.id not in process.manager.tables, WAIT_S, "the table dropped")  # noqa: B023
            await until(lambda: ended(started, "drop") or process is b, WAIT_S, "the drop to end")  # noqa: B023
        if process is a:
            assert names_of(started, "drop") == ["cardtable-cluster-drop"]
        assert table.id not in process.cluster.owned and table.id not in process.store.fences
        assert await client.get(LEASE_PREFIX + table.id) == theirs.encode()
        assert logs(logging.WARNING)[-1:] == [f"table {table.id}: lease lost: dropping it here"]


async def test_a_process_cut_off_from_redis_drops_every_table_and_says_why(
    processes: Callable[..., Awaitable[Process]],
    client: Redis,
    logs: Callable[[int], list[str]],
) -> None:
    """Renewing on the event loop, a process whose renewals get no answer for most of a lease time drops every
    table here (before another process could take them), and the operator's log names each table and the reason."""
    a = await processes(keeper=False, lease_ms=SHORT_LEASE_MS)
    made = [await new_table(a) for _ in range(2)]
    await client.client_pause(2000, all=True)  # Redis away for 3.3 lease times
    await until(lambda: not a.manager.tables, WAIT_S, "every table dropped")
    dropped = [m for m in logs(logging.WARNING) if m.endswith("dropping it here")]
    assert sorted(dropped) == sorted(
        f"table {t.id}: leases not renewed in time: dropping it here" for t, _ in made
    )
    assert not a.cluster.owned and not a.store.fences


@pytest.mark.parametrize("keeper", [True, False], ids=["keeper", "loop"])
async def test_a_renewal_that_fails_while_the_leases_are_kept_drops_nothing(
    keeper: bool,
    processes: Callable[..., Awaitable[Process]],
    client: Redis,
    logs: Callable[[int], list[str]],
) -> None:
    """A renewal that fails after the leases were extended (publishing the lobby's view fails: the lobby key is
    broken) is reported to the operator, and drops no table however long it goes on, whether the keeper's thread
    or the renewal itself extends the leases; a table that ends meanwhile is still let go (its lease released)
    though taking it out of the lobby fails."""
    a = await processes(keeper=keeper, lease_ms=SHORT_LEASE_MS)  # renewed every 0.2 s
    kept, _ = await new_table(a)
    ended_here, _ = await new_table(a)
    await client.set(LOBBY, "not a hash")
    failed = "renewing leases failed: WRONGTYPE Operation against a key holding the wrong kind of value"
    await until(
        lambda: logs(logging.WARNING).count(failed) >= 4, WAIT_S, "four renewals failing"
    )  # 0.8 s: past 0.8 lease
    assert set(a.manager.tables) == {kept.id, ended_here.id} == set(a.cluster.owned)
    assert await a.cluster.leases.owner(kept.id) == (a.cluster.process, a.cluster.owned[kept.id])
    ended_here.row.status = "finished"
    await a.cluster.drop(ended_here)
    assert await a.cluster.leases.owner(ended_here.id) is None
    assert set(logs(logging.WARNING)) == {failed}


async def test_a_table_on_the_move_is_answered_503_promptly_and_a_stopping_process_claims_nothing(
    processes: Callable[..., Awaitable[Process]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request for a table whose lease this process holds while the table is not in play here (being created)
    looks three times, 0.05 s apart, and is answered 503 with a message saying to try again, well within a second;
    a stopping process refuses to create a table (503, saying why)."""
    a = await processes()
    await a.cluster.claim_new("being-made")
    looks = 0
    owners_and_ttls = a.cluster.leases.owners_and_ttls

    async def look(table_ids: list[str]) -> Any:
        nonlocal looks
        looks += 1
        return await owners_and_ttls(table_ids)

    monkeypatch.setattr(a.cluster.leases, "owners_and_ttls", look)
    loop = asyncio.get_running_loop()
    started = loop.time()
    moving = await refusal(a.cluster.locate("being-made"))
    assert loop.time() - started < 1.0
    assert (moving.status, moving.code, moving.params) == (503, "http.error", {"status": 503})
    assert str(moving) == "the table is moving between server processes: try again"
    assert looks == 3
    a.cluster.draining = True
    stopping = await refusal(a.cluster.claim_new("new"))
    assert (stopping.status, stopping.code, stopping.params) == (503, "http.error", {"status": 503})
    assert str(stopping) == "this server process is stopping: try again"
    assert "new" not in a.cluster.owned


async def test_a_table_owned_here_is_located_without_asking_redis(
    processes: Callable[..., Awaitable[Process]],
    client: Redis,
) -> None:
    """A request for a table in play here finds it at once, with no Redis round trip: a paused Redis does not
    delay it."""
    a = await processes()
    table, _ = await new_table(a)
    await client.client_pause(700, all=True)  # a Redis that answers nothing for 0.7 s
    async with asyncio.timeout(0.5):
        assert await a.cluster.locate(table.id) is table


async def test_a_sweep_under_way_takes_no_more_chunks_once_the_process_is_stopping(
    url: str,
    processes: Callable[..., Awaitable[Process]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sweep under way when the process starts stopping (SIGTERM) takes no further chunk, and returns how many
    tables it took."""
    monkeypatch.setattr(ownership_module, "TAKE_CHUNK", 1)
    ids = await stored_tables(url, 3, SETTINGS)
    a = await processes()
    load = a.store.load_tables
    loading, go_on = asyncio.Event(), asyncio.Event()

    async def held_load(**kwargs: Any) -> Any:
        if kwargs.get("table_ids"):  # the first chunk's load of its records: the sweep is under way
            loading.set()
            await go_on.wait()
        return await load(**kwargs)

    monkeypatch.setattr(a.store, "load_tables", held_load)
    sweep = asyncio.create_task(a.cluster.sweep())
    await asyncio.wait_for(loading.wait(), WAIT_S)
    a.cluster.draining = True  # stopping, as hand_over does first
    go_on.set()
    assert await asyncio.wait_for(sweep, WAIT_S) == 1
    assert len(a.manager.tables) == 1 and set(a.manager.tables) < set(ids)


async def test_a_failing_sweep_is_reported_and_the_sweeps_go_on_every_sweep_s(
    url: str,
    processes: Callable[..., Awaitable[Process]],
    client: Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The periodic sweep runs every ``sweep_s`` (give or take a quarter, so that several processes spread out);
    one that fails (here Redis refuses to read a broken lease key) is reported to the operator with its error, and
    the sweeps go on: once the key is sound again, the table nobody owns is taken."""
    (table_id,) = await stored_tables(url, 1, SETTINGS)
    await client.hset(LEASE_PREFIX + table_id, "not", "a lease")

    def warnings() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == OWNERSHIP_LOG and r.levelno == logging.WARNING]

    with caplog.at_level(logging.INFO, logger=OWNERSHIP_LOG):
        a = await processes(sweep_s=0.4)
        await until(lambda: len(warnings()) >= 4, WAIT_S, "four sweeps failing")
        failures = warnings()[:4]
        await client.delete(LEASE_PREFIX + table_id)
        await until(
            lambda: any(r.getMessage().startswith("took 1 table (") for r in caplog.records),
            WAIT_S,
            "the table taken by a later sweep",
        )
    assert table_id in a.manager.tables
    assert {r.getMessage() for r in failures} == {"the ownership sweep failed: server:ResponseError"}
    gaps = [later.created - earlier.created for earlier, later in itertools.pairwise(failures)]
    assert all(0.3 <= gap < 0.65 for gap in gaps), gaps


async def test_a_hand_over_goes_on_past_a_lease_redis_fails_to_release(
    processes: Callable[..., Awaitable[Process]],
    client: Redis,
) -> None:
    """Handing over (SIGTERM) stops every table here and releases every lease it can, even when Redis fails to
    release one of them (here a broken lease key): that one lapses in its time, the others are free at once."""
    a = await processes()
    broken, _ = await new_table(a)
    other, _ = await new_table(a)
    await client.delete(LEASE_PREFIX + broken.id)
    await client.hset(LEASE_PREFIX + broken.id, "not", "a lease")
    await a.cluster.hand_over()
    assert not a.manager.tables and not a.cluster.owned
    assert await a.cluster.leases.owner(other.id) is None


async def test_the_sweep_leaves_a_turn_based_table_waiting_for_a_person_to_nobody(
    processes: Callable[..., Awaitable[Process]],
) -> None:
    """A turn-based table waiting for a person's move (its deadline days away) that its owner let go is taken by
    no sweep: nothing needs it in memory until someone connects or the deadline falls due."""
    a = await processes()
    table, _, token = await a.manager.create(
        "anemone",
        {"players": 2, "rounds": 1},
        [{"kind": "open"}, {"kind": "bot", "bot": "heuristic"}],
        "ana",
        None,
        60,
        pace="turn-based",
        turn_clock={"start_s": 86400, "per_move_s": 86400},
    )
    assert isinstance(table, Table)
    if table.status == "open":
        await a.manager.start(table.id, token)
    await until(lambda: table.waiting(), WAIT_S, "the table waiting for ana")
    await a.cluster.drop(table)  # let go (as after turn_idle_s): owned by nobody
    assert await a.cluster.sweep() == 0
    assert table.id not in a.manager.tables and await a.cluster.leases.owner(table.id) is None


async def test_a_table_whose_owner_died_is_taken_by_the_periodic_sweep_once_its_lease_expires(
    url: str, processes: Callable[..., Awaitable[Process]], client: Redis
) -> None:
    """The periodic sweep that finds a lease whose holder missed its renewals (likely dead) plans its next run at
    that lease's expiry and goes on: the table is taken here soon after, with no request for it."""
    (table_id,) = await stored_tables(url, 1, SETTINGS)
    await client.set(LEASE_PREFIX + table_id, "gone-1:3", px=800)  # a 5 s lease with 0.8 s left: not renewed
    a = await processes(sweep_s=0.3)
    await until(lambda: table_id in a.manager.tables, WAIT_S, "the table taken after its lease expired")
    assert await a.cluster.leases.owner(table_id) == (a.cluster.process, a.cluster.owned[table_id])


async def test_a_take_whose_table_is_dropped_meanwhile_still_succeeds(
    url: str, processes: Callable[..., Awaitable[Process]]
) -> None:
    """A table taken and then dropped before the take returns (a failed write, a lost lease, a hand-over) does not
    fail the take: its log line names the epoch taken, not what this process owns now (a ``KeyError`` before)."""
    (table_id,) = await stored_tables(url, 1, SETTINGS)
    process = await processes()
    take = asyncio.create_task(process.cluster.take_many([table_id]))
    # every=0: look at each turn of the loop, to drop it before the take returns
    await until(lambda: table_id in process.manager.tables, timeout=WAIT_S, every=0)
    await process.cluster.drop(process.manager.tables[table_id])
    (result,) = await asyncio.gather(take, return_exceptions=True)
    assert not isinstance(result, BaseException), result
    assert table_id not in process.cluster.owned
