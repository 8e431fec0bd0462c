"""``GET /api/tables/{id}/review?seat=N`` (issue 30; ``server/lobby/reviews.py``, ``server/table/reviews.py``): the
review of a finished match's seat, computed once at the match's end for each person, stored, and served from the
store; refused before the end."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from starlette.testclient import TestClient

from cardtable import records
from cardtable.games import get_game
from cardtable.review import anemone
from cardtable.server.storage import schema
from cardtable.server.storage.rows import SeatRow, TableRow
from cardtable.server.storage.store import Store
from cardtable.server.table.reviews import claim, stored_review
from clients import MakeClient, fast_settings, play_out
from polling import wait_for, wait_status
from table_helpers import table_row

ORIGIN = {"Origin": "http://testserver"}
SETTINGS = {"lobby_reads_per_second": 1000.0, "lobby_read_burst": 1000}
"""Reads polled often (the review) stay within the per-address limit."""




def _ready(client: TestClient, table_id: str, seat: int) -> dict[str, Any] | None:
    answer = client.get(f"/api/tables/{table_id}/review?seat={seat}")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body if body["status"] == "ready" else None


def _stored(db: Path, table_id: str, seat: int) -> Any:
    engine = sa.create_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn:
            return conn.execute(
                sa.text(
                    "SELECT status, attempts, claimed, finished FROM reviews "
                    "WHERE table_id = :t AND seat = :s"
                ),
                {"t": table_id, "s": seat},
            ).first()
    finally:
        engine.dispose()


@pytest.mark.slow  # a review of 40 decisions: about 20 s of searching
def test_a_finished_anemone_match_is_reviewed_once_for_its_person(
    make_client: MakeClient, tmp_path: Path
) -> None:
    client = make_client(fast_settings(**SETTINGS))
    made = client.post(
        "/api/tables",
        headers=ORIGIN,
        json={
            "game": "anemone",
            "options": {"players": 4, "rounds": 4},
            "name": "Rin",
            "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "heuristic"}] * 3,
        },
    ).json()
    table_id, token = made["table"]["id"], made["token"]
    assert client.post(f"/api/tables/{table_id}/start", json={"token": token}).status_code == 200
    early = client.get(f"/api/tables/{table_id}/review?seat=0")
    assert early.status_code == 409 and early.json()["code"] == "review.not_finished"
    assert _stored(tmp_path / "server.db", table_id, 0) is None

    play_out(client, table_id, token)
    wait_status(client, table_id)
    ended = time.monotonic()
    # begun at the match's end for the person's seat, before anyone asks
    wait_for(lambda: _stored(tmp_path / "server.db", table_id, 0), 30, "seat 0's review to be claimed")
    review = wait_for(lambda: _ready(client, table_id, 0), 600, "the review of seat 0", every=0.5)
    print(f"\nreview of a 4-round match ready {time.monotonic() - ended:.1f} s after its end")

    record = records.from_dict(client.get(f"/api/tables/{table_id}/record").json())
    found = anemone.decisions(record, 0)
    assert review["game"] == "anemone" and review["seat"] == 0
    assert [(e["hand"], e["index"]) for e in review["decisions"]] == [(d.hand, d.index) for d in found]
    assert len(found) == 40  # 4 hands of 10 cards
    assert review["summary"]["decisions"] == 40
    for decision, entry in zip(found, review["decisions"], strict=True):
        assert entry["loss"] >= 0
        assert entry["played"] == decision.played["card"]
        assert entry["best"] in decision.view["hand"]  # never a card seat 0 could not see

    stored = _stored(tmp_path / "server.db", table_id, 0)
    assert stored.status == "ready" and stored.attempts == 1
    assert client.get(f"/api/tables/{table_id}/review?seat=0").json() == review
    assert tuple(_stored(tmp_path / "server.db", table_id, 0)) == tuple(stored)  # served, not computed again

    # a bot's seat is reviewed on request only
    assert _stored(tmp_path / "server.db", table_id, 1) is None
    assert client.get(f"/api/tables/{table_id}/review?seat=1").json() == {"status": "pending"}
    assert wait_for(lambda: _stored(tmp_path / "server.db", table_id, 1), 10, "seat 1's claim").attempts == 1


def test_review_refusals(client: TestClient) -> None:
    unknown = client.get("/api/tables/nope/review?seat=0")
    assert unknown.status_code == 404 and unknown.json()["code"] == "table.not_found"
    made = client.post(
        "/api/tables",
        headers=ORIGIN,
        json={
            "game": "anemone",
            "options": {"players": 2, "rounds": 1},
            "name": "Rin",
            "seats": [{"kind": "open"}, {"kind": "bot", "bot": "heuristic"}],
        },
    ).json()
    table_id, token = made["table"]["id"], made["token"]
    assert client.get(f"/api/tables/{table_id}/review?seat=0").json()["code"] == "review.not_finished"
    assert client.post(f"/api/tables/{table_id}/start", json={"token": token}).status_code == 200
    play_out(client, table_id, token)
    wait_status(client, table_id)
    bad = client.get(f"/api/tables/{table_id}/review?seat=2")
    assert bad.status_code == 422 and bad.json()["code"] == "seat.no_such"
    assert client.get(f"/api/tables/{table_id}/review?seat=-1").status_code == 422


async def _store_finished_nerts(url: str) -> None:
    """A finished 2-seat Nerts table whose seat 0 left its aces AD and AH playable for 3 s (tests/test_review.py)."""
    store = await Store.open(url)
    try:
        row = TableRow(
            id="nerts1",
            game="nerts",
            options={"players": 2},
            status="finished",
            seed=9,
            grace_seconds=30.0,
            created="2026-01-01T00:00:00Z",
            seats=[SeatRow(0, "person", "Rin"), SeatRow(1, "bot", "b", "greedy:easy")],
        )
        await store.insert_table(row)
        await store.insert_hand("nerts1", 0, get_game("nerts").new_match({"players": 2}).deal_cards(9))
        await store.insert_actions(
            "nerts1",
            0,
            [
                (0, 1, 1500, {"type": "flip"}),
                (1, 0, 3000, {"type": "move", "from": "work:0", "to": "foundation:new"}),
                (2, 0, 3000, {"type": "move", "from": "work:3", "to": "foundation:new"}),
            ],
        )
        await store.update_status(
            "nerts1", "finished", finished="2026-01-01T00:10:00Z", hands_played=1, totals=[2, 0], winners=[0]
        )
    finally:
        await store.close()


def test_a_nerts_review_lists_its_missed_plays(make_client: MakeClient, tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'server.db'}"
    asyncio.run(_store_finished_nerts(url))
    client = make_client(fast_settings(**SETTINGS), url)
    review = wait_for(lambda: _ready(client, "nerts1", 0), 60, "the Nerts review", every=0.2)
    assert review["game"] == "nerts" and review["seat"] == 0
    assert {(m["card"], m["kind"], m["waited_ms"], m["index"], m["ms"]) for m in review["missed"]} == {
        ("AD", "foundation", 3000, 0, 0),
        ("AH", "foundation", 3000, 0, 0),
    }
    assert review["summary"] == {"missed": 2, "stuck_ms": 0, "cards_left": 13}


async def test_one_process_claims_a_review_and_a_stale_claim_is_taken_over_once(store: Store) -> None:
    """Insert if absent: of several claims at once exactly one computes; a ``pending`` row left by a process that
    died (claimed :data:`STALE_S` ago) is claimed again by exactly one."""
    await store.insert_table(table_row("t1", status="finished"))
    first = await asyncio.gather(*(claim(store, "t1", 0) for _ in range(5)))
    assert sorted(first) == [False, False, False, False, True]
    assert await claim(store, "t1", 1) is True  # another seat: its own review
    async with store.engine.begin() as conn:
        await conn.execute(sa.update(schema.reviews).values(claimed="2000-01-01T00:00:00Z"))
    again = await asyncio.gather(*(claim(store, "t1", 0) for _ in range(5)))
    assert sorted(again) == [False, False, False, False, True]
    row = await stored_review(store, "t1", 0)
    assert row is not None and row.status == "pending" and row.attempts == 2
