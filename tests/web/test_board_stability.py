"""The Nerts board keeps your layout in one place: at 1280x720, 1920x1080, 390x844 and 844x390, with 2, 4, 6 and 8
seats (and partnerships with jokers), sampled every 250 ms while fast bots play and this seat plays too: your
piles' boxes never change, stay inside the window, nothing covers them, the page never scrolls, and every
foundation card stays inside the window, also in the worst case of 32 foundations."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pytest
from playwright.sync_api import Browser, Page
from webhelpers import api, sit

pytestmark = pytest.mark.browser

SIZES = [(1280, 720), (1920, 1080), (390, 844), (844, 390)]
SAMPLES = 12  # per table: 3 s of play at 250 ms, more on a loaded machine (bounded by MAX_SECONDS)
MAX_SECONDS = 15.0

# One evaluate per sample: your piles' boxes, what sits on top of them, the foundation cards' boxes, the scroll size.
SAMPLE_JS = """
() => {
  const r = (el) => { const b = el.getBoundingClientRect(); return [b.left, b.top, b.width, b.height].map(x => Math.round(x * 2) / 2); };
  const mine = document.querySelector('.layout.mine');
  if (!mine) return null;
  const piles = {};
  const covered = [];
  for (const p of mine.querySelectorAll('.pile')) {
    const b = p.getBoundingClientRect();
    piles[p.dataset.pile] = r(p);
    for (const [fx, fy] of [[.5, .2], [.2, .5], [.8, .5], [.5, .8]]) {
      const el = document.elementFromPoint(b.left + b.width * fx, b.top + b.height * fy);
      if (el && !mine.contains(el) && !el.closest('.dragghost')) covered.push([p.dataset.pile, el.className || el.tagName]);
    }
  }
  return {
    mine: r(mine), piles, covered,
    foundations: [...document.querySelectorAll('.foundations .card')].map(r),
    scroll: [document.scrollingElement.scrollWidth, document.scrollingElement.scrollHeight],
    overlay: !!document.querySelector('.overlay, .finishedbar'),
  };
}
"""


def _inside(box: list[float], w: int, h: int) -> bool:
    x, y, bw, bh = box
    return x >= -0.5 and y >= -0.5 and x + bw <= w + 0.5 and y + bh <= h + 0.5


def _table(server: str, players: int, **options: Any) -> tuple[str, int, str]:
    res = api(server, "POST", "/api/tables", {
        "game": "nerts", "name": "ana", "seed": 40 + players,
        "options": {"players": players, "nerts_pile_size": 13, "target_score": 25, **options},  # ends within a few hands
        "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "greedy:hard"}] * (players - 1),
    })
    tid, token = res["table"]["id"], res["token"]
    if api(server, "GET", f"/api/tables/{tid}")["status"] == "open":
        with contextlib.suppress(Exception):  # the table may have started by itself meanwhile
            api(server, "POST", f"/api/tables/{tid}/start", {"token": token})
    return tid, res["seat"], token


def _play_one(page: Page) -> None:
    """This seat plays too (moves onto work piles first, so its cascades grow), through the page's connection."""
    page.evaluate("""() => {
      const legal = window.__ct.legal || [];
      const pick = legal.find(a => a.type === 'move' && String(a.to).startsWith('work') && String(a.from) !== 'waste')
        || legal.find(a => a.type === 'move') || legal.find(a => a.type === 'flip');
      if (pick && window.__ctConn) window.__ctConn.act(pick);
    }""")


def _watch(page: Page, w: int, h: int) -> int:
    """Sample every 250 ms, SAMPLES times or for MAX_SECONDS; returns the number of samples taken. Fails on the
    first broken promise."""
    first = None
    samples = 0
    end = time.monotonic() + MAX_SECONDS
    while time.monotonic() < end and samples < SAMPLES:
        s = page.evaluate(SAMPLE_JS)
        if s is None or s["overlay"]:
            # a hand ended: close its scores and go on with the next hand (the places stay the same)
            if s is not None:
                page.evaluate("() => document.querySelector('.overlay #continue')?.click()")
            page.wait_for_timeout(250)
            continue
        samples += 1
        if first is None:
            first = s
        assert s["mine"] == first["mine"], ("your layout moved or changed size", first["mine"], s["mine"])
        assert s["piles"] == first["piles"], ("a pile of yours moved or changed size", first["piles"], s["piles"])
        assert _inside(s["mine"], w, h), ("your layout leaves the window", s["mine"])
        for name, box in s["piles"].items():
            assert _inside(box, w, h), (f"{name} leaves the window", box)
        assert not s["covered"], ("something covers your piles", s["covered"])
        for box in s["foundations"]:
            assert _inside(box, w, h), ("a foundation card leaves the window", box)
        assert s["scroll"][0] <= w and s["scroll"][1] <= h, ("the page scrolls", s["scroll"])
        _play_one(page)
        page.wait_for_timeout(250)
    return samples


@pytest.mark.parametrize(("w", "h"), SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_your_layout_never_moves(browser: Browser, server: str, w: int, h: int) -> None:
    ctx = browser.new_context(viewport={"width": w, "height": h}, has_touch=w < 900)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    for players in (2, 4, 6, 8):
        tid, seat, token = _table(server, players)
        sit(page, server, tid, seat, token)
        page.wait_for_selector(".layout.mine .pile.work", state="attached", timeout=15000)
        assert _watch(page, w, h) >= 4, f"too few samples with {players} seats"
    assert not errors, errors
    ctx.close()


@pytest.mark.parametrize(("w", "h"), [(390, 844), (1280, 720)], ids=["390x844", "1280x720"])
def test_partnerships_with_jokers_and_six_work_piles(browser: Browser, server: str, w: int, h: int) -> None:
    ctx = browser.new_context(viewport={"width": w, "height": h})
    page = ctx.new_page()
    tid, seat, token = _table(server, 8, partnerships=True, jokers=True, work_piles=6)
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".layout.mine .pile.work", state="attached", timeout=15000)
    assert page.locator(".layout.mine .pile.work").count() == 6
    assert _watch(page, w, h) >= 4
    ctx.close()


WORST_CASE_JS = """
() => {
  // every ace out: 4 per pack with 8 packs = 32 foundations, each with a few cards, fed to the page as a snapshot
  const st = window.__ct;
  const view = JSON.parse(JSON.stringify(st.view));
  const suits = ['S', 'H', 'D', 'C'];
  view.foundations = [];
  for (let p = 0; p < 8; p++) for (const s of suits) {
    view.foundations.push({ id: view.foundations.length + 1, suit: s, finished: false,
      cards: ['A', '2', '3'].map(r => ({ card: r + s, pack: p })) });
  }
  window.__ctConn.h.snapshot({ type: 'snapshot', v: st.v, table: st.table, view, legal: [], hand: st.hand });
}
"""


@pytest.mark.parametrize(("w", "h"), SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_every_ace_out_fits(browser: Browser, server: str, w: int, h: int) -> None:
    ctx = browser.new_context(viewport={"width": w, "height": h})
    page = ctx.new_page()
    tid, seat, token = _table(server, 8)
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".layout.mine .pile.work", state="attached", timeout=15000)
    before = page.evaluate(SAMPLE_JS)
    # stop the live updates, then show the worst case
    page.evaluate("() => { window.__ctConn.h.update = () => {}; }")
    page.evaluate(WORST_CASE_JS)
    page.wait_for_timeout(300)
    after = page.evaluate(SAMPLE_JS)
    assert len(after["foundations"]) >= 32
    assert after["mine"] == before["mine"]
    for box in after["foundations"]:
        assert _inside(box, w, h), box
        assert box[2] >= 12, "foundation cards shrink, but stay visible"
    ctx.close()


# Enemy Anemone: in a short, wide window (a phone held sideways) the table fills the window without scrolling, like
# the Nerts board; elsewhere the page may scroll down but never sideways, and your hand fits the window's width.
ANEMONE_JS = """
() => {
  const box = (el) => { const b = el.getBoundingClientRect(); return [b.left, b.top, b.width, b.height]; };
  return {
    scroll: [document.scrollingElement.scrollWidth, document.scrollingElement.scrollHeight],
    hand: [...document.querySelectorAll('.handcards .ccard')].map(box),
    board: document.querySelector('.aboardbox') ? box(document.querySelector('.aboardbox')) : null,
    seats: document.querySelectorAll('.aseat').length,
    overlay: !!document.querySelector('.overlay'),
  };
}
"""


@pytest.mark.parametrize(("w", "h"), [(844, 390), (390, 844), (1280, 720)], ids=["844x390", "390x844", "1280x720"])
def test_enemy_anemone_fits_the_window(browser: Browser, server: str, w: int, h: int) -> None:
    # reduced motion: nothing is mid-transition (a card in flight, a box growing) while the boxes are measured
    ctx = browser.new_context(viewport={"width": w, "height": h}, has_touch=w < 900, reduced_motion="reduce")
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    for players in (2, 4, 6):
        res = api(server, "POST", "/api/tables", {
            "game": "anemone", "name": "ana", "seed": 70 + players, "options": {"players": players, "rounds": 1},
            "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "heuristic"}] * (players - 1)})
        tid, token = res["table"]["id"], res["token"]
        api(server, "POST", f"/api/tables/{tid}/start", {"token": token})
        sit(page, server, tid, res["seat"], token)
        page.wait_for_selector(".handcards .ccard", timeout=15000)
        samples = 0
        end = time.monotonic() + MAX_SECONDS
        while time.monotonic() < end and samples < 8:
            s = page.evaluate(ANEMONE_JS)
            if s["overlay"] or not s["hand"]:
                page.wait_for_timeout(250)
                continue
            samples += 1
            assert s["seats"] == players
            assert s["scroll"][0] <= w, ("the page scrolls sideways", s["scroll"])
            if (w, h) == (844, 390):
                assert s["scroll"][1] <= h, ("the page scrolls", s["scroll"], players)
                assert s["board"][3] >= 100, ("the board is squeezed", s["board"])
                for card in s["hand"]:
                    assert _inside(card, w, h), ("a card of your hand leaves the window", card)
            for card in s["hand"]:
                assert card[0] >= -0.5 and card[0] + card[2] <= w + 0.5, ("your hand is wider than the window", card)
            # this seat plays too (a card the page marks playable), so tricks, anemones and score piles grow
            page.evaluate("() => document.querySelector('.handcards .ccard.playable, .handcards .ccard.discardable')?.click()")
            page.wait_for_timeout(300)
        assert samples >= 4, f"too few samples with {players} seats"
    assert not errors, errors
    ctx.close()
