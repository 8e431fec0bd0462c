"""The lobby's Your games panel on a phone in every language: its one-line seat lists end in an ellipsis and never
widen the lobby's column (in Japanese, "相手: ボット2（シンプル）、…" once pushed the whole lobby 90 px past the
screen's edge: the single column was ``1fr``, whose least width is its longest line's)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect
from test_turn_based_page import BOTS, sign_up, turn_table


@pytest.mark.parametrize("lang", ["en", "ko", "ja"])
def test_your_games_fits_a_phone_in_every_language(browser: Browser, server: str, screenshots: Path,
                                                   lang: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})
    try:
        sign_up(context.request, server, "Mirae")
        turn_table(context.request, server, (7200, 3600), BOTS * 3)
        page = context.new_page()
        page.goto(server + "/")
        page.evaluate(f"localStorage.setItem('ct.lang', '{lang}')")
        page.reload()
        expect(page.locator("#your-games li.game-row")).to_have_count(1)
        expect(page.locator("html")).to_have_attribute("lang", lang)
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")  # nothing sticks out
        page.screenshot(path=str(screenshots / f"your_games_{lang}_390x844.png"))
    finally:
        context.close()
