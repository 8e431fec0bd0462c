"""The daily deal (``server/lobby/daily.py``, ``daily_standings.py``, ``daily_routes.py``; docs/protocol.md, "The daily
deal"): everyone gets the same cards at seat 0 against the same bots, one attempt per account per day, duplicate
scoring, streaks, and a deal nobody can compute from the date without the server's secret."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cardtable.server.lobby.daily import daily_seed
from cardtable.server.lobby.daily_standings import matchpoints, percents, ranked, streak
from clients import ORIGIN, MakeClient, as_account, fast_settings, play_out, sign_up
from polling import clear_of_midnight_utc, wait_for, wait_status

pytestmark = pytest.mark.usefixtures("cheap_hashes")



@pytest.fixture(autouse=True)
def _one_day() -> None:
    """These tests read "today" more than once: none starts in the last minutes of a UTC day."""
    clear_of_midnight_utc(120.0)


def settings(**knobs: Any) -> Any:
    """Fast bots and a long grace: a daily table nobody connects to waits for its person (no stand-in plays)."""
    return fast_settings(default_grace_s=3600.0, **knobs)


def play(client: TestClient, game: str = "anemone", name: str = "player") -> dict[str, Any]:
    answer = client.post(f"/api/daily/{game}/play", json={"name": name}, headers=ORIGIN)
    assert answer.status_code == 200, answer.text
    assert answer.json()["seat"] == 0
    return dict(answer.json())


def first_hand(client: TestClient, seated: dict[str, Any]) -> list[str]:
    """Seat 0's cards in the first hand, as its snapshot shows them (the connection's ``hello`` starts the table);
    the connection then closes, leaving the seat held."""
    with client.websocket_connect(f"/ws/tables/{seated['table']['id']}") as ws:
        ws.send_json({"type": "hello", "token": seated["token"]})
        while True:
            message = ws.receive_json()
            if message["type"] == "snapshot" and message.get("view"):
                return sorted(message["view"]["hand"])


def play_seated(client: TestClient, seated: dict[str, Any], pick: int = 0) -> list[str]:
    """Play seat 0 to the end of the match with a legal-move player (``legal[pick]`` each time); seat 0's cards in
    the first hand."""
    cards = play_out(client, seated["table"]["id"], seated["token"], pick)
    wait_status(client, seated["table"]["id"])
    return cards


def record(client: TestClient, table_id: str) -> dict[str, Any]:
    answer = client.get(f"/api/tables/{table_id}/record")
    assert answer.status_code == 200
    return dict(answer.json())


def finished_you(client: TestClient) -> dict[str, Any] | None:
    you = client.get("/api/daily/anemone").json()["you"]
    return you if you is not None and you["score"] is not None else None


def no_cards(value: Any) -> None:
    """Nothing in ``value`` (an answer of the daily API) names a card or a hand."""
    text = str(value)
    for word in ("hand", "deal", "cards", "view"):
        assert f"'{word}'" not in text, text


@pytest.mark.slow
def test_two_accounts_play_the_same_deal_against_the_same_bots_and_are_scored_as_duplicate(
    make_client: MakeClient, db_url: str
) -> None:
    client = make_client(settings(daily_secret="s3cret"), db_url)
    info = client.get("/api/daily/anemone").json()
    assert info["game"] == "anemone" and info["options"] == {"players": 4, "rounds": 4}
    assert info["bots"] == ["ismcts:medium"] * 3 and info["played"] == 0 and info["you"] is None
    assert info["best"] is None and info["streak"] == 0
    assert date.fromisoformat(info["date"]).year >= 2026

    ana = sign_up(client, "ana")
    seated_ana = play(client)
    table_ana = seated_ana["table"]
    assert table_ana["rated"] is False and table_ana["seats"][0]["account"] == "ana"
    assert [s["bot"] for s in table_ana["seats"][1:]] == ["ismcts:medium"] * 3
    refused = client.post("/api/daily/anemone/play", json={"name": "ana"}, headers=ORIGIN)
    assert refused.status_code == 409 and refused.json()["code"] == "daily.played"
    cards_ana = play_seated(client, seated_ana)
    you = wait_for(lambda: finished_you(client), 30, "ana's result")
    assert (
        you["table"] == table_ana["id"] and you["finished"] and you["rank"] == 1 and you["percent"] == 100.0
    )
    assert client.get("/api/daily/anemone").json()["best"]["table"] == table_ana["id"]

    sign_up(client, "bo")
    assert client.get("/api/daily/anemone").json()["best"] is None  # not before bo has played
    seated_bo = play(client)
    cards_bo = play_seated(client, seated_bo)
    assert cards_ana == cards_bo and len(cards_ana) > 0
    wait_for(lambda: finished_you(client), 30, "bo's result")

    # The same moves at seat 0 met the same bot moves, all the way: the records are the same, action for action.
    first, second = record(client, table_ana["id"]), record(client, seated_bo["table"]["id"])
    assert [h["deal"] for h in first["hands"]] == [h["deal"] for h in second["hands"]]
    moves = [[(a["seat"], a["action"]) for a in h["actions"]] for h in first["hands"]]
    assert moves == [[(a["seat"], a["action"]) for a in h["actions"]] for h in second["hands"]]
    assert sum(1 for hand in moves for seat, _ in hand if seat != 0) > 20

    # A third account plays the same deal differently; a guest plays it too and is never in the standings.
    sign_up(client, "cy")
    play_seated(client, play(client), pick=-1)
    wait_for(lambda: finished_you(client), 30, "cy's result")
    as_account(client, None)
    guest = play(client, name="guest")
    assert guest["table"]["seats"][0]["account"] is None
    assert play(client, name="guest")["table"]["id"] != guest["table"]["id"]  # guests may try again
    play_seated(client, guest)

    board = client.get("/api/daily/anemone/standings").json()
    assert sorted(row["name"] for row in board) == ["ana", "bo", "cy"]
    assert sum(row["percent"] for row in board) == pytest.approx(50 * len(board))
    assert [row["score"] for row in board] == sorted((row["score"] for row in board), reverse=True)
    by_name = {row["name"]: row for row in board}
    assert (
        by_name["ana"]["score"] == by_name["bo"]["score"]
        and by_name["ana"]["percent"] == by_name["bo"]["percent"]
    )
    totals = {
        t: client.get(f"/api/tables/{t}").json()["totals"][0]
        for t in (table_ana["id"], seated_bo["table"]["id"])
    }
    assert by_name["ana"]["score"] == totals[table_ana["id"]]
    info = client.get("/api/daily/anemone").json()
    assert info["played"] == 3 and info["you"] is None and info["best"] is None
    as_account(client, ana)
    info = client.get("/api/daily/anemone").json()
    assert info["best"]["table"] == board[0]["table"] and info["streak"] == 1
    assert info["you"]["percent"] == by_name["ana"]["percent"]
    for answer in (info, board, client.get("/api/daily/anemone/standings").json()):
        no_cards(answer)


@pytest.mark.slow
def test_tomorrow_has_another_deal_and_streaks_count_days_in_a_row(
    make_client: MakeClient, db_url: str
) -> None:
    client = make_client(settings(), db_url)
    cookie = sign_up(client, "dee")
    today = client.get("/api/daily/anemone").json()["date"]
    cards_today = first_hand(client, play(client))
    assert client.get("/api/daily/anemone").json()["streak"] == 1
    assert client.post("/api/daily/anemone/play", json={}, headers=ORIGIN).json()["code"] == "daily.played"

    clock = client.app.state.clock  # type: ignore[attr-defined]
    clock.shift(days=1)
    info = client.get("/api/daily/anemone").json()
    assert info["date"] > today and info["you"] is None and info["streak"] == 1  # yesterday's still counts
    cards_tomorrow = first_hand(client, play(client))
    assert cards_tomorrow != cards_today
    assert client.get("/api/daily/anemone").json()["streak"] == 2
    assert client.get(f"/api/daily/anemone/standings?date={today}").json() == []  # nobody finished

    clock.shift(days=2)  # a day missed
    assert client.get("/api/daily/anemone").json()["streak"] == 0
    first_hand(client, play(client))
    assert client.get("/api/daily/anemone").json()["streak"] == 1

    as_account(client, None)  # a guest: no streak
    assert client.get("/api/daily/anemone").json()["streak"] == 0
    as_account(client, cookie)
    assert client.get("/api/daily/nerts").json()["streak"] == 0  # per game
    # The same day again is the same deal for a guest, on any process of the service (the secret is stored).
    clock.shift(days=-3)
    as_account(client, None)
    assert first_hand(client, play(client, name="guest")) == cards_today


@pytest.mark.slow
def test_the_deal_needs_the_secret(make_client: MakeClient, tmp_path: Path) -> None:
    one = make_client(settings(daily_secret="one"))
    other = make_client(settings(daily_secret="other"), f"sqlite+aiosqlite:///{tmp_path / 'other.db'}")
    same = make_client(settings(daily_secret="one"), f"sqlite+aiosqlite:///{tmp_path / 'same.db'}")
    cards = [first_hand(c, play(c, name="guest")) for c in (one, other, same)]
    assert cards[0] != cards[1] and cards[0] == cards[2]
    day = date.fromisoformat(one.get("/api/daily/anemone").json()["date"])
    assert daily_seed(b"one", "anemone", day) != daily_seed(b"other", "anemone", day)


def test_nerts_daily_deal_and_refusals(make_client: MakeClient) -> None:
    client = make_client(settings())
    info = client.get("/api/daily/nerts").json()
    assert info["bots"] == ["expert:medium"] * 3 and info["options"]["players"] == 4
    seated = play(client, "nerts", name="guest")
    assert [s["bot"] for s in seated["table"]["seats"][1:]] == ["expert:medium"] * 3
    unknown = client.get("/api/daily/chess")
    assert unknown.status_code == 404 and unknown.json()["code"] == "daily.unknown_game"
    assert (
        client.post("/api/daily/chess/play", json={}, headers=ORIGIN).json()["code"] == "daily.unknown_game"
    )
    for bad in ("2026-13-01", "yesterday", "2999-01-01", "2026-1-1"):
        answer = client.get(f"/api/daily/anemone/standings?date={bad}")
        assert answer.status_code == 422 and answer.json()["code"] == "daily.bad_date", bad
    assert client.get("/api/daily/anemone/standings?date=2026-01-01").json() == []
    answer = client.post("/api/daily/anemone/play", json={"name": "bot-1"}, headers=ORIGIN)
    assert answer.status_code == 422 and answer.json()["code"] == "name.reserved"


def test_leaving_counts_as_the_attempt_and_a_refused_table_gives_it_back(
    make_client: MakeClient, db_url: str
) -> None:
    client = make_client(settings(creates_per_minute=0.001, create_burst=1), db_url)
    sign_up(client, "eve")
    seated = play(client, name="eve")
    left = client.post(f"/api/tables/{seated['table']['id']}/leave", json={"token": seated["token"]})
    assert left.status_code == 200
    refused = client.post("/api/daily/anemone/play", json={"name": "eve"}, headers=ORIGIN)
    assert (
        refused.status_code == 409 and refused.json()["code"] == "daily.played"
    )  # leaving counts as the attempt
    as_account(client, None)
    limited = client.post("/api/daily/anemone/play", json={"name": "guest"}, headers=ORIGIN)
    assert limited.status_code == 429 and limited.json()["code"] == "table.create_limit"
    sign_up(client, "fay")
    again = client.post("/api/daily/anemone/play", json={"name": "fay"}, headers=ORIGIN)
    assert again.status_code == 429  # refused by the address's limit: fay's attempt was not used up
    assert (
        client.get("/api/daily/anemone").json()["you"] is None
        and client.get("/api/daily/anemone").json()["played"] == 1
    )


def test_matchpoints_with_ties() -> None:
    assert matchpoints([5, 5, 5]) == [1.0, 1.0, 1.0]
    assert matchpoints([3, 9, 3, 1]) == [1.5, 3.0, 1.5, 0.0]
    assert percents([3, 9, 3, 1]) == [50.0, 100.0, 50.0, 0.0]
    assert percents([4]) == [100.0]
    for scores in ([1, 2, 2, 3, 3, 3, -7], [0, 0], [10, -3, 22, 22, 5]):
        assert sum(percents(scores)) == pytest.approx(50 * len(scores))
    board = ranked(
        [
            {"name": "b", "score": 7, "table": "t2"},
            {"name": "a", "score": 7, "table": "t1"},
            {"name": "c", "score": 9, "table": "t3"},
            {"name": "d", "score": -1, "table": "t4"},
        ]
    )
    assert [(r["rank"], r["name"], r["percent"]) for r in board] == [
        (1, "c", 100.0),
        (2, "a", 50.0),
        (2, "b", 50.0),
        (4, "d", 0.0),
    ]


def test_streak_across_a_missed_day() -> None:
    days = {date(2026, 11, 20), date(2026, 11, 22), date(2026, 11, 23), date(2026, 11, 24)}
    assert streak(days, date(2026, 11, 24)) == 3
    # today not played yet: the streak lives until a day is missed
    assert streak(days, date(2026, 11, 25)) == 3
    assert streak(days, date(2026, 11, 26)) == 0
    assert streak(days, date(2026, 11, 21)) == 1
    assert streak(set(), date(2026, 11, 21)) == 0
