"""Ratings recorded from finished matches (cardtable.server.results), on SQLite and PostgreSQL: the stored ratings
equal openskill computed directly, for matches of 2 to 6 seats with ties; guests unrated; bots rated; history in
order; the player and leaderboard routes show them; Play now picks the bot level nearest the player's rating; and a
real match against a bot, to the end, rates its player."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from openskill.models import PlackettLuce
from sqlalchemy import insert, select
from sqlalchemy.engine import Connection
from starlette.requests import Request
from starlette.testclient import TestClient

from cardtable.server import accounts
from cardtable.server import players_schema as ps
from cardtable.server.app import create_app
from cardtable.server.players import play_now_bot
from cardtable.server.results import MatchResult, SeatResult, record_results
from cardtable.server.store import Store
from cardtable.server.table import Settings

BOTS = ["greedy:easy", "greedy:medium", "greedy:hard"]
ORIGIN = {"Origin": "http://testserver"}

pytestmark = pytest.mark.usefixtures("cheap_hashes")  # conftest.py: real Argon2id, small parameters


def expected_ranks(points: list[int], winners: list[int]) -> list[int]:
    """Written out again here, independently of cardtable.ratings.standings."""
    order = sorted(range(len(points)), key=lambda s: (s in winners, points[s]), reverse=True)
    ranks = [0] * len(points)
    for place, seat in enumerate(order):
        prev = order[place - 1] if place else None
        same = prev is not None and (prev in winners, points[prev]) == (seat in winners, points[seat])
        ranks[seat] = ranks[prev] if same and prev is not None else place + 1
    return ranks


async def make_accounts(store: Store, names: list[str]) -> dict[str, int]:
    ids: dict[str, int] = {}

    def fn(conn: Connection) -> None:
        for name in names:
            result = conn.execute(insert(ps.accounts).values(kind="person", name=name, name_key=name,
                                                             password_hash=None, created="2026-01-01T00:00:00Z"))
            ids[name] = int(result.inserted_primary_key[0])  # type: ignore[index]

    await store.write(fn)
    return ids


def random_matches(rng: random.Random, people: list[str], n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        size = 2 + i % 5  # 2 to 6 seats
        who: list[str | None] = []
        pool = people + BOTS
        rng.shuffle(pool)
        for seat in range(size):
            who.append(None if seat == 0 and i % 4 == 3 else pool[seat])  # every 4th match has a guest
        points = [rng.randint(0, 3) for _ in range(size)]  # small range: ties are common
        best = max(points)
        winners = [s for s in range(size) if points[s] == best][:1 if i % 3 else size]
        out.append({"who": who, "points": points, "winners": winners})
    return out


async def play_and_check(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        people = [f"p{i}" for i in range(6)]
        ids = await make_accounts(store, people)
        model = PlackettLuce()
        want: dict[str, Any] = {}
        history: dict[str, list[float]] = {}
        for i, match in enumerate(random_matches(random.Random(7), people, 25)):
            who, points, winners = match["who"], match["points"], match["winners"]
            seats = []
            for seat, name in enumerate(who):
                is_bot = name in BOTS
                seats.append(SeatResult(seat=seat, name=name or "guest", points=points[seat],
                                        account_id=ids[name] if name and not is_bot else None,
                                        bot=name if is_bot else None))
            result = MatchResult(table_id=f"t{i:03d}", game="nerts", finished=f"2026-01-01T00:{i:02d}:00Z", hands=3,
                                 seats=seats, teams=[[s] for s in range(len(seats))], winners=winners)
            stored: list[bool] = []
            await store.write(lambda conn, r=result, out=stored: out.append(record_results(conn, r)))  # type: ignore[misc]
            assert stored == [True]
            # the same, computed directly with openskill
            ranks = expected_ranks(points, winners)
            rated = [(name, ranks[seat]) for seat, name in enumerate(who) if name is not None]
            if len(rated) >= 2:
                new = model.rate([[want.get(name) or model.rating()] for name, _ in rated],
                                 ranks=[rank for _, rank in rated])
                for (name, _), team in zip(rated, new, strict=True):
                    want[name] = team[0]
                    history.setdefault(name, []).append(team[0].ordinal())
        # recording a match twice changes nothing
        again: list[bool] = []
        await store.write(lambda conn: again.append(record_results(conn, result)))
        assert again == [False]
        r, a, h = ps.ratings, ps.accounts, ps.rating_history
        async with store.engine.connect() as conn:
            rows = (await conn.execute(select(a.c.name, a.c.kind, r.c.mu, r.c.sigma, r.c.ordinal)
                                       .select_from(r.join(a, a.c.id == r.c.account_id)))).all()
            got = {row.name: row for row in rows}
            assert set(got) == set(want)  # bots rated, guests not (there is no guest account at all)
            assert {row.name for row in rows if row.kind == "bot"} == set(BOTS)
            for name, rating in want.items():
                assert got[name].mu == pytest.approx(rating.mu, abs=1e-9)
                assert got[name].sigma == pytest.approx(rating.sigma, abs=1e-9)
                assert got[name].ordinal == pytest.approx(rating.ordinal(), abs=1e-9)
            for name, ordinals in history.items():
                q = (select(h.c.ordinal).select_from(h.join(a, a.c.id == h.c.account_id))
                     .where(a.c.name == name).order_by(h.c.id))
                assert [row.ordinal for row in await conn.execute(q)] == pytest.approx(ordinals)
            guests = (await conn.execute(select(ps.match_seats.c.account_id, ps.match_seats.c.ordinal_after)
                                         .where(ps.match_seats.c.name == "guest"))).all()
            assert guests and all(g.account_id is None and g.ordinal_after is None for g in guests)
    finally:
        await store.close()


def test_stored_ratings_equal_openskill_computed_directly(db_url: str) -> None:
    asyncio.run(play_and_check(db_url))


@pytest.fixture
def client(db_url: str) -> Iterator[TestClient]:
    settings = Settings(hand_pause_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=0)
    with TestClient(create_app(db_url, settings)) as c:
        yield c


def wait_finished(client: TestClient, table_id: str, timeout_s: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        table: dict[str, Any] = client.get(f"/api/tables/{table_id}").json()
        if table["status"] == "finished":
            return table
        time.sleep(0.2)
    raise AssertionError(f"table {table_id} did not finish")


def play_out(client: TestClient, table_id: str, token: str) -> None:
    """Play the token's seat to the end through a WebSocket (its first legal action each time): a person who
    leaves instead is last and rates nobody up (tests/test_server_ownership.py)."""
    with client.websocket_connect(f"/ws/tables/{table_id}") as ws:
        ws.send_json({"type": "hello", "token": token})
        seq = 0
        while True:
            message = ws.receive_json()
            if (message.get("table") or {}).get("status") == "finished" or (
                    message["type"] == "hand_over" and message["winners"]):
                return
            if message["type"] in ("update", "snapshot") and message.get("legal"):
                seq += 1
                ws.send_json({"type": "action", "seq": seq, "action": message["legal"][0]})


def test_a_match_against_a_bot_rates_the_player_and_the_bot(client: TestClient) -> None:
    me = client.post("/api/accounts", json={"name": "Rin", "password": "long enough"}, headers=ORIGIN).json()
    made = client.post("/api/tables", headers=ORIGIN, json={
        "game": "anemone", "options": {"players": 2, "rounds": 1}, "name": "Rin",
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": "heuristic"}]}).json()
    table_id, token = made["table"]["id"], made["token"]
    assert client.post(f"/api/tables/{table_id}/start", json={"token": token}).status_code == 200
    play_out(client, table_id, token)
    table = wait_finished(client, table_id)
    deadline = time.monotonic() + 30
    while not (page := client.get("/api/players/rin").json())["games"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert page["name"] == me["name"] == "Rin"
    anemone = page["games"]["anemone"]
    assert anemone["matches"] == 1 and anemone["rating"]["matches"] == 1
    assert len(anemone["history"]) == 1 and anemone["history"][0]["table"] == table_id
    assert anemone["wins"] == (1 if 0 in table["winners"] else 0)
    assert anemone["anemones"] >= 0 and anemone["points_per_hand"] is not None
    board = client.get("/api/leaderboard?game=anemone").json()
    assert {(row["name"], row["kind"]) for row in board} == {("Rin", "person"), ("heuristic", "bot")}
    assert board[0]["ordinal"] >= board[1]["ordinal"]
    winner_name = "Rin" if table["winners"] == [0] else "heuristic"
    if table["winners"] in ([0], [1]):
        assert board[0]["name"] == winner_name
    history = client.get("/api/players/Rin/matches").json()
    assert [m["table"] for m in history["matches"]] == [table_id] and history["next"] is None
    match = history["matches"][0]
    assert match["replay"] == f"/?replay={table_id}" and match["ordinal_after"] == anemone["rating"]["ordinal"]
    assert [s["kind"] for s in match["seats"]] == ["person", "bot"]
    assert client.get("/api/players/heuristic").json()["kind"] == "bot"
    assert client.get("/api/players/nobody").json()["code"] == "player.unknown"
    assert client.get("/api/leaderboard?game=chess").json()["code"] == "game.unknown"


def test_match_history_pages_newest_first(db_url: str) -> None:
    async def go() -> None:
        store = await Store.open(db_url)
        try:
            ids = await make_accounts(store, ["pager"])
            for i in range(7):
                seats = [SeatResult(0, "pager", ids["pager"], points=i), SeatResult(1, "b", bot="greedy:easy")]
                result = MatchResult(f"m{i}", "nerts", f"2026-02-0{1 + i // 3}T00:00:00Z", 1, seats, [[0], [1]], [0])
                await store.write(lambda conn, r=result: record_results(conn, r) and None)  # type: ignore[misc]
        finally:
            await store.close()

    asyncio.run(go())
    with TestClient(create_app(db_url)) as client:
        seen: list[str] = []
        before = None
        while True:
            page = client.get("/api/players/pager/matches", params={"limit": 3, **({"before": before} if before else {})})
            data = page.json()
            seen += [m["table"] for m in data["matches"]]
            before = data["next"]
            if before is None:
                break
        assert seen == ["m6", "m5", "m4", "m3", "m2", "m1", "m0"]
        assert client.get("/api/players/pager/matches?game=anemone").json()["matches"] == []
        assert client.get("/api/players/pager/matches?before=nonsense").json()["code"] == "player.bad_cursor"


def test_play_now_gives_strong_players_stronger_bots(db_url: str) -> None:
    async def go() -> None:
        store = await Store.open(db_url)
        try:
            ids = await make_accounts(store, ["ace", "newbie"])
            i = 0
            # the bot ladder: hard beats medium beats easy, many times; ace beats hard many times
            for _ in range(12):
                for order in (["greedy:hard", "greedy:medium", "greedy:easy"], ["ace", "greedy:hard"]):
                    seats = [SeatResult(s, name, ids.get(name), None if name in ids else name, points=10 - s)
                             for s, name in enumerate(order)]
                    result = MatchResult(f"x{i}", "nerts", f"2026-03-01T00:00:{i:02d}Z", 1, seats,
                                         [[s] for s in range(len(order))], [0])
                    i += 1
                    await store.write(lambda conn, r=result: record_results(conn, r) and None)  # type: ignore[misc]
        finally:
            await store.close()

    asyncio.run(go())
    app = create_app(db_url)
    with TestClient(app) as client:
        portal: Any = client.portal

        def choose(cookie: str | None) -> str:
            headers = [(b"cookie", f"{accounts.COOKIE}={cookie}".encode())] if cookie else []
            request = Request({"type": "http", "headers": headers, "app": app})
            result: str = portal.call(play_now_bot, request, "nerts", "greedy:medium")
            return result

        async def session_of(name: str) -> str:
            store: Store = app.state.store
            async with store.engine.connect() as conn:
                account_id = (await conn.execute(select(ps.accounts.c.id).where(ps.accounts.c.name == name))).scalar_one()
            return await accounts._new_session(store, account_id)

        assert choose(None) == "greedy:medium"  # a guest keeps medium
        assert choose(portal.call(session_of, "newbie")) == "greedy:medium"  # not rated yet: medium
        ace = portal.call(session_of, "ace")
        assert choose(ace) == "greedy:hard"
        # and through Play now itself: a guest gets medium bots, ace hard ones, at a table of their own
        guest = client.post("/api/play", json={"game": "nerts", "name": "guest"}).json()
        assert {s.get("bot") for s in guest["table"]["seats"][1:]} == {"greedy:medium"}
        client.cookies.set(accounts.COOKIE, ace)
        mine = client.post("/api/play", json={"game": "nerts", "name": "whoever"}, headers=ORIGIN).json()
        assert mine["table"]["id"] != guest["table"]["id"]
        assert {s.get("bot") for s in mine["table"]["seats"][1:]} == {"greedy:hard"}
        assert mine["table"]["seats"][0]["name"] == "ace"


def test_a_nerts_match_records_calls_and_cards_left(client: TestClient) -> None:
    client.post("/api/accounts", json={"name": "Sol", "password": "long enough"}, headers=ORIGIN)
    made = client.post("/api/tables", headers=ORIGIN, json={
        "game": "nerts", "options": {"players": 2, "nerts_pile_size": 5, "target_score": 10}, "name": "Sol",
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": "greedy:hard"}], "seed": 3}).json()
    table_id, token = made["table"]["id"], made["token"]
    client.post(f"/api/tables/{table_id}/start", json={"token": token})
    client.post(f"/api/tables/{table_id}/leave", json={"token": token})
    table = wait_finished(client, table_id, 240)
    deadline = time.monotonic() + 30
    while not (page := client.get("/api/players/sol").json())["games"] and time.monotonic() < deadline:
        time.sleep(0.2)
    nerts = page["games"]["nerts"]
    record = client.get(f"/api/tables/{table_id}/record").json()
    hands = len(record["hands"])
    calls = sum(1 for h in record["hands"] for a in h["actions"] if a["action"]["type"] == "nerts" and a["seat"] == 0)
    assert nerts["matches"] == 1 and nerts["nerts_calls"] == calls
    assert nerts["points_per_hand"] == pytest.approx(table["totals"][0] / hands, abs=1e-3)
    assert 0 <= nerts["cards_left_per_hand"] <= 5
    match = client.get("/api/players/sol/matches?game=nerts").json()["matches"][0]
    assert match["hands"] == hands and match["stats"]["nerts_calls"] == calls
    assert match["stats"]["cards_left"] == pytest.approx(nerts["cards_left_per_hand"] * hands, abs=1e-2)
    bot = client.get("/api/players/greedy:hard").json()["games"]["nerts"]
    assert bot["matches"] == 1 and bot["rating"] is None  # a chosen seed: the table is not rated


def test_a_deleted_players_matches_stay(client: TestClient) -> None:
    client.post("/api/accounts", json={"name": "Tao", "password": "long enough"}, headers=ORIGIN)
    made = client.post("/api/tables", headers=ORIGIN, json={
        "game": "anemone", "options": {"players": 2, "rounds": 1}, "name": "Tao",
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": "random"}]}).json()
    table_id, token = made["table"]["id"], made["token"]
    client.post(f"/api/tables/{table_id}/start", json={"token": token})
    play_out(client, table_id, token)
    wait_finished(client, table_id)
    deadline = time.monotonic() + 30
    while not client.get("/api/players/random/matches").json().get("matches") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert client.delete("/api/me", headers=ORIGIN).status_code == 204
    match = client.get("/api/players/random/matches").json()["matches"][0]
    assert match["table"] == table_id
    assert match["seats"][0] == {"seat": 0, "name": None, "kind": "deleted", "rank": match["seats"][0]["rank"],
                                 "points": match["seats"][0]["points"]}
    assert [row["name"] for row in client.get("/api/leaderboard?game=anemone").json()] == ["random"]


async def set_ratings(store: Store, game: str, given: dict[int, tuple[float, float, int, int]]) -> None:
    """Store account id -> ``(mu, sigma, matches, wins)`` as each account's rating in ``game``."""

    def fn(conn: Connection) -> None:
        for account_id, (mu, sigma, matches, wins) in given.items():
            conn.execute(insert(ps.ratings).values(account_id=account_id, game=game, mu=mu, sigma=sigma,
                                                   ordinal=mu - 3 * sigma, matches=matches, wins=wins,
                                                   updated="2026-01-01T00:00:00Z"))

    await store.write(fn)


async def stored_ratings(store: Store, game: str) -> dict[int, Any]:
    r = ps.ratings
    async with store.engine.connect() as conn:
        return {row.account_id: row for row in await conn.execute(select(r).where(r.c.game == game))}


PRIOR = {"ana": (31.0, 4.0, 9, 6), "bo": (22.0, 6.5, 3, 1), "cy": (27.0, 2.5, 20, 9), "di": (18.0, 7.0, 2, 0),
         "ed": (25.0, 5.0, 5, 2), "fu": (29.0, 3.0, 12, 7)}
"""Ratings before a partnership match, each different, so that a rating given to another seat shows."""


def recording(result: MatchResult) -> Callable[[Connection], None]:
    """A write that records ``result`` (which must not have been recorded before)."""

    def fn(conn: Connection) -> None:
        assert record_results(conn, result)

    return fn


async def partnership_check(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        ids = await make_accounts(store, list(PRIOR))
        await set_ratings(store, "nerts", {ids[n]: v for n, v in PRIOR.items()})
        model = PlackettLuce()

        def before(name: str) -> Any:
            mu, sigma, _, _ = PRIOR[name]
            return model.rating(mu=mu, sigma=sigma)

        # Nerts partners sit apart (seats 0 and 2 against 1 and 3); the team of seats 1 and 3 wins, its
        # better-rated player on the later seat.
        who = ["ana", "bo", "cy", "di"]
        seats = [SeatResult(seat=s, name=n, account_id=ids[n], points=(10, 25, 10, 25)[s]) for s, n in enumerate(who)]
        result = MatchResult(table_id="pair", game="nerts", finished="2026-01-02T00:00:00Z", hands=2, seats=seats,
                             teams=[[0, 2], [1, 3]], winners=[1, 3])
        await store.write(recording(result))
        new = model.rate([[before("ana"), before("cy")], [before("bo"), before("di")]], ranks=[3, 1])
        want = {"ana": new[0][0], "cy": new[0][1], "bo": new[1][0], "di": new[1][1]}
        got = await stored_ratings(store, "nerts")
        for name, rating in want.items():
            row = got[ids[name]]
            assert (row.mu, row.sigma) == (pytest.approx(rating.mu, abs=1e-9), pytest.approx(rating.sigma, abs=1e-9))
            _, _, matches, wins = PRIOR[name]
            assert (row.matches, row.wins) == (matches + 1, wins + (name in ("bo", "di")))
        m = ps.match_seats
        async with store.engine.connect() as conn:
            rows = {row.seat: row for row in await conn.execute(select(m).where(m.c.table_id == "pair"))}
        for seat, name in enumerate(who):
            mu, sigma, _, _ = PRIOR[name]
            assert rows[seat].account_id == ids[name]
            assert rows[seat].ordinal_before == pytest.approx(mu - 3 * sigma)
            assert rows[seat].ordinal_after == pytest.approx(want[name].ordinal())
            assert (rows[seat].rank, rows[seat].won) == ((3, 0) if seat in (0, 2) else (1, 1))

        # Three partnerships; one partner of the middle team never moved: that team is absent, rated as it
        # placed against the two present teams, which are rated among themselves alone.
        who = ["ana", "bo", "cy", "di", "ed", "fu"]
        now = {row.account_id: model.rating(mu=row.mu, sigma=row.sigma)
               for row in (await stored_ratings(store, "nerts")).values()}
        seats = [SeatResult(seat=s, name=n, account_id=ids[n], points=(30, 20, 5, 30, 20, 5)[s], idle=s == 4)
                 for s, n in enumerate(who)]
        result = MatchResult(table_id="three", game="nerts", finished="2026-01-03T00:00:00Z", hands=2, seats=seats,
                             teams=[[0, 3], [1, 4], [2, 5]], winners=[0, 3])

        def r(name: str) -> Any:
            return now[ids[name]]

        await store.write(recording(result))
        present = model.rate([[r("ana"), r("di")], [r("cy"), r("fu")]], ranks=[1, 5])
        absent = model.rate([[r("bo"), r("ed")], [r("ana"), r("di")], [r("cy"), r("fu")]], ranks=[3, 1, 5])
        want = {"ana": present[0][0], "di": present[0][1], "cy": present[1][0], "fu": present[1][1],
                "bo": absent[0][0], "ed": absent[0][1]}
        got = await stored_ratings(store, "nerts")
        for name, rating in want.items():
            row = got[ids[name]]
            assert (row.mu, row.sigma) == (pytest.approx(rating.mu, abs=1e-9), pytest.approx(rating.sigma, abs=1e-9))
    finally:
        await store.close()


def test_partners_new_ratings_go_to_their_own_accounts(db_url: str) -> None:
    asyncio.run(partnership_check(db_url))


async def unratable_check(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        ids = await make_accounts(store, ["ana", "bo", "gone", "twice"])

        def delete(conn: Connection) -> None:
            conn.execute(ps.accounts.update().where(ps.accounts.c.id == ids["gone"]).values(deleted=1))

        await store.write(delete)
        await set_ratings(store, "nerts", {ids["ana"]: (40.0, 2.0, 30, 20)})  # another game's rating: not used
        # a deleted account, and one account on two seats, count as guests: rated on neither seat
        who = ["ana", "gone", "twice", "bo", "twice"]
        seats = [SeatResult(seat=s, name=n, account_id=ids[n], points=(9, 7, 5, 3, 1)[s]) for s, n in enumerate(who)]
        result = MatchResult(table_id="odd", game="anemone", finished="2026-01-02T00:00:00Z", hands=1, seats=seats,
                             teams=[[s] for s in range(5)], winners=[0])
        await store.write(recording(result))
        got = await stored_ratings(store, "anemone")
        assert set(got) == {ids["ana"], ids["bo"]}
        model = PlackettLuce()
        new = model.rate([[model.rating()], [model.rating()]], ranks=[1, 4])
        assert got[ids["ana"]].mu == pytest.approx(new[0][0].mu) and got[ids["bo"]].mu == pytest.approx(new[1][0].mu)
        m = ps.match_seats
        async with store.engine.connect() as conn:
            rows = {row.seat: row for row in await conn.execute(select(m).where(m.c.table_id == "odd"))}
        assert [rows[s].account_id for s in range(5)] == [ids["ana"], None, None, ids["bo"], None]
        assert [rows[s].ordinal_after is None for s in range(5)] == [False, True, True, False, True]
        assert [rows[s].ordinal_before is None for s in range(5)] == [False, True, True, False, True]
        assert rows[0].ordinal_before == 0.0  # a new player in this game, whatever their Nerts rating
        assert (await stored_ratings(store, "nerts"))[ids["ana"]].mu == 40.0
    finally:
        await store.close()


def test_a_deleted_account_and_an_account_on_two_seats_are_rated_as_guests(db_url: str) -> None:
    asyncio.run(unratable_check(db_url))
