"""The repository's documents stand alone: every document path cited in the code, tests and docs exists here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CITED = re.compile(r"(?<![\w/.])((?:\.\./)?(?:shared|docs)/[\w./*-]+\.md)")


def _texts() -> list[Path]:
    files = [ROOT / "README.md"]
    for folder, pattern in (("src", "*.py"), ("src", "*.js"), ("tests", "*.py"), ("docs", "*.md"), ("bench", "*.py")):
        files += sorted((ROOT / folder).rglob(pattern))
    return [f for f in files if f.name != "test_docs.py"]


@pytest.mark.parametrize("path", _texts(), ids=lambda p: str(p.relative_to(ROOT)))
def test_cited_documents_are_in_the_repository(path: Path) -> None:
    for cited in CITED.findall(path.read_text(encoding="utf-8")):
        assert not cited.startswith(("shared/", "../shared/")), f"{path.name} cites {cited}, outside the repository"
        if "*" in cited:
            assert list(ROOT.glob(cited)), f"{path.name} cites {cited}, which matches nothing"
        else:
            assert (ROOT / cited).is_file(), f"{path.name} cites {cited}, which does not exist"


def test_the_rules_pages_list_every_option() -> None:
    from cardtable.games import get_game

    for game, page in (("nerts", "docs/rules/nerts.md"), ("anemone", "docs/rules/enemy-anemone.md")):
        text = (ROOT / page).read_text(encoding="utf-8")
        for spec in get_game(game).option_specs:
            assert f"| {spec.name} " in text, f"{page} does not list the option {spec.name}"
