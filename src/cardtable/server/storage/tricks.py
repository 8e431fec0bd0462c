"""The tricks of an Enemy Anemone record, as every seat saw them (issue 29, "Coming back"): each completed trick's
cards in play order with when each was played, the seat that won it, the seat that took an anemone for its lowest
card, and each hand's end with its scores (``docs/rules/enemy-anemone.md``, "A trick", "Taking an anemone", "End of
a hand").

Pure: the record (a stored :class:`~cardtable.server.storage.rows.TableRow` loaded with its hands, or a
:class:`~cardtable.records.Record`) is folded through the engine (``cardtable.replay``'s ``new_match`` and
``start_hand``, then each action's events), and only public information comes out: cards played into a trick,
cards discarded face up, takers and scores, never a card still in a hand, the deal, or the 2-seat deck's draws.

>>> from cardtable import records
>>> record = records.new_record("anemone", [records.Seat(name=n) for n in "abc"], {"players": 3})
>>> record.hands = [records.HandRecord(deal={"seed": 7}, actions=[
...     records.ActionRecord(seat=0, ms=0, action={"type": "play", "card": "10A"}, at="2026-11-27T10:00:00Z")])]
>>> log = fold_tricks(record)
>>> log.tricks, log.last_moves[0].at, log.totals
([], '2026-11-27T10:00:00Z', [0, 0, 0])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cardtable import records
from cardtable.engine import IllegalAction
from cardtable.replay import IllegalRecordAction, new_match, start_hand
from cardtable.server.storage.rows import TableRow, record_of


@dataclass(frozen=True, slots=True)
class Play:
    """A card a seat put down during a trick, face up."""

    seat: int
    """The seat that played (or discarded) it, from 0."""
    card: str
    """The card's code, rank then suit (``"7C"``)."""
    at: str | None
    """When it was played (ISO 8601 UTC) at a turn-based table; ``None`` where the record has no time."""

    def to_dict(self, with_at: bool = True) -> dict[str, Any]:
        """``{"seat", "card", "at"}`` (``{"seat", "card"}`` without ``with_at``)."""
        out: dict[str, Any] = {"seat": self.seat, "card": self.card}
        if with_at:
            out["at"] = self.at
        return out


@dataclass(frozen=True, slots=True)
class Trick:
    """A completed trick ("A trick", steps 4-5)."""

    hand: int
    """The hand it belongs to, from 0."""
    index: int
    """The index (within its hand's actions, from 0) of the action that completed it."""
    plays: tuple[Play, ...]
    """The cards played into it, in play order (discards are not part of a trick)."""
    discards: tuple[Play, ...]
    """Cards discarded face up during it by seats with no card of a new suit, in order."""
    winner: int
    """The seat whose card had the highest value: it takes the trick's cards and leads next."""
    taker: int | None
    """The seat that took an anemone for the trick's lowest card ("Taking an anemone"); ``None`` when there was
    none to take (the supply empty and nobody else holding one)."""
    anemones: int
    """Anemone cards taken for the lowest card: 1 (a flip to +2, one from the supply, or one given), or 0."""

    def to_dict(self) -> dict[str, Any]:
        """The ``catch_up`` message's trick (``docs/protocol.md``): ``{"hand", "plays": [{"seat", "card", "at"}],
        "taker", "anemones", "winner", "discards": [{"seat", "card", "at"}]}``."""
        return {
            "hand": self.hand,
            "plays": [play.to_dict() for play in self.plays],
            "taker": self.taker,
            "anemones": self.anemones,
            "winner": self.winner,
            "discards": [play.to_dict() for play in self.discards],
        }


@dataclass(frozen=True, slots=True)
class HandEnd:
    """A hand that ended ("End of a hand")."""

    hand: int
    """The hand, from 0."""
    index: int
    """The index of its last action (the one that ended it) within the hand."""
    scores: list[int]
    """Points each seat scored in it."""
    totals: list[int]
    """Each seat's running total after it."""

    def to_dict(self) -> dict[str, Any]:
        """``{"hand", "scores", "totals"}``."""
        return {"hand": self.hand, "scores": list(self.scores), "totals": list(self.totals)}


@dataclass(frozen=True, slots=True)
class Move:
    """A seat's move in the record: where it is and when it was made."""

    hand: int
    """The hand, from 0."""
    index: int
    """The action's index within the hand."""
    at: str | None
    """When it was made (ISO 8601 UTC), ``None`` where the record has no time."""


@dataclass(slots=True)
class TrickLog:
    """What a record's tricks show everyone, in the order they happened."""

    players: int
    """Seats at the table."""
    tricks: list[Trick] = field(default_factory=list)
    """Every completed trick."""
    hands: list[HandEnd] = field(default_factory=list)
    """Every hand that ended."""
    totals: list[int] = field(default_factory=list)
    """Each seat's total over the hands that ended (the table's ``totals``), in points."""
    last_moves: dict[int, Move] = field(default_factory=dict)
    """Each seat's last move (seats that never moved are missing)."""

    def last_trick(self) -> Trick | None:
        """The last completed trick, ``None`` before the first."""
        return self.tricks[-1] if self.tricks else None


def _record(source: TableRow | records.Record) -> records.Record:
    record = record_of(source) if isinstance(source, TableRow) else source
    if record.game != "anemone":
        raise records.RecordError(f"game: tricks are read from an Enemy Anemone record, not {record.game!r}")
    return record


def fold_tricks(source: TableRow | records.Record) -> TrickLog:
    """Fold ``source`` (a stored table loaded with its hands, or a record) and list its tricks, hand ends and each
    seat's last move.

    Raises :class:`~cardtable.records.RecordError` for a record of another game or one whose options, seats or
    deals are bad, and :class:`~cardtable.replay.IllegalRecordAction` for an action that cannot be applied.
    """
    record = _record(source)
    match = new_match(record)
    log = TrickLog(players=match.players, totals=[0] * match.players)
    for number, hand in enumerate(record.hands):
        if match.is_over:
            raise IllegalRecordAction(number, 0, "the match was already over before this hand")
        state = start_hand(match, hand, number)
        plays: list[Play] = []
        discards: list[Play] = []
        for index, entry in enumerate(hand.actions):
            try:
                events = state.apply(entry.seat, entry.action, entry.ms)
            except (IllegalAction, ValueError, TypeError, KeyError) as error:
                raise IllegalRecordAction(number, index, str(error) or type(error).__name__) from None
            if entry.seat is not None:
                log.last_moves[entry.seat] = Move(number, index, entry.at)
            winner: int | None = None
            for event in events:
                kind = event.get("type")
                if kind == "played":
                    plays.append(Play(int(event["seat"]), str(event["card"]), entry.at))
                elif kind == "discarded":
                    discards.append(Play(int(event["seat"]), str(event["card"]), entry.at))
                elif kind == "trick_won":
                    winner = int(event["winner"])
                elif kind == "anemone" and winner is not None:
                    took = event.get("how") != "none"
                    log.tricks.append(
                        Trick(
                            hand=number,
                            index=index,
                            plays=tuple(plays),
                            discards=tuple(discards),
                            winner=winner,
                            taker=int(event["seat"]) if took else None,
                            anemones=1 if took else 0,
                        )
                    )
                    plays, discards, winner = [], [], None
        if state.is_over:
            result = match.finish_hand()
            log.hands.append(
                HandEnd(
                    hand=number,
                    index=len(hand.actions) - 1,
                    scores=list(result.scores),
                    totals=list(match.totals),
                )
            )
        elif number + 1 < len(record.hands):
            raise IllegalRecordAction(
                number, len(hand.actions), "the hand had not ended when the next hand began"
            )
    log.totals = list(match.totals)
    return log
