"""The lobby side of turn-based tables (issue 29; server/lobby/turn_based.py, edge/routes.py, lobby/joining.py,
players/results.py, lobby/records.py), on a real server and SQLite: what a new table's pace and turn clock may be
(each refusal coded, and nothing made), that only signed-in players take the person seats of a turn-based table,
the per-account limit on such seats, the matches a player left or lost to the turn clock on their page, and when
each move of a turn-based table was made in its replay."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import func, select
from starlette.testclient import TestClient

from cardtable.refusals import PARAMS
from cardtable.server.storage import players_schema as ps
from cardtable.server.storage import schema
from cardtable.server.storage.rows import TableRow
from clients import ORIGIN, MakeClient, as_account, fast_settings, query, sign_up
from polling import wait_for, wait_status

pytestmark = pytest.mark.usefixtures("cheap_hashes")  # conftest.py: real Argon2id, small parameters

BOT = "heuristic"
DAY = 86_400


def anemone_body(seats: list[str], **extra: Any) -> dict[str, Any]:
    """A ``POST /api/tables`` body for Enemy Anemone, one seat per entry of ``seats`` (``"open"`` or a bot spec)."""
    return {
        "game": "anemone",
        "options": {"players": len(seats), "rounds": 1},
        "seats": [{"kind": "open"} if s == "open" else {"kind": "bot", "bot": s} for s in seats],
        **extra,
    }


def tables_stored(client: TestClient) -> int:
    return int(query(client, select(func.count()).select_from(schema.tables))[0][0])


def stored_row(client: TestClient, table_id: str) -> TableRow:
    store = client.app.state.store  # type: ignore[attr-defined]
    rows: list[TableRow] = client.portal.call(lambda: store.load_tables(table_id=table_id))  # type: ignore[union-attr]
    return rows[0]


def refused(reply: Any, status: int, code: str, params: dict[str, Any]) -> None:
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert (body["code"], body["params"]) == (code, params), body
    assert set(body["params"]) == set(PARAMS[code])  # the refusal's params contract (refusals.py)


TURN_BASED = {"pace": "turn-based"}
BAD_BODIES = [
    pytest.param(
        {"game": "nerts", "options": {"players": 2}, "pace": "turn-based"},
        422,
        "pace.unsupported",
        {"game": "nerts"},
        id="nerts-is-a-race",
    ),
    pytest.param(
        anemone_body(["open", BOT], **TURN_BASED, turn_clock={"start_s": 3599, "per_move_s": 3600}),
        422,
        "turn_clock.too_short",
        {"field": "start_s", "min_s": 3600},
        id="start-below-the-minimum",
    ),
    pytest.param(
        anemone_body(["open", BOT], **TURN_BASED, turn_clock={"start_s": DAY, "per_move_s": 60}),
        422,
        "turn_clock.too_short",
        {"field": "per_move_s", "min_s": 3600},
        id="per-move-below-the-minimum",
    ),
    pytest.param(
        anemone_body(["open", BOT], **TURN_BASED, turn_clock={"start_s": DAY, "per_move_s": DAY + 1}),
        422,
        "turn_clock.invalid",
        {"detail": "per_move_s is more than start_s"},
        id="per-move-above-start",
    ),
    pytest.param(
        anemone_body(["open", BOT], **TURN_BASED, turn_clock={"start_s": 30 * DAY + 1, "per_move_s": DAY}),
        422,
        "turn_clock.invalid",
        {"detail": "start_s is more than 2592000 seconds (30 days)"},
        id="start-above-30-days",
    ),
    pytest.param(
        anemone_body(["open", BOT], turn_clock={"start_s": DAY, "per_move_s": DAY}),
        422,
        "turn_clock.invalid",
        {"detail": "only a turn-based table has a turn clock"},
        id="clock-in-real-time",
    ),
]


@pytest.mark.parametrize(("body", "status", "code", "params"), BAD_BODIES)
def test_a_pace_or_clock_a_table_may_not_have_is_refused_and_nothing_is_made(
    client: TestClient, body: dict[str, Any], status: int, code: str, params: dict[str, Any]
) -> None:
    sign_up(client, "Ada")
    refused(client.post("/api/tables", json=body, headers=ORIGIN), status, code, params)
    assert tables_stored(client) == 0
    as_account(client, None)  # a guest's request is refused for its body first, not for being a guest
    refused(client.post("/api/tables", json=body, headers=ORIGIN), status, code, params)
    assert tables_stored(client) == 0


def test_a_guest_may_not_make_a_turn_based_table(client: TestClient) -> None:
    body = anemone_body(["open", BOT, BOT, BOT], **TURN_BASED)
    refused(client.post("/api/tables", json=body), 401, "account.not_signed_in", {})
    cookie = sign_up(client, "Ada")
    client.cookies.clear()
    # the cookie from another site is not honoured: still a guest (lobby/seating.bind_seat would not bind the seat)
    client.cookies.set("ct_session", cookie)
    refused(
        client.post("/api/tables", json=body, headers={"Origin": "https://elsewhere.example"}),
        401,
        "account.not_signed_in",
        {},
    )
    assert tables_stored(client) == 0
    # a real-time table is still anyone's
    assert client.post("/api/tables", json=anemone_body(["open", BOT])).status_code == 201


def test_a_signed_in_player_makes_a_turn_based_table_against_three_bots(client: TestClient) -> None:
    sign_up(client, "Ada")
    made = client.post(
        "/api/tables", json=anemone_body(["open", BOT, BOT, BOT], **TURN_BASED), headers=ORIGIN
    )
    assert made.status_code == 201, made.text
    table = made.json()["table"]
    clock = {"start_s": 3 * DAY, "per_move_s": DAY}  # the default clock
    assert (table["pace"], table["turn_clock"]) == ("turn-based", clock)
    assert table["seats"][0]["account"] == "Ada"  # the creator's seat is tied to the account
    shown = client.get(f"/api/tables/{table['id']}").json()
    assert (shown["pace"], shown["turn_clock"]) == ("turn-based", clock)
    row = stored_row(client, table["id"])
    assert (row.pace, row.turn_clock) == ("turn-based", clock)

    chosen = {"start_s": 8 * 3600, "per_move_s": 2 * 3600}  # "12 moves a day"
    made = client.post(
        "/api/tables", json=anemone_body(["open", BOT], **TURN_BASED, turn_clock=chosen), headers=ORIGIN
    )
    assert made.status_code == 201, made.text
    assert made.json()["table"]["turn_clock"] == chosen
    assert stored_row(client, made.json()["table"]["id"]).turn_clock == chosen

    real = client.post("/api/tables", json=anemone_body(["open", BOT]), headers=ORIGIN).json()["table"]
    assert (real["pace"], real["turn_clock"]) == ("real-time", None)
    assert (stored_row(client, real["id"]).pace, stored_row(client, real["id"]).turn_clock) == (
        "real-time",
        None,
    )


def test_a_guest_may_not_join_a_turn_based_table_and_a_signed_in_player_may(client: TestClient) -> None:
    ben = sign_up(client, "Ben")
    sign_up(client, "Ada")
    made = client.post(
        "/api/tables", json=anemone_body(["open", "open", BOT, BOT], **TURN_BASED), headers=ORIGIN
    )
    table_id = made.json()["table"]["id"]
    as_account(client, None)
    refused(
        client.post(f"/api/tables/{table_id}/join", json={"name": "guest"}), 401, "account.not_signed_in", {}
    )
    refused(
        client.post(f"/api/tables/{table_id}/join", json={"name": "guest", "seat": 2}),
        401,
        "account.not_signed_in",
        {},
    )  # a bot's seat taken by a person is a person's seat too
    seats = client.get(f"/api/tables/{table_id}").json()["seats"]
    assert [s["kind"] for s in seats] == ["person", "open", "bot", "bot"]  # nothing taken
    as_account(client, ben)
    joined = client.post(f"/api/tables/{table_id}/join", json={"name": "Ben"}, headers=ORIGIN)
    assert joined.status_code == 200, joined.text
    assert joined.json()["seat"] == 1 and joined.json()["table"]["seats"][1]["account"] == "Ben"
    # a guest still joins a real-time table
    real = client.post("/api/tables", json=anemone_body(["open", "open"]), headers=ORIGIN).json()["table"][
        "id"
    ]
    as_account(client, None)
    assert client.post(f"/api/tables/{real}/join", json={"name": "guest"}).status_code == 200


def test_an_account_holds_at_most_turn_based_tables_max_turn_based_seats(
    make_client: MakeClient, db_url: str
) -> None:
    client = make_client(fast_settings(turn_based_tables_max=2), db_url)  # SQLite, then PostgreSQL
    ben = sign_up(client, "Ben")
    ada = sign_up(client, "Ada")
    body = anemone_body(["open", "open", BOT, BOT], **TURN_BASED)  # waits for a second person: not started
    made = [client.post("/api/tables", json=body, headers=ORIGIN).json() for _ in range(2)]
    assert all("token" in m for m in made), made
    refused(client.post("/api/tables", json=body, headers=ORIGIN), 409, "turn_based.too_many", {"limit": 2})
    assert tables_stored(client) == 2
    # real-time tables are not counted
    assert client.post("/api/tables", json=anemone_body(["open", BOT]), headers=ORIGIN).status_code == 201
    # nor is another account's turn-based table Ada would join
    as_account(client, ben)
    theirs = client.post("/api/tables", json=body, headers=ORIGIN).json()["table"]["id"]
    as_account(client, ada)
    refused(
        client.post(f"/api/tables/{theirs}/join", json={"name": "Ada"}, headers=ORIGIN),
        409,
        "turn_based.too_many",
        {"limit": 2},
    )
    assert client.get(f"/api/tables/{theirs}").json()["seats"][1]["kind"] == "open"
    # a seat given up before the start is no longer held: one more may be taken
    left = client.post(f"/api/tables/{made[0]['table']['id']}/leave", json={"token": made[0]["token"]})
    assert left.status_code == 200, left.text
    joined = client.post(f"/api/tables/{theirs}/join", json={"name": "Ada"}, headers=ORIGIN)
    assert joined.status_code == 200, joined.text
    refused(client.post("/api/tables", json=body, headers=ORIGIN), 409, "turn_based.too_many", {"limit": 2})


def page_game(client: TestClient, name: str, matches: int) -> dict[str, Any]:
    """The anemone part of ``name``'s page once ``matches`` matches are on it."""

    def recorded() -> dict[str, Any] | None:
        game = client.get(f"/api/players/{name}").json()["games"].get("anemone")
        return game if game and game["matches"] >= matches else None

    return wait_for(recorded, 30, f"{matches} matches on {name}'s page")


def test_the_player_page_counts_matches_left_and_lost_to_the_turn_clock(make_client: MakeClient) -> None:
    """Ada leaves a real-time match after its start (a stand-in finishes it); Ben never moves at a turn-based
    table with a clock of one second (``turn_clock_min_s`` 1): after three timeouts the stand-in keeps his seat.
    Both matches count as left, only Ben's as timed out; the bot that played both left neither. The replay of
    Ben's table says when each move was made, the real-time one does not."""
    client = make_client(fast_settings(turn_clock_min_s=1))
    ben = sign_up(client, "Ben")
    sign_up(client, "Ada")
    made = client.post("/api/tables", json=anemone_body(["open", BOT]), headers=ORIGIN).json()
    ada_table = made["table"]["id"]
    assert client.post(f"/api/tables/{ada_table}/start", json={"token": made["token"]}).status_code == 200
    assert client.post(f"/api/tables/{ada_table}/leave", json={"token": made["token"]}).status_code == 200

    as_account(client, ben)
    clock = {"start_s": 1, "per_move_s": 1}
    made = client.post(
        "/api/tables", json=anemone_body(["open", BOT], **TURN_BASED, turn_clock=clock), headers=ORIGIN
    ).json()
    ben_table = made["table"]["id"]
    # Ben says hello (the table starts), then goes for good
    with client.websocket_connect(f"/ws/tables/{ben_table}") as ws:
        ws.send_json({"type": "hello", "token": made["token"]})
        wait_for(lambda: ws.receive_json()["type"] == "snapshot", 10, "the snapshot")
    wait_status(client, ada_table)
    ended = wait_status(client, ben_table, timeout=120)
    assert ended["pace"] == "turn-based"

    ada, ben_page, bot = (page_game(client, name, n) for name, n in (("Ada", 1), ("Ben", 1), (BOT, 2)))
    assert (ada["matches"], ada["left"], ada["timed_out"]) == (1, 1, 0)
    assert (ben_page["matches"], ben_page["left"], ben_page["timed_out"]) == (1, 1, 1)
    assert (bot["matches"], bot["left"], bot["timed_out"]) == (2, 0, 0)
    stats = query(
        client,
        select(ps.accounts.c.name, ps.player_stats.c.left, ps.player_stats.c.timed_out).select_from(
            ps.player_stats.join(ps.accounts, ps.accounts.c.id == ps.player_stats.c.account_id)
        ),
    )
    assert sorted(tuple(row) for row in stats) == [("Ada", 1, 0), ("Ben", 1, 1), (BOT, 0, 0)]

    steps = client.get(f"/api/tables/{ben_table}/replay").json()["steps"]
    moves = [step for step in steps if step["index"] is not None]
    assert moves and all(isinstance(step["at"], str) for step in moves)
    times = [datetime.fromisoformat(step["at"].replace("Z", "+00:00")) for step in moves]
    assert times == sorted(times) and all(t.tzinfo is not None for t in times)
    assert all(step["at"] is None for step in steps if step["index"] is None)  # a hand's start is no move
    assert all("at" not in step for step in client.get(f"/api/tables/{ada_table}/replay").json()["steps"])


def test_a_turn_based_replay_gives_each_moves_stored_time(client: TestClient) -> None:
    """The replay's ``at`` is each action's stored time (``HandRow.times``), in order, ``None`` where none was
    stored: a real-time match's record copied into a finished turn-based table through the store."""
    made = client.post("/api/tables", json=anemone_body(["open", BOT])).json()
    played = made["table"]["id"]
    client.post(f"/api/tables/{played}/start", json={"token": made["token"]})
    client.post(f"/api/tables/{played}/leave", json={"token": made["token"]})
    wait_status(client, played)
    store = client.app.state.store  # type: ignore[attr-defined]
    source: TableRow = client.portal.call(  # type: ignore[union-attr]
        lambda: store.load_tables(table_id=played, with_hands=True)
    )[0]
    copy = TableRow(
        id="turnbasedcopy",
        game=source.game,
        options=source.options,
        status="finished",
        seed=source.seed,
        grace_seconds=0,
        created=source.created,
        seats=source.seats,
        pace="turn-based",
        turn_clock={"start_s": DAY, "per_move_s": DAY},
    )
    stamps: list[list[str | None]] = []

    async def store_copy() -> None:
        await store.insert_table(copy)
        for h, hand in enumerate(source.hands):
            await store.insert_hand(copy.id, h, hand.deal)
            stamps.append([])
            for i, (seat, ms, action) in enumerate(hand.actions):
                at = None if i == 1 else f"2026-11-{1 + h:02d}T10:{i // 60:02d}:{i % 60:02d}Z"
                stamps[-1].append(at)
                await store.insert_actions(copy.id, h, [(i, seat, ms, action)], at=at)
        await store.update_status(
            copy.id,
            "finished",
            finished=source.finished,
            hands_played=source.hands_played,
            totals=source.totals,
            winners=source.winners,
        )

    client.portal.call(store_copy)  # type: ignore[union-attr]
    replay = client.get(f"/api/tables/{copy.id}/replay").json()
    got = [
        [s["at"] for s in replay["steps"] if s["hand"] == h and s["index"] is not None]
        for h in range(len(stamps))
    ]
    assert got == stamps and sum(len(hand) for hand in got) > 1
    record = client.get(f"/api/tables/{copy.id}/record").json()
    assert [[a.get("at") for a in hand["actions"]] for hand in record["hands"]] == stamps
    assert client.get(f"/api/tables/{copy.id}").json()["pace"] == "turn-based"
