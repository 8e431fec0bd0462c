"""Which seats belong to an account (``account`` in ``TABLE``, ``docs/protocol.md``), so that the lobby and the tables
can link names to player pages: a signed-in player's seat names its account, a guest's seat (even one with the same
name) and a seat left and taken again do not; the mark survives a restart; finished tables name the accounts of
their people and bot levels from the match results."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cardtable.server.app import create_app
from cardtable.server.table import Settings

ORIGIN = {"Origin": "http://testserver"}
SETTINGS = Settings(hand_pause_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=0)

pytestmark = pytest.mark.usefixtures("cheap_hashes")  # conftest.py: real Argon2id, small parameters


@pytest.fixture
def client(db_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(db_url, SETTINGS)) as c:
        yield c


def sign_up(client: TestClient, name: str) -> None:
    made = client.post("/api/accounts", json={"name": name, "password": "long enough"}, headers=ORIGIN)
    assert made.status_code == 201, made.text


def seat_accounts(table: dict[str, Any]) -> list[Any]:
    return [s.get("account") for s in table["seats"]]


def test_an_account_seat_names_its_account_and_a_guest_seat_does_not(client: TestClient) -> None:
    sign_up(client, "Kim")
    made = client.post("/api/tables", headers=ORIGIN, json={"game": "anemone", "options": {"players": 3}}).json()
    table_id = made["table"]["id"]
    assert seat_accounts(made["table"]) == ["Kim", None, None]
    kim = dict(client.cookies)
    client.cookies.clear()
    # a guest who calls themself by the account's name is still a guest
    joined = client.post(f"/api/tables/{table_id}/join", json={"name": "Kim"}).json()
    assert joined["table"]["seats"][1]["name"] == "Kim"
    assert seat_accounts(joined["table"]) == ["Kim", None, None]
    assert seat_accounts(client.get(f"/api/tables/{table_id}").json()) == ["Kim", None, None]
    listed = {t["id"]: t for t in client.get("/api/tables?status=open").json()}
    assert seat_accounts(listed[table_id]) == ["Kim", None, None]
    # the account leaves; a guest takes the seat: it is nobody's account any more
    client.cookies.update(kim)
    assert client.post(f"/api/tables/{table_id}/leave", json={"token": made["token"]}).status_code == 200
    client.cookies.clear()
    client.post(f"/api/tables/{table_id}/join", json={"name": "Lee", "seat": 0})
    table = client.get(f"/api/tables/{table_id}").json()
    assert table["seats"][0]["name"] == "Lee" and seat_accounts(table)[0] is None


def test_the_mark_survives_a_restart(tmp_path: Path) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'restart.db'}"
    with TestClient(create_app(db, SETTINGS)) as client:
        sign_up(client, "미래")
        made = client.post("/api/tables", headers=ORIGIN, json={"game": "anemone", "options": {"players": 2}}).json()
        client.cookies.clear()
        client.post(f"/api/tables/{made['table']['id']}/join", json={"name": "guest"})
    with TestClient(create_app(db, SETTINGS)) as client:
        table = client.get(f"/api/tables/{made['table']['id']}").json()
        assert [s["name"] for s in table["seats"]] == ["미래", "guest"]
        assert seat_accounts(table) == ["미래", None]


def test_finished_tables_name_the_accounts_of_people_and_bots(client: TestClient) -> None:
    sign_up(client, "Rin")
    made = client.post("/api/tables", headers=ORIGIN, json={
        "game": "anemone", "options": {"players": 3, "rounds": 1},
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": "heuristic"}, {"kind": "open"}]}).json()
    table_id, token = made["table"]["id"], made["token"]
    client.cookies.clear()
    guest = client.post(f"/api/tables/{table_id}/join", json={"name": "Rin"}).json()  # a guest, same name
    assert client.post(f"/api/tables/{table_id}/start", json={"token": token}).status_code == 200
    for t in (token, guest["token"]):  # bots play on for both
        assert client.post(f"/api/tables/{table_id}/leave", json={"token": t}).status_code == 200
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        finished = {t["id"]: t for t in client.get("/api/finished").json()}
        if table_id in finished and seat_accounts(finished[table_id]) == ["Rin", "heuristic", None]:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"finished table {table_id} never named its accounts: {finished.get(table_id)}")
    assert seat_accounts(client.get("/api/tables?status=finished").json()[0]) == ["Rin", "heuristic", None]
    assert seat_accounts(client.get(f"/api/tables/{table_id}").json()) == ["Rin", "heuristic", None]
