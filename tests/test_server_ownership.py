"""Who owns a seat, what decides the cards, who gets rated (issue 25, items 4 to 6), on SQLite and PostgreSQL.

A creator's ``seed`` only at a table of one person and bots, which is then unrated; a server's deal is not the
seed's (a server key is mixed in); leaving unbinds a seat's account; one account, one seat per table; a person who
leaves, times out or abandons is last; a deleted account is never rated; and an account that never plays raises
nobody's rating (``docs/protocol.md``, "Ratings")."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from cardtable.games import get_game
from cardtable.server.core.settings import Settings
from cardtable.server.edge.app import create_app
from cardtable.server.storage import players_schema as ps
from cardtable.server.storage import schema
from cardtable.server.table.owner import hand_seed
from clients import query
from polling import wait_results, wait_status

ORIGIN = {"Origin": "http://testserver"}
TWO_ANEMONE = {"players": 2, "rounds": 1}

pytestmark = pytest.mark.usefixtures("cheap_hashes")  # conftest.py: real Argon2id, small parameters


@pytest.fixture
def client(db_client: TestClient) -> TestClient:
    return db_client


def sign_up(client: TestClient, name: str) -> dict[str, str]:
    """Sign ``name`` up on ``client``; returns its cookies (to switch back to it later)."""
    client.cookies.clear()
    made = client.post("/api/accounts", json={"name": name, "password": "long enough"}, headers=ORIGIN)
    assert made.status_code == 201, made.text
    return dict(client.cookies)


def as_(client: TestClient, cookies: dict[str, str] | None) -> TestClient:
    client.cookies.clear()
    if cookies:
        client.cookies.update(cookies)
    return client


def account_id(client: TestClient, name: str) -> int:
    return int(query(client, select(ps.accounts.c.id).where(ps.accounts.c.name == name))[0][0])


def ratings_of(client: TestClient, ident: int) -> list[Any]:
    return query(client, select(ps.ratings).where(ps.ratings.c.account_id == ident))


def play_to_the_end(client: TestClient, table_id: str, token: str, start: bool = False) -> None:
    """Play the token's seat through a WebSocket (its first legal action each time) until the match ends; with
    ``start``, start the table once the seat is connected (so that no stand-in plays for it before its first move,
    however slow the machine)."""
    with client.websocket_connect(f"/ws/tables/{table_id}") as ws:
        ws.send_json({"type": "hello", "token": token})
        if start:
            assert ws.receive_json()["type"] == "welcome"
            client.post(f"/api/tables/{table_id}/start", json={"token": token})
        seq = 0
        while True:
            message = ws.receive_json()
            table = message.get("table") or {}
            if table.get("status") == "finished" or (message["type"] == "hand_over" and message["winners"]):
                return
            if message["type"] in ("update", "snapshot") and message.get("legal"):
                seq += 1
                ws.send_json({"type": "action", "seq": seq, "action": message["legal"][0]})


# -- item 4: seeds ---------------------------------------------------------------------------------------------

def test_a_seed_is_refused_at_a_table_another_person_may_join(client: TestClient) -> None:
    made = client.post("/api/tables", json={"game": "anemone", "options": TWO_ANEMONE, "seed": 5})
    assert made.status_code == 422 and made.json()["code"] == "table.seed_not_allowed", made.text
    assert client.get("/api/tables").json() == []  # nothing made
    bots = client.post("/api/tables", json={"game": "anemone", "options": TWO_ANEMONE, "seed": 5,
                                            "seats": [{"kind": "open"}, {"kind": "bot", "bot": "random"}]})
    assert bots.status_code == 201, bots.text


def test_a_seeded_table_of_one_person_and_bots_is_unrated(client: TestClient) -> None:
    sign_up(client, "Solo")
    made = client.post("/api/tables", headers=ORIGIN, json={
        "game": "anemone", "options": TWO_ANEMONE, "seed": 11,
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": "heuristic"}]}).json()
    table_id, token = made["table"]["id"], made["token"]
    assert made["table"]["rated"] is False
    play_to_the_end(client, table_id, token, start=True)
    rows = wait_results(client, table_id, 2)
    assert [row.ordinal_after for row in rows] == [None, None]
    assert ratings_of(client, account_id(client, "Solo")) == []
    assert query(client, select(ps.ratings)) == []  # nor the bot's
    t = schema.tables
    assert query(client, select(t.c.seed_chosen).where(t.c.id == table_id)) == [(1,)]
    # the seed gives its deal: the creator chose to know it, and plays only bots
    deal = query(client, select(schema.hands.c.deal).where(schema.hands.c.table_id == table_id,
                                                             schema.hands.c.hand == 0))[0][0]
    assert deal == get_game("anemone").new_match(TWO_ANEMONE).deal_cards(hand_seed(11, 0))


def test_no_seat_can_compute_the_deal_from_the_tables_seed(client: TestClient) -> None:
    made = client.post("/api/tables", json={"game": "anemone", "options": TWO_ANEMONE}).json()
    table_id = made["table"]["id"]
    assert made["table"]["rated"] is True
    joined = client.post(f"/api/tables/{table_id}/join", json={"name": "other"}).json()
    assert client.post(f"/api/tables/{table_id}/start", json={"token": joined["token"]}).status_code == 200
    info = client.get(f"/api/tables/{table_id}").json()
    listed = client.get("/api/tables?status=playing").json()
    assert "seed" not in str(info) and "seed" not in str(listed)
    assert client.get(f"/api/tables/{table_id}/record").json()["code"] == "table.not_finished"
    t, h = schema.tables, schema.hands
    seed = query(client, select(t.c.seed).where(t.c.id == table_id))[0][0]
    deal = query(client, select(h.c.deal).where(h.c.table_id == table_id, h.c.hand == 0))[0][0]
    # even someone who learnt the table's seed cannot deal its hands: a server key is mixed in
    assert deal != get_game("anemone").new_match(TWO_ANEMONE).deal_cards(hand_seed(seed, 0))


# -- item 5: seats and accounts --------------------------------------------------------------------------------

def test_leaving_unbinds_and_a_strangers_result_is_not_credited(client: TestClient) -> None:
    sign_up(client, "Kim")
    kim = account_id(client, "Kim")
    made = client.post("/api/tables", headers=ORIGIN, json={
        "game": "anemone", "options": TWO_ANEMONE, "autostart": False,
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": "heuristic"}]}).json()
    table_id = made["table"]["id"]
    assert made["table"]["seats"][0]["account"] == "Kim"
    assert client.post(f"/api/tables/{table_id}/leave", json={"token": made["token"]}).status_code == 200
    sa = ps.seat_accounts
    assert query(client, select(sa).where(sa.c.table_id == table_id)) == []
    assert client.get("/api/me/seats").json() == []
    stranger = as_(client, None).post(f"/api/tables/{table_id}/join", json={"name": "stranger"}).json()
    assert stranger["seat"] == 0 and stranger["table"]["seats"][0]["account"] is None
    play_to_the_end(client, table_id, stranger["token"], start=True)
    rows = wait_results(client, table_id, 2)
    assert rows[0].account_id is None and rows[0].name == "stranger"
    m = ps.match_seats
    assert query(client, select(m).where(m.c.account_id == kim)) == []
    assert ratings_of(client, kim) == []


def test_one_account_holds_one_seat_per_table(client: TestClient) -> None:
    sign_up(client, "Twin")
    made = client.post("/api/tables", headers=ORIGIN, json={"game": "anemone", "options": TWO_ANEMONE}).json()
    table_id = made["table"]["id"]
    again = client.post(f"/api/tables/{table_id}/join", headers=ORIGIN, json={"name": "Twin"})
    assert again.status_code == 409 and again.json()["code"] == "seat.account_held", again.text
    table = client.get(f"/api/tables/{table_id}").json()
    assert [s["kind"] for s in table["seats"]] == ["person", "open"]  # nothing changed
    # Play now twice: the second seat is at another table
    first = client.post("/api/play", headers=ORIGIN, json={"game": "nerts"}).json()
    second = client.post("/api/play", headers=ORIGIN, json={"game": "nerts"}).json()
    assert first["table"]["id"] != second["table"]["id"]


# -- item 6: ratings -------------------------------------------------------------------------------------------

def test_a_person_who_leaves_a_rated_match_is_last(client: TestClient) -> None:
    sign_up(client, "Quit")
    made = client.post("/api/tables", headers=ORIGIN, json={
        "game": "anemone", "options": {"players": 4, "rounds": 1}, "autostart": False,
        "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "random"}] * 3}).json()
    table_id, token = made["table"]["id"], made["token"]
    client.post(f"/api/tables/{table_id}/start", json={"token": token})
    assert client.post(f"/api/tables/{table_id}/leave", json={"token": token}).status_code == 200
    wait_status(client, table_id)
    rows = wait_results(client, table_id, 4)
    assert rows[0].rank == 4 and rows[0].won == 0
    assert rows[0].ordinal_after is not None and rows[0].ordinal_after < rows[0].ordinal_before


def test_an_abandoned_match_rates_its_absent_person_last(db_url: str) -> None:
    settings = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=5000, abandon_after_s=0.2,
                        expiry_check_s=0.1)
    with TestClient(create_app(db_url, settings)) as client:
        sign_up(client, "Gone")
        made = client.post("/api/tables", headers=ORIGIN, json={
            "game": "anemone", "options": TWO_ANEMONE, "autostart": False, "grace_seconds": 0,
            "seats": [{"kind": "open"}, {"kind": "bot", "bot": "random"}]}).json()
        table_id, token = made["table"]["id"], made["token"]
        client.post(f"/api/tables/{table_id}/start", json={"token": token})
        wait_status(client, table_id, ("abandoned",), 30)
        rows = wait_results(client, table_id, 2)
        assert (rows[0].rank, rows[0].won) == (2, 0) and rows[1].rank == 1
        assert len(ratings_of(client, account_id(client, "Gone"))) == 1


def test_deleting_an_account_mid_game_leaves_no_rating_rows(client: TestClient) -> None:
    sign_up(client, "Tao")
    tao = account_id(client, "Tao")
    made = client.post("/api/tables", headers=ORIGIN, json={
        "game": "anemone", "options": TWO_ANEMONE, "autostart": False,
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": "random"}]}).json()
    table_id, token = made["table"]["id"], made["token"]
    client.post(f"/api/tables/{table_id}/start", json={"token": token})
    assert client.delete("/api/me", headers=ORIGIN).status_code == 204
    sa = ps.seat_accounts
    assert query(client, select(sa).where(sa.c.account_id == tao)) == []
    assert client.get(f"/api/tables/{table_id}").json()["seats"][0]["account"] is None
    play_to_the_end(client, table_id, token)
    rows = wait_results(client, table_id, 2)
    assert rows[0].account_id is None
    for table in (ps.ratings, ps.rating_history, ps.player_stats):
        assert query(client, select(table).where(table.c.account_id == tao)) == []
    assert all(row["name"] for row in client.get("/api/leaderboard?game=anemone").json())


def test_an_account_that_never_plays_raises_nobodys_rating(client: TestClient) -> None:
    farmer = sign_up(client, "Farmer")
    sign_up(client, "Sock")
    made = as_(client, farmer).post("/api/tables", headers=ORIGIN, json={
        "game": "anemone", "options": TWO_ANEMONE, "grace_seconds": 0}).json()
    table_id, token = made["table"]["id"], made["token"]
    sock = sign_up(client, "Sock2")
    joined = as_(client, sock).post(f"/api/tables/{table_id}/join", headers=ORIGIN, json={"name": "x"}).json()
    assert joined["table"]["seats"][1]["account"] == "Sock2"
    play_to_the_end(client, table_id, token, start=True)  # the farmer plays; the sock never comes: a bot plays for it
    rows = wait_results(client, table_id, 2)
    assert rows[1].rank == 2 and rows[1].won == 0  # the sock is last, whatever its stand-in did
    assert ratings_of(client, account_id(client, "Farmer")) == []
    assert rows[0].ordinal_after is None
    assert len(ratings_of(client, account_id(client, "Sock2"))) == 1
