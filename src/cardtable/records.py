"""The ``cardtable/1`` game record: load, check the shape of, and write (``docs/records.md``).

A record is a whole match: the game, its options, the seats, and every hand's deal and actions in order.
This module checks the record's *shape* (format, game name, field types, ``ms`` never decreasing); the rules
(options in range, deals, legality of actions) are checked when the record is folded by ``cardtable.replay``.

>>> rec = loads('{"format": "cardtable/1", "game": "nerts", "options": {"players": 1},'
...             ' "seats": [{"name": "ana"}], "hands": []}')
>>> rec.game, rec.seats[0].name
('nerts', 'ana')
>>> loads('{"format": "cardtable/2"}')
Traceback (most recent call last):
...
cardtable.records.RecordError: format: unknown format 'cardtable/2' (expected 'cardtable/1')
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

FORMAT = "cardtable/1"
GAMES = ("nerts", "anemone")
TABLE_ACTIONS = ("rotate", "end_hand")


class RecordError(ValueError):
    """A record that cannot be read as a whole; the message names the field."""


class Seat(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A seat of the record: a person's ``name``, and ``bot`` (e.g. ``"greedy"``) if a bot played it."""

    name: str
    bot: str | None = None


class ActionRecord(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One applied action: the acting ``seat`` (``None``: the table), ``ms`` since the hand began, the action, and
    ``at``, when it was made (ISO 8601 UTC), written only by turn-based tables (``docs/records.md``)."""

    seat: int | None
    ms: int
    action: dict[str, Any]
    at: str | None = None


class HandRecord(msgspec.Struct, forbid_unknown_fields=True):
    """One hand: its ``deal`` (``{"seed": N}`` or the cards) and its ``actions`` in the order applied."""

    deal: dict[str, Any]
    actions: list[ActionRecord] = msgspec.field(default_factory=list)


class Record(msgspec.Struct, forbid_unknown_fields=True):
    """A ``cardtable/1`` record. ``options`` holds only what the table set; the rest take their defaults."""

    format: str
    game: str
    seats: list[Seat]
    options: dict[str, Any] = msgspec.field(default_factory=dict)
    hands: list[HandRecord] = msgspec.field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready builtins, fields in the spec's order."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return {key: out[key] for key in ("format", "game", "options", "seats", "hands")}


def _check(record: Record) -> Record:
    if record.format != FORMAT:
        raise RecordError(f"format: unknown format {record.format!r} (expected {FORMAT!r})")
    if record.game not in GAMES:
        raise RecordError(f"game: unknown game {record.game!r} (expected one of {', '.join(GAMES)})")
    if not record.seats:
        raise RecordError("seats: a record needs at least one seat")
    for h, hand in enumerate(record.hands):
        last = 0
        for i, entry in enumerate(hand.actions):
            where = f"hands[{h}].actions[{i}]"
            if "type" not in entry.action or not isinstance(entry.action["type"], str):
                raise RecordError(f"{where}.action.type: missing or not a string")
            if entry.seat is not None and not 0 <= entry.seat < len(record.seats):
                raise RecordError(f"{where}.seat: no seat {entry.seat} (the record has {len(record.seats)})")
            if entry.ms < 0:
                raise RecordError(f"{where}.ms: negative time {entry.ms}")
            if entry.ms < last:
                raise RecordError(f"{where}.ms: time went backwards ({entry.ms} after {last})")
            last = entry.ms
    return record


def from_dict(data: Any) -> Record:
    """Build and check a :class:`Record` from decoded JSON; raises :class:`RecordError` naming the field."""
    if isinstance(data, dict) and "format" in data and data["format"] != FORMAT:
        raise RecordError(f"format: unknown format {data['format']!r} (expected {FORMAT!r})")
    try:
        record = msgspec.convert(data, Record)
    except msgspec.ValidationError as error:
        raise RecordError(str(error).replace(" - at `$", " at `record")) from None
    return _check(record)


def loads(text: str | bytes) -> Record:
    """Read a record from JSON text; raises :class:`RecordError` if it is not JSON or not a valid record."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RecordError(f"not JSON: {error}") from None
    return from_dict(data)


def load(path: str | Path) -> Record:
    """Read a record file; an unreadable file is a :class:`RecordError` too."""
    try:
        text = Path(path).read_bytes()
    except OSError as error:
        raise RecordError(f"cannot read {path}: {error.strerror}") from None
    return loads(text)


def dumps(record: Record, indent: int | None = None) -> str:
    """Write a record as JSON text (one line unless ``indent``)."""
    return json.dumps(record.to_dict(), indent=indent, ensure_ascii=False)


def new_record(game: str, seats: list[Seat], options: dict[str, Any] | None = None) -> Record:
    """An empty record (no hands yet) for ``game``; checked like a loaded one."""
    return _check(Record(format=FORMAT, game=game, seats=seats, options=dict(options or {}), hands=[]))
