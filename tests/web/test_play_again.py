"""Play again between two browsers: ana (1280x720) and bo (a phone, 390x844) finish a one-hand Enemy Anemone match
with a bot; ana presses Play again in the game-over dialog, bo sees the invitation and joins with one click, and
both sit at the new table with the same bot in the same seat (``docs/protocol.md``, "Play again")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from webhelpers import api, axe_serious, sit, state

from polling import wait_for

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("CARDTABLE_SHOTS", "/tmp/shots_again"))
"""Where the invitation's screenshots go (looked at by hand)."""

INVITE = {"en": "ana wants to play again", "ko": "ana 님이 한 판 더 하자고 합니다"}

PLAY_MY_TURN = """() => {
  const st = window.__ct;
  if (!st.view || st.view.over || st.view.turn !== st.seat || !(st.legal || []).length || !window.__ctConn) return;
  if (window.__actedAt === st.v) return;  // one action per version: the next waits for its update
  window.__actedAt = st.v;
  window.__ctConn.act(st.legal[0]);
}"""


def play_to_the_end(pages: list[Page]) -> None:
    """Each page plays its first legal card whenever it is its turn, until both show the game-over dialog."""

    def over() -> bool:
        for p in pages:
            p.evaluate(PLAY_MY_TURN)
        return all(p.locator(".overlay .handover #again").count() for p in pages)

    wait_for(over, 120, "the end of the match", every=0.05)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_play_again_takes_both_people_and_the_bot_to_a_new_table(
    browser: Browser, server: str, lang: str
) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    made = api(
        server,
        "POST",
        "/api/tables",
        {
            "game": "anemone",
            "options": {"players": 3, "rounds": 1},
            "name": "ana",
            "seats": [{"kind": "open"}, {"kind": "open"}, {"kind": "bot", "bot": "random"}],
        },
    )
    tid = made["table"]["id"]
    joined = api(server, "POST", f"/api/tables/{tid}/join", {"name": "bo"})
    ana_ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    bo_ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    ana, bo = ana_ctx.new_page(), bo_ctx.new_page()
    errors: list[str] = []
    try:
        for page, seat, token in ((ana, 0, made["token"]), (bo, 1, joined["token"])):
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(server + "/?howto=anemone")
            page.evaluate(f"localStorage.setItem('ct.lang', '{lang}')")
            sit(page, server, tid, seat, token)
            page.wait_for_selector(".waiting")
        api(server, "POST", f"/api/tables/{tid}/start", {"token": made["token"]})
        play_to_the_end([ana, bo])

        ana.click(".overlay .handover #again")  # the first press opens the next table
        ana.wait_for_function("id => window.__ct.table && window.__ct.table.id !== id", arg=tid)
        new_id = state(ana)["table"]["id"]
        assert ana.url.endswith(f"/?table={new_id}")

        invitation = bo.locator(".invitation")
        expect(invitation).to_be_visible()
        expect(invitation).to_contain_text(INVITE[lang])
        expect(bo.locator(".overlay .handover")).to_be_visible()  # the invitation shows above the dialog
        bo.screenshot(path=str(SHOTS / f"invitation-{lang}-390x844.png"))
        bo.set_viewport_size({"width": 1280, "height": 720})
        bo.screenshot(path=str(SHOTS / f"invitation-{lang}-1280x720.png"))
        box = invitation.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 1280 and box["y"] >= 0
        assert axe_serious(bo) == []  # the invitation above the game-over dialog passes axe-core

        bo.click("#again-join")  # one click: bo takes seat 1 at the same new table
        bo.wait_for_function(
            "id => window.__ct.table && window.__ct.table.id === id && window.__ct.seat === 1", arg=new_id
        )
        expect(invitation).to_have_count(0)
        for page in (ana, bo):  # every seat taken: the table starts by itself, with the same bot in seat 2
            page.wait_for_selector(".anemone-table .myhand", timeout=30_000)
        table = api(server, "GET", f"/api/tables/{new_id}")
        assert table["status"] == "playing" and table["options"]["rounds"] == 1
        assert [(s["kind"], s.get("name"), s.get("bot")) for s in table["seats"]] == [
            ("person", "ana", None),
            ("person", "bo", None),
            ("bot", "bot-2", "random"),
        ]
        assert state(ana)["seat"] == 0 and state(bo)["seat"] == 1
        assert not errors, errors
    finally:
        ana_ctx.close()
        bo_ctx.close()
