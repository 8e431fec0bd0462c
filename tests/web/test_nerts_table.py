"""A person plays Nerts against three bots in the browser: drag and drop to a foundation and between work piles,
flips, a refused move that slides back, and the end-of-hand scores."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from webhelpers import drag, state

pytestmark = pytest.mark.browser


def mine(view: dict[str, Any], seat: int) -> dict[str, Any]:
    return next(lay for lay in view["layouts"] if seat in lay["seats"])


def card_in_foundations(view: dict[str, Any], card: str, pack: int) -> bool:
    return any(c["card"] == card and c["pack"] == pack for f in view["foundations"] for c in f["cards"])


def source_card(page: Page, src: str, count: int = 1):  # type: ignore[no-untyped-def]
    cards = page.locator(f'.layout.mine .pile[data-pile="{src}"] .card[data-card]')
    return cards.nth(cards.count() - count)


def test_person_plays_a_nerts_hand(page: Page, server: str, screenshots) -> None:  # type: ignore[no-untyped-def]
    page.set_viewport_size({"width": 1280, "height": 720})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(server + "/")
    page.wait_for_selector(".playnow-btn")
    page.fill("#player-name", "ana")
    page.click("#custom > summary")  # the long form is behind "Custom table"
    page.fill("[name=nerts_pile_size]", "5")
    page.fill("[name=target_score]", "1000")
    page.click("details.advanced summary")  # timing options are under "Advanced"
    page.fill("[name=stall_seconds]", "10")
    page.fill("#seed", "11")
    for i in (1, 2, 3):
        page.select_option(f"select.seat-kind[data-seat='{i}']", "greedy:easy")
    page.click("#create")
    # every other seat is a bot: no invite link to offer, and the table starts by itself (or on Start, where the
    # server waits for it)
    page.wait_for_selector(".waiting, .layout.mine")
    expect(page.locator("#invite")).to_have_count(0)
    with contextlib.suppress(Exception):
        page.locator("#start").click(timeout=1500)
    page.wait_for_selector(".layout.mine")
    seat = state(page)["seat"]
    assert seat == 0

    done = {"dblclick": 0, "foundation": 0, "work": 0, "flip": 0, "rejected": 0}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if page.locator(".overlay .handover").count():
            break
        st = state(page)
        view, legal = st["view"], st["legal"]
        if not view or view["over"]:
            page.wait_for_timeout(200)
            continue
        me = mine(view, seat)
        to_found = [a for a in legal if a["type"] == "move" and a["to"].startswith("foundation") and "as" not in a]
        to_work = [a for a in legal if a["type"] == "move" and a["to"].startswith("work") and a["from"].startswith("work")]
        if any(a["type"] == "nerts" for a in legal):
            with contextlib.suppress(Exception):  # the hand may end first
                page.locator("#call-nerts").click(timeout=2000)
            page.wait_for_timeout(400)
            continue
        if done["rejected"] == 0 and done["foundation"] >= 1:
            # drag a work pile's top card onto a work pile it does not fit: refused, it slides back
            tops = [(i, p) for i, p in enumerate(me["work"]) if p]
            bad = None
            for i, p in tops:
                for j in range(len(me["work"])):
                    if j != i and me["work"][j] and not any(
                        a.get("from") == f"work:{i}" and a.get("to") == f"work:{j}" for a in legal
                    ):
                        bad = (i, j, p[-1])
                        break
                if bad:
                    break
            if bad:
                i, j, card = bad
                if not drag(page, source_card(page, f"work:{i}"), page.locator(f'.layout.mine .pile[data-pile="work:{j}"]')):
                    continue
                expect(page.locator(".toast.show.error")).to_be_visible(timeout=3000)
                page.wait_for_timeout(400)
                assert mine(state(page)["view"], seat)["work"][i][-1] == card
                expect(page.locator(f'.layout.mine .pile[data-pile="work:{i}"] .card[data-card]').last).to_have_attribute(
                    "data-card", card)
                done["rejected"] += 1
                continue
        if to_found:
            a = next((x for x in to_found if x["from"] == "nerts"), to_found[0])
            src = source_card(page, a["from"])
            card = src.get_attribute("data-card")
            target = page.locator(f'.foundation[data-pile="{a["to"]}"]')
            if done["foundation"] == 1:
                try:
                    src.dblclick(timeout=2000)  # a double-click sends a card to the foundation that takes it
                except Exception:
                    continue
            elif not drag(page, src, target):
                continue
            try:
                page.wait_for_function(
                    "([c, p]) => (window.__ct.view?.foundations || []).some(f => f.cards.some(x => x.card === c && x.pack === p))",
                    arg=[card, me["pack"]], timeout=3000)
                done["foundation"] += 1
                done["dblclick"] += done["foundation"] == 2
            except Exception:
                pass  # a bot got there first: the card came back
            continue
        if to_work and done["work"] < 2 and done["flip"] >= 1:  # a flip first: the hand may end early
            a = to_work[0]
            src = source_card(page, a["from"], a.get("count", 1))
            before = state(page)["v"]
            if not drag(page, src, page.locator(f'.layout.mine .pile[data-pile="{a["to"]}"]')):
                continue
            try:
                page.wait_for_function("v => window.__ct.v > v", arg=before, timeout=3000)
            except Exception:
                continue
            j = int(a["to"].split(":")[1])
            if mine(state(page)["view"], seat)["work"][j][-1:] == me["work"][int(a["from"].split(":")[1])][-1:]:
                done["work"] += 1
            continue
        if any(a["type"] == "flip" for a in legal):
            waste = me["waste"]["count"]
            stock = me["stock"]["count"]
            if done["flip"] % 2:
                page.keyboard.press(" ")  # Space flips
            else:
                box = page.locator(".layout.mine .pile.stock").bounding_box()
                if box is None:
                    continue
                page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 3)
            try:
                page.wait_for_function(
                    "([s, w, seat]) => { const l = window.__ct.view.layouts.find(x => x.seats.includes(seat));"
                    " return l.stock.count !== s || l.waste.count !== w || window.__ct.view.over; }",
                    arg=[stock, waste, seat], timeout=3000)
            except Exception:
                continue  # the hand ended under us
            done["flip"] += 1
            if done["flip"] == 3:
                page.screenshot(path=str(screenshots / "nerts-play-1280x720.png"))
            continue
        page.wait_for_timeout(200)

    expect(page.locator(".overlay .handover")).to_be_visible(timeout=60000)
    page.screenshot(path=str(screenshots / "nerts-hand-over-1280x720.png"))
    print("moves made:", done)
    assert not errors, errors
    assert done["foundation"] >= 1, done
    assert done["flip"] >= 1, done
    assert done["dblclick"] == 1, done
    assert done["rejected"] == 1, done
    # the scores: one row for the hand, one column per seat, and the running totals
    rows = page.locator(".overlay table.scores tbody tr")
    expect(rows).to_have_count(1)
    expect(page.locator(".overlay table.scores thead th")).to_have_count(5)
    totals = page.locator(".overlay table.scores tfoot th").all_inner_texts()
    assert len(totals) == 5
    hand_scores = rows.first.locator("td").all_inner_texts()[1:]
    assert totals[1:] == hand_scores
