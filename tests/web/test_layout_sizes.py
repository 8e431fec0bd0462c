"""What a player sees at 1280x720, 1920x1080, 390x844 and 844x390 (issue 27): Nerts foundations that can be read on
a phone (at least 36 px wide, their count never over the rank and suit, every ace out with 4 and 8 seats), a page
that never scrolls, the score strip with every seat and the target, dialogs whose buttons are on screen in a phone
held sideways, Enemy Anemone that fits a phone held upright with its anemone picker and a hint, and larger cards on
a large screen.

Crowded states (every ace out, a long match) are fed to the page's own renderer as a snapshot, the way the server
sends one on reconnecting, after the live updates are stopped; the table itself is real (real server, real seats)."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from playwright.sync_api import Browser, FloatRect, Page
from webhelpers import api, sit

pytestmark = pytest.mark.browser

SIZES = [(1280, 720), (1920, 1080), (390, 844), (844, 390)]
PHONES = [(844, 390), (390, 844)]
MIN_FOUNDATION_W = 36

# Every ace out: four foundations per pack, each built up a different way (A to 10), and a few hands already played
# (so the totals differ and the score table is long).
EVERY_ACE_OUT_JS = """
(hands) => {
  // the live table goes on (its bots play, its seats come and go); this page shows the crafted state only, so
  // every message from now on is dropped: an update, a table message or a snapshot would redraw the board
  const h = window.__ctConn.h;
  window.__ctFeed = { ...h };  // the page's own handlers, for the crafted messages a test sends next
  const feed = h.snapshot;
  for (const k of Object.keys(h)) h[k] = () => {};
  const st = window.__ct;
  const view = JSON.parse(JSON.stringify(st.view));
  const seats = st.table.seats.length;
  const suits = ['S', 'H', 'D', 'C'];
  const ranks = ['A', '2', '3', '4', '5', '6', '7', '8', '9', '10'];
  view.foundations = [];
  for (let p = 0; p < view.layouts.length; p++) for (const s of suits) {
    const n = 1 + ((p * 4 + suits.indexOf(s)) % ranks.length);
    view.foundations.push({ id: view.foundations.length + 1, suit: s, finished: false,
      cards: ranks.slice(0, n).map((r) => ({ card: r + s, pack: p })) });
  }
  const results = Array.from({ length: hands }, (_, k) => ({
    scores: Array.from({ length: seats }, (_, i) => (i * 7 + k * 3) % 11 - 4), ended: 'nerts' }));
  const totals = Array.from({ length: seats }, (_, i) => results.reduce((sum, r) => sum + r.scores[i], 0));
  feed({ type: 'snapshot', v: st.v, table: st.table, view, legal: st.legal, hand: hands,
    results, totals });
  return { seats, totals, foundations: view.foundations.length };
}
"""

SCROLL_JS = "() => [document.scrollingElement.scrollWidth, document.scrollingElement.scrollHeight]"


def _nerts(server: str, players: int) -> tuple[str, int, str]:
    res = api(
        server,
        "POST",
        "/api/tables",
        {
            "game": "nerts",
            "name": "ana",
            "seed": 90 + players,
            "options": {"players": players, "target_score": 100},
            "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "greedy:easy"}] * (players - 1),
        },
    )
    tid, token = res["table"]["id"], res["token"]
    if api(server, "GET", f"/api/tables/{tid}")["status"] == "open":
        with contextlib.suppress(Exception):  # the table may have started by itself meanwhile
            api(server, "POST", f"/api/tables/{tid}/start", {"token": token})
    return tid, res["seat"], token


def _crowded_nerts(
    browser: Browser, server: str, w: int, h: int, players: int, hands: int = 2
) -> tuple[Page, Any]:
    ctx = browser.new_context(viewport={"width": w, "height": h}, has_touch=w < 900)
    page = ctx.new_page()
    page.emulate_media(reduced_motion="reduce")  # no card in flight while the boxes are measured
    tid, seat, token = _nerts(server, players)
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".layout.mine .pile.work", state="attached", timeout=15000)
    fed = page.evaluate(EVERY_ACE_OUT_JS, hands)
    page.wait_for_function(
        "(n) => document.querySelectorAll('.foundations .frow .pile.foundation[data-suit]').length >= n",
        arg=fed["foundations"],
    )
    page.wait_for_timeout(100)  # let the board settle (a resize observer or font may re-fit it once)
    return page, fed


def _inside(box: FloatRect | None, w: int, h: int) -> bool:
    if box is None:
        return False
    return (
        box["x"] >= -0.5
        and box["y"] >= -0.5
        and box["x"] + box["width"] <= w + 0.5
        and box["y"] + box["height"] <= h + 0.5
    )


def _overlap(a: FloatRect, b: FloatRect) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


@pytest.mark.parametrize("players", [4, 8])
@pytest.mark.parametrize(("w", "h"), PHONES, ids=[f"{w}x{h}" for w, h in PHONES])
def test_foundations_can_be_read_on_a_phone(
    browser: Browser, server: str, w: int, h: int, players: int
) -> None:
    page, fed = _crowded_nerts(browser, server, w, h, players)
    piles = page.locator(".foundations .frow .pile.foundation[data-suit]")
    assert piles.count() == fed["foundations"] == 4 * players
    for i in range(piles.count()):
        pile = piles.nth(i)
        card = pile.locator(".card").bounding_box()
        corner = pile.locator(".card .corner.tl").bounding_box()
        badge = pile.locator(".count").bounding_box()
        assert card and corner and badge
        assert card["width"] >= MIN_FOUNDATION_W - 0.01, (i, card)  # sub-pixel layout: 35.99999 is 36 px
        assert _inside(card, w, h) and _inside(badge, w, h), (i, card, badge)
        assert _inside(corner, w, h) and _overlap(corner, card), (
            "the rank and suit show on the card",
            corner,
            card,
        )
        assert not _overlap(badge, corner), ("the count covers the rank and suit", badge, corner)
        # what is drawn at the corner's middle is the corner itself (nothing else lies over it)
        top = page.evaluate(
            "([x, y]) => document.elementFromPoint(x, y)?.closest('.corner') !== null",
            [corner["x"] + corner["width"] / 2, corner["y"] + corner["height"] / 2],
        )
        assert top, ("something covers the rank and suit", i)
        assert pile.locator(".count").inner_text() == str(i % 10 + 1)
    scroll = page.evaluate(SCROLL_JS)
    assert scroll[0] <= w and scroll[1] <= h, ("the page scrolls", scroll)
    page.context.close()


@pytest.mark.parametrize(("w", "h"), SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_nerts_never_scrolls_and_shows_every_score(browser: Browser, server: str, w: int, h: int) -> None:
    page, fed = _crowded_nerts(browser, server, w, h, 8)
    scroll = page.evaluate(SCROLL_JS)
    assert scroll[0] <= w and scroll[1] <= h, ("the page scrolls", scroll)
    strip = page.locator(".nbar .scorestrip")
    strip_box = strip.bounding_box()
    assert _inside(strip_box, w, h)
    assert "100" in strip.locator(".stripgoal").inner_text()
    chips = strip.locator(".stripseat")
    assert chips.count() == fed["seats"] == 8
    for s in range(8):
        chip = chips.nth(s)
        box = chip.bounding_box()
        assert _inside(box, w, h) and box is not None and strip_box is not None
        assert (
            box["x"] >= strip_box["x"] - 0.5
            and box["x"] + box["width"] <= strip_box["x"] + strip_box["width"] + 0.5
        ), ("a seat is cut off the strip", s, box, strip_box)
        # the seat's name as the board shows it (your own: the name you sat down with)
        board_name = (
            "ana" if s == 0 else page.locator(f'.layout.other[data-seats="{s}"] .lname').text_content()
        )
        assert chip.locator(".sname").text_content() == board_name
        assert chip.locator(".sscore").inner_text() == str(fed["totals"][s])
        # a name may be shortened, but never to less than its first few letters
        shown = chip.locator(".sname").evaluate("(el) => [el.clientWidth, el.scrollWidth]")
        assert shown[0] >= min(shown[1], 24), ("a name is cut to nothing", s, shown)
    assert strip.locator(".stripseat.me").count() == 1
    if (w, h) == (1920, 1080):
        # a large screen: the other seats' cards are large too, not a narrow column of small ones
        mini = page.locator(".layout.other .mcard").first.bounding_box()
        assert mini and mini["width"] >= 56, mini
        found = page.locator(".foundations .frow .card").first.bounding_box()
        assert found and found["width"] >= 84, found
    page.context.close()


@pytest.mark.parametrize(("w", "h"), [(844, 390)], ids=["844x390"])
def test_nerts_header_is_one_line_and_dialogs_fit(browser: Browser, server: str, w: int, h: int) -> None:
    page, fed = _crowded_nerts(browser, server, w, h, 8, hands=9)
    # the site header and the bar: one line each (today's phones held sideways lose no more than that)
    head = page.locator("header.top").bounding_box()
    assert head and head["height"] <= 36, head
    # the menu: its Leave button is on screen and can be pressed
    page.click("details.tmenu > summary")
    _assert_pressable(page, page.locator("#leave-table"), w, h)
    page.click("details.tmenu > summary")
    # the end of the match after ten hands: a long score table, and the dialog's buttons still on screen
    page.evaluate(
        """(n) => window.__ctFeed.hand_over({ type: 'hand_over', hand: 9, ended: 'nerts',
        scores: Array.from({ length: n }, (_, i) => 5 - i), totals: Array.from({ length: n }, (_, i) => 100 - 7 * i),
        winners: [0] })""",
        fed["seats"],
    )
    page.wait_for_selector(".overlay .dialog")
    buttons = page.locator(".overlay .dialog button")
    assert buttons.count() >= 1
    for i in range(buttons.count()):
        _assert_pressable(page, buttons.nth(i), w, h)
    scroll = page.evaluate(SCROLL_JS)
    assert scroll[0] <= w and scroll[1] <= h, ("the page scrolls", scroll)
    page.context.close()


def _assert_pressable(page: Page, button: Any, w: int, h: int) -> None:
    box = button.bounding_box()
    assert _inside(box, w, h), ("a button is off screen", box)
    hit = button.evaluate(
        "(b, [x, y]) => { const el = document.elementFromPoint(x, y); return !!el && (el === b || b.contains(el)); }",
        [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
    )
    assert hit, ("something covers a button", box)


ANEMONE_PICKER_JS = """
() => {
  // your turn, holding two anemones to add: the picker shows under the hint, above your hand; every live message
  // from now on is dropped (the bots play on), so the crafted state stays on screen
  const h = window.__ctConn.h;
  const feed = h.snapshot;
  for (const k of Object.keys(h)) h[k] = () => {};
  const st = window.__ct;
  const view = JSON.parse(JSON.stringify(st.view));
  view.turn = st.seat;
  view.must_discard = false;
  view.anemones = (view.anemones || []).map((a, s) => (s === st.seat ? [1, 2] : a));
  view.playable = [...(view.hand || [])];
  feed({ type: 'snapshot', v: st.v, table: st.table, view, legal: st.legal, hand: st.hand,
    results: [], totals: [] });
}
"""


@pytest.mark.parametrize(
    ("w", "h"), [(390, 844), (844, 390), (1920, 1080)], ids=["390x844", "844x390", "1920x1080"]
)
def test_enemy_anemone_fits_with_the_picker_and_a_hint(browser: Browser, server: str, w: int, h: int) -> None:
    ctx = browser.new_context(viewport={"width": w, "height": h}, has_touch=w < 900)
    page = ctx.new_page()
    res = api(
        server,
        "POST",
        "/api/tables",
        {
            "game": "anemone",
            "name": "ana",
            "seed": 81,
            "options": {"players": 6, "rounds": 3},
            "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "heuristic"}] * 5,
        },
    )
    tid, token = res["table"]["id"], res["token"]
    api(server, "POST", f"/api/tables/{tid}/start", {"token": token})
    sit(page, server, tid, res["seat"], token)
    page.wait_for_selector(".handcards .ccard", timeout=15000)
    page.evaluate(ANEMONE_PICKER_JS)
    page.wait_for_selector(".myhand .chooser .anemchoice")
    page.wait_for_selector(".myhand .hintbubble")
    scroll = page.evaluate(SCROLL_JS)
    assert scroll[0] <= w and scroll[1] <= h, ("the page scrolls", scroll)
    for card in page.locator(".handcards .ccard").all():
        assert _inside(card.bounding_box(), w, h), "a card of your hand is off screen"
    strip = page.locator(".abar .scorestrip")
    assert "3" in strip.locator(".stripgoal").inner_text()  # rounds left, this one included
    assert strip.locator(".stripseat").count() == 6
    for chip in strip.locator(".stripseat").all():
        assert _inside(chip.bounding_box(), w, h)
    if (w, h) == (1920, 1080):
        # a large screen: larger cards, and the table reaches the bottom of the window
        hand = page.locator(".handcards .ccard").first.bounding_box()
        assert hand and hand["width"] >= 110, hand
        bottom = page.locator(".myhand").bounding_box()
        assert bottom and bottom["y"] + bottom["height"] >= 0.9 * h, bottom
    ctx.close()
