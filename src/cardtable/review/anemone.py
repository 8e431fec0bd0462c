"""The review of a seat's Enemy Anemone decisions (issue 30; rules: ``docs/rules/enemy-anemone.md``).

Each decision of the seat (a play or a discard it made) is searched again from the view that seat had then, rebuilt
by replaying the record (``state.view(seat)``: its own hand, the tricks, the counts; never another hand or the deck)
by the search bot (:mod:`cardtable.bots.ismcts`) at :data:`REVIEW_BUDGET`. The search's root statistics give the
seat's expected points for the hand (points are good for their holder: 1 per card in its score pile, 1 more per 3,
5 and 8; rules page, "End of a hand") after the move played and after the move the search prefers:
``loss = max(0, points(preferred) - points(played))``, so a loss is never below 0 and is "points the seat gave
away". A decision with one legal card has loss 0 and is not searched.

>>> from cardtable import records
>>> record = records.new_record("anemone", [records.Seat("a"), records.Seat("b"), records.Seat("c")],
...                             {"players": 3, "rounds": 1})
>>> len(decisions(record, 0))
0
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from cardtable.bots.ismcts import Budget, action_to_move, position_rng, root_statistics
from cardtable.engine import Action, HandState, View
from cardtable.games.anemone import CODE
from cardtable.records import Record
from cardtable.replay import fold

REVIEW_BUDGET = Budget(10_000, math.inf, greedy=0.5, prune_spends=True, halving=True, paired=True)
"""The review's search: 10,000 simulations (``ismcts:hard`` has 2,500), with no clock (``math.inf`` seconds), so a
review depends only on the view and the seed. ``hard``'s options, with the root's moves compared on the same deals
(``paired``), which makes the difference between two moves' means less noisy."""

MARK_LOSS = 0.5
"""A decision that loses this many points or more is marked (``"marked": true``)."""

LARGEST = 3
"""How many of the largest losses the summary lists."""


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision of the reviewed seat: where it is in the record and what the seat knew and did."""

    hand: int
    """The hand, from 0."""
    index: int
    """The action's index within the hand (as in the record)."""
    view: View
    """The seat's view just before it acted (``state.view(seat)``)."""
    legal: list[Action]
    """Its legal actions then."""
    played: Action
    """The action it took (a ``play`` or a ``discard``)."""


def decisions(record: Record, seat: int) -> list[Decision]:
    """Every decision of ``seat`` in ``record``, in order, replayed from the record (a hand in progress too).
    Raises what :func:`cardtable.replay.fold` raises for a record that cannot be replayed."""
    found: list[Decision] = []

    def step(hand: int, index: int | None, state: HandState) -> None:
        upcoming = 0 if index is None else index + 1
        actions = record.hands[hand].actions
        if upcoming < len(actions) and actions[upcoming].seat == seat and not state.is_over:
            found.append(
                Decision(
                    hand,
                    upcoming,
                    copy.deepcopy(state.view(seat)),
                    copy.deepcopy(state.legal_actions(seat)),
                    dict(actions[upcoming].action),
                )
            )

    fold(record, on_step=step)
    return found


def needs_search(legal: list[Action]) -> bool:
    """Whether a decision among ``legal`` is searched: more than one card to choose from."""
    return len({str(action["card"]) for action in legal}) > 1


def review_decision(
    hand: int,
    index: int,
    view: View,
    legal: list[Action],
    played: Action,
    seed: int,
    budget: Budget = REVIEW_BUDGET,
) -> dict[str, Any]:
    """One decision's entry: ``{"hand", "index", "played", "best", "loss", "marked"}`` (cards as codes, ``loss`` in
    points, rounded to 0.01, never below 0; ``best`` is ``played``'s card when the loss is 0). A picklable entry
    point for a process pool. The search sees ``view`` only and is seeded by ``seed`` and the view
    (:func:`~cardtable.bots.ismcts.position_rng`). ``ValueError`` for a ``played`` that is no play or discard."""
    card = str(played["card"])
    entry: dict[str, Any] = {
        "hand": hand,
        "index": index,
        "played": card,
        "best": card,
        "loss": 0.0,
        "marked": False,
    }
    if not needs_search(legal):
        return entry
    move = action_to_move(played)
    best, stats = root_statistics(view, budget, position_rng(seed, view), include=move)
    points = {stat.move: stat.mean_points for stat in stats}
    loss = round(max(0.0, points.get(best, 0.0) - points.get(move, 0.0)), 2)
    if loss > 0:
        entry.update(best=CODE[best[1]], loss=loss, marked=loss >= MARK_LOSS)
    return entry


def summarize(seat: int, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``ready`` review of ``seat`` from its decisions' entries (in record order): the entries and a summary
    (``decisions``, ``average_loss`` in points per decision rounded to 0.001, and the :data:`LARGEST` largest
    losses above 0, largest first, the earlier first among equals)."""
    losses = [float(e["loss"]) for e in entries]
    largest = sorted((e for e in entries if e["loss"] > 0), key=lambda e: -float(e["loss"]))[:LARGEST]
    return {
        "status": "ready",
        "game": "anemone",
        "seat": seat,
        "decisions": entries,
        "summary": {
            "decisions": len(entries),
            "average_loss": round(sum(losses) / len(losses), 3) if losses else 0.0,
            "largest": largest,
        },
    }


def review(
    record: Record, seat: int, seed: int = 0, budget: Budget = REVIEW_BUDGET, limit: int | None = None
) -> dict[str, Any]:
    """The review of ``seat`` in ``record`` (:func:`summarize`'s shape), searched here one decision after the
    other; ``limit``: only the first ``limit`` decisions."""
    found = decisions(record, seat)[:limit]
    entries = [review_decision(d.hand, d.index, d.view, d.legal, d.played, seed, budget) for d in found]
    return summarize(seat, entries)
