"""Enemy Anemone bots: ``random``, ``heuristic`` and the searching ``ismcts:easy|medium|hard``.

Every bot acts from a seat's view and its legal actions only (``docs/views-anemone.md``). A bot's randomness
comes from ``random.Random`` seeded with its seed and the position (the seat's hand, the tricks played, the
cards in the trick), so the same seed, view and legal actions give the same choice (``ismcts`` too, unless its
wall-clock cap stops it before its simulation budget).

>>> from cardtable.games.anemone import AnemoneMatch, AnemoneOptions
>>> state = AnemoneMatch(AnemoneOptions(players=4)).start_hand({"seed": 3})
>>> legal = state.legal_actions(0)
>>> HeuristicBot(1).choose(state.view(0), legal) in legal
True
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from cardtable.bots import BotInfo, register
from cardtable.bots.ismcts import LEVELS, Budget, IsmctsBot, position_rng
from cardtable.engine import Action, View
from cardtable.games.anemone import POINTS_OF, RANK_OF, SUIT_OF, card_number, game_cards


class RandomBot:
    """Chooses a uniformly random legal action."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def choose(self, view: View, legal: Sequence[Action]) -> Action | None:
        """One of ``legal`` at random (``None`` only when ``legal`` is empty)."""
        if not legal:
            return None
        return dict(legal[position_rng(self.seed, view).randrange(len(legal))])


def _faces_sum(action: Action) -> int:
    return sum(action.get("anemones", []))


class HeuristicBot:
    """Rule-based play.

    - Forced to discard: the card worth most to its own score pile (a 3, 5 or 8 first), lowest rank first,
      keeping high cards for tricks it may win.
    - A card *surely wins* when its value beats the trick so far and no seat still to act could beat it: the
      highest unseen rank of a suit still open, plus that seat's anemones.
    - It plays its lowest sure winner (a 3, 5 or 8 preferred) when the trick is worth 2 points or more (counting
      about 1.3 points per card still to come). Failing that, it spends the fewest anemones that make a sure
      winner when the trick is worth 4 or more (3 in the last hand, where anemones only break ties).
    - Otherwise, when not last to act, it plays a 9 or 10 that beats the trick so far (likely to win);
      else it dumps its lowest card, keeping 3s, 5s and 8s out of other seats' piles (the lowest card takes an
      anemone, which is no loss).
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def choose(self, view: View, legal: Sequence[Action]) -> Action | None:
        """One of ``legal`` by the rules above (``None`` only when ``legal`` is empty)."""
        if not legal:
            return None
        numbers = {a["card"]: card_number(a["card"]) for a in legal}

        def rank(action: Action) -> int:
            return RANK_OF[numbers[action["card"]]]

        def points(action: Action) -> int:
            return POINTS_OF[numbers[action["card"]]]

        if legal[0]["type"] == "discard":
            keep = max(legal, key=lambda a: (points(a), -rank(a)))
            return dict(keep)
        players = int(view["players"])
        seat = int(view["seat"])
        n_turns = 4 if players == 2 else players
        done = len(view["trick"]) + len(view["trick_discards"])
        remaining = n_turns - done - 1
        leader = int(view["leader"])
        later = {(leader + k) % players for k in range(done + 1, n_turns)} - {seat}
        high = max((int(p["value"]) for p in view["trick"]), default=-1)
        trick_points = sum(POINTS_OF[card_number(p["card"])] for p in view["trick"])
        worth_more = 1.3 * remaining
        last_hand = view.get("round") is not None and view.get("round") == view.get("rounds")
        seen = {card_number(c) for c in view["hand"]}
        for pile in view["score_piles"]:
            seen.update(card_number(c) for c in pile)
        seen.update(card_number(p["card"]) for p in view["trick"])
        open_suits = {SUIT_OF[c] for c in game_cards(players)} - {
            SUIT_OF[card_number(p["card"])] for p in view["trick"]
        }
        top_unseen = {s: 0 for s in open_suits}
        for c in game_cards(players):
            if c not in seen and SUIT_OF[c] in top_unseen:
                top_unseen[SUIT_OF[c]] = max(top_unseen[SUIT_OF[c]], RANK_OF[c])
        boost = max((sum(view["anemones"][s]) for s in later), default=0)

        def sure(action: Action) -> bool:
            value = rank(action) + _faces_sum(action)
            if value < high:
                return False
            if not later:
                return True
            suit = SUIT_OF[numbers[action["card"]]]
            threat = max((r for s, r in top_unseen.items() if s != suit and r), default=0)
            return threat == 0 or value > threat + boost

        plain = [a for a in legal if not a.get("anemones")]
        winners = [a for a in plain if sure(a)]
        if winners:
            pick = min(winners, key=lambda a: (rank(a) - 2 * points(a), a["card"]))
            if trick_points + points(pick) + worth_more >= 2:
                return dict(pick)
        else:
            boosted = [a for a in legal if a.get("anemones") and sure(a)]
            if boosted:
                pick = min(boosted, key=lambda a: (_faces_sum(a), len(a["anemones"]), -points(a), rank(a)))
                if trick_points + points(pick) + worth_more >= (3 if last_hand else 4):
                    return dict(pick)
        if remaining > 0:
            best = max(plain, key=lambda a: (rank(a), points(a)))
            if rank(best) >= 9 and rank(best) > high:
                return dict(best)
        dump = min(plain, key=lambda a: (points(a), rank(a), a["card"]))
        return dict(dump)


def _make_random(seed: int) -> RandomBot:
    return RandomBot(seed)


def _make_heuristic(seed: int) -> HeuristicBot:
    return HeuristicBot(seed)


register(BotInfo("random", "anemone", "Plays a uniformly random legal action.", _make_random))
register(
    BotInfo(
        "heuristic",
        "anemone",
        "Rule-based: wins tricks worth points as cheaply as it can, dumps low cards, spends anemones sparingly.",
        _make_heuristic,
    )
)


def _register_ismcts() -> None:
    for level, budget in LEVELS.items():

        def make(seed: int, level: str = level) -> Any:
            return IsmctsBot(seed, level)

        def make_fixed(seed: int, budget: Budget = budget) -> Any:
            return IsmctsBot(seed, dataclasses.replace(budget, seconds=math.inf))

        register(
            BotInfo(
                f"ismcts:{level}",
                "anemone",
                f"Information-set Monte Carlo tree search: up to {budget.simulations} simulations or "
                f"{budget.seconds:g} s per move.",
                make,
                pooled=True,
                make_fixed=make_fixed,
            )
        )


_register_ismcts()
