"""Several ``cardtable serve --redis`` processes on one PostgreSQL and one Redis (``server/cluster/ownership.py``), as real
processes: relayed play across two processes, SIGKILL of an owner, split brain (SIGSTOP past the lease), Redis
restarted and PostgreSQL unreachable mid-game, a rolling restart.

The ground truth is the stored record: it is replayed (``cardtable.replay.fold``) and every ``update`` a spectator
received must show the public view of the record at that version: an acknowledged action lost, or a version
acknowledged twice with different actions (a fork), fails. Epochs stored with the actions never go down.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis import Redis

from cluster_harness import Client, Message, Proc, TcpProxy, check_record, port_open, start
from polling import until, wait_for
from services import Postgres, free_port, new_database

pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

BOTS3 = [{"kind": "bot", "bot": "greedy:medium"}] * 3


def nerts_table(proc: Proc) -> tuple[str, str]:
    """A Nerts table of one person (idle) and three bots, started at once; its id and the person's token."""
    made = proc.post("/api/tables", {"game": "nerts", "options": {"players": 4}, "seats": [{"kind": "open"}, *BOTS3],
                                     "grace_seconds": 600})
    return str(made["table"]["id"]), str(made["token"])


def progressed(client: Client, beyond: int) -> bool:
    return client.last_version() > beyond


def open_two_people_two_bots(proc: Proc) -> dict[str, Any]:
    """Create, on ``proc``, a one-hand 4-seat Enemy Anemone table of two open seats and two heuristic bots that
    waits to be started; returns the creation reply (``table``, ``token`` of seat 0)."""
    made: dict[str, Any] = proc.post("/api/tables", {
        "game": "anemone", "options": {"players": 4, "rounds": 1}, "autostart": False,
        "seats": [{"kind": "open"}, {"kind": "open"}, {"kind": "bot", "bot": "heuristic"},
                  {"kind": "bot", "bot": "heuristic"}]})
    return made


def test_two_processes_play_a_table_to_the_end(pg_db: str, redis_url: str, procs: list[Proc], tmp_path: Path) -> None:
    """A person on each process (one connection relayed), bots, spectators on both: the table is played to the
    end and both spectators see the same versions; the lobby of either process lists it."""
    a, b = start(procs, pg_db, redis_url, tmp_path / "a.log", tmp_path / "b.log")
    made = open_two_people_two_bots(a)
    tid = made["table"]["id"]
    joined = b.post(f"/api/tables/{tid}/join", {"name": "bea"})  # forwarded to the owner
    assert joined["seat"] == 1
    assert [t["id"] for t in b.get("/api/tables?status=open")] == [tid]
    clients = [Client([a], tid, made["token"], play=True), Client([b], tid, joined["token"], play=True),
               Client([a], tid, None), Client([b], tid, None)]
    for client in clients:
        client.start()
    wait_for(lambda: all(c.seen("snapshot") for c in clients), 30, "every connection's snapshot")
    # The lobby of the other process shows the owner's live table (published through Redis).
    wait_for(lambda: all(s.get("connected") for s in b.get(f"/api/tables/{tid}")["seats"][:2]), 30,
             "both people shown connected by either process")
    b.post(f"/api/tables/{tid}/start", {"token": joined["token"]})

    def finished(client: Client) -> bool:
        return any(m["table"]["status"] == "finished" for m in client.seen("table"))

    try:
        wait_for(lambda: all(finished(c) for c in clients[2:]), 120, "the end of the game on both spectators")
    finally:
        for client in clients:
            client.close()
    assert clients[2].versions() == clients[3].versions()
    assert clients[1].seen("ack"), "the relayed person's actions were acknowledged"
    count = check_record(pg_db, tid, clients[2:], clients)
    assert count == clients[2].versions()[-1]
    assert [t["id"] for t in a.get("/api/tables?status=finished")] == [tid]


def test_sigkill_owner_another_process_takes_over(pg_db: str, redis_url: str, procs: list[Proc],
                                                 tmp_path: Path) -> None:
    """SIGKILL the owner mid-hand: the other process takes the table (the lease is 2 s here), the clients
    reconnect through it, nothing acknowledged is lost, the hand and its clock go on."""
    a, b = start(procs, pg_db, redis_url, tmp_path / "a.log", tmp_path / "b.log")
    tid, token = nerts_table(a)
    assert 0 < Redis.from_url(redis_url).pttl(f"ct:lease:{tid}") <= 2000  # --lease-ms 2000 reached the process
    person = Client([a, b], tid, token)
    watcher = Client([b], tid, None)  # relayed through b to a
    for client in (person, watcher):
        client.start()
    wait_for(lambda: watcher.last_version() >= 8, 60, "play to go on")
    a.signal(signal.SIGKILL)
    killed_at = time.monotonic()
    before = max(person.last_version(), watcher.last_version())
    with watcher.lock:
        seen = list(watcher.messages)
    first = next(i for i, m in enumerate(seen) if m["type"] == "snapshot")
    hand = seen[first]["hand"] + sum(1 for m in seen[first:] if m["type"] == "hand_over")
    current = seen[max((i for i, m in enumerate(seen) if m["type"] == "hand_over"), default=0):]
    last_ms = max((m["view"]["ms"] for m in current if m["type"] == "update"), default=0)
    try:
        wait_for(lambda: progressed(watcher, before + 3) and progressed(person, before + 3), 60,
                 "play to go on after the owner died")
    finally:
        for client in (person, watcher):
            client.close()
    taken_s = time.monotonic() - killed_at
    assert b.port in person.connects, "the person reconnected through the other process"
    resumed = [m for m in person.seen("snapshot") if m["v"] >= before]
    assert resumed and resumed[0]["v"] >= before  # nothing acknowledged was lost
    if resumed[0]["view"] is not None and resumed[0]["hand"] == hand:
        assert resumed[0]["view"]["ms"] >= last_ms  # the hand's clock never goes backwards
    check_record(pg_db, tid, [watcher], [person, watcher])
    print(f"taken over and playing again {taken_s:.1f} s after SIGKILL")


def test_split_brain_old_owner_acknowledges_nothing_more(pg_db: str, redis_url: str, procs: list[Proc],
                                                         tmp_path: Path) -> None:
    """SIGSTOP the owner past its lease: the other process takes the table and play goes on; after SIGCONT the
    first process acknowledges nothing more for it, and the record has no duplicate or forked version."""
    a, b = start(procs, pg_db, redis_url, tmp_path / "a.log", tmp_path / "b.log")
    tid, token = nerts_table(a)
    direct = Client([a], tid, None)  # straight to the owner, kept across the pause
    watcher = Client([b], tid, None)
    person = Client([a, b], tid, token)
    for client in (direct, watcher, person):
        client.start()
    wait_for(lambda: direct.last_version() >= 8, 60, "play to go on")
    a.signal(signal.SIGSTOP)
    try:
        paused_at = direct.last_version()
        wait_for(lambda: progressed(watcher, paused_at + 5), 60, "the other process to take over and play on")
        taken = next(m for m in watcher.seen("snapshot") if m["v"] >= paused_at)["v"]
    finally:
        a.signal(signal.SIGCONT)
    wait_for(lambda: direct.closes, 30, "the old owner to drop the table and close its connections")
    wait_for(lambda: progressed(watcher, taken + 10), 60, "play to go on")
    for client in (direct, watcher, person):
        client.close()
    # On its own connection the old owner never sent a version beyond what the new owner found stored (and
    # check_record below compares every update it sent with the record).
    assert max(int(m["v"]) for m in direct.seen("update") if m["_conn"] == 0) <= taken
    assert direct.closes[0] == 1012  # "reconnect"
    check_record(pg_db, tid, [direct, watcher], [direct, watcher, person])


def redis_at(port: int, folder: Path) -> subprocess.Popen[bytes]:
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    process = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                                "no", "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: port_open(port), 20, "redis to start")
    return process


def test_redis_restart_and_database_cut_recover(postgres: Postgres, procs: list[Proc], tmp_path: Path) -> None:
    """Redis restarted (empty) mid-game, then PostgreSQL unreachable for a moment: actions are refused or delayed,
    never acknowledged without being stored, and play goes on by itself."""
    db = new_database(postgres)
    proxy = TcpProxy(int(db.split("@127.0.0.1:")[1].split("/")[0]))
    db_via_proxy = db.replace(f":{proxy.target_port}/", f":{proxy.port}/")
    port = free_port()
    folder = Path(tempfile.mkdtemp(prefix="cardtable-redis-"))
    redis = redis_at(port, folder)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        a, b = start(procs, db_via_proxy, url, tmp_path / "a.log", tmp_path / "b.log")
        tid, token = nerts_table(a)
        watcher = Client([b, a], tid, None)
        person = Client([a, b], tid, token)
        for client in (watcher, person):
            client.start()
        wait_for(lambda: watcher.last_version() >= 5, 60, "play to go on")
        redis.terminate()
        redis.wait(10)
        time.sleep(3)  # not a wait: the outage under test, Redis down for longer than a lease (2 s)
        redis = redis_at(port, folder)
        mark = watcher.last_version()
        wait_for(lambda: progressed(watcher, mark + 5), 60, "play to go on after Redis restarted")
        proxy.cut()
        time.sleep(2)  # not a wait: the outage under test, the database unreachable for 2 s
        proxy.restore()
        mark = watcher.last_version()
        wait_for(lambda: progressed(watcher, mark + 5), 60, "play to go on after the database came back")
        for client in (watcher, person):
            client.close()
        assert 1012 in watcher.closes + person.closes
        check_record(db, tid, [watcher], [watcher, person])
    finally:
        redis.terminate()
        redis.wait(10)
        proxy.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_rolling_restart_loses_nothing(pg_db: str, redis_url: str, procs: list[Proc], tmp_path: Path) -> None:
    """Two processes restarted one at a time (SIGTERM, then a new one) while two tables play: every table goes on,
    nothing acknowledged is lost; a stopping process closes its connections with 1012."""
    a, b = start(procs, pg_db, redis_url, tmp_path / "a.log", tmp_path / "b.log")
    tables = [nerts_table(a), nerts_table(b)]
    pool = [a, b]
    watchers = [Client(pool, tid, None) for tid, _ in tables]
    rpool = [b, a]
    people = [Client(rpool, tid, token) for tid, token in tables]
    for client in watchers + people:
        client.start()
    wait_for(lambda: all(w.last_version() >= 5 for w in watchers), 60, "play on both tables")
    for i, old in enumerate((a, b)):  # each replaced by a new process, started first
        (new,) = start(procs, pg_db, redis_url, tmp_path / f"new{i}.log")
        pool[pool.index(old)] = new
        rpool[rpool.index(old)] = new
        assert old.stop(signal.SIGTERM) in (0, -signal.SIGTERM)  # uvicorn ends by raising the signal it caught
        assert "handed over" in old.log.read_text()
        marks = [w.last_version() for w in watchers]
        wait_for(lambda marks=marks: all(progressed(w, m + 3) for w, m in zip(watchers, marks, strict=True)), 60,
                 "both tables to play on after the restart")
    for client in watchers + people:
        client.close()
    assert 1012 in [code for c in watchers + people for code in c.closes]
    for (tid, _), watcher, person in zip(tables, watchers, people, strict=True):
        check_record(pg_db, tid, [watcher], [watcher, person])


def test_limits_and_play_now_hold_over_both_processes(pg_db: str, redis_url: str, procs: list[Proc],
                                                      tmp_path: Path) -> None:
    """Play now pressed at once on both processes seats both people at one table; the per-address limits on
    sockets and table creations, and the sign-in failure limit per name, count over both processes (Redis)."""
    import threading

    from websockets.sync.client import connect

    env = {"CARDTABLE_MAX_SOCKETS_PER_ADDRESS": "3", "CARDTABLE_CREATES_PER_MINUTE": "1",
           "CARDTABLE_CREATE_BURST": "4"}
    a, b = (Proc(pg_db, redis_url, tmp_path / f"{n}.log", env=env) for n in "ab")
    procs.extend((a, b))
    for proc in (a, b):
        proc.start(wait=False)
    for proc in (a, b):
        wait_for(proc.ready, 90, "the servers to answer")
    seated: list[Message] = []
    pressers = [threading.Thread(target=lambda p=p: seated.append(p.post("/api/play", {"game": "nerts"})))
                for p in (a, b)]
    for presser in pressers:
        presser.start()
    for presser in pressers:
        presser.join(60)
    assert len(seated) == 2 and seated[0]["table"]["id"] == seated[1]["table"]["id"]
    assert sorted(s["seat"] for s in seated) == [0, 1]
    tid = seated[0]["table"]["id"]
    # Table creations: 2 tokens left of the burst of 4, over both processes.
    body = {"game": "nerts", "options": {"players": 2}, "seats": [{"kind": "open"}, {"kind": "open"}]}
    assert httpx.post(a.base + "/api/tables", json=body, timeout=20).status_code == 201
    assert httpx.post(b.base + "/api/tables", json=body, timeout=20).status_code == 201
    refused = httpx.post(a.base + "/api/tables", json=body, timeout=20)
    assert refused.status_code == 429 and refused.json()["code"] == "table.create_limit"
    # Sockets: 3 per address over both processes.
    sockets = [connect(f"ws://127.0.0.1:{p.port}/ws/tables/{tid}", open_timeout=10) for p in (a, b, a)]
    try:
        with connect(f"ws://127.0.0.1:{b.port}/ws/tables/{tid}", open_timeout=10) as extra:
            assert json.loads(extra.recv(timeout=10))["code"] == "connection.server_limit"
    finally:
        for ws in sockets:
            ws.close()
    # Sign-in failures for one name: 5, wherever they were tried.
    for i in range(5):
        wrong = httpx.post((a, b)[i % 2].base + "/api/session", json={"name": "nobody", "password": "x" * 12},
                           timeout=30)
        assert wrong.status_code == 401
    limited = httpx.post(b.base + "/api/session", json={"name": "nobody", "password": "x" * 12}, timeout=30)
    assert limited.status_code == 429


def test_a_seat_taken_through_another_process_belongs_to_the_account(pg_db: str, redis_url: str, procs: list[Proc],
                                                                      tmp_path: Path) -> None:
    """A signed-in person joins, through process b, a table process a owns: the seat is tied to the account (its
    name, its derived token) by the owner; ``/api/me/seats`` on either process lists it with that token; the
    table is played to the end with it and the account is rated."""
    a, b = start(procs, pg_db, redis_url, tmp_path / "a.log", tmp_path / "b.log")
    made = open_two_people_two_bots(a)
    tid = made["table"]["id"]
    with httpx.Client(base_url=b.base, timeout=20) as cora:
        assert cora.post("/api/accounts", json={"name": "cora", "password": "long enough"}).status_code == 201
        reply = cora.post(f"/api/tables/{tid}/join", json={"name": "a guest's name"})
        assert reply.status_code == 200, reply.text
        joined = reply.json()
        cookies = dict(cora.cookies)
    assert joined["seat"] == 1
    assert (joined["table"]["seats"][1]["name"], joined["table"]["seats"][1]["account"]) == ("cora", "cora")
    for proc in (a, b):  # either process lists the seat, with the token the join gave
        seats = httpx.get(f"{proc.base}/api/me/seats", cookies=cookies, timeout=20).json()
        assert [(s["table"]["id"], s["seat"], s["token"]) for s in seats] == [(tid, 1, joined["token"])]
    assert a.get(f"/api/tables/{tid}")["seats"][1]["account"] == "cora"  # the owner's table
    wait_for(lambda: b.get(f"/api/tables/{tid}")["seats"][1].get("account") == "cora", 30,
             "the other process to show the account (published through Redis)")
    people = [Client([a], tid, made["token"], play=True), Client([b], tid, joined["token"], play=True)]
    for client in people:
        client.start()
    try:
        wait_for(lambda: all(c.seen("snapshot") for c in people), 30, "both snapshots")
        assert people[1].seen("welcome")[0]["seat"] == 1  # the account's token holds the seat
        a.post(f"/api/tables/{tid}/start", {"token": made["token"]})
        wait_for(lambda: any(m["table"]["status"] == "finished" for m in people[1].seen("table")), 120,
                 "the end of the game")
    finally:
        for client in people:
            client.close()

    def rated() -> Any:
        games = httpx.get(f"{b.base}/api/players/cora", timeout=20).json()["games"]
        return games.get("anemone", {}).get("rating")

    rating = wait_for(rated, 30, "the account's rating")
    assert rating["matches"] == 1
    finished = a.get("/api/tables?status=finished")
    assert [t["seats"][1]["account"] for t in finished if t["id"] == tid] == ["cora"]
    for proc in (a, b):
        assert httpx.get(f"{proc.base}/api/me/seats", cookies=cookies, timeout=20).json() == []


LOST_LEASE_MS = 1500
"""A short lease (renewed every 0.5 s): a lost one is noticed within a second, and a loaded machine still renews
on time (each renewal may take 0.5 s)."""


async def test_a_table_whose_lease_was_lost_is_dropped_here_and_its_lease_left_alone(pg_db: str,
                                                                                      redis_url: str) -> None:
    """In one process on the real PostgreSQL and Redis: a lease found held by another process (ours expired while
    this process was paused, and it was taken) drops the table here: out of the tables served, owned and fenced,
    its lease not released (it is the other process's now), and the table located at that process. A lost lease
    reported for an epoch no longer held (the table taken again since) drops nothing."""
    from redis.asyncio import Redis as AsyncRedis

    from cardtable.server.cluster.lease import LEASE_PREFIX
    from cardtable.server.cluster.member import Cluster
    from cardtable.server.cluster.ownership import ClusterSettings
    from cardtable.server.core.settings import Settings
    from cardtable.server.lobby.manager import Manager
    from cardtable.server.storage.store import Store

    store = await Store.open(pg_db, cluster=True)
    cluster = await Cluster.open(redis_url, store, ClusterSettings(lease_ms=LOST_LEASE_MS, sweep_s=600))
    manager = await Manager.open(store, Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05), cluster)
    redis = AsyncRedis.from_url(redis_url)
    try:
        kept, lost = [(await manager.create("nerts", {"players": 2}, None, "ana", None, 60))[0].id
                      for _ in range(2)]
        epoch = cluster.owned[lost]
        cluster._leases_lost({lost: epoch + 1})  # an old report: the epoch held now is another one
        await asyncio.sleep(0)  # not a wait: one turn of the loop, in which a wrong drop would have begun
        assert lost in manager.tables and cluster.owned[lost] == epoch
        await redis.set(LEASE_PREFIX + lost, f"elsewhere-1:{epoch + 1}", px=30_000)
        await until(lambda: lost not in manager.tables and lost not in store.fences, 10)  # the drop is done
        assert lost not in cluster.owned
        assert await redis.get(LEASE_PREFIX + lost) == f"elsewhere-1:{epoch + 1}".encode()  # not released
        assert await cluster.locate(lost) == "elsewhere-1"  # served there now, not here
        assert kept in manager.tables and await cluster.leases.owner(kept) == (cluster.process, cluster.owned[kept])
    finally:
        await redis.aclose()
        await manager.close()
        await cluster.close()
        await store.close()


def test_a_table_whose_lease_was_lost_is_no_longer_served(pg_db: str, redis_url: str) -> None:
    """A real server (uvicorn, in a thread) whose table's lease another process took: the seat's connection is
    closed with 1012 (reconnect), a join at this process is not stored here (forwarded to the lease's holder,
    which does not answer: 503), and nothing more for the table is stored."""
    import asyncio as aio
    import threading

    import uvicorn
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    from cardtable.server.cluster.lease import LEASE_PREFIX, parse_lease
    from cardtable.server.core.settings import Settings
    from cardtable.server.edge.app import create_app, uvicorn_config
    from cardtable.server.storage.store import Store

    port = free_port()
    settings = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, lease_ms=LOST_LEASE_MS, sweep_s=600, call_timeout_s=1.0)
    app = create_app(pg_db, settings, redis_url)
    running = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port, settings))
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    redis = Redis.from_url(redis_url)
    try:
        wait_for(lambda: port_open(port) and httpx.get(f"{base}/api/games", timeout=5).status_code == 200, 60,
                 "the server to answer")
        made = httpx.post(f"{base}/api/tables", json={"game": "nerts", "options": {"players": 2}}, timeout=20)
        assert made.status_code == 201, made.text
        tid, token = made.json()["table"]["id"], made.json()["token"]
        with connect(f"ws://127.0.0.1:{port}/ws/tables/{tid}", open_timeout=10) as ws:
            ws.send(json.dumps({"type": "hello", "token": token}))
            while json.loads(ws.recv(timeout=10))["type"] != "snapshot":
                pass
            held = parse_lease(redis.get(LEASE_PREFIX + tid))
            assert held is not None
            redis.set(LEASE_PREFIX + tid, f"elsewhere-1:{held[1] + 1}", px=30_000)
            deadline = time.monotonic() + 10
            code = None
            while code is None:
                assert time.monotonic() < deadline, "the connection was not closed"
                try:
                    ws.recv(timeout=0.5)
                except TimeoutError:
                    continue
                except ConnectionClosed as closed:  # by the server
                    assert closed.rcvd is not None
                    code = closed.rcvd.code
        assert code == 1012
        assert tid not in app.state.manager.tables
        joined = httpx.post(f"{base}/api/tables/{tid}/join", json={"name": "bo"}, timeout=20)
        assert joined.status_code == 503, joined.text

        async def stored_seats() -> list[str]:
            store = await Store.open(pg_db)
            try:
                (row,) = await store.load_tables(table_id=tid)
                return [seat.kind for seat in row.seats]
            finally:
                await store.close()

        assert aio.run(stored_seats()) == ["person", "open"]
    finally:
        redis.close()
        running.should_exit = True
        thread.join(30)
    assert not thread.is_alive()


async def _one_process(pg_db: str, redis_url: str, lease_ms: int = LOST_LEASE_MS) -> Any:
    """A store, cluster and manager of one process on ``pg_db`` and ``redis_url`` (``close_one`` ends them)."""
    from cardtable.server.cluster.member import Cluster
    from cardtable.server.cluster.ownership import ClusterSettings
    from cardtable.server.core.settings import Settings
    from cardtable.server.lobby.manager import Manager
    from cardtable.server.storage.store import Store

    store = await Store.open(pg_db, cluster=True)
    cluster = await Cluster.open(redis_url, store, ClusterSettings(lease_ms=lease_ms, sweep_s=600))
    return store, cluster, await Manager.open(store, Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05), cluster)


async def _close_one(store: Any, cluster: Any, manager: Any) -> None:
    await manager.close()
    await cluster.close()
    await store.close()


async def test_a_take_whose_epoch_moves_keeps_an_expiring_lease_at_the_databases_epoch(pg_db: str,
                                                                                       redis_url: str) -> None:
    """Redis lost its counters (restarted empty) while the database holds epoch 7: the take's lease follows the
    database (epoch 8) and still expires within a lease time; the table plays and stores at that epoch."""
    from redis.asyncio import Redis as AsyncRedis
    from sqlalchemy import select

    from cardtable.server.cluster.lease import EPOCH_PREFIX, LEASE_PREFIX
    from cardtable.server.core.settings import Settings
    from cardtable.server.lobby.manager import Manager
    from cardtable.server.storage import schema
    from cardtable.server.storage.store import Store
    from cardtable.server.table.actions import QueuedAction
    from cardtable.server.table.owner import Table

    store = await Store.open(pg_db)  # a process of old that created it and is gone
    manager = await Manager.open(store, Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05))
    try:
        table, _, first = await manager.create("nerts", {"players": 2}, None, "ana", None, 60)
        await manager.join(table.id, "bo", None)
        await manager.start(table.id, first)
        tid = table.id
        assert await store.take(tid, 7) == 7
    finally:
        await manager.close()
        await store.close()
    store, cluster, manager = await _one_process(pg_db, redis_url)
    redis = AsyncRedis.from_url(redis_url)
    try:
        taken = await cluster.take(tid)
        assert isinstance(taken, Table) and manager.tables[tid] is taken
        assert cluster.owned[tid] == store.fences[tid] == 8
        assert await cluster.leases.owner(tid) == (cluster.process, 8)
        assert 0 < await redis.pttl(LEASE_PREFIX + tid) <= LOST_LEASE_MS
        assert await redis.get(EPOCH_PREFIX + tid) == b"8"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        state = taken.state
        assert state is not None
        taken.submit_action(QueuedAction(0, state.legal_actions(0)[0], future=future))
        ok, _ = await future
        assert ok
        actions = schema.actions
        async with store.engine.connect() as conn:
            epochs = (await conn.execute(select(actions.c.epoch).where(actions.c.table_id == tid).distinct())).all()
        assert [row.epoch for row in epochs] == [8]
    finally:
        await redis.aclose()
        await _close_one(store, cluster, manager)


async def test_handing_over_releases_every_lease_names_each_table_and_takes_nothing_more(pg_db: str,
                                                                                          redis_url: str) -> None:
    """SIGTERM's hand-over: every table stops here, its lease is released at once (not left to expire) and its id
    published on ``ct:released``; afterwards this process neither creates nor takes a table."""
    from redis.asyncio import Redis as AsyncRedis

    from cardtable.server.cluster.lease import LEASE_PREFIX
    from cardtable.server.cluster.ownership import RELEASED
    from cardtable.server.core.errors import TableError

    store, cluster, manager = await _one_process(pg_db, redis_url)
    redis = AsyncRedis.from_url(redis_url)
    pubsub = redis.pubsub()
    try:
        ids = {(await manager.create("nerts", {"players": 2}, None, "ana", None, 60))[0].id for _ in range(2)}
        await pubsub.subscribe(RELEASED)
        assert (await pubsub.get_message(timeout=5))["type"] == "subscribe"
        await cluster.hand_over()
        assert cluster.draining and not manager.tables and not cluster.owned and not store.fences
        assert await redis.exists(*(LEASE_PREFIX + t for t in ids)) == 0
        named: set[str] = set()
        while len(named) < len(ids):
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=5)
            assert message is not None, named
            named.add(message["data"].decode())
        assert named == ids
        await cluster.hand_over()  # once only
        assert await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.2) is None
        with pytest.raises(TableError) as refused:
            await cluster.claim_new("another")
        assert refused.value.status == 503
        assert await cluster.take(next(iter(ids))) is None and not manager.tables
    finally:
        await pubsub.aclose()  # type: ignore[no-untyped-call]
        await redis.aclose()
        await _close_one(store, cluster, manager)
