"""First-hand hints: a Nerts hand shows a short hint that applies; "Got it" dismisses it for good (remembered in
localStorage); the keys panel is reachable from the menu on a touch screen, where hints speak of tapping."""

from __future__ import annotations

import contextlib

import pytest
from playwright.sync_api import Browser, expect
from webhelpers import api, sit, started_table

pytestmark = pytest.mark.browser


def _nerts(server: str) -> tuple[str, int, str]:
    res = api(server, "POST", "/api/tables", {
        "game": "nerts", "options": {"players": 2, "target_score": 10}, "name": "ana", "seed": 17,
        "seats": [{"kind": "open"}, {"kind": "bot", "bot": "greedy:easy"}],
    })
    tid, token = res["table"]["id"], res["token"]
    with contextlib.suppress(Exception):  # a table of one person and bots also starts by itself
        api(server, "POST", f"/api/tables/{tid}/start", {"token": token})
    return tid, res["seat"], token


def test_a_dismissed_hint_stays_dismissed(browser: Browser, server: str) -> None:
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    tid, seat, token = _nerts(server)
    sit(page, server, tid, seat, token)
    bubble = page.locator(".hintbubble")
    expect(bubble).to_be_visible(timeout=15000)
    first = bubble.get_attribute("data-hint")
    assert first
    bubble.locator("button.gotit").click()
    assert page.evaluate(f"localStorage.getItem('ct.hint.{first}')") == "1"
    page.reload()
    page.wait_for_selector(".layout.mine .pile.work", state="attached")
    page.wait_for_timeout(800)
    assert first not in page.locator(".hintbubble").evaluate_all("els => els.map(e => e.dataset.hint)")
    ctx.close()


def test_keys_panel_on_a_touch_screen(browser: Browser, server: str) -> None:
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = ctx.new_page()
    tid, seat, token = _nerts(server)
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".layout.mine .pile.work", state="attached")
    page.locator("details.tmenu > summary").tap()
    expect(page.locator(".menubox .keyshelp")).to_be_visible()
    expect(page.locator("#leave-table")).to_be_visible()
    ctx.close()


KEY_WORDS = ("Space", "Tab", "Enter", "click", "Click", "press")
"""What a hint on a touch screen must not speak of: keys and a mouse."""


def _anemone(server: str) -> tuple[str, int, str]:
    return started_table(server, {
        "game": "anemone", "options": {"players": 3, "rounds": 1}, "name": "ana", "seed": 5,
        "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "heuristic"}] * 2,
    })


@pytest.mark.parametrize("game", ["nerts", "anemone"])
def test_hints_on_a_touch_screen_speak_of_tapping_not_of_keys(browser: Browser, server: str, game: str) -> None:
    """On a phone every hint shown (each dismissed in turn, so the next that applies shows) says tap, never a key
    or a click."""
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = ctx.new_page()
    tid, seat, token = _nerts(server) if game == "nerts" else _anemone(server)
    sit(page, server, tid, seat, token)
    bubble = page.locator(".hintbubble")
    seen: list[str] = []
    expect(bubble).to_be_visible(timeout=15000)
    while bubble.count() and len(seen) < 4:
        text = bubble.first.locator("span").inner_text()
        seen.append(text)
        assert not any(word in text for word in KEY_WORDS), text
        bubble.first.locator("button.gotit").tap()
        with contextlib.suppress(AssertionError):  # the next hint may apply only later, or never
            expect(bubble).to_have_count(1, timeout=3000)
    assert seen and any("Tap" in text or "tap" in text for text in seen), seen
    ctx.close()
