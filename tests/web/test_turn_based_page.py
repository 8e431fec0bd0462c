"""Turn-based Enemy Anemone in the browser (issue 29, js/turns.js): the custom table's Pace choice and turn clock
presets, the lobby's "Your games" panel with the count of your turns in the page title and on the favicon, each
seat's time bank at the table (with the time left in your bank on the "Your turn" bar), the seats a stand-in keeps,
the "Since your last move" summary of a ``catch_up`` message, and the time of each move in a replay.

Everything runs against the real server (conftest.py: ``turn_clock_min_s`` 1): the tables are made, joined and
played here through its API and its WebSocket (another device of the same player, or another player), with clocks
of seconds where a timeout is the point and of minutes to days where the page shows them."""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import APIRequestContext, Browser, Locator, Page, expect
from webhelpers import api, axe_serious, sit
from websockets.sync.client import connect

from polling import wait_for

pytestmark = pytest.mark.browser

SIZES = [(1280, 720), (390, 844)]


def sign_up(request: APIRequestContext, server: str, prefix: str = "Turns") -> str:
    """A new account named ``prefix`` and a few hex digits, signed in in the browser context of ``request`` (a
    page's or a context's); returns its name."""
    name = f"{prefix}{secrets.token_hex(3)}"
    res = request.post(server + "/api/accounts", data={"name": name, "password": "a long password"})
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
    sign_up(page.request, server)
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


# ---- the real server's turn-based tables, made and played from here ----

BOTS = [{"kind": "bot", "bot": "heuristic"}]
SEOUL = timezone(
    timedelta(hours=9)
)  # the browser's time zone in the tests of times (no daylight saving time)


def seoul(at: str) -> str:
    """An ISO 8601 moment as the page writes it in Seoul, in English: "Nov 27, 6:05 AM"."""
    d = datetime.fromisoformat(at.replace("Z", "+00:00")).astimezone(SEOUL)
    return f"{d:%b} {d.day}, {d.hour % 12 or 12}:{d:%M} {'AM' if d.hour < 12 else 'PM'}"


def table_of(server: str, table_id: str) -> dict[str, Any]:
    """The table's TABLE as ``GET /api/tables/{id}`` gives it."""
    return dict(api(server, "GET", f"/api/tables/{table_id}"))


def turn_table(
    request: APIRequestContext,
    server: str,
    clock: tuple[int, int],
    others: list[dict[str, Any]],
    *,
    join: APIRequestContext | None = None,
    rounds: int = 1,
    seed: int = 6,
) -> tuple[str, dict[int, str]]:
    """A turn-based Enemy Anemone table of four made by the account signed in on ``request`` (seat 0, which leads the
    first hand; dealt from ``seed``), its turn clock ``clock`` = (start_s, per_move_s), the other seats ``others`` (an open one is
    taken by the account of ``join``), started; returns its id and the people's seat tokens by seat."""
    made = request.post(
        server + "/api/tables",
        data={
            "game": "anemone",
            "options": {"players": 4, "rounds": rounds},
            "seed": seed,
            "pace": "turn-based",
            "turn_clock": {"start_s": clock[0], "per_move_s": clock[1]},
            "seats": [{"kind": "open"}, *others],
        },
    )
    assert made.ok, made.text()
    table_id, tokens = made.json()["table"]["id"], {0: made.json()["token"]}
    if join is not None:
        joined = join.post(f"{server}/api/tables/{table_id}/join", data={})
        assert joined.ok, joined.text()
        tokens[joined.json()["seat"]] = joined.json()["token"]
    started = request.post(f"{server}/api/tables/{table_id}/start", data={"token": tokens[0]})
    assert started.ok, started.text()
    return table_id, tokens


class SeatSocket:
    """A seat's own connection to the real server (``/ws/tables/{id}``, ``hello`` with its token): the player on
    another device, who plays the first legal move whenever asked. Keeps the latest ``view``, ``legal`` and TABLE,
    the events and ``hand_over`` messages seen and the ``catch_up`` received."""

    def __init__(self, server: str, table_id: str, token: str) -> None:
        self.stack = contextlib.ExitStack()
        url = server.replace("http://", "ws://", 1) + f"/ws/tables/{table_id}"
        self.ws = self.stack.enter_context(connect(url, open_timeout=10))
        self.ws.send(json.dumps({"type": "hello", "token": token}))
        self.seq, self.v, self.acked, self.pending = 0, -1, -1, False
        self.table: dict[str, Any] = {}
        self.view: dict[str, Any] | None = None
        self.legal: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.hand_overs: list[dict[str, Any]] = []
        self.catch_up: dict[str, Any] | None = None

    def __enter__(self) -> SeatSocket:
        return self

    def __exit__(self, *_: object) -> None:
        self.stack.close()

    def read(self, timeout: float) -> None:
        """Take the next message (``TimeoutError`` after ``timeout`` seconds)."""
        msg = json.loads(self.ws.recv(timeout=timeout))
        if isinstance(msg.get("table"), dict):
            self.table = msg["table"]
        if msg["type"] in ("snapshot", "update"):
            self.view, self.legal, self.v = msg.get("view"), msg.get("legal") or [], msg.get("v", self.v)
            self.events.extend(msg.get("events") or [])
        elif msg["type"] in ("ack", "reject"):
            self.pending = False
            self.acked = msg.get("v", self.acked)
        elif msg["type"] == "hand_over":
            self.hand_overs.append(msg)
        elif msg["type"] == "catch_up":
            self.catch_up = msg

    def watch(self, stop: Callable[[SeatSocket], Any], timeout: float = 10.0) -> None:
        """Read (and make no move) until ``stop(self)`` holds."""
        end = time.monotonic() + timeout
        while not stop(self):
            self.read(max(0.05, end - time.monotonic()))

    def play(
        self,
        stop: Callable[[SeatSocket], Any] = lambda _s: False,
        moves: int | None = None,
        timeout: float = 20.0,
    ) -> None:
        """Play the first legal move at each offer (one at a time, each acknowledged and its update seen) until
        ``stop(self)`` holds (checked before each move, which is then not made) or ``moves`` moves were made."""
        end = time.monotonic() + timeout
        made = 0
        while True:
            settled = self.view is not None and not self.pending and self.v >= self.acked
            if settled and (stop(self) or made == moves):
                return
            if settled and self.legal:
                self.seq += 1
                made += 1
                self.pending = True
                self.ws.send(json.dumps({"type": "action", "seq": self.seq, "action": self.legal[0]}))
                continue
            self.read(max(0.05, end - time.monotonic()))


def take_turns(
    server: str, table_id: str, tokens: dict[int, str], stop: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """Play the people's seats ``tokens`` of ``table_id`` by turns, each move from a connection of its own (people
    come and go between moves), until ``stop(view)`` holds when one of them is to move; returns that view."""
    while True:
        [seat] = wait_for(
            lambda: [s for s in [table_of(server, table_id)["turn"]["seat"]] if s in tokens],
            what="a person's turn",
        )
        with SeatSocket(server, table_id, tokens[seat]) as ws:
            ws.play(lambda s: bool(s.legal), timeout=10)
            assert ws.view is not None
            if stop(ws.view):
                return ws.view
            ws.play(moves=1)


def not_last(view: dict[str, Any]) -> bool:
    """Whether a seat to move now leaves others to play after it in this trick (of four)."""
    return len(view["trick"]) + len(view["trick_discards"]) < 3


def cards_of(locator: Locator) -> list[str]:
    """The card codes of the mini cards under ``locator``, in page order."""
    return list(locator.locator(".ccard").evaluate_all("els => els.map((e) => e.dataset.card)"))


# ---- the lobby's "Your games" ----


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
    mine = browser.new_context(viewport={"width": 1280, "height": 720})
    theirs = browser.new_context()
    try:
        sign_up(mine.request, server, "Mirae")
        haruto = sign_up(theirs.request, server, "Haruto")
        pair = [{"kind": "open"}, *BOTS * 2]
        # your turn with 45 min 30 s on the clock after a trick; your turn with 5 h 20 min 30 s, nothing played yet;
        # Haruto's turn after a trick, your bank full at 2 d 3 h 30 s (each move gains the whole start back)
        soon, soon_tokens = turn_table(mine.request, server, (2730, 2730), pair, join=theirs.request)
        later, later_tokens = turn_table(mine.request, server, (19230, 19230), pair, join=theirs.request)
        waiting, waiting_tokens = turn_table(
            mine.request, server, (183630, 183630), pair, join=theirs.request, seed=7
        )
        soon_view = take_turns(
            server, soon, soon_tokens, lambda v: bool(v["tricks"]) and v["turn"] == 0 and not_last(v)
        )
        waiting_view = take_turns(
            server, waiting, waiting_tokens, lambda v: bool(v["tricks"]) and v["turn"] == 1
        )
        page = mine.new_page()
        page.goto(server + "/")
        rows = page.locator("#your-games li.game-row")
        expect(rows).to_have_count(3)
        assert [rows.nth(i).get_attribute("data-table") for i in range(3)] == [soon, later, waiting]
        assert [rows.nth(i).get_attribute("data-turn") for i in range(3)] == ["true", "true", "false"]
        expect(rows.nth(0).locator(".badge.yourturn")).to_have_text("Your turn")
        expect(rows.nth(0).locator(".tleft")).to_have_text("45 min left")
        expect(rows.nth(1).locator(".tleft")).to_have_text("5 h 20 min left")
        expect(rows.nth(2).locator(".tleft")).to_have_text("Your bank: 2 d 3 h")
        expect(rows.nth(2).locator(".waitfor")).to_have_text(f"Waiting for {haruto}")
        for row, view in ((rows.nth(0), soon_view), (rows.nth(2), waiting_view)):
            last = view["tricks"][-1]
            assert cards_of(row.locator(".lasttrick .tplay")) == [
                p["card"] for p in last["plays"] + last["discards"]
            ]
        expect(rows.nth(1).locator(".lasttrick")).to_have_text("No trick played yet")
        expect(rows.nth(0).locator("a.btnlink")).to_have_attribute("href", f"/?table={soon}")
        expect(page).to_have_title("(2) cardtable")
        expect(page.locator("#turn-count")).to_have_text("2 to play")
        icon = page.evaluate(FAVICON_JS)
        assert icon["png"] and icon["r"] > 180 and icon["g"] < 90 and icon["b"] < 90, icon  # the red badge
        assert axe_serious(page) == []
        for w, hgt in SIZES:
            page.set_viewport_size({"width": w, "height": hgt})
            expect(rows.nth(2).locator("a.btnlink")).to_be_visible()
            assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")  # nothing sticks out
            page.screenshot(path=str(screenshots / f"your_games_{w}x{hgt}.png"), full_page=True)
        # you move at both tables (from another device): Haruto's turn everywhere, seen at the lobby's next refresh
        for table_id, tokens in ((soon, soon_tokens), (later, later_tokens)):
            with SeatSocket(server, table_id, tokens[0]) as ws:
                ws.play(moves=1)
        expect(rows.nth(0)).to_have_attribute("data-turn", "false", timeout=12000)
        expect(rows).to_have_count(3)
        expect(page.locator("#your-games li.game-row[data-turn=true]")).to_have_count(0)
        expect(page.locator("#your-games .waitfor")).to_have_text([f"Waiting for {haruto}"] * 3)
        expect(page).to_have_title("cardtable")
        expect(page.locator("#turn-count")).to_be_hidden()
        expect(page.locator('link[rel="icon"]')).to_have_attribute("href", re.compile("^data:image/svg"))
        # the move earned its per-move time back, up to the start: 45 min 30 s again
        expect(page.locator(f"#your-games li.game-row[data-table='{soon}'] .tleft")).to_have_text(
            "Your bank: 45 min"
        )
        # the link opens the table with the seat the account holds; Haruto's clock runs there
        page.locator(f"#your-games li.game-row[data-table='{waiting}'] a.btnlink").click()
        expect(page).to_have_url(f"{server}/?table={waiting}")
        assert page.evaluate(f"JSON.parse(localStorage.getItem('ct.seat.{waiting}'))") == {
            "seat": 0,
            "token": waiting_tokens[0],
        }
        expect(page.locator(".aseat[data-seat='1'] .seatclock")).to_have_class(re.compile(r"\brunning\b"))
    finally:
        mine.close()
        theirs.close()


def test_a_guest_sees_no_your_games_panel(page: Page, server: str) -> None:
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if r.url.endswith("/api/me/seats") else None)
    page.goto(server + "/")
    expect(page.locator("#custom")).to_be_visible()
    expect(page.locator("#your-games")).to_be_hidden()
    expect(page).to_have_title("cardtable")
    assert asked == []  # a guest's lobby does not ask for seats it cannot have


# ---- at the table: banks, stand-ins, no ready step, the catch-up ----


def names_at(page: Page) -> list[str]:
    """The seats' names as the table page shows them (once it shows the four seats)."""
    names = page.locator(".aseat > header > strong")
    expect(names).to_have_count(4)
    return names.all_inner_texts()


def signed(n: int) -> str:
    """A hand's score as the summary writes it: "+12", "\u22124", "0"."""
    return f"+{n}" if n > 0 else f"\u2212{-n}" if n < 0 else "0"


def test_coming_back_shows_what_happened_since_your_last_move(
    browser: Browser, server: str, screenshots: Path
) -> None:
    context = browser.new_context(
        viewport={"width": 1280, "height": 720}, timezone_id="Asia/Seoul", locale="en-US"
    )
    try:
        sign_up(context.request, server, "Mirae")
        table_id, tokens = turn_table(context.request, server, (7200, 3600), BOTS * 3, rounds=2)
        # you play hand 1 to your last card, which the bots' cards follow: they end the trick and the hand, and
        # the next hand comes round to you
        with SeatSocket(server, table_id, tokens[0]) as ws:
            ws.play(lambda s: len(s.view["hand"]) == 1 and s.legal)
            assert not_last(ws.view)  # seed 6: others play after your last card
            ws.play(moves=1)
            ws.play(lambda s: s.hand_overs and s.legal)
        last = [e for e in ws.events if e["type"] == "trick_won"][-1]
        [ended] = ws.hand_overs
        # what the server tells a seat coming back, read by a connection of the seat's own
        with SeatSocket(server, table_id, tokens[0]) as again:
            again.watch(lambda s: s.catch_up is not None)
        back = again.catch_up
        assert back is not None and back["since"] is not None
        assert [t["hand"] for t in back["tricks"]] == [0] and back["hands"][0]["scores"] == ended["scores"]
        page = context.new_page()
        page.goto(server + "/?howto=anemone")
        page.evaluate("localStorage.setItem('ct.trickHoldMs', '0')")  # no pause on finished tricks
        sit(page, server, table_id, 0, tokens[0])
        box = page.locator("#catch-up")
        expect(box).to_be_visible()
        assert page.evaluate("window.__ct.catchUp") == back
        names = names_at(page)
        expect(box.locator("h2")).to_have_text("Since your last move")
        expect(box.locator(".cusince")).to_have_text(f"Your last move: {seoul(back['since'])}")
        expect(box.locator(".cusince time")).to_have_attribute("datetime", back["since"])
        hands = box.locator("section.cuhand")
        expect(hands).to_have_count(1)
        expect(hands.nth(0).locator("h3")).to_have_text("Hand 1")
        tricks = box.locator("li.cutrick")
        expect(tricks).to_have_count(1)
        shown = cards_of(tricks.nth(0))
        assert shown == [p["card"] for p in back["tricks"][0]["plays"] + back["tricks"][0]["discards"]]
        assert sorted(shown) == sorted(last["cards"])  # the trick the bots completed after your last card
        expect(tricks.nth(0).locator(".cutake")).to_have_text(f"{names[last['lowest']]} took 1 anemone")
        expect(tricks.nth(0).locator(".tplay.taker")).to_have_attribute("data-seat", str(last["lowest"]))
        expect(hands.nth(0).locator(".handend")).to_have_text(
            "Hand 1 ended: "
            + " · ".join(f"{n} {signed(s)}" for n, s in zip(names, ended["scores"], strict=True))
        )
        expect(box.locator(".cutotals")).to_have_text(
            "Totals now: "
            + " · ".join(f"{n} {signed(s).lstrip('+')}" for n, s in zip(names, ended["totals"], strict=True))
        )
        assert axe_serious(page) == []
        close = page.locator("#catchup-close")
        for w, hgt in SIZES:
            page.set_viewport_size({"width": w, "height": hgt})
            expect(close).to_be_in_viewport()
            page.screenshot(path=str(screenshots / f"catch_up_{w}x{hgt}.png"))
        close.click()
        expect(box).to_have_count(0)
    finally:
        context.close()


def test_no_summary_when_no_trick_was_played_since(page: Page, server: str) -> None:
    sign_up(page.request, server)
    table_id, tokens = turn_table(page.request, server, (7200, 3600), BOTS * 3)

    def others_moved_since_my_last_card_ended_a_trick(s: SeatSocket) -> bool:
        done = (s.view or {}).get("tricks") or []
        if not (s.legal and done):
            return False
        last = max(done[-1]["plays"] + done[-1]["discards"], key=lambda p: p["order"])
        return (
            last["seat"] == 0
            and done[-1]["winner"] != 0
            and bool(s.view["trick"] or s.view["trick_discards"])
        )

    with SeatSocket(server, table_id, tokens[0]) as ws:
        ws.play(others_moved_since_my_last_card_ended_a_trick)
        current = ws.view["trick"] + ws.view["trick_discards"]
    sit(page, server, table_id, 0, tokens[0])
    page.wait_for_function("() => window.__ct?.catchUp")  # the message came
    back = page.evaluate("window.__ct.catchUp")
    assert back["since"] is not None and back["tricks"] == [] and back["hands"] == []
    expect(page.locator(".aboard section.trick .played")).to_have_count(len(current))  # others moved since
    expect(page.locator("#catch-up")).to_have_count(0)


def test_each_seat_shows_its_bank_and_the_seat_to_move_counts_down(
    browser: Browser, server: str, screenshots: Path
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    theirs = browser.new_context()
    try:
        sign_up(context.request, server)
        haruto = sign_up(theirs.request, server, "Haruto")
        pair = [{"kind": "open"}, *BOTS * 2]
        table_id, tokens = turn_table(context.request, server, (60, 60), pair, join=theirs.request, rounds=2)
        page = context.new_page()
        page.goto(server + "/?howto=anemone")
        page.evaluate("localStorage.setItem('ct.trickHoldMs', '0')")  # no pause on finished tricks
        sit(page, server, table_id, 0, tokens[0])
        clocks = page.locator(".aseat .seatclock")
        expect(clocks).to_have_count(2)  # the people's: a bot never runs out of time
        expect(
            page.locator(".aseat[data-seat='2'] .seatclock, .aseat[data-seat='3'] .seatclock")
        ).to_have_count(0)
        theirs_clock = page.locator(".aseat[data-seat='1'] .seatclock")
        expect(theirs_clock).to_have_text("1 min")  # Haruto's bank, whole
        expect(theirs_clock).to_have_attribute("aria-label", "Time bank: 1 min")
        mover = page.locator(".aseat[data-seat='0'] .seatclock")
        expect(mover).to_have_class(re.compile(r"\brunning\b"))
        expect(mover).to_have_text(re.compile(r"^[1-5]?\d s$"))  # 60 s ticking below a minute
        deadline_ms = table_of(server, table_id)["turn"]["deadline_ms"]
        shown = int(mover.inner_text().split()[0])
        assert abs(shown - (deadline_ms / 1000 - time.time())) <= 2  # the server's deadline, to a tick
        expect(mover).not_to_have_text(mover.inner_text())  # it counts down
        expect(theirs_clock).to_have_text("1 min")  # the other stands still
        expect(theirs_clock).not_to_have_class(re.compile(r"\brunning\b"))
        # the "Your turn" bar says what is left in your bank
        bar = page.locator(".turninfo.mine")
        expect(bar).to_contain_text("Your turn")
        expect(bar.locator(".turnbank")).to_have_text(re.compile(r"^[1-5]?\d s left in your bank$"))
        assert axe_serious(page) == []
        for w, hgt in SIZES:
            page.set_viewport_size({"width": w, "height": hgt})
            expect(bar.locator(".turnbank")).to_be_in_viewport()
            page.screenshot(path=str(screenshots / f"banks_{w}x{hgt}.png"))
        # you move (from another device): Haruto's clock runs, yours stands at what was left plus the 60 s per move,
        # never above the 60 s start; the bar leaves your turn
        with SeatSocket(server, table_id, tokens[0]) as ws:
            ws.play(moves=1)
        expect(theirs_clock).to_have_class(re.compile(r"\brunning\b"))
        expect(mover).to_have_text("1 min")
        expect(page.locator(".turninfo")).to_have_text(f"{haruto} to play")
        expect(page.locator(".turnbank")).to_have_count(0)
        # the first hand ends (both play on from elsewhere): no ready step at a turn-based table
        take_turns(server, table_id, tokens, lambda v: v["round"] == 2)
        dialog = page.locator(".overlay .handover")
        expect(dialog).to_be_visible()
        expect(page.locator("#continue")).to_have_text("Close")
        # the next hand is dealt meanwhile (the bar says so) while the scores stay, with no ready step, until closed
        expect(page.locator(".abar .hinfo")).to_contain_text("Round 2 of 2")
        expect(dialog.locator(".readystep")).to_be_empty()
        page.locator("#continue").click()
        expect(dialog).to_have_count(0)
    finally:
        context.close()
        theirs.close()


@pytest.fixture(scope="module")
def kept_match(browser: Browser, server: str) -> dict[str, Any]:
    """A finished turn-based match with a clock of 1 s: Haruto (seat 1) never came, so his stand-in kept his seat
    after three timeouts; you (seat 0) let your first turn's second pass, then played each move at once. Its
    ``id``, the people's ``tokens`` by seat and its final ``table``."""
    mine, theirs = browser.new_context(), browser.new_context()
    try:
        sign_up(mine.request, server, "Mirae")
        sign_up(theirs.request, server, "Haruto")
        table_id, tokens = turn_table(
            mine.request, server, (1, 1), [{"kind": "open"}, *BOTS * 2], join=theirs.request
        )
        wait_for(lambda: table_of(server, table_id)["turn"]["timeouts"][0] >= 1, what="your first timeout")
        with SeatSocket(server, table_id, tokens[0]) as ws:
            ws.play(lambda s: any(h["winners"] is not None for h in s.hand_overs), timeout=30)
        final = wait_for(
            lambda: (t := table_of(server, table_id))["status"] == "finished" and t, what="the end"
        )
        return {"id": table_id, "tokens": tokens, "table": final}
    finally:
        mine.close()
        theirs.close()


def test_a_seat_kept_by_its_stand_in_and_a_seat_out_of_time_once_are_marked(
    page: Page, server: str, kept_match: dict[str, Any]
) -> None:
    turn = kept_match["table"]["turn"]
    assert turn["kept"][1] and turn["timeouts"][1] == 3  # Haruto: out of time thrice
    assert 1 <= turn["timeouts"][0] < 3 and not turn["kept"][0]  # you: once (twice if this machine was slow)
    page.set_viewport_size({"width": 1280, "height": 720})
    sit(page, server, kept_match["id"], 0, kept_match["tokens"][0])
    seats = page.locator(".aseat")
    expect(seats).to_have_count(4)
    expect(page.locator(".aseat[data-seat='1']")).to_have_class(re.compile(r"\bstoodin\b"))
    expect(page.locator(".aseat[data-seat='1'] .badge.kept")).to_have_text("Bot keeps this seat")
    expect(page.locator(".aseat[data-seat='1'] .seatclock")).to_have_count(0)  # a bank it no longer needs
    expect(page.locator(".aseat[data-seat='0'] .badge.timeouts")).to_have_text(
        f"{turn['timeouts'][0]}/3 out of time"
    )
    for s in (2, 3):  # the bots never ran out of time
        expect(
            page.locator(f".aseat[data-seat='{s}'] .badge.kept, .aseat[data-seat='{s}'] .badge.timeouts")
        ).to_have_count(0)
    expect(page.locator(".aseat[data-seat='0']")).not_to_have_class(re.compile(r"\bstoodin\b"))
    expect(page.locator(".seatclock.running")).to_have_count(0)  # the match is over: no clock runs


# ---- the replay: each move's time ----


def test_the_replay_shows_when_each_move_was_made(
    browser: Browser, server: str, screenshots: Path, kept_match: dict[str, Any]
) -> None:
    steps = api(server, "GET", f"/api/tables/{kept_match['id']}/replay")["steps"]
    moves = [s for s in steps if s.get("action")]
    assert steps[0]["at"] is None and all(s["at"] for s in moves)
    assert [s["at"] for s in moves] == sorted(s["at"] for s in moves)
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, timezone_id="Asia/Seoul", locale="en-US"
    )
    try:
        page = context.new_page()
        page.goto(f"{server}/?replay={kept_match['id']}")
        expect(page.locator(".rinfo")).to_be_visible()
        expect(page.locator(".rinfo .stepat")).to_have_count(0)  # the deal: no move, no time
        at = page.locator(".rinfo .stepat time")
        for step in steps[1:3]:
            page.locator("#replay-forward").click()
            expect(at).to_have_attribute("datetime", step["at"])
            expect(at).to_have_text(seoul(step["at"]))
        page.screenshot(path=str(screenshots / "replay_at_390x844.png"))
    finally:
        context.close()


# ---- end to end on the real server: your games, the banks, coming back ----


def test_a_turn_based_game_from_the_lobby_and_back(browser: Browser, server: str, screenshots: Path) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        sign_up(page.request, server)
        tid, _ = turn_table(page.request, server, (86400, 21600), BOTS * 3)
        page.goto(server + "/")
        row = page.locator(f"#your-games li.game-row[data-table='{tid}']")
        expect(row).to_have_attribute("data-turn", "true")  # you lead: your turn
        expect(page).to_have_title("(1) cardtable")
        expect(row.locator(".tleft")).to_have_text(re.compile(r"^(23 h 5\d min|1 d) left$"))
        row.locator("a.btnlink").click()
        mine = page.locator(".aseat[data-seat='0'] .seatclock")
        expect(mine).to_have_class(re.compile(r"\brunning\b"), timeout=15000)
        expect(page.locator(".aseat .seatclock")).to_have_count(1)  # yours: the bots keep no clock
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
