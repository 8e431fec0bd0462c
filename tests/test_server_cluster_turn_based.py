"""Turn-based tables over several ``cardtable serve --redis`` processes on one PostgreSQL and one Redis (issue 29,
``server/table/turn_clock.py``, ``server/lobby/idle_tables.py``, ``server/cluster/ownership.py``), as real
processes: a person's deadline that falls due while the table's owner is SIGKILLed is acted on once, by whichever
process takes the table, and the match goes on; a waiting table its owner let go is owned by nobody and taken by no
sweep until someone connects or its deadline falls due.

Clocks here are seconds (``--turn-clock-min-s 1``) where players would have hours: the absences are real, only
shorter. The ground truth is the database: the stored time banks (``turn_banks``) and actions."""

from __future__ import annotations

import json
import signal
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis import Redis
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool
from websockets.sync.client import connect

from cardtable.server.cluster.lease import LEASE_PREFIX
from cardtable.server.storage import schema
from cluster_harness import Client, Proc, check_record, start
from polling import wait_for
from services import run_async

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

BOT = {"kind": "bot", "bot": "heuristic"}


def start_turn_based(
    procs: list[Proc],
    db: str,
    redis: str,
    folder: Path,
    names: str,
    idle_s: float,
    env: dict[str, str] | None = None,
) -> list[Proc]:
    """One process per letter of ``names`` (logs ``folder/NAME.log``) with clocks of seconds, expiry sweeps every
    0.2 s and waiting tables let go after ``idle_s`` seconds of quiet (and ``env``), started at once; once all
    answer."""
    env = {"CARDTABLE_TURN_IDLE_S": str(idle_s), "CARDTABLE_EXPIRY_CHECK_S": "0.2", **(env or {})}
    return start(procs, db, redis, *(folder / f"{name}.log" for name in names), env=env,
                 options=["--turn-clock-min-s", "1"])


def signed_in(proc: Proc, name: str) -> dict[str, str]:
    """A new account made through ``proc``: its session cookies."""
    with httpx.Client(base_url=proc.base, timeout=30) as person:
        made = person.post("/api/accounts", json={"name": name, "password": "long enough"})
        assert made.status_code == 201, made.text
        return dict(person.cookies)


def turn_based_table(
    proc: Proc, cookies: dict[str, str], bots: int, start_s: int, per_move_s: int
) -> tuple[str, str]:
    """A one-hand turn-based Enemy Anemone table of the signed-in person (seat 0, who leads) and ``bots`` bots,
    made through ``proc`` (which owns it); it starts by itself. Its id and the person's token."""
    made = httpx.post(
        proc.base + "/api/tables",
        cookies=cookies,
        timeout=30,
        json={
            "game": "anemone",
            "options": {"players": 1 + bots, "rounds": 1},
            "pace": "turn-based",
            "turn_clock": {"start_s": start_s, "per_move_s": per_move_s},
            "seats": [{"kind": "open"}, *[BOT] * bots],
        },
    )
    assert made.status_code == 201, made.text
    assert made.json()["table"]["pace"] == "turn-based"
    return str(made.json()["table"]["id"]), str(made.json()["token"])


def stored_turn(db: str, table_id: str) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    """``table_id``'s stored time banks by seat (``bank_ms``, ``deadline_ms``, ``timeouts``) and its stored actions
    (``hand``, ``idx``, ``seat``, ``at``) in order, read in one transaction."""

    async def read() -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
        engine = create_async_engine(db, poolclass=NullPool)
        b, a = schema.turn_banks, schema.actions
        try:
            async with engine.begin() as conn:
                banks = (
                    (
                        await conn.execute(
                            select(b.c.seat, b.c.bank_ms, b.c.deadline_ms, b.c.timeouts).where(
                                b.c.table_id == table_id
                            )
                        )
                    )
                    .mappings()
                    .all()
                )
                actions = await conn.execute(
                    select(a.c.hand, a.c.idx, a.c.seat, a.c.at)
                    .where(a.c.table_id == table_id)
                    .order_by(a.c.hand, a.c.idx)
                )
                rows = [dict(r) for r in actions.mappings().all()]
        finally:
            await engine.dispose()
        return {int(r["seat"]): dict(r) for r in banks}, rows

    return run_async(read)


def to_move(db: str, table_id: str) -> int | None:
    """The seat whose deadline runs, as stored (``None``: a bot moves, between hands, or over)."""
    banks, _ = stored_turn(db, table_id)
    return next((seat for seat, bank in banks.items() if bank["deadline_ms"] is not None), None)


def distinct_actions(db: str, table_id: str) -> int:
    """How many distinct ``(hand, idx)`` keys ``table_id``'s stored actions have."""

    async def read() -> int:
        engine = create_async_engine(db, poolclass=NullPool)
        a = schema.actions
        try:
            async with engine.connect() as conn:
                keys = select(a.c.hand, a.c.idx).where(a.c.table_id == table_id).distinct().subquery()
                return int((await conn.execute(select(func.count()).select_from(keys))).scalar_one())
        finally:
            await engine.dispose()

    return run_async(read)


def lease_holder(redis_url: str, table_id: str) -> str | None:
    """The process holding ``table_id``'s lease (``None``: nobody owns it)."""
    with Redis.from_url(redis_url) as redis:
        value = redis.get(LEASE_PREFIX + table_id)
    return None if value is None else value.decode().rsplit(":", 1)[0]


def unix_ms_of(iso: str) -> int:
    """Unix milliseconds of an ISO 8601 UTC time (``...Z``)."""
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def hello(proc: Proc, table_id: str, token: str) -> dict[str, dict[str, Any]]:
    """Connect to ``table_id`` through ``proc`` with the seat's ``token``, until the snapshot; disconnect. The
    messages received, by type (the last of each)."""
    received: dict[str, dict[str, Any]] = {}
    with connect(f"ws://127.0.0.1:{proc.port}/ws/tables/{table_id}", open_timeout=30) as ws:
        ws.send(json.dumps({"type": "hello", "token": token}))
        while "snapshot" not in received:
            message: dict[str, Any] = json.loads(ws.recv(timeout=30))
            assert message["type"] != "error", message
            received[message["type"]] = message
    return received


def move(proc: Proc, table_id: str, token: str) -> int:
    """Connect through ``proc`` with the seat's ``token``, make its first legal move once offered, wait for the ack,
    disconnect: the acknowledged version."""
    with connect(f"ws://127.0.0.1:{proc.port}/ws/tables/{table_id}", open_timeout=30) as ws:
        ws.send(json.dumps({"type": "hello", "token": token}))
        while True:
            message: dict[str, Any] = json.loads(ws.recv(timeout=30))
            assert message["type"] not in ("error", "reject"), message
            if message["type"] in ("snapshot", "update") and message.get("legal"):
                ws.send(json.dumps({"type": "action", "seq": 1, "action": message["legal"][0]}))
            if message["type"] == "ack":
                return int(message["v"])


def test_a_deadline_that_falls_due_while_the_owner_is_killed_is_acted_on_once_and_the_match_goes_on(
    pg_db: str, redis_url: str, procs: list[Proc], tmp_path: Path
) -> None:
    """The owner of a waiting table is SIGKILLed before the person's deadline: once it falls due one of the two
    other processes takes the table (its sweep) and the stand-in moves for the person once; the person then comes
    back through a process and plays the match to its end."""
    a, b, c = start_turn_based(procs, pg_db, redis_url, tmp_path, "abc", idle_s=600)  # a keeps its table
    ana = signed_in(a, "ana")
    table_id, token = turn_based_table(a, ana, bots=3, start_s=8, per_move_s=8)
    wait_for(lambda: to_move(pg_db, table_id) == 0, 30, "ana's turn (she leads)")
    banks, actions = stored_turn(pg_db, table_id)
    deadline_ms = banks[0]["deadline_ms"]
    assert actions == [] and lease_holder(redis_url, table_id) is not None
    a.signal(signal.SIGKILL)
    assert time.time() * 1000 < deadline_ms - 1000, "the owner must die before the deadline (a slow machine?)"

    # Nobody acts for ana until her deadline; then one process takes the table and the stand-in moves once.
    wait_for(lambda: stored_turn(pg_db, table_id)[0][0]["timeouts"] >= 1, 60, "the stand-in's move for ana")
    banks, actions = stored_turn(pg_db, table_id)
    assert banks[0]["timeouts"] == 1
    mine = [row for row in actions if row["seat"] == 0]
    assert [(row["hand"], row["idx"]) for row in mine] == [(0, 0)]  # her lead, made once for her
    # Not before her time ran out (``at`` is to the second).
    assert unix_ms_of(mine[0]["at"]) >= deadline_ms // 1000 * 1000
    assert lease_holder(redis_url, table_id) is not None
    took = [p for p in (b, c) if f"{table_id} at epoch" in p.log.read_text()]
    assert len(took) == 1, "exactly one process took the table"

    # Ana comes back through a process (the other one relays to the owner) and plays the match to its end.
    person = Client([c, b], table_id, token, play=True)
    person.start()
    try:
        wait_for(
            lambda: b.get(f"/api/tables/{table_id}")["status"] == "finished", 120, "the end of the match"
        )
    finally:
        person.close()
    assert person.seen("snapshot") and person.seen("ack"), "ana played after the timeout"
    banks, actions = stored_turn(pg_db, table_id)
    assert banks[0]["timeouts"] == 1 and all(bank["deadline_ms"] is None for bank in banks.values())
    assert len([row for row in actions if row["seat"] == 0]) == 10  # one card per trick, one hand of 4 seats
    assert distinct_actions(pg_db, table_id) == len(actions)  # no version stored twice
    check_record(pg_db, table_id, [], [person])  # the record replays; epochs never go down


def test_a_waiting_table_let_go_is_taken_only_when_someone_connects_or_its_deadline_falls_due(
    pg_db: str, redis_url: str, procs: list[Proc], tmp_path: Path
) -> None:
    """A turn-based table waiting for its person is let go by its owner (``turn_idle_s``): no process owns it and
    no sweep takes it; the person's hello through another process takes it there and gets a snapshot; let go
    again, it is taken by a sweep once its deadline falls due, and the stand-in moves once."""
    a, b = start_turn_based(procs, pg_db, redis_url, tmp_path, "ab", idle_s=0.5)
    ana = signed_in(a, "ana")
    table_id, token = turn_based_table(a, ana, bots=2, start_s=15, per_move_s=5)
    wait_for(lambda: to_move(pg_db, table_id) == 0, 30, "ana's turn (she leads)")
    deadline_ms = stored_turn(pg_db, table_id)[0][0]["deadline_ms"]
    wait_for(lambda: lease_holder(redis_url, table_id) is None, 30, "the waiting table let go by its owner")
    time.sleep(2)  # not a wait: several sweeps of both processes (every 0.5 s) pass, and none may take it
    assert lease_holder(redis_url, table_id) is None
    assert time.time() * 1000 < deadline_ms - 1000, "the deadline must still be ahead (a slow machine?)"

    # Ana connects through b: b takes the table and her hello is answered with her seat's snapshot.
    received = hello(b, table_id, token)
    snapshot = received["snapshot"]
    assert received["welcome"]["seat"] == 0 and snapshot["legal"], "ana's turn, her cards to play"
    assert snapshot["table"]["turn"]["seat"] == 0 and snapshot["table"]["turn"]["deadline_ms"] == deadline_ms
    assert f"{table_id} at epoch" in b.log.read_text()
    assert stored_turn(pg_db, table_id)[1] == []  # connecting moved nothing

    # She leaves without moving: let go again, and taken by a sweep when her deadline falls due.
    wait_for(lambda: lease_holder(redis_url, table_id) is None, 30, "the table let go again")
    wait_for(lambda: stored_turn(pg_db, table_id)[0][0]["timeouts"] >= 1, 60, "the stand-in's move for ana")
    banks, actions = stored_turn(pg_db, table_id)
    assert banks[0]["timeouts"] == 1
    mine = [row for row in actions if row["seat"] == 0]
    assert [(row["hand"], row["idx"]) for row in mine] == [(0, 0)]
    assert unix_ms_of(mine[0]["at"]) >= deadline_ms // 1000 * 1000


def test_a_table_whose_bots_think_after_the_persons_move_is_taken_at_once_when_its_owner_dies(
    pg_db: str, redis_url: str, procs: list[Proc], tmp_path: Path
) -> None:
    """Once the person's move is acknowledged the stored banks show no deadline (the bots move next: the table is
    active, not waiting for her); so when its owner is SIGKILLed while the bots think, the other process takes it
    within a lease time and the bots play on, rather than after the person's old deadline (10 minutes here)."""
    a, b = start_turn_based(
        procs,
        pg_db,
        redis_url,
        tmp_path,
        "ab",
        idle_s=600,
        env={"CARDTABLE_ANEMONE_BOT_DELAY_MS": "3000", "CARDTABLE_BOT_PACE": "1"},
    )
    ana = signed_in(a, "ana")
    table_id, token = turn_based_table(a, ana, bots=3, start_s=600, per_move_s=600)
    wait_for(lambda: to_move(pg_db, table_id) == 0, 30, "ana's turn (she leads)")
    assert move(a, table_id, token) == 1
    banks, actions = stored_turn(pg_db, table_id)
    assert [row["seat"] for row in actions] == [0]  # the first bot thinks for 3 s
    assert all(bank["deadline_ms"] is None for bank in banks.values()), "her turn ended with her move"
    assert 590_000 <= banks[0]["bank_ms"] <= 600_000  # what was left plus the move's time, at most the start
    a.signal(signal.SIGKILL)
    wait_for(lambda: len(stored_turn(pg_db, table_id)[1]) >= 3, 30, "the bots to play on through b")
    assert f"{table_id} at epoch" in b.log.read_text()
