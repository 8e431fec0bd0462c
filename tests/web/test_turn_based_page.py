"""Turn-based Enemy Anemone in the browser (issue 29, js/turns.js): the custom table's Pace choice and turn clock
presets, the lobby's "Your games" panel with the count of your turns in the page title and on the favicon, each
seat's time bank at the table, the "Since your last move" summary of a ``catch_up`` message, and the time of each
move in a replay.

The custom table's tests run against the real server. The others are tests of rendering that answer what the
server's turn-based part sends (GET /api/me/seats, the TABLE's ``turn``, ``catch_up``, a replay step's ``at``) with
contract-shaped data through Playwright's ``page.route`` / ``page.route_web_socket`` over the real server's
answers (the fields are added to a real table's messages), until the server gives them itself."""

from __future__ import annotations

import json
import re
import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Route, WebSocketRoute, expect
from webhelpers import api, axe_serious, sit, started_table

from polling import wait_for

pytestmark = pytest.mark.browser

SIZES = [(1280, 720), (390, 844)]


def sign_up(page: Page, server: str) -> str:
    """A new account, signed in in the page's browser context; returns its name."""
    name = f"Turns{secrets.token_hex(3)}"
    res = page.request.post(server + "/api/accounts", data={"name": name, "password": "a long password"})
    assert res.ok, res.text()
    return name


def open_custom_anemone(page: Page) -> None:
    """Open the lobby's Custom table with Enemy Anemone chosen."""
    page.locator("#custom > summary").click()
    page.locator("#custom button[data-game=anemone]").click()


# ---- the custom table (the real server) ----


def test_turn_based_is_offered_for_enemy_anemone_only_and_refused_to_a_guest(page: Page, server: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(server + "/")
    page.locator("#custom > summary").click()
    page.locator("#custom button[data-game=nerts]").click()
    turn_based = page.locator("[data-pace=turn-based]")
    expect(turn_based).to_be_disabled()  # Nerts is a race
    expect(page.locator(".pacenote")).to_contain_text("real time only")
    page.locator("#custom button[data-game=anemone]").click()
    expect(turn_based).to_be_enabled()
    expect(page.locator(".presets")).to_be_hidden()
    turn_based.click()
    expect(turn_based).to_have_attribute("aria-checked", "true")
    presets = page.locator(".preset")
    expect(presets).to_have_text(
        [re.compile("^1 move a day"), re.compile("^4 moves a day"), re.compile("^12 moves a day")]
    )
    expect(presets.nth(0)).to_contain_text("Time bank 3 d, +1 d after each move")
    expect(page.locator(".signnote")).to_contain_text("signed in")
    expect(page.locator(".signnote a")).to_be_visible()  # a guest is offered the way to sign in
    presets.nth(1).click()
    with page.expect_request(lambda r: r.url.endswith("/api/tables") and r.method == "POST") as sent:
        page.locator("#create").click()
    body = json.loads(sent.value.post_data or "{}")
    assert body["game"] == "anemone"
    assert body["pace"] == "turn-based"
    assert body["turn_clock"] == {"start_s": 86400, "per_move_s": 21600}
    # a guest may not take a turn-based seat: the server's refusal, worded as every refusal is
    expect(page.locator("#toast")).to_contain_text("You are not signed in")
    assert axe_serious(page) == []


def test_a_signed_in_player_starts_a_turn_based_table(page: Page, server: str) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    sign_up(page, server)
    page.goto(server + "/")
    open_custom_anemone(page)
    page.locator("[data-pace=turn-based]").click()
    expect(page.locator(".signnote a")).to_be_hidden()  # signed in already
    page.locator(".preset").nth(2).click()
    page.locator("#create").click()
    expect(page).to_have_url(re.compile(r"/\?table="))
    tid = page.url.split("table=")[1]
    table = api(server, "GET", f"/api/tables/{tid}")
    assert table["pace"] == "turn-based"
    assert table["turn_clock"] == {"start_s": 28800, "per_move_s": 7200}
    # a real-time table asks for no pace at all
    page.goto(server + "/")
    open_custom_anemone(page)
    with page.expect_request(lambda r: r.url.endswith("/api/tables") and r.method == "POST") as sent:
        page.locator("#create").click()
    assert "pace" not in json.loads(sent.value.post_data or "{}")


# ---- the lobby's "Your games" (GET /api/me/seats answered by page.route: a test of rendering) ----


def iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def seat_entry(
    tid: str,
    *,
    turn: bool,
    bank_ms: int,
    deadline: str | None,
    last_trick: list[dict[str, Any]] | None,
    mover: int | None,
) -> dict[str, Any]:
    """One entry of GET /api/me/seats as the contract shapes it (docs: contract_29, "GET /api/me/seats")."""
    return {
        "table": {
            "id": tid,
            "game": "anemone",
            "status": "playing",
            "pace": "turn-based",
            "turn_clock": {"start_s": 259200, "per_move_s": 86400},
            "seats": [
                {"seat": 0, "kind": "person", "name": "Mirae"},
                {"seat": 1, "kind": "person", "name": "Haruto"},
                {"seat": 2, "kind": "bot", "bot": "heuristic"},
            ],
            "turn": {
                "seat": mover,
                "deadline": deadline,
                "deadline_ms": None,
                "banks_ms": [bank_ms, 86400000, 86400000],
                "timeouts": [0, 0, 0],
                "kept": [False, False, False],
            },
        },
        "seat": 0,
        "token": f"token-{tid}",
        "turn": turn,
        "bank_ms": bank_ms,
        "deadline": deadline,
        "last_trick": last_trick,
    }


FAVICON_JS = """async () => {
  const link = document.querySelector('link[rel="icon"]');
  const img = new Image();
  await new Promise((ok, no) => { img.onload = ok; img.onerror = no; img.src = link.href; });
  const c = Object.assign(document.createElement('canvas'), { width: 64, height: 64 });
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0, 64, 64);
  const [r, gr, b] = g.getImageData(32, 19, 1, 1).data;  // inside the badge's circle, off its number
  return { png: link.href.startsWith('data:image/png'), svg: link.href.startsWith('data:image/svg'), r, g: gr, b };
}"""


def test_your_games_lists_your_turns_first_and_counts_them(
    browser: Browser, server: str, screenshots: Path
) -> None:
    now = datetime.now(UTC)
    seats = [  # the server's order is turn first; the page must not depend on it
        seat_entry(
            "TBwait",
            turn=False,
            bank_ms=(2 * 86400 + 3 * 3600) * 1000,
            deadline=None,
            mover=1,
            last_trick=[{"seat": 1, "card": "7C"}, {"seat": 2, "card": "3A"}, {"seat": 0, "card": "9F"}],
        ),
        seat_entry(
            "TBmine1",
            turn=True,
            bank_ms=45 * 60000 + 30000,
            deadline=iso(now + timedelta(minutes=45, seconds=30)),
            mover=0,
            last_trick=[{"seat": 2, "card": "11D"}, {"seat": 0, "card": "2D"}, {"seat": 1, "card": "5D"}],
        ),
        seat_entry(
            "TBmine2",
            turn=True,
            bank_ms=(5 * 3600 + 20 * 60 + 30) * 1000,
            deadline=iso(now + timedelta(hours=5, minutes=20, seconds=30)),
            mover=0,
            last_trick=None,
        ),
    ]
    answer: dict[str, Any] = {"seats": seats}

    def me_seats(route: Route) -> None:
        route.fulfill(json=answer["seats"])

    for w, hgt in SIZES:
        context = browser.new_context(viewport={"width": w, "height": hgt})
        try:
            page = context.new_page()
            sign_up(page, server)
            page.route("**/api/me/seats", me_seats)
            answer["seats"] = seats
            page.goto(server + "/")
            rows = page.locator("#your-games li.game-row")
            expect(rows).to_have_count(3)
            assert [rows.nth(i).get_attribute("data-table") for i in range(3)] == [
                "TBmine1",
                "TBmine2",
                "TBwait",
            ]
            expect(rows.nth(0).locator(".badge.yourturn")).to_have_text("Your turn")
            expect(rows.nth(0).locator(".tleft")).to_have_text("45 min left")
            expect(rows.nth(1).locator(".tleft")).to_have_text("5 h 20 min left")
            expect(rows.nth(2).locator(".tleft")).to_have_text("Your bank: 2 d 3 h")
            expect(rows.nth(2)).to_contain_text("Waiting for Haruto")
            expect(rows.nth(2).locator(".lasttrick [data-card]")).to_have_count(3)
            assert rows.nth(2).locator(".lasttrick .ccard").evaluate_all(
                "els => els.map((e) => e.dataset.card)"
            ) == ["7C", "3A", "9F"]
            expect(rows.nth(1).locator(".lasttrick")).to_have_text("No trick played yet")
            expect(rows.nth(0).locator("a.btnlink")).to_have_attribute("href", "/?table=TBmine1")
            expect(page).to_have_title("(2) cardtable")
            expect(page.locator("#turn-count")).to_have_text("2 to play")
            icon = page.evaluate(FAVICON_JS)
            assert icon["png"] and icon["r"] > 180 and icon["g"] < 90 and icon["b"] < 90, (
                icon
            )  # the red badge
            assert axe_serious(page) == []
            page.screenshot(path=str(screenshots / f"your_games_{w}x{hgt}.png"))
            # the lobby's refresh cycle: no more turns of yours, the title and the favicon go back
            answer["seats"] = [seats[0]]
            expect(rows).to_have_count(1, timeout=12000)
            expect(page).to_have_title("cardtable")
            expect(page.locator('link[rel="icon"]')).to_have_attribute("href", re.compile("^data:image/svg"))
            # the link opens the table with the seat the account holds
            rows.nth(0).locator("a.btnlink").click()
            expect(page).to_have_url(f"{server}/?table=TBwait")
            assert page.evaluate("JSON.parse(localStorage.getItem('ct.seat.TBwait'))") == {
                "seat": 0,
                "token": "token-TBwait",
            }
        finally:
            context.close()


def test_a_guest_sees_no_your_games_panel(page: Page, server: str) -> None:
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if r.url.endswith("/api/me/seats") else None)
    page.goto(server + "/")
    expect(page.locator("#custom")).to_be_visible()
    expect(page.locator("#your-games")).to_be_hidden()
    expect(page).to_have_title("cardtable")
    assert asked == []  # a guest's lobby does not ask for seats it cannot have


# ---- at the table: banks, stand-ins, no ready step, the catch-up (the TABLE's turn fields and catch_up added) ----


def turn_fields(table: dict[str, Any], mover: int | None, banks: list[int]) -> dict[str, Any]:
    """The TABLE of a real table with the turn-based fields of the contract (``pace``, ``turn_clock``, ``turn``)."""
    n = len(table["seats"])
    table.update(
        {
            "pace": "turn-based",
            "turn_clock": {"start_s": 259200, "per_move_s": 86400},
            "turn": {
                "seat": mover,
                "deadline": None,
                "deadline_ms": None,
                "banks_ms": banks[:n],
                "timeouts": [0, 1, 0, 3][:n],
                "kept": [False, False, False, True][:n],
            },
        }
    )
    return table


CATCH_UP = {
    "type": "catch_up",
    "since": "2026-11-26T21:05:00Z",
    "tricks": [
        {
            "hand": 0,
            "plays": [
                {"seat": 1, "card": "7C", "at": None},
                {"seat": 2, "card": "3A", "at": None},
                {"seat": 3, "card": "9F", "at": None},
                {"seat": 0, "card": "4B", "at": None},
            ],
            "taker": 2,
            "anemones": 1,
        },
        {
            "hand": 0,
            "plays": [
                {"seat": 2, "card": "8D", "at": None},
                {"seat": 3, "card": "2D", "at": None},
                {"seat": 0, "card": "10D", "at": None},
                {"seat": 1, "card": "5E", "at": None},
            ],
            "taker": None,
            "anemones": 0,
        },
        {
            "hand": 1,
            "plays": [
                {"seat": 3, "card": "6A", "at": None},
                {"seat": 0, "card": "1A", "at": None},
                {"seat": 1, "card": "9A", "at": None},
                {"seat": 2, "card": "11A", "at": None},
            ],
            "taker": 0,
            "anemones": 2,
        },
    ],
    "hands": [{"hand": 0, "scores": [4, -2, 7, 0]}],
    "totals": [4, -2, 7, 0],
}


def seated_turn_based(
    page: Page, server: str, catch_up: dict[str, Any] | None, banks: list[int]
) -> list[WebSocketRoute]:
    """Sit at a real Enemy Anemone table (you and three bots; you lead, so it waits for you) whose messages gain the
    turn-based fields, and whose first snapshot is followed by ``catch_up``; returns the page's socket routes."""
    tid, seat, token = started_table(
        server,
        {
            "game": "anemone",
            "options": {"players": 4, "rounds": 2},
            "name": "Mirae",
            "seed": 8,
            "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "heuristic"}] * 3,
        },
    )
    routes: list[WebSocketRoute] = []

    def handler(ws: WebSocketRoute) -> None:
        upstream = ws.connect_to_server()
        ws.on_message(upstream.send)
        routes.append(ws)

        def down(raw: str | bytes) -> None:
            msg = json.loads(raw)
            if isinstance(msg.get("table"), dict):
                turn_fields(msg["table"], (msg.get("view") or {}).get("turn", 0), banks)
            ws.send(json.dumps(msg))
            if msg.get("type") == "snapshot" and msg.get("view") and catch_up is not None:
                ws.send(json.dumps(catch_up))

        upstream.on_message(down)

    page.route_web_socket(re.compile(r".*/ws/tables/.*"), handler)
    sit(page, server, tid, seat, token)
    return routes


def test_coming_back_shows_what_happened_since_your_last_move(
    browser: Browser, server: str, screenshots: Path
) -> None:
    for w, hgt in SIZES:
        context = browser.new_context(
            viewport={"width": w, "height": hgt}, timezone_id="Asia/Seoul", locale="en-US"
        )
        try:
            page = context.new_page()
            seated_turn_based(page, server, CATCH_UP, [183_600_000, 2_705_000, 86_400_000, 259_200_000])
            box = page.locator("#catch-up")
            expect(box).to_be_visible(timeout=20000)
            expect(box.locator("h2")).to_have_text("Since your last move")
            expect(box.locator(".cusince")).to_have_text(
                "Your last move: Nov 27, 6:05 AM"
            )  # 21:05 UTC in Seoul
            hands = box.locator("section.cuhand")
            expect(hands).to_have_count(2)
            expect(hands.nth(0).locator("h3")).to_have_text("Hand 1")
            tricks = box.locator("li.cutrick")
            expect(tricks).to_have_count(3)
            assert tricks.nth(0).locator(".ccard").evaluate_all("els => els.map((e) => e.dataset.card)") == [
                "7C",
                "3A",
                "9F",
                "4B",
            ]
            expect(tricks.nth(0).locator(".cutake")).to_have_text("Bot 3 (Simple) took 1 anemone")
            expect(tricks.nth(0).locator(".tplay.taker")).to_have_attribute("data-seat", "2")
            expect(tricks.nth(1).locator(".cutake")).to_have_text("No anemone taken")
            expect(tricks.nth(2).locator(".cutake")).to_have_text("Mirae took 2 anemones")
            expect(hands.nth(0).locator(".handend")).to_have_text(
                "Hand 1 ended: Mirae +4 · Bot 2 (Simple) \u22122 · Bot 3 (Simple) +7 · Bot 4 (Simple) 0"
            )
            expect(box.locator(".cutotals")).to_have_text(
                "Totals now: Mirae 4 · Bot 2 (Simple) -2 · Bot 3 (Simple) 7 · Bot 4 (Simple) 0"
            )
            assert axe_serious(page) == []
            page.screenshot(path=str(screenshots / f"catch_up_{w}x{hgt}.png"))
            close = page.locator("#catchup-close")
            expect(close).to_be_in_viewport()
            close.click()
            expect(box).to_have_count(0)
        finally:
            context.close()


def test_no_summary_when_no_trick_was_played_since(page: Page, server: str) -> None:
    quiet = {**CATCH_UP, "tricks": [], "hands": []}
    seated_turn_based(page, server, quiet, [183_600_000, 2_705_000, 86_400_000, 259_200_000])
    expect(page.locator(".aseat")).to_have_count(4, timeout=20000)
    page.wait_for_function("() => window.__ct.catchUp")  # the message came
    expect(page.locator("#catch-up")).to_have_count(0)


def test_each_seat_shows_its_bank_and_the_seat_to_move_counts_down(
    browser: Browser, server: str, screenshots: Path
) -> None:
    for w, hgt in SIZES:
        context = browser.new_context(viewport={"width": w, "height": hgt})
        try:
            page = context.new_page()
            routes = seated_turn_based(page, server, None, [61_500, 2_705_000, 86_400_000, 259_200_000])
            clocks = page.locator(".aseat .seatclock")
            expect(clocks).to_have_count(4, timeout=20000)
            expect(clocks.nth(1)).to_have_text("45 min")
            expect(clocks.nth(2)).to_have_text("1 d")
            expect(clocks.nth(3)).to_have_text("3 d")
            mover = page.locator(".aseat[data-seat='0'] .seatclock")
            expect(mover).to_have_class(re.compile(r"\brunning\b"))
            expect(mover).to_have_text(
                re.compile(r"^(5\d|[0-9]) s$"), timeout=6000
            )  # 61.5 s ticking below a minute
            expect(clocks.nth(1)).to_have_text("45 min")  # the others stand still
            # the seat kept by its stand-in for the match, and the one that ran out of time once
            expect(page.locator(".aseat[data-seat='3']")).to_have_class(re.compile(r"\bstoodin\b"))
            expect(page.locator(".aseat[data-seat='3'] .badge.kept")).to_have_text("Bot keeps this seat")
            expect(page.locator(".aseat[data-seat='1'] .badge.timeouts")).to_have_text("1/3 out of time")
            assert axe_serious(page) == []
            page.screenshot(path=str(screenshots / f"banks_{w}x{hgt}.png"))
            # a hand ends: no ready step at a turn-based table (the next hand is dealt at once)
            routes[-1].send(
                json.dumps(
                    {
                        "type": "hand_over",
                        "hand": 0,
                        "scores": [3, 1, 0, 2],
                        "totals": [3, 1, 0, 2],
                        "ended": "out_of_cards",
                        "winners": None,
                    }
                )
            )
            dialog = page.locator(".overlay .handover")
            expect(dialog).to_be_visible()
            expect(page.locator("#continue")).to_have_text("Close")
            expect(dialog.locator(".readystep")).to_be_empty()
        finally:
            context.close()


# ---- the replay: each move's time (``at`` added to a real replay's steps) ----


def test_the_replay_shows_when_each_move_was_made(browser: Browser, server: str, screenshots: Path) -> None:
    tid, _, token = started_table(
        server,
        {
            "game": "anemone",
            "options": {"players": 4, "rounds": 1},
            "name": "ana",
            "seed": 8,
            "grace_seconds": 0,
            "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "heuristic"}] * 3,
        },
    )
    api(
        server, "POST", f"/api/tables/{tid}/leave", {"token": token}
    )  # the stand-in plays the seat to the end
    wait_for(
        lambda: api(server, "GET", f"/api/tables/{tid}")["status"] == "finished",
        timeout=90,
        what="the bots' match to end",
    )
    first = datetime(2026, 11, 27, 1, 5, tzinfo=UTC)

    def replay(route: Route) -> None:
        data = route.fetch().json()
        for k, step in enumerate(data["steps"]):
            step["at"] = iso(first + timedelta(minutes=7 * k)) if step.get("action") else None
        route.fulfill(json=data)

    context = browser.new_context(
        viewport={"width": 390, "height": 844}, timezone_id="Asia/Seoul", locale="en-US"
    )
    try:
        page = context.new_page()
        page.route(re.compile(r".*/api/tables/[^/]+/replay$"), replay)
        page.goto(f"{server}/?replay={tid}")
        expect(page.locator(".rinfo")).to_be_visible(timeout=20000)
        expect(page.locator(".rinfo .stepat")).to_have_count(0)  # the deal: no move, no time
        page.locator("#replay-forward").click()
        at = page.locator(".rinfo .stepat time")
        expect(at).to_have_text("Nov 27, 10:12 AM")  # step 1 at 01:12 UTC, in Seoul
        expect(at).to_have_attribute("datetime", "2026-11-27T01:12:00Z")
        page.screenshot(path=str(screenshots / "replay_at_390x844.png"))
    finally:
        context.close()


# ---- end to end on the real server: your games, the banks, coming back ----


def test_a_turn_based_game_from_the_lobby_and_back(browser: Browser, server: str, screenshots: Path) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        sign_up(page, server)
        made = page.request.post(
            server + "/api/tables",
            data={
                "game": "anemone",
                "options": {"players": 4, "rounds": 1},
                "seed": 8,
                "pace": "turn-based",
                "turn_clock": {"start_s": 86400, "per_move_s": 21600},
                "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "heuristic"}] * 3,
            },
        )
        assert made.ok, made.text()
        tid = made.json()["table"]["id"]
        page.goto(server + "/")
        row = page.locator(f"#your-games li.game-row[data-table='{tid}']")
        expect(row).to_have_attribute("data-turn", "true", timeout=15000)  # seat 1 leads: your turn
        expect(page).to_have_title("(1) cardtable")
        expect(row.locator(".tleft")).to_have_text(re.compile(r"^(23 h 5\d min|1 d) left$"))
        row.locator("a.btnlink").click()
        mine = page.locator(".aseat[data-seat='0'] .seatclock")
        expect(mine).to_have_class(re.compile(r"\brunning\b"), timeout=15000)
        expect(page.locator(".aseat[data-seat='1'] .seatclock")).to_have_text("1 d")
        assert page.locator("#catch-up").count() == 0  # nothing happened before your first move
        page.locator(".handcards .ccard.playable").first.click()
        # the three bots answer at once (the trick you led is taken); you come back later: what happened since
        page.wait_for_function("() => (window.__ct.view?.tricks || []).length >= 1")
        page.goto(server + "/?howto=anemone")
        page.goto(f"{server}/?table={tid}")
        box = page.locator("#catch-up")
        expect(box).to_be_visible(timeout=15000)
        expect(box.locator("li.cutrick").first.locator(".ccard")).to_have_count(4)
        page.screenshot(path=str(screenshots / "catch_up_real_390x844.png"))
        page.locator("#catchup-close").click()
        expect(box).to_have_count(0)
    finally:
        context.close()
