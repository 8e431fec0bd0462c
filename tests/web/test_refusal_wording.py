"""Refusals in the player's language: every code of the refusal catalogues, worded by the page's own function
(``wordRefusal`` in js/i18n.js) with cards, piles and suits filled in, reads in Korean and Japanese with no Latin
letters other than the card ranks A, J, Q and K; cards are named as a player says them; an unknown code falls back
to the English reason."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser

CODES = Path(__file__).resolve().parents[2] / "src" / "cardtable" / "web" / "static" / "i18n" / "codes"
STANDARD_CARDS = ["KD", "10H", "6S", "AC", "QS", "JK1", "JH"]
CREATURE_CARDS = ["7C", "3A", "10F"]
PILES = [{"kind": "work", "number": 3}, {"kind": "nerts", "number": None}, {"kind": "waste", "number": None},
         {"kind": "stock", "number": None}, {"kind": "foundation", "number": 2}, {"kind": "foundation", "number": None}]


def _samples(code: str, template: str) -> list[dict[str, Any]]:
    """A few params for a code's placeholders: card codes, piles and suits of the code's game, numbers for the rest."""
    anemone = code.startswith("anemone.")
    names = re.findall(r"\{(\w+)\}", template)
    out = []
    for i in range(3):
        params: dict[str, Any] = {}
        for n in names:
            if n.endswith("card"):
                cards = CREATURE_CARDS if anemone else STANDARD_CARDS
                params[n] = cards[(i + len(params)) % len(cards)]
            elif n.endswith("pile"):
                params[n] = PILES[(i * 2 + len(params)) % len(PILES)]
            elif n.endswith("suit"):
                params[n] = ["A", "C", "F"][i] if anemone else ["S", "H", "D"][i]
            else:
                params[n] = 3 + i
        out.append(params)
    return out


def _word_all(page: Page, lang: str, msgs: list[dict[str, Any]]) -> list[str]:
    return page.evaluate(
        """async ([lang, msgs]) => {
          await window.__ctI18n.setLanguage(lang);
          return msgs.map(m => window.__ctI18n.wordRefusal(m, m.code.startsWith('anemone.') ? 'anemone' : 'nerts'));
        }""", [lang, msgs])


def test_every_code_reads_in_korean_and_japanese(page: Page, server: str) -> None:
    en = json.loads((CODES / "en.json").read_text(encoding="utf-8"))
    assert len(en) > 40
    msgs = [{"code": code, "params": p, "reason": "ENGLISH REASON"} for code, tpl in en.items() for p in _samples(code, tpl)]
    page.goto(server + "/?howto=nerts")
    page.wait_for_selector("section.rules")
    for lang in ("ko", "ja"):
        words = _word_all(page, lang, msgs)
        for msg, text in zip(msgs, words, strict=True):
            assert text and "ENGLISH" not in text, (lang, msg["code"], text)
            assert "{" not in text, (lang, msg["code"], text)
            assert not re.search(r"[B-IL-PR-Zb-z]", text), (lang, msg["code"], msg["params"], text)
    en_words = _word_all(page, "en", msgs)
    for msg, text in zip(msgs, en_words, strict=True):
        assert "{" not in text and "foundation:" not in text and "work:" not in text, (msg["code"], text)


def test_cards_piles_and_suits_as_a_player_says_them(page: Page, server: str) -> None:
    page.goto(server + "/?howto=nerts")
    page.wait_for_selector("section.rules")
    msg = {"code": "nerts.work_pile_order", "params": {"card": "KD", "onto_card": "6S", "pile": {"kind": "work", "number": 3}},
           "reason": "KD does not go on 6S"}
    suit = {"code": "anemone.suit_in_trick", "params": {"card": "7C", "suit": "C"}, "reason": "7C: C is in the trick"}
    empty = {"code": "nerts.pile_empty", "params": {"pile": {"kind": "work", "number": 2}}, "reason": "work:1 is empty"}
    want = {
        "en": ["king of diamonds", "6 of spades", "Octopus 7", "work pile 2"],
        "ko": ["다이아몬드 K", "스페이드 6", "문어 7", "2번 작업 더미"],
        "ja": ["ダイヤのK", "スペードの6", "タコの7", "作業山2"],
    }
    for lang, parts in want.items():
        a, b, c = _word_all(page, lang, [msg, suit, empty])
        assert parts[0] in a and parts[1] in a, (lang, a)
        assert parts[2] in b, (lang, b)
        assert parts[3] in c, (lang, c)
    # an unknown code falls back to the English reason, a known one never shows it
    unknown = {"code": "no.such_code", "params": {}, "reason": "the server's English"}
    assert _word_all(page, "ko", [unknown]) == ["the server's English"]
