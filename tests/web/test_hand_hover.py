"""A card of your hand lifts under the pointer and stays lifted: a pointer near its bottom edge, where the lift takes
the card from under it, must not make it shake (un-hovered, it dropped back under the pointer, hovered again, every
frame). That shaking made ``test_anemone_table``'s click wait for a stable card until it timed out."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser

# a hand in a box of its own, fixed in place: the page drawn behind it (the router's) cannot move it
HAND = """
() => {
  const box = document.createElement('section');
  box.className = 'myhand';
  box.style.cssText = 'position: fixed; left: 20px; top: 120px; z-index: 5000; background: #fff';
  box.innerHTML = '<div class="handcards">'
    + '<div class="ccard discardable" data-card="d" style="--suit:#2a6"><span class="crank">3</span></div>'
    + '<div class="ccard playable" data-card="p" style="--suit:#2a6"><span class="crank">5</span></div></div>';
  document.body.append(box);
}
"""

# the card's top, frame by frame, for 12 frames
TOPS = """
(selector) => new Promise((done) => {
  const el = document.querySelector(selector);
  const tops = [];
  const step = () => {
    tops.push(Math.round(el.getBoundingClientRect().top));
    if (tops.length < 12) requestAnimationFrame(step); else done(tops);
  };
  requestAnimationFrame(step);
})
"""


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)])
@pytest.mark.parametrize("kind", ["d", "p"])  # a card to discard (not lifted until hovered), a playable one (lifted)
def test_a_hovered_card_stays_lifted_under_a_pointer_near_its_bottom_edge(
        page: Page, server: str, kind: str, size: tuple[int, int]) -> None:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(server + "/?howto=anemone")
    page.wait_for_function("() => [...document.styleSheets].some((s) => (s.href || '').endsWith('/css/app.css'))")
    page.evaluate(HAND)
    card = page.locator(f'.handcards .ccard[data-card="{kind}"]')
    box = card.bounding_box()
    assert box is not None
    for below_top in (box["height"] - 1, box["height"] - 3, box["height"] - 8, box["height"] / 2):
        page.mouse.move(0, 0)
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + below_top)
        tops = page.evaluate(TOPS, f'.handcards .ccard[data-card="{kind}"]')
        assert len(set(tops)) == 1, (below_top, tops)  # lifted once, then still
        assert tops[0] < round(box["y"]), (below_top, tops)  # and lifted: the pointer is over it
    card.click(timeout=3000)
