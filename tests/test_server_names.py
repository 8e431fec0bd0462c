"""Names (cardtable.server.players.names, the accounts and lobby routes that take them), on SQLite and PostgreSQL:
invisible, control and bidi characters refused, look-alikes of a taken name refused (UTS #39 skeleton, unique in
the database, existing accounts given theirs by the migration), bot-like and reserved words refused for accounts
and guests alike, and NUL or control characters in a path, a query or a body answered with a coded 404 or 422,
never a 500."""

from __future__ import annotations

import asyncio
import doctest
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import create_async_engine
from starlette.testclient import TestClient

from cardtable.server.core.settings import Settings
from cardtable.server.edge.app import create_app
from cardtable.server.players import names
from cardtable.server.storage import players_schema as ps
from cardtable.server.storage.migrate import alembic_config
from cardtable.server.storage.store import Store
from clients import MakeClient, fast_settings

ORIGIN = {"Origin": "http://testserver"}
PASSWORD = "correct horse battery"
CATALOGUES = Path(__file__).resolve().parent.parent / "src" / "cardtable" / "web" / "static" / "i18n"

INVISIBLE = ["\u034f", "\ufe0f", "\u17b4", "\u3164", "\uffa0", "\u200b", "\u200d", "\u2060", "\u00ad", "\u202e",
             "\u2066", "\u200f", "\u061c", "\x00", "\x01", "\x1f", "\x7f", "\x85"]
"""Default-ignorable, bidi control and control characters, each refused inside a name."""

BOT_LIKE = ["greedy hard", "bot-1", "bot 1", "Bot1", "BOT_7", "heuristic", "Random", "ismcts medium", "expert 3",
            "봇 2", "ボット", "b0t-l", "gr\u0435edy h\u0430rd", "open seat", "Deleted player", "빈 자리"]
"""Names that read as a bot's or as the table's own words (or look like one): nobody takes them."""

pytestmark = pytest.mark.usefixtures("cheap_hashes")  # conftest.py: real Argon2id, small parameters


@pytest.fixture
def client(make_client: MakeClient, db_url: str) -> TestClient:
    """A server on SQLite, then on PostgreSQL; a 500 comes back as a response, not as an exception."""
    return make_client(fast_settings(), db_url, raise_server_exceptions=False)


@pytest.fixture
def lite(make_client: MakeClient) -> TestClient:
    """A server on SQLite only, for the many name cases that never reach the database."""
    return make_client(raise_server_exceptions=False)


def sign_up(client: TestClient, name: str) -> Any:
    return client.post("/api/accounts", json={"name": name, "password": PASSWORD}, headers=ORIGIN)


def guest_routes(client: TestClient, name: str) -> list[Any]:
    """Create, join and Play now, each with ``name`` as the guest's seat name."""
    tid = client.post("/api/tables", json={"game": "anemone", "name": "host"}).json()["table"]["id"]
    return [client.post("/api/tables", json={"game": "anemone", "name": name}),
            client.post(f"/api/tables/{tid}/join", json={"name": name}),
            client.post("/api/play", json={"game": "nerts", "name": name})]


def code(response: Any) -> tuple[int, str]:
    return response.status_code, response.json().get("code")


# -- the rule ---------------------------------------------------------------------------------------------------

def test_the_names_module_examples_run() -> None:
    result = doctest.testmod(names, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_the_reserved_words_cover_every_catalogue_word_for_a_bot_a_guest_an_open_seat_and_a_deleted_player() -> None:
    keys = {"seat.bot": names.BOT_WORDS, "player.bot": names.BOT_WORDS, "lobby.default_name": names.GUEST_WORDS,
            "player.guest": names.GUEST_WORDS, "seat.open": names.TABLE_WORDS, "player.deleted": names.TABLE_WORDS}
    for lang in ("en", "ko", "ja"):
        words = json.loads((CATALOGUES / f"{lang}.json").read_text(encoding="utf-8"))
        words |= json.loads((CATALOGUES / "players" / f"{lang}.json").read_text(encoding="utf-8"))
        for key, kept in keys.items():
            assert names.name_key(words[key]) in {names.name_key(w) for w in kept}, (lang, key, words[key])


@pytest.mark.parametrize("char", INVISIBLE, ids=lambda c: f"U+{ord(c):04X}")
def test_a_name_with_an_invisible_or_control_character_is_refused_for_accounts_and_guests(lite: TestClient,
                                                                                             char: str) -> None:
    for name in (f"ana{char}", f"a{char}na", char):
        assert code(sign_up(lite, name)) == (422, "name.invisible"), name
        for response in guest_routes(lite, name):
            assert code(response) == (422, "name.invisible"), (name, response.request.url)
    assert lite.get("/api/me").status_code == 401


@pytest.mark.parametrize("name", BOT_LIKE)
def test_bot_like_and_reserved_names_are_refused_for_accounts_and_guests(lite: TestClient, name: str) -> None:
    assert code(sign_up(lite, name)) == (422, "name.reserved")
    for response in guest_routes(lite, name):
        assert code(response) == (422, "name.reserved"), response.request.url


@pytest.mark.parametrize("name", ["Guest", "guest", "손님", "ゲスト"])
def test_the_word_for_a_guest_is_a_guests_default_name_and_no_accounts(lite: TestClient, name: str) -> None:
    assert code(sign_up(lite, name)) == (422, "name.reserved")
    for response in guest_routes(lite, name):
        assert response.status_code in (200, 201), response.text
        assert response.json()["table"]["seats"][response.json()["seat"]]["name"] == name


@pytest.mark.parametrize("name", ["Gu\u0435st", "GUEST1", "Guest 2"])
def test_only_the_word_itself_is_a_guests_name_not_a_look_alike_nor_a_numbered_one(lite: TestClient,
                                                                                  name: str) -> None:
    assert code(sign_up(lite, name)) == (422, "name.reserved")
    assert code(guest_routes(lite, name)[0]) == (422, "name.reserved")


@pytest.mark.parametrize("name", ["Mirae 미래", "random joe", "Botanist", "robot", "p0", "6", "a guest's name", "easy"])
def test_ordinary_names_stay_welcome(lite: TestClient, name: str) -> None:
    assert sign_up(lite, name).status_code == 201
    lite.delete("/api/session", headers=ORIGIN)
    for response in guest_routes(lite, name):
        assert response.status_code in (200, 201), response.text


def test_a_guest_name_keeps_the_account_rules_of_length_and_characters(lite: TestClient) -> None:
    for name, want in (("x" * 25, "account.name_invalid"), ("<b>", "account.name_invalid"),
                       ("two  spaces", "account.name_invalid")):
        for response in guest_routes(lite, name):
            assert code(response) == (422, want), response.request.url


# -- uniqueness by skeleton -------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["\u0430na", "\u0430n\u0430", "\u0251n\u0251", "\u0430\u0578a", "\uff21\u0578\u0430"])
def test_a_look_alike_of_a_taken_name_is_taken(client: TestClient, variant: str) -> None:
    assert sign_up(client, "ana").status_code == 201
    client.delete("/api/session", headers=ORIGIN)
    assert code(sign_up(client, variant)) == (409, "account.name_taken")


def test_look_alikes_with_digits_are_one_name(lite: TestClient) -> None:
    assert sign_up(lite, "b0b1").status_code == 201
    lite.delete("/api/session", headers=ORIGIN)
    assert code(sign_up(lite, "BOBl")) == (409, "account.name_taken")


def test_a_deleted_account_frees_its_skeleton(client: TestClient) -> None:
    assert sign_up(client, "ana").status_code == 201
    assert client.delete("/api/me", headers=ORIGIN).status_code == 204
    assert sign_up(client, "\u0430na").status_code == 201


def test_the_skeleton_is_unique_in_the_database(client: TestClient) -> None:
    assert sign_up(client, "ana").status_code == 201
    store: Store = client.app.state.store  # type: ignore[attr-defined]

    async def insert_look_alike() -> None:
        async with store.engine.begin() as conn:
            await conn.execute(sa.insert(ps.accounts).values(
                kind="person", name="\u0430na", name_key=names.name_key("\u0430na"),
                name_skeleton=names.name_skeleton("\u0430na"), password_hash="x", created="2026-01-01T00:00:00Z",
                deleted=0))

    with pytest.raises(IntegrityError):
        client.portal.call(insert_look_alike)  # type: ignore[union-attr]


async def _migrate_old_accounts(url: str) -> dict[str, str | None]:
    store = await Store.open(url)
    await store.close()
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: command.downgrade(alembic_config(c), "names_0001-1"))
            for i, name in enumerate(["ana", "\u0430na", "ben", "greedy hard"]):
                await conn.execute(sa.text(
                    "INSERT INTO accounts (kind, name, name_key, password_hash, created, deleted) "
                    "VALUES ('person', :name, :key, 'x', :created, 0)"),
                    {"name": name, "key": names.name_key(name), "created": f"2026-01-0{i + 1}T00:00:00Z"})
            await conn.execute(sa.text("INSERT INTO accounts (kind, name, created, deleted) "
                                       "VALUES ('bot', 'greedy:hard', '2026-01-01T00:00:00Z', 0)"))
            await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "heads"))
            rows = (await conn.execute(sa.text("SELECT name, name_skeleton FROM accounts"))).all()
            return {row.name: row.name_skeleton for row in rows}
    finally:
        await engine.dispose()


def test_the_migration_gives_existing_accounts_their_skeleton_and_the_older_of_two_look_alikes_keeps_it(
        db_url: str) -> None:
    skeletons = asyncio.run(_migrate_old_accounts(db_url))
    assert skeletons == {"ana": "ana", "\u0430na": None, "ben": "ben", "greedy hard": "greedy hard",
                         "greedy:hard": None}


# -- NUL and controls in paths, queries and bodies ----------------------------------------------------------------

@pytest.mark.parametrize("char", ["\x00", "\x01", "\x1b"], ids=["NUL", "SOH", "ESC"])
def test_a_control_character_anywhere_is_a_coded_refusal_never_a_500(client: TestClient, char: str) -> None:
    tid = client.post("/api/tables", json={"game": "anemone", "name": "host"}).json()["table"]["id"]
    bad = quote(f"a{char}b")
    cases = [
        ("GET", f"/api/tables/{bad}", None, 404, "table.not_found"),
        ("POST", f"/api/tables/{bad}/join", {"name": "x"}, 404, "table.not_found"),
        ("POST", f"/api/tables/{bad}/leave", {"token": "x"}, 404, "table.not_found"),
        ("POST", f"/api/tables/{bad}/start", {"token": "x"}, 404, "table.not_found"),
        ("GET", f"/api/tables/{bad}/record", None, 404, "table.not_found"),
        ("GET", f"/api/tables/{bad}/replay", None, 404, "table.not_found"),
        ("GET", f"/api/tables?cursor={bad}", None, 422, "request.invalid"),
        ("GET", f"/api/finished?cursor={bad}", None, 422, "request.invalid"),
        ("GET", f"/api/players/{bad}", None, 404, "player.unknown"),
        ("GET", f"/api/players/{bad}/matches", None, 404, "player.unknown"),
        ("GET", f"/api/players/random/matches?before={quote(f'2026{char}~x')}", None, 422, "player.bad_cursor"),
        ("POST", "/api/session", {"name": f"a{char}b", "password": PASSWORD}, 422, "name.invisible"),
        ("POST", "/api/accounts", {"name": f"a{char}b", "password": PASSWORD}, 422, "name.invisible"),
        ("POST", "/api/tables", {"game": "anemone", "name": f"a{char}b"}, 422, "name.invisible"),
        ("POST", f"/api/tables/{tid}/join", {"name": f"a{char}b"}, 422, "name.invisible"),
        ("POST", "/api/play", {"game": "nerts", "name": f"a{char}b"}, 422, "name.invisible"),
    ]
    for method, url, body, status, want in cases:
        response = client.request(method, url, json=body, headers=ORIGIN)
        assert code(response) == (status, want), (method, url, response.text[:200])
    # a bot level's matches exist once a bot played: the cursor check comes before the database all the same
    assert client.get(f"/api/tables/{tid}").status_code == 200


def test_a_socket_to_a_table_id_with_a_control_character_is_refused_in_a_cluster(postgres: Any, redis_url: str) -> None:
    """With several processes an unknown table is looked for in Redis and the database; an id holding a NUL never
    is (PostgreSQL refuses NUL in text): the socket gets ``table.not_found`` and 4404, not a reconnect (1012)."""
    from starlette.websockets import WebSocketDisconnect

    from services import new_database

    settings = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=0)
    with TestClient(create_app(new_database(postgres), settings, redis_url)) as cluster_client, \
            cluster_client.websocket_connect("/ws/tables/x%00y") as ws:
        reply = ws.receive_json()
        assert reply["type"] == "error" and reply["code"] == "table.not_found", reply
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == 4404
