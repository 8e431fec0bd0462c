"""docs/ai.md stays true: its Python examples run as written, and its ``cardtable ...`` commands too.

Python blocks run in order, each in a fresh namespace, in one temporary directory (so the training-data example
reads the file the ``cardtable simulate`` command before it wrote). Shell lines other than ``cardtable`` commands
(``pip install``, the benchmark) are not run here.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspiel")
pytest.importorskip("pettingzoo")

from typer.testing import CliRunner

from cardtable.cli import app

DOC = Path(__file__).resolve().parents[1] / "docs" / "ai.md"


def blocks() -> list[tuple[str, str]]:
    return re.findall(r"```(python|bash)\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_doc_has_examples_of_each_kind() -> None:
    kinds = [kind for kind, _ in blocks()]
    assert kinds.count("python") >= 4 and "bash" in kinds


def test_examples_run_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ran = 0
    for kind, code in blocks():
        if kind == "python":
            exec(compile(code, f"{DOC}:python", "exec"), {"__name__": "__docs__"})
            ran += 1
            continue
        for line in code.splitlines():
            command = line.split("#")[0].strip()
            if command.startswith("cardtable "):
                result = CliRunner().invoke(app, shlex.split(command)[1:])
                assert result.exit_code == 0, result.output
                ran += 1
    assert ran >= 5
    assert Path("games.jsonl").exists()


def test_core_imports_none_of_the_ai_extra() -> None:
    """``import cardtable``, ``cardtable.games`` and ``cardtable.server`` leave the ``ai`` extra unimported."""
    code = (
        "import sys, cardtable, cardtable.games, cardtable.games.anemone, cardtable.games.nerts, "
        "cardtable.bots.anemone, cardtable.server.edge.app, cardtable.cli\n"
        "bad = [m for m in ('pettingzoo', 'gymnasium', 'numpy', 'pyspiel', 'open_spiel') if m in sys.modules]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize(
    "name", ["cardtable.envs.anemone_encoding", "cardtable.envs.anemone_v0", "cardtable.envs.nerts_v0"]
)
def test_module_examples(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
