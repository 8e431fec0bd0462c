"""cardtable.records: the shape of a cardtable/1 record (docs/records.md, "Fields")."""

import json

import pytest

from cardtable import records
from cardtable.records import RecordError


def minimal(**changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "format": "cardtable/1",
        "game": "nerts",
        "options": {"players": 2},
        "seats": [{"name": "ana"}, {"name": "bot-1", "bot": "greedy"}],
        "hands": [
            {
                "deal": {"seed": 1},
                "actions": [
                    {"seat": 0, "ms": 10, "action": {"type": "flip"}},
                    {"seat": None, "ms": 10, "action": {"type": "rotate"}},
                ],
            }
        ],
    }
    data.update(changes)
    return data


def test_a_good_record_round_trips() -> None:
    record = records.from_dict(minimal())
    again = records.loads(records.dumps(record))
    assert again == record
    assert record.seats[1].bot == "greedy"
    assert record.hands[0].actions[1].seat is None
    assert json.loads(records.dumps(record))["seats"][0] == {"name": "ana"}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"format": "pgn"}, "format: unknown format 'pgn'"),
        ({"game": "chess"}, "game: unknown game 'chess'"),
        ({"seats": []}, "seats: a record needs at least one seat"),
        ({"seats": [{"bot": "greedy"}]}, "name"),
        ({"options": []}, "options"),
        ({"hands": [{"actions": []}]}, "deal"),
    ],
)
def test_bad_records_name_the_field(changes: dict[str, object], message: str) -> None:
    with pytest.raises(RecordError, match=message):
        records.from_dict(minimal(**changes))


def test_time_must_not_go_backwards() -> None:
    data = minimal()
    data["hands"] = [
        {
            "deal": {"seed": 1},
            "actions": [
                {"seat": 0, "ms": 50, "action": {"type": "flip"}},
                {"seat": 1, "ms": 49, "action": {"type": "flip"}},
            ],
        }
    ]
    with pytest.raises(RecordError, match=r"hands\[0\]\.actions\[1\]\.ms: time went backwards"):
        records.from_dict(data)


def test_an_action_needs_a_type_and_a_real_seat() -> None:
    data = minimal()
    data["hands"] = [{"deal": {"seed": 1}, "actions": [{"seat": 0, "ms": 1, "action": {}}]}]
    with pytest.raises(RecordError, match=r"actions\[0\]\.action\.type"):
        records.from_dict(data)
    data["hands"] = [{"deal": {"seed": 1}, "actions": [{"seat": 5, "ms": 1, "action": {"type": "flip"}}]}]
    with pytest.raises(RecordError, match=r"actions\[0\]\.seat: no seat 5"):
        records.from_dict(data)


def test_not_json_and_unreadable_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RecordError, match="not JSON"):
        records.loads("{nope")
    with pytest.raises(RecordError, match="cannot read"):
        records.load(tmp_path / "missing.json")


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(RecordError, match="unknown field"):
        records.from_dict(minimal(extra=1))
