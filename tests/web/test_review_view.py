"""The review in the replay page (``static/js/review.js``; docs/web.md, "Replays"), against the real server's
``GET /api/tables/{id}/review``:

- Enemy Anemone: a finished one-round match where seat 1 is the random bot (it plays poor cards). The page opens on
  your seat (the one this browser holds); choosing seat 1 shows the spinner while the review is computed (left
  while pending, the page stops asking), then the summary as the server gives it; a largest loss's button jumps
  the replay to that play and the note says "Bot 2 (Random) played Fish 5; the search prefers ...", gone one step on.
- Nerts: a seat that sat still for the first seconds of a hand (an ace on a work pile, a Nerts card that fits on
  a work pile: left where they were), then left to the stand-in: its missed plays are listed and each one's button shows "You could have played ..." at its
  moment.

Screenshots in en/ko/ja at 1280x720 and 390x844 go to ``/tmp/shots_web30/``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from webhelpers import api, axe_serious, left_to_finish, sit, state, wait_finished

from polling import wait_for

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/shots_web30")
SIZES = [(1280, 720), (390, 844)]
REVIEW_S = 240
"""How long a review may take here: about 30 s for a one-round match on an idle 2-core machine (10,000
simulations a decision), more while other tests run."""


def ready_review(server: str, tid: str, seat: int) -> dict[str, Any]:
    """The review of ``seat`` once ready (asked for, so its computation starts, then polled)."""

    def ready() -> dict[str, Any] | None:
        r: dict[str, Any] = api(server, "GET", f"/api/tables/{tid}/review?seat={seat}")
        return r if r["status"] == "ready" else None

    return wait_for(ready, REVIEW_S, f"the review of seat {seat}", every=1.0)


@pytest.fixture(scope="module")
def anemone_table(server: str) -> tuple[str, str]:
    """A finished one-round Enemy Anemone match of 2 seats: the creator (Ana, who leaves at once: the stand-in plays
    her seat) against the random bot on seat 1; returns the table's id and Ana's seat token."""
    return left_to_finish(
        server,
        {
            "game": "anemone",
            "name": "Ana",
            "seed": 3,
            "grace_seconds": 0,
            "autostart": False,
            "options": {"players": 2, "rounds": 1},
            "seats": [{"kind": "open"}, {"kind": "bot", "bot": "random"}],
        },
    )


def open_replay(page: Page, server: str, tid: str, lang: str) -> None:
    page.evaluate("lang => localStorage.setItem('ct.lang', lang)", lang)
    page.goto(f"{server}/?replay={tid}")
    page.wait_for_selector("#review-seat option", state="attached")


def test_the_anemone_review_marks_a_decision_at_its_moment(
    page: Page, server: str, anemone_table: tuple[str, str]
) -> None:
    tid, token = anemone_table
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/review?" in r.url else None)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(server + "/?howto=nerts")
    page.evaluate(
        "([id, token]) => localStorage.setItem(`ct.seat.${id}`, JSON.stringify({seat: 0, token}))",
        [tid, token],
    )
    open_replay(page, server, tid, "en")
    # your seat first
    expect(page.locator("#review-seat")).to_have_value("0")
    expect(page.locator("#review-seat option[value='0']")).to_have_text("Ana (you)")

    # seat 1, whose review nobody asked for yet: a spinner that polls; leaving the page stops the polling
    page.locator("#review-seat").select_option("1")
    expect(page.locator("#review-pending")).to_contain_text("The bots are reviewing this match")
    page.locator("header a", has_text="Lobby").click()
    page.wait_for_selector("#open-tables")
    left_at = len(asked)
    lobby_reads: list[str] = []
    page.on("request", lambda r: lobby_reads.append(r.url) if "status=open" in r.url else None)
    # (page.title() lets Playwright deliver the page's request events while the test waits)
    wait_for(
        lambda: page.title() and len(lobby_reads) >= 2,
        30,
        "two refreshes of the lobby (5 s apart)",
        every=0.2,
    )
    assert len(asked) == left_at, asked[left_at:]

    review = ready_review(server, tid, 1)
    marked = [d for d in review["decisions"] if d["marked"]]
    assert marked, "the random bot made no decision that loses 0.5 points or more: choose another seed"
    assert all(d["loss"] >= 0 for d in review["decisions"])
    largest = review["summary"]["largest"]
    card = lambda code: page.evaluate("c => window.__ctI18n.cardName(c, 'anemone')", code)  # noqa: E731

    for lang in ("en", "ko", "ja"):
        for width, height in SIZES:
            page.set_viewport_size({"width": width, "height": height})
            open_replay(page, server, tid, lang)
            page.locator("#review-seat").select_option("1")
            buttons = page.locator("#review-largest button.rvjump")
            expect(buttons).to_have_count(len(largest))
            # the step shown is not a marked play: no note
            expect(page.locator("#review-note")).to_be_hidden()
            # the largest loss jumps the replay to that play, and the note says what the search prefers
            buttons.first.click()
            top = largest[0]
            note = page.locator("#review-note")
            expect(note).to_be_visible()
            expect(note).to_contain_text(card(top["played"]))
            expect(note).to_contain_text(card(top["best"]))
            if lang == "en":
                expect(note).to_have_text(
                    f"! Bot 2 (Random) played {card(top['played'])}; the search prefers {card(top['best'])}, "
                    f"about {top['loss']:.1f} points better."
                )
                expect(page.locator(".rinfo .what")).to_contain_text("Bot 2 (Random) plays")
                expect(page.locator("#review-average")).to_have_text(
                    f"{review['summary']['average_loss']:.2f}"
                )
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            if width == 1280 and lang in ("en", "ko"):
                assert not axe_serious(page), axe_serious(page)
            page.screenshot(path=str(SHOTS / f"review-anemone-{lang}-{width}x{height}.png"), full_page=True)
            # one step on: the note goes, unless that play is marked too
            page.keyboard.press("ArrowRight")
            if any(d["hand"] == top["hand"] and d["index"] == top["index"] + 1 for d in marked):
                expect(note).to_be_visible()
            else:
                expect(note).to_be_hidden()
    assert not errors, errors


def test_a_nerts_review_lists_the_missed_plays(page: Page, server: str) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_viewport_size({"width": 1280, "height": 720})
    made = api(
        server,
        "POST",
        "/api/tables",
        {
            "game": "nerts",
            "name": "Ana",
            "seed": 12,
            "grace_seconds": 60,  # no stand-in plays Ana's seat while she sits still: only once she leaves
            "autostart": False,
            "options": {"players": 2, "nerts_pile_size": 5, "target_score": 10},
            "seats": [{"kind": "open"}, {"kind": "bot", "bot": "greedy:easy"}],
        },
    )
    tid, token = made["table"]["id"], made["token"]
    page.goto(server + "/?howto=nerts")
    page.evaluate("localStorage.setItem('ct.lang', 'en')")
    api(server, "POST", f"/api/tables/{tid}/start", {"token": token})
    # Ana sits still while the bot plays for 5 s of the hand: what she could have played is missed
    sit(page, server, tid, 0, token)
    wait_for(lambda: (state(page).get("view") or {}).get("ms", 0) >= 5000, 60, "5 s of the first hand")
    page.goto(server + "/?howto=nerts")
    api(server, "POST", f"/api/tables/{tid}/leave", {"token": token})
    wait_finished(server, tid)
    review = ready_review(server, tid, 0)
    missed = review["missed"]
    # seed 12 deals Ana an ace on a work pile and a Nerts card that goes on a work pile: one miss of each kind
    assert {"foundation", "free_nerts"} <= {m["kind"] for m in missed}, review
    assert review["summary"]["missed"] == len(missed)
    first = missed[0]

    for lang in ("en", "ko", "ja"):
        for width, height in SIZES:
            page.set_viewport_size({"width": width, "height": height})
            open_replay(page, server, tid, lang)
            card = page.evaluate("c => window.__ctI18n.cardName(c)", first["card"])  # in the page's language
            expect(page.locator("#review-seat")).to_have_value("0")  # the seat this browser held
            buttons = page.locator("#review-missed button.rvjump")
            expect(buttons).to_have_count(len(missed))
            expect(page.locator("#review-missed-count")).to_have_text(str(len(missed)))
            buttons.first.click()
            note = page.locator("#review-note")
            expect(note).to_be_visible()
            expect(note).to_contain_text(card)
            if lang == "en":
                where = "to a foundation" if first["kind"] == "foundation" else "to free the Nerts pile"
                expect(note).to_contain_text(
                    f"You could have {'played' if first['kind'] == 'foundation' else 'moved'} {card} {where}"
                )
                expect(page.locator(".rinfo")).to_contain_text(f"Hand {first['hand'] + 1}")
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            if width == 1280 and lang in ("en", "ko"):
                assert not axe_serious(page), axe_serious(page)
            page.screenshot(path=str(SHOTS / f"review-nerts-{lang}-{width}x{height}.png"), full_page=True)
    assert not errors, errors
