"""What the cluster's parts (``server/cluster/``: ownership, relay, mailbox, member) promise where several processes
meet, checked in ONE test process (a mutation test sees only in-process code) on a real PostgreSQL and a real Redis:
a stopping process refuses new tables and relayed connections; a relay whose table nobody holds any more, or whose
owner never said ``opened``, is told to reconnect; a table whose record does not replay, or whose take is cut short,
leaves no lease, fence or owner behind; the publisher and the listener come back after Redis restarts; a closed
process lets everything go; and the owner's side of a relay ends without a traceback."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest
from redis.asyncio import Redis
from sqlalchemy import insert, select
from starlette.testclient import TestClient

from cardtable.server.cluster import relay as relay_module
from cardtable.server.cluster.calls import LOBBY
from cardtable.server.cluster.lease import LEASE_PREFIX
from cardtable.server.cluster.mailbox import Mailbox, channel
from cardtable.server.cluster.ownership import RELEASED
from cardtable.server.cluster.redis_clients import ALIVE_PREFIX
from cardtable.server.core.errors import RECONNECT_CODE
from cardtable.server.storage import schema
from cardtable.server.storage.store import Store
from cardtable.server.table.owner import Table
from cluster_harness import stored_tables
from polling import until, wait_for
from services import Postgres, free_port, new_database
from test_server_cluster_paths import (
    ORIGIN,
    RELAY_SETTINGS,
    SETTINGS,
    WAIT_S,
    Process,
    close_code,
    cluster_of,
    connected,
    hello,
    listening_apps,
    new_table,
    opened_processes,
    refusal,
    tables_of,
)
from test_server_relay_frames import Lost, SlowSocket

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def url(postgres: Postgres) -> str:
    return new_database(postgres)


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[Redis]:
    opened = Redis.from_url(redis_url)
    yield opened
    await opened.aclose()


@pytest.fixture
async def processes(
    url: str, redis_url: str, client: Redis
) -> AsyncIterator[Callable[..., Awaitable[Process]]]:
    """Opens a process (``ClusterSettings`` as keywords; ``keeper=False``: leases renewed by ``Cluster.renew``)
    listening to its messages; every one opened and not closed by the test ends with it."""
    async with opened_processes(url, redis_url, client) as open_process:
        yield open_process


@pytest.fixture
def db(postgres: Postgres) -> str:
    return new_database(postgres)


@pytest.fixture
def no_tracebacks(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """The test fails if anything of the server logged an error (a traceback) while it ran."""
    with caplog.at_level(logging.WARNING, logger="cardtable"):
        yield
    errors = [r for r in caplog.records if r.name.startswith("cardtable") and r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]


def make_table(app: TestClient) -> tuple[str, str]:
    """A two-person Nerts table created through ``app``: its id and the creator's token."""
    made = app.post("/api/tables", json={"game": "nerts", "options": {"players": 2}}, headers=ORIGIN)
    assert made.status_code == 201, made.text
    return made.json()["table"]["id"], made.json()["token"]


def frames(*bodies: dict[str, Any]) -> bytes:
    """One pub/sub message as a process publishes it."""
    return msgspec.msgpack.encode(list(bodies))


# -- a process that stops ----------------------------------------------------------------------------------------


def test_a_stopping_process_refuses_new_tables_and_relayed_connections(db: str, redis_url: str) -> None:
    """From the moment a process starts handing its tables over (SIGTERM), a connection relayed to one of its tables
    not yet let go is answered "reconnect" (1012) rather than served by a process about to stop, and creating a
    table there is refused with 503 (``http.error``, ``{"status": 503}``) so that the client tries another."""
    with listening_apps(db, redis_url, RELAY_SETTINGS, 2) as (a, b):
        first, _ = make_table(a)
        second, _ = make_table(a)
        owner, origin = cluster_of(a), cluster_of(b)

        async def open_during_hand_over() -> tuple[bool, list[dict[str, Any]]]:
            handing = asyncio.create_task(owner.hand_over())
            await asyncio.sleep(0)  # the hand-over has begun: it stops its tables one at a time
            held = owner.draining and [t for t in (first, second) if t in tables_of(a)]
            owner.mailbox.receive(
                channel(owner.process).encode(),
                frames(
                    {
                        "op": "open",
                        "conn": "c1",
                        "table": held[-1] if held else second,
                        "from": origin.process,
                        "address": "1.2.3.4",
                    }
                ),
            )
            answer = list(owner.mailbox.queued(origin.process))
            await handing
            return bool(held), answer

        held, answer = a.portal.call(open_during_hand_over)  # type: ignore[union-attr]
        assert held, "the hand-over let every table go at once: nothing to relay to"
        assert answer == [{"op": "close", "conn": "c1", "code": RECONNECT_CODE}]
        assert "c1" not in owner.relays.owner_sides
        refused = a.post("/api/tables", json={"game": "nerts", "options": {"players": 2}}, headers=ORIGIN)
        assert refused.status_code == 503, refused.text
        assert (refused.json()["code"], refused.json()["params"]) == ("http.error", {"status": 503})


async def test_a_table_being_created_keeps_its_lease_over_a_renewal(
    processes: Callable[..., Awaitable[Process]],
) -> None:
    """A table claimed for creation (its lease taken before its row is written) keeps its lease when a renewal comes
    before it is in play: another process cannot take it meanwhile; once created it is served and renewed here."""
    a = await processes(keeper=False)
    await a.cluster.claim_new("being-made")
    epoch = a.cluster.owned["being-made"]
    await a.cluster.renew()
    assert await a.cluster.leases.owner("being-made") == (a.cluster.process, epoch)
    assert a.cluster.owned["being-made"] == epoch == a.store.fences["being-made"]
    a.cluster.draining = True
    stopping = await refusal(a.cluster.claim_new("too-late"))
    assert (stopping.status, stopping.code, stopping.params) == (503, "http.error", {"status": 503})
    assert "too-late" not in a.cluster.owned and await a.cluster.leases.owner("too-late") is None


# -- relays whose other end is gone ------------------------------------------------------------------------------


def test_a_relay_whose_table_nobody_holds_any_more_is_told_to_reconnect_and_the_others_stay(
    apps2: list[TestClient], redis_url: str
) -> None:
    """The renewal of the process a connection came through closes (1012) a relay whose table nobody holds any more
    (its owner let it go or died and the lease expired), so that the client reconnects and the table is taken
    again; a relay to another table of the same owner, still held, stays open."""
    a, b = apps2
    gone, gone_token = make_table(a)
    kept, kept_token = make_table(a)
    with (
        b.websocket_connect(f"/ws/tables/{gone}") as to_gone,
        b.websocket_connect(f"/ws/tables/{kept}") as to_kept,
    ):
        hello(to_gone, gone_token)
        hello(to_kept, kept_token)

        async def lease_lapses() -> None:
            await cluster_of(b).redis.delete(LEASE_PREFIX + gone)

        b.portal.call(lease_lapses)  # type: ignore[union-attr]
        b.portal.call(cluster_of(b).renew)  # type: ignore[union-attr]
        assert close_code(to_gone) == 1012
        sides = list(cluster_of(b).relays.origin_sides.values())
        assert [(s.table, s.connection.closed) for s in sides if s.table == kept] == [(kept, False)]
        to_kept.send_json({"type": "ping", "t": 1})
        while (message := to_kept.receive_json())["type"] != "pong":
            pass
        assert message["t"] == 1


@pytest.fixture
def apps2(db: str, redis_url: str) -> Iterator[list[TestClient]]:
    """Two server processes (apps with ``--redis``) on one database and one Redis."""
    with listening_apps(db, redis_url, RELAY_SETTINGS, 2) as clients:
        yield clients


def test_connections_from_a_process_thought_dead_are_told_to_reconnect_without_a_traceback(
    apps2: list[TestClient], redis_url: str, no_tracebacks: None
) -> None:
    """When the owner's renewal finds the process a connection came through no longer marked alive, it ends its side
    of that connection quietly (no error logged, the seat shows as not connected) and still tells that process to
    close it with 1012: should it live after all (a pause), its client reconnects rather than waiting for updates
    that never come. The owner forgets the connection."""
    a, b = apps2
    tid, token = make_table(a)
    with b.websocket_connect(f"/ws/tables/{tid}") as ws:
        hello(ws, token)
        wait_for(lambda: connected(a, tid) == [True, False], WAIT_S, "the seat connected at the owner")

        async def thought_dead() -> None:
            await cluster_of(a).redis.delete(ALIVE_PREFIX + cluster_of(b).process)

        a.portal.call(thought_dead)  # type: ignore[union-attr]
        a.portal.call(cluster_of(a).renew)  # type: ignore[union-attr]
        assert close_code(ws) == 1012
    wait_for(lambda: connected(a, tid) == [False, False], WAIT_S, "the seat let go at the owner")
    wait_for(lambda: not cluster_of(a).relays.owner_sides, WAIT_S, "the owner to forget the connection")


def test_a_relayed_connection_whose_owner_hands_over_ends_there_without_a_traceback(
    apps2: list[TestClient], no_tracebacks: None
) -> None:
    """An owner that stops (hands its tables over) closes the relayed connections to its tables with 1012 and ends
    its side of each quietly: no error is logged for a connection that simply has to move."""
    a, b = apps2
    tid, token = make_table(a)
    with b.websocket_connect(f"/ws/tables/{tid}") as ws:
        hello(ws, token)
        wait_for(lambda: connected(a, tid) == [True, False], WAIT_S, "the seat connected at the owner")
        a.portal.call(cluster_of(a).hand_over)  # type: ignore[union-attr]
        assert close_code(ws) == 1012
    wait_for(lambda: not cluster_of(a).relays.owner_sides, WAIT_S, "the owner to forget the connection")


# -- the answer to "open" ------------------------------------------------------------------------------------------


def test_an_answered_relay_waits_for_hello_and_one_whose_opened_was_lost_is_told_to_reconnect(
    apps2: list[TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relay the owner answered (``opened``) stays open past the open time-out while its client has not said
    hello yet (it is served, only quiet); a relay whose ``opened`` was lost on the way, and whose client says
    nothing, is closed with 1012 when the time-out passes, and the owner ends its side (no ghost connection)."""
    monkeypatch.setattr(relay_module, "OPEN_TIMEOUT_S", 0.3)
    a, b = apps2
    tid, token = make_table(a)
    origin = cluster_of(b).relays
    with b.websocket_connect(f"/ws/tables/{tid}") as ws:
        wait_for(lambda: [s.answered for s in origin.origin_sides.values()] == [True], WAIT_S, "opened")
        time.sleep(0.6)  # not a wait: twice the open time-out, in which nothing may close it
        assert [s.connection.closed for s in origin.origin_sides.values()] == [False]
        assert hello(ws, token)["table"]["id"] == tid
    wait_for(lambda: not cluster_of(a).relays.owner_sides, WAIT_S, "the owner to end the first connection")

    cluster_of(b).mailbox.handlers["opened"] = lambda body: None  # the owner's "opened" is lost on the way
    started = time.monotonic()
    with b.websocket_connect(f"/ws/tables/{tid}") as ws:
        assert close_code(ws) == 1012
    assert time.monotonic() - started < 5.0
    wait_for(lambda: not cluster_of(a).relays.owner_sides, WAIT_S, "the owner to end its side")
    wait_for(lambda: not origin.origin_sides, WAIT_S, "the origin to forget the relay")


def test_a_binary_or_broken_frame_through_a_relay_is_answered_as_directly(apps2: list[TestClient]) -> None:
    """A client that sends its messages as binary frames is served through a relay as it is directly: a hello in a
    binary frame is taken, and a frame that is not valid UTF-8 is refused with the same ``error`` as directly, the
    connection going on."""
    a, b = apps2
    tid, token = make_table(a)
    answers = []
    for app in (a, b):
        with app.websocket_connect(f"/ws/tables/{tid}") as ws:
            ws.send_bytes(b"\xff\xfe not text")
            refused = ws.receive_json()
            ws.send_bytes(msgspec.json.encode({"type": "hello", "token": token}))
            while (message := ws.receive_json())["type"] != "snapshot":
                pass
            assert message["table"]["id"] == tid and message["table"]["seats"][0]["connected"]
            answers.append((refused["type"], refused["code"]))
    assert answers[0] == answers[1] and answers[0][0] == "error"


async def test_a_relay_closed_before_its_owner_answered_leaves_nothing_behind(
    processes: Callable[..., Awaitable[Process]],
) -> None:
    """A relayed connection closed here (its table was taken here, Redis lost messages) before the owner answered
    ``open`` ends cleanly: its client is told to reconnect (1012), the relay is forgotten, and the owner is told
    ``bye``."""
    b, owner = await processes(), await processes()
    opens: list[dict[str, Any]] = []
    byes: list[dict[str, Any]] = []
    owner.cluster.mailbox.handlers.update(open=opens.append, bye=byes.append)  # an owner slow to answer
    socket_ = SlowSocket()
    socket_.go.set()
    relay = asyncio.create_task(
        b.cluster.relays.relay(socket_, "t1", owner.cluster.process, "?", 10)  # type: ignore[arg-type]
    )
    await until(lambda: opens, WAIT_S, "the open to reach the owner")
    b.cluster.relays.reconnect()
    await asyncio.wait_for(relay, WAIT_S)
    assert socket_.closed == RECONNECT_CODE and not b.cluster.relays.origin_sides
    await until(lambda: byes, WAIT_S, "the owner told bye")
    assert byes == [{"op": "bye", "conn": opens[0]["conn"]}]


# -- taking tables -------------------------------------------------------------------------------------------------


async def test_a_table_whose_record_does_not_replay_is_not_taken_and_keeps_no_lease(
    url: str, processes: Callable[..., Awaitable[Process]], client: Redis
) -> None:
    """A live table whose stored record does not replay (an action its game refuses) is not served here: not owned,
    not fenced, its lease released at once (not held until it expires); the other tables of the same take are."""
    broken, good = await stored_tables(url, 2, SETTINGS)
    store = await Store.open(url)
    try:
        async with store.engine.begin() as conn:
            hand = (
                await conn.execute(select(schema.hands.c.hand).where(schema.hands.c.table_id == broken))
            ).scalar()
            await conn.execute(
                insert(schema.actions).values(
                    table_id=broken,
                    hand=hand,
                    idx=0,
                    seat=0,
                    ms=0,
                    action={"type": "no such move"},
                    epoch=None,
                )
            )
    finally:
        await store.close()
    a = await processes()
    taken = await a.cluster.take_many([broken, good])
    assert list(taken) == [good]
    assert broken not in a.manager.tables and broken not in a.cluster.owned and broken not in a.store.fences
    assert not await client.exists(LEASE_PREFIX + broken)
    assert await a.cluster.take(broken) is None
    assert not await client.exists(LEASE_PREFIX + broken) and broken not in a.store.fences


async def test_a_take_cut_short_after_the_tables_were_rebuilt_leaves_nothing_behind(
    url: str, processes: Callable[..., Awaitable[Process]], client: Redis
) -> None:
    """A take cancelled once its tables are rebuilt (the request that wanted them went away, or the take's time ran
    out) undoes everything: the tables are stopped and out of this process, neither owned nor fenced, and their
    leases released, so that the next take, here or elsewhere, starts clean."""
    ids = await stored_tables(url, 2, SETTINGS)
    a = await processes()
    take = asyncio.create_task(a.cluster.take_many(ids))
    await until(lambda: set(ids) & set(a.manager.tables) or take.done(), WAIT_S, "a table rebuilt", every=0)
    assert not take.done(), "the take ended before it could be cut short"
    rebuilt = [a.manager.tables[t] for t in ids if t in a.manager.tables]
    take.cancel()
    with pytest.raises(asyncio.CancelledError):
        await take
    assert not set(ids) & set(a.manager.tables)
    assert not set(ids) & set(a.cluster.owned) and not set(ids) & set(a.store.fences)
    assert not await client.exists(*(LEASE_PREFIX + t for t in ids))
    assert rebuilt and all(table.stopped for table in rebuilt)
    again = await a.cluster.take_many(ids)
    assert set(again) == set(ids) and all(isinstance(t, Table) for t in again.values())


async def test_a_table_whose_owner_missed_its_renewals_is_served_here_soon_after_its_lease_expires(
    url: str, processes: Callable[..., Awaitable[Process]], client: Redis
) -> None:
    """A connection to a table whose owner missed its renewals waits for that lease to expire, not much longer: it
    is served here within half a second of the expiry."""
    (late,) = await stored_tables(url, 1, SETTINGS)
    a = await processes()  # a 5 s lease
    await client.set(LEASE_PREFIX + late, "gone-1:3", px=600)
    started = time.monotonic()
    located = await a.cluster.locate(late)
    assert isinstance(located, Table)
    assert time.monotonic() - started < 0.6 + 0.5


async def test_a_dropped_table_in_play_stays_in_the_lobby_for_its_next_owner(
    processes: Callable[..., Awaitable[Process]], client: Redis
) -> None:
    """A table in play dropped here (its lease was lost) keeps its lobby entry: the lobby of every process still
    lists it while another process takes it over. (One that ended leaves the lobby.)"""
    a = await processes(keeper=False)
    table, ana = await new_table(a)
    await a.manager.join(table.id, "bo", None)
    await a.manager.start(table.id, ana)
    await a.cluster.renew()
    assert await client.hexists(LOBBY, table.id)
    await a.cluster.drop(table, release=False)
    assert table.id not in a.manager.tables and await client.hexists(LOBBY, table.id)


async def test_a_process_that_renewed_and_then_loses_redis_stops_serving_its_tables_in_time(
    processes: Callable[..., Awaitable[Process]], client: Redis
) -> None:
    """Renewing on the event loop (no keeper): after renewals that went through, Redis stops answering; every table
    is dropped here while Redis is still away, before its lease could have passed to another process."""
    a = await processes(keeper=False, lease_ms=600)
    table, _ = await new_table(a)
    await until(lambda: client.hexists(LOBBY, table.id), WAIT_S, "a renewal that went through")
    loop = asyncio.get_running_loop()
    await client.execute_command("CLIENT", "PAUSE", "3000", "ALL")
    paused = loop.time()
    # served, owned and fenced no more (the fence goes a moment after the table: wait for all three)
    await until(lambda: not a.manager.tables and not a.cluster.owned and not a.store.fences, WAIT_S)
    assert loop.time() - paused < 3.0


# -- closing -----------------------------------------------------------------------------------------------------


async def test_a_closed_process_lets_everything_go_and_keeps_no_redis_connection(
    processes: Callable[..., Awaitable[Process]], client: Redis, redis_url: str
) -> None:
    """Closing a process (the end of ``serve``) releases its leases and names each table on ``ct:released`` (another
    process takes it at once), stops saying it is alive, and closes every Redis connection it opened (requests,
    control, publisher, keeper): a service restarted many times does not pile up connections."""
    watcher = Redis.from_url(redis_url, single_connection_client=True)
    released = Redis.from_url(redis_url).pubsub()
    await released.subscribe(RELEASED)
    try:
        await client.ping()  # the test's own connections, before the process opens its own
        before = {c["id"] for c in await watcher.client_list()}
        a = await processes()
        table, _ = await new_table(a)
        await a.cluster.renew()
        await a.close()
        assert not await watcher.exists(ALIVE_PREFIX + a.cluster.process)
        assert not await watcher.exists(LEASE_PREFIX + table.id)
        named = await until(lambda: released.get_message(ignore_subscribe_messages=True, timeout=0.1), WAIT_S)
        assert named["data"] == table.id.encode()

        async def only_others_left() -> bool:
            return {c["id"] for c in await watcher.client_list()} <= before

        await until(only_others_left, WAIT_S, "every connection of the closed process gone")
    finally:
        await released.aclose()
        await watcher.aclose()


def test_a_closing_process_tells_the_relays_to_its_tables_to_reconnect_before_it_disconnects(
    db: str, redis_url: str
) -> None:
    """The end of ``serve`` on an owner: the connections relayed to its tables through another process are closed
    with 1012 by that owner's last messages (they go out before it disconnects from Redis), and connecting again
    reaches the table at the process left, which took it at once."""
    with listening_apps(db, redis_url, RELAY_SETTINGS, 1) as (b,):
        with contextlib.ExitStack() as owner:
            (a,) = owner.enter_context(listening_apps(db, redis_url, RELAY_SETTINGS, 1))
            tid, token = make_table(a)
            with b.websocket_connect(f"/ws/tables/{tid}") as ws:
                hello(ws, token)
                wait_for(
                    lambda: connected(a, tid) == [True, False], WAIT_S, "the seat connected at the owner"
                )
                owner.close()  # the owner's serve ends (its lifespan's shutdown)
                assert close_code(ws) == 1012
        wait_for(lambda: tid in tables_of(b), WAIT_S, "the table taken by the process left")
        with b.websocket_connect(f"/ws/tables/{tid}") as again:
            assert hello(again, token)["table"]["seats"][0]["connected"]


# -- the mailbox over a Redis that restarts ----------------------------------------------------------------------


@contextlib.contextmanager
def restartable_redis() -> Iterator[Callable[[bool], None]]:
    """A private ``redis-server`` on a fixed port that the test stops and starts again (``switch(False)``,
    ``switch(True)``); its URL is ``switch.url``. Stopped at the end."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    folder = Path(tempfile.mkdtemp(prefix="cardtable-redis-restart-"))
    port = free_port()
    running: list[subprocess.Popen[bytes]] = []

    def up() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    def switch(on: bool) -> None:
        if on:
            running.append(
                subprocess.Popen(
                    [
                        binary,
                        "--port",
                        str(port),
                        "--bind",
                        "127.0.0.1",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--dir",
                        str(folder),
                        "--daemonize",
                        "no",
                        "--loglevel",
                        "warning",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            wait_for(up, 10, "redis-server to answer")
        else:
            for process in running:
                process.terminate()
                process.wait(10)
            running.clear()

    switch.url = f"redis://127.0.0.1:{port}/0"  # type: ignore[attr-defined]
    try:
        switch(True)
        yield switch
    finally:
        switch(False)
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Mailboxes:
    """Two processes' mailboxes over one Redis: ``origin`` sends to ``owner``, whose ``in`` messages land in
    ``got``; ``lost`` counts each side's reported losses."""

    origin: Mailbox
    owner: Mailbox
    got: list[str]
    lost: dict[str, Lost]


async def owner_listening(admin: Redis) -> bool:
    """Whether the ``owner`` mailbox is subscribed to its channel."""
    return bool(dict(await admin.pubsub_numsub(channel("owner"))).get(channel("owner").encode()))


@contextlib.asynccontextmanager
async def mailboxes(url: str, **options: Any) -> AsyncIterator[Mailboxes]:
    """:class:`Mailboxes` over the Redis at ``url`` (``options`` for its clients), their loops running, once the
    owner listens and a first message (``"before"``) went through; the loops stop and the clients close at the end."""
    clients = [Redis.from_url(url, **options) for _ in range(4)]
    lost = {"origin": Lost(), "owner": Lost()}
    pair = Mailboxes(
        Mailbox(clients[0], clients[1], "origin", lost["origin"]),
        Mailbox(clients[2], clients[3], "owner", lost["owner"]),
        [],
        lost,
    )
    pair.owner.handlers["in"] = lambda body: pair.got.append(body["data"])
    tasks = [asyncio.create_task(box.publish_loop()) for box in (pair.origin, pair.owner)]
    tasks += [asyncio.create_task(box.listen_loop()) for box in (pair.origin, pair.owner)]
    admin = Redis.from_url(url)
    try:
        await until(lambda: owner_listening(admin), WAIT_S, "the owner listening")
        pair.origin.send("owner", {"op": "in", "conn": "c1", "data": "before"})
        await until(lambda: pair.got == ["before"], WAIT_S, "the first message")
        yield pair
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await admin.aclose()
        for one in clients:
            await one.aclose()


async def test_the_mailbox_reports_what_was_lost_and_carries_messages_again_after_redis_restarts() -> None:
    """Redis stops and starts again on the same address: what was sent meanwhile is reported lost (the relays start
    again) by the process that sent it and by the one listening, and once Redis is back the publisher connects
    anew (with replies off) and the listener subscribes anew, so that messages travel again, in order."""
    with restartable_redis() as switch:
        url = switch.url  # type: ignore[attr-defined]
        async with mailboxes(url, socket_timeout=2, socket_connect_timeout=1) as boxes:
            origin, got, lost = boxes.origin, boxes.got, boxes.lost
            assert lost["origin"].count == lost["owner"].count == 0
            switch(False)
            origin.send("owner", {"op": "in", "conn": "c1", "data": "while away"})
            await until(lambda: lost["origin"].count and lost["owner"].count, WAIT_S, "the losses reported")
            switch(True)
            admin = Redis.from_url(url)
            try:
                await until(lambda: owner_listening(admin), WAIT_S, "the owner listening again")
                tries = 0

                def deliver() -> (
                    bool
                ):  # the first publish after the restart may meet the old, dead connection
                    nonlocal tries
                    tries += 1
                    origin.send("owner", {"op": "in", "conn": "c1", "data": f"again {tries}"})
                    return any(text.startswith("again") for text in got)

                await until(deliver, WAIT_S, "a message after the restart", every=0.1)
                for text in ("after 1", "after 2"):
                    origin.send("owner", {"op": "in", "conn": "c1", "data": text})
                await until(
                    lambda: got[-2:] == ["after 1", "after 2"], WAIT_S, "messages after the restart, in order"
                )
                assert "while away" not in got and lost["origin"].count >= 1
                stats = await admin.info("commandstats")
                assert (
                    stats["cmdstat_client|reply"]["calls"] == 3
                )  # one publisher connected anew: off, on, off
                assert origin.idle()
            finally:
                await admin.aclose()


async def test_a_message_published_on_a_connection_redis_closed_is_delivered_or_reported_lost(
    redis_url: str,
) -> None:
    """Redis closes the publisher's connection (``CLIENT KILL``; or its ``timeout`` setting, which closes an idle
    client that is not a subscriber): the next message is either delivered or reported lost (``on_lost``: the
    relays start again), never lost without a word while the relayed client waits for an answer."""
    async with mailboxes(redis_url) as boxes:
        admin = Redis.from_url(redis_url)
        try:
            for publisher in [
                c for c in await admin.client_list() if c["cmd"] in ("publish", "client|reply")
            ]:
                await admin.client_kill_filter(_id=publisher["id"])
        finally:
            await admin.aclose()
        boxes.origin.send("owner", {"op": "in", "conn": "c1", "data": "after the kill"})
        await until(
            lambda: boxes.got[-1] == "after the kill" or boxes.lost["origin"].count,
            2.0,
            "delivered or reported lost",
        )
