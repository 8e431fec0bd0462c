"""Each Nerts bot level the server offers is described in one sentence, in English, Korean and Japanese: on the
how-to-play page (beside the latency-fairness policy) and in the lobby under each seat's bot choice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect
from webhelpers import api

pytestmark = pytest.mark.browser

I18N = Path(__file__).resolve().parents[2] / "src" / "cardtable" / "web" / "static" / "i18n"
LANGS = ["en", "ko", "ja"]


def _catalogue(lang: str) -> dict[str, str]:
    return dict(json.loads((I18N / f"{lang}.json").read_text(encoding="utf-8")))


@pytest.mark.parametrize("lang", LANGS)
def test_how_to_play_describes_every_nerts_bot_level_and_the_fairness_policy(browser: Browser, server: str,
                                                                              lang: str) -> None:
    words = _catalogue(lang)
    offered = [b["spec"] for b in next(g for g in api(server, "GET", "/api/games") if g["game"] == "nerts")["bots"]]
    assert {"expert:easy", "expert:medium", "expert:hard", "greedy:easy", "greedy:medium", "greedy:hard"} <= set(offered)
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    page.goto(server + "/")
    page.evaluate("(lang) => localStorage.setItem('ct.lang', lang)", lang)
    page.goto(server + "/?howto=nerts")
    levels = page.locator(".botlevels dd")
    expect(levels).to_have_count(len(offered))
    for spec in offered:
        sentence = words[f"bot.desc.{spec}"]
        assert sentence and sentence.count("\n") == 0
        expect(page.locator(f'.botlevels dd[data-bot="{spec}"]')).to_have_text(sentence)
        expect(page.locator(f'.botlevels dt[data-bot="{spec}"]')).not_to_be_empty()
    # the planners are told apart from the greedy bots of the same level
    titles = page.locator(".botlevels dt").all_inner_texts()
    assert len(set(titles)) == len(titles), titles
    # the fairness policy, with the real numbers (docs/protocol.md, "Fairness")
    rules = page.locator("section.rules").all_inner_texts()
    fair = [r for r in rules if "150" in r and "100" in r]
    assert fair, "no section gives the 150 ms cap and the 100 ms tie window"
    ctx.close()


@pytest.mark.parametrize("lang", LANGS)
def test_the_lobby_describes_the_bot_chosen_for_each_seat(browser: Browser, server: str, lang: str) -> None:
    words = _catalogue(lang)
    ctx = browser.new_context(viewport={"width": 390, "height": 844})
    page = ctx.new_page()
    page.goto(server + "/")
    page.evaluate("(lang) => localStorage.setItem('ct.lang', lang)", lang)
    page.goto(server + "/")
    page.locator("#create-h").click()
    page.locator('.segmented button[data-game="nerts"]').click()
    row = page.locator(".seat-row").nth(1)
    for spec in ["expert:easy", "expert:medium", "expert:hard", "greedy:easy"]:
        row.locator("select").select_option(spec)
        expect(row.locator(".botdesc")).to_have_text(words[f"bot.desc.{spec}"])
    # a planner's name is not a greedy bot's of the same level
    label = row.locator("select").evaluate_all(
        "(els) => Object.fromEntries([...els[0].options].map((o) => [o.value, o.textContent]))")
    for level in ["easy", "medium", "hard"]:
        assert label[f"expert:{level}"] != label[f"greedy:{level}"]
    row.locator("select").select_option("open")
    expect(row.locator(".botdesc")).to_be_hidden()
    ctx.close()
