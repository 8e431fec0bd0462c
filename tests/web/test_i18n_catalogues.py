"""The three catalogues (``web/static/i18n``) have identical keys and placeholders, and every key the page
modules ask for is in them. No browser needed."""

from __future__ import annotations

import json
import re
from pathlib import Path

STATIC = Path(__file__).resolve().parents[2] / "src" / "cardtable" / "web" / "static"


def load(lang: str) -> dict[str, str]:
    data = json.loads((STATIC / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
    assert all(isinstance(v, str) and v.strip() for v in data.values())
    return data


def test_catalogues_have_identical_keys_and_placeholders() -> None:
    en, ko, ja = load("en"), load("ko"), load("ja")
    assert list(en) == list(ko) == list(ja)
    for key in en:
        want = sorted(re.findall(r"\{\w+\}", en[key]))
        assert sorted(re.findall(r"\{\w+\}", ko[key])) == want, key
        assert sorted(re.findall(r"\{\w+\}", ja[key])) == want, key


def test_every_key_the_modules_use_is_catalogued() -> None:
    en = load("en")
    used = set()
    for js in (STATIC / "js").glob("*.js"):
        used |= set(re.findall(r"""\bt\(['"]([a-z_]+\.[a-z_.0-9]+)['"]""", js.read_text(encoding="utf-8")))
    assert used, "no t('...') calls found"
    assert not sorted(used - set(en))


def test_how_to_play_sections_are_complete() -> None:
    for lang in ("en", "ko", "ja"):
        cat = load(lang)
        for game, n in (("nerts", 10), ("anemone", 8)):
            for i in range(1, n + 1):
                assert f"howto.{game}.{i}.title" in cat and f"howto.{game}.{i}.body" in cat
