"""Nerts bots: ``greedy`` (instant, full skill, for simulations) and ``greedy:easy|medium|hard`` (human pace).

A greedy bot looks only at its seat's view and legal actions (``docs/architecture.md``: bots play through the
public API). Its priorities, first that applies:

1. call Nerts when its Nerts pile is empty and it is ahead (or has nothing useful left);
2. play to a foundation: the Nerts pile first, then the waste, then work piles;
3. free the Nerts pile: its top onto a work pile, into an empty work pile, or slid under a pile;
4. make room for the Nerts pile: a whole work pile onto another (leaving an empty one), or a run whose move
   uncovers a card the Nerts top fits on or a card that goes to a foundation (never a move back and forth);
5. build from the waste onto a work pile (into an empty one only when the Nerts pile is empty);
6. flip; after a full pass of the stock with nothing changed, declare ``stuck``; while stuck, ``cycle`` (when
   turning three at a time) and look again, and after that wait (``None``).

``easy``/``medium``/``hard`` overlook a play (and flip instead) at a seeded rate. Deterministic for a seed.

>>> from cardtable.bots import bot_infos
>>> [info.spec for info in bot_infos("nerts") if info.spec.startswith("greedy")]
['greedy:easy', 'greedy:medium', 'greedy:hard', 'greedy']
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from cardtable.bots import BotInfo, register
from cardtable.cards import RANK_CODES
from cardtable.engine import Action, View

__all__ = ["GreedyBot"]

_RANKS = {code: i + 1 for i, code in enumerate(RANK_CODES)}
_NEXT: dict[str, str] = {}
for _suit in "SHDC":
    for _r in range(1, 13):
        _NEXT[RANK_CODES[_r - 1] + _suit] = RANK_CODES[_r] + _suit


def _rank(code: str) -> int:
    return _RANKS.get(code[:-1], 0) if not code.startswith("JK") else 0


def _red(code: str) -> int:
    return -1 if code.startswith("JK") else int(code[-1] in "HD")


class WantedCards:
    """The cards the open foundations take next (``"5S"`` on a foundation showing 4S), from a view's foundations.

    Remembers its last answer: the engine shares unchanged foundation entries between views, so when every entry
    is the very same object as last time, so is the answer (the entries are held, so they cannot be recycled).
    """

    __slots__ = ("_foundations", "_wanted")

    def __init__(self) -> None:
        self._foundations: list[dict[str, Any]] = []
        self._wanted: frozenset[str] = frozenset()

    def __call__(self, foundations: Sequence[dict[str, Any]]) -> frozenset[str]:
        last = self._foundations
        if len(last) == len(foundations) and all(a is b for a, b in zip(last, foundations, strict=True)):
            return self._wanted
        wanted = set()
        for f in foundations:
            if not f["finished"]:
                top = f["cards"][-1]
                code = top.get("as", top["card"])
                if code in _NEXT:
                    wanted.add(_NEXT[code])
        self._foundations = list(foundations)
        self._wanted = frozenset(wanted)
        return self._wanted


def _fits_on(card: str, top: str) -> bool:
    """Whether ``card`` may go on ``top`` in a work pile (jokers taken as fitting)."""
    if card.startswith("JK") or top.startswith("JK"):
        return True
    return _rank(card) == _rank(top) - 1 and _red(card) != _red(top)


def pass_signature(view: View, layout: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a full pass through the stock would change if any card moved: stock and waste counts, the waste's top,
    the Nerts pile's count, cards on the work piles and in the foundations. A bot that sees the same signature
    twice has flipped a whole pass without a play (rules: "Calling Nerts and the end of a hand", stuck)."""
    return (
        layout["stock"]["count"],
        layout["waste"]["count"],
        layout["waste"]["top"],
        layout["nerts"]["count"],
        sum(len(p) for p in layout["work"]),
        sum(len(f["cards"]) for f in view["foundations"]),
    )


class GreedyBot:
    """The greedy Nerts bot (see the module docstring). ``miss_rate`` is the chance to overlook a play."""

    def __init__(self, seed: int, miss_rate: float = 0.0, max_cycles: int = 2) -> None:
        self._rng = random.Random(seed)
        self.miss_rate = miss_rate
        self.max_cycles = max_cycles
        self._seen: set[tuple[Any, ...]] = set()
        self._wanted = WantedCards()
        self._stuck = False
        self._cycles = 0

    def choose(self, view: View, legal: Sequence[Action]) -> Action | None:
        """One of ``legal``, or ``None`` to wait (only while stuck with nothing left to try)."""
        if not legal or view.get("over"):
            return None
        seat = view["seat"]
        layout = next(lay for lay in view["layouts"] if seat in lay["seats"])
        nerts_top: str | None = layout["nerts"]["top"]
        work: list[list[str]] = layout["work"]
        if self._stuck and not layout["stuck"]:
            self._stuck = False  # a rotate, or a move of a partner's, cleared it
            self._seen.clear()

        call = flip = stuck = cycle = None
        to_found: list[tuple[int, Action]] = []
        nerts_work: Action | None = None
        nerts_empty: Action | None = None
        nerts_under: Action | None = None
        room: Action | None = None
        waste_work: Action | None = None
        waste_empty: Action | None = None
        expose_empty: Action | None = None
        wanted = self._wanted(view["foundations"])
        for action in legal:
            kind = action["type"]
            if kind == "move":
                src, dst = action["from"], action["to"]
                if dst[0] == "f":
                    order = 0 if src == "nerts" else 1 if src == "waste" else 2
                    to_found.append((order, action))
                elif src == "nerts":
                    if work[int(dst[5:])]:
                        nerts_work = nerts_work or action
                    else:
                        nerts_empty = nerts_empty or action
                elif src == "waste":
                    if work[int(dst[5:])]:
                        waste_work = waste_work or action
                    else:
                        waste_empty = waste_empty or action
                elif room is None or expose_empty is None:
                    pile = work[int(src[5:])]
                    count = action.get("count", 1)
                    dest = work[int(dst[5:])]
                    if count == len(pile):
                        if dest and nerts_top is not None:
                            room = room or action
                        continue
                    exposed = pile[-count - 1]
                    useful = exposed[:-1] == "A" or exposed in wanted
                    if dest:
                        if useful or (nerts_top is not None and _fits_on(nerts_top, exposed)):
                            room = room or action
                    elif nerts_top is None and useful:
                        expose_empty = expose_empty or action
            elif kind == "under":
                if action["from"] == "nerts":
                    nerts_under = nerts_under or action
            elif kind == "flip":
                flip = action
            elif kind == "nerts":
                call = action
            elif kind == "stuck":
                stuck = action
            elif kind == "cycle":
                cycle = action

        if call is not None:
            scores = view["scores"]
            mine = scores[seat]
            others = [s for i, s in enumerate(scores) if i != seat and i not in layout["seats"]]
            if not others or mine >= max(others):
                return self._did(call)
        missing = self.miss_rate and flip is not None and self._rng.random() < self.miss_rate
        if not missing:
            if to_found:
                to_found.sort(key=lambda item: item[0])
                return self._did(to_found[0][1])
            for choice in (nerts_work, nerts_empty, nerts_under, room, waste_work):
                if choice is not None:
                    return self._did(choice)
            if nerts_top is None:
                for choice in (waste_empty, expose_empty):
                    if choice is not None:
                        return self._did(choice)
        if call is not None:
            return self._did(call)
        signature = pass_signature(view, layout)
        if flip is not None and signature not in self._seen:
            self._seen.add(signature)
            return flip
        # a full pass of the stock with no change
        if stuck is not None:
            self._stuck = True
            self._cycles = 0
            return stuck
        if cycle is not None and self._cycles < self.max_cycles:
            self._cycles += 1
            self._seen.clear()
            return cycle
        return None

    def _did(self, action: Action) -> Action:
        """A move of our own: the stock is worth a fresh look."""
        self._seen.clear()
        self._cycles = 0
        return action


def _maker(miss_rate: float) -> Any:
    def make(seed: int) -> GreedyBot:
        return GreedyBot(seed, miss_rate=miss_rate)

    return make


register(BotInfo("greedy:easy", "nerts", "Greedy, slow and often overlooks a play", _maker(0.3), 1400))
register(
    BotInfo(
        "greedy:medium", "nerts", "Greedy at a steady pace, sometimes overlooks a play", _maker(0.12), 900
    )
)
register(BotInfo("greedy:hard", "nerts", "Greedy and quick, rarely overlooks a play", _maker(0.03), 550))
register(BotInfo("greedy", "nerts", "Greedy, full skill, instant (for simulations)", _maker(0.0), 0))
