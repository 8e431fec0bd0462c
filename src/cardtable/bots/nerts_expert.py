"""The planning Nerts bot: ``expert:easy|medium|hard``.

It sees only its seat's view and legal actions, like every bot (``docs/architecture.md``), and plans where the
greedy bot (:mod:`cardtable.bots.nerts`) reacts:

- **Stock memory.** The stock turns over unshuffled (rules: "Stock and waste"), so every waste top it has seen
  comes round again in the same order. It keeps a model of its stock and waste (card codes where seen, unknown
  elsewhere), follows it through its own flips, plays from the waste, cycles and the table's rotates (checking
  each step against the counts and the waste top it sees, and forgetting what no longer fits), and from it
  predicts the waste tops of the next whole pass.
- **Nerts pile first.** Its top to a foundation; then its top onto a work pile, *before* a foundation play that
  would take that work top away; then the other foundation plays; then its top under a pile, and only when it fits
  nowhere else into an empty pile (an empty pile is worth keeping: it takes any card, and lets cards slide under);
  then room for it (a whole pile moved to leave an empty one, or a run moved to uncover a wanted card or a place
  for the Nerts top), never a run back and forth.
- **Races.** Among foundation plays, a card another seat shows on top too (so it races for that place) goes
  before one only it holds; a card that lets the Nerts top go up next goes before both.
- **The waste.** It builds from the waste onto a work pile rather than flip (the next waste card comes free), and
  it does not flip over a waste top whose place another seat is about to open (that seat shows the card below it):
  it waits a look or two instead (:data:`HOLD_LIMIT`).
- **Knowing when it is stuck.** When nothing can move and its memory says the next whole pass of the stock brings
  no card it could play, it declares ``stuck`` at once instead of flipping round again; while stuck it cycles
  only when that brings a playable card up in the next pass, and otherwise waits for the rotate.
- **Calling Nerts** as soon as its Nerts pile is empty and it is not behind; when behind, it plays on while it has
  foundation plays and calls when they run out.

Levels: ``easy`` reacts in 1500 ms, overlooks a play a fifth of the time and keeps no stock memory; ``medium``
900 ms, overlooks 6%; ``hard`` 550 ms (``greedy:hard``'s pace) and overlooks nothing. Deterministic for a seed.

>>> from cardtable.bots import get_bot
>>> [(info.spec, info.reaction_ms) for info in bot_infos_expert()]
[('expert:easy', 1500), ('expert:medium', 900), ('expert:hard', 550)]
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from cardtable.bots import BotInfo, bot_infos, register
from cardtable.bots.nerts import _NEXT, WantedCards, _fits_on, _rank, own_layout, pass_signature
from cardtable.engine import Action, View

__all__ = ["ExpertBot", "StockMemory"]

Entry = str | None

HOLD_LIMIT = 2
"""Looks in a row the bot waits rather than flip over a waste top whose foundation place another seat is about to
open (it shows the card below it on top)."""


class StockMemory:
    """A layout's stock and waste as one seat remembers them: lists with the top last, each entry a card code or
    ``None`` (not seen). Mirrors the engine's flip, turn-over, cycle and rotate (rules: "Stock and waste",
    "Stuck").

    >>> memory = StockMemory(flip_count=3)
    >>> memory.sync(6, 0, None, pending=None)
    >>> memory.sync(3, 3, "5H", pending={"type": "flip"})
    >>> memory.sync(0, 6, "KS", pending={"type": "flip"})
    >>> memory.sync(6, 0, None, pending={"type": "flip"})  # turned over: the same order comes round again
    >>> memory.upcoming()  # this pass, then the next
    ['5H', 'KS', '5H', 'KS']
    """

    def __init__(self, flip_count: int = 3) -> None:
        self.flip_count = flip_count
        self.stock: list[Entry] = []
        self.waste: list[Entry] = []
        self.known = False

    def _flip(self, stock: list[Entry], waste: list[Entry]) -> tuple[list[Entry], list[Entry]]:
        if stock:
            stock, waste = list(stock), list(waste)
            for _ in range(min(self.flip_count, len(stock))):
                waste.append(stock.pop())
            return stock, waste
        return waste[::-1], []

    def _apply(self, action: Mapping[str, Any]) -> tuple[list[Entry], list[Entry]] | None:
        stock, waste = self.stock, self.waste
        kind = action.get("type")
        if kind == "flip":
            if not stock and not waste:
                return None
            return self._flip(stock, waste)
        if kind in ("move", "under") and action.get("from") == "waste":
            return (stock, waste[:-1]) if waste else None
        if kind == "cycle":
            return ([stock[-1], *stock[:-1]], waste) if stock else None
        if kind == "rotate":
            new = stock + waste[::-1]
            if new:
                new.insert(0, new.pop())
            return new, []
        return (stock, waste)

    def sync(
        self, stock_count: int, waste_count: int, waste_top: str | None, pending: Mapping[str, Any] | None
    ) -> None:
        """Bring the memory up to what the view shows, given the seat's last action ``pending`` (applied, refused or
        followed by a table rotate): the first explanation that fits the counts and the waste top is kept;
        if none fits, everything is forgotten (unknown)."""
        if not self.known:
            self.stock, self.waste, self.known = [None] * stock_count, [None] * (waste_count - 1), True
            if waste_count:
                self.waste.append(waste_top)
            return
        rotate = {"type": "rotate"}
        plans: list[list[Mapping[str, Any]]]
        if pending is not None:
            plans = [[pending], [], [rotate], [pending, rotate], [rotate, pending]]
        else:
            plans = [[], [rotate]]
        for plan in plans:
            saved = (self.stock, self.waste)
            ok = True
            for step in plan:
                result = self._apply(step)
                if result is None:
                    ok = False
                    break
                self.stock, self.waste = result
            if ok and len(self.stock) == stock_count and len(self.waste) == waste_count:
                top = self.waste[-1] if self.waste else None
                if top is None or top == waste_top:
                    if self.waste:
                        self.waste[-1] = waste_top
                    return
            self.stock, self.waste = saved
        if (
            pending is not None
            and pending.get("type") == "flip"
            and self.stock
            and waste_count - len(self.waste) not in (0, self.flip_count)
            and len(self.stock) - stock_count == waste_count - len(self.waste) > 0
        ):
            self.flip_count = waste_count - len(self.waste)  # learnt the table's flip count
            self.stock, self.waste = self._flip(self.stock, self.waste)
            if self.waste:
                self.waste[-1] = waste_top
            return
        self.known = False
        self.sync(stock_count, waste_count, waste_top, None)

    def upcoming(self) -> list[Entry]:
        """The waste tops to come, flip by flip: the rest of this pass, then one whole pass after the turn-over
        (``None`` for a card not seen)."""
        rest = self.stock[::-1]  # the order the stock's cards come off, top first
        cycle = self.waste + rest  # after the turn-over: the waste's bottom card first
        k = self.flip_count
        tops = [rest[i] for i in range(k - 1, len(rest), k)]
        if len(rest) % k:
            tops.append(rest[-1])
        tops.extend(cycle[i] for i in range(k - 1, len(cycle), k))
        if len(cycle) % k:
            tops.append(cycle[-1])
        return tops


class ExpertBot:
    """The planning bot (see the module docstring). ``miss_rate``: the chance to overlook a play;
    ``memory``: whether it remembers its stock."""

    def __init__(self, seed: int, miss_rate: float = 0.0, memory: bool = True) -> None:
        self._rng = random.Random(seed)
        self.miss_rate = miss_rate
        self.memory_on = memory
        self.hold_limit = HOLD_LIMIT
        self._holds = 0
        self.memory = StockMemory()
        self._pending: Action | None = None
        self._seen: set[tuple[Any, ...]] = set()
        self._wanted = WantedCards()
        self._cycles = 0
        self._moves: set[tuple[str, str, str]] = set()

    # -- helpers ------------------------------------------------------------------------------------------

    def choose(self, view: View, legal: Sequence[Action]) -> Action | None:
        """One of ``legal``, or ``None`` to wait (stuck, with nothing a cycle could bring up)."""
        if not legal or view.get("over"):
            return None
        seat = view["seat"]
        layout = own_layout(view, seat)
        if self.memory_on:
            self.memory.sync(
                layout["stock"]["count"], layout["waste"]["count"], layout["waste"]["top"], self._pending
            )
        action = self._decide(view, layout, legal)
        self._pending = action
        return action

    def _decide(self, view: View, layout: dict[str, Any], legal: Sequence[Action]) -> Action | None:
        seat = view["seat"]
        nerts_top: str | None = layout["nerts"]["top"]
        work: list[list[str]] = layout["work"]
        wanted = self._wanted.of(view["foundations"])
        # what the other seats show on top: they race us for these places
        rivals: set[str] = set()
        for lay in view["layouts"]:
            if seat in lay["seats"]:
                continue
            for code in (lay["nerts"]["top"], lay["waste"]["top"]):
                if code:
                    rivals.add(code)
            for pile in lay["work"]:
                if pile:
                    rivals.add(pile[-1])

        call = flip = stuck = cycle = None
        found: list[tuple[tuple[int, ...], Action]] = []
        nerts_moves: list[tuple[int, Action]] = []
        room: list[tuple[int, Action]] = []
        waste_work: list[tuple[int, Action]] = []
        empty_fill: list[Action] = []
        nerts_needs = None
        if nerts_top and not nerts_top.startswith("JK") and _rank(nerts_top) > 1:
            nerts_needs = _prev(nerts_top)  # the card that lets the Nerts top go up next
        for action in legal:
            kind = action["type"]
            if kind == "move":
                src, dst = action["from"], action["to"]
                card = _source_card(layout, src)
                if dst[0] == "f":
                    code = action.get("as", card)
                    if src == "nerts":
                        order = 0
                    elif code == nerts_needs:
                        order = 1
                    else:
                        order = 2
                    contested = 0 if code in rivals else 1
                    exposes = 1
                    if src.startswith("work"):
                        pile = work[int(src[5:])]
                        under = pile[-2] if len(pile) > 1 else None
                        if under is None or under in wanted or (nerts_top and _fits_on(nerts_top, under)):
                            exposes = 0
                    elif src == "waste":
                        exposes = 0
                    found.append(((order, contested, exposes), action))
                elif src == "nerts":
                    nerts_moves.append((0 if work[int(dst[5:])] else 3, action))
                elif src == "waste":
                    if work[int(dst[5:])]:
                        waste_work.append((0, action))
                    else:
                        empty_fill.append(action)
                else:
                    pile = work[int(src[5:])]
                    count = action.get("count", 1)
                    dest = work[int(dst[5:])]
                    if (dst, src, pile[-count]) in self._moves:
                        continue  # never back and forth
                    if count == len(pile):
                        if dest and nerts_top is not None:
                            room.append((0, action))
                        continue
                    exposed = pile[-count - 1]
                    if dest:
                        if exposed in wanted or _rank(exposed) == 1:
                            room.append((1, action))
                        elif nerts_top is not None and _fits_on(nerts_top, exposed):
                            room.append((2, action))
                    elif nerts_top is None and (exposed in wanted or _rank(exposed) == 1):
                        room.append((3, action))
            elif kind == "under":
                if action["from"] == "nerts":
                    nerts_moves.append((2, action))
            elif kind == "flip":
                flip = action
            elif kind == "nerts":
                call = action
            elif kind == "stuck":
                stuck = action
            elif kind == "cycle":
                cycle = action

        scores = view["scores"]
        mine = scores[seat]
        others = [s for i, s in enumerate(scores) if i not in layout["seats"]]
        ahead = not others or mine >= max(others)
        if call is not None and (ahead or not found):
            return self._did(call)
        if self.miss_rate and flip is not None and self._rng.random() < self.miss_rate:
            return self._flip_or_wait(view, layout, flip, stuck, cycle, wanted)
        found.sort(key=lambda item: item[0])
        nerts_moves.sort(key=lambda item: item[0])
        if found and found[0][0][0] == 0:
            return self._did(found[0][1])  # the Nerts top to a foundation
        if nerts_moves and nerts_moves[0][0] == 0:
            return self._did(nerts_moves[0][1])  # the Nerts top onto a work pile, before it is played away
        if found:
            return self._did(found[0][1])
        if nerts_moves:
            nerts_moves.sort(key=lambda item: item[0])
            return self._did(nerts_moves[0][1])
        if room:
            room.sort(key=lambda item: item[0])
            chosen = room[0][1]
            pile = work[int(chosen["from"][5:])]
            self._moves.add((chosen["from"], chosen["to"], pile[-chosen.get("count", 1)]))
            return self._did(chosen, keep_moves=True)
        if waste_work:
            return self._did(waste_work[0][1])  # the next waste card comes free without a flip
        if nerts_top is None and empty_fill:
            return self._did(empty_fill[0])
        if call is not None:
            return self._did(call)
        waste_top = layout["waste"]["top"]
        if flip is not None and waste_top and self._holds < self.hold_limit:
            before = _prev(waste_top)
            if before is not None and before in wanted and before in rivals:
                # another seat is about to play the card this one goes on: wait a moment rather than bury it
                self._holds += 1
                return None
        self._holds = 0
        return self._flip_or_wait(view, layout, flip, stuck, cycle, wanted)

    def _useful(
        self, code: str | None, wanted: dict[str, int], nerts_top: str | None, work: list[list[str]]
    ) -> bool:
        if code is None:
            return True  # not seen yet: worth a look
        if code in wanted or _rank(code) == 1 or code.startswith("JK"):
            return True
        return nerts_top is None and any(pile and _fits_on(code, pile[-1]) for pile in work)

    def _flip_or_wait(
        self,
        view: View,
        layout: dict[str, Any],
        flip: Action | None,
        stuck: Action | None,
        cycle: Action | None,
        wanted: dict[str, int],
    ) -> Action | None:
        nerts_top = layout["nerts"]["top"]
        work = layout["work"]
        if self.memory_on and self.memory.known:
            upcoming = self.memory.upcoming()
            hopeful = any(self._useful(code, wanted, nerts_top, work) for code in upcoming)
            if hopeful and flip is not None:
                return flip
            if stuck is not None:
                self._cycles = 0
                return stuck
            if cycle is not None and layout["stuck"]:
                # cycle only when some number of cycles brings a playable card up in the next pass
                memory = self.memory
                stock = list(memory.stock)
                for _ in range(len(stock)):
                    stock = [stock[-1], *stock[:-1]]
                    trial = StockMemory(memory.flip_count)
                    trial.stock, trial.waste, trial.known = stock, list(memory.waste), True
                    if any(self._useful(code, wanted, nerts_top, work) for code in trial.upcoming()):
                        return cycle
                return flip if hopeful else None
            return None
        # no memory: as the greedy bot, a full pass with no change means stuck
        signature = pass_signature(view, layout, self._wanted.cards)
        if flip is not None and signature not in self._seen:
            self._seen.add(signature)
            return flip
        if stuck is not None:
            self._cycles = 0
            return stuck
        if cycle is not None and self._cycles < 2:
            self._cycles += 1
            self._seen.clear()
            return cycle
        return None

    def _did(self, action: Action, keep_moves: bool = False) -> Action:
        self._holds = 0
        self._seen.clear()
        self._cycles = 0
        if not keep_moves and action["type"] != "flip":
            self._moves.clear()
        return action


_PREV = {nxt: card for card, nxt in _NEXT.items()}


def _prev(code: str) -> str | None:
    """The card one rank lower in the same suit (``"4S"`` for ``"5S"``); ``None`` for an ace or a joker."""
    return _PREV.get(code)


def _source_card(layout: Mapping[str, Any], src: str) -> str:
    if src == "nerts":
        return str(layout["nerts"]["top"])
    if src == "waste":
        return str(layout["waste"]["top"])
    return str(layout["work"][int(src[5:])][-1])


def _maker(miss_rate: float, memory: bool) -> Any:
    def make(seed: int) -> ExpertBot:
        return ExpertBot(seed, miss_rate=miss_rate, memory=memory)

    return make


def bot_infos_expert() -> list[BotInfo]:
    """The expert levels, weakest first."""
    return [info for info in bot_infos("nerts") if info.spec.startswith("expert")]


register(
    BotInfo(
        "expert:easy",
        "nerts",
        "Plans its moves but plays slowly and often overlooks a card: a first opponent",
        _maker(0.2, False),
        1500,
    )
)
register(
    BotInfo(
        "expert:medium",
        "nerts",
        "Plans, remembers its stock and races for the foundations at a steady pace",
        _maker(0.06, True),
        900,
    )
)
register(
    BotInfo(
        "expert:hard",
        "nerts",
        "Plans, remembers its stock, races for every foundation and never misses a play, at a quick pace",
        _maker(0.0, True),
        550,
    )
)
