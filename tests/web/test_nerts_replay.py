"""A finished Nerts match's replay (``static/js/replay.js``, ``docs/web.md``): it steps by play (a card to a
foundation or a work pile, or a Nerts call; the flips and other actions in between are folded into the next play),
with a switch back to every action; a button per hand jumps to that hand's deal; each hand's scores show once its
last step is reached, with the running total, and equal the server's (``GET /api/tables/{id}/replay``). Screenshots
in English and Korean at 1280x720 and 390x844 go to ``/tmp/shots_seats/``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from webhelpers import api, left_to_finish

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/shots_seats")
PLAYS = ("move", "under", "nerts")
"""The Nerts actions that are plays: a card (or a run) to a foundation or a work pile, and a Nerts call."""


@pytest.fixture(scope="module")
def finished(server: str) -> tuple[str, dict[str, Any]]:
    """A finished Nerts match of several hands: the creator leaves at once (the stand-in plays their seat) against an
    instant greedy bot, short Nerts piles; returns the table's id and its replay as the server gives it."""
    tid, _ = left_to_finish(
        server,
        {
            "game": "nerts",
            "name": "Ana",
            "seed": 5,
            "grace_seconds": 0,
            "autostart": False,
            "options": {"players": 2, "nerts_pile_size": 5, "target_score": 30},
            "seats": [{"kind": "open"}, {"kind": "bot", "bot": "greedy"}],
        },
        240,
    )
    replay: dict[str, Any] = api(server, "GET", f"/api/tables/{tid}/replay")
    assert len(replay["hands"]) >= 2, replay["hands"]  # the test needs a second hand to jump to
    return tid, replay


def positions(page: Page) -> int:
    """How many steps the slider walks through."""
    return int(page.locator("#replay-slider").get_attribute("max") or "0") + 1


def score_rows(page: Page) -> list[list[int]]:
    """The scores table's hand rows, as numbers per seat."""
    rows = page.locator(".rscores table.scores tbody tr").all_inner_texts()
    return [[int(x) for x in row.split("\t")[1:]] for row in rows]


def total_row(page: Page) -> list[int]:
    return [int(x) for x in page.locator(".rscores table.scores tfoot tr").inner_text().split("\t")[1:]]


def test_a_nerts_replay_steps_by_play_jumps_to_a_hand_and_shows_its_scores(
    page: Page, server: str, finished: tuple[str, dict[str, Any]]
) -> None:
    tid, replay = finished
    record, hands = replay["record"], replay["hands"]
    actions = [e["action"] for hand in record["hands"] for e in hand["actions"]]
    plays = sum(1 for a in actions if a["type"] in PLAYS)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(server + "/?howto=nerts")
    page.evaluate("localStorage.setItem('ct.lang', 'en')")
    page.goto(f"{server}/?replay={tid}")
    expect(page.locator(".rinfo .what")).to_have_text("Hand 1 is dealt")
    # one step per play (and one per hand's deal), far fewer than the actions
    assert positions(page) == plays + len(hands), (positions(page), plays, len(hands))
    assert positions(page) < 0.8 * len(replay["steps"]), (positions(page), len(replay["steps"]))
    expect(page.locator(".rscores")).to_contain_text("No hand has ended yet")
    # stepping forward names a play every time, never a flip
    for _ in range(12):
        page.keyboard.press("ArrowRight")
        what = page.locator(".rinfo .what").inner_text()
        assert " to " in what or "slid under" in what or "calls Nerts" in what, what
    # every action, then back to plays, at the same moment of the game
    page.locator("#replay-every").check()
    expect(page.locator("#replay-slider")).to_have_attribute("max", str(len(replay["steps"]) - 1))
    page.locator("#replay-every").uncheck()
    expect(page.locator("#replay-slider")).to_have_attribute("max", str(plays + len(hands) - 1))

    # jump to hand 2: its deal; one step back is hand 1's end, with its scores and the running total
    page.locator(".rhands button.rhand[data-hand='1']").click()
    expect(page.locator(".rinfo .what")).to_have_text("Hand 2 is dealt")
    expect(page.locator(".rhands button.rhand[data-hand='1']")).to_have_attribute("aria-current", "step")
    assert score_rows(page) == [hands[0]["scores"]]
    page.keyboard.press("ArrowLeft")
    expect(page.locator(".rinfo")).to_contain_text("Hand 1 scores:")
    assert score_rows(page) == [hands[0]["scores"]] and total_row(page) == hands[0]["scores"]
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "replay-en-1280x720-hand1-end.png"))
    # the last step: every hand's scores, and the totals the server gives
    page.keyboard.press("End")
    expect(page.locator(".rinfo .handresult")).to_be_visible()
    assert score_rows(page) == [h["scores"] for h in hands]
    assert total_row(page) == replay["totals"]
    expect(page.locator(".rinfo .rtotals")).to_have_text(
        f"Totals: Ana {replay['totals'][0]} · Bot 2 (Instant) {replay['totals'][1]}"
    )
    page.screenshot(path=str(SHOTS / "replay-en-1280x720-end.png"))

    # Korean, and a phone: the same controls, worded, nothing wider than the window
    page.evaluate("localStorage.setItem('ct.lang', 'ko')")
    for width, height in ((1280, 720), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{server}/?replay={tid}")
        expect(page.locator(".rinfo .what")).to_have_text("1번째 판을 나눕니다")
        expect(page.locator(".rhands")).to_contain_text("2판")
        page.locator(".rhands button.rhand[data-hand='1']").click()
        page.keyboard.press("ArrowLeft")
        expect(page.locator(".rinfo .handresult")).to_contain_text("1판 점수")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=str(SHOTS / f"replay-ko-{width}x{height}.png"), full_page=True)
    page.evaluate("localStorage.setItem('ct.lang', 'en')")
    assert not errors, errors
