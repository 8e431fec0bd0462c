"""Enemy Anemone as fixed-size numbers: action indices and observation vectors (``docs/ai.md``).

Shared by the PettingZoo environment (:mod:`cardtable.envs.anemone_v0`) and the OpenSpiel game
(:mod:`cardtable.openspiel`). Everything here reads only a seat's view (``docs/views-anemone.md``) and record
actions, never the engine's hidden state, so an observation cannot encode a card hidden from its seat.

Actions (:data:`NUM_ACTIONS` = 3,360 indices, the same for 2 to 6 seats):

- ``play``: ``card * 55 + spend_index(ones, twos)`` for ``card`` the engine card number (``"1A"`` is 0,
  ``"10F"`` 59) and the anemones spent, ``ones`` +1 faces and ``twos`` +2 faces (``ones + twos <= 9``);
- ``discard``: ``3300 + card``.

>>> action = {"type": "play", "card": "7C", "anemones": [1, 2]}
>>> index = action_index(action)
>>> index, index_action(index) == action
(1441, True)
>>> index_action(action_index({"type": "discard", "card": "10F"}))
{'type': 'discard', 'card': '10F'}
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from cardtable.engine import Action, View
from cardtable.games.anemone import ANEMONE_CARDS, CODE, card_number

CARDS = 60
"""Card slots: every card of the six suits, by engine card number."""

SPENDS: tuple[tuple[int, int], ...] = tuple(
    (ones, twos) for ones in range(ANEMONE_CARDS + 1) for twos in range(ANEMONE_CARDS + 1 - ones)
)
"""Every way to spend anemones, ``(ones, twos)``: 55 of them."""

_SPEND_INDEX = {spend: i for i, spend in enumerate(SPENDS)}
PLAYS = CARDS * len(SPENDS)
"""Play indices come first: 3,300 of them."""
NUM_ACTIONS = PLAYS + CARDS
"""Size of the action space: plays, then one discard per card (3,360)."""

MAX_SEATS = 6


def spend_index(ones: int, twos: int) -> int:
    """Index of spending ``ones`` +1 and ``twos`` +2 anemones; ``ValueError`` when more than 9 in all."""
    try:
        return _SPEND_INDEX[(ones, twos)]
    except KeyError:
        raise ValueError(f"cannot spend {ones} +1 and {twos} +2 anemones") from None


def action_index(action: Mapping[str, Any]) -> int:
    """The index of a record action (``play`` or ``discard``); ``ValueError`` for anything else."""
    kind = action.get("type")
    card = card_number(action["card"])
    if kind == "discard":
        return PLAYS + card
    if kind == "play":
        faces = list(action.get("anemones", []))
        return card * len(SPENDS) + spend_index(faces.count(1), faces.count(2))
    raise ValueError(f"not an Enemy Anemone action: {action!r}")


def index_action(index: int) -> Action:
    """The record action of an index (faces sorted, +1s first); ``ValueError`` out of range."""
    if not 0 <= index < NUM_ACTIONS:
        raise ValueError(f"action index {index} is out of range 0..{NUM_ACTIONS - 1}")
    if index >= PLAYS:
        return {"type": "discard", "card": CODE[index - PLAYS]}
    card, spend = divmod(index, len(SPENDS))
    ones, twos = SPENDS[spend]
    return {"type": "play", "card": CODE[card], "anemones": [1] * ones + [2] * twos}


def legal_mask(legal: Sequence[Action]) -> npt.NDArray[np.int8]:
    """A 0/1 ``int8`` vector of :data:`NUM_ACTIONS`: 1 at the index of each legal action."""
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    for action in legal:
        mask[action_index(action)] = 1
    return mask


def observation_size(players: int) -> int:
    """Length of :func:`observe`'s vector for ``players`` seats (``docs/ai.md`` lists every element)."""
    return 4 * CARDS + players * (3 * CARDS + 9) + 6 + 7


def observe(view: View, totals: Sequence[int] | None = None) -> npt.NDArray[np.float32]:
    """The observation vector of a seat's ``view``, seats taken relative to the viewer (0 is the viewer itself).

    Blocks, in order (``P`` = seats; card blocks are 60 slots by engine card number):

    1. own hand (60): 1 per card held;
    2. cards in the current trick (60): 1 per card played into it; discards of this trick (60);
    3. every card seen in a score pile (60);
    4. per relative seat: its card in the current trick (60), its discards this trick (60), its score pile (60);
    5. per relative seat: +1 anemones held, +2 anemones held, hand count, points this hand, match total,
       the value of its card in the trick (0 if none), leader (1/0), to act (1/0), has played/discarded in
       this trick (1/0): 9 numbers;
    6. suits in the trick (6: A to F);
    7. supply, deck count, round, rounds, must discard (1/0), hand over (1/0), cards played this trick.

    ``totals`` are the match's running totals (public); zeros when not given.
    """
    players = int(view["players"])
    seat = view["seat"]
    me = int(seat) if seat is not None else 0
    out = np.zeros(observation_size(players), dtype=np.float32)

    def rel(s: int) -> int:
        return (int(s) - me) % players

    for code in view.get("hand", []):
        out[card_number(code)] = 1
    seat_base = 4 * CARDS
    stride = 3 * CARDS
    for play in view["trick"]:
        card = card_number(play["card"])
        out[CARDS + card] = 1
        out[seat_base + rel(play["seat"]) * stride + card] = 1
    for discard in view["trick_discards"]:
        card = card_number(discard["card"])
        out[2 * CARDS + card] = 1
        out[seat_base + rel(discard["seat"]) * stride + CARDS + card] = 1
    for s, pile in enumerate(view["score_piles"]):
        for code in pile:
            card = card_number(code)
            out[3 * CARDS + card] = 1
            out[seat_base + rel(s) * stride + 2 * CARDS + card] = 1
    numbers = seat_base + players * stride
    values = {int(p["seat"]): int(p["value"]) for p in view["trick"]}
    acted = {int(p["seat"]) for p in view["trick"]} | {int(d["seat"]) for d in view["trick_discards"]}
    for s in range(players):
        base = numbers + rel(s) * 9
        faces = view["anemones"][s]
        out[base] = faces.count(1)
        out[base + 1] = faces.count(2)
        out[base + 2] = view["hand_counts"][s]
        out[base + 3] = view["points"][s]
        out[base + 4] = totals[s] if totals is not None else 0
        out[base + 5] = values.get(s, 0)
        out[base + 6] = 1 if view["leader"] == s else 0
        out[base + 7] = 1 if view["turn"] == s else 0
        out[base + 8] = 1 if s in acted else 0
    base = numbers + players * 9
    for suit in view["suits_in_trick"]:
        out[base + ord(suit) - ord("A")] = 1
    base += 6
    out[base] = view["supply"]
    out[base + 1] = view.get("deck_count", 0)
    out[base + 2] = view.get("round") or 1
    out[base + 3] = view.get("rounds") or 1
    out[base + 4] = 1 if view.get("must_discard") else 0
    out[base + 5] = 1 if view["over"] else 0
    out[base + 6] = len(view["trick"]) + len(view["trick_discards"])
    return out


def record_examples(
    record: Any,
) -> Iterator[tuple[int, npt.NDArray[np.float32], npt.NDArray[np.int8], int]]:
    """Training examples from an Enemy Anemone ``cardtable/1`` record (a :class:`cardtable.records.Record`,
    e.g. one line of ``cardtable simulate anemone --out FILE``): for every action, in order,
    ``(seat, observation, action_mask, action_index)``, the observation and mask as that seat saw them just
    before acting. The record is folded through the engine (``cardtable.replay``), so a bad record raises
    :class:`cardtable.records.RecordError` or :class:`cardtable.replay.IllegalRecordAction`.
    """
    from cardtable.replay import IllegalRecordAction, new_match, start_hand

    if record.game != "anemone":
        raise ValueError(f"not an Enemy Anemone record: {record.game!r}")
    match = new_match(record)
    for number, hand in enumerate(record.hands):
        state = start_hand(match, hand, number)
        for index, entry in enumerate(hand.actions):
            seat = entry.seat
            legal = state.legal_actions(seat) if seat is not None else []
            observation = observe(state.view(seat), match.totals)
            try:
                state.apply(seat, entry.action, entry.ms)
            except ValueError as error:
                raise IllegalRecordAction(number, index, str(error)) from None
            yield seat, observation, legal_mask(legal), action_index(entry.action)
        if state.is_over:
            match.finish_hand()
