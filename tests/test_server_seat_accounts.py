"""Which seats belong to an account (``account`` in ``TABLE``, ``docs/protocol.md``), so that the lobby and the tables
can link names to player pages: a signed-in player's seat names its account, a guest's seat (even one with the same
name) and a seat left and taken again do not; the mark survives a restart; finished tables name the accounts of
their people and bot levels from the match results."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from cardtable.server.core.errors import TableError
from cardtable.server.core.settings import Settings
from cardtable.server.core.tokens import hash_token
from cardtable.server.edge.app import create_app
from cardtable.server.players.account_seats import holding_accounts, seats_of_account
from cardtable.server.storage import players_schema as ps
from cardtable.server.table.seat_accounts import bind_seat_here
from clients import Statements
from polling import wait_for

ORIGIN = {"Origin": "http://testserver"}
SETTINGS = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=0)

pytestmark = pytest.mark.usefixtures("cheap_hashes")  # conftest.py: real Argon2id, small parameters


@pytest.fixture
def client(db_client: TestClient) -> TestClient:
    return db_client


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
    m = ps.match_seats
    wait_for(lambda: len(_rows(client, select(m.c.seat).where(m.c.table_id == table_id))) >= 3, 120,
             f"table {table_id} to finish and its results to be stored", every=0.2)
    finished = {t["id"]: t for t in client.get("/api/finished").json()}
    assert seat_accounts(finished[table_id]) == ["Rin", "heuristic", None], finished.get(table_id)
    assert seat_accounts(client.get("/api/tables?status=finished").json()[0]) == ["Rin", "heuristic", None]
    assert seat_accounts(client.get(f"/api/tables/{table_id}").json()) == ["Rin", "heuristic", None]


# -- the owner's side of binding, in-process (issue 25: one account, one seat; results go by the holder) ---------

def _state(client: TestClient) -> tuple[Any, Any]:
    """The app's ``(manager, store)``."""
    app: Any = client.app
    return app.state.manager, app.state.store


def _call(client: TestClient, fn: Any, *args: Any) -> Any:
    """Run the coroutine function ``fn(*args)`` on the app's event loop (where its tables' owners run)."""
    portal: Any = client.portal
    return portal.call(fn, *args)


def _rows(client: TestClient, statement: Any) -> list[tuple[Any, ...]]:
    _manager, store = _state(client)

    async def go() -> list[tuple[Any, ...]]:
        async with store.engine.connect() as conn:
            return [tuple(row) for row in (await conn.execute(statement)).all()]

    return list(_call(client, go))


def _account_id(client: TestClient, name: str) -> int:
    return int(_rows(client, select(ps.accounts.c.id).where(ps.accounts.c.name == name))[0][0])


def _bound(client: TestClient, table_id: str) -> list[tuple[Any, ...]]:
    """``[(seat, account id)]`` of the table's ``seat_accounts`` rows."""
    sa = ps.seat_accounts
    return _rows(client, select(sa.c.seat, sa.c.account_id).where(sa.c.table_id == table_id).order_by(sa.c.seat))


def _open_table(client: TestClient, players: int = 3) -> tuple[str, str]:
    """A table made by a guest (no cookie): ``(table id, the creator's token)``."""
    client.cookies.clear()
    made = client.post("/api/tables", json={"game": "anemone", "options": {"players": players}}).json()
    return made["table"]["id"], made["token"]


def _guest_join(client: TestClient, table_id: str, name: str, seat: int | None = None) -> str:
    client.cookies.clear()
    body: dict[str, Any] = {"name": name} if seat is None else {"name": name, "seat": seat}
    joined = client.post(f"/api/tables/{table_id}/join", json=body)
    assert joined.status_code == 200, joined.text
    return str(joined.json()["token"])


def test_two_binds_of_one_account_racing_at_the_owner_tie_one_seat(client: TestClient) -> None:
    sign_up(client, "Kim")
    kim = _account_id(client, "Kim")
    table_id, _creator = _open_table(client)
    tokens = {1: _guest_join(client, table_id, "a"), 2: _guest_join(client, table_id, "b")}
    manager, store = _state(client)
    table = manager.tables[table_id]

    async def both() -> list[Any]:  # the two joins' binds, each past the lobby's check, reach the owner together
        return list(await asyncio.gather(*(
            bind_seat_here(store, table, {"seat": seat, "token": token, "account_id": kim, "account_name": "Kim"})
            for seat, token in tokens.items()), return_exceptions=True))

    first, second = _call(client, both)
    assert isinstance(first, str) and first != tokens[1]  # the first to reach the owner gets the account's token
    assert isinstance(second, TableError), second
    assert (second.status, second.code, second.params) == (409, "seat.account_held", {"seat": 1})
    assert str(second) == "you already hold seat 1 at this table"
    # the refused seat is unchanged: still the guest's, with the guest's token
    shown = client.get(f"/api/tables/{table_id}").json()
    assert [s["name"] for s in shown["seats"]] == ["player", "Kim", "b"]
    assert seat_accounts(shown) == [None, "Kim", None]
    assert table.seats[2].row.token_hash == hash_token(tokens[2])
    assert _bound(client, table_id) == [(1, kim)]
    sign_in_again = client.post("/api/session", json={"name": "Kim", "password": "long enough"}, headers=ORIGIN)
    assert sign_in_again.status_code == 200, sign_in_again.text
    assert [(s["table"]["id"], s["seat"], s["token"]) for s in client.get("/api/me/seats").json()] == [
        (table_id, 1, first)]


def test_binding_a_seat_the_account_holds_again_gives_its_token_again(client: TestClient) -> None:
    sign_up(client, "Ada")
    ada = _account_id(client, "Ada")
    made = client.post("/api/tables", headers=ORIGIN, json={"game": "anemone", "options": {"players": 2}}).json()
    table_id, token = made["table"]["id"], made["token"]
    manager, store = _state(client)
    args = {"seat": 0, "token": token, "account_id": ada, "account_name": "Ada"}
    # the same bind once more (a forwarded bind retried): not "another seat", and still one row
    assert _call(client, bind_seat_here, store, manager.tables[table_id], args) == token
    assert _bound(client, table_id) == [(0, ada)]
    assert seat_accounts(client.get(f"/api/tables/{table_id}").json()) == ["Ada", None]


def test_a_bind_with_the_token_of_a_seat_since_taken_again_changes_nothing(client: TestClient) -> None:
    sign_up(client, "Max")
    max_id = _account_id(client, "Max")
    table_id, _creator = _open_table(client)
    stale = _guest_join(client, table_id, "first", seat=1)
    assert client.post(f"/api/tables/{table_id}/leave", json={"token": stale}).status_code == 200
    fresh = _guest_join(client, table_id, "second", seat=1)
    manager, store = _state(client)
    table = manager.tables[table_id]
    args = {"seat": 1, "token": stale, "account_id": max_id, "account_name": "Max"}
    assert _call(client, bind_seat_here, store, table, args) == stale
    shown = client.get(f"/api/tables/{table_id}").json()
    assert shown["seats"][1]["name"] == "second" and seat_accounts(shown) == [None, None, None]
    assert table.seats[1].row.token_hash == hash_token(fresh)
    assert _bound(client, table_id) == []


def test_binding_and_leaving_touch_only_their_own_seat(client: TestClient) -> None:
    lee = sign_up_cookies(client, "Lee")
    lee_table = client.post("/api/tables", headers=ORIGIN, json={"game": "anemone", "options": {"players": 2}}).json()
    kim = sign_up_cookies(client, "Kim")
    kim_table = client.post("/api/tables", headers=ORIGIN, json={"game": "anemone", "options": {"players": 2}}).json()
    # Kim's seat 0 was bound after Lee's seat 0 at another table: Lee's stays
    assert my_seats(client, lee) == [(lee_table["table"]["id"], 0)]
    assert my_seats(client, kim) == [(kim_table["table"]["id"], 0)]
    joined = as_(client, lee).post(f"/api/tables/{kim_table['table']['id']}/join", headers=ORIGIN,
                                   json={"name": "x"})
    assert joined.status_code == 200 and joined.json()["seat"] == 1, joined.text
    # Kim leaves seat 0 of her table: Lee's seat 1 there and seat 0 at his own table stay his
    left = as_(client, kim).post(f"/api/tables/{kim_table['table']['id']}/leave", json={"token": kim_table["token"]})
    assert left.status_code == 200, left.text
    assert my_seats(client, kim) == []
    assert sorted(my_seats(client, lee)) == sorted([(lee_table["table"]["id"], 0), (kim_table["table"]["id"], 1)])


def sign_up_cookies(client: TestClient, name: str) -> dict[str, str]:
    client.cookies.clear()
    sign_up(client, name)
    return dict(client.cookies)


def as_(client: TestClient, cookies: dict[str, str]) -> TestClient:
    client.cookies.clear()
    client.cookies.update(cookies)
    return client


def my_seats(client: TestClient, cookies: dict[str, str]) -> list[tuple[str, int]]:
    seats = as_(client, cookies).get("/api/me/seats")
    assert seats.status_code == 200, seats.text
    return [(s["table"]["id"], s["seat"]) for s in seats.json()]


def test_a_bind_tells_the_tables_connections_at_once(db_url: str) -> None:
    settings = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=0, table_message_interval_s=10.0)
    with TestClient(create_app(db_url, settings)) as client:
        table_id, creator = _open_table(client, players=2)
        with client.websocket_connect(f"/ws/tables/{table_id}") as ws:
            ws.send_json({"type": "hello", "token": creator})
            assert ws.receive_json()["type"] == "welcome"
            sign_up(client, "Sol")
            began = time.monotonic()
            joined = client.post(f"/api/tables/{table_id}/join", headers=ORIGIN, json={"name": "x"})
            assert joined.status_code == 200, joined.text
            # the join's own announcement waits out the 10 s interval; the bind's `table` message does not
            while True:
                message = ws.receive_json()
                assert message["type"] in ("snapshot", "table"), message
                if message["type"] == "table" and message["table"]["seats"][1]["kind"] == "person":
                    break
            assert time.monotonic() - began < 5.0
            assert message["table"]["seats"][1]["name"] == "Sol"
            assert message["table"]["seats"][1]["account"] == "Sol"


def test_results_go_to_the_accounts_holding_seats_and_never_a_deleted_one(client: TestClient) -> None:
    gone = sign_up_cookies(client, "Gone")
    gone_id = _account_id(client, "Gone")
    kim = sign_up_cookies(client, "Kim")
    kim_id = _account_id(client, "Kim")
    made = client.post("/api/tables", headers=ORIGIN, json={"game": "anemone", "options": {"players": 3}}).json()
    table_id = made["table"]["id"]
    guest = _guest_join(client, table_id, "guest", seat=1)
    late = _guest_join(client, table_id, "late", seat=2)
    # Gone's join reached the owner just after Gone deleted the account: the row is written, yet counts for nothing
    assert as_(client, gone).delete("/api/me", headers=ORIGIN).status_code == 204
    manager, store = _state(client)
    table = manager.tables[table_id]
    args = {"seat": 2, "token": late, "account_id": gone_id, "account_name": "Gone"}
    _call(client, bind_seat_here, store, table, args)
    assert _bound(client, table_id) == [(0, kim_id), (2, gone_id)]
    hashes = {s.row.seat: s.row.token_hash for s in table.seats}
    assert _call(client, holding_accounts, store, table_id, hashes) == {0: kim_id}
    assert hashes[1] == hash_token(guest)
    # another table's rows are not this table's
    other = as_(client, kim).post("/api/tables", headers=ORIGIN,
                                  json={"game": "anemone", "options": {"players": 2}}).json()
    assert _call(client, holding_accounts, store, other["table"]["id"],
                 {s.row.seat: s.row.token_hash for s in manager.tables[other["table"]["id"]].seats}) == {0: kim_id}
    assert _call(client, holding_accounts, store, "nosuchtable", hashes) == {}


def test_seats_of_account_are_those_at_live_tables(client: TestClient) -> None:
    sign_up(client, "Rae")
    rae = _account_id(client, "Rae")
    ids = []
    for _ in range(3):
        made = client.post("/api/tables", headers=ORIGIN, json={"game": "anemone", "options": {"players": 2}})
        assert made.status_code == 201, made.text
        ids.append(made.json()["table"]["id"])
    manager, store = _state(client)
    closed = manager.tables[ids[2]]
    _call(client, manager._end, closed, "closed")  # nobody connected: the sweep's close
    assert closed.status == "closed" and (0, rae) in _bound(client, ids[2])
    assert _call(client, seats_of_account, store, rae) == {ids[0]: 0, ids[1]: 0}
    assert _call(client, seats_of_account, store, rae, [ids[1]]) == {ids[1]: 0}
    assert _call(client, seats_of_account, store, rae, [ids[2], "nosuchtable"]) == {}


def test_a_cookie_sent_from_another_site_joins_as_a_guest(client: TestClient) -> None:
    sign_up(client, "Ivy")
    made = client.post("/api/tables", headers=ORIGIN, json={"game": "anemone", "options": {"players": 2}}).json()
    table_id = made["table"]["id"]
    # the signed-in player's browser, led by another site: not "already holding a seat", a guest's seat
    evil = client.post(f"/api/tables/{table_id}/join", headers={"Origin": "http://evil.example"},
                       json={"name": "lured"})
    assert evil.status_code == 200, evil.text
    assert evil.json()["seat"] == 1 and seat_accounts(evil.json()["table"]) == ["Ivy", None]
    assert evil.json()["table"]["seats"][1]["name"] == "lured"


def test_an_account_seat_token_looks_like_a_guests(client: TestClient) -> None:
    guest_table, guest_token = _open_table(client, players=2)
    sign_up(client, "Uma")
    made = client.post("/api/tables", headers=ORIGIN, json={"game": "anemone", "options": {"players": 2}}).json()
    assert made["token"] != guest_token and guest_table != made["table"]["id"]
    for token in (guest_token, made["token"]):  # 256 bits, URL-safe, no padding: the same in a link or a header
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}", token), token


def test_abandoned_tables_name_their_accounts_in_one_query_per_page(db_url: str) -> None:
    settings = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=5000, abandon_after_s=0.2,
                        expiry_check_s=0.1)
    with TestClient(create_app(db_url, settings)) as client:
        sign_up(client, "Away")
        ids = []
        for _ in range(2):
            made = client.post("/api/tables", headers=ORIGIN, json={
                "game": "anemone", "options": {"players": 2, "rounds": 1}, "autostart": False, "grace_seconds": 0,
                "seats": [{"kind": "open"}, {"kind": "bot", "bot": "random"}]}).json()
            ids.append(made["table"]["id"])
            assert client.post(f"/api/tables/{ids[-1]}/start", json={"token": made["token"]}).status_code == 200
        m = ps.match_seats
        wait_for(lambda: len(_rows(client, select(m.c.seat).where(m.c.table_id.in_(ids)))) >= 4, 30,
                 f"tables {ids} to be abandoned and their results stored", every=0.1)
        for table_id in ids:
            shown = client.get(f"/api/tables/{table_id}").json()
            assert shown["status"] == "abandoned" and seat_accounts(shown) == ["Away", "random"], shown
        _manager, store = _state(client)
        with Statements(store.engine) as seen:
            listed = {t["id"]: t for t in client.get("/api/finished").json()}
        statements = seen.naming("match_seats")
        assert [seat_accounts(listed[table_id]) for table_id in ids] == [["Away", "random"]] * 2
        assert len(statements) == 1, statements  # the page's accounts in one query, whatever its size
