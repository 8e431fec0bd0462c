"""Play again (``server/lobby/again.py``, ``docs/protocol.md``, "Play again") and when a Play now table starts
(``server/lobby/play_now.py``, ``LobbyPresence``): through HTTP and WebSockets on a real server (SQLite), and across
two processes on PostgreSQL and Redis, where the finished table is owned by the other process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
from redis.asyncio import Redis
from starlette.testclient import TestClient

from cardtable.server.cluster.calls import RemoteTable
from cardtable.server.core.errors import TableError
from cardtable.server.lobby.manager import Manager
from cardtable.server.lobby.play_now import LOBBY_PRESENCE_S, LobbyPresence, visitor_key
from clients import MakeClient, fast_settings
from cluster_harness import opened_managers
from polling import until, wait_status
from services import Postgres, new_database

OPTIONS = {"players": 3, "rounds": 1}
"""A short Enemy Anemone match: one round of three seats."""


@pytest.fixture
def client(make_client: MakeClient) -> TestClient:
    return make_client(fast_settings(solo_start_s=0.2, default_grace_s=60))


def post(client: TestClient, path: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    response = client.post(path, json=body)
    assert response.status_code == status, response.text
    answer: dict[str, Any] = response.json()
    return answer


def finished_match(client: TestClient) -> tuple[str, str, str]:
    """An Enemy Anemone match of ana (seat 0), bo (seat 1) and a ``random`` bot (seat 2), played to its end (both
    people leave after the start: their stand-ins play at once). Returns the table id and ana's and bo's tokens."""
    made = post(
        client,
        "/api/tables",
        {
            "game": "anemone",
            "options": OPTIONS,
            "name": "ana",
            "seats": [{"kind": "open"}, {"kind": "open"}, {"kind": "bot", "bot": "random"}],
        },
        201,
    )
    tid, ana = made["table"]["id"], made["token"]
    bo = post(client, f"/api/tables/{tid}/join", {"name": "bo"})["token"]
    refused = post(client, f"/api/tables/{tid}/again", {"token": ana}, 409)
    assert refused["code"] == "again.not_over"
    post(client, f"/api/tables/{tid}/start", {"token": ana})
    post(client, f"/api/tables/{tid}/leave", {"token": ana})
    post(client, f"/api/tables/{tid}/leave", {"token": bo})
    wait_status(client, tid, ("finished",), 60)
    return tid, ana, bo


def receive_until(ws: Any, kind: str) -> dict[str, Any]:
    while True:
        message: dict[str, Any] = ws.receive_json()
        if message["type"] == kind:
            return message


def test_play_again_opens_one_table_with_the_same_seats_and_the_others_follow(client: TestClient) -> None:
    tid, ana, bo = finished_match(client)
    old = client.get(f"/api/tables/{tid}").json()
    with (
        client.websocket_connect(f"/ws/tables/{tid}") as seated,
        client.websocket_connect(f"/ws/tables/{tid}") as watching,
    ):
        seated.send_json({"type": "hello", "token": bo})
        watching.send_json({"type": "hello", "token": None})
        assert receive_until(seated, "welcome")["seat"] == 1
        assert receive_until(watching, "welcome")["seat"] is None

        first = post(client, f"/api/tables/{tid}/again", {"token": ana})
        new = first["table"]
        assert first["seat"] == 0 and first["token"] and first["invite"] == f"/?table={new['id']}"
        assert new["id"] != tid and new["status"] == "open" and new["game"] == "anemone"
        assert new["options"] == old["options"] and new["rated"]
        assert new["seats"][0]["kind"] == "person" and new["seats"][0]["name"] == "ana"
        assert new["seats"][1] == {"seat": 1, "kind": "open"}
        assert new["seats"][2]["kind"] == "bot" and new["seats"][2]["bot"] == old["seats"][2]["bot"]
        invitation = {"type": "again", "table": new["id"], "seat": 0, "name": "ana"}
        assert receive_until(seated, "again") == invitation
        assert receive_until(watching, "again") == invitation

    twice = post(client, f"/api/tables/{tid}/again", {"token": ana}, 409)
    assert twice["code"] == "again.followed" and twice["params"] == {"table": new["id"]}
    bad = post(client, f"/api/tables/{tid}/again", {"token": "not a token"}, 403)
    assert bad["code"] == "token.bad"

    second = post(client, f"/api/tables/{tid}/again", {"token": bo})  # joins that table, not another
    assert second["table"]["id"] == new["id"] and second["seat"] == 1
    assert [s["kind"] for s in second["table"]["seats"]] == ["person", "person", "bot"]
    assert second["table"]["seats"][1]["name"] == "bo"
    playing = wait_status(client, new["id"], ("playing",), 30)  # every seat taken: it starts by itself
    assert [s.get("name") for s in playing["seats"][:2]] == ["ana", "bo"]
    open_tables = client.get("/api/tables?status=open").json()
    assert all(t["id"] != new["id"] for t in open_tables)


def test_a_follower_whose_seat_was_taken_gets_another_or_a_clear_refusal(client: TestClient) -> None:
    tid, ana, bo = finished_match(client)
    new = post(client, f"/api/tables/{tid}/again", {"token": ana})["table"]
    post(client, f"/api/tables/{new['id']}/join", {"name": "cy", "seat": 1})  # someone from the lobby took it
    full = post(client, f"/api/tables/{tid}/again", {"token": bo}, 409)
    assert full["code"] == "table.full"
    retry = post(client, f"/api/tables/{tid}/again", {"token": bo}, 409)  # refused: bo may try again later
    assert retry["code"] == "table.full"


def test_play_again_of_one_person_and_bots_starts_when_they_connect(client: TestClient) -> None:
    made = post(
        client,
        "/api/tables",
        {
            "game": "anemone",
            "options": {"players": 2, "rounds": 1},
            "name": "ana",
            "seats": [{"kind": "bot", "bot": "random"}, {"kind": "open"}],
        },
        201,
    )
    tid, ana = made["table"]["id"], made["token"]
    assert made["seat"] == 1
    with client.websocket_connect(f"/ws/tables/{tid}") as ws:
        ws.send_json({"type": "hello", "token": ana})
        receive_until(ws, "welcome")
    post(client, f"/api/tables/{tid}/leave", {"token": ana})
    wait_status(client, tid, ("finished",), 60)
    again = post(client, f"/api/tables/{tid}/again", {"token": ana})
    assert again["seat"] == 1 and again["table"]["seats"][0]["bot"] == "random"
    assert again["table"]["starts_at"] is not None
    with client.websocket_connect(f"/ws/tables/{again['table']['id']}") as ws:
        ws.send_json({"type": "hello", "token": again["token"]})
        while (message := receive_until(ws, "table"))["table"]["status"] != "playing":
            pass
        assert message["table"]["seats"][1]["name"] == "ana"


def test_a_signed_in_seat_follows_to_the_next_table_as_the_account(
    client: TestClient, cheap_hashes: None
) -> None:
    origin = {"Origin": "http://testserver"}
    made = client.post("/api/accounts", json={"name": "Kim", "password": "long enough"}, headers=origin)
    assert made.status_code == 201, made.text
    kim = dict(client.cookies)
    table = client.post(
        "/api/tables",
        headers=origin,
        json={
            "game": "anemone",
            "options": OPTIONS,
            "seats": [{"kind": "open"}, {"kind": "open"}, {"kind": "bot", "bot": "random"}],
        },
    ).json()
    tid, kim_token = table["table"]["id"], table["token"]
    client.cookies.clear()
    bo = post(client, f"/api/tables/{tid}/join", {"name": "bo"})["token"]
    post(client, f"/api/tables/{tid}/start", {"token": bo})
    post(client, f"/api/tables/{tid}/leave", {"token": bo})
    client.cookies.update(kim)
    assert (
        client.post(f"/api/tables/{tid}/leave", json={"token": kim_token}, headers=origin).status_code == 200
    )
    wait_status(client, tid, ("finished",), 60)

    client.cookies.clear()
    guest = post(client, f"/api/tables/{tid}/again", {"token": bo})  # the guest opens it: a guest's seat
    assert guest["table"]["seats"][1]["account"] is None
    client.cookies.update(kim)
    followed = client.post(f"/api/tables/{tid}/again", json={"token": kim_token}, headers=origin)
    assert followed.status_code == 200, followed.text
    seat = followed.json()["table"]["seats"][0]
    assert followed.json()["seat"] == 0 and seat["account"] == "Kim" and seat["name"] == "Kim"
    assert followed.json()["token"] != kim_token
    assert [s["table"]["id"] for s in client.get("/api/me/seats").json()] == [guest["table"]["id"]]


# -- Play now starts at once when nobody else could join -----------------------------------------------------------


@pytest.fixture
def play_client(make_client: MakeClient) -> TestClient:
    return make_client(fast_settings(play_now_start_s=60, solo_start_s=60, default_grace_s=60))


@pytest.fixture
def neighbour(play_client: TestClient) -> Iterator[TestClient]:
    """Another client of the same server, from another address (10.9.8.7), on the server's running loop."""
    other = TestClient(play_client.app, client=("10.9.8.7", 50000))
    other.portal = play_client.portal
    yield other
    other.portal = None


def hello_status(client: TestClient, tid: str, token: str) -> str:
    """Connect to ``tid`` with ``token``; the table's status right after its snapshot (a table that starts on this
    hello is ``playing`` by then: the start is in the same step of its owner)."""
    with client.websocket_connect(f"/ws/tables/{tid}") as ws:
        ws.send_json({"type": "hello", "token": token})
        receive_until(ws, "snapshot")
        status: str = client.get(f"/api/tables/{tid}").json()["status"]
    return status


def test_play_now_alone_starts_as_soon_as_the_player_connects(play_client: TestClient) -> None:
    play_client.get("/api/tables?status=open")  # the player's own look at the lobby does not count
    play_client.get("/api/tables?status=open", headers={"X-Visitor": "bad id!"})  # nor a malformed visitor id
    made = post(play_client, "/api/play", {"game": "nerts", "name": "ana"})
    assert made["table"]["status"] == "open"
    assert hello_status(play_client, made["table"]["id"], made["token"]) == "playing"


@pytest.mark.parametrize("behind_one_address", [False, True])
def test_play_now_waits_while_another_person_is_in_the_lobby(
    play_client: TestClient, neighbour: TestClient, behind_one_address: bool
) -> None:
    if behind_one_address:  # bo's browser and ana's share an address; each browser sends its own X-Visitor
        seen = play_client.get("/api/tables?status=open", headers={"X-Visitor": "bo-browser-0001"})
        play_client.headers["X-Visitor"] = "ana-browser-0001"
    else:  # bo, at another address, sees the lobby
        seen = neighbour.get("/api/tables?status=open")
    assert seen.status_code == 200
    made = post(play_client, "/api/play", {"game": "nerts", "name": "ana"})
    table = made["table"]
    assert 50_000 <= table["starts_in_ms"] <= 60_000  # play_now_start_s: bo may still come
    assert hello_status(play_client, table["id"], made["token"]) == "open"
    joined = post(neighbour, "/api/play", {"game": "nerts", "name": "bo"})
    assert joined["table"]["id"] == table["id"] and joined["seat"] == 1


def test_play_now_of_another_game_does_not_make_the_next_one_wait(
    play_client: TestClient, neighbour: TestClient
) -> None:
    post(neighbour, "/api/play", {"game": "anemone", "name": "bo"})
    made = post(play_client, "/api/play", {"game": "nerts", "name": "ana"})
    assert hello_status(play_client, made["table"]["id"], made["token"]) == "playing"


async def test_lobby_presence_counts_other_visitors_within_the_window() -> None:
    now = [1000.0]
    presence = LobbyPresence(clock=lambda: now[0])
    assert not await presence.visit("a", ("lobby",))
    assert not await presence.visit("a", ("play:nerts", "lobby"))  # only a was here
    assert await presence.visit("b", ("play:nerts", "lobby"))
    assert not await presence.visit("a", ("lobby",))  # b pressed Play now of nerts; a reads the lobby only
    now[0] += 1.0
    for _ in range(3):  # a's visits do not push b out: the last visitor other than a is kept
        await presence.visit("a", ("play:nerts",))
    assert await presence.visit("a", ("play:nerts",))
    now[0] += LOBBY_PRESENCE_S + 0.5
    assert not await presence.visit("a", ("play:nerts", "lobby"))  # b's visit is too old now


# -- two processes: the finished table owned by the other one -----------------------------------------------------


@pytest.fixture
async def pg_url(postgres: Postgres) -> str:
    return new_database(postgres)


@pytest.fixture
async def managers(pg_url: str, redis_url: str) -> AsyncIterator[Callable[[], Awaitable[Manager]]]:
    async with opened_managers(pg_url, redis_url, fast_settings(solo_start_s=0.2)) as open_one:
        yield open_one


async def test_play_again_through_another_process_is_done_by_the_old_tables_owner(
    managers: Callable[[], Awaitable[Manager]],
    redis_url: str,
) -> None:
    """ana and bo finish a match at process a; both press Play again through process b: the first opens the new
    table at a (the old table's owner, which remembers it), the second joins that same table; the presence of
    the lobby is shared through Redis."""
    a, b = await managers(), await managers()
    old, _, ana = await a.create(
        "anemone",
        OPTIONS,
        [{"kind": "open"}, {"kind": "open"}, {"kind": "bot", "bot": "random"}],
        "ana",
        None,
        60,
    )
    _, _, bo = await b.join(old.id, "bo", None)
    refused = await _refusal(b.again(old.id, ana))
    assert (refused.status, refused.code) == (409, "again.not_over")
    await b.start(old.id, ana)
    await b.leave(old.id, ana)
    await b.leave(old.id, bo)
    await until(lambda: old.status == "finished", 60, "the end of the match")

    new, seat, token = await b.again(old.id, ana)
    assert isinstance(new, RemoteTable) and seat == 0 and token
    assert old.successor == new.id and new.id in a.tables and new.id not in b.tables
    made = a.tables[new.id]
    assert made.seat_of(token) == 0 and [s.row.kind for s in made.seats] == ["person", "open", "bot"]
    assert made.seats[2].row.bot == old.seats[2].row.bot and made.row.options == old.row.options

    followed, seat, token = await b.again(old.id, bo)
    assert isinstance(followed, RemoteTable) and followed.id == new.id and seat == 1
    assert made.seat_of(token) == 1
    await until(lambda: made.status == "playing", 30, "the new table's start")
    twice = await _refusal(b.again(old.id, bo))
    assert (twice.code, twice.params) == ("again.followed", {"table": new.id})

    client = Redis.from_url(redis_url)
    try:
        await client.delete("ct:lobby:lobby", "ct:lobby:play:nerts")
        assert not await b.in_lobby("10.0.0.1", "nerts")
        assert not await a.in_lobby("10.0.0.1")
        assert await a.in_lobby("10.0.0.2")  # 10.0.0.1 was in the lobby, seen through the other process
        assert await b.in_lobby("10.0.0.1", "nerts")
    finally:
        await client.aclose()


async def _refusal(operation: Awaitable[object]) -> TableError:
    with pytest.raises(TableError) as refused:
        await operation
    return refused.value


@pytest.mark.parametrize("filler", ["a", "-", "a!"])
def test_an_x_visitor_header_as_long_as_a_request_head_may_be_is_ignored_in_one_pass(filler: str) -> None:
    """``X-Visitor`` is client text: the largest header the guard lets through (``max_header_bytes``, 16 KiB) is
    checked by one linear ``fullmatch`` (a single bounded character class, no nested quantifier) and, being too
    long, is ignored: the visitor is the address alone. Under 64 characters the same id is kept."""
    longest = filler * (16384 // len(filler))
    assert visitor_key("203.0.113.7", longest) == "203.0.113.7"
    assert visitor_key("203.0.113.7", "a" * 64) == "203.0.113.7 " + "a" * 64
