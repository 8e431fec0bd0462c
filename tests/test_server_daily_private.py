"""A daily deal's tables stay private while their day lasts (``server/lobby/daily_private.py``; docs/protocol.md,
"The daily deal"): everyone plays the same cards, so nobody may learn them from another player's try before their
own: no lobby listing, no spectators, no record, replay or review until one's own attempt is over, or the day."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from cardtable.server.core.errors import TableError
from cardtable.server.lobby.manager import Manager
from cardtable.server.table.connections import Connection
from clients import ORIGIN, MakeClient, as_account, fast_settings, play_out, sign_up
from cluster_harness import opened_managers
from polling import clear_of_midnight_utc, wait_for, wait_status
from services import Postgres, new_database

pytestmark = pytest.mark.usefixtures("cheap_hashes")



@pytest.fixture(autouse=True)
def _one_day() -> None:
    """These tests read "today" more than once: none starts in the last minutes of a UTC day."""
    clear_of_midnight_utc(120.0)


def settings(**knobs: Any) -> Any:
    """Fast bots, a long grace (a daily table nobody connects to waits for its person) and lobby reads enough for
    every read below."""
    return fast_settings(
        default_grace_s=3600.0, lobby_reads_per_second=1000.0, lobby_read_burst=1000, **knobs
    )


def play(client: TestClient, name: str = "player") -> dict[str, Any]:
    """Seat the requester at a new table of today's Enemy Anemone daily deal."""
    answer = client.post("/api/daily/anemone/play", json={"name": name}, headers=ORIGIN)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def start(client: TestClient, table_id: str, token: str) -> None:
    """Say ``hello`` with the seat's token (which starts a table of one person and bots) until its snapshot, then
    close the connection, leaving the seat held and the table in play."""
    with client.websocket_connect(f"/ws/tables/{table_id}") as ws:
        ws.send_json({"type": "hello", "token": token})
        while ws.receive_json()["type"] != "snapshot":
            pass
    wait_status(client, table_id, ("playing",))


def finish(client: TestClient, seated: dict[str, Any]) -> None:
    """Play the seat to the end of its match (a legal-move player) and wait for the daily result to be stored."""
    play_out(client, seated["table"]["id"], seated["token"])
    wait_status(client, seated["table"]["id"])


def listed(client: TestClient, path: str) -> set[str]:
    """The ids of the tables of a lobby list (one page is all these tests make)."""
    answer = client.get(path)
    assert answer.status_code == 200, answer.text
    return {t["id"] for t in answer.json()}


def lobby(client: TestClient) -> set[str]:
    """Every table id the lobby lists: open, in play and finished."""
    return (
        listed(client, "/api/tables?status=open")
        | listed(client, "/api/tables?status=playing")
        | listed(client, "/api/finished")
    )


def watch(client: TestClient, table_id: str) -> dict[str, Any]:
    """A spectator's ``hello`` at ``table_id``: the first message answered (``welcome`` or ``error``)."""
    with client.websocket_connect(f"/ws/tables/{table_id}") as ws:
        ws.send_json({"type": "hello", "token": None})
        return dict(ws.receive_json())


def refused_spectator(client: TestClient, table_id: str) -> None:
    """A spectator's ``hello`` is refused with ``daily.private`` and the connection closed."""
    with client.websocket_connect(f"/ws/tables/{table_id}") as ws:
        ws.send_json({"type": "hello", "token": None})
        message = ws.receive_json()
        assert message["type"] == "error" and message["code"] == "daily.private", message
        assert message["params"]["table"] == table_id
        with pytest.raises(WebSocketDisconnect):
            ws.receive_json()


READS = ("record", "replay", "review?seat=0")
"""The routes that show a finished table's cards."""


def reads(client: TestClient, table_id: str) -> list[tuple[int, str | None]]:
    """``(status, code)`` of each of :data:`READS` of ``table_id``."""
    out = []
    for read in READS:
        answer = client.get(f"/api/tables/{table_id}/{read}")
        out.append((answer.status_code, answer.json().get("code") if answer.status_code != 200 else None))
    return out


PRIVATE = [(403, "daily.private")] * len(READS)
OPEN = [(200, None)] * len(READS)


def finished_result(client: TestClient) -> dict[str, Any] | None:
    you = client.get("/api/daily/anemone").json()["you"]
    return you if you is not None and you["score"] is not None else None


@pytest.mark.slow
def test_a_daily_table_stays_private_until_the_day_is_over_or_ones_own_attempt_is(
    make_client: MakeClient, db_url: str
) -> None:
    client = make_client(settings(), db_url)
    ana = sign_up(client, "ana")
    seated_ana = play(client)
    ana_table = seated_ana["table"]["id"]
    start(client, ana_table, seated_ana["token"])

    # In play: another account neither sees it in the lobby nor watches it; the seat's own TABLE stays readable.
    bo = sign_up(client, "bo")
    assert ana_table not in lobby(client)
    refused_spectator(client, ana_table)
    assert client.get(f"/api/tables/{ana_table}").status_code == 200
    as_account(client, None)
    refused_spectator(client, ana_table)

    # Finished: nobody who has not finished today's deal reads its record, replay or review.
    as_account(client, ana)
    finish(client, seated_ana)
    wait_for(lambda: finished_result(client), 30, "ana's result")
    assert reads(client, ana_table) == OPEN  # ana's own, her attempt over
    as_account(client, bo)
    assert reads(client, ana_table) == PRIVATE
    assert ana_table not in lobby(client)
    as_account(client, None)
    assert reads(client, ana_table) == PRIVATE
    refusal = client.get(f"/api/tables/{ana_table}/replay").json()
    assert refusal["params"] == {"table": ana_table, "date": client.get("/api/daily/anemone").json()["date"]}

    # A guest's own daily table is private too, even to that guest (these routes take no seat token).
    seated_guest = play(client, "guest")
    guest_table = seated_guest["table"]["id"]
    start(client, guest_table, seated_guest["token"])
    assert guest_table not in lobby(client)

    # Bo's attempt started, not over: still private; once over, the day's best replay and bo's own open.
    as_account(client, bo)
    seated_bo = play(client)
    start(client, seated_bo["table"]["id"], seated_bo["token"])
    assert reads(client, ana_table) == PRIVATE
    finish(client, seated_bo)
    wait_for(lambda: finished_result(client), 30, "bo's result")
    best = client.get("/api/daily/anemone").json()["best"]["table"]
    assert best in (ana_table, seated_bo["table"]["id"])
    for table_id in (best, ana_table, seated_bo["table"]["id"]):
        assert reads(client, table_id) == OPEN
    assert client.get(f"/api/tables/{best}/replay").json()["record"]["hands"]
    as_account(client, None)
    assert reads(client, best) == PRIVATE  # still, for a guest
    assert ana_table not in lobby(client)

    # The next day (UTC) everyone may: the finished tables are listed and read, a table still in play watched.
    client.app.state.clock.shift(days=1)  # type: ignore[attr-defined]
    assert reads(client, ana_table) == OPEN
    assert {ana_table, seated_bo["table"]["id"]} <= listed(client, "/api/finished")
    assert watch(client, guest_table)["type"] == "welcome"


def test_a_table_that_is_not_a_daily_deal_is_listed_watched_and_read_as_before(
    make_client: MakeClient, db_url: str
) -> None:
    client = make_client(settings(), db_url)
    sign_up(client, "cy")
    made = client.post(
        "/api/tables",
        json={
            "game": "anemone",
            "options": {"players": 2, "rounds": 1},
            "seats": [{"kind": "open"}, {"kind": "bot", "bot": "heuristic"}],
        },
        headers=ORIGIN,
    )
    assert made.status_code == 201, made.text
    table_id = made.json()["table"]["id"]
    start(client, table_id, made.json()["token"])
    sign_up(client, "dee")  # another account, with no daily attempt
    assert table_id in listed(client, "/api/tables?status=playing")
    assert watch(client, table_id)["type"] == "welcome"
    play_out(client, table_id, made.json()["token"])
    wait_status(client, table_id)
    assert reads(client, table_id) == OPEN
    assert table_id in listed(client, "/api/finished")
    as_account(client, None)
    assert reads(client, table_id) == OPEN


@pytest.fixture
async def managers(postgres: Postgres, redis_url: str) -> AsyncIterator[Callable[[], Awaitable[Manager]]]:
    """Server processes sharing one PostgreSQL database and Redis (each a store, a cluster member and a manager)."""
    settings = fast_settings(default_grace_s=3600.0)
    async with opened_managers(new_database(postgres), redis_url, settings) as open_one:
        yield open_one


async def test_several_processes_list_no_daily_table_and_its_owner_refuses_its_spectators(
    managers: Callable[[], Awaitable[Manager]],
) -> None:
    """Several processes list the lobby from the database: a daily table in play is left out there too, until its
    day is over; a spectator's ``hello`` reaches the table's owner, which refuses it."""
    a, b = await managers(), await managers()
    today = a.clock.today().isoformat()
    seats = [{"kind": "open"}, {"kind": "bot", "bot": "random"}]
    daily, _, daily_token = await a.create(
        "anemone", {"players": 2, "rounds": 1}, seats, "ana", 7, 60.0, daily=today
    )
    other, _, other_token = await a.create("anemone", {"players": 2, "rounds": 1}, seats, "bo", None, 60.0)
    await b.start(daily.id, daily_token)
    await b.start(other.id, other_token)
    for manager in (a, b):
        playing = {t["id"] for t in (await manager.list_tables("playing"))[0]}
        assert other.id in playing and daily.id not in playing
    with pytest.raises(TableError) as refused:
        await a.hello(daily, Connection(), None)
    assert (refused.value.status, refused.value.code) == (403, "daily.private")
    assert not daily.spectators

    b.clock.shift(days=1)  # another day at b: the table is like any other
    assert daily.id in {t["id"] for t in (await b.list_tables("playing"))[0]}
