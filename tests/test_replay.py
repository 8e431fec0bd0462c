"""cardtable.replay and `cardtable replay` (docs/records.md, "cardtable replay FILE [--json]").

Every record file under tests/records/ is checked through the command: `*.ok.json` must exit 0,
`*.illegal.json` must exit 2 (an illegal action) and `*.bad.json` must exit 1 (a record that cannot be read).
A file may carry an `"expect"` object beside the record fields' siblings in a companion `NAME.expect.json`:
its keys are compared with the `--json` output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cardtable.cli import app

RECORDS = Path(__file__).parent / "records"
FILES = sorted(p for p in RECORDS.rglob("*.json") if not p.name.endswith(".expect.json"))
EXIT_CODES = {".ok.json": 0, ".illegal.json": 2, ".bad.json": 1}

runner = CliRunner()


def expected_exit(path: Path) -> int:
    for suffix, code in EXIT_CODES.items():
        if path.name.endswith(suffix):
            return code
    raise AssertionError(f"{path.name}: name must end in .ok.json, .illegal.json or .bad.json")


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(RECORDS)) for p in FILES])
def test_record_file(path: Path) -> None:
    result = runner.invoke(app, ["replay", "--json", str(path)])
    code = expected_exit(path)
    assert result.exit_code == code, result.output
    if code == 0:
        summary = json.loads(result.stdout)
        assert set(summary) >= {"hands", "totals", "winner"}
        expect = path.with_name(path.name.removesuffix(".ok.json") + ".expect.json")
        if expect.exists():
            wanted = json.loads(expect.read_text())
            assert {key: summary[key] for key in wanted} == wanted
    else:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, result.stderr
        if code == 2:
            assert lines[0].startswith("illegal: hand ")
            assert ", action " in lines[0]


def test_every_record_kind_is_present() -> None:
    kinds = {expected_exit(p) for p in FILES}
    assert kinds == {0, 1, 2}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not JSON"),
        ('{"format": "cardtable/9", "game": "nerts", "seats": [{"name": "a"}]}', "format: unknown format"),
        ('{"format": "cardtable/1", "game": "go", "seats": [{"name": "a"}]}', "game: unknown game"),
        (
            '{"format": "cardtable/1", "game": "nerts", "options": {"players": 2, "colour": 1},'
            ' "seats": [{"name": "a"}, {"name": "b"}]}',
            "options: ",
        ),
        (
            '{"format": "cardtable/1", "game": "nerts", "options": {"players": 2, "flip_count": 2},'
            ' "seats": [{"name": "a"}, {"name": "b"}]}',
            "flip_count",
        ),
        (
            '{"format": "cardtable/1", "game": "anemone", "options": {"players": 3},'
            ' "seats": [{"name": "a"}, {"name": "b"}]}',
            "seats: the record has 2 seats",
        ),
    ],
)
def test_unreadable_records_exit_1_with_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(text)
    result = runner.invoke(app, ["replay", str(path)])
    assert result.exit_code == 1
    assert message in result.stderr
    assert result.stderr.startswith("error: ")


def test_missing_file_exits_1(tmp_path: Path) -> None:
    result = runner.invoke(app, ["replay", str(tmp_path / "nope.json")])
    assert result.exit_code == 1
    assert "cannot read" in result.stderr
