"""Every page passes axe-core (through axe-playwright-python) with no serious or critical violation: the lobby,
both tables, both how-to-play pages and both replays; cards and piles have accessible names; Enemy Anemone can be
played from the keyboard alone."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from webhelpers import api, axe_serious, sit

pytestmark = pytest.mark.browser

def _finished(server: str, game: str, options: dict[str, Any], bots: list[str]) -> str:
    res = api(server, "POST", "/api/tables", {
        "game": game, "options": options, "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": b} for b in bots],
        "name": "ana", "seed": 12, "grace_seconds": 0,
    })
    tid, token = res["table"]["id"], res["token"]
    with contextlib.suppress(Exception):  # a table of one person and bots also starts by itself
        api(server, "POST", f"/api/tables/{tid}/start", {"token": token})
    api(server, "POST", f"/api/tables/{tid}/leave", {"token": token})
    return tid


def _live(server: str, game: str) -> tuple[str, int, str]:
    if game == "nerts":
        body = {"game": "nerts", "options": {"players": 4, "target_score": 10}, "name": "ana", "seed": 3,
                "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "greedy:easy"}] * 3}
    else:
        body = {"game": "anemone", "options": {"players": 3}, "name": "ana", "seed": 3,
                "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "heuristic"}] * 2}
    res = api(server, "POST", "/api/tables", body)
    tid, token = res["table"]["id"], res["token"]
    with contextlib.suppress(Exception):  # a table of one person and bots also starts by itself
        api(server, "POST", f"/api/tables/{tid}/start", {"token": token})
    return tid, res["seat"], token


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_page_passes_axe(page: Page, server: str, lang: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.emulate_media(reduced_motion="reduce")
    page.goto(server + "/?howto=nerts")
    page.evaluate(f"localStorage.setItem('ct.lang', '{lang}')")
    finished = {
        "nerts": _finished(server, "nerts", {"players": 2, "nerts_pile_size": 5, "target_score": 10}, ["greedy"]),
        "anemone": _finished(server, "anemone", {"players": 3, "rounds": 1}, ["random", "random"]),
    }
    found: dict[str, list[dict[str, Any]]] = {}
    page.goto(server + "/")
    page.wait_for_selector(".playnow-btn")
    found["lobby"] = axe_serious(page)
    page.click("#custom > summary")
    page.click("details.advanced > summary")
    found["lobby-custom"] = axe_serious(page)
    for game in ("nerts", "anemone"):
        page.goto(f"{server}/?howto={game}")
        page.wait_for_selector("section.rules")
        found[f"howto-{game}"] = axe_serious(page)
    tid, seat, token = _live(server, "nerts")
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".layout.mine .pile.work", state="attached")
    found["nerts-table"] = axe_serious(page)
    tid, seat, token = _live(server, "anemone")
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".anemone-table .myhand")
    found["anemone-table"] = axe_serious(page)
    deadline = time.monotonic() + 90
    for game, tid in finished.items():
        while api(server, "GET", f"/api/tables/{tid}")["status"] != "finished":
            assert time.monotonic() < deadline, "the bots did not finish"
            time.sleep(0.3)
        page.goto(f"{server}/?replay={tid}")
        page.wait_for_selector("#replay-forward")
        page.click("#replay-forward")
        found[f"replay-{game}"] = axe_serious(page)
    assert len(found) == 8
    bad = {name: v for name, v in found.items() if v}
    assert not bad, bad


def test_cards_and_piles_have_names(page: Page, server: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    tid, seat, token = _live(server, "nerts")
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".layout.mine .pile.work", state="attached")
    names = page.evaluate("""() => [...document.querySelectorAll('.layout.mine .pile, .foundations .pile, .layout.mine .card[data-card]')]
        .map(e => e.getAttribute('aria-label') || '')""")
    assert names and all(names), names
    work = page.locator('.layout.mine .pile[data-pile="work:0"]').get_attribute("aria-label") or ""
    assert work.startswith("work pile 1: ") and " of " in work, work  # "work pile 1: 1 cards, top 6 of spades"
    card = page.locator(".layout.mine .card[data-card]").first
    code = card.get_attribute("data-card") or ""
    label = card.get_attribute("aria-label") or ""
    assert (label and label != code and " of " in label) or label == "the joker", (code, label)


def test_enemy_anemone_from_the_keyboard(page: Page, server: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    tid, seat, token = _live(server, "anemone")
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".anemone-table .myhand")
    page.wait_for_function("() => window.__ct.view && window.__ct.view.turn === window.__ct.seat && !window.__ct.view.over",
                           timeout=20000)
    before = page.evaluate("window.__ct.view.hand.length")
    playable = page.locator(".handcards .ccard.playable, .handcards .ccard.discardable")
    expect(playable.first).to_be_visible()
    # Tab until a playable card has the focus, then Enter plays it
    for _ in range(60):
        page.keyboard.press("Tab")
        if page.evaluate("() => !!document.activeElement?.matches('.handcards .ccard.playable, .handcards .ccard.discardable')"):
            break
    else:
        pytest.fail("no playable card can be reached with Tab")
    page.keyboard.press("Enter")
    page.wait_for_function("n => window.__ct.view.hand.length < n", arg=before, timeout=5000)
