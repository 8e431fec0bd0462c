"""What a screen reader says at both tables: Enemy Anemone cards named with their extra point and whether they can
be played, unplayable cards not offered as buttons one can press, a polite live region that says what the other
seats played, who won the trick and "your turn"; counts in the right plural ("1 card", never "1 cards"); and axe-core
on the new states (your turn with the focus on a card, a Nerts card picked up from the keyboard)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect
from webhelpers import axe_serious, sit, started_table, state

pytestmark = pytest.mark.browser

MY_TURN = "() => window.__ct.view && window.__ct.view.turn === window.__ct.seat && !window.__ct.view.over"


def _anemone(page: Page, server: str, seed: int) -> int:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.emulate_media(reduced_motion="reduce")
    tid, seat, token = started_table(
        server,
        {
            "game": "anemone",
            "options": {"players": 3},
            "name": "ana",
            "seed": seed,
            "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "heuristic"}] * 2,
        },
    )
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".anemone-table .myhand")
    return seat


def test_enemy_anemone_cards_say_their_point_and_whether_they_can_be_played(page: Page, server: str) -> None:
    _anemone(page, server, seed=7)
    for _ in range(10):  # play the first card each turn until a turn with cards of both kinds in hand
        page.wait_for_function(MY_TURN, timeout=20000)
        page.wait_for_function(
            "() => document.activeElement?.matches('.handcards .ccard[aria-disabled=\"false\"]')"
        )
        view = state(page)["view"]
        playable = set(view["playable"]) if not view["must_discard"] else set(view["hand"])
        if len(playable) < len(view["hand"]):
            break
        page.keyboard.press("Enter")
        page.wait_for_function("n => window.__ct.view.hand.length < n", arg=len(view["hand"]), timeout=5000)
    assert playable and len(playable) < len(view["hand"]), view
    for code in view["hand"]:
        card = page.locator(f'.handcards .ccard[data-card="{code}"]')
        name = card.get_attribute("aria-label") or ""
        rank = int(code[:-1])
        if rank in (3, 5, 8):
            assert ", +1 point" in name, name  # the corner's "+1" is said too
        else:
            assert "+1" not in name, name
        if code in playable:
            expect(card).to_have_role("button")
            assert card.get_attribute("aria-disabled") == "false"
            assert name.endswith(": can be played") or name.endswith(": can be discarded"), name
        else:
            # not a button one can press: marked disabled, and named as not playable
            assert card.get_attribute("aria-disabled") == "true"
            assert name.endswith(": cannot be played now"), name
    # the accessibility tree: the hand is a toolbar whose unplayable cards are disabled buttons
    tree = page.locator(".handcards").aria_snapshot()
    assert "toolbar" in tree and "[disabled]" in tree and ": can be played" in tree, tree
    # the page (your turn, the focus on a card) passes axe
    assert not axe_serious(page)


def test_the_live_region_says_other_seats_plays_the_trick_and_your_turn(page: Page, server: str) -> None:
    _anemone(page, server, seed=8)
    region = page.locator("#announcer")
    expect(region).to_have_attribute("aria-live", "polite")
    # play until a trick has been won; each turn of yours, the first card the focus lands on
    for _ in range(8):
        page.wait_for_function(MY_TURN, timeout=20000)
        expect(region).to_contain_text("Your turn.")
        before = len(state(page)["view"]["hand"])
        page.wait_for_function(
            "() => document.activeElement?.matches('.handcards .ccard[aria-disabled=\"false\"]')"
        )
        page.keyboard.press("Enter")
        page.wait_for_function("n => window.__ct.view.hand.length < n", arg=before, timeout=5000)
        if re.search(r"wins the trick", region.inner_text()):
            break
    text = region.inner_text()
    assert re.search(
        r"Bot \d[^.]* played (Crab|Fish|Octopus|Starfish|Turtle|Jellyfish) \d+(, \+1 point)?", text
    ), text
    assert re.search(r"wins the trick; .+ takes an anemone\.", text), text
    # your own plays are not said back to you
    assert "ana played" not in text, text


def test_counts_are_plural_only_when_they_should_be(page: Page, server: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.emulate_media(reduced_motion="reduce")
    tid, seat, token = started_table(
        server,
        {
            "game": "nerts",
            "options": {"players": 2, "nerts_pile_size": 5, "target_score": 100},
            "name": "ana",
            "seed": 11,
            "seats": [{"kind": "open"}, {"kind": "bot", "bot": "greedy:easy"}],
        },
    )
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".layout.mine .pile.work", state="attached")
    view = state(page)["view"]
    lay = next(lay for lay in view["layouts"] if seat in lay["seats"])
    ones = [i for i, p in enumerate(lay["work"]) if len(p) == 1]
    assert ones, lay  # every work pile starts with one card
    label = page.locator(f'.layout.mine .pile[data-pile="work:{ones[0]}"]').get_attribute("aria-label") or ""
    assert re.match(rf"work pile {ones[0] + 1}: 1 card, top ", label), label
    labels = page.evaluate(
        "() => [...document.querySelectorAll('[aria-label], [title]')].map(e => (e.getAttribute('aria-label') || '') + ' ' + (e.title || ''))"
    )
    assert not [x for x in labels if re.search(r"\b1 cards\b", x)]
    nerts = page.locator('.layout.mine .pile[data-pile="nerts"]').get_attribute("aria-label") or ""
    assert re.search(r"Nerts pile: \d+ cards, top ", nerts), nerts  # more than one: plural

    # a card picked up from the keyboard: named so, and the page still passes axe
    page.keyboard.press("Enter")  # the focus starts on your Nerts pile: pick its top card up
    expect(page.locator(".layout.mine .held")).to_have_count(1)
    assert (page.locator(".layout.mine .held").first.get_attribute("aria-label") or "").endswith(
        ", picked up"
    )
    expect(page.locator("#announcer")).to_contain_text("Picked up ")
    assert not axe_serious(page)
    page.keyboard.press("Escape")
    expect(page.locator("#announcer")).to_contain_text("Put back.")

    # Korean has one form: the same count reads "1장"
    page.evaluate("localStorage.setItem('ct.lang', 'ko')")
    page.reload()
    page.wait_for_selector(".layout.mine .pile.work", state="attached")
    lay = next(lay for lay in state(page)["view"]["layouts"] if seat in lay["seats"])
    ones = [i for i, p in enumerate(lay["work"]) if len(p) == 1]
    if ones:
        label = (
            page.locator(f'.layout.mine .pile[data-pile="work:{ones[0]}"]').get_attribute("aria-label") or ""
        )
        assert ": 1장, " in label, label
    page.evaluate("localStorage.setItem('ct.lang', 'en')")
