"""Reactions and sound, as people at one table see them (``docs/protocol.md``, "Reactions"; ``js/reactions.js``,
``js/sound.js``): two browsers at an Enemy Anemone table and a spectator. One person sends a reaction from the row in
the bar and both see it by the sender's seat name for a few seconds; a person who mutes the table (☰ menu) does not
see the next one, and the mute is remembered on reload; a spectator has no row and is refused if it sends one
anyway; a burst over the seat's budget is refused in words. Sounds are off on a first visit, and the toggle is
remembered; a turn that begins sounds when they are on; the title says "Your turn" while the tab is in the
background (``document.hidden``) and it is your turn, and comes back when the tab is seen. Screenshots in English,
Korean and Japanese at 1280x720 and 390x844, and a Nerts table's bubble at both sizes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect
from webhelpers import api, axe_serious, sit, state

from polling import wait_for

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/shots_react")
WIDE = {"width": 1280, "height": 720}
PHONE = {"width": 390, "height": 844}


def anemone_of_two(server: str) -> tuple[str, list[str]]:
    """A started two-seat Enemy Anemone table of one round (Ana at seat 0, Bo at 1): its id and their tokens."""
    made = api(
        server,
        "POST",
        "/api/tables",
        {
            "game": "anemone",
            "name": "Ana",
            "autostart": False,
            "options": {"players": 2, "rounds": 1},
            "seats": [{"kind": "open"}, {"kind": "open"}],
        },
    )
    tid, tokens = made["table"]["id"], [made["token"]]
    tokens.append(api(server, "POST", f"/api/tables/{tid}/join", {"name": "Bo"})["token"])
    api(server, "POST", f"/api/tables/{tid}/start", {"token": tokens[0]})
    return tid, tokens


def context(browser: Browser, size: dict[str, int], errors: list[str]) -> tuple[BrowserContext, Page]:
    phone = size["width"] < 500
    # reduced motion: the bubbles show without their pop-in, so they are measured as they stay
    ctx = browser.new_context(viewport=size, has_touch=phone, is_mobile=phone, reduced_motion="reduce")  # type: ignore[arg-type]
    page = ctx.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    return ctx, page


def send(page: Page, reaction: str) -> None:
    """Open the row of reactions in the bar and press one."""
    page.locator("details.reactpick > summary").click()
    page.locator(f".reactrow button[data-reaction='{reaction}']").click()


def bubble(page: Page, seat: int, reaction: str) -> Any:
    return page.locator(bubble_selector(seat, reaction))


def boxes(page: Page, *selectors: str) -> list[dict[str, float]]:
    """The box (x, y, width, height in CSS pixels, from the window's corner) of the first element of each selector,
    all read in one task of the page, once every one is shown (up to 5 s). Read one after the other, two boxes could
    come from two renderings: the table redraws its board at every update, and a box read from an element just
    replaced is none."""
    found = page.wait_for_function(
        """selectors => {
            const out = [];
            for (const selector of selectors) {
                const el = document.querySelector(selector);
                const r = el && el.getBoundingClientRect();
                if (!r || !r.width || !r.height) return null;
                out.push({ x: r.x, y: r.y, width: r.width, height: r.height });
            }
            return out;
        }""",
        arg=list(selectors),
        timeout=5000,
    )
    result: list[dict[str, float]] = found.json_value()
    return result


def bubble_selector(seat: int, reaction: str) -> str:
    return f".reactbubble[data-seat='{seat}'][data-reaction='{reaction}']"


def by_the_seat(page: Page, seat: int, reaction: str) -> None:
    """The bubble shows, in the window, level with seat's name and to the right of it (or over its end)."""
    expect(bubble(page, seat, reaction)).to_be_visible(timeout=5000)
    b, name = boxes(page, bubble_selector(seat, reaction), f".aseat[data-seat='{seat}'] > header strong")
    middle = b["y"] + b["height"] / 2
    assert name["y"] - 4 <= middle <= name["y"] + name["height"] + 4, (b, name)
    width = page.viewport_size["width"] if page.viewport_size else 0
    assert b["x"] >= name["x"] and b["x"] + b["width"] <= width, (b, name)


def reaction_arrived(page: Page, seat: int, reaction: str) -> None:
    """The page got the server's ``reaction`` (shown or not)."""
    page.wait_for_function(
        "([seat, reaction]) => window.__ct.reaction && window.__ct.reaction.seat === seat"
        " && window.__ct.reaction.reaction === reaction",
        arg=[seat, reaction],
        timeout=5000,
    )


def set_hidden(page: Page, hidden: bool) -> None:
    """The tab goes to the background (or comes back), as the browser tells the page."""
    page.evaluate(
        "h => { Object.defineProperty(document, 'hidden', { configurable: true, get: () => h });"
        " document.dispatchEvent(new Event('visibilitychange')); }",
        hidden,
    )


def test_a_reaction_shows_by_the_senders_seat_and_mute_hides_it(browser: Browser, server: str) -> None:
    tid, (ana_token, bo_token) = anemone_of_two(server)
    errors: list[str] = []
    ana_ctx, ana = context(browser, WIDE, errors)
    bo_ctx, bo = context(browser, PHONE, errors)
    watch_ctx, watcher = context(browser, WIDE, errors)
    try:
        sit(ana, server, tid, 0, ana_token)
        sit(bo, server, tid, 1, bo_token)
        watcher.goto(f"{server}/?table={tid}&watch=1")
        for page in (ana, bo, watcher):
            page.wait_for_selector(".aseat[data-seat='1'] > header")

        send(ana, "nice")
        for page in (bo, ana, watcher):  # everyone, the sender too, sees it on Ana's seat
            by_the_seat(page, 0, "nice")
        expect(bo.locator(".reactbubble")).to_have_count(1)
        expect(bo.locator(".reactbubble .rlabel")).to_have_text("nice!")
        expect(bubble(bo, 0, "nice")).to_have_count(0, timeout=8000)  # gone after a few seconds

        # Bo mutes this table: the next reaction reaches the page but does not show, and the mute is remembered
        bo.locator("details.tmenu > summary").click()
        bo.locator("#mute-reactions").check()
        send(ana, "wow")
        by_the_seat(ana, 0, "wow")
        reaction_arrived(bo, 0, "wow")
        expect(bo.locator(".reactbubble")).to_have_count(0)
        bo.reload()
        bo.wait_for_selector(".aseat[data-seat='1'] > header")
        bo.locator("details.tmenu > summary").click()
        expect(bo.locator("#mute-reactions")).to_be_checked()
        bo.locator("#mute-reactions").uncheck()
        bo.evaluate("() => { document.querySelector('details.tmenu').open = false; }")

        # the spectator has no row; one sent anyway is refused in words, and nobody sees it
        expect(watcher.locator("details.reactpick")).to_have_count(0)
        watcher.evaluate("() => window.__ctConn.send({ type: 'react', reaction: 'nice' })")
        expect(watcher.locator("#toast.error")).to_contain_text("take a seat to send reactions")

        # four at once are one too many (the seat's budget: 3 at once, then one every 2 s); Bo (unmuted) sees the
        # last one let through, and never the refused
        for reaction in ("hello", "oops", "laugh", "thinking"):
            send(ana, reaction)
        expect(ana.locator("#toast.error")).to_contain_text("Too many reactions")
        last = ana.locator(".reactbubble[data-seat='0']").get_attribute(
            "data-reaction"
        )  # came before the refusal
        assert last in ("hello", "oops", "laugh"), last
        reaction_arrived(bo, 0, last)
        expect(bubble(bo, 0, last)).to_be_visible()
        assert state(bo)["reaction"]["reaction"] == last
        assert errors == []
    finally:
        for ctx in (ana_ctx, bo_ctx, watch_ctx):
            ctx.close()


def test_sound_is_off_at_first_and_remembered_and_the_title_says_your_turn_in_the_background(
    browser: Browser, server: str
) -> None:
    tid, tokens = anemone_of_two(server)
    errors: list[str] = []
    contexts = [context(browser, WIDE, errors), context(browser, PHONE, errors)]
    pages = [page for _, page in contexts]
    try:
        for seat, page in enumerate(pages):
            sit(page, server, tid, seat, tokens[seat])
            page.wait_for_selector(".handcards")
        page = pages[0]
        page.locator("details.tmenu > summary").click()
        toggle = page.locator("#sound-toggle")
        expect(toggle).not_to_be_checked()  # off on a first visit
        assert page.evaluate("() => localStorage.getItem('ct.sound')") is None
        toggle.check()
        page.reload()
        page.wait_for_selector(".handcards")
        page.locator("details.tmenu > summary").click()
        expect(page.locator("#sound-toggle")).to_be_checked()  # remembered
        page.evaluate("() => { document.querySelector('details.tmenu').open = false; }")

        turn = state(page)["view"]["turn"]
        mover, waiter = pages[turn], pages[1 - turn]
        title = waiter.title()
        set_hidden(waiter, True)
        assert waiter.title() == title  # hidden, but not its turn
        set_hidden(mover, True)
        assert mover.title() == "Your turn · cardtable"
        set_hidden(mover, False)
        assert mover.title() == title
        set_hidden(mover, True)
        mover.locator(".handcards .playable").first.dispatch_event("click")  # plays from the background
        expect(mover).to_have_title(title)  # the turn passed: the title comes back
        # the waiter's turn begins while it is in the background: its title says so, and with sound on, it sounds
        expect(waiter).to_have_title("Your turn · cardtable")
        cues = waiter.evaluate("() => window.__ctCues")
        assert {"kind": "turn", "played": turn == 1} in cues  # pages[0] turned the sound on
        set_hidden(waiter, False)
        assert waiter.title() == title
        assert errors == []
    finally:
        for ctx, _ in contexts:
            ctx.close()


def test_screenshots_in_three_languages_at_two_sizes(browser: Browser, server: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    tid, (ana_token, bo_token) = anemone_of_two(server)
    errors: list[str] = []
    ana_ctx, ana = context(browser, WIDE, errors)
    bo_ctx, bo = context(browser, PHONE, errors)
    try:
        for lang, reaction in (("en", "nice"), ("ko", "well_played"), ("ja", "thinking")):
            for page, seat, token in ((ana, 0, ana_token), (bo, 1, bo_token)):
                page.goto(server + "/?howto=nerts")
                page.evaluate("lang => localStorage.setItem('ct.lang', lang)", lang)
                sit(page, server, tid, seat, token)
                page.wait_for_selector(".aseat[data-seat='1'] > header")
            send(bo, reaction)
            by_the_seat(ana, 1, reaction)
            by_the_seat(bo, 1, reaction)
            ana.locator("details.reactpick > summary").click()  # the row, open
            ana.screenshot(path=str(SHOTS / f"anemone-{lang}-1280x720.png"))
            assert axe_serious(ana) == []  # the open row and a bubble pass axe-core
            ana.locator("details.reactpick > summary").click()
            bo.screenshot(path=str(SHOTS / f"anemone-{lang}-390x844.png"))
            bo.locator("details.tmenu > summary").click()  # the menu's toggles
            bo.screenshot(path=str(SHOTS / f"anemone-menu-{lang}-390x844.png"))
        assert errors == []
    finally:
        ana_ctx.close()
        bo_ctx.close()


def test_a_nerts_reaction_shows_by_the_layouts_name(browser: Browser, server: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    made = api(
        server,
        "POST",
        "/api/tables",
        {
            "game": "nerts",
            "name": "Ana",
            "autostart": False,
            "options": {"players": 3},
            "seats": [{"kind": "open"}, {"kind": "open"}, {"kind": "bot", "bot": "greedy:easy"}],
        },
    )
    tid, ana_token = made["table"]["id"], made["token"]
    bo_token = api(server, "POST", f"/api/tables/{tid}/join", {"name": "Bo"})["token"]
    api(server, "POST", f"/api/tables/{tid}/start", {"token": ana_token})
    errors: list[str] = []
    ana_ctx, ana = context(browser, WIDE, errors)
    bo_ctx, bo = context(browser, PHONE, errors)
    try:
        sit(ana, server, tid, 0, ana_token)
        sit(bo, server, tid, 1, bo_token)
        for page in (ana, bo):
            page.wait_for_selector(".layout.mine")
        send(bo, "hello")
        for page, name, size in (
            (ana, "section.layout[data-seats='1'] .lhead", "1280x720"),
            (bo, ".layout.mine .lhead", "390x844"),
        ):
            expect(bubble(page, 1, "hello")).to_be_visible(timeout=5000)
            b, head = boxes(page, bubble_selector(1, "hello"), name)
            assert head["y"] - 4 <= b["y"] + b["height"] / 2 <= head["y"] + head["height"] + 4, (b, head)
            page.screenshot(path=str(SHOTS / f"nerts-en-{size}.png"))
        assert errors == []
    finally:
        ana_ctx.close()
        bo_ctx.close()


def test_reactions_from_the_dialog_at_the_end_of_the_match(browser: Browser, server: str) -> None:
    """The hand-over dialog covers the bar: it has its own row, and a bubble shows over the dialog's backdrop."""
    SHOTS.mkdir(exist_ok=True)
    tid, tokens = anemone_of_two(server)
    errors: list[str] = []
    contexts = [context(browser, WIDE, errors), context(browser, PHONE, errors)]
    pages = [page for _, page in contexts]
    try:
        for seat, page in enumerate(pages):
            page.goto(server + "/?howto=nerts")
            page.evaluate(
                "() => localStorage.setItem('ct.trickHoldMs', '0')"
            )  # no pause on each finished trick
            sit(page, server, tid, seat, tokens[seat])
            page.wait_for_selector(".handcards")

        def play_one() -> bool:
            for page in pages:
                if page.locator(".overlay .handover").count():
                    return True
                if state(page).get("legal"):
                    card = page.locator(".handcards .playable, .handcards .discardable").first
                    if card.count():
                        card.dispatch_event("click")
            return False

        wait_for(play_one, timeout=120, what="the match to end", every=0.1)
        for page in pages:
            expect(page.locator(".overlay .handover .reactrow.indialog")).to_be_visible(timeout=30_000)
        pages[1].locator(".overlay .reactrow.indialog button[data-reaction='well_played']").click()
        for page in pages:  # Bo's seat is under the dialog: the bubble shows at the top, with Bo's name
            shown = bubble(page, 1, "well_played")
            expect(shown).to_be_visible()
            expect(shown).to_have_class(re.compile(r"\bloose\b"))
            expect(shown).to_contain_text("Bo")
            box, width = shown.bounding_box(), WIDE["width"] if page is pages[0] else PHONE["width"]
            assert box and box["y"] < 60 and box["x"] >= 0 and box["x"] + box["width"] <= width, box
        pages[0].screenshot(path=str(SHOTS / "anemone-dialog-en-1280x720.png"))
        pages[1].screenshot(path=str(SHOTS / "anemone-dialog-en-390x844.png"))
        assert errors == []
    finally:
        for ctx, _ in contexts:
            ctx.close()
