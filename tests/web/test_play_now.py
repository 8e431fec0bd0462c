"""Play now: from a fresh browser to the first card played in at most two clicks, in each game (the Play now
button, then a card: a tap sends a Nerts card to a foundation, or turns the stock when no card fits yet; a click
plays an Enemy Anemone card); and two browsers pressing it at once share one table."""

from __future__ import annotations

import contextlib
import re

import pytest
from playwright.sync_api import Browser, Page, expect
from webhelpers import api

pytestmark = pytest.mark.browser


def _table_id(page: Page) -> str:
    m = re.search(r"[?&]table=([\w-]+)", page.url)
    assert m, page.url
    return m.group(1)


def test_nerts_in_two_taps(browser: Browser, server: str) -> None:
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "/")
    page.locator(".playnow-btn[data-play=nerts]").tap()  # 1
    page.wait_for_selector(".layout.mine .pile.work", state="attached", timeout=20000)  # it starts by itself
    page.wait_for_function("() => (window.__ct.legal || []).length > 0")
    st = page.evaluate("() => ({ legal: window.__ct.legal, v: window.__ct.v })")
    fits = [a for a in st["legal"] if a["type"] == "move" and a["to"].startswith("foundation") and a["from"] != "waste"]
    if fits:
        src = fits[0]["from"]
        page.locator(f'.layout.mine .pile[data-pile="{src}"] .card[data-card]').last.tap()  # 2
        page.wait_for_function(
            "src => (window.__ct.view.foundations || []).some(f => f.cards.some(c => c.pack === window.__ct.view.layouts.find(l => l.seats.includes(window.__ct.seat)).pack))",
            arg=src, timeout=5000)
    else:
        waste = page.evaluate("() => window.__ct.view.layouts.find(l => l.seats.includes(window.__ct.seat)).waste.count")
        page.locator(".layout.mine .pile.stock").tap()  # 2: no card fits yet, so the first card is turned
        page.wait_for_function(
            "w => window.__ct.view.layouts.find(l => l.seats.includes(window.__ct.seat)).waste.count > w", arg=waste,
            timeout=5000)
    assert not errors, errors
    ctx.close()


def test_enemy_anemone_in_two_clicks(browser: Browser, server: str) -> None:
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    page.goto(server + "/")
    page.click(".playnow-btn[data-play=anemone]")  # 1
    page.wait_for_selector(".anemone-table .myhand", timeout=20000)
    page.wait_for_function("() => window.__ct.view && window.__ct.view.turn === window.__ct.seat", timeout=30000)
    n = page.evaluate("window.__ct.view.hand.length")
    page.locator(".handcards .ccard.playable, .handcards .ccard.discardable").first.click()  # 2
    page.wait_for_function("n => window.__ct.view.hand.length < n", arg=n, timeout=5000)
    ctx.close()


def _fill_waiting_tables(server: str, game: str) -> None:
    """Take every free seat of the tables of `game` that other tests left waiting, so Play now must make one table."""
    for _ in range(50):
        free = [tb for tb in api(server, "GET", "/api/tables?status=open")
                if tb["game"] == game and any(s["kind"] == "open" or s.get("replaceable") for s in tb["seats"])]
        if not free:
            return
        with contextlib.suppress(Exception):
            api(server, "POST", f"/api/tables/{free[0]['id']}/join", {"name": "filler"})
    raise AssertionError("waiting tables did not fill")


def test_two_browsers_share_the_table(browser: Browser, server: str) -> None:
    _fill_waiting_tables(server, "anemone")
    a_ctx, b_ctx = browser.new_context(), browser.new_context()
    a, b = a_ctx.new_page(), b_ctx.new_page()
    for p in (a, b):
        p.goto(server + "/")
        p.wait_for_selector(".playnow-btn[data-play=anemone]")
    a.click(".playnow-btn[data-play=anemone]")
    b.click(".playnow-btn[data-play=anemone]")
    for p in (a, b):
        p.wait_for_url(re.compile(r"table="))
    assert _table_id(a) == _table_id(b)
    for p in (a, b):
        p.wait_for_selector(".anemone-table .myhand", timeout=20000)
    seats = {a.evaluate("window.__ct.seat"), b.evaluate("window.__ct.seat")}
    assert len(seats) == 2 and None not in seats
    expect(a.locator(".aseat")).to_have_count(4)
    a_ctx.close()
    b_ctx.close()
