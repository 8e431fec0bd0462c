"""One bot, one name, on every page, in Korean and Japanese (docs/web.md, "Glossary"; names.js's ``botName``): a
signed-in player plays an Enemy Anemone match against one bot level on seats 2 and 3; the bots are "봇 2 (단순)"
and "봇 3 (단순)" (numbered as their seats) at the table, in the replay and in the player's list of matches, and the bot level is "봇 (단순)" /
「ボット（シンプル）」 on the leaderboard and on its own page, never its spec ("heuristic") or its seat name ("bot-1").
The player pages add up: the match is one row on the bot level's page (it held two seats), its summary counts
one match as its chart does, and the rating change says it is one. Screenshots of the table, the replay, the
leaderboard and both player pages in ko and ja at 1280x720 and 390x844 go to ``/tmp/shots_names/``."""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from test_players_pages import play_to_the_end
from webhelpers import sit

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/shots_names")
SIZES = [(1280, 720), (390, 844)]
WORDS = {  # the glossary's words (docs/web.md): bot level "Simple" on seats 2 and 3, the level as a player
    "ko": {
        "seats": ["봇 2 (단순)", "봇 3 (단순)"],
        "level": "봇 (단순)",
        "rating": "레이팅",
        "anemones": "말미잘",
    },
    "ja": {
        "seats": ["ボット2（シンプル）", "ボット3（シンプル）"],
        "level": "ボット（シンプル）",
        "rating": "レーティング",
        "anemones": "イソギンチャク",
    },
}
CODE_NAMES = re.compile(r"heuristic|bot-\d|\(simple\)|ismcts|greedy", re.IGNORECASE)
PERSON = "지우"


def open_in(page: Page, server: str, path: str, lang: str, ready: str) -> str:
    """Open ``path`` in ``lang`` and wait for ``ready``; the text of the page's main part."""
    page.evaluate("lang => localStorage.setItem('ct.lang', lang)", lang)
    page.goto(server + path)
    page.wait_for_selector(ready, timeout=15000)
    page.wait_for_timeout(150)  # the page's fonts and layout settle before a screenshot
    return page.locator("main").inner_text()


def test_a_bot_has_one_name_on_every_page(browser: Browser, fresh_server: str) -> None:
    server = fresh_server  # the bot level's page counts its matches: none from other tests
    SHOTS.mkdir(exist_ok=True)
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(server + "/?howto=nerts")
    page.evaluate("localStorage.setItem('ct.lang', 'ko'); localStorage.setItem('ct.trickHoldMs', '0')")
    headers = {"Origin": server}
    signed = page.request.post(
        server + "/api/accounts", data={"name": PERSON, "password": "a long password"}, headers=headers
    )
    assert signed.ok, signed.text()
    made = page.request.post(
        server + "/api/tables",
        headers=headers,
        data={
            "game": "anemone",
            "options": {"players": 3, "rounds": 1},
            "name": PERSON,
            "seats": [
                {"kind": "open"},
                {"kind": "bot", "bot": "heuristic"},
                {"kind": "bot", "bot": "heuristic"},
            ],
        },
    )
    assert made.ok, made.text()
    table_id, token = made.json()["table"]["id"], made.json()["token"]
    sit(page, server, table_id, 0, token)
    page.wait_for_selector(
        ".anemone-table .myhand", timeout=30000
    )  # one person and bots: it starts by itself
    at_table = page.locator("main").inner_text()
    for name in WORDS["ko"]["seats"]:
        assert name in at_table, at_table
    page.screenshot(path=str(SHOTS / "table-ko-1280x720.png"))
    play_to_the_end(page)
    expect(page.locator(".overlay .handover")).to_be_visible(timeout=20000)

    person_page = f"/?player={urllib.parse.quote(PERSON)}"
    for lang, words in WORDS.items():
        for w, h in SIZES:
            page.set_viewport_size({"width": w, "height": h})
            size = f"{w}x{h}"
            # the replay: the bots by seat, as at the table
            text = open_in(page, server, f"/?replay={table_id}", lang, ".rboard .seat, .rboard section")
            page.locator("#replay-last").click()
            text = page.locator("main").inner_text()
            assert all(name in text for name in words["seats"]), text
            assert not CODE_NAMES.search(text), text
            page.screenshot(path=str(SHOTS / f"replay-{lang}-{size}.png"))
            # the leaderboard: the bot level by its level word; once it shows the match
            text = ""
            for _ in range(50):
                text = open_in(page, server, "/?leaderboard=anemone", lang, ".boardtable, .boardbody p")
                if page.locator('.boardtable tr[data-name="heuristic"]').count():
                    break
                page.wait_for_timeout(200)
            row = page.locator('.boardtable tr[data-name="heuristic"]')
            expect(row.locator("td.name")).to_have_text(words["level"])
            assert not CODE_NAMES.search(text), text
            page.screenshot(path=str(SHOTS / f"leaderboard-{lang}-{size}.png"), full_page=True)
            # the bot level's page: its name, one match in the summary, on the chart and in the list (two seats)
            row.locator("td.name a").click()
            page.wait_for_selector(".playerpage .matchrow")
            expect(page.locator(".playerhead h1")).to_have_text(words["level"])
            panel = page.locator('.gamepanel[data-game="anemone"]')
            expect(panel.locator(".stat").nth(1).locator(".statv")).to_have_text("1")  # matches
            assert len((panel.locator("svg.ratingchart polyline").get_attribute("points") or "").split()) == 2
            expect(panel.locator("svg.ratingchart .chartcount")).to_contain_text("1")
            expect(page.locator(".matches .matchrow")).to_have_count(1)  # one match, though on two seats
            match = page.locator(".matches .matchrow")
            expect(match.locator(".delta")).to_contain_text(words["rating"])
            expect(match.locator(".opps")).to_contain_text(PERSON)
            text = page.locator("main").inner_text()
            assert not CODE_NAMES.search(text), text
            page.screenshot(path=str(SHOTS / f"bot-page-{lang}-{size}.png"), full_page=True)
            # the person's page: the bots by seat, as at the table; anemones in the glossary's word
            text = open_in(page, server, person_page, lang, ".playerpage .matchrow")
            expect(page.locator(".matches .matchrow")).to_have_count(1)
            opponents = page.locator(".matches .matchrow .opps").inner_text()
            assert all(name in opponents for name in words["seats"]), opponents
            assert words["anemones"] in text and not CODE_NAMES.search(text), text
            expect(page.locator(".matches .matchrow .delta")).to_contain_text(words["rating"])
            page.screenshot(path=str(SHOTS / f"person-page-{lang}-{size}.png"), full_page=True)
    assert not errors, errors
    ctx.close()
