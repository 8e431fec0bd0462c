"""The stand-in bot shown on a seat (``static/js/standin.js``, ``docs/web.md``): ana and 지우 play at one table;
지우 closes the page, and once the table's grace (1 s here) is over the stand-in bot plays 지우's seat: ana and a
spectator see "Bot playing for 지우, until they return" on that seat, in both games; when 지우 opens the table
again, the seat shows 지우 again. Screenshots in English and Korean at 1280x720 and 390x844 go to
``/tmp/shots_seats/``."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from webhelpers import api, sit

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/shots_seats")
UNTIL = {"en": "Bot playing for 지우, until they return", "ko": "지우 님이 돌아올 때까지 봇이 대신 플레이 중"}
OPTIONS = {
    "nerts": {"players": 2, "nerts_pile_size": 20},  # a long hand: it is still on when the test ends
    "anemone": {"players": 3, "rounds": 2},
}
SEATS = {
    "nerts": [{"kind": "open"}, {"kind": "open"}],
    "anemone": [{"kind": "open"}, {"kind": "open"}, {"kind": "bot", "bot": "random"}],
}


def seat_of_jiu(page: Page, game: str) -> str:
    """A selector for 지우's seat (seat 1) on ``page``: a Nerts layout or an Enemy Anemone seat."""
    return ".layout[data-seats='1']" if game == "nerts" else ".aseat[data-seat='1']"


def open_as(browser: Browser, server: str, lang: str, size: tuple[int, int]) -> Page:
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    page = context.new_page()
    page.goto(server + "/?howto=nerts")
    page.evaluate("lang => localStorage.setItem('ct.lang', lang)", lang)
    return page


@pytest.mark.parametrize("game", ["nerts", "anemone"])
def test_the_stand_in_is_shown_on_the_seat_until_the_person_returns(
    browser: Browser, server: str, game: str
) -> None:
    SHOTS.mkdir(exist_ok=True)
    made = api(
        server,
        "POST",
        "/api/tables",
        {
            "game": game,
            "options": OPTIONS[game],
            "name": "ana",
            "grace_seconds": 1,
            "autostart": False,
            "ready_seconds": 600,
            "seats": SEATS[game],
        },
    )
    tid = made["table"]["id"]
    jiu_token = api(server, "POST", f"/api/tables/{tid}/join", {"name": "지우"})["token"]
    ana = open_as(browser, server, "en", (1280, 720))
    jiu = open_as(browser, server, "ko", (390, 844))
    errors: list[str] = []
    ana.on("pageerror", lambda e: errors.append(str(e)))
    sit(ana, server, tid, 0, made["token"])
    sit(jiu, server, tid, 1, jiu_token)
    api(server, "POST", f"/api/tables/{tid}/start", {"token": made["token"]})
    seat = seat_of_jiu(ana, game)
    expect(ana.locator(seat)).to_contain_text("지우", timeout=15000)
    expect(ana.locator(f"{seat} .standin")).to_have_count(0)

    jiu.close()  # 지우 goes away: after the grace, the stand-in plays the seat
    expect(ana.locator(f"{seat} .standin")).to_have_text(UNTIL["en"], timeout=15000)
    ana.screenshot(path=str(SHOTS / f"standin-{game}-en-1280x720.png"))
    ana.set_viewport_size({"width": 390, "height": 844})
    expect(ana.locator(f"{seat} .standin")).to_have_text(UNTIL["en"])
    ana.screenshot(path=str(SHOTS / f"standin-{game}-en-390x844.png"))
    ana.set_viewport_size({"width": 1280, "height": 720})
    # a spectator sees it too, in Korean, at both sizes
    watcher = open_as(browser, server, "ko", (1280, 720))
    watcher.goto(f"{server}/?table={tid}&watch=1")
    expect(watcher.locator(f"{seat} .standin")).to_have_text(UNTIL["ko"], timeout=15000)
    watcher.screenshot(path=str(SHOTS / f"standin-{game}-ko-1280x720.png"))
    watcher.set_viewport_size({"width": 390, "height": 844})
    watcher.screenshot(path=str(SHOTS / f"standin-{game}-ko-390x844.png"), full_page=True)

    # 지우 comes back with the same seat token: the seat is 지우's again, for everyone
    back = open_as(browser, server, "ko", (390, 844))
    sit(back, server, tid, 1, jiu_token)
    expect(ana.locator(f"{seat} .standin")).to_have_count(0, timeout=15000)
    expect(ana.locator(seat)).to_contain_text("지우")
    expect(watcher.locator(f"{seat} .standin")).to_have_count(0, timeout=15000)
    ana.screenshot(path=str(SHOTS / f"standin-{game}-en-1280x720-back.png"))
    assert not errors, errors
    for page in (ana, jiu, watcher, back):
        page.context.close()
