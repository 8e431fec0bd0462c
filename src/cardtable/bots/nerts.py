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
from collections.abc import Sequence
from typing import Any, Final

from cardtable.bots import BotInfo, register
from cardtable.cards import RANK_CODES
from cardtable.engine import Action, View

__all__ = ["GreedyBot"]

_RANKS: Final = {code: i + 1 for i, code in enumerate(RANK_CODES)}
_NEXT: Final[dict[str, str]] = {}
for _suit in "SHDC":
    for _r in range(1, 13):
        _NEXT[RANK_CODES[_r - 1] + _suit] = RANK_CODES[_r] + _suit


def _rank(code: str) -> int:
    return _RANKS.get(code[:-1], 0) if not code.startswith("JK") else 0


def _red(code: str) -> int:
    return -1 if code.startswith("JK") else int(code[-1] in "HD")


class WantedCards:
    """The cards the open foundations take next (``"5S"`` on a foundation showing 4S), from a view's foundations.

    Remembers its last answer and updates it entry by entry: the engine shares unchanged foundation entries between
    views (and the whole list while no foundation changes), so an entry that is the very same object as last time,
    at the same place, takes the same card (the list and the entries are held, so they cannot be recycled).
    """

    __slots__ = ("_cards", "_foundations", "_given", "_next", "_sizes", "_wanted")

    def __init__(self) -> None:
        self._given: list[dict[str, Any]] | None = None
        self._foundations: list[dict[str, Any]] = []
        self._next: list[str | None] = []  # per entry of _foundations: the card it takes next
        self._sizes: list[int] = []  # per entry: its cards
        self._wanted: dict[str, int] = {}  # card -> open foundations that take it
        self._cards = 0

    @property
    def cards(self) -> int:
        """Cards in the foundations last asked about."""
        return self._cards

    def __call__(self, foundations: list[dict[str, Any]]) -> dict[str, int]:
        """:meth:`of` (the cards the open foundations of ``foundations`` take next)."""
        return self.of(foundations)

    def of(self, foundations: list[dict[str, Any]]) -> dict[str, int]:
        """The cards the open foundations of ``foundations`` (a view's list) take next: card code -> how many
        foundations take it (only cards some foundation takes). The same dict, updated in place by the next call:
        read it before then, and do not change it."""
        if foundations is self._given:
            return self._wanted
        self._given = foundations
        last = self._foundations
        nexts, sizes, wanted = self._next, self._sizes, self._wanted
        known = len(last)
        count = len(foundations)
        changed = known != count
        # an entry met last time at the same place has not changed: look only at the others (plain loops: a
        # build compiled with mypyc runs them natively)
        for i in range(count):
            f = foundations[i]
            if i < known and last[i] is f:
                continue
            changed = True
            code: str | None = None
            cards: list[dict[str, Any]] = f["cards"]
            if not f["finished"]:
                top = cards[-1]
                shown = top.get("as")
                code = _NEXT.get(shown if shown is not None else top["card"])
            if i < len(nexts):
                _forget(wanted, nexts[i])
                self._cards -= sizes[i]
                nexts[i] = code
                sizes[i] = len(cards)
            else:
                nexts.append(code)
                sizes.append(len(cards))
            self._cards += len(cards)
            if code is not None:
                wanted[code] = wanted.get(code, 0) + 1
        if changed:
            if len(nexts) > count:
                for i in range(count, len(nexts)):  # entries no longer there
                    _forget(wanted, nexts[i])
                    self._cards -= sizes[i]
                del nexts[count:], sizes[count:]
            # held as given, not copied: a view's list is read-only, and the engine hands out a new list whenever
            # a foundation changes
            self._foundations = foundations
        return wanted


def _forget(wanted: dict[str, int], code: str | None) -> None:
    """One foundation fewer takes ``code`` (``None``: none did)."""
    if code is not None:
        left = wanted[code] - 1
        if left:
            wanted[code] = left
        else:
            del wanted[code]


# the kinds of action (_parse)
_MOVE: Final = 0
_UNDER: Final = 1
_FLIP: Final = 2
_CALL: Final = 3
_STUCK: Final = 4
_CYCLE: Final = 5
_OTHER: Final = 6
_KINDS: Final = {
    "move": _MOVE,
    "under": _UNDER,
    "flip": _FLIP,
    "nerts": _CALL,
    "stuck": _STUCK,
    "cycle": _CYCLE,
}
_PILES: Final = {"nerts": 0, "waste": 1, **{f"work:{j}": j + 2 for j in range(8)}}


class _Parsed:
    """A legal action read once: ``kind`` one of ``_MOVE``...; ``src`` 0 the Nerts pile, 1 the waste, 2 + i work
    pile i (-1 none); ``dst`` -1 a foundation, j work pile j (-2 none); ``count`` of cards."""

    __slots__ = ("action", "count", "dst", "kind", "src")

    def __init__(self, action: Action, kind: int, src: int, dst: int, count: int) -> None:
        self.action = action
        self.kind = kind
        self.src = src
        self.dst = dst
        self.count = count


_KNOWN: Final[dict[int, _Parsed]] = {}
"""id -> the legal actions met so far, read (:class:`_Parsed`): the engine builds each of its
actions once and lists that same object every time, so each is parsed once. The action is held, so its id cannot
be reused while its entry lives; actions with ``as`` (built afresh) are not kept, and the whole is let go past
:data:`_KNOWN_LIMIT` entries."""
_KNOWN_LIMIT: Final = 8192
_ONE_KEY: Final = frozenset({"flip", "stuck", "nerts", "cycle"})  # the kinds read from "type" alone


def _parse(action: Action) -> _Parsed:
    """``action`` read (:class:`_Parsed`), and kept in :data:`_KNOWN` unless it has an ``as``."""
    kind = _KINDS.get(action["type"], _OTHER)
    src = _PILES.get(action.get("from", ""), -1)
    dst = -2
    if kind in (_MOVE, _UNDER):
        to = action["to"]
        dst = -1 if to[0] == "f" else int(to[5:])
    info = _Parsed(action, kind, src, dst, action.get("count", 1))
    if "as" not in action:
        if len(_KNOWN) >= _KNOWN_LIMIT:
            _KNOWN.clear()
        _KNOWN[id(action)] = info
    return info


def own_layout(view: View, seat: int) -> dict[str, Any]:
    """The layout ``seat`` plays in ``view`` (its team's with partnerships); ``StopIteration`` if none."""
    # typed locals: a compiled build indexes the list and the dicts natively
    layouts: list[dict[str, Any]] = view["layouts"]
    if layouts:
        guess = layouts[seat % len(layouts)]  # the engine's order: seat s plays layout s % layouts
        seats: list[int] = guess["seats"]
        if seat in seats:
            return guess
    return next(lay for lay in layouts if seat in lay["seats"])


def _fits_on(card: str, top: str) -> bool:
    """Whether ``card`` may go on ``top`` in a work pile (jokers taken as fitting)."""
    if card.startswith("JK") or top.startswith("JK"):
        return True
    return _rank(card) == _rank(top) - 1 and _red(card) != _red(top)


def pass_signature(
    view: View, layout: dict[str, Any], foundation_cards: int | None = None
) -> tuple[Any, ...]:
    """What a full pass through the stock would change if any card moved: stock and waste counts, the waste's top,
    the Nerts pile's count, cards on the work piles and in the foundations (``foundation_cards`` when the caller
    has counted them already, as :attr:`WantedCards.cards` does). A bot that sees the same signature twice has
    flipped a whole pass without a play (rules: "Calling Nerts and the end of a hand", stuck)."""
    if foundation_cards is None:
        foundation_cards = sum([len(f["cards"]) for f in view["foundations"]])
    work: list[list[str]] = layout["work"]
    on_work = 0
    for pile in work:
        on_work += len(pile)
    waste: dict[str, Any] = layout["waste"]
    stock: dict[str, Any] = layout["stock"]
    nerts: dict[str, Any] = layout["nerts"]
    return (
        stock["count"],
        waste["count"],
        waste["top"],
        nerts["count"],
        on_work,
        foundation_cards,
    )


class GreedyBot:
    """The greedy Nerts bot (see the module docstring). ``miss_rate`` is the chance to overlook a play."""

    def __init__(self, seed: int, miss_rate: float = 0.0, max_cycles: int = 2) -> None:
        self._seed = seed
        self._rng: random.Random | None = (
            None  # made when first drawn from: only a bot that misses plays draws
        )
        self.miss_rate = miss_rate
        self.max_cycles = max_cycles
        self._seen: set[tuple[Any, ...]] = set()
        self._wanted = WantedCards()
        self._stuck = False
        self._cycles = 0

    def choose(self, view: View, legal: Sequence[Action]) -> Action | None:
        """One of ``legal``, or ``None`` to wait (only while stuck with nothing left to try)."""
        # a list: a compiled loop indexes it directly
        actions = legal if isinstance(legal, list) else list(legal)
        if not actions or view.get("over"):
            return None
        seat = view["seat"]
        layout = own_layout(view, seat)
        nerts_view: dict[str, Any] = layout["nerts"]
        nerts_top: str | None = nerts_view["top"]
        work: list[list[str]] = layout["work"]
        if self._stuck and not layout["stuck"]:
            self._stuck = False  # a rotate, or a move of a partner's, cleared it
            self._seen.clear()

        call = flip = stuck = cycle = None
        # the first play to a foundation from the Nerts pile, from the waste, from a work pile
        nerts_found: Action | None = None
        waste_found: Action | None = None
        work_found: Action | None = None
        nerts_work: Action | None = None
        nerts_empty: Action | None = None
        nerts_under: Action | None = None
        room: Action | None = None
        waste_work: Action | None = None
        waste_empty: Action | None = None
        expose_empty: Action | None = None
        wanted = self._wanted.of(view["foundations"])
        known = _KNOWN
        for action in actions:
            # the one-key actions by their type alone (a compiled build compares the strings natively); only the
            # others are parsed below
            kind_name = action["type"]
            if isinstance(kind_name, str) and kind_name in _ONE_KEY:
                if kind_name == "flip":
                    flip = action
                elif kind_name == "stuck":
                    stuck = action
                elif kind_name == "nerts":
                    call = action
                else:
                    cycle = action
                continue
            info = known.get(id(action))
            if info is None or info.action is not action:
                info = _parse(action)
            kind, src, dst = info.kind, info.src, info.dst
            if kind == _MOVE:
                if dst < 0:
                    if src == 0:
                        nerts_found = nerts_found or action
                    elif src == 1:
                        waste_found = waste_found or action
                    else:
                        work_found = work_found or action
                elif src == 0:
                    if work[dst]:
                        nerts_work = nerts_work or action
                    else:
                        nerts_empty = nerts_empty or action
                elif src == 1:
                    if work[dst]:
                        waste_work = waste_work or action
                    else:
                        waste_empty = waste_empty or action
                elif room is None or expose_empty is None:
                    pile = work[src - 2]
                    count = info.count
                    dest = work[dst]
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
            elif kind == _UNDER and src == 0:
                nerts_under = nerts_under or action

        if call is not None:
            scores = view["scores"]
            mine = scores[seat]
            others = [s for i, s in enumerate(scores) if i != seat and i not in layout["seats"]]
            if not others or mine >= max(others):
                return self._did(call)
        missing = self.miss_rate and flip is not None and self._draw() < self.miss_rate
        if not missing:
            # the priorities of the module docstring, in order (an action is a non-empty dict: never false)
            choice = (
                nerts_found
                or waste_found
                or work_found
                or nerts_work
                or nerts_empty
                or nerts_under
                or room
                or waste_work
            )
            if choice is None and nerts_top is None:
                choice = waste_empty or expose_empty
            if choice is not None:
                return self._did(choice)
        if call is not None:
            return self._did(call)
        signature = pass_signature(view, layout, self._wanted.cards)
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

    def _draw(self) -> float:
        """The next draw of the bot's own ``random.Random(seed)``."""
        rng = self._rng
        if rng is None:
            rng = self._rng = random.Random(self._seed)
        return rng.random()

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
