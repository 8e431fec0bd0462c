"""Play now, tables that start by themselves, and leaving during a game (docs/protocol.md, "HTTP lobby")."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from starlette.testclient import TestClient

from cardtable.server.core.settings import Settings
from clients import MakeClient, fast_settings
from polling import wait_status


def play_settings(**knobs: float) -> Settings:
    """:func:`fast_settings` with 60 s of grace and before Play now and solo tables start; ``knobs`` override."""
    return fast_settings(**{"default_grace_s": 60, "play_now_start_s": 60, "solo_start_s": 60, **knobs})


@pytest.fixture
def client(make_client: MakeClient) -> TestClient:
    return make_client(play_settings())


def play(client: TestClient, game: str, name: str) -> dict[str, Any]:
    response = client.post("/api/play", json={"game": game, "name": name})
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


@pytest.mark.parametrize(("game", "bot"), [("nerts", "greedy:medium"), ("anemone", "ismcts:medium")])
def test_play_now_makes_a_bot_table_that_the_next_person_joins(client: TestClient, game: str, bot: str) -> None:
    first = play(client, game, "ana")
    table = first["table"]
    assert first["seat"] == 0 and first["invite"] == f"/?table={table['id']}" and first["token"]
    assert table["game"] == game and table["status"] == "open" and table["options"]["players"] == 4
    assert table["seats"][0]["kind"] == "person" and table["seats"][0]["name"] == "ana"
    assert [s["kind"] for s in table["seats"][1:]] == ["bot"] * 3
    assert all(s["bot"] == bot and s["replaceable"] for s in table["seats"][1:])
    assert 55_000 <= table["starts_in_ms"] <= 60_000 and table["starts_at"] > time.time() * 1000
    second = play(client, game, "bo")
    assert second["table"]["id"] == table["id"] and second["seat"] == 1
    seats = second["table"]["seats"]
    assert seats[1]["kind"] == "person" and seats[1]["name"] == "bo" and "bot" not in seats[1]
    assert [s["kind"] for s in seats] == ["person", "person", "bot", "bot"]
    # an invite link may take a bot seat too, by number
    third = client.post(f"/api/tables/{table['id']}/join", json={"name": "cy", "seat": 3}).json()
    assert third["seat"] == 3 and third["table"]["seats"][3]["kind"] == "person"
    fourth = play(client, game, "di")
    assert fourth["seat"] == 2 and fourth["table"]["id"] == table["id"]
    fifth = play(client, game, "ed")  # the table is full of people: a new one
    assert fifth["table"]["id"] != table["id"] and fifth["seat"] == 0
    other_game = play(client, "anemone" if game == "nerts" else "nerts", "fa")
    assert other_game["table"]["id"] not in (table["id"], fifth["table"]["id"])


def test_play_now_refuses_an_unknown_game(client: TestClient) -> None:
    response = client.post("/api/play", json={"game": "chess", "name": "ana"})
    assert response.status_code == 422
    assert response.json()["code"] == "game.unknown" and response.json()["params"] == {"game": "chess"}
    assert client.post("/api/play", json={"game": "nerts", "name": ""}).json()["code"] == "request.invalid"


@pytest.mark.parametrize("game", ["nerts", "anemone"])
def test_a_play_now_table_starts_by_itself(make_client: MakeClient, game: str) -> None:
    with make_client(play_settings(play_now_start_s=0.4)) as client:
        made = play(client, game, "ana")
        tid = made["table"]["id"]
        assert made["table"]["status"] == "open"
        wait_status(client, tid, ("playing",), 30)
        table = client.get(f"/api/tables/{tid}").json()
        assert table["starts_at"] is None and not any(s.get("replaceable") for s in table["seats"])
        late = client.post(f"/api/tables/{tid}/join", json={"name": "bo"})
        assert late.status_code == 409 and late.json()["code"] == "table.started"
        assert play(client, game, "bo")["table"]["id"] != tid


def test_leaving_a_play_now_table_before_the_start_gives_the_seat_back_to_a_bot(client: TestClient) -> None:
    first = play(client, "nerts", "ana")
    second = play(client, "nerts", "bo")
    tid = first["table"]["id"]
    table = client.post(f"/api/tables/{tid}/leave", json={"token": second["token"]}).json()
    assert table["seats"][1] == {"seat": 1, "kind": "bot", "bot": "greedy:medium", "name": "bot-1",
                                 "replaceable": True}
    assert table["starts_at"] is not None
    assert play(client, "nerts", "cy")["seat"] == 1


@pytest.mark.parametrize("game", ["nerts", "anemone"])
def test_two_people_pressing_play_now_together_share_a_table(client: TestClient, game: str) -> None:
    barrier = threading.Barrier(2)
    answers: list[dict[str, Any]] = []

    def press(name: str) -> None:
        barrier.wait()
        answers.append(play(client, game, name))

    threads = [threading.Thread(target=press, args=(name,)) for name in ("ana", "bo")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(answers) == 2
    assert answers[0]["table"]["id"] == answers[1]["table"]["id"]
    assert sorted(a["seat"] for a in answers) == [0, 1]
    assert len(client.get("/api/tables").json()) == 1


def test_a_table_with_only_bots_besides_its_creator_starts_when_the_creator_connects(client: TestClient) -> None:
    made = client.post("/api/tables", json={
        "game": "anemone", "options": {"players": 2, "rounds": 1}, "name": "ana",
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": "random"}]}).json()
    tid = made["table"]["id"]
    assert made["table"]["status"] == "open" and made["table"]["starts_at"] is not None
    assert "replaceable" in made["table"]["seats"][1] and not made["table"]["seats"][1]["replaceable"]
    with client.websocket_connect(f"/ws/tables/{tid}") as ws:
        ws.send_json({"type": "hello", "token": made["token"]})
        assert ws.receive_json()["type"] == "welcome"
        while True:
            message = ws.receive_json()
            if message["type"] == "table" and message["table"]["status"] == "playing":
                break
    assert client.get(f"/api/tables/{tid}").json()["status"] == "playing"
    again = client.post(f"/api/tables/{tid}/start", json={"token": made["token"]})
    assert again.status_code == 409 and again.json()["code"] == "table.started"


def test_a_table_with_only_bots_besides_its_creator_starts_anyway_after_a_wait(make_client: MakeClient) -> None:
    with make_client(play_settings(solo_start_s=0.3)) as client:
        body = {"game": "nerts", "options": {"players": 2}, "seats": [{"kind": "bot", "bot": "greedy:easy"},
                                                                       {"kind": "open"}]}
        made = client.post("/api/tables", json=body).json()
        tid = made["table"]["id"]
        assert made["seat"] == 1
        wait_status(client, tid, ("playing",), 30)
        manual = client.post("/api/tables", json={**body, "autostart": False}).json()
        waiting = client.post("/api/tables", json={**body, "seats": [{"kind": "open"}, {"kind": "open"}]}).json()
        time.sleep(0.6)  # not a wait: twice solo_start_s, in which neither may start
        for other in (manual, waiting):
            table = client.get(f"/api/tables/{other['table']['id']}").json()
            assert table["status"] == "open" and table["starts_at"] is None


def test_leaving_during_a_game_puts_the_stand_in_at_once_and_the_link_brings_you_back(client: TestClient) -> None:
    made = client.post("/api/tables", json={"game": "anemone", "options": {"players": 2, "rounds": 1}, "name": "ana",
                                            "grace_seconds": 600}).json()
    tid = made["table"]["id"]
    bo = client.post(f"/api/tables/{tid}/join", json={"name": "bo"}).json()
    with client.websocket_connect(f"/ws/tables/{tid}") as ws:
        ws.send_json({"type": "hello", "token": made["token"]})
        assert ws.receive_json()["type"] == "welcome"
        assert client.post(f"/api/tables/{tid}/start", json={"token": bo["token"]}).status_code == 200
        left = client.post(f"/api/tables/{tid}/leave", json={"token": made["token"]}).json()
        assert left["status"] == "playing" and left["seats"][0]["standin"] == "heuristic"
        assert left["seats"][0]["connected"] is False  # the leaving connection only watches now
        while True:
            message = ws.receive_json()
            if message["type"] == "snapshot" and message["view"] is not None and message["view"]["seat"] is None:
                assert message["legal"] == [] and "hand" not in message["view"]
                break
    with client.websocket_connect(f"/ws/tables/{tid}") as ws:
        ws.send_json({"type": "hello", "token": made["token"]})
        welcome = ws.receive_json()
        assert welcome["type"] == "welcome" and welcome["seat"] == 0
        assert welcome["table"]["seats"][0]["standin"] is None and welcome["table"]["seats"][0]["connected"]
    assert client.post(f"/api/tables/{tid}/leave", json={"token": made["token"]}).status_code == 200


def test_games_give_each_bot_a_level_word(client: TestClient) -> None:
    games = {g["game"]: g for g in client.get("/api/games").json()}
    levels = {b["spec"]: b["level"] for g in games.values() for b in g["bots"]}
    assert levels["greedy:easy"] == "beginner" and levels["greedy:medium"] == "intermediate"
    assert levels["greedy:hard"] == "strong" and levels["ismcts:medium"] == "intermediate"
    assert levels["random"] == "random" and levels["heuristic"] == "simple" and levels["greedy"] == "instant"
    assert games["nerts"]["play_now_bot"] == "greedy:medium" and games["anemone"]["play_now_bot"] == "ismcts:medium"


def test_a_waiting_table_of_one_person_and_bots_still_starts_after_a_restart(make_client: MakeClient) -> None:
    with make_client(play_settings()) as client:
        made = play(client, "nerts", "ana")
        tid = made["table"]["id"]
        assert made["table"]["status"] == "open"
    with make_client(play_settings(solo_start_s=0.3)) as client:
        table = client.get(f"/api/tables/{tid}").json()
        assert table["status"] == "open" and not any(s.get("replaceable") for s in table["seats"])
        assert table["starts_at"] is not None
        wait_status(client, tid, ("playing",), 30)


def test_play_now_leaves_custom_tables_to_the_people_they_were_made_for(client: TestClient) -> None:
    """A table made with POST /api/tables waits for its own people: Play now never seats anyone there, even at an
    open seat, and makes its own table instead."""
    made = client.post("/api/tables", json={"game": "nerts", "options": {"players": 2}, "name": "ana",
                                            "seats": [{"kind": "open"}, {"kind": "open"}]})
    assert made.status_code == 201, made.text
    custom = made.json()["table"]["id"]
    seated = play(client, "nerts", "bo")
    assert seated["table"]["id"] != custom and seated["seat"] == 0
    assert client.get(f"/api/tables/{custom}").json()["seats"][1]["kind"] == "open"
