"""Rotated deals in the browser (issue 30): a person creates a 3-seat Enemy Anemone table with ``deals: rotated``
from the lobby's Custom table form, plays its 3 hands against two bots, and the game-over dialog's score table
groups the hands by deal (one deal, played from every seat), as does the replay page's; the option is worded in
each catalogue. Screenshots at 390x844 and 1280x720 under ``/tmp/shots_rotated/`` (looked at by hand)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from webhelpers import api, state

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/shots_rotated")
"""Where this test's screenshots go."""


def my_turn(page: Page) -> bool:
    st = state(page)
    view = st.get("view")
    return bool(view) and not view["over"] and view["turn"] == st["seat"]


def play_one(page: Page) -> None:
    """Play (or discard) one card through the page: the last marked card, or the first card when discarding."""
    st = state(page)
    view = st["view"]
    card = view["hand"][0] if view["must_discard"] else view["playable"][-1]
    page.locator(f'.handcards .ccard[data-card="{card}"]').click()
    page.wait_for_function("v => window.__ct.v > v", arg=st["v"], timeout=5000)


def both_sizes(page: Page, name: str) -> None:
    """Screenshots of the page as it is at 1280x720, then at 390x844 (the viewport is left at 1280x720)."""
    SHOTS.mkdir(exist_ok=True)
    for width, height in ((1280, 720), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(150)
        page.screenshot(path=str(SHOTS / f"{name}-{width}x{height}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 720})


@pytest.mark.parametrize(("lang", "rotated"), [("ko", "자리 돌려 배분"), ("ja", "席をローテーション")])
def test_the_deals_option_is_worded_in_each_language(
    browser: Browser, server: str, lang: str, rotated: str
) -> None:
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(server + "/")
    page.evaluate("(lang) => localStorage.setItem('ct.lang', lang)", lang)
    page.reload()
    page.click("#custom > summary")
    page.click("button[data-game=anemone]")
    expect(page.locator("#opt-deals option").nth(1)).to_have_text(rotated)
    page.select_option("#opt-deals", label=rotated)
    page.locator("[data-option=deals]").scroll_into_view_if_needed()
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"lobby-deals-{lang}-390x844.png"))
    page.close()


def test_a_rotated_table_from_the_custom_form_groups_its_scores_by_deal(
    browser: Browser, server: str
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "/")
    page.evaluate(
        "() => { localStorage.setItem('ct.lang', 'en'); localStorage.setItem('ct.trickHoldMs', '0'); }"
    )
    page.reload()
    page.fill("#player-name", "ana")
    page.click("#custom > summary")
    page.click("button[data-game=anemone]")
    page.fill("[name=players]", "3")
    page.fill("[name=rounds]", "3")
    deals = page.locator("#opt-deals")
    expect(deals.locator("option")).to_have_text(["Fresh each hand", "Rotated between seats"])
    page.select_option("#opt-deals", label="Rotated between seats")
    page.select_option("select.seat-kind[data-seat='1']", "heuristic")
    page.select_option("select.seat-kind[data-seat='2']", "heuristic")
    page.locator("[data-option=deals]").scroll_into_view_if_needed()
    both_sizes(page, "lobby-deals")
    page.click("#create")
    page.wait_for_url(re.compile(r"/\?table=[\w-]+$"))
    table_id = page.url.rsplit("=", 1)[1]
    if page.locator("#start").count():
        page.click("#start")
    page.wait_for_selector(".anemone-table .myhand", timeout=15000)
    assert state(page)["table"]["options"]["deals"] == "rotated"

    deadline = time.monotonic() + 180
    over = page.locator(".overlay .handover .winner")
    while not over.count():
        if time.monotonic() > deadline:
            page.screenshot(path="/tmp/shots_rotated/stuck.png")
            raise AssertionError(f"the match did not end: {state(page)}")
        ready = page.locator(".overlay .handover button#continue:enabled")
        if ready.count() and ready.inner_text() == "Ready":
            ready.click()
        elif my_turn(page):
            play_one(page)
        else:
            page.wait_for_timeout(100)

    dialog = page.locator(".overlay .handover")
    expect(dialog.locator("h2")).to_have_text("Game over", timeout=20000)
    grouped = dialog.locator("table.scores.bydeal")
    expect(grouped.locator("tbody.deal")).to_have_count(1)  # one deal, played from all 3 seats
    expect(grouped.locator("tr.dealhead")).to_have_text("Deal 1")
    expect(grouped.locator("tbody.deal tr:not(.dealhead):not(.dealsum)")).to_have_count(3)
    totals = grouped.locator("tfoot th").all_inner_texts()[1:]
    assert (
        grouped.locator("tr.dealsum td").all_inner_texts() == totals
    )  # one whole deal: its sum is the match
    both_sizes(page, "game-over")

    record = api(server, "GET", f"/api/tables/{table_id}/record")
    first = record["hands"][0]["deal"]["hands"]
    assert [hand["deal"]["hands"] for hand in record["hands"]] == [
        first,
        [first[2], first[0], first[1]],
        [first[1], first[2], first[0]],
    ]

    page.goto(f"{server}/?replay={table_id}")
    page.wait_for_selector("#replay-last")
    page.click("#replay-last")
    scores = page.locator(".rscores table.scores.bydeal")
    expect(scores.locator("tr.dealhead")).to_have_text("Deal 1")
    expect(scores.locator("tbody.deal tr:not(.dealhead):not(.dealsum)")).to_have_count(3)
    scores.scroll_into_view_if_needed()
    both_sizes(page, "replay")
    assert not errors, errors
    context.close()
