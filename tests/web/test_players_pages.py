"""A new player signs up, plays a one-round Enemy Anemone match against a bot to the end, and finds their new
rating on the leaderboard and on their player page's chart; screenshots of the account, leaderboard and player
pages in English, Korean and Japanese at 1280x720 and 390x844 (``screenshots/``)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from webhelpers import state

pytestmark = pytest.mark.browser

SIZES = [(1280, 720), (390, 844)]
LANGS = ["en", "ko", "ja"]


def play_to_the_end(page: Page) -> None:
    """Play every turn of this seat (the first marked card, or a discard) until the game-over overlay shows."""
    deadline = time.monotonic() + 120
    while not page.locator(".overlay .handover").count():
        assert time.monotonic() < deadline, "the match did not end"
        st = state(page)
        view = st.get("view")
        if not view or view["over"] or view["turn"] != st["seat"]:
            page.wait_for_timeout(100)
            continue
        card = view["hand"][0] if view["must_discard"] else view["playable"][-1]
        before = st["v"]
        page.locator(f'.handcards .ccard[data-card="{card}"]').click()
        page.wait_for_function("v => window.__ct.v > v || document.querySelector('.overlay .handover')", arg=before,
                               timeout=5000)


def shoot(browser: Browser, server: str, shots: Path, path: str, name: str, cookies: list | None = None) -> None:  # type: ignore[type-arg]
    for lang in LANGS:
        for w, hgt in SIZES:
            ctx = browser.new_context(viewport={"width": w, "height": hgt}, is_mobile=w < 500, has_touch=w < 500)
            if cookies:
                ctx.add_cookies(cookies)
            page = ctx.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
            page.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
            page.goto(server + "/?howto=nerts")
            page.evaluate("lang => localStorage.setItem('ct.lang', lang)", lang)
            page.goto(server + path)
            page.wait_for_selector(".acctpage, .boardtable, .boardbody p, .playerpage", timeout=10000)
            page.wait_for_selector(".acctnav a")
            page.wait_for_timeout(150)
            page.screenshot(path=str(shots / f"{name}-{lang}-{w}x{hgt}.png"), full_page=True)
            # nothing is left untranslated: no catalogue key shows as such
            text = page.locator("main").inner_text()
            assert not re.search(r"\b(account|board|player|code|nav)\.[a-z_]+\b", text), text
            if lang != "en":
                assert "Leaderboard" not in page.locator("header.top").inner_text()
            assert not errors, errors
            ctx.close()


def test_sign_up_play_a_bot_and_see_the_rating(browser: Browser, server: str, screenshots: Path) -> None:
    shoot(browser, server, screenshots, "/?account=1", "account-signup")
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(server + "/")
    page.click(".acctnav a.signin")
    page.fill("#signup-name", "Mirae 미래")
    page.fill("#signup-password", "a long password")
    page.click("#signup-submit")
    expect(page.locator(".acctnav a.me")).to_have_text("Mirae 미래")
    assert page.url.rstrip("/") == server

    # a one-round Enemy Anemone match against a bot, from the lobby
    page.click("#custom > summary")  # the long form is behind "Custom table"
    page.click("button[data-game=anemone]")
    page.fill("[name=players]", "2")
    page.fill("[name=rounds]", "1")
    page.select_option("select.seat-kind[data-seat='1']", "heuristic")
    page.click("#create")
    page.wait_for_selector(".anemone-table .myhand", timeout=30000)  # one person and bots: it starts by itself
    assert state(page)["table"]["seats"][0]["name"] == "Mirae 미래"  # the seat took the account's name
    play_to_the_end(page)
    expect(page.locator(".overlay .handover h2")).to_have_text("Game over", timeout=20000)

    # the leaderboard shows the new rating, the player page its chart
    deadline = time.monotonic() + 20
    page.goto(server + "/?leaderboard=anemone")
    row = page.locator('.boardtable tr[data-name="Mirae 미래"]')
    while not row.count():
        assert time.monotonic() < deadline, "no rating on the leaderboard"
        page.wait_for_timeout(300)
        page.reload()
        page.wait_for_selector(".boardtable, .boardbody p")
    expect(page.locator('.boardtable tr[data-name="heuristic"]')).to_have_count(1)  # the bot level is rated too
    rating = row.locator("td.rating").inner_text()
    assert float(rating) != 0.0
    row.locator("a").click()
    expect(page.locator(".playerhead h1")).to_have_text("Mirae 미래")
    panel = page.locator('.gamepanel[data-game="anemone"]')
    expect(panel.locator("svg.ratingchart polyline")).to_have_count(1)
    points = panel.locator("svg.ratingchart polyline").get_attribute("points") or ""
    assert len(points.split()) == 2  # the start and one rated match
    expect(panel.locator(".stat .statv").first).to_have_text(rating)
    expect(page.locator(".matches .matchrow")).to_have_count(1)
    expect(page.locator(".matches .matchrow a.replay")).to_have_attribute("href", re.compile(r"/\?replay="))
    page.locator(".matches .matchrow a.replay").click()
    page.wait_for_url(re.compile(r"\?replay="))
    assert not errors, errors

    cookies = ctx.cookies()
    shoot(browser, server, screenshots, "/?leaderboard=anemone", "leaderboard", cookies)
    shoot(browser, server, screenshots, f"/?player={'Mirae%20%EB%AF%B8%EB%9E%98'}", "player", cookies)
    shoot(browser, server, screenshots, "/?account=1", "account-me", cookies)
    ctx.close()
