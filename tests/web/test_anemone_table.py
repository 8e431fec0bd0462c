"""Two people (two browser contexts) sit at one Enemy Anemone table with two bots and play the whole game, one of
them reloading mid-game and coming back to the same seat and hand."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Browser, Page, expect
from webhelpers import state

pytestmark = pytest.mark.browser


def my_turn(page: Page) -> bool:
    st = state(page)
    view = st.get("view")
    return bool(view) and not view["over"] and view["turn"] == st["seat"]


def play_one(page: Page, use_anemone: bool) -> str:
    """Play (or discard) one card through the page: anemones first when asked, then a marked card."""
    st = state(page)
    view = st["view"]
    if view["must_discard"]:
        card = view["hand"][0]
    else:
        card = view["playable"][-1]
        chips = page.locator("button.anemchoice")
        if use_anemone and chips.count():
            chips.first.click()
            expect(chips.first).to_have_attribute("aria-pressed", "true")
    before = st["v"]
    page.locator(f'.handcards .ccard[data-card="{card}"]').click()
    page.wait_for_function("v => window.__ct.v > v", arg=before, timeout=5000)
    return card


def test_two_people_and_two_bots_play_enemy_anemone(browser: Browser, server: str, screenshots) -> None:  # type: ignore[no-untyped-def]
    ana_ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    bo_ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    ana, bo = ana_ctx.new_page(), bo_ctx.new_page()
    errors: list[str] = []
    for p in (ana, bo):
        p.on("pageerror", lambda e: errors.append(str(e)))

    ana.goto(server + "/")
    ana.fill("#player-name", "ana")
    ana.click("#custom > summary")  # the long form is behind "Custom table"
    ana.click("button[data-game=anemone]")
    ana.fill("[name=players]", "4")
    ana.fill("[name=rounds]", "1")
    ana.click("details.advanced summary")
    ana.fill("#seed", "5")
    ana.select_option("select.seat-kind[data-seat='1']", "open")
    ana.select_option("select.seat-kind[data-seat='2']", "heuristic")
    ana.select_option("select.seat-kind[data-seat='3']", "random")
    ana.click("#create")
    invite = ana.locator("#invite")
    expect(invite).to_have_value(re.compile(r"/\?table=[\w-]+$"))
    assert invite.input_value() == ana.url
    expect(ana.locator("#start")).to_be_disabled()

    # the friend opens the invite link, gives a name and joins
    bo.goto(invite.input_value())
    bo.fill("#join-name", "bo")
    bo.click("#join")
    expect(bo.locator(".waiting")).to_be_visible()
    expect(ana.locator("#start")).to_be_enabled(timeout=5000)
    ana.click("#start")
    for p in (ana, bo):
        p.wait_for_selector(".anemone-table .myhand")
    assert state(ana)["seat"] == 0 and state(bo)["seat"] == 1
    assert state(ana)["view"]["turn"] == 0  # seat 0 leads the first hand

    played = 0
    reloaded = False
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if ana.locator(".overlay .handover").count() and bo.locator(".overlay .handover").count():
            break
        acted = False
        for p in (ana, bo):
            if my_turn(p):
                play_one(p, use_anemone=played % 3 == 0)
                played += 1
                acted = True
                if played == 2:
                    ana.screenshot(path=str(screenshots / "anemone-play-1280x720.png"))
                    bo.screenshot(path=str(screenshots / "anemone-play-390x844.png"))
        if played >= 6 and not reloaded:
            before = state(bo)
            bo.reload()
            bo.wait_for_selector(".anemone-table .myhand")
            bo.wait_for_function("() => window.__ct.view")
            after = state(bo)
            # the same seat, and the same hand: only bo plays from it (others' plays may have moved on meanwhile)
            assert after["seat"] == before["seat"] == 1
            assert after["view"]["hand"] == before["view"]["hand"]
            assert after["v"] >= before["v"]
            expect(bo.locator(".handcards .ccard")).to_have_count(len(before["view"]["hand"]))
            reloaded = True
        if not acted:
            ana.wait_for_timeout(100)

    assert reloaded
    assert played >= 10
    for p in (ana, bo):
        expect(p.locator(".overlay .handover h2")).to_have_text("Game over", timeout=20000)
        expect(p.locator(".overlay .winner")).to_be_visible()
        expect(p.locator(".overlay table.scores tbody tr")).to_have_count(1)
    ana.screenshot(path=str(screenshots / "anemone-over-1280x720.png"))
    bo.screenshot(path=str(screenshots / "anemone-over-390x844.png"))
    # every card of the hand was scored: 40 cards plus one for each 3, 5 and 8 (12 of them)
    totals = [int(x) for x in ana.locator(".overlay table.scores tfoot th").all_inner_texts()[1:]]
    assert sum(totals) == 52
    assert not errors, errors
    ana_ctx.close()
    bo_ctx.close()
