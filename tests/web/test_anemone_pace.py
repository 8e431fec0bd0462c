"""Enemy Anemone at a readable pace: with bots at full speed, a finished trick (with its "wins" and "takes an
anemone" marks) stays on the table at least 1.2 s before the next trick's first card shows; the updates that
waited behind it are all shown, in order, so the board ends where the table is."""

from __future__ import annotations

import contextlib
import itertools

import pytest
from playwright.sync_api import Page, expect
from webhelpers import api

pytestmark = pytest.mark.browser

# Records, in the page, every change of what the trick area shows: "held" (a finished trick with its marks),
# "new" (cards of a trick in play), "empty"; with the time of the change.
OBSERVE_JS = """
() => {
  window.__trickLog = [];
  let last = null;
  const look = () => {
    const tr = document.querySelector('section.trick');
    if (!tr) return;
    const state = tr.querySelector('.badge.win') ? 'held' : tr.querySelector('.played') ? 'new' : 'empty';
    if (state !== last) { window.__trickLog.push([state, performance.now()]); last = state; }
  };
  new MutationObserver(look).observe(document.getElementById('page'), { childList: true, subtree: true });
  look();
  // snapshots replace what waited: note when they come, to tell a lost hold from a skipped one on failure
  window.__snapshots = [];
  const conn = window.__ctConn;
  const receive = conn.receive.bind(conn);
  conn.receive = (msg) => { if (msg.type === 'snapshot') window.__snapshots.push([msg.v, performance.now()]); receive(msg); };
}
"""


def _bots_only_table(server: str) -> tuple[str, str]:
    """Four seats for bots at full speed: the creator's seat goes to a stand-in once the creator leaves."""
    res = api(server, "POST", "/api/tables", {
        "game": "anemone", "options": {"players": 4, "rounds": 1}, "name": "ana", "seed": 8, "grace_seconds": 0,
        "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "heuristic"}] * 3,
    })
    return res["table"]["id"], res["token"]


def watching(page: Page) -> None:
    """Wait until the page watches the table: its connection's hello has been answered with the snapshot of the
    table not yet started (the waiting room shows). Only then may the table start: ``window.__ctConn`` is there as
    soon as the page opens its socket, and a hello that reached the server after the bots' first tricks got a
    snapshot past them, so those tricks were never shown, nor held."""
    page.wait_for_function("() => window.__ctConn")  # the table's connection, whose snapshots OBSERVE_JS notes
    expect(page.locator(".waiting")).to_be_visible()


def _start_and_leave(server: str, tid: str, token: str) -> None:
    with contextlib.suppress(Exception):  # it may have started by itself
        api(server, "POST", f"/api/tables/{tid}/start", {"token": token})
    api(server, "POST", f"/api/tables/{tid}/leave", {"token": token})


def test_a_finished_trick_stays_before_the_next_one(page: Page, server: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "/?howto=anemone")
    page.evaluate("localStorage.removeItem('ct.trickHoldMs')")  # the default hold (1.5 s)
    tid, token = _bots_only_table(server)
    page.goto(f"{server}/?table={tid}&watch=1")
    watching(page)
    page.evaluate(OBSERVE_JS)
    _start_and_leave(server, tid, token)
    # the whole hand: 4 players with 10 cards each play 10 tricks; the hand-over dialog waits behind the last one
    expect(page.locator(".overlay .handover")).to_be_visible(timeout=90000)
    log = page.evaluate("window.__trickLog")
    snapshots = page.evaluate("window.__snapshots")
    holds = [b[1] - a[1] for a, b in itertools.pairwise(log) if a[0] == "held" and b[0] == "new"]
    assert len(holds) >= 9, (log, snapshots)  # every trick but the last is followed by another
    assert min(holds) >= 1200, holds
    # nothing lost or out of order: every trick was shown, and the board ends with every hand empty
    assert sum(1 for e in log if e[0] == "held") >= 9, log
    assert all(st == "held" for st, _ in log[-1:]), log
    for text in page.locator(".aseat .stats").all_inner_texts():
        assert text.split()[1].startswith("0") or ": 0" in text, text
    assert not errors, errors


def test_a_click_moves_on_at_once(page: Page, server: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(server + "/?howto=anemone")
    page.evaluate("localStorage.setItem('ct.trickHoldMs', '60000')")  # held until a click
    tid, token = _bots_only_table(server)
    page.goto(f"{server}/?table={tid}&watch=1")
    watching(page)
    _start_and_leave(server, tid, token)
    held = page.locator("section.trick.held")
    expect(held).to_be_visible(timeout=20000)
    page.wait_for_timeout(1500)
    expect(held).to_be_visible()  # still there: the bots played on, their cards wait
    held.click()
    expect(page.locator("section.trick.held .badge.win, section.trick:not(.held) .played").first).to_be_visible(timeout=3000)
    page.evaluate("localStorage.removeItem('ct.trickHoldMs')")
