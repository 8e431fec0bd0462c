"""Player pages that add up (``GET /api/players/{name}`` and ``.../matches``, server/players/leaderboards.py and
results.py), on a real server and SQLite: people and bots play real Enemy Anemone matches to the end, one bot level
on several seats of a match, one table unrated (its creator chose the seed); then on every player's page the
summary's match count, the chart's points and the list of matches agree, and a match is one row however many seats
its player held."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from starlette.testclient import TestClient

from clients import play_out
from polling import wait_for, wait_status

ORIGIN = {"Origin": "http://testserver"}
BOT = "heuristic"

pytestmark = pytest.mark.usefixtures("cheap_hashes")  # conftest.py: real Argon2id, small parameters




def sign_up(client: TestClient, name: str) -> None:
    client.cookies.clear()
    made = client.post("/api/accounts", json={"name": name, "password": "long enough"}, headers=ORIGIN)
    assert made.status_code in (200, 201), made.text


def sign_in(client: TestClient, name: str) -> None:
    client.cookies.clear()
    signed = client.post("/api/session", json={"name": name, "password": "long enough"}, headers=ORIGIN)
    assert signed.status_code == 200, signed.text


def play_match(client: TestClient, people: list[str], bots: int, seed: int | None = None) -> str:
    """A 1-round Enemy Anemone match of ``people`` (signed in, one seat each, in that order) and ``bots`` seats of
    the bot level :data:`BOT`, played to the end (every person plays); its table id."""
    sign_in(client, people[0])
    body: dict[str, Any] = {
        "game": "anemone",
        "options": {"players": len(people) + bots, "rounds": 1},
        "name": people[0],
        "seats": [{"kind": "open"}] * len(people) + [{"kind": "bot", "bot": BOT}] * bots,
    }
    if seed is not None:
        body["seed"] = seed
    made = client.post("/api/tables", json=body, headers=ORIGIN)
    assert made.status_code == 201, made.text
    table_id, tokens = made.json()["table"]["id"], [made.json()["token"]]
    for person in people[1:]:
        sign_in(client, person)
        joined = client.post(f"/api/tables/{table_id}/join", json={"name": person}, headers=ORIGIN)
        assert joined.status_code == 200, joined.text
        tokens.append(joined.json()["token"])
    started = client.post(f"/api/tables/{table_id}/start", json={"token": tokens[0]})
    assert started.status_code == 200, started.text
    with ThreadPoolExecutor(len(tokens)) as pool:  # every person plays their own seat at once
        for done in [pool.submit(play_out, client, table_id, token) for token in tokens]:
            done.result()
    wait_status(client, table_id)
    return table_id


def page_of(client: TestClient, name: str, matches: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The anemone part of ``name``'s page and every one of their matches (paged 2 at a time, so the paging by
    match is checked too), once ``matches`` matches are recorded."""

    def recorded() -> dict[str, Any] | None:
        game = client.get(f"/api/players/{name}").json()["games"].get("anemone")
        return game if game and game["matches"] >= matches else None

    game = wait_for(recorded, 30, f"{matches} matches on {name}'s page")
    rows: list[dict[str, Any]] = []
    cursor = ""
    while True:
        page = client.get(f"/api/players/{name}/matches?limit=2{cursor}").json()
        rows += page["matches"]
        if page["next"] is None:
            return game, rows
        cursor = f"&before={page['next']}"


def test_a_players_summary_chart_and_rows_agree(client: TestClient) -> None:
    for name in ("Ada", "Ben"):
        sign_up(client, name)
    tables = [
        play_match(client, ["Ada", "Ben"], bots=2),  # two people and the bot level on two seats
        play_match(client, ["Ada"], bots=3),  # the bot level on three seats
        play_match(client, ["Ada"], bots=1, seed=7),  # a chosen deal: recorded, not rated
    ]
    client.cookies.clear()
    expected = {"Ada": (tables, tables[:2]), "Ben": (tables[:1], tables[:1]), BOT: (tables, tables[:2])}
    for name, (played, rated) in expected.items():
        game, rows = page_of(client, name, len(played))
        # one row per match, newest first (by finish time, then table id), however many seats the player held
        assert sorted(row["table"] for row in rows) == sorted(played), name
        assert rows == sorted(rows, key=lambda r: (r["finished"], r["table"]), reverse=True), name
        # the summary counts the same matches as the list, and the chart has one point per rated match
        assert game["matches"] == len(rows) == len(played), name
        assert game["rating"]["matches"] == len(game["history"]) == len(rated), name
        assert [point["table"] for point in game["history"]] == rated, name
        assert sorted(row["table"] for row in rows if row["ordinal_after"] is not None) == sorted(rated), name
        for point in game["history"]:  # the chart's point is the row's rating after the match
            row = next(r for r in rows if r["table"] == point["table"])
            assert row["ordinal_after"] == point["ordinal"], name
        assert game["wins"] == sum(1 for row in rows if row["won"]), name
        assert game["rating"]["ordinal"] == game["history"][-1]["ordinal"], name
        for row in rows:
            mine = [s for s in row["seats"] if s["seat"] in row["mine"]]
            assert row["seat"] in row["mine"] and row["rank"] == min(s["rank"] for s in mine), name
            assert not row["won"] or row["rank"] == 1, name  # a match won is won by the best placed seat
            assert len({s["seat"] for s in row["seats"]}) == row["players"] == len(row["seats"]), name
    # the bot level held two and three seats: each match is one row that lists those seats
    _, bot_rows = page_of(client, BOT, 3)
    assert {row["table"]: row["mine"] for row in bot_rows} == dict(
        zip(tables, [[2, 3], [1, 2, 3], [1]], strict=True)
    )
    # the leaderboard counts the rated matches, as the chart does
    board = {row["name"]: row for row in client.get("/api/leaderboard?game=anemone").json()}
    assert {name: board[name]["matches"] for name in expected} == {"Ada": 2, "Ben": 1, BOT: 2}
