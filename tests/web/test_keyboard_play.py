"""Both games played from the keyboard alone (``page.keyboard`` only, once the page has loaded): a whole Enemy Anemone
hand in at most 3 key presses per play on average, with the focus kept on the hand after each play and the
hand-over dialog taking the focus and giving it back; every kind of Nerts move (to a foundation, onto a work pile,
a flip, off the Nerts pile) by picking up and putting down with Enter, Escape cancelling, a refusal changing
nothing. The keys panel lists the keys in every language."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from webhelpers import sit, started_table, state

pytestmark = pytest.mark.browser

FIRST_PLAYABLE = (
    "() => document.activeElement === document.querySelector('.handcards .ccard[aria-disabled=\"false\"]')"
)
FOCUS_IN_HAND = "() => !!document.activeElement?.closest('.handcards')"


def _focused(page: Page) -> dict[str, Any]:
    return page.evaluate("""() => { const a = document.activeElement;
        return { card: a?.dataset?.card ?? null, nav: a?.dataset?.nav ?? null, pile: a?.closest('.pile')?.dataset.pile ?? null,
                 dialog: !!a?.closest('[role=dialog]') }; }""")


def test_a_whole_enemy_anemone_hand_by_keyboard(page: Page, server: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    tid, seat, token = started_table(
        server,
        {
            "game": "anemone",
            "options": {"players": 3, "rounds": 1},
            "name": "ana",
            "seed": 5,
            "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "heuristic"}] * 2,
        },
    )
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".anemone-table .myhand")
    presses: list[int] = []
    used_anemone = False
    deadline = time.monotonic() + 150
    while True:
        assert time.monotonic() < deadline, f"the hand did not end ({len(presses)} plays)"
        st = state(page)
        view = st["view"]
        if (view and view["over"]) or page.locator(".overlay .handover").count():
            break
        if not view or view["turn"] != seat or page.evaluate("() => !window.__ct.view.hand.length"):
            page.wait_for_timeout(50)
            continue
        # your turn: the focus lands on the first card you can play, with no key pressed
        page.wait_for_function(FIRST_PLAYABLE, timeout=5000)
        before = len(view["hand"])
        anemones_before = len(view["anemones"][seat])
        enabled = page.locator('.handcards .ccard[aria-disabled="false"]')
        n = enabled.count()
        # a player picks any card: the first, the second, the last, in turn
        pick = [0, 1, n - 1][len(presses) % 3] if n > 1 else 0
        keys: list[str] = []
        if anemones_before and not used_anemone and not view["must_discard"]:
            keys.append("1")  # add your first anemone to this card
            used_anemone = True
        keys += ["End"] if pick == n - 1 and pick > 1 else ["ArrowRight"] * pick
        target = enabled.nth(pick).get_attribute("data-card")
        for k in keys:
            page.keyboard.press(k)
        assert _focused(page)["card"] == target, (keys, pick)
        page.keyboard.press("Enter")
        presses.append(len(keys) + 1)
        page.wait_for_function("n => window.__ct.view.hand.length < n", arg=before, timeout=5000)
        if "1" in keys:
            assert len(state(page)["view"]["anemones"][seat]) < anemones_before, "the anemone was not added"
        if before > 1:
            # the hand was redrawn: the focus stays on it (the same place, or the nearest card)
            page.wait_for_function(FOCUS_IN_HAND, timeout=3000)
    assert len(presses) >= 8, presses
    assert used_anemone, "no play added an anemone with its digit key"
    average = sum(presses) / len(presses)
    print(f"Enemy Anemone: {average:.2f} key presses per play over {len(presses)} plays")
    assert average <= 3, (average, presses)
    # the match-over dialog takes the focus; Escape closes it and the focus goes to the finished table's buttons
    page.wait_for_selector(".overlay .handover")
    page.wait_for_function("() => !!document.activeElement?.closest('.overlay')", timeout=5000)
    page.keyboard.press("Escape")
    expect(page.locator(".overlay .handover")).to_have_count(0)
    page.wait_for_function("() => !!document.activeElement?.closest('.finishedbar, .keysmenu')", timeout=5000)
    assert not errors, errors


def test_keys_panel_lists_the_keys_in_every_language(page: Page, server: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    tid, seat, token = started_table(
        server,
        {
            "game": "anemone",
            "options": {"players": 3},
            "name": "ana",
            "seed": 6,
            "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "heuristic"}] * 2,
        },
    )
    for lang in ("en", "ko", "ja"):
        page.goto(server + "/?howto=nerts")
        page.evaluate(f"localStorage.setItem('ct.lang', '{lang}')")
        sit(page, server, tid, seat, token)
        page.wait_for_selector(".anemone-table .myhand")
        page.click(".keysmenu > summary")
        rows = page.locator(".keysmenu .keylist li")
        expect(rows).to_have_count(5)
        text = " ".join(rows.all_inner_texts())
        assert "Enter" in text and "1" in text and "Escape" in text, text
        if lang != "en":
            assert "anemone" not in text.lower() and "play the card" not in text, text


def _mine(view: dict[str, Any], seat: int) -> dict[str, Any]:
    return next(lay for lay in view["layouts"] if seat in lay["seats"])


def _go(page: Page, group: str, pile: str, depth: int = 1) -> None:
    """Move the focus with the keyboard to ``pile`` in ``group`` ("mine" or "found"), ``depth`` cards from its top."""
    for _ in range(4):
        if _focused(page)["nav"] == group:
            break
        page.keyboard.press("Shift+Tab" if group == "found" else "Tab")
    assert _focused(page)["nav"] == group, _focused(page)
    for _ in range(40):
        if _focused(page)["pile"] == pile:
            break
        page.keyboard.press("ArrowRight")
    assert _focused(page)["pile"] == pile, (pile, _focused(page))
    for _ in range(depth - 1):
        page.keyboard.press("ArrowUp")


def _top(view: dict[str, Any], seat: int, src: str) -> str | None:
    lay = _mine(view, seat)
    if src in ("nerts", "waste"):
        return lay[src]["top"]
    pile = lay["work"][int(src.split(":")[1])]
    return pile[-1] if pile else None


def test_every_nerts_move_by_keyboard(page: Page, server: str) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    tid, seat, token = started_table(
        server,
        {
            "game": "nerts",
            "options": {"players": 1, "nerts_pile_size": 5, "target_score": 100},
            "name": "ana",
            "seed": 11,
            "seats": [{"kind": "open"}],  # alone: no bot can end the hand in the middle of a keyboard move
        },
    )
    sit(page, server, tid, seat, token)
    page.wait_for_selector(".layout.mine")
    # the hand begins with the focus on your layout: no mouse, no Tab needed
    page.wait_for_function("() => document.activeElement?.dataset?.nav === 'mine'", timeout=10000)
    done: dict[str, int] = {}
    flips_at_progress = 0
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if page.locator(".overlay .handover").count():
            break
        st = state(page)
        view, legal = st["view"], st["legal"]
        if not view or view["over"]:
            page.wait_for_timeout(100)
            continue
        lay = _mine(view, seat)
        round_trip = (lay["stock"]["count"] + lay["waste"]["count"]) // 3 + 2  # flips once round the stock
        if any(a["type"] == "nerts" for a in legal):
            # your Nerts pile is empty: call Nerts with the bar's button (Shift+Tab back to it, Enter)
            for _ in range(12):
                if page.evaluate("() => document.activeElement?.id") == "call-nerts":
                    break
                page.keyboard.press("Shift+Tab")
            page.keyboard.press("Enter")
            page.wait_for_selector(".overlay .handover", timeout=10000)
            done["called"] = 1
            break
        moves = [a for a in legal if a["type"] == "move" and "as" not in a]
        nerts = [a for a in moves if a["from"] == "nerts"]
        found = [a for a in moves if a["to"].startswith("foundation") and a["from"] != "nerts"]
        work = [a for a in moves if a["to"].startswith("work") and a["from"].startswith("work")]
        tops = [i for i, p in enumerate(lay["work"]) if p]
        if "escape" not in done and tops:
            # pick up and put back with Escape: nothing changes
            src = f"work:{tops[0]}"
            _go(page, "mine", src)
            page.keyboard.press("Enter")
            expect(page.locator(".layout.mine .held")).to_have_count(1)
            page.keyboard.press("Escape")
            expect(page.locator(".layout.mine .held")).to_have_count(0)
            assert _mine(state(page)["view"], seat)["work"] == lay["work"]
            assert _focused(page)["pile"] == src  # the focus stays where it was
            done["escape"] = 1
            continue
        bad = [
            (f"work:{i}", f"work:{j}")
            for i in tops
            for j in tops
            if i != j and not any(a.get("from") == f"work:{i}" and a.get("to") == f"work:{j}" for a in legal)
        ]
        if "refused" not in done and bad:
            src, dst = bad[0]
            _go(page, "mine", src)
            page.keyboard.press("Enter")
            _go(page, "mine", dst)
            page.keyboard.press("Enter")
            # refused: the reason shows, the card stays picked up on its own pile, then Escape puts it back
            expect(page.locator("#toast.error")).to_be_visible()
            page.wait_for_timeout(300)
            assert _mine(state(page)["view"], seat)["work"][int(src[5:])] == lay["work"][int(src[5:])]
            expect(page.locator(".layout.mine .held")).to_have_count(1)
            page.keyboard.press("Escape")
            expect(page.locator(".layout.mine .held")).to_have_count(0)
            done["refused"] = 1
            continue
        if nerts:
            a = nerts[0]
            kind, group, depth = "nerts", ("found" if a["to"].startswith("foundation") else "mine"), 1
        elif found:
            a, kind, group, depth = found[0], "foundation", "found", 1
        elif work:
            a, kind, group = work[0], "work", "mine"
            depth = a.get("count", 1)
        elif done.get("flip", 0) - flips_at_progress > round_trip and any(
            a["type"] == "stuck" for a in legal
        ):
            page.keyboard.press("s")  # once round the stock with nothing to play: stuck
            page.wait_for_timeout(300)
            flips_at_progress = done.get("flip", 0)
            continue
        else:
            _go(page, "mine", "stock")
            waste = lay["waste"]["count"]
            page.keyboard.press("Enter")  # Enter on the stock flips
            with contextlib.suppress(Exception):
                page.wait_for_function(
                    "([s, w]) => window.__ct.view.layouts.find(l => l.seats.includes(s)).waste.count !== w",
                    arg=[seat, waste],
                    timeout=3000,
                )
                done["flip"] = done.get("flip", 0) + 1
            continue
        card = _top(view, seat, a["from"])
        _go(page, "mine", a["from"], depth)
        page.keyboard.press("Enter")
        _go(page, group, a["to"])
        page.keyboard.press("Enter")
        try:
            page.wait_for_function(
                "([s, src, card]) => { const l = window.__ct.view.layouts.find(l => l.seats.includes(s));"
                " const p = src.startsWith('work:') ? l.work[Number(src.slice(5))] : [l[src].top];"
                " return !p.includes(card); }",
                arg=[seat, a["from"], card],
                timeout=3000,
            )
        except Exception:
            page.keyboard.press("Escape")  # the move did not land: put the card back and try again
            continue
        done[kind] = done.get(kind, 0) + 1
        flips_at_progress = done.get("flip", 0)
        if kind != "flip":
            # the focus went back to the pile the card came from
            assert _focused(page)["pile"] == a["from"], (_focused(page), a)
    # the whole hand was played (it ends when a seat calls Nerts), with every kind of move along the way
    assert page.locator(".overlay .handover").count(), done
    # the hand-over dialog has the focus
    page.wait_for_function("() => !!document.activeElement?.closest('.overlay')", timeout=5000)
    assert {"escape", "refused", "nerts", "foundation", "work", "flip"} <= set(done), done
    print(f"Nerts by keyboard: {done}")
    assert not errors, errors
