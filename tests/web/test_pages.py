"""Every page at 1280x720 and 390x844 (screenshots to ``screenshots/``), the replay viewer, and the Korean and
Japanese pages with no English left in them."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect
from webhelpers import api, sit

pytestmark = pytest.mark.browser

I18N = Path(__file__).resolve().parents[2] / "src" / "cardtable" / "web" / "static" / "i18n"
SIZES = [(1280, 720), (390, 844)]


def _finish(server: str, game: str, options: dict[str, Any], bots: list[str], seed: int) -> str:
    """A table played to its end by bots alone: the creator starts it and leaves (a bot takes the seat)."""
    res = api(server, "POST", "/api/tables", {
        "game": game, "options": options, "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": b} for b in bots],
        "name": "ana", "seed": seed, "grace_seconds": 0,
    })
    tid, token = res["table"]["id"], res["token"]
    api(server, "POST", f"/api/tables/{tid}/start", {"token": token})
    api(server, "POST", f"/api/tables/{tid}/leave", {"token": token})
    return tid


@pytest.fixture(scope="module")
def finished(server: str) -> dict[str, str]:
    """One finished Enemy Anemone game and one finished Nerts game, by id."""
    ids = {
        "anemone": _finish(server, "anemone", {"players": 4, "rounds": 1}, ["heuristic", "random", "heuristic"], 3),
        "nerts": _finish(server, "nerts", {"players": 3, "nerts_pile_size": 5, "target_score": 10}, ["greedy", "greedy"], 4),
    }
    deadline = time.monotonic() + 90
    for tid in ids.values():
        while api(server, "GET", f"/api/tables/{tid}")["status"] != "finished":
            assert time.monotonic() < deadline, "the bots did not finish their game"
            time.sleep(0.3)
    return ids


def _live_table(server: str, game: str) -> tuple[str, int, str]:
    """A started table: this browser's person at seat 0, bots elsewhere (slow ones, so the page stays in play)."""
    if game == "nerts":
        body = {"game": "nerts", "options": {"players": 4, "nerts_pile_size": 13},
                "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "greedy:easy"}] * 3, "name": "ana", "seed": 21}
    else:
        body = {"game": "anemone", "options": {"players": 4, "rounds": 2},
                "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "heuristic"}] * 3, "name": "ana", "seed": 22}
    res = api(server, "POST", "/api/tables", body)
    tid, token = res["table"]["id"], res["token"]
    api(server, "POST", f"/api/tables/{tid}/start", {"token": token})
    return tid, res["seat"], token


def _pages(page: Page, server: str, finished: dict[str, str]):  # type: ignore[no-untyped-def]
    """Open each page in turn; yields its name once it is drawn."""
    page.goto(server + "/")
    expect(page.locator("#finished-tables li.table-row").first).to_be_visible(timeout=10000)
    page.wait_for_selector(".playnow-btn")
    yield "lobby"
    for game in ("nerts", "anemone"):
        page.goto(f"{server}/?howto={game}")
        page.wait_for_selector("section.rules")
        yield f"howto-{game}"
    res = api(server, "POST", "/api/tables", {"game": "anemone", "options": {"players": 3},
                                             "seats": [{"kind": "open"}, {"kind": "open"}, {"kind": "bot", "bot": "random"}],
                                             "name": "ana"})
    sit(page, server, res["table"]["id"], res["seat"], res["token"])
    page.wait_for_selector(".waiting #invite")
    yield "waiting-room"
    page.evaluate("localStorage.clear()")
    page.goto(f"{server}/?table={res['table']['id']}")
    page.wait_for_selector("#join-name")
    yield "join"
    tid, seat, token = _live_table(server, "nerts")
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".layout.mine")
    page.wait_for_timeout(600)
    yield "nerts-table"
    tid, seat, token = _live_table(server, "anemone")
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".anemone-table .myhand")
    page.wait_for_timeout(300)
    yield "anemone-table"
    for game in ("nerts", "anemone"):
        page.goto(f"{server}/?replay={finished[game]}")
        page.wait_for_selector("#replay-forward")
        for _ in range(12):
            page.click("#replay-forward")
        page.wait_for_timeout(300)
        yield f"replay-{game}"


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_screenshots_of_every_page(browser: Browser, server: str, finished: dict[str, str], screenshots: Path,
                                   width: int, height: int) -> None:
    ctx = browser.new_context(viewport={"width": width, "height": height}, has_touch=width < 600,
                              is_mobile=width < 600, locale="en-US")
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    names = []
    for name in _pages(page, server, finished):
        # nothing sticks out sideways on a phone
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"{name} is {overflow}px wider than the window at {width}x{height}"
        page.screenshot(path=str(screenshots / f"{name}-{width}x{height}.png"))
        names.append(name)
    assert names == ["lobby", "howto-nerts", "howto-anemone", "waiting-room", "join", "nerts-table", "anemone-table", "replay-nerts",
                     "replay-anemone"]
    assert not errors, errors
    ctx.close()


def test_replay_steps_forward_and_back(page: Page, server: str, finished: dict[str, str]) -> None:
    data = api(server, "GET", f"/api/tables/{finished['anemone']}/replay")
    steps = data["steps"]
    page.goto(f"{server}/?replay={finished['anemone']}")
    page.wait_for_selector("#replay-forward")
    expect(page.locator(".rinfo .stepno")).to_have_text(f"Step 1 of {len(steps)}")
    # the first step deals: every hand is shown
    hands0 = steps[0]["hands"] or steps[0]["view"].get("hands")
    shown = page.locator(".handshown").nth(1).locator(".ccard").evaluate_all("els => els.map(e => e.dataset.card)")
    assert sorted(shown) == sorted(hands0[1])
    page.click("#replay-forward")
    page.click("#replay-forward")
    expect(page.locator(".rinfo .stepno")).to_have_text(f"Step 3 of {len(steps)}")
    card = steps[2]["action"]["card"]
    expect(page.locator(f'.trick .ccard[data-card="{card}"]')).to_be_visible()
    page.click("#replay-back")
    expect(page.locator(".rinfo .stepno")).to_have_text(f"Step 2 of {len(steps)}")
    expect(page.locator(f'.trick .ccard[data-card="{card}"]')).to_have_count(0)
    page.click("#replay-last")
    expect(page.locator(".rinfo .stepno")).to_have_text(f"Step {len(steps)} of {len(steps)}")
    page.keyboard.press("Home")
    expect(page.locator(".rinfo .stepno")).to_have_text(f"Step 1 of {len(steps)}")


def _english_phrases(lang: str) -> list[str]:
    """English catalogue texts that must not show on a page in ``lang``: every value (and every literal piece of
    a value with placeholders) that has a word of 4+ letters and differs from the translation."""
    en = json.loads((I18N / "en.json").read_text())
    other = json.loads((I18N / f"{lang}.json").read_text())
    out = set()
    for key, value in en.items():
        if key.startswith("lang.") or other[key] == value:
            continue
        for piece in re.split(r"\{\w+\}", value):
            piece = piece.strip(" :·.,()")
            if re.search(r"[A-Za-z]{4,}", piece) and piece not in other[key]:
                out.add(piece)
    return sorted(out)


@pytest.mark.parametrize("lang", ["ko", "ja"])
def test_no_english_left_in_korean_and_japanese(browser: Browser, server: str, finished: dict[str, str],
                                                screenshots: Path, lang: str) -> None:
    phrases = _english_phrases(lang)
    assert len(phrases) > 150
    ctx = browser.new_context(viewport={"width": 1280, "height": 720}, locale={"ko": "ko-KR", "ja": "ja-JP"}[lang])
    page = ctx.new_page()
    for name in _pages(page, server, finished):
        assert page.evaluate("document.documentElement.lang") == lang
        text = page.evaluate("() => document.body.innerText")
        # seat names come from the server ("bot-1") and are not the page's own words
        left = [p for p in phrases if p in text]
        assert not left, f"{name} in {lang} still shows English: {left}"
        titles = page.evaluate("() => [...document.querySelectorAll('[title],[aria-label],[placeholder]')]"
                               ".map(e => [e.title, e.getAttribute('aria-label'), e.placeholder].join(' '))")
        left = [p for p in phrases if any(p in t for t in titles)]
        assert not left, f"{name} in {lang} has English tooltips or labels: {left}"
        page.screenshot(path=str(screenshots / f"{name}-{lang}-1280x720.png"))
    ctx.close()


def test_language_switcher(page: Page, server: str) -> None:
    page.goto(server + "/")
    page.wait_for_selector(".playnow-btn")
    page.select_option("#lang", "ja")
    expect(page.locator("#create")).to_have_text("テーブルを作成")
    page.reload()
    expect(page.locator("#create")).to_have_text("テーブルを作成")
    page.select_option("#lang", "ko")
    expect(page.locator("#create")).to_have_text("테이블 만들기")
    page.select_option("#lang", "en")
    expect(page.locator("#create")).to_have_text("Create the table")


def test_watch_a_table(page: Page, server: str) -> None:
    tid, _seat, _token = _live_table(server, "nerts")
    page.goto(f"{server}/?table={tid}&watch=1")
    page.wait_for_selector(".nboard.spectating")
    expect(page.locator(".layout.mine")).to_have_count(0)
    expect(page.locator(".layout.other")).to_have_count(4)
    expect(page.locator(".nbar .badge", has_text="Watching")).to_be_visible()
    expect(page.locator("#flip")).to_have_count(0)
    v = page.evaluate("window.__ct.v")
    page.wait_for_function("v => window.__ct.v > v", arg=v, timeout=15000)  # the bots play on, live
    assert page.evaluate("window.__ct.seat") is None
    assert page.evaluate("window.__ct.legal.length") == 0


def test_reconnects_after_losing_the_connection(page: Page, server: str) -> None:
    tid, seat, token = _live_table(server, "anemone")
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".anemone-table .myhand")
    hand = page.evaluate("window.__ct.view.hand")
    page.evaluate("window.__ctConn.ws.close()")  # as if the network dropped
    expect(page.locator(".connstatus.closed, .connstatus.connecting")).to_be_visible(timeout=3000)
    expect(page.locator(".connstatus.open")).to_be_attached(timeout=10000)
    page.wait_for_function("() => window.__ct.status === 'open' && window.__ct.view")
    assert page.evaluate("window.__ct.seat") == seat
    assert page.evaluate("window.__ct.view.hand") == hand
    expect(page.locator(".handcards .ccard")).to_have_count(len(hand))


def test_phone_taps_flip_and_send_a_card_to_a_foundation(browser: Browser, server: str) -> None:
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = ctx.new_page()
    tid, seat, token = _live_table(server, "nerts")
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".layout.mine")
    deadline = time.monotonic() + 60
    sent = False
    while time.monotonic() < deadline and not sent:
        st = page.evaluate("() => ({legal: window.__ct.legal, view: window.__ct.view})")
        fits = [a for a in st["legal"] if a["type"] == "move" and a["to"].startswith("foundation") and "as" not in a]
        if fits:
            src = fits[0]["from"]
            card = page.locator(f'.layout.mine .pile[data-pile="{src}"] .card[data-card]').last
            code = card.get_attribute("data-card", timeout=1000)
            box = card.bounding_box(timeout=1000)
            if box:
                page.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + box["height"] / 3)
                try:
                    page.wait_for_function(
                        "c => window.__ct.view.foundations.some(f => f.cards.some(x => x.card === c && x.pack === 0))",
                        arg=code, timeout=3000)
                    sent = True
                except Exception:
                    pass
            continue
        stock = page.locator(".layout.mine .pile.stock").bounding_box()
        assert stock
        v = page.evaluate("window.__ct.v")
        page.touchscreen.tap(stock["x"] + stock["width"] / 2, stock["y"] + stock["height"] / 3)
        page.wait_for_function("v => window.__ct.v > v", arg=v, timeout=5000)
    assert sent, "no card reached a foundation by tapping"
    ctx.close()


def test_stall_warning_shows(page: Page, server: str) -> None:
    res = api(server, "POST", "/api/tables", {"game": "nerts", "options": {"players": 1, "stall_seconds": 10},
                                             "seats": [{"kind": "open"}], "name": "ana", "seed": 5})
    tid, seat, token = res["table"]["id"], res["seat"], res["token"]
    api(server, "POST", f"/api/tables/{tid}/start", {"token": token})
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".layout.mine")
    warning = page.locator(".stallwarn.show")
    expect(warning).to_be_visible(timeout=15000)
    expect(warning).to_contain_text("every stock turns over")


def test_a_finished_table_offers_its_replay(page: Page, server: str, finished: dict[str, str]) -> None:
    page.goto(f"{server}/?table={finished['nerts']}")
    bar = page.locator(".finishedbar")
    expect(bar).to_contain_text("This game is over.")
    bar.get_by_role("button", name="Replay").click()
    expect(page).to_have_url(re.compile(r"\?replay="))
    expect(page.locator("#replay-slider")).to_be_visible()
