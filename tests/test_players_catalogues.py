"""The words of the account, leaderboard and player pages (web/static/i18n/players/{en,ko,ja}.json): every key the
pages use is in English, and Korean and Japanese have the same keys with the same placeholders."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cardtable.refusals import CODES

STATIC = Path(__file__).resolve().parent.parent / "src" / "cardtable" / "web" / "static"
PAGES = ["account.js", "leaderboard.js", "player.js", "players_i18n.js"]


def catalogue(lang: str) -> dict[str, str]:
    data: dict[str, str] = json.loads((STATIC / "i18n" / "players" / f"{lang}.json").read_text(encoding="utf-8"))
    return data


def test_every_key_the_pages_use_is_in_english() -> None:
    en = catalogue("en")
    used: set[str] = set()
    for page in PAGES:
        text = (STATIC / "js" / page).read_text(encoding="utf-8")
        used |= set(re.findall(r"\btp\('([a-z_]+\.[a-z_]+)'", text))
    assert used, "no keys found"
    assert not sorted(used - set(en))
    for game in ("nerts", "anemone"):
        assert f"game.{game}" in en
    # the account and player refusals are worded with every other code, in i18n/codes (tests/test_refusals.py)
    for code in ("account.name_invalid", "account.name_taken", "account.password_invalid", "account.bad_credentials",
                 "account.rate_limited", "account.not_signed_in", "account.cross_origin", "player.unknown",
                 "player.bad_cursor"):
        assert code in CODES and f"code.{code}" not in en


@pytest.mark.parametrize("lang", ["ko", "ja"])
def test_translations_have_the_same_keys_and_placeholders(lang: str) -> None:
    en, other = catalogue("en"), catalogue(lang)
    assert set(other) == set(en)
    for key, text in en.items():
        assert set(re.findall(r"\{(\w+)\}", other[key])) == set(re.findall(r"\{(\w+)\}", text)), key
        assert other[key] != text or key.startswith("code.http"), f"{lang}: {key} is not translated"
