"""The ready step between Nerts hands, as two people see it (``docs/protocol.md``, "Between hands"): two browsers
at one table with two bots; when the hand ends, the next one does not start behind the score dialog: it waits
until both people pressed Ready (the bots are ready), or, at another table, until the countdown ran out. The dialog
shows each seat's score breakdown and the target; screenshots in English, Korean and Japanese at 1280x720 and
844x390 (one person reloads for each, so the dialog is also rebuilt from a fresh connection)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect
from webhelpers import api, axe_serious, sit, state

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/shots_ready")
HAND_S = 120_000
"""Milliseconds a hand may take to end (a bot calls Nerts on a five-card Nerts pile)."""


def table_of_two_and_two_bots(server: str, ready_seconds: float, people: int = 2) -> tuple[str, list[str]]:
    """A started Nerts table: ``people`` persons (seats from 0) and greedy bots, short Nerts piles, the given
    countdown between hands; returns its id and the persons' tokens."""
    seats = [{"kind": "open"}] * people + [{"kind": "bot", "bot": "greedy:hard"}] * (4 - people)
    made = api(
        server,
        "POST",
        "/api/tables",
        {
            "game": "nerts",
            "name": "Ana",
            "autostart": False,
            "ready_seconds": ready_seconds,
            "options": {"players": 4, "nerts_pile_size": 5, "target_score": 100},
            "seats": seats,
        },
    )
    tid, tokens = made["table"]["id"], [made["token"]]
    for name in ("Bo", "Cy")[: people - 1]:
        tokens.append(api(server, "POST", f"/api/tables/{tid}/join", {"name": name})["token"])
    return tid, tokens


def start(server: str, tid: str, token: str) -> None:
    api(server, "POST", f"/api/tables/{tid}/start", {"token": token})


def hand_of(page: Page) -> tuple[int, bool]:
    """The hand the page shows (0-based) and whether it is over."""
    st: dict[str, Any] = state(page)
    return int(st.get("hand") or 0), bool((st.get("view") or {}).get("over"))


def wait_for_dialog(page: Page) -> None:
    expect(page.locator(".overlay .handover .readystep .countdown")).to_be_visible(timeout=HAND_S)


def test_the_next_hand_waits_for_both_people_to_press_ready(browser: Browser, server: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    tid, (ana_token, bo_token) = table_of_two_and_two_bots(server, ready_seconds=90)
    ana_ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    bo_ctx = browser.new_context(viewport={"width": 844, "height": 390}, has_touch=True, is_mobile=True)
    ana, bo = ana_ctx.new_page(), bo_ctx.new_page()
    errors: list[str] = []
    for page in (ana, bo):
        page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        sit(ana, server, tid, 0, ana_token)
        sit(bo, server, tid, 1, bo_token)
        start(server, tid, ana_token)
        for page in (ana, bo):
            page.wait_for_selector(".layout.mine")
        for page in (ana, bo):
            wait_for_dialog(page)
        assert hand_of(ana) == (0, True)

        dialog = ana.locator(".overlay .handover")
        # the breakdown: one row per seat, cards left x -2 and cards on foundations, the hand and the running total
        rows = dialog.locator("table.breakdown tbody tr")
        expect(rows).to_have_count(4)
        expect(dialog.locator("table.breakdown thead th")).to_have_count(5)
        hand_over = ana.evaluate("() => window.__ct.handOver")
        for seat in range(4):
            cells = rows.nth(seat).locator("td")
            left, found, points, total = (cells.nth(i).inner_text() for i in range(4))
            count = int(left.split(" ")[0])
            assert left.startswith(f"{count} \u00d7 \u22122 = ")
            number = int(found.replace("+", "").replace("\u2212", "-"))
            assert (
                number - 2 * count
                == int(points.replace("+", "").replace("\u2212", "-"))
                == hand_over["scores"][seat]
            )
            assert int(total.replace("\u2212", "-")) == hand_over["totals"][seat]
        expect(dialog.locator(".target")).to_have_text("Playing to 100 points")
        # who is ready: the bots; both people are waited for, with the countdown
        expect(dialog.locator(".readyseats li.ready")).to_have_count(2)
        expect(dialog.locator(".readyseats li.waiting")).to_have_count(2)
        expect(dialog.locator(".countdown")).to_contain_text("The next hand starts in")

        ana.locator(".overlay #continue").click()
        expect(ana.locator(".overlay #continue")).to_be_disabled()
        expect(ana.locator(".overlay #continue")).to_have_text("Ready \u2713")
        expect(bo.locator(".overlay .readyseats li.ready")).to_have_count(3)  # bo sees that Ana is ready
        expect(bo.locator(".overlay .waitingfor")).to_contain_text("Bo")

        # Bo opens the table again in each language and size (a new page, before the last one closes, so the seat
        # stays connected): the dialog is rebuilt from the new connection, and the next hand still waits for Bo
        for lang in ("en", "ko", "ja"):
            for width, height in ((1280, 720), (844, 390)):
                ctx = browser.new_context(viewport={"width": width, "height": height}, has_touch=width < 1000)
                page = ctx.new_page()
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(server + "/?howto=nerts")
                page.evaluate("lang => localStorage.setItem('ct.lang', lang)", lang)
                sit(page, server, tid, 1, bo_token)
                wait_for_dialog(page)
                expect(page.locator(".overlay .readyseats li.ready")).to_have_count(3)
                expect(page.locator(".overlay #continue")).to_be_enabled()
                page.screenshot(path=str(SHOTS / f"ready-{lang}-{width}x{height}.png"))
                box = page.locator(".overlay #continue").bounding_box()
                assert box is not None and box["y"] + box["height"] <= height, "the Ready button is cut off"
                bo_ctx.close()
                bo_ctx, bo = ctx, page
        ana.screenshot(path=str(SHOTS / "ready-en-1280x720-pressed.png"))
        assert axe_serious(ana) == []  # the dialog with its breakdown and the ready step passes axe-core
        assert hand_of(ana) == (0, True) and hand_of(bo) == (0, True)  # well past the old 1.5 s pause

        bo.locator(".overlay #continue").click()
        for page in (ana, bo):  # the next hand: the dialog closes by itself
            expect(page.locator(".overlay .handover")).to_have_count(0, timeout=10_000)
            page.wait_for_function(
                "() => window.__ct.hand === 1 && window.__ct.view && !window.__ct.view.over"
            )
        assert not errors, errors
    finally:
        ana_ctx.close()
        bo_ctx.close()


def test_the_countdown_starts_the_next_hand_for_someone_who_did_not_press(
    browser: Browser, server: str
) -> None:
    tid, (token,) = table_of_two_and_two_bots(server, ready_seconds=4, people=1)
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        sit(page, server, tid, 0, token)
        start(server, tid, token)
        page.wait_for_selector(".layout.mine")
        wait_for_dialog(page)
        assert hand_of(page) == (0, True)
        expect(page.locator(".overlay .readyseats li.waiting")).to_have_count(1)
        # nobody presses: the countdown runs out and the next hand starts, closing the dialog
        expect(page.locator(".overlay .handover")).to_have_count(0, timeout=15_000)
        page.wait_for_function("() => window.__ct.hand === 1 && window.__ct.view && !window.__ct.view.over")
        assert not errors, errors
    finally:
        ctx.close()


def test_enemy_anemone_hands_over_the_same_way(browser: Browser, server: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    made = api(
        server,
        "POST",
        "/api/tables",
        {
            "game": "anemone",
            "name": "Ana",
            "autostart": False,
            "ready_seconds": 90,
            "options": {"players": 3, "rounds": 2},
            "seats": [
                {"kind": "open"},
                {"kind": "bot", "bot": "random"},
                {"kind": "bot", "bot": "heuristic"},
            ],
        },
    )
    tid, token = made["table"]["id"], made["token"]
    ctx = browser.new_context(viewport={"width": 844, "height": 390}, has_touch=True)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        sit(page, server, tid, 0, token)
        start(server, tid, token)
        page.wait_for_selector(".anemone-table .myhand")
        # play the first legal card whenever it is this seat's turn, through the page's connection
        page.evaluate("""() => { window.__readyTest = setInterval(() => {
          const st = window.__ct; const legal = st.legal || [];
          if (st.view && !st.view.over && legal.length && window.__ctConn) window.__ctConn.act(legal[0]);
        }, 150); }""")
        wait_for_dialog(page)
        page.evaluate("() => clearInterval(window.__readyTest)")
        dialog = page.locator(".overlay .handover")
        expect(dialog.locator("table.breakdown thead th")).to_have_count(3)  # player, this hand, total
        expect(dialog.locator("table.breakdown tbody tr")).to_have_count(3)
        expect(dialog.locator(".target")).to_have_text("Rounds left: 1 of 2")
        expect(dialog.locator(".readyseats li.ready")).to_have_count(2)  # the bots
        page.screenshot(path=str(SHOTS / "ready-anemone-en-844x390.png"))
        assert hand_of(page) == (0, True)
        page.locator(".overlay #continue").click()  # the only person: the next hand starts at once
        expect(page.locator(".overlay .handover")).to_have_count(0, timeout=10_000)
        page.wait_for_function("() => window.__ct.hand === 1 && window.__ct.view && !window.__ct.view.over")
        assert not errors, errors
    finally:
        ctx.close()
