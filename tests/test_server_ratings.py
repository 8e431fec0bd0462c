"""Ratings recorded from finished matches (cardtable.server.players.results), on SQLite and PostgreSQL: the stored ratings
equal openskill computed directly, for matches of 2 to 6 seats with ties; guests unrated; bots rated; history in
order; the player and leaderboard routes show them; Play now picks the bot level nearest the player's rating; and a
real match against a bot, to the end, rates its player."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from openskill.models import PlackettLuce
from sqlalchemy import insert, select
from sqlalchemy.engine import Connection
from starlette.requests import Request
from starlette.testclient import TestClient

from cardtable import records
from cardtable.replay import fold
from cardtable.server.core.settings import Settings
from cardtable.server.edge.app import create_app
from cardtable.server.players import accounts, sessions
from cardtable.server.players.leaderboards import play_now_bot
from cardtable.server.players.results import MatchResult, SeatResult, record_results
from cardtable.server.storage import players_schema as ps
from cardtable.server.storage.store import Store
from cardtable.server.table.match_results import match_result, record_finished
from clients import play_out, query
from polling import wait_for, wait_results, wait_status

BOTS = ["greedy:easy", "greedy:medium", "greedy:hard"]
ORIGIN = {"Origin": "http://testserver"}
TWO_ANEMONE = {"players": 2, "rounds": 1}

pytestmark = pytest.mark.usefixtures("cheap_hashes")  # conftest.py: real Argon2id, small parameters

RECORDING_FAILED: list[str] = []
"""Errors logged by ``cardtable.server.players.results`` during the running test: recording a match must never fail."""


class _Failures(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        RECORDING_FAILED.append(record.getMessage())


@pytest.fixture(autouse=True)
def recording_never_fails() -> Iterator[None]:
    """Fail a test whose match's results could not be recorded (``record_finished`` logs instead of raising);
    the waits below stop at once when that happens, instead of running out their time."""
    handler = _Failures(logging.ERROR)
    logger = logging.getLogger("cardtable.server.players.results")
    RECORDING_FAILED.clear()
    logger.addHandler(handler)
    try:
        yield
        assert RECORDING_FAILED == []
    finally:
        logger.removeHandler(handler)


def recorded_so_far() -> None:
    """Raise if recording a match's results has failed in this test."""
    assert RECORDING_FAILED == [], f"recording the results failed: {RECORDING_FAILED}"


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
def client(db_client: TestClient) -> TestClient:
    """This module's server: on SQLite, then on PostgreSQL (conftest.py)."""
    return db_client


def page_with_games(client: TestClient, name: str) -> dict[str, Any] | None:
    """The player's page once it shows a game (``None`` before), for :func:`wait_for`."""
    recorded_so_far()
    page: dict[str, Any] = client.get(f"/api/players/{name}").json()
    return page if page["games"] else None


def rated_page(client: TestClient, name: str, game: str) -> dict[str, Any] | None:
    """The player's page once it shows ``game`` with its rating, for :func:`wait_for`. The match's rows, stats and
    ratings are stored in one transaction, but the page reads them with separate statements, so one read may
    straddle that commit (stats already there, rating not yet: a run in CI saw it): wait for the whole of it."""
    page = page_with_games(client, name)
    return page if page is not None and (page["games"].get(game) or {}).get("rating") else None


def test_a_match_against_a_bot_rates_the_player_and_the_bot(client: TestClient) -> None:
    me = client.post("/api/accounts", json={"name": "Rin", "password": "long enough"}, headers=ORIGIN).json()
    made = client.post("/api/tables", headers=ORIGIN, json={
        "game": "anemone", "options": {"players": 2, "rounds": 1}, "name": "Rin",
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": "heuristic"}]}).json()
    table_id, token = made["table"]["id"], made["token"]
    assert client.post(f"/api/tables/{table_id}/start", json={"token": token}).status_code == 200
    play_out(client, table_id, token)
    table = wait_status(client, table_id)
    page = wait_for(lambda: rated_page(client, "rin", "anemone"), 30, "the match and its rating on the player's page")
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
            return await sessions.new_session(store, account_id)

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
    table = wait_status(client, table_id, timeout=240)
    page = wait_for(lambda: page_with_games(client, "sol"), 30, "the match on the player's page")
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
    wait_status(client, table_id)

    def matches() -> object:
        recorded_so_far()
        return client.get("/api/players/random/matches").json().get("matches")

    wait_for(matches, 30, "the match in the bot's list")
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


# -- what a finished match stores: each seat's stats, per-account totals (server/players/results.py) --------------------


def stored_results(client: TestClient, table_id: str, seats: int, timeout_s: float = 30) -> list[Any]:
    """The table's ``match_seats`` rows (by seat) once all ``seats`` are stored; fails early if recording failed."""
    return wait_results(client, table_id, seats, timeout_s, before_each=recorded_so_far)


def replayed(client: TestClient, table_id: str) -> tuple[list[dict[str, Any]], Any]:
    """The table's record, replayed: each hand's last view (a spectator's) and the fold's summary."""
    record = records.from_dict(client.get(f"/api/tables/{table_id}/record").json())
    last: dict[int, Any] = {}

    def step(hand: int, _index: int | None, state: Any) -> None:
        last[hand] = state

    folded = fold(record, step)
    return [last[h].view(None) for h in sorted(last)], folded


def stats_rows(client: TestClient, game: str) -> dict[str, Any]:
    """Account name -> its ``player_stats`` row in ``game``."""
    p, a = ps.player_stats, ps.accounts
    rows = query(client, select(a.c.name, p).select_from(p.join(a, a.c.id == p.c.account_id)).where(p.c.game == game))
    return {row.name: row for row in rows}


def test_a_partnership_nerts_match_stores_each_seats_calls_and_cards_left(client: TestClient) -> None:
    """Nerts calls and cards left in the Nerts pile, per hand, summed per seat (partners share a pile: each
    counts its cards); partners are one team; a person who left is gone, still credited (last); a bot level's totals in
    ``player_stats`` add up its seats (one match, however many seats); the bot accounts are made once; recording
    again changes nothing."""
    client.post("/api/accounts", json={"name": "Pia", "password": "long enough"}, headers=ORIGIN)
    bots = ["greedy:easy", "greedy:hard", "greedy:easy"]
    made = client.post("/api/tables", headers=ORIGIN, json={
        "game": "nerts", "options": {"players": 4, "partnerships": True, "nerts_pile_size": 5, "target_score": 12},
        "name": "Pia", "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": b} for b in bots], "seed": 11}).json()
    table_id, token = made["table"]["id"], made["token"]
    live = client.app.state.manager.tables[table_id]  # type: ignore[attr-defined]
    client.post(f"/api/tables/{table_id}/start", json={"token": token})
    client.post(f"/api/tables/{table_id}/leave", json={"token": token})
    table = wait_status(client, table_id, timeout=240)
    rows = stored_results(client, table_id, 4)
    views, _ = replayed(client, table_id)
    calls = [sum(1 for v in views if v["called"] == seat) for seat in range(4)]
    left = [sum(int(lay["nerts"]["count"]) for v in views for lay in v["layouts"] if seat in lay["seats"])
            for seat in range(4)]
    want = [{"nerts_calls": calls[seat], "cards_left": left[seat]} for seat in range(4)]
    # Real figures, not all zeros: every hand ends with a Nerts call, or stalls with cards left in the piles (which
    # seat calls varies from run to run, and a hand can end with every pile empty: a CI run saw calls 1, left 0).
    assert sum(calls) + sum(left) >= 1

    result: MatchResult = client.portal.call(match_result, live)  # type: ignore[union-attr]
    assert result.teams == [[0, 2], [1, 3]]
    assert [s.stats for s in result.seats] == want
    pia = query(client, select(ps.accounts.c.id).where(ps.accounts.c.name == "Pia"))[0].id
    assert [(s.seat, s.name, s.account_id, s.bot, s.gone, s.idle) for s in result.seats] == [
        (0, "Pia", pia, None, True, True), (1, "bot-1", None, bots[0], False, False),
        (2, "bot-2", None, bots[1], False, False), (3, "bot-3", None, bots[2], False, False)]
    assert [s.points for s in result.seats] == table["totals"]
    assert (result.table_id, result.game, result.hands, result.winners, result.rated) == (
        table_id, "nerts", len(views), table["winners"], False)
    assert result.finished == live.row.finished == rows[0].finished and result.finished.startswith("20")

    assert [row.stats for row in rows] == want
    assert [(row.hands, row.players, row.points) for row in rows] == [(len(views), 4, p) for p in table["totals"]]
    assert rows[0].account_id == pia and rows[0].won == 0 and rows[0].rank == 4  # left: last, not a winner
    got = stats_rows(client, "nerts")
    assert set(got) == {"Pia", "greedy:hard", "greedy:easy"}
    for name, seats in (("Pia", [0]), ("greedy:easy", [1, 3]), ("greedy:hard", [2])):
        row = got[name]
        assert (row.matches, row.hands) == (1, len(seats) * len(views))  # one match, hands counted per seat
        assert row.wins == int(any(s in table["winners"] and s != 0 for s in seats))  # who left never wins
        assert row.points == sum(table["totals"][s] for s in seats)
        assert (row.nerts_calls, row.cards_left, row.anemones) == (
            sum(calls[s] for s in seats), sum(left[s] for s in seats), 0)
        assert row.matches == len({r.table_id for r in rows if r.account_id == row.account_id})
    a = ps.accounts
    bot_rows = query(client, select(a).where(a.c.kind == "bot"))
    assert sorted(row.name for row in bot_rows) == ["greedy:easy", "greedy:hard"]  # one account per level
    assert all(row.deleted == 0 and row.password_hash is None and row.created for row in bot_rows)
    assert {row.id for row in bot_rows} == {row.account_id for row in rows[1:]}

    client.portal.call(record_finished, live)  # type: ignore[union-attr]  # a restart just after the end
    assert stored_results(client, table_id, 4) == rows
    assert stats_rows(client, "nerts") == got


def test_an_anemone_match_stores_the_anemones_each_seat_took(client: TestClient) -> None:
    """Anemones taken per seat, into ``match_seats`` and ``player_stats`` (no Nerts figures); a person who played
    to the end is bound to their account, present and not idle."""
    me = client.post("/api/accounts", json={"name": "Ivo", "password": "long enough"}, headers=ORIGIN).json()
    made = client.post("/api/tables", headers=ORIGIN, json={
        "game": "anemone", "options": {"players": 3, "rounds": 1}, "name": "Ivo",
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": "heuristic"}, {"kind": "bot", "bot": "random"}]}).json()
    table_id, token = made["table"]["id"], made["token"]
    live = client.app.state.manager.tables[table_id]  # type: ignore[attr-defined]
    assert client.post(f"/api/tables/{table_id}/start", json={"token": token}).status_code == 200
    play_out(client, table_id, token)
    table = wait_status(client, table_id)
    rows = stored_results(client, table_id, 3)
    views, folded = replayed(client, table_id)
    taken = [len(faces) for faces in folded.anemones]
    assert sum(taken) > 0

    result: MatchResult = client.portal.call(match_result, live)  # type: ignore[union-attr]
    ivo = query(client, select(ps.accounts.c.id).where(ps.accounts.c.name == me["name"]))[0].id
    assert [(s.account_id, s.bot, s.gone, s.idle) for s in result.seats] == [
        (ivo, None, False, False), (None, "heuristic", False, False), (None, "random", False, False)]
    assert [s.stats for s in result.seats] == [{"anemones": n} for n in taken]
    assert (result.teams, result.rated, result.winners) == ([[0], [1], [2]], True, table["winners"])
    assert [s.points for s in result.seats] == table["totals"] and result.hands == len(views)

    assert [row.stats for row in rows] == [{"anemones": n} for n in taken]
    assert rows[0].account_id == ivo and rows[0].ordinal_after is not None
    got = stats_rows(client, "anemone")
    assert set(got) == {"Ivo", "heuristic", "random"}
    for seat, name in enumerate(["Ivo", "heuristic", "random"]):
        row = got[name]
        assert (row.matches, row.wins, row.points, row.hands) == (
            1, int(seat in table["winners"]), table["totals"][seat], len(views))
        assert (row.anemones, row.nerts_calls, row.cards_left) == (taken[seat], 0, 0)
    assert stats_rows(client, "nerts") == {}


async def running_totals_check(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        # "random" is also a person: an account from before bot-like names were refused; the bot level of that
        # name gets an account of its own
        ids = await make_accounts(store, ["ana", "bo", "random"])
        # a guest first (skipped, and the seats after it still counted); ana wins the first, bo the second
        first = MatchResult("s1", "anemone", "2026-04-01T00:00:00Z", 2, [
            SeatResult(0, "guest", points=9, stats={"anemones": 4}),
            SeatResult(1, "ana", ids["ana"], points=7, stats={"anemones": 3}),
            SeatResult(2, "easy", bot="greedy:easy", points=-2, stats={"anemones": 1})], [[0], [1], [2]], [1])
        second = MatchResult("s2", "anemone", "2026-04-02T00:00:00Z", 3, [
            SeatResult(0, "ana", ids["ana"], points=1, stats={"anemones": 2}),
            SeatResult(1, "bo", ids["bo"], points=5, stats={"anemones": 0}),
            SeatResult(2, "easy", bot="greedy:easy", points=4, stats={"anemones": 6}),
            SeatResult(3, "rnd", bot="random", points=-3, stats={"anemones": 2})], [[0], [1], [2], [3]], [1])
        nerts = MatchResult("s3", "nerts", "2026-04-03T00:00:00Z", 4, [
            SeatResult(0, "ana", ids["ana"], points=20, stats={"nerts_calls": 2, "cards_left": 3}),
            SeatResult(1, "easy", bot="greedy:easy", points=-4, stats={"nerts_calls": 1, "cards_left": 9})],
            [[0], [1]], [0])
        for result in (first, second, nerts):
            await store.write(recording(result))
        p, a = ps.player_stats, ps.accounts
        fields = ("matches", "wins", "points", "hands", "nerts_calls", "cards_left", "anemones")
        async with store.engine.connect() as conn:
            rows = (await conn.execute(select(a.c.kind, a.c.name, p)
                                       .select_from(p.join(a, a.c.id == p.c.account_id)))).all()
            bots = (await conn.execute(select(a).where(a.c.kind == "bot").order_by(a.c.name))).all()
        got = {(row.kind, row.name, row.game): tuple(getattr(row, f) for f in fields) for row in rows}
        assert got == {
            ("person", "ana", "anemone"): (2, 1, 8, 5, 0, 0, 5),
            ("person", "bo", "anemone"): (1, 1, 5, 3, 0, 0, 0),
            ("bot", "greedy:easy", "anemone"): (2, 0, 2, 5, 0, 0, 7),
            ("bot", "random", "anemone"): (1, 0, -3, 3, 0, 0, 2),
            ("person", "ana", "nerts"): (1, 1, 20, 4, 2, 3, 0),
            ("bot", "greedy:easy", "nerts"): (1, 0, -4, 4, 1, 9, 0),
        }
        # each bot level's account made once, never deleted, with no password (nobody signs in as a bot)
        assert [(b.name, b.deleted, b.password_hash) for b in bots] == [("greedy:easy", 0, None), ("random", 0, None)]
        assert all(b.created for b in bots) and ids["random"] not in {b.id for b in bots}
        again: list[bool] = []
        await store.write(lambda conn: again.append(record_results(conn, second)))
        assert again == [False]
        async with store.engine.connect() as conn:
            assert len((await conn.execute(select(p))).all()) == len(got)
            assert (await conn.execute(select(p.c.matches).where(p.c.account_id == ids["bo"]))).scalar_one() == 1
    finally:
        await store.close()


def test_player_stats_add_up_each_accounts_matches(db_url: str) -> None:
    asyncio.run(running_totals_check(db_url))


def test_a_nerts_hand_ended_without_a_call_and_an_abandoned_match_are_recorded(db_url: str) -> None:
    """Two people declare themselves stuck twice: the hand ends with nobody calling Nerts; both then leave the
    table and it is abandoned. Its results are still recorded: no calls, each seat's whole Nerts pile left, both
    people absent and last."""
    settings = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, abandon_after_s=0.2, expiry_check_s=0.1)
    pile = 6
    with TestClient(create_app(db_url, settings)) as client:
        made = client.post("/api/tables", headers=ORIGIN, json={
            "game": "nerts", "options": {"players": 2, "nerts_pile_size": pile}, "name": "Ula", "autostart": False,
            "grace_seconds": 0, "seats": [{"kind": "open"}, {"kind": "open"}]}).json()
        table_id, first = made["table"]["id"], made["token"]
        second = client.post(f"/api/tables/{table_id}/join", headers=ORIGIN, json={"name": "Vic"}).json()["token"]
        with client.websocket_connect(f"/ws/tables/{table_id}") as ws1, \
                client.websocket_connect(f"/ws/tables/{table_id}") as ws2:
            for ws, token in ((ws1, first), (ws2, second)):
                ws.send_json({"type": "hello", "token": token})
                assert ws.receive_json()["type"] == "welcome"
            assert client.post(f"/api/tables/{table_id}/start", json={"token": first}).status_code == 200

            def until(ws: Any, done: Callable[[dict[str, Any]], bool]) -> None:
                while not done(ws.receive_json()):
                    pass

            def event(kind: str) -> Callable[[dict[str, Any]], bool]:
                return lambda m: m["type"] == "update" and any(e["type"] == kind for e in m["events"])

            until(ws1, lambda m: m["type"] == "snapshot" and m["view"] is not None)
            for seq in (1, 2):  # stuck, the piles rotate, stuck again with no move between: the hand ends
                ws1.send_json({"type": "action", "seq": seq, "action": {"type": "stuck"}})
                until(ws1, event("stuck"))
                ws2.send_json({"type": "action", "seq": seq, "action": {"type": "stuck"}})
                until(ws1, event("rotated") if seq == 1 else (lambda m: m["type"] == "hand_over"))
        wait_status(client, table_id, ("abandoned",), 30)
        rows = stored_results(client, table_id, 2)
        views, _ = replayed(client, table_id)
        assert (views[0]["ended"], views[0]["called"]) == ("stuck", None)
        assert [lay["nerts"]["count"] for lay in views[0]["layouts"]] == [pile, pile]
        calls = [sum(1 for v in views if v["called"] == seat) for seat in range(2)]
        left = [sum(int(lay["nerts"]["count"]) for v in views for lay in v["layouts"] if seat in lay["seats"])
                for seat in range(2)]  # stand-ins may have played for them before the table was abandoned
        assert [row.stats for row in rows] == [{"nerts_calls": calls[s], "cards_left": left[s]} for s in range(2)]
        assert [(row.account_id, row.won, row.hands) for row in rows] == [(None, 0, len(views))] * 2


def test_a_nerts_match_abandoned_in_its_first_hand_is_recorded(db_url: str) -> None:
    """Nobody ever connects to a started two-person table (other tables are in play beside it): it is
    abandoned during its first hand, and its own record gives each seat's cards left (no calls)."""
    settings = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=20, abandon_after_s=0.2, expiry_check_s=0.1)
    pile = 7
    with TestClient(create_app(db_url, settings)) as client:
        for _ in range(3):  # the results must come from this table's own record, whatever else is stored
            other = client.post("/api/tables", headers=ORIGIN, json={
                "game": "anemone", "options": TWO_ANEMONE, "name": "Wes", "autostart": False,
                "seats": [{"kind": "open"}, {"kind": "bot", "bot": "random"}]}).json()
            started = client.post(f"/api/tables/{other['table']['id']}/start", json={"token": other["token"]})
            assert started.status_code == 200  # in play, then abandoned: kept, unlike a table nobody joined
        made_at = accounts.now_iso()
        # this table is then made a second later: listed after the others
        wait_for(lambda: accounts.now_iso() != made_at, 5, "the clock's next second")
        made = client.post("/api/tables", headers=ORIGIN, json={
            "game": "nerts", "options": {"players": 2, "nerts_pile_size": pile}, "name": "Xia", "autostart": False,
            "grace_seconds": 0, "seats": [{"kind": "open"}, {"kind": "open"}]}).json()
        table_id, token = made["table"]["id"], made["token"]
        client.post(f"/api/tables/{table_id}/join", headers=ORIGIN, json={"name": "Yan"})
        assert client.post(f"/api/tables/{table_id}/start", json={"token": token}).status_code == 200
        wait_status(client, table_id, ("abandoned",), 30)
        rows = stored_results(client, table_id, 2)
        views, _ = replayed(client, table_id)
        assert len(views) == 1 and not views[0]["over"]
        left = [sum(int(lay["nerts"]["count"]) for lay in views[0]["layouts"] if seat in lay["seats"])
                for seat in range(2)]
        assert all(n > 0 for n in left)
        assert [row.stats for row in rows] == [{"nerts_calls": 0, "cards_left": n} for n in left]
        assert [(row.name, row.account_id, row.won, row.hands) for row in rows] == [
            ("Xia", None, 0, 1), ("Yan", None, 0, 1)]


async def bot_on_two_seats_check(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        ids = await make_accounts(store, ["zed"])
        for i in range(2):  # the first match makes the bot's rating, the second updates it
            seats = [SeatResult(0, "zed", ids["zed"], points=1), SeatResult(1, "h1", bot="greedy:hard", points=9),
                     SeatResult(2, "h2", bot="greedy:hard", points=9)]
            await store.write(recording(MatchResult(f"two{i}", "nerts", f"2026-05-0{i + 1}T00:00:00Z", 1, seats,
                                                    [[0], [1], [2]], [1, 2])))
        a = ps.accounts
        async with store.engine.connect() as conn:
            bot = (await conn.execute(select(a.c.id).where(a.c.name == "greedy:hard"))).scalar_one()
        got = await stored_ratings(store, "nerts")
        assert (got[bot].matches, got[bot].wins) == (2, 2)  # one match won each time, though on two seats
        assert (got[ids["zed"]].matches, got[ids["zed"]].wins) == (2, 0)
    finally:
        await store.close()


def test_a_bot_level_on_two_winning_seats_wins_one_match(db_url: str) -> None:
    """A bot level may hold several seats of one match (it is one account): its rating counts one match and at
    most one win per match."""
    asyncio.run(bot_on_two_seats_check(db_url))


async def other_game_check(db_url: str) -> None:
    store = await Store.open(db_url)
    try:
        ids = await make_accounts(store, ["una", "vo"])
        for game in ("nerts", "anemone"):
            await set_ratings(store, game, {ids["una"]: (30.0, 5.0, 4, 2), ids["vo"]: (20.0, 6.0, 3, 1)})
        seats = [SeatResult(0, "una", ids["una"], points=8), SeatResult(1, "vo", ids["vo"], points=2)]
        await store.write(recording(MatchResult("g1", "nerts", "2026-06-01T00:00:00Z", 1, seats, [[0], [1]], [0])))
        nerts, anemone = await stored_ratings(store, "nerts"), await stored_ratings(store, "anemone")
        assert [(nerts[i].matches, nerts[i].mu != m) for i, m in ((ids["una"], 30.0), (ids["vo"], 20.0))] == [
            (5, True), (4, True)]
        assert [(anemone[i].mu, anemone[i].sigma, anemone[i].matches, anemone[i].wins, anemone[i].updated)
                for i in (ids["una"], ids["vo"])] == [(30.0, 5.0, 4, 2, "2026-01-01T00:00:00Z"),
                                                      (20.0, 6.0, 3, 1, "2026-01-01T00:00:00Z")]
    finally:
        await store.close()


def test_a_match_changes_only_its_own_games_ratings(db_url: str) -> None:
    """A Nerts match updates the players' Nerts ratings and leaves their Enemy Anemone ratings as they were."""
    asyncio.run(other_game_check(db_url))
