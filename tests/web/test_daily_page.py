"""The daily deal page (``static/js/daily.js``, ``/?daily=GAME``; docs/web.md, "The daily deal") against the real
server: a signed-in player opens today's Nerts deal from the lobby, plays it (the table page, until the match ends)
and comes back to the standings with their row highlighted, their score, rank, percent and streak, the spread of
scores and the day's best replay; a second tab opened before the play is refused with the worded 409 and its button
says "You played today"; a past day (the date picker) has no results; a guest is told the try is unranked and never
appears in the standings. Screenshots in en/ko/ja at 1280x720 and 390x844 go to ``/tmp/shots_web30/``."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect
from webhelpers import api, axe_serious

from polling import clear_of_midnight_utc, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]  # a start near midnight waits (_one_day)

SHOTS = Path("/tmp/shots_web30")
SIZES = [(1280, 720), (390, 844)]


@pytest.fixture(autouse=True)
def _one_day() -> None:
    """These tests read "today" more than once: none starts in the last minutes of a UTC day."""
    clear_of_midnight_utc(240.0)


PLAYER = "Mina"
WORDS = {  # what the played page says in each language (the catalogues' wording)
    "en": {"button": "You played today", "streak": "1 day", "rank": "1 of 1", "you": "(you)"},
    "ko": {"button": "오늘은 이미 플레이했습니다", "streak": "1일", "rank": "1명 중 1위", "you": "(나)"},
    "ja": {"button": "今日はプレイ済みです", "streak": "1日", "rank": "1人中1位", "you": "（あなた）"},
}


def open_daily(page: Page, server: str, game: str, lang: str = "en", query: str = "") -> None:
    """Open the daily page of ``game`` in ``lang`` and wait for its standings (or their absence)."""
    page.evaluate("lang => localStorage.setItem('ct.lang', lang)", lang)
    page.goto(f"{server}/?daily={game}{query}")
    page.wait_for_selector("#daily-standings table, #daily-empty", timeout=15000)
    expect(page.locator("#daily-play")).to_be_visible()


def table_rows(page: Page) -> list[list[str]]:
    """The standings table's rows as text cells: rank, name (with the "(you)" mark), score, percent."""
    return [row.split("\t") for row in page.locator("#daily-standings tbody tr").all_inner_texts()]


def test_an_account_plays_the_daily_deal_and_sees_the_standings(browser: Browser, fresh_server: str) -> None:
    server = fresh_server  # the standings count every result of the day: none from other tests
    SHOTS.mkdir(exist_ok=True)
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "/?howto=nerts")
    page.evaluate("localStorage.setItem('ct.lang', 'en')")
    signed = page.request.post(
        server + "/api/accounts",
        data={"name": PLAYER, "password": "a long password"},
        headers={"Origin": server},
    )
    assert signed.ok, signed.text()

    # the lobby links the daily deal of each game
    page.goto(server + "/")
    page.locator("#daily-links a[data-daily='nerts']").click()
    expect(page).to_have_url(f"{server}/?daily=nerts")
    page.wait_for_selector("#daily-empty")
    today = datetime.datetime.now(datetime.UTC).date()
    expect(page.locator(".dailydate time")).to_have_attribute("datetime", today.isoformat())
    expect(page.locator("#daily-count")).to_have_text("0 players have played today's deal.")
    expect(page.locator(".dailydeal")).to_contain_text(
        "against Bot 2 (Intermediate planner), Bot 3 (Intermediate planner), Bot 4 (Intermediate planner)"
    )
    expect(page.locator("#daily-guest")).to_have_count(0)  # signed in: ranked
    expect(page.locator("#daily-play")).to_be_enabled()

    # a second tab opened before the play: its Play button is refused once the first has played
    other = ctx.new_page()
    other.goto(server + "/?daily=nerts")
    other.wait_for_selector("#daily-empty")

    page.locator("#daily-play").click()
    page.wait_for_url("**/?table=*")
    tid = page.url.split("table=")[1]
    # the player stays at the table (doing nothing) until the bots end the match: their result is scored
    wait_for(
        lambda: api(server, "GET", f"/api/tables/{tid}")["status"] == "finished",
        300,
        "the daily match's end",
        every=1.0,
    )
    standings: list[dict[str, Any]] = api(server, "GET", "/api/daily/nerts/standings")
    assert [r["name"] for r in standings] == [PLAYER], standings
    mine = standings[0]

    other.locator("#daily-play").click()
    expect(other.locator("#daily-msg")).to_have_text("You have played today's daily deal: come back tomorrow")
    expect(other.locator("#daily-play")).to_have_text("You played today")
    expect(other.locator("#daily-play")).to_be_disabled()
    other.close()

    for lang, words in WORDS.items():
        for width, height in SIZES:
            page.set_viewport_size({"width": width, "height": height})
            open_daily(page, server, "nerts", lang)
            expect(page.locator("#daily-play")).to_have_text(words["button"])
            expect(page.locator("#daily-play")).to_be_disabled()
            you = page.locator("#daily-you")
            expect(you).to_contain_text(str(mine["score"]))
            expect(you).to_contain_text(words["rank"])
            expect(you.locator(".streak")).to_contain_text(words["streak"])
            assert table_rows(page) == [["1", f"{PLAYER} {words['you']}", str(mine["score"]), "100%"]], (
                table_rows(page)
            )
            expect(page.locator("#daily-standings tr.mine")).to_have_attribute("data-name", PLAYER)
            # the spread: one bar, the player's, and its text alternative
            expect(page.locator(".spread .sbar.mine")).to_have_count(1)
            assert page.locator(".spread").get_attribute("role") == "img"
            assert str(mine["score"]) in (page.locator(".spread").get_attribute("aria-label") or "")
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            if width == 1280 and lang in ("en", "ko"):
                assert not axe_serious(page), axe_serious(page)
            page.screenshot(path=str(SHOTS / f"daily-{lang}-{width}x{height}.png"), full_page=True)

    # the best replay of the day (the player's own here) opens its replay
    page.set_viewport_size({"width": 1280, "height": 720})
    open_daily(page, server, "nerts", "en")
    expect(page.locator("#daily-best")).to_have_text(
        f"The best replay of the day: {PLAYER}, {mine['score']} points"
    )
    page.locator("#daily-best").click()
    expect(page).to_have_url(f"{server}/?replay={mine['table']}")
    page.wait_for_selector(".rinfo .what")

    # yesterday's standings, by the date picker; and back to today
    open_daily(page, server, "nerts", "en")
    yesterday = (today - datetime.timedelta(days=1)).isoformat()
    page.locator("#daily-date").fill(yesterday)
    expect(page).to_have_url(f"{server}/?daily=nerts&date={yesterday}")
    expect(page.locator("#daily-empty")).to_have_text("No finished result on this day yet.")
    expect(page.locator("#daily-stand-h")).to_contain_text("Standings of")
    page.locator("#daily-today").click()
    expect(page.locator("#daily-standings tr.mine")).to_have_count(1)
    assert not errors, errors
    ctx.close()


def test_a_guest_is_told_the_try_is_unranked(browser: Browser, server: str) -> None:
    ctx = browser.new_context(viewport={"width": 390, "height": 844})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "/?howto=nerts")
    for lang, text in (
        ("en", "your try is unranked"),
        ("ko", "순위에 들지 않습니다"),
        ("ja", "順位に入りません"),
    ):
        open_daily(page, server, "anemone", lang)
        expect(page.locator("#daily-guest")).to_contain_text(text)
        expect(page.locator("#daily-play")).to_be_enabled()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.screenshot(path=str(SHOTS / f"daily-guest-{lang}-390x844.png"), full_page=True)
    # a guest plays the deal (a table of its own, unranked) and never shows in the standings
    open_daily(page, server, "nerts", "en")
    before = api(server, "GET", "/api/daily/nerts/standings")
    page.locator("#daily-play").click()
    page.wait_for_url("**/?table=*")
    tid = page.url.split("table=")[1]
    token = page.evaluate("id => JSON.parse(localStorage.getItem(`ct.seat.${id}`)).token", tid)
    # the table starts once the page's connection says hello; then the guest leaves and the stand-in plays on
    wait_for(
        lambda: api(server, "GET", f"/api/tables/{tid}")["status"] == "playing",
        30,
        "the guest's match to start",
    )
    # someone else cannot watch it while the day lasts: told why once, and the page does not keep asking
    other = browser.new_context(viewport={"width": 390, "height": 844})
    watcher = other.new_page()
    sockets: list[str] = []
    watcher.on("websocket", lambda ws: sockets.append(ws.url))
    watcher.goto(f"{server}/?table={tid}&watch=1")
    expect(watcher.get_by_text("private until the end of its day")).to_be_visible(timeout=15000)
    watcher.wait_for_timeout(1500)  # the client's first retry would come within 0.5 s
    assert len(sockets) == 1, sockets
    other.close()
    page.goto(server + "/?howto=nerts")
    api(server, "POST", f"/api/tables/{tid}/leave", {"token": token})  # the stand-in ends it
    wait_for(
        lambda: api(server, "GET", f"/api/tables/{tid}")["status"] == "finished",
        300,
        "the guest's match's end",
        every=1.0,
    )
    assert api(server, "GET", "/api/daily/nerts/standings") == before
    assert not errors, errors
    ctx.close()
