"""Promises of the accounts code (issue 25: accounts, sessions, seats tied to accounts) that no other test checked,
found by mutation testing (``docs/testing.md``). A seat taken through one server process at a table another process
owns is tied to the account, refused as the account's second seat, or left a guest's when the owner does not
answer: these run two apps (or one app and a dead owner's lease) in this test process on a real PostgreSQL and
Redis, so that the code under test is this process's. Also: a signed-in player's seats count toward the address's
seat cap, refusals carry their params and reason, the sign-in limiter remembers only failures, times are UTC
whatever the server's time zone, and a restart marks the live seats of accounts with one query."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from redis import Redis as SyncRedis
from sqlalchemy import select
from starlette.requests import Request
from starlette.testclient import TestClient

from cardtable.server.cluster.calls import RemoteTable
from cardtable.server.cluster.lease import LEASE_PREFIX
from cardtable.server.core.errors import TableError
from cardtable.server.core.limits import MovingWindows
from cardtable.server.core.settings import Settings
from cardtable.server.edge.app import create_app
from cardtable.server.lobby.manager import Manager
from cardtable.server.lobby.seating import bind_seat
from cardtable.server.players.accounts import MAX_FAILURES_PER_ADDRESS
from cardtable.server.players.sessions import SESSION_DAYS
from cardtable.server.storage import players_schema as ps
from cardtable.server.storage.store import Store
from cardtable.server.table.seat_accounts import restore_seat_accounts
from clients import Statements
from services import Postgres, new_database, run_async

ORIGIN = {"Origin": "http://testserver"}
SETTINGS = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=0)

pytestmark = pytest.mark.usefixtures("cheap_hashes")  # conftest.py: real Argon2id, small parameters


@pytest.fixture
def two_apps(postgres: Postgres, redis_url: str) -> Iterator[tuple[TestClient, TestClient]]:
    """Two server processes' apps (each with its own store, manager and cluster) on one database and one Redis."""
    db = new_database(postgres)
    with (
        TestClient(create_app(db, SETTINGS, redis_url)) as a,
        TestClient(create_app(db, SETTINGS, redis_url)) as b,
    ):
        yield a, b


def _call(client: TestClient, fn: Any, *args: Any) -> Any:
    """Run the coroutine function ``fn(*args)`` on the app's event loop (where its store and cluster live)."""
    portal: Any = client.portal
    return portal.call(fn, *args)


def _request(client: TestClient, cookies: dict[str, str]) -> Request:
    """A same-site request to ``client``'s app carrying ``cookies``, as a join through that app has."""
    cookie = "; ".join(f"{k}={v}" for k, v in cookies.items())
    return Request(
        {
            "type": "http",
            "method": "POST",
            "path": "/api/tables",
            "query_string": b"",
            "scheme": "http",
            "server": ("testserver", 80),
            "client": ("testclient", 50000),
            "app": client.app,
            "headers": [
                (b"host", b"testserver"),
                (b"origin", b"http://testserver"),
                (b"cookie", cookie.encode()),
            ],
        }
    )


def _sign_up(client: TestClient, name: str) -> dict[str, str]:
    """Sign ``name`` up through ``client``; its session cookie (valid in every process: sessions are stored)."""
    client.cookies.clear()
    made = client.post("/api/accounts", json={"name": name, "password": "long enough"}, headers=ORIGIN)
    assert made.status_code == 201, made.text
    return dict(client.cookies)


def _bound(client: TestClient, table_id: str) -> list[tuple[int, str]]:
    """``[(seat, account name)]`` of the table's stored ``seat_accounts`` rows."""
    sa, a = ps.seat_accounts, ps.accounts
    store: Any = client.app.state.store  # type: ignore[attr-defined]

    async def go() -> list[tuple[int, str]]:
        async with store.engine.connect() as conn:
            rows = await conn.execute(
                select(sa.c.seat, a.c.name)
                .join(a, a.c.id == sa.c.account_id)
                .where(sa.c.table_id == table_id)
                .order_by(sa.c.seat)
            )
            return [(int(row.seat), str(row.name)) for row in rows.all()]

    return list(_call(client, go))


def _my_seats(client: TestClient, cookies: dict[str, str]) -> list[tuple[str, int, str]]:
    client.cookies.clear()
    client.cookies.update(cookies)
    reply = client.get("/api/me/seats")
    assert reply.status_code == 200, reply.text
    return [(s["table"]["id"], s["seat"], s["token"]) for s in reply.json()]


def test_a_seat_taken_through_another_process_is_tied_to_the_account(
    two_apps: tuple[TestClient, TestClient],
) -> None:
    """A signed-in player who joins, through one process, a table another process owns holds the seat as their
    account's, as if the owner had been asked directly: the answer shows the account's name on the seat, the token
    it gives is the account's (``GET /api/me/seats`` gives the same one in every process), the owner stores the tie
    and shows it, and that token holds the seat."""
    a, b = two_apps
    a.cookies.clear()
    # a guest's table: a owns it
    made = a.post("/api/tables", json={"game": "anemone", "options": {"players": 3}})
    assert made.status_code == 201, made.text
    table_id = made.json()["table"]["id"]
    assert table_id in a.app.state.manager.tables  # type: ignore[attr-defined]
    kim = _sign_up(b, "Kim")
    joined = b.post(f"/api/tables/{table_id}/join", json={"name": "visitor"}, headers=ORIGIN)
    assert joined.status_code == 200, joined.text
    body = joined.json()
    assert table_id not in b.app.state.manager.tables  # type: ignore[attr-defined]  # relayed, not taken over
    assert body["seat"] == 1
    assert [(s.get("name"), s.get("account")) for s in body["table"]["seats"]][:2] == [
        ("player", None),
        ("Kim", "Kim"),
    ]
    token = body["token"]
    for client in (a, b):  # the owner, and the process the player came through: the same seat and token
        assert _my_seats(client, kim) == [(table_id, 1, token)]
    assert _bound(a, table_id) == [(1, "Kim")]
    a.cookies.clear()
    shown = a.get(f"/api/tables/{table_id}").json()
    assert (shown["seats"][1]["name"], shown["seats"][1].get("account")) == ("Kim", "Kim")
    # the account's token holds the seat
    left = a.post(f"/api/tables/{table_id}/leave", json={"token": token})
    assert left.status_code == 200, left.text
    assert left.json()["seats"][1]["kind"] == "open" and _bound(a, table_id) == []


def test_an_account_holding_a_seat_is_refused_another_through_another_process(
    two_apps: tuple[TestClient, TestClient],
) -> None:
    """One account, one seat per table, also when the second seat's tie is asked for through another process (two
    joins at once, both past the lobby's check): the owner refuses it with 409 ``seat.account_held`` naming the
    seat held, and the seat just taken is left as it was, a guest's, held by its guest token."""
    a, b = two_apps
    kim = _sign_up(a, "Kim")
    made = a.post("/api/tables", json={"game": "anemone", "options": {"players": 3}}, headers=ORIGIN)
    assert made.status_code == 201, made.text
    table_id = made.json()["table"]["id"]
    b.cookies.clear()
    joined = b.post(f"/api/tables/{table_id}/join", json={"name": "visitor"})  # seat 1, as a guest so far
    assert joined.status_code == 200, joined.text
    guest_token = joined.json()["token"]
    with pytest.raises(TableError) as refused:
        _call(b, bind_seat, _request(b, kim), RemoteTable(joined.json()["table"]), 1, guest_token)
    assert (refused.value.status, refused.value.code, refused.value.params) == (
        409,
        "seat.account_held",
        {"seat": 0},
    )
    assert _bound(a, table_id) == [(0, "Kim")]
    a.cookies.clear()
    shown = a.get(f"/api/tables/{table_id}").json()
    assert [(s.get("name"), s.get("account")) for s in shown["seats"]][:2] == [
        ("Kim", "Kim"),
        ("visitor", None),
    ]
    left = a.post(f"/api/tables/{table_id}/leave", json={"token": guest_token})  # still the guest's token
    assert left.status_code == 200, left.text


def test_a_seat_stays_a_guests_when_the_tables_owner_does_not_answer(
    postgres: Postgres, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Should the process that owns the table not answer (it died, its lease not yet expired), the seat a signed-in
    player just took stays a guest's: the join keeps its table and guest token (no error for the player, nothing
    stored for the account), and the operator's log says which seat was not tied to which account, and why."""
    db = new_database(postgres)

    async def open_table() -> tuple[dict[str, Any], str]:  # stored by a process that then stopped
        store = await Store.open(db)
        manager = await Manager.open(store, SETTINGS)
        try:
            table, _seat, token = await manager.create("anemone", {"players": 2}, None, "visitor", None, 60)
            return table.to_dict(), token
        finally:
            await manager.close()
            await store.close()

    shown, token = run_async(open_table)
    redis = SyncRedis.from_url(redis_url)
    try:
        redis.set(LEASE_PREFIX + shown["id"], "gone-1:3", px=60_000)  # its owner's lease, fresh: no take here
    finally:
        redis.close()
    settings = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=0, call_timeout_s=0.3)
    with TestClient(create_app(db, settings, redis_url)) as client:
        kim = _sign_up(client, "Kim")
        kim_id = client.get("/api/me").json()["id"]
        remote = RemoteTable(shown)
        with caplog.at_level(logging.WARNING, logger="cardtable.server.lobby.seating"):
            table, held = _call(client, bind_seat, _request(client, kim), remote, 0, token)
        assert table is remote and held == token
        assert _bound(client, shown["id"]) == [] and _my_seats(client, kim) == []
    warnings = [r.getMessage() for r in caplog.records if r.name == "cardtable.server.lobby.seating"]
    assert warnings == [
        f"table {shown['id']}: seat 0 not tied to account {kim_id}: "
        "the server process holding this table did not answer: try again"
    ]


def test_a_signed_in_players_seats_count_toward_the_addresss_seat_cap(tmp_path: Path) -> None:
    """Signing in is no way around ``max_seats_per_address``: the seats of a signed-in player (held by the account's
    token, not the guest token the join first gave) count toward their address's cap, as a guest's do."""
    settings = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=0, max_seats_per_address=2)
    with TestClient(create_app(f"sqlite+aiosqlite:///{tmp_path / 'cap.db'}", settings)) as client:
        client.cookies.clear()
        others = [
            client.post("/api/tables", json={"game": "anemone", "options": {"players": 3}}).json()
            for _ in range(2)
        ]
        for made in others:  # the guest who made them leaves: the address holds no seat
            assert (
                client.post(
                    f"/api/tables/{made['table']['id']}/leave", json={"token": made["token"]}
                ).status_code
                == 200
            )
        _sign_up(client, "Kim")
        made = client.post("/api/tables", json={"game": "anemone", "options": {"players": 3}}, headers=ORIGIN)
        assert made.status_code == 201 and made.json()["table"]["seats"][0].get("account") == "Kim", made.text
        joined = client.post(
            f"/api/tables/{others[0]['table']['id']}/join", json={"name": "x"}, headers=ORIGIN
        )
        assert joined.status_code == 200 and joined.json()["table"]["seats"][0].get("account") == "Kim", (
            joined.text
        )
        refused = client.post(
            f"/api/tables/{others[1]['table']['id']}/join", json={"name": "x"}, headers=ORIGIN
        )
        assert refused.status_code == 409 and refused.json()["code"] == "table.seat_limit", refused.text


def _lite(tmp_path: Path) -> TestClient:
    return _lite_at(f"sqlite+aiosqlite:///{tmp_path / 'lite.db'}")


def _lite_at(db: str) -> TestClient:
    return TestClient(create_app(db, SETTINGS))


@pytest.mark.parametrize(
    ("name", "code", "params"),
    [
        ("greedy hard", "name.reserved", {"name": "greedy hard"}),
        ("a\u202eb", "name.invisible", {"char": "U+202E"}),
        ("a/b", "account.name_invalid", {"char": "/", "max": 24}),
        ("x" * 25, "account.name_invalid", {"char": None, "max": 24}),
    ],
)
def test_a_refused_account_name_carries_what_the_page_words_it_with(
    tmp_path: Path, name: str, code: str, params: dict[str, Any]
) -> None:
    """The server speaks codes, the page the player's language: a name refused at sign-up comes with its ``code``
    and the ``params`` the catalogues word it with (the name, the character, the longest length)."""
    with _lite(tmp_path) as client:
        refused = client.post("/api/accounts", json={"name": name, "password": "long enough"}, headers=ORIGIN)
        assert refused.status_code == 422, refused.text
        assert (refused.json()["code"], refused.json()["params"]) == (code, params)


def test_sign_ins_refused_for_an_addresss_failures_leave_nothing_behind(tmp_path: Path) -> None:
    """Once an address has failed too often, its further sign-ins (each under a new name) are refused (429) before
    any password is checked, and they do not grow the limiter's memory: only failures are remembered, so a flood
    of refused names costs the server nothing."""
    with _lite(tmp_path) as client:
        limiter = MovingWindows()
        client.app.state.sign_in_limiter = limiter  # type: ignore[attr-defined]
        for i in range(MAX_FAILURES_PER_ADDRESS):
            failed = client.post(
                "/api/session", json={"name": f"nobody{i}", "password": "long enough"}, headers=ORIGIN
            )
            assert failed.status_code == 401, failed.text
        remembered = set(limiter._failures)
        for i in range(30):
            refused = client.post(
                "/api/session", json={"name": f"someone{i}", "password": "long enough"}, headers=ORIGIN
            )
            assert refused.status_code == 429 and refused.json()["code"] == "account.rate_limited", (
                refused.text
            )
        assert set(limiter._failures) == remembered


def test_account_and_session_times_are_utc_whatever_the_servers_time_zone(tmp_path: Path) -> None:
    """Times are UTC (``...Z``) on a server whose local time zone is not: a new account's ``created`` on its player
    page is now in UTC, and its session lasts ``SESSION_DAYS`` from now (not hours more or less)."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "Etc/GMT+12"  # twelve hours behind UTC
    time.tzset()
    try:
        with _lite(tmp_path) as client:
            before = datetime.now(UTC).replace(microsecond=0)
            _sign_up(client, "Kim")
            after = datetime.now(UTC)
            created = datetime.strptime(
                client.get("/api/players/Kim").json()["created"], "%Y-%m-%dT%H:%M:%SZ"
            )
            assert before <= created.replace(tzinfo=UTC) <= after
            store: Any = client.app.state.store  # type: ignore[attr-defined]

            async def expiry() -> str:
                async with store.engine.connect() as conn:
                    return str((await conn.execute(select(ps.sessions.c.expires))).scalar_one())

            expires = datetime.strptime(_call(client, expiry), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
            days = timedelta(days=SESSION_DAYS)
            assert before + days <= expires <= after + days
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()


def test_a_request_from_another_site_with_the_cookie_is_refused_with_its_reason(tmp_path: Path) -> None:
    """Another site cannot act for a signed-in player (sign them out, delete the account): the refusal is 403
    ``account.cross_origin`` with a reason a person can read, and the session and the account stay."""
    with _lite(tmp_path) as client:
        _sign_up(client, "Kim")
        evil = {"Origin": "http://evil.example"}
        for refused in (client.delete("/api/session", headers=evil), client.delete("/api/me", headers=evil)):
            assert refused.status_code == 403, refused.text
            assert refused.json() == {
                "detail": "requests that change state must come from this site",
                "code": "account.cross_origin",
                "params": {},
            }
        assert client.get("/api/me").json()["name"] == "Kim"


def test_a_restart_marks_the_live_seats_of_accounts_that_also_hold_finished_ones(tmp_path: Path) -> None:
    """A server restarts whatever its database holds: seats tied to an account at tables that have finished since
    (their ties stay, for the results) are no reason to fail; the seats at the tables still open are marked as the
    account's again, read with one query for all the tables (not one per table)."""
    db = f"sqlite+aiosqlite:///{tmp_path / 'restart.db'}"
    game = {"game": "anemone", "options": {"players": 2}}
    with _lite_at(db) as client:
        _sign_up(client, "Kim")
        ended, *open_ids = [
            client.post("/api/tables", json=game, headers=ORIGIN).json()["table"]["id"] for _ in range(3)
        ]

    async def finish() -> None:
        store = await Store.open(db)
        try:
            await store.update_status(ended, "finished", finished="2026-11-25T00:00:00Z")
        finally:
            await store.close()

    run_async(finish)
    with _lite_at(db) as client:
        manager: Any = client.app.state.manager  # type: ignore[attr-defined]
        assert ended not in manager.tables and set(open_ids) <= set(manager.tables)
        for table_id in open_ids:
            assert [s.get("account") for s in client.get(f"/api/tables/{table_id}").json()["seats"]] == [
                "Kim",
                None,
            ]
        store: Any = client.app.state.store  # type: ignore[attr-defined]
        with Statements(store.engine) as statements:
            _call(client, restore_seat_accounts, store, manager.tables)
        reads = statements.naming("seat_accounts")
        assert len(reads) == 1, reads
