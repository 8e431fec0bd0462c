"""Fold a ``cardtable/1`` record through its game's engine: the one mechanism behind replay, persistence and
crash recovery (``docs/architecture.md``, "The engine's shape"; ``docs/records.md``, "cardtable replay").

A record that cannot be read as a whole raises :class:`~cardtable.records.RecordError` (``cardtable replay`` exits 1);
the first action that cannot be applied raises :class:`IllegalRecordAction` (exit 2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cardtable.engine import HandState, IllegalAction, Match
from cardtable.games import get_game
from cardtable.records import HandRecord, Record, RecordError


class IllegalRecordAction(ValueError):
    """An action of the record that cannot be applied: ``hand`` and ``index`` count from 0 (index within the hand)."""

    def __init__(self, hand: int, index: int, reason: str) -> None:
        super().__init__(f"hand {hand}, action {index}: {reason}")
        self.hand = hand
        self.index = index
        self.reason = reason


@dataclass(slots=True)
class HandSummary:
    """One hand's ``scores`` (points per seat) and why it ``ended`` (``None``: still in progress); ``deal``, with
    rotated deals only, the deal (cycle, from 0) the hand played (``Match.deal_cycle``)."""

    scores: list[int]
    ended: str | None
    deal: int | None = None


@dataclass(slots=True)
class ReplayResult:
    """The outcome of a folded record: the :class:`~cardtable.engine.Match` as it stands and a summary of it."""

    match: Match
    hands: list[HandSummary] = field(default_factory=list)
    totals: list[int] = field(default_factory=list)
    winner: list[int] | None = None
    anemones: list[list[int]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` form of ``docs/records.md``: each hand gains ``"deal": C`` with rotated deals."""
        out: dict[str, Any] = {
            "hands": [
                {"scores": h.scores, "ended": h.ended} if h.deal is None
                else {"scores": h.scores, "ended": h.ended, "deal": h.deal}
                for h in self.hands
            ],
            "totals": self.totals,
            "winner": self.winner,
        }
        if self.anemones is not None:
            out["anemones"] = self.anemones
        return out


StepHook = Callable[[int, int | None, HandState], None]
"""Called after each hand start (index ``None``) and each applied action: ``(hand, index, state)``."""


def new_match(record: Record) -> Match:
    """A fresh match for the record's game and options; :class:`RecordError` for bad options or seat count."""
    try:
        match = get_game(record.game).new_match(record.options)
    except ValueError as error:
        raise RecordError(f"options: {error}") from None
    if match.players != len(record.seats):
        raise RecordError(
            f"seats: the record has {len(record.seats)} seats but options.players is {match.players}"
        )
    return match


def start_hand(match: Match, hand: HandRecord, number: int) -> HandState:
    """Begin hand ``number`` of the record from its deal; :class:`RecordError` naming the field on a bad deal."""
    try:
        match.check_deal(hand.deal)
        return match.start_hand(hand.deal)
    except ValueError as error:
        text = str(error)
        raise RecordError(f"hands[{number}].{text}" if text.startswith("deal") else f"hands[{number}].deal: {text}") from None


def apply_actions(state: HandState, hand: HandRecord, number: int, on_step: StepHook | None = None) -> None:
    """Apply the hand's actions in order; :class:`IllegalRecordAction` on the first that cannot be applied.

    A Nerts hand whose record stops after a Nerts call, with no ``end_hand``, is read as if the table's
    ``end_hand`` followed its last action (``docs/records.md``, "The end of a Nerts hand").
    """
    last_ms = 0
    for index, entry in enumerate(hand.actions):
        try:
            state.apply(entry.seat, entry.action, entry.ms)
        except (IllegalAction, ValueError, TypeError, KeyError) as error:
            raise IllegalRecordAction(number, index, str(error) or type(error).__name__) from None
        last_ms = entry.ms
        if on_step is not None:
            on_step(number, index, state)
    if not state.is_over:
        due = state.clock_action()
        if due is not None and due[1].get("type") == "end_hand":
            state.apply(None, due[1], max(due[0], last_ms))


def fold(record: Record, on_step: StepHook | None = None) -> ReplayResult:
    """Replay every hand of ``record`` and summarise it.

    Raises :class:`RecordError` (bad options, seats or deal) or :class:`IllegalRecordAction` (an action that cannot
    be applied, or a hand that had not ended when the next one began).
    """
    match = new_match(record)
    result = ReplayResult(match=match)
    in_progress: list[int] | None = None
    for number, hand in enumerate(record.hands):
        if match.is_over:
            raise IllegalRecordAction(number, 0, "the match was already over before this hand")
        state = start_hand(match, hand, number)
        if on_step is not None:
            on_step(number, None, state)
        apply_actions(state, hand, number, on_step)
        if state.is_over:
            finished = match.finish_hand()
            result.hands.append(HandSummary(list(finished.scores), finished.ended, match.deal_cycle(number)))
        elif number + 1 < len(record.hands):
            raise IllegalRecordAction(number, len(hand.actions), "the hand had not ended when the next hand began")
        else:
            in_progress = state.scores()
            result.hands.append(HandSummary(list(in_progress), None, match.deal_cycle(number)))
    result.totals = list(match.totals)
    if in_progress is not None:
        result.totals = [total + score for total, score in zip(result.totals, in_progress, strict=True)]
    result.winner = match.winners() if match.is_over else None
    anemones = getattr(match, "anemones", None)
    if record.game == "anemone" and anemones is not None:
        result.anemones = [list(faces) for faces in anemones]
    return result
