"""Enemy Anemone records in tests/records/anemone/, folded through cardtable.replay and the anemone engine.

`*.ok.json` replay to the end (matching `*.expect.json` where present), `*.illegal.json` stop at an illegal action,
`*.bad.json` cannot be read as a whole. The lead's tests/test_replay.py runs the same files through the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cardtable import records
from cardtable.replay import IllegalRecordAction, fold

FOLDER = Path(__file__).parent / "records" / "anemone"
FILES = sorted(p for p in FOLDER.glob("*.json") if not p.name.endswith(".expect.json"))


def test_every_kind_is_present() -> None:
    names = [p.name for p in FILES]
    for suffix in (".ok.json", ".illegal.json", ".bad.json"):
        assert any(name.endswith(suffix) for name in names)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_record(path: Path) -> None:
    if path.name.endswith(".bad.json"):
        with pytest.raises(records.RecordError):
            fold(records.load(path))
        return
    record = records.load(path)
    if path.name.endswith(".illegal.json"):
        with pytest.raises(IllegalRecordAction) as info:
            fold(record)
        # the illegal action is the record's last one
        assert info.value.hand == len(record.hands) - 1
        assert info.value.index == len(record.hands[-1].actions) - 1
        return
    summary = fold(record).to_dict()
    expect = path.with_name(path.name.removesuffix(".ok.json") + ".expect.json")
    if expect.exists():
        assert summary == json.loads(expect.read_text())
    assert summary["anemones"] is not None
    assert sum(len(faces) for faces in summary["anemones"]) <= 9
