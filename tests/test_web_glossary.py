"""The catalogues follow the glossary (docs/web.md, "Glossary"): one word for each game term in each language.

No browser: reads the glossary table from ``docs/web.md`` and every catalogue of ``web/static/i18n`` (the page's,
the account and player pages' in ``players/``, the refusals' in ``codes/``). A catalogue entry that names a term
differently from the glossary (아네모네 where it says 말미잘, 「今すぐプレイ」 where it says 「すぐに遊ぶ」) fails.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
I18N = ROOT / "src" / "cardtable" / "web" / "static" / "i18n"
DOC = ROOT / "docs" / "web.md"
LANGS = ("en", "ko", "ja")
PLACEHOLDER = re.compile(r"\{\w+\}")


@dataclass(frozen=True)
class Term:
    """One row of the glossary: the word in each language, the words it must never be, and whether every entry
    whose English names the term must use its Korean and Japanese words (``follows``)."""

    term: str
    words: dict[str, str]
    never: tuple[str, ...]
    follows: bool


def glossary() -> list[Term]:
    """The glossary table of docs/web.md (the first table after the "## Glossary" heading)."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Glossary\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    assert header == ["term", "en", "ko", "ja", "never", "follows"], header
    terms = []
    for line in rows[2:]:
        cells = dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True))
        assert cells["follows"] in ("yes", "no"), line
        terms.append(
            Term(
                cells["term"],
                {lang: cells[lang] for lang in LANGS},
                tuple(w.strip() for w in cells["never"].split(",") if w.strip()),
                cells["follows"] == "yes",
            )
        )
    return terms


def catalogues(lang: str) -> dict[str, str]:
    """Every entry of ``lang``, keyed ``"i18n/players/*.json KEY"`` (the same key in every language)."""
    out: dict[str, str] = {}
    for folder in ("", "players/", "codes/"):
        for key, value in json.loads((I18N / f"{folder}{lang}.json").read_text(encoding="utf-8")).items():
            out[f"i18n/{folder}*.json {key}"] = value
    return out


TERMS = glossary()
ENTRIES = {lang: catalogues(lang) for lang in LANGS}


def english_pattern(word: str) -> re.Pattern[str]:
    """``word`` as a word in English text, any case, plural too."""
    return re.compile(rf"\b{re.escape(word)}(s|es)?\b", re.IGNORECASE)


def without_longer_words(text: str, lang: str, word: str) -> str:
    """``text`` less the glossary's other words of ``lang`` that hold ``word`` (the title 에너미 아네모네 holds
    아네모네; Enemy Anemone holds anemone), so that a longer term is not taken for a shorter one."""
    for term in TERMS:
        other = term.words[lang]
        if other != word and word.casefold() in other.casefold():
            text = re.sub(re.escape(other), " ", text, flags=re.IGNORECASE)
    return text


def test_the_glossary_names_the_terms_of_the_issue() -> None:
    """The table is read (a parse that found nothing would make the other tests pass on nothing)."""
    by_en = {t.words["en"]: t for t in TERMS}
    assert by_en["anemone"].words["ko"] == "말미잘" and by_en["anemone"].words["ja"] == "イソギンチャク"
    assert "아네모네" in by_en["anemone"].never and "アネモネ" in by_en["anemone"].never
    assert by_en["Play now"].words["ja"] == "すぐに遊ぶ" and "今すぐプレイ" in by_en["Play now"].never
    for en in (
        "trick",
        "foundation",
        "Nerts pile",
        "work pile",
        "stock",
        "seat",
        "Beginner",
        "Intermediate",
        "Strong",
    ):
        assert en in by_en, en
    assert all(ENTRIES[lang] for lang in LANGS)
    assert set(ENTRIES["en"]) == set(ENTRIES["ko"]) == set(ENTRIES["ja"])


@pytest.mark.parametrize("lang", LANGS)
def test_no_entry_uses_a_word_the_glossary_rules_out(lang: str) -> None:
    wrong = []
    for key, value in ENTRIES[lang].items():
        for term in TERMS:
            for bad in term.never:
                if bad in without_longer_words(value, lang, bad):
                    wrong.append(f"{key}: {bad!r} where the glossary says {term.words[lang]!r}: {value!r}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("lang", ["ko", "ja"])
def test_entries_that_name_a_term_use_the_glossarys_word(lang: str) -> None:
    wrong = []
    for term in (t for t in TERMS if t.follows):
        pattern = english_pattern(term.words["en"])
        for key, english in ENTRIES["en"].items():
            english = without_longer_words(PLACEHOLDER.sub(" ", english), "en", term.words["en"])
            if pattern.search(english) and term.words[lang] not in ENTRIES[lang][key]:
                wrong.append(
                    f"{key}: {term.words['en']!r} is not named {term.words[lang]!r}: {ENTRIES[lang][key]!r}"
                )
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("lang", LANGS)
def test_every_glossary_word_is_a_word_of_the_catalogues(lang: str) -> None:
    text = "\n".join(ENTRIES[lang].values())

    def used(word: str) -> bool:
        return bool(english_pattern(word).search(text)) if lang == "en" else word in text

    assert not [t.words[lang] for t in TERMS if not used(t.words[lang])]
