"""Nerts (Pounce, Racing Demon): the rules engine (``docs/rules/nerts.md``).

Pure and deterministic: no clock, no I/O. A :class:`NertsMatch` folds hands; a :class:`NertsState` is one hand.

Cards inside the engine are small ints, ``pack * 64 + local`` where ``local`` is the index of the card in
:func:`cardtable.cards.standard_pack` order (``AS`` = 0 ... ``KC`` = 51, ``JK1`` = 52, ``JK2`` = 53); views,
events and records only ever carry card codes (``"7H"``, ``"JK1"``).

How a seed becomes packs (stable; records written by the server and simulator carry the cards anyway): one
``random.Random(seed)`` shuffles a list of the codes of ``standard_pack(jokers)`` for pack 0, then a fresh list
for pack 1, and so on, one pack per layout (per seat, per team with partnerships).

>>> match = NertsMatch(NertsOptions.from_dict({"players": 2}))
>>> hand = match.start_hand({"seed": 7})
>>> view = hand.view(0)
>>> view["layouts"][0]["nerts"]["count"], view["layouts"][0]["stock"]["count"]
(13, 35)
>>> hand.apply(0, {"type": "flip"}, 500)[0]["type"]
'flipped'
>>> hand.apply(0, {"type": "move", "from": "work:9", "to": "work:0"}, 600)
Traceback (most recent call last):
...
cardtable.engine.IllegalAction: no pile work:9 (work piles are work:0 to work:3)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final, TypeVar

from cardtable.cards import RANK_CODES, SUITS, Card, standard_pack
from cardtable.engine import Action, Event, HandResult, IllegalAction, OptionSpec, View
from cardtable.games import GameInfo, register

__all__ = [
    "OPTION_SPECS",
    "NertsMatch",
    "NertsOptions",
    "NertsState",
    "layout_pack",
    "seed_packs",
]

# ---------------------------------------------------------------------------------------------------------
# Card tables, indexed by the engine's card int (pack * 64 + local).

_MAX_PACKS: Final = 8
_LOCAL_CODES: Final[list[str]] = [card.code for card in standard_pack(jokers=True)]
_LOCAL_INDEX: Final[dict[str, int]] = {code: i for i, code in enumerate(_LOCAL_CODES)}
CODE: Final[list[str]] = []
RANK: Final[list[int]] = []  # 1..13, 0 for a joker
SUIT: Final[list[int]] = []  # 0..3 (S H D C), -1 for a joker
RED: Final[list[int]] = []  # 1 red, 0 black, -1 joker
JOKER: Final[list[bool]] = []
for _pack in range(_MAX_PACKS):
    for _local in range(64):
        if _local < 52:
            _suit, _rank = divmod(_local, 13)
            CODE.append(_LOCAL_CODES[_local])
            RANK.append(_rank + 1)
            SUIT.append(_suit)
            RED.append(1 if _suit in (1, 2) else 0)
            JOKER.append(False)
        else:
            CODE.append(_LOCAL_CODES[_local] if _local < 54 else "??")
            RANK.append(0)
            SUIT.append(-1)
            RED.append(-1)
            JOKER.append(True)

# A card fits on a work pile's top card exactly when FITS[top] == NEEDS[card] (one rank lower, the other colour);
# jokers never match here (with jokers on, ``_consistent`` decides)
FITS: Final[list[int]] = [RANK[c] * 2 + RED[c] if not JOKER[c] else -2 for c in range(len(CODE))]
NEEDS: Final[list[int]] = [(RANK[c] + 1) * 2 + 1 - RED[c] if not JOKER[c] else -3 for c in range(len(CODE))]

_SUIT_NAMES: Final = ("spades", "hearts", "diamonds", "clubs")


def _pile(ref: str) -> dict[str, Any]:
    """A pile as refusal params name it (``docs/protocol.md``, "Refusal codes"): ``work:0`` is
    ``{"kind": "work", "number": 1}`` (counted as a player counts), ``nerts``/``waste``/``stock`` and every
    foundation have ``"number": None`` (a player never sees foundation ids)."""
    if ref.startswith("work:") and ref[5:].isdigit():
        return {"kind": "work", "number": int(ref[5:]) + 1}
    if ref.startswith("foundation:"):
        return {"kind": "foundation", "number": None}
    return {"kind": ref, "number": None}


def _plain(value: Any) -> Any:
    """A refusal param from a value a client sent: numbers and strings as they are, anything else as text."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return repr(value)


def _card_code(rank: int, suit: int) -> str:
    return RANK_CODES[rank - 1] + SUITS[suit]


def _consistent(cards: Sequence[int]) -> bool:
    """True when ``cards`` (bottom first) can be one work pile: descending by one, alternating colours.

    Jokers may stand for any card, so they only have to fit what their neighbours fix (rules: "Jokers").
    """
    n = len(cards)
    anchor = -1
    for i in range(n):
        if not JOKER[cards[i]]:
            anchor = i
            break
    if anchor < 0:
        return n <= 13
    bottom = RANK[cards[anchor]] + anchor
    if bottom > 13 or bottom - n + 1 < 1:
        return False
    red = RED[cards[anchor]] ^ (anchor & 1)
    for i in range(anchor + 1, n):
        card = cards[i]
        if JOKER[card]:
            continue
        if RANK[card] != bottom - i or RED[card] != red ^ (i & 1):
            return False
    return True


# ---------------------------------------------------------------------------------------------------------
# Options (rules: "Options (defaults)")


@dataclass(frozen=True, slots=True)
class NertsOptions:
    """Every table option of ``docs/rules/nerts.md`` with its default. Times in milliseconds or seconds."""

    players: int = 4
    partnerships: bool = False
    nerts_pile_size: int = 13
    work_piles: int = 4
    flip_count: int = 3
    nerts_penalty: int = 2
    nerts_bonus: int = 0
    target_score: int = 100
    hands: int = 0
    jokers: bool = False
    auto_nerts: bool = False
    tie_window_ms: int = 100
    in_flight_ms: int = 150
    stall_seconds: int = 60
    deals: str = "fresh"

    def __post_init__(self) -> None:
        _check_options({spec.name: getattr(self, spec.name) for spec in OPTION_SPECS})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NertsOptions:
        """Options from a record's ``options`` mapping: missing ones take their defaults.

        Raises ``ValueError`` naming the option when one is unknown, of the wrong type (bools must be JSON
        booleans) or out of range.

        >>> NertsOptions.from_dict({"players": 3}).flip_count
        3
        >>> NertsOptions.from_dict({"flip_count": 2})
        Traceback (most recent call last):
        ...
        ValueError: flip_count: must be 1 or 3, not 2
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"options: must be an object, not {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        for key in data:
            if key not in known:
                raise ValueError(f"{key}: unknown Nerts option (known: {', '.join(sorted(known))})")
        _check_options({**{spec.name: spec.default for spec in OPTION_SPECS}, **data})
        return cls(**dict(data))

    def to_dict(self) -> dict[str, Any]:
        """Every option, JSON-ready."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __reduce__(self) -> tuple[Callable[[dict[str, Any]], NertsOptions], tuple[dict[str, Any]]]:
        """Pickled and copied through the constructor (a frozen class compiled with mypyc cannot be filled in
        field by field, as pickle's default does)."""
        return _options_from, (self.to_dict(),)

    @property
    def layouts(self) -> int:
        """Number of packs and layouts: one per seat, one per team with partnerships."""
        return self.players // 2 if self.partnerships else self.players


def _check_options(values: Mapping[str, object]) -> None:
    """Raise ``ValueError`` naming the first bad option of ``values`` (every option's value by name). Values are
    typed ``object``: :meth:`NertsOptions.from_dict` checks a record's values here before the class is built, as a
    build compiled with mypyc would refuse a wrong type with its own ``TypeError``."""
    for spec in OPTION_SPECS:
        value = values[spec.name]
        if spec.kind == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"{spec.name}: must be true or false, not {value!r}")
            continue
        if isinstance(spec.default, str):
            if not isinstance(value, str) or value not in spec.choices:
                allowed = " or ".join(repr(c) for c in spec.choices)
                raise ValueError(f"{spec.name}: must be {allowed}, not {value!r}")
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{spec.name}: must be a whole number, not {value!r}")
        if spec.choices and value not in spec.choices:
            allowed = " or ".join(str(c) for c in spec.choices)
            raise ValueError(f"{spec.name}: must be {allowed}, not {value}")
        if (
            spec.minimum is not None
            and spec.maximum is not None
            and not spec.minimum <= value <= spec.maximum
        ):
            raise ValueError(f"{spec.name}: must be {spec.minimum} to {spec.maximum}, not {value}")
    players = values["players"]
    if values["partnerships"] and isinstance(players, int) and (players < 4 or players % 2):
        raise ValueError(f"partnerships: needs an even number of players, 4 or more (players is {players})")


OPTION_SPECS: list[OptionSpec] = [
    OptionSpec("players", "int", 4, 1, 8, help="Seats at the table (1 is solo practice)."),
    OptionSpec("partnerships", "bool", False, help="Partners sit opposite and share a pack and layout."),
    OptionSpec("nerts_pile_size", "int", 13, 5, 20, help="Cards dealt to each Nerts pile."),
    OptionSpec("work_piles", "int", 4, 3, 6, help="Work piles per layout."),
    OptionSpec("flip_count", "choice", 3, choices=(1, 3), help="Cards turned from the stock per flip."),
    OptionSpec("nerts_penalty", "int", 2, 0, 5, help="Points lost per card left in a Nerts pile."),
    OptionSpec("nerts_bonus", "int", 0, 0, 20, help="Points for calling Nerts."),
    OptionSpec("target_score", "int", 100, 10, 1000, help="The match ends when someone reaches this."),
    OptionSpec(
        "hands", "int", 0, 0, 50, help="The match ends after this many hands at the latest (0: no limit)."
    ),
    OptionSpec("jokers", "bool", False, help="Two wild jokers per pack."),
    OptionSpec("auto_nerts", "bool", False, help="Emptying a Nerts pile calls Nerts at once."),
    OptionSpec(
        "tie_window_ms", "int", 100, 0, 500, help="Same card from another pack this late still plays."
    ),
    OptionSpec("in_flight_ms", "int", 150, 0, 1000, help="Moves this late after a call still count."),
    OptionSpec("stall_seconds", "int", 60, 10, 600, help="No progress this long: warn, then rotate."),
    OptionSpec(
        "deals",
        "choice",
        "fresh",
        choices=("fresh", "rotated"),
        help="rotated: each deal is played once from every seat (team) in turn.",
    ),
]


# ---------------------------------------------------------------------------------------------------------
# Deals


def seed_packs(seed: int, layouts: int, jokers: bool = False) -> list[list[str]]:
    """The packs a ``{"seed": N}`` deal stands for: one ``random.Random(seed)`` shuffles pack 0, then pack 1...

    Each pack starts from ``standard_pack(jokers)`` order. Stable: records may rely on it.
    """
    rng = random.Random(seed)
    order = _LOCAL_CODES[: 54 if jokers else 52]  # standard_pack(jokers) order
    packs = []
    getrandbits = rng.getrandbits
    for _ in range(layouts):
        codes = order[:]
        # rng.shuffle(codes), drawn the same way (the same swaps from the same state: random.Random's getrandbits
        # rejection for each randbelow) in this module's own loop
        for i in range(len(codes) - 1, 0, -1):
            n = i + 1
            bits = n.bit_length()
            j = getrandbits(bits)
            while j >= n:
                j = getrandbits(bits)
            codes[i], codes[j] = codes[j], codes[i]
        packs.append(codes)
    return packs


def layout_pack(
    nerts: Sequence[str] = (),
    work: Sequence[str] = (),
    stock: Sequence[str] = (),
    *,
    nerts_pile_size: int = 13,
    work_piles: int = 4,
    jokers: bool = False,
) -> list[str]:
    """A whole pack in dealing order with chosen cards in chosen places, the rest filled in pack order.

    ``nerts`` lists the top of the Nerts pile first (deeper cards are filled); ``work`` the cards of
    ``work:0``, ``work:1`` ...; ``stock`` the top of the stock first. For tests and puzzles.
    Raises ``ValueError`` for a repeated card or too many cards.

    >>> pack = layout_pack(nerts=["AS"], work=["KH"], stock=["2S"], nerts_pile_size=5)
    >>> pack[4], pack[5], pack[9], len(pack)
    ('AS', 'KH', '2S', 52)
    """
    chosen = [Card.parse(c).code for c in (*nerts, *work, *stock)]
    if len(set(chosen)) != len(chosen):
        raise ValueError("layout_pack: a card is chosen twice")
    if len(nerts) > nerts_pile_size or len(work) > work_piles:
        raise ValueError("layout_pack: more cards than places")
    filler = iter(c.code for c in standard_pack(jokers) if c.code not in set(chosen))
    size = 54 if jokers else 52
    slots: list[str | None] = [None] * size
    for i, code in enumerate(nerts):
        slots[nerts_pile_size - 1 - i] = Card.parse(code).code
    for i, code in enumerate(work):
        slots[nerts_pile_size + i] = Card.parse(code).code
    for i, code in enumerate(stock):
        slots[nerts_pile_size + work_piles + i] = Card.parse(code).code
    return [slot if slot is not None else next(filler) for slot in slots]


def _good_packs(packs: Any, layouts: int, jokers: bool) -> list[list[int]] | None:
    """:func:`_check_packs` for packs of canonical codes, each a whole pack once; ``None`` for anything else (then
    :func:`_check_packs` parses each code and names what is wrong)."""
    size = 54 if jokers else 52
    if not isinstance(packs, list) or len(packs) != layouts:
        return None
    out: list[list[int]] = []
    for p in range(layouts):
        pack = packs[p]
        if not isinstance(pack, list) or len(pack) != size:
            return None
        base = p * 64
        seen = 0  # a bit per card met (54 bits at most: a short int for mypyc)
        cards: list[int] = []
        for code in pack:
            local = _LOCAL_INDEX.get(code, -1) if isinstance(code, str) else -1
            if local < 0 or local >= size or seen >> local & 1:
                return None
            seen |= 1 << local
            cards.append(base + local)
        out.append(cards)
    return out


def _check_packs(packs: Any, layouts: int, jokers: bool) -> list[list[int]]:
    """Parse ``deal.packs`` into engine cards; ``ValueError`` naming the field."""
    good = _good_packs(packs, layouts, jokers)
    if good is not None:
        return good
    if not isinstance(packs, list):
        raise ValueError("deal.packs: must be a list of packs")
    if len(packs) != layouts:
        raise ValueError(
            f"deal.packs: {len(packs)} packs, expected {layouts} (one per seat, per team with partnerships)"
        )
    size = 54 if jokers else 52
    out = []
    for p, pack in enumerate(packs):
        where = f"deal.packs[{p}]"
        if not isinstance(pack, list):
            raise ValueError(f"{where}: must be a list of card codes")
        seen: set[int] = set()
        cards = []
        for i, code in enumerate(pack):
            local = _LOCAL_INDEX.get(code, -1) if isinstance(code, str) else -1
            if local < 0:  # not a canonical code: parse it (lower case, "T" for ten) or name the bad one
                try:
                    local = _LOCAL_INDEX[Card.parse(code).code]
                except ValueError as error:
                    raise ValueError(f"{where}[{i}]: {error}") from None
            if local >= 52 and not jokers:
                raise ValueError(f"{where}[{i}]: {_LOCAL_CODES[local]} but jokers are off")
            if local in seen:
                raise ValueError(f"{where}: {_LOCAL_CODES[local]} twice")
            seen.add(local)
            cards.append(p * 64 + local)
        if len(cards) != size:
            missing = [code for code in _LOCAL_CODES[:size] if _LOCAL_INDEX[code] not in seen]
            raise ValueError(f"{where}: missing {', '.join(missing)}")
        out.append(cards)
    return out


def _options_from(data: dict[str, Any]) -> NertsOptions:
    return NertsOptions(**data)


# ---------------------------------------------------------------------------------------------------------
# Copies and pickles: ``copy.deepcopy`` and ``pickle`` go through each class's ``__reduce__`` (a class compiled
# with mypyc has no constructor-free ``__new__``): the object is built by its constructor from placeholders, then
# every attribute is set from the original's.


_T = TypeVar("_T")


def _attributes(obj: object) -> dict[str, Any]:
    """Every attribute of ``obj`` by name: a compiled class lists them in ``__mypyc_attrs__``, a plain one in its
    ``__slots__`` or ``__dict__``."""
    kind = type(obj)
    names = getattr(kind, "__mypyc_attrs__", None) or getattr(kind, "__slots__", None) or list(vars(obj))
    return {name: getattr(obj, name) for name in names if hasattr(obj, name)}


def _filled(obj: _T, attributes: dict[str, Any]) -> _T:
    for name, value in attributes.items():
        setattr(obj, name, value)
    return obj


def _layout_from(attributes: dict[str, Any]) -> _Layout:
    return _filled(_Layout(0, [], [], 0, 0), attributes)


def _foundation_from(attributes: dict[str, Any]) -> _Foundation:
    return _filled(_Foundation(0, 0), attributes)


def _state_from(options: NertsOptions, attributes: dict[str, Any]) -> NertsState:
    blank = [[0] * (options.nerts_pile_size + options.work_piles) for _ in range(options.layouts)]
    return _filled(NertsState(options, blank), attributes)


def _match_from(options: NertsOptions, attributes: dict[str, Any]) -> NertsMatch:
    return _filled(NertsMatch(options), attributes)


# ---------------------------------------------------------------------------------------------------------
# The hand


class _Layout:
    """One pack's layout. Lists hold engine card ints; ``nerts``, ``stock`` and ``waste`` keep their top last."""

    __slots__ = ("nerts", "pack", "seats", "stock", "stuck", "waste", "work")

    def __init__(self, pack: int, seats: list[int], cards: list[int], pile_size: int, piles: int) -> None:
        self.pack = pack
        self.seats = seats
        self.nerts = cards[:pile_size]
        self.work = [[cards[pile_size + j]] for j in range(piles)]
        self.stock = cards[pile_size + piles :][::-1]
        self.waste: list[int] = []
        self.stuck = False

    def __reduce__(self) -> tuple[Callable[[dict[str, Any]], _Layout], tuple[dict[str, Any]]]:
        return _layout_from, (_attributes(self),)


class _Foundation:
    """A foundation: its cards (engine ints) with what each stands for (``decl``: rank, for jokers too)."""

    __slots__ = ("cards", "decl", "fid", "finished", "suit", "top_ms", "top_pack", "top_rank")

    def __init__(self, fid: int, suit: int) -> None:
        self.fid = fid
        self.suit = suit
        self.cards: list[int] = []
        self.decl: list[int] = []
        self.top_rank = 0
        self.top_ms = 0
        self.top_pack = -1
        self.finished = False

    def __reduce__(self) -> tuple[Callable[[dict[str, Any]], _Foundation], tuple[dict[str, Any]]]:
        return _foundation_from, (_attributes(self),)


_WORK_NAMES: Final = [f"work:{j}" for j in range(6)]
_WORK_REFS: Final = {name: j for j, name in enumerate(_WORK_NAMES)}

# Every action ``legal_actions`` lists but a joker's ``as`` plays is built once, here, and shared by every list of
# every hand (``legal_actions``: "treat them as read-only"). Sources by index: 0 the Nerts pile, 1 the waste,
# 2 + j work pile j.
_SOURCES: Final = ["nerts", "waste", *_WORK_NAMES]
_MAX_FOUNDATIONS: Final = 64  # 8 packs of 4 aces and 2 jokers start at most 48
_MAX_RUN: Final = 14  # a work pile holds at most 13 cards (king down to ace, jokers standing in)
_TO_WORK: Final[list[list[Action]]] = [
    [{"type": "move", "from": s, "to": w} for w in _WORK_NAMES] for s in _SOURCES
]
_UNDER: Final[list[list[Action]]] = [
    [{"type": "under", "from": s, "to": w} for w in _WORK_NAMES] for s in _SOURCES
]
_RUN: Final[list[list[list[Action]]]] = [
    [[{"type": "move", "from": a, "to": b, "count": k} for k in range(_MAX_RUN)] for b in _WORK_NAMES]
    for a in _WORK_NAMES
]
_TO_NEW: Final[list[Action]] = [{"type": "move", "from": s, "to": "foundation:new"} for s in _SOURCES]
_TO_FOUNDATION: Final[list[list[Action]]] = [
    [{"type": "move", "from": s, "to": f"foundation:{fid}"} for fid in range(_MAX_FOUNDATIONS)]
    for s in _SOURCES
]
# id -> (action, source index, destination, count) of each move above: destination j for work pile j, -1 for a new
# foundation, -2 - ID for foundation ID. Only ``apply`` reads it, to skip parsing an action it built itself.
_PARSED: Final[dict[int, tuple[Action, int, int, int]]] = {}
for _s in range(len(_SOURCES)):
    _PARSED[id(_TO_NEW[_s])] = (_TO_NEW[_s], _s, -1, 1)
    for _j in range(len(_WORK_NAMES)):
        _PARSED[id(_TO_WORK[_s][_j])] = (_TO_WORK[_s][_j], _s, _j, 1)
    for _fid in range(_MAX_FOUNDATIONS):
        _PARSED[id(_TO_FOUNDATION[_s][_fid])] = (_TO_FOUNDATION[_s][_fid], _s, -2 - _fid, 1)
for _i in range(len(_WORK_NAMES)):
    for _j in range(len(_WORK_NAMES)):
        for _k in range(1, _MAX_RUN):
            _PARSED[id(_RUN[_i][_j][_k])] = (_RUN[_i][_j][_k], _i + 2, _j, _k)
_FLIP: Final[Action] = {"type": "flip"}
_CYCLE: Final[Action] = {"type": "cycle"}
_STUCK: Final[Action] = {"type": "stuck"}
_CALL: Final[Action] = {"type": "nerts"}


def _run_action(i: int, j: int, k: int) -> Action:
    """Move the top ``k`` cards of work pile ``i`` onto work pile ``j``."""
    if k < _MAX_RUN:
        return _RUN[i][j][k]
    return {"type": "move", "from": _WORK_NAMES[i], "to": _WORK_NAMES[j], "count": k}  # pragma: no cover


def _found_action(src: int, fid: int) -> Action:
    """Move the top card of source ``src`` onto foundation ``fid``."""
    if fid < _MAX_FOUNDATIONS:
        return _TO_FOUNDATION[src][fid]
    return {"type": "move", "from": _SOURCES[src], "to": f"foundation:{fid}"}  # pragma: no cover


_MOVE_KEYS: Final = frozenset({"type", "from", "to", "count", "as"})
_UNDER_KEYS: Final = frozenset({"type", "from", "to"})
_TYPE_ONLY: Final = frozenset({"type"})
_NO_TIES: Final[list[_Foundation]] = []  # never changed
_NO_EVENTS: Final[list[Event]] = []  # what play's moves and flips give: never changed
_PARSE: Final = -2  # _to_foundation's target when it is read from the action's "to"
_FOUNDATION_NAMES: Final = [f"foundation:{fid}" for fid in range(_MAX_FOUNDATIONS)]
_WANT_KEYS: Final = 64  # suit * 16 + rank for suits 0 to 3 and ranks to 14 (a tie on a king)
_MAX_TIES: Final = 128  # more than the foundations of 8 packs: a factor of legal_actions' cache key


def _str_keyed(keys: Sequence[str], values: Sequence[Any]) -> dict[str, Any]:
    """A dict built key by key: CPython then keeps it as a dict of string keys only, whose lookups take the fast
    path (a dict display compiled with mypyc is presized, and a presized dict takes the general path)."""
    out: dict[str, Any] = {}
    for key, value in zip(keys, values, strict=True):
        out[key] = value
    return out


# the views' dicts are copies of these (a copy keeps the fast kind), their values set in place
_VIEW: Final = _str_keyed(
    ("game", "seat", "players", "ms", "layouts", "foundations", "called", "over", "ended", "scores"),
    ("nerts", None, 0, 0, [], [], None, False, None, []),
)
_LAYOUT_VIEW: Final = _str_keyed(
    ("pack", "seats", "nerts", "work", "stock", "waste", "stuck"), (0, [], None, [], None, None, False)
)


def _drop(founds: list[_Foundation], found: _Foundation) -> None:
    """Remove ``found`` from ``founds`` if it is there (compared by identity: no ``__eq__`` call per entry)."""
    for i in range(len(founds)):
        if founds[i] is found:
            del founds[i]
            return


def _onto_work(to_work: list[Action], need: int, fits: list[int], out: list[Action]) -> None:
    """Append the moves of ``to_work`` (one per work pile) that a card of :data:`NEEDS` ``need`` may make: onto an
    empty pile (``fits`` -1) or a top card it fits on."""
    for j in range(len(fits)):
        fit = fits[j]
        if fit < 0 or fit == need:
            out.append(to_work[j])


class NertsState:
    """One hand of Nerts in play (rules: every section of ``docs/rules/nerts.md``).

    Build it with :meth:`NertsMatch.start_hand`, or directly from packs of engine cards. Every seat may act at
    any time; :meth:`apply` validates fully before changing anything and raises
    :class:`~cardtable.engine.IllegalAction` with a readable reason otherwise. Views share unchanged parts with
    earlier views: treat them as read-only.
    """

    def __init__(self, options: NertsOptions, packs: list[list[int]]) -> None:
        self.options = options
        self.players = options.players
        n_layouts = options.layouts
        self._layouts = [
            _Layout(
                p,
                [p, p + n_layouts] if options.partnerships else [p],
                packs[p],
                options.nerts_pile_size,
                options.work_piles,
            )
            for p in range(n_layouts)
        ]
        self._seat_layout = [self._layouts[s % n_layouts] for s in range(self.players)]
        self._foundations: list[_Foundation] = []
        # by suit * 16 + next rank: the open foundations that take it (None until one first did)
        self._wants: list[list[_Foundation] | None] = [None] * _WANT_KEYS
        self._in_found = [0] * n_layouts  # cards of each pack in foundations
        self._ms = 0
        self._called: int | None = None
        self._called_ms = 0
        self._ended: str | None = None
        self._last_progress = 0
        self._stall_base = 0
        self._rotated = False
        self._moved_since_rotate = False
        self._actions = 0
        self._quiet = False  # in play(): the frequent actions (moves and flips) build no events
        # caches, rebuilt when dirty: per layout its view, its moves that involve no foundation and its last legal
        # list (_touch), per foundation its view, and the view every seat shares until the next applied action
        self._layout_views: list[dict[str, Any] | None] = [None] * n_layouts
        # parts of the layout views kept longer: the seats (never change) and the Nerts pile (until a card leaves it)
        self._seat_lists = [list(layout.seats) for layout in self._layouts]
        self._nerts_views: list[dict[str, Any] | None] = [None] * n_layouts
        self._layout_moves: list[list[Action] | None] = [None] * n_layouts
        # per layout what depends on its work piles alone, kept while they are unchanged (_touch with work=True):
        # the runs between them with whether one is empty, and their cards as the view shows them
        self._work_moves: list[tuple[list[Action], bool, list[int]] | None] = [None] * n_layouts
        self._work_view: list[list[list[str]] | None] = [None] * n_layouts
        self._pile_codes: list[list[list[str] | None]] = [
            [None] * options.work_piles for _ in range(n_layouts)
        ]
        # and the plays from its work piles to foundations, good for the same key as _legal below
        self._work_found: list[list[Action] | None] = [None] * n_layouts
        self._work_found_key = [-1] * n_layouts
        # per seat, until a card leaves a Nerts pile or reaches a foundation
        self._scores: list[int] | None = None
        self._found_list: list[dict[str, Any]] | None = None  # the views' "foundations", until one changes
        # per layout its last legal list, good while no foundation changed, the same ones are in the tie window and
        # Nerts is still uncalled: its key is _legal_key (foundation version, foundations in the window, uncalled)
        self._legal: list[list[Action] | None] = [None] * n_layouts
        self._legal_key = [-1] * n_layouts
        self._found_version = 0  # foundation plays so far
        self._found_ms = -(1 << 60)  # when the last card went to a foundation (a short int for mypyc)
        self._found_views: list[dict[str, Any]] = []
        self._view: dict[str, Any] | None = None  # _view_base while up to date
        self._view_base = _VIEW.copy()
        self._view_base["players"] = self.players
        # the foundations and scores lists _view_base shows (set again only when they are new lists)
        self._shown_found: list[dict[str, Any]] | None = None
        self._shown_scores: list[int] | None = None
        # per stock size its view ({"count": n}, shared: views are read-only), and per layout its waste's view
        # with the key it was made for (cards * 1024 + top card)
        self._stock_views: list[dict[str, Any] | None] = [None] * 64
        self._waste_views: list[dict[str, Any] | None] = [None] * n_layouts
        self._waste_keys = [-1] * n_layouts
        self._recent: list[_Foundation] = []  # the foundations played on, in the order of their last play

    def __reduce__(
        self,
    ) -> tuple[Callable[[NertsOptions, dict[str, Any]], NertsState], tuple[NertsOptions, dict[str, Any]]]:
        """Copied (``copy.deepcopy``) and pickled attribute by attribute, through the constructor: a class
        compiled with mypyc has no other way to be made (``_attributes``)."""
        return _state_from, (self.options, _attributes(self))

    # -- public queries ------------------------------------------------------------------------------------

    @property
    def is_over(self) -> bool:
        """True once the hand has ended."""
        return self._ended is not None

    @property
    def ended(self) -> str | None:
        """``"nerts"``, ``"stuck"`` or ``"stalled"`` once over; ``None`` while in play."""
        return self._ended

    @property
    def ms(self) -> int:
        """Time of the last applied action, in ms since the hand began."""
        return self._ms

    @property
    def called(self) -> int | None:
        """The seat that called Nerts, or ``None``."""
        return self._called

    @property
    def last_progress_ms(self) -> int:
        """When a card last went to a foundation or came off a Nerts pile (0 at the start)."""
        return self._last_progress

    def layout_index(self, seat: int) -> int:
        """The pack/layout ``seat`` plays (its team's with partnerships)."""
        return self._seat_layout[seat].pack

    def _pack_score(self, pack: int, final: bool) -> int:
        layout = self._layouts[pack]
        score = self._in_found[pack] - self.options.nerts_penalty * len(layout.nerts)
        if final and self._called is not None and self._seat_layout[self._called].pack == pack:
            score += self.options.nerts_bonus
        return score

    def scores(self) -> list[int]:
        """Per seat (a partner shows the team figure), in points: +1 per own card in foundations, minus
        ``nerts_penalty`` per card left in the Nerts pile, plus ``nerts_bonus`` for the caller once the hand is
        over. While in play: as if it ended now, without the bonus (rules: "Scoring")."""
        return list(self._seat_scores())

    def _seat_scores(self) -> list[int]:
        """:meth:`scores`, kept until they change: read-only."""
        scores = self._scores
        if scores is None:
            final = self._ended is not None
            by_pack = [self._pack_score(p, final) for p in range(len(self._layouts))]
            scores = self._scores = [by_pack[layout.pack] for layout in self._seat_layout]
        return scores

    def to_act(self) -> list[int]:
        """Every seat while the hand is in play (Nerts has no turns); empty once over."""
        return [] if self._ended is not None else list(range(self.players))

    def clock_action(self) -> tuple[int, Action] | None:
        """After a call at T: ``(T + in_flight_ms, end_hand nerts)``. Otherwise the stall guard: ``(base +
        stall_seconds * 1000 + 10000, rotate)`` where base is the last progress (a card to a foundation or off a
        Nerts pile) or the last rotate, whichever is later. ``None`` once over."""
        if self._ended is not None:
            return None
        if self._called is not None:
            return (self._called_ms + self.options.in_flight_ms, {"type": "end_hand", "reason": "nerts"})
        due = max(self._last_progress, self._stall_base) + self.options.stall_seconds * 1000 + 10000
        return (due, {"type": "rotate"})

    # -- legal actions -------------------------------------------------------------------------------------

    def _touch(self, layout: _Layout, work: bool = True) -> None:
        """``layout`` changed (``work``: its work piles too): its cached view and moves are rebuilt when next
        asked for."""
        pack = layout.pack
        self._layout_views[pack] = None
        self._layout_moves[pack] = None
        self._legal[pack] = None
        if work:
            self._work_moves[pack] = None
            self._work_view[pack] = None
            self._work_found[pack] = None

    def _touch_all(self, work: bool = True) -> None:
        for layout in self._layouts:
            self._touch(layout, work)

    def _tie_count(self, now: int) -> int:
        """How many foundations have their top card played at most ``tie_window_ms`` before ``now``: the only ones
        a card of the same rank from another pack may still join (rules: "Simultaneous play and conflicts"). Play
        times never go down, so they are the last ones of ``_recent``, and the walk stops at the first out of the
        window."""
        window = self.options.tie_window_ms
        if not window or now > self._found_ms + window:
            return 0
        recent = self._recent
        i = len(recent) - 1
        while i >= 0 and now <= recent[i].top_ms + window:
            i -= 1
        return len(recent) - 1 - i

    def _ties(self, count: int) -> list[_Foundation]:
        """The last ``count`` foundations played on (:meth:`_tie_count`), by id."""
        if not count:
            return _NO_TIES
        out = self._recent[len(self._recent) - count :]
        for i in range(1, count):  # an insertion sort by id: a few entries, compared natively
            found = out[i]
            j = i
            while j > 0 and out[j - 1].fid > found.fid:
                out[j] = out[j - 1]
                j -= 1
            out[j] = found
        return out

    def _foundation_moves(
        self, src: int, card: int, now: int, ties: list[_Foundation], out: list[Action]
    ) -> None:
        """Append the plays of ``card``, on top of source ``src`` (see ``_SOURCES``), to a foundation."""
        if JOKER[card]:
            name = _SOURCES[src]
            window = self.options.tie_window_ms
            for s in range(4):
                out.append({"type": "move", "from": name, "to": "foundation:new", "as": _card_code(1, s)})
            for f in self._foundations:
                if not f.finished:
                    out.append(
                        {
                            "type": "move",
                            "from": name,
                            "to": f"foundation:{f.fid}",
                            "as": _card_code(f.top_rank + 1, f.suit),
                        }
                    )
                if window and f.top_pack != card >> 6 and now <= f.top_ms + window:
                    out.append(
                        {
                            "type": "move",
                            "from": name,
                            "to": f"foundation:{f.fid}",
                            "as": _card_code(f.top_rank, f.suit),
                        }
                    )
            return
        rank = RANK[card]
        if rank == 1:
            out.append(_TO_NEW[src])
        wants = self._wants[SUIT[card] * 16 + rank]
        if wants:
            for f in wants:
                out.append(
                    _TO_FOUNDATION[src][f.fid] if f.fid < _MAX_FOUNDATIONS else _found_action(src, f.fid)
                )
        if ties:
            pack = card >> 6
            suit = SUIT[card]
            for f in ties:
                if f.top_rank == rank and f.suit == suit and f.top_pack != pack:
                    out.append(_found_action(src, f.fid))

    def legal_actions(self, seat: object, ms: int | None = None) -> list[Action]:
        """Every action ``seat`` may take now, concrete (``count`` for runs, ``as`` for jokers on foundations).

        ``ms`` (default: the last applied time) decides the tie window and the in-flight window. Omitted although
        legal (``apply`` accepts them): moving a whole work pile onto an empty work pile (it changes nothing).
        Empty once the hand is over or for an unknown seat (``seat`` is typed ``object``: anything else is no seat,
        even in a build compiled with mypyc, which checks declared types). A layout's list is kept until that layout, a foundation
        or the foundations in the tie window change (its moves within the layout until the layout changes), and
        the actions themselves are shared by every list of every hand: treat them as read-only.
        """
        if self._ended is not None or not isinstance(seat, int) or not 0 <= seat < self.players:
            return []
        now = self._ms if ms is None else ms
        if self._called is not None and now > self._called_ms + self.options.in_flight_ms:
            return []
        layout = self._seat_layout[seat]
        pack = layout.pack
        count = self._tie_count(now)
        key = (self._found_version * _MAX_TIES + count) * 2 + (1 if self._called is None else 0)
        kept = self._legal[pack]
        if kept is not None and self._legal_key[pack] == key:
            return kept[:]
        ties = self._ties(count)
        out: list[Action] = []
        nerts, waste = layout.nerts, layout.waste
        if nerts:
            self._foundation_moves(0, nerts[-1], now, ties, out)
        if waste:
            self._foundation_moves(1, waste[-1], now, ties, out)
        work_found = self._work_found[pack]
        if work_found is None or self._work_found_key[pack] != key:
            work_found = []
            j = 2
            for pile in layout.work:
                if pile:
                    self._foundation_moves(j, pile[-1], now, ties, work_found)
                j += 1
            self._work_found[pack] = work_found
            self._work_found_key[pack] = key
        out += work_found
        moves = self._layout_moves[pack]
        if moves is None:
            moves = self._layout_moves[pack] = self._moves_within(layout)
        out += moves
        if not nerts and self._called is None:
            out.append(_CALL)
        self._legal[pack] = out
        self._legal_key[pack] = key
        return out[:]

    def _moves_within(self, layout: _Layout) -> list[Action]:
        """``layout``'s legal actions that involve no foundation and not the Nerts call, in ``legal_actions``
        order: cards onto work piles, runs between them, slides under, flip, then cycle or stuck."""
        out: list[Action] = []
        work = layout.work
        piles = len(work)
        nerts, waste = layout.nerts, layout.waste
        runs = self._work_moves[layout.pack]
        if runs is None:
            runs = self._work_moves[layout.pack] = self._runs(layout)
        if self.options.jokers:
            singles: list[tuple[int, int]] = []  # (source index, card)
            if nerts:
                singles.append((0, nerts[-1]))
            if waste:
                singles.append((1, waste[-1]))
            # single cards from the Nerts pile and the waste onto work piles
            for src, card in singles:
                to_work = _TO_WORK[src]
                for j in range(piles):
                    pile = work[j]
                    if not pile or _consistent([*pile, card]):
                        out.append(to_work[j])
            out += runs[0]
            # slide under, only with an empty work pile
            if runs[1]:
                tops = [(j + 2, pile[-1]) for j, pile in enumerate(work) if pile]
                for j in range(piles):
                    dest = work[j]
                    if dest:
                        for src, card in (*singles, *tops):
                            if src != j + 2 and _consistent([card, *dest]):
                                out.append(_UNDER[src][j])
        else:
            fits = runs[2]  # FITS of each work pile's top, -1 for an empty pile
            if nerts:
                _onto_work(_TO_WORK[0], NEEDS[nerts[-1]], fits, out)
            if waste:
                _onto_work(_TO_WORK[1], NEEDS[waste[-1]], fits, out)
            out += runs[0]
            if runs[1]:
                keys: list[tuple[int, int]] = []  # (source index, FITS of its top card)
                if nerts:
                    keys.append((0, FITS[nerts[-1]]))
                if waste:
                    keys.append((1, FITS[waste[-1]]))
                keys += [(j + 2, fits[j]) for j in range(piles) if fits[j] >= 0]
                for j in range(piles):
                    dest = work[j]
                    if dest:
                        need = NEEDS[dest[0]]
                        for src, fit in keys:
                            if fit == need and src != j + 2:
                                out.append(_UNDER[src][j])
        if layout.stock or waste:
            out.append(_FLIP)
        if layout.stuck:
            if layout.stock:
                out.append(_CYCLE)
        else:
            out.append(_STUCK)
        return out

    def _runs(self, layout: _Layout) -> tuple[list[Action], bool, list[int]]:
        """The runs ``layout`` may move between its work piles, in ``legal_actions`` order, whether one of its work
        piles is empty, and the :data:`FITS` of each work pile's top card (-1 for an empty pile)."""
        out: list[Action] = []
        work = layout.work
        piles = len(work)
        jokers = self.options.jokers
        has_empty = False
        # each top card's FITS (rank * 2 + red) read once: the pairs below compare plain ints
        fits = [FITS[pile[-1]] if pile else -1 for pile in work]
        for i in range(piles):
            pile = work[i]
            n = len(pile)
            if not n:
                has_empty = True
                continue
            runs = _RUN[i] if n < _MAX_RUN else None
            bottom_rank = RANK[pile[0]] + 1
            for j in range(piles):
                if i == j:
                    continue
                fit = fits[j]
                if fit == -1:  # an empty pile
                    for k in range(1, n):
                        out.append(runs[j][k] if runs is not None else _run_action(i, j, k))
                elif jokers:
                    dest = work[j]
                    for k in range(1, n + 1):
                        if _consistent(dest + pile[n - k :]):
                            out.append(_run_action(i, j, k))
                else:
                    # the card of this pile one rank below the top of pile j (rank fit >> 1, red fit & 1)
                    idx = bottom_rank - (fit >> 1)
                    if 0 <= idx < n and RED[pile[idx]] != fit & 1:
                        out.append(_run_action(i, j, n - idx))
        return out, has_empty, fits

    # -- apply ---------------------------------------------------------------------------------------------

    def apply(self, seat: object, action: object, ms: object) -> list[Event]:
        """Apply ``action`` for ``seat`` (``None``: the table) at ``ms`` and return its events.

        Raises :class:`~cardtable.engine.IllegalAction` and changes nothing when the action is malformed
        (unknown type or key, unknown pile, ``count`` 0, a ``foundation:ID`` never started...), not allowed
        now, or ``ms`` is earlier than the last applied action. The arguments are typed ``object`` because they are
        checked here: a wrong type is an ``IllegalAction`` too, not the ``TypeError`` of a compiled build.
        """
        events = self._apply(seat, action, ms)
        self._view = None  # changed: the shared view is built again when next asked for
        return events

    def play(self, seat: object, action: object, ms: object) -> None:
        """:meth:`apply` for a caller that reads no events (the simulator): the same checks, the same refusals
        (:class:`~cardtable.engine.IllegalAction`, nothing changed) and the same changes, without building the
        events of moves and flips."""
        self._quiet = True
        try:
            self._apply(seat, action, ms)
        finally:
            self._quiet = False
        self._view = None

    def _apply(self, seat: object, given: object, ms: object) -> list[Event]:
        # a dict first: the ABC check is slow; any other mapping is read as a dict (the checks below read dicts)
        if isinstance(given, dict):
            action: dict[str, Any] = given
        elif isinstance(given, Mapping):
            action = dict(given)
        else:
            raise IllegalAction("an action is an object with a 'type'", code="action.malformed")
        kind = action.get("type")
        if not isinstance(ms, int) or isinstance(ms, bool) or ms < 0:
            raise IllegalAction(
                f"ms must be a whole number of milliseconds, not {ms!r}",
                code="action.bad_time",
                params={"ms": _plain(ms)},
            )
        if ms < self._ms:
            raise IllegalAction(
                f"time went backwards ({ms} ms after {self._ms} ms)",
                code="action.time_backwards",
                params={"ms": ms, "last_ms": self._ms},
            )
        if self._ended is not None:
            raise IllegalAction("the hand is over", code="hand.over")
        if seat is None:
            if kind == "rotate":
                self._check_keys(action, _TYPE_ONLY)
                self._check_in_flight(ms)
                self._ms = ms
                self._stall_base = ms
                return self._rotate("stall")
            if kind == "end_hand":
                self._check_keys(action, frozenset({"type", "reason"}))
                reason = action.get("reason")
                if reason == "nerts":
                    if self._called is None:
                        raise IllegalAction(
                            "end_hand 'nerts' but nobody has called Nerts", code="nerts.end_without_call"
                        )
                elif reason != "stalled":
                    raise IllegalAction(
                        f"end_hand reason must be 'nerts' or 'stalled', not {reason!r}",
                        code="nerts.bad_end_reason",
                        params={"reason": _plain(reason)},
                    )
                self._ms = ms
                return self._end(reason)
            raise IllegalAction(
                f"the table (seat null) may only rotate or end_hand, not {kind!r}",
                code="nerts.table_action",
                params={"type": _plain(kind)},
            )
        if not isinstance(seat, int) or isinstance(seat, bool) or not 0 <= seat < self.players:
            raise IllegalAction(
                f"no seat {seat!r} (seats are 0 to {self.players - 1})",
                code="action.no_seat",
                params={"seat": _plain(seat), "seats": self.players},
            )
        if self._called is not None:
            self._check_in_flight(ms)
        layout = self._seat_layout[seat]
        if kind == "move":
            events = self._move(seat, layout, action, ms)
        elif kind == "flip":
            if action is not _FLIP:  # legal_actions' own has no other field
                self._check_keys(action, _TYPE_ONLY)
            events = self._flip(seat, layout)
        elif kind == "under":
            events = self._under(seat, layout, action, ms)
        elif kind == "stuck":
            self._check_keys(action, _TYPE_ONLY)
            if layout.stuck:
                raise IllegalAction(
                    "you have already declared that you are stuck", code="nerts.already_stuck"
                )
            layout.stuck = True
            self._touch(layout, False)
            events = [{"type": "stuck", "seat": seat, "pack": layout.pack}]
            if all(lay.stuck for lay in self._layouts):
                if self._rotated and not self._moved_since_rotate:
                    events += self._end("stuck")
                else:
                    self._stall_base = ms
                    events += self._rotate("stuck")
        elif kind == "cycle":
            self._check_keys(action, _TYPE_ONLY)
            if not layout.stuck:
                raise IllegalAction(
                    "you may cycle only while stuck (declare stuck first)", code="nerts.cycle_not_stuck"
                )
            if not layout.stock:
                raise IllegalAction("your stock is empty: nothing to cycle", code="nerts.cycle_empty_stock")
            layout.stock.insert(0, layout.stock.pop())
            events = [{"type": "cycled", "seat": seat, "pack": layout.pack}]
        elif kind == "nerts":
            self._check_keys(action, _TYPE_ONLY)
            if self._called is not None:
                raise IllegalAction(
                    f"Nerts has already been called (by seat {self._called})",
                    code="nerts.already_called",
                    params={"seat": self._called},
                )
            if layout.nerts:
                raise IllegalAction(
                    f"your Nerts pile still has {len(layout.nerts)} cards",
                    code="nerts.pile_not_empty",
                    params={"count": len(layout.nerts)},
                )
            self._called = seat
            self._called_ms = ms
            events = [{"type": "nerts", "seat": seat}]
        elif kind in ("rotate", "end_hand"):
            raise IllegalAction(
                f"only the table (seat null) may {kind}", code="nerts.table_only", params={"type": kind}
            )
        else:
            raise IllegalAction(
                f"unknown action type {kind!r}", code="action.unknown_type", params={"type": _plain(kind)}
            )
        self._ms = ms
        self._actions += 1
        return events

    def _check_in_flight(self, ms: int) -> None:
        if self._called is not None and ms > self._called_ms + self.options.in_flight_ms:
            raise IllegalAction(
                f"the hand is over (Nerts was called at {self._called_ms} ms; "
                f"moves count until {self._called_ms + self.options.in_flight_ms} ms)",
                code="nerts.called",
                params={"seat": self._called, "until_ms": self._called_ms + self.options.in_flight_ms},
            )

    @staticmethod
    def _check_keys(action: dict[str, Any], allowed: frozenset[str]) -> None:
        for key in action:
            if key not in allowed:
                raise IllegalAction(
                    f"unexpected field {key!r} in a {action.get('type')!r} action",
                    code="action.unexpected_field",
                    params={"field": _plain(key), "type": _plain(action.get("type"))},
                )

    def _source(self, layout: _Layout, ref: Any) -> tuple[list[int], int, str]:
        """The pile named by ``ref`` ("nerts", "waste", "work:I") and its work index (-1 otherwise)."""
        if ref == "nerts":
            pile, where = layout.nerts, -1
        elif ref == "waste":
            pile, where = layout.waste, -1
        else:
            where = self._work_index(layout, ref, "from")
            pile = layout.work[where]
        if not pile:
            raise IllegalAction(f"{ref} is empty", code="nerts.pile_empty", params={"pile": _pile(str(ref))})
        return pile, where, str(ref)

    def _work_index(self, layout: _Layout, ref: Any, field: str) -> int:
        if not isinstance(ref, str):
            raise IllegalAction(
                f"'{field}' must be a pile name such as 'work:0', not {ref!r}",
                code="action.bad_pile",
                params={"field": field},
            )
        j = _WORK_REFS.get(ref)
        if j is None or j >= len(layout.work):
            if ref.startswith("work:"):
                raise IllegalAction(
                    f"no pile {ref} (work piles are work:0 to work:{len(layout.work) - 1})",
                    code="nerts.no_work_pile",
                    params={"pile": _pile(ref), "count": len(layout.work)},
                )
            allowed = "'nerts', 'waste' or 'work:I'" if field == "from" else "'work:J' or 'foundation:ID'"
            raise IllegalAction(
                f"unknown pile {ref!r} in '{field}' (expected {allowed})",
                code="action.bad_pile",
                params={"field": field},
            )
        return j

    def _move(self, seat: int, layout: _Layout, action: dict[str, Any], ms: int) -> list[Event]:
        parsed = _PARSED.get(id(action))
        if parsed is not None and parsed[0] is action:  # one of legal_actions' own: known well formed
            events = self._known_move(seat, layout, action, parsed[1], parsed[2], parsed[3], ms)
            if events is not None:
                return events
        self._check_keys(action, _MOVE_KEYS)
        dst = action.get("to")
        count = action.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise IllegalAction(
                f"count must be a whole number of cards, 1 or more, not {count!r}",
                code="action.bad_count",
                params={"value": _plain(count)},
            )
        pile, src_work, src = self._source(layout, action.get("from"))
        if src_work < 0 and count != 1:
            raise IllegalAction(
                f"count is only for a run from a work pile; {src} gives one card",
                code="nerts.one_card_only",
                params={"pile": _pile(src)},
            )
        if count > len(pile):
            raise IllegalAction(
                f"{src} has only {len(pile)} cards, not {count}",
                code="nerts.run_too_long",
                params={"pile": _pile(src), "size": len(pile), "count": count},
            )
        if not isinstance(dst, str):
            raise IllegalAction(
                f"'to' must be a pile name such as 'work:0' or 'foundation:new', not {dst!r}",
                code="action.bad_pile",
                params={"field": "to"},
            )
        if dst.startswith("foundation:"):
            if count != 1:
                raise IllegalAction(
                    "only one card at a time goes to a foundation", code="nerts.foundation_one_card"
                )
            return self._to_foundation(seat, layout, action, pile, src, src_work, dst, _PARSE, ms)
        if "as" in action:
            raise IllegalAction("'as' is only for a joker going to a foundation", code="nerts.as_not_joker")
        j = self._work_index(layout, dst, "to")
        if j == src_work:
            raise IllegalAction(
                f"{src} is already there", code="nerts.same_pile", params={"pile": _pile(src)}
            )
        dest = layout.work[j]
        run = pile[len(pile) - count :]
        if dest:
            if self.options.jokers:
                ok = _consistent(dest + run)
            else:
                top, low = dest[-1], run[0]
                ok = RANK[low] == RANK[top] - 1 and RED[low] != RED[top]
            if not ok:
                raise IllegalAction(
                    f"{CODE[run[0]]} does not go on {CODE[dest[-1]]} "
                    "(work piles go down one rank at a time in alternating colours)",
                    code="nerts.work_pile_order",
                    params={"card": CODE[run[0]], "onto_card": CODE[dest[-1]], "pile": _pile(dst)},
                )
        return self._work_move(seat, layout, pile, src, dest, dst, count, ms)

    def _known_move(
        self, seat: int, layout: _Layout, action: dict[str, Any], source: int, to: int, count: int, ms: int
    ) -> list[Event] | None:
        """Apply a move ``legal_actions`` built (parsed in ``_PARSED``) when it is legal now; ``None`` when it is
        not, and then the full checks of :meth:`_move` name what is wrong."""
        work = layout.work
        if source == 0:
            pile, src_work = layout.nerts, -1
        elif source == 1:
            pile, src_work = layout.waste, -1
        elif source - 2 < len(work):
            pile, src_work = work[source - 2], source - 2
        else:
            return None
        if len(pile) < count or not pile:
            return None
        src = _SOURCES[source]
        if to < 0:
            target = -1 if to == -1 else -2 - to
            return self._to_foundation(seat, layout, action, pile, src, src_work, action["to"], target, ms)
        if to >= len(work) or to == src_work:
            return None
        dest = work[to]
        if dest:
            low = pile[len(pile) - count]
            if self.options.jokers:
                if not _consistent(dest + pile[len(pile) - count :]):
                    return None
            else:
                top = dest[-1]
                if RANK[low] != RANK[top] - 1 or RED[low] == RED[top]:
                    return None
        return self._work_move(seat, layout, pile, src, dest, _WORK_NAMES[to], count, ms)

    def _work_move(
        self,
        seat: int,
        layout: _Layout,
        pile: list[int],
        src: str,
        dest: list[int],
        dst: str,
        count: int,
        ms: int,
    ) -> list[Event]:
        """Move the top ``count`` cards of ``pile`` (named ``src``) onto work pile ``dest`` (named ``dst``)."""
        run = pile[len(pile) - count :]
        del pile[len(pile) - count :]
        dest += run
        self._piles_changed(layout, pile, dest)
        events: list[Event] = _NO_EVENTS
        if not self._quiet:
            events = [
                {
                    "type": "moved",
                    "seat": seat,
                    "pack": layout.pack,
                    "from": src,
                    "to": dst,
                    "cards": [CODE[c] for c in run],
                }
            ]
        self._after_card_left(seat, layout, src, ms, events)
        layout.stuck = False
        self._moved_since_rotate = True
        self._touch(layout)
        return events

    def _to_foundation(
        self,
        seat: int,
        layout: _Layout,
        action: dict[str, Any],
        pile: list[int],
        src: str,
        src_work: int,
        dst: str,
        target: int,
        ms: int,
    ) -> list[Event]:
        """Play the top card of ``pile`` to the foundation ``dst`` names: ``target`` is -1 for a new one, its id,
        or ``_PARSE`` to read it from ``dst``."""
        card = pile[-1]
        pack = card >> 6
        if JOKER[card]:
            if "as" not in action:
                raise IllegalAction(
                    f"{CODE[card]} is a joker: say what it stands for ('as', e.g. '7H')",
                    code="nerts.joker_needs_as",
                    params={"card": CODE[card]},
                )
            declared = action["as"]
            try:
                as_card = Card.parse(declared)
            except ValueError as error:
                raise IllegalAction(
                    f"'as': {error}", code="nerts.bad_as", params={"value": _plain(declared)}
                ) from None
            if as_card.is_joker:
                raise IllegalAction("'as' must name a standard card, not a joker", code="nerts.as_joker")
            rank, suit = as_card.rank, SUITS.index(as_card.suit)
        else:
            if "as" in action:
                raise IllegalAction(
                    "'as' is only for a joker going to a foundation", code="nerts.as_not_joker"
                )
            rank, suit = RANK[card], SUIT[card]
        name = _card_code(rank, suit) if JOKER[card] else CODE[card]
        found: _Foundation | None = None
        if target == -1 or (target == _PARSE and dst == "foundation:new"):
            if rank != 1:
                raise IllegalAction(
                    f"only an ace starts a foundation ({name} is not an ace)",
                    code="nerts.foundation_needs_ace",
                    params={"card": name},
                )
        else:
            fid = target
            if target == _PARSE:
                text = dst[len("foundation:") :]
                if not text.isdigit():
                    raise IllegalAction(
                        f"unknown pile {dst!r} (expected 'foundation:new' or 'foundation:ID')",
                        code="action.bad_pile",
                        params={"field": "to"},
                    )
                fid = int(text)
            if fid >= len(self._foundations):
                raise IllegalAction(f"{dst} has not been started", code="nerts.no_foundation")
            found = self._foundations[fid]
            if found.suit != suit:
                raise IllegalAction(
                    f"{name} does not go on {dst} ({_SUIT_NAMES[found.suit]})",
                    code="nerts.foundation_suit",
                    params={
                        "card": name,
                        "top_card": _card_code(found.top_rank, found.suit),
                        "suit": SUITS[found.suit],
                        "pile": _pile(dst),
                    },
                )
            window = self.options.tie_window_ms
            if rank == found.top_rank + 1 and not found.finished:
                pass
            elif rank == found.top_rank and window and found.top_pack != pack and ms <= found.top_ms + window:
                pass  # an apparent tie: both cards play (rules: "Simultaneous play and conflicts")
            elif found.finished:
                raise IllegalAction(
                    f"{dst} is finished and set aside",
                    code="nerts.foundation_finished",
                    params={"top_card": _card_code(13, suit), "pile": _pile(dst)},
                )
            elif rank <= found.top_rank:
                raise IllegalAction(
                    f"that foundation has moved on ({dst} is at {_card_code(found.top_rank, suit)})",
                    code="nerts.foundation_moved_on",
                    params={"card": name, "top_card": _card_code(found.top_rank, suit), "pile": _pile(dst)},
                )
            else:
                raise IllegalAction(
                    f"{name} does not go on {dst}: it needs {_card_code(found.top_rank + 1, suit)} next",
                    code="nerts.foundation_order",
                    params={
                        "card": name,
                        "top_card": _card_code(found.top_rank, suit),
                        "needed_card": _card_code(found.top_rank + 1, suit),
                        "pile": _pile(dst),
                    },
                )
        # mutate
        pile.pop()
        if src_work >= 0:
            self._piles_changed(layout, pile, pile)
        self._found_version += 1
        if found is None:
            found = _Foundation(len(self._foundations), suit)
            self._foundations.append(found)
            self._found_views.append({})
        else:
            wants = self._wants[suit * 16 + found.top_rank + 1]
            if wants is not None:
                _drop(wants, found)
        found.cards.append(card)
        found.decl.append(rank)
        found.top_rank = rank
        found.top_ms = ms
        found.top_pack = pack
        _drop(self._recent, found)
        self._recent.append(found)
        if rank == 13:
            found.finished = True
        else:
            wants = self._wants[suit * 16 + rank + 1]
            if wants is None:
                wants = self._wants[suit * 16 + rank + 1] = []
            wants.append(found)
        self._in_found[pack] += 1
        self._found_ms = ms
        self._scores = None
        self._found_list = None
        self._last_progress = ms
        events: list[Event] = _NO_EVENTS
        if not self._quiet:
            event: Event = {
                "type": "moved",
                "seat": seat,
                "pack": layout.pack,
                "from": src,
                "to": _FOUNDATION_NAMES[found.fid]
                if found.fid < _MAX_FOUNDATIONS
                else f"foundation:{found.fid}",
                "cards": [CODE[card]],
            }
            if JOKER[card]:
                event["as"] = name
            events = [event]
            if found.finished:
                events.append({"type": "finished", "foundation": found.fid})
        self._found_views[found.fid] = self._foundation_view(found, self._found_views[found.fid])
        self._after_card_left(seat, layout, src, ms, events)
        layout.stuck = False
        self._moved_since_rotate = True
        self._touch(layout, src_work >= 0)  # the work piles changed only if the card came from one
        return events

    def _after_card_left(self, seat: int, layout: _Layout, src: str, ms: int, events: list[Event]) -> None:
        if src != "nerts":
            return
        self._nerts_views[layout.pack] = None
        self._scores = None
        self._last_progress = ms
        if layout.nerts:
            if not self._quiet:
                events.append({"type": "revealed", "pack": layout.pack, "card": CODE[layout.nerts[-1]]})
        elif self.options.auto_nerts and self._called is None:
            self._called = seat
            self._called_ms = ms
            if not self._quiet:
                events.append({"type": "nerts", "seat": seat})

    def _under(self, seat: int, layout: _Layout, action: dict[str, Any], ms: int) -> list[Event]:
        self._check_keys(action, _UNDER_KEYS)
        pile, src_work, src = self._source(layout, action.get("from"))
        j = self._work_index(layout, action.get("to"), "to")
        if j == src_work:
            raise IllegalAction(
                "a card cannot slide under its own pile",
                code="nerts.under_own_pile",
                params={"pile": _pile(src)},
            )
        dest = layout.work[j]
        if not dest:
            raise IllegalAction(
                f"work:{j} is empty: move the card there instead of under it",
                code="nerts.under_empty_pile",
                params={"pile": _pile(f"work:{j}")},
            )
        if not any(not p for p in layout.work):
            raise IllegalAction(
                "you may slide a card under a pile only while you have an empty work pile",
                code="nerts.under_needs_empty_pile",
            )
        card = pile[-1]
        if self.options.jokers:
            ok = _consistent([card, *dest])
        else:
            ok = RANK[card] == RANK[dest[0]] + 1 and RED[card] != RED[dest[0]]
        if not ok:
            raise IllegalAction(
                f"{CODE[card]} does not go under {CODE[dest[0]]} "
                "(it must be one rank higher and the other colour)",
                code="nerts.under_order",
                params={"card": CODE[card], "under_card": CODE[dest[0]], "pile": _pile(f"work:{j}")},
            )
        pile.pop()
        dest.insert(0, card)
        self._piles_changed(layout, pile, dest)
        events: list[Event] = [
            {
                "type": "slid_under",
                "seat": seat,
                "pack": layout.pack,
                "from": src,
                "to": f"work:{j}",
                "card": CODE[card],
            }
        ]
        self._after_card_left(seat, layout, src, ms, events)
        layout.stuck = False
        self._moved_since_rotate = True
        self._touch(layout)
        return events

    def _flip(self, seat: int, layout: _Layout) -> list[Event]:
        stock, waste = layout.stock, layout.waste
        if stock:
            cut = len(stock) - self.options.flip_count
            if cut < 0:
                cut = 0
            turned_up = stock[cut:]  # the cards turned, each onto the last: the waste gets them in reverse
            del stock[cut:]
            turned_up.reverse()
            waste += turned_up
            turned = False
        elif waste:
            layout.stock = waste[::-1]
            layout.waste = []
            turned = True
        else:
            raise IllegalAction(
                "your stock and waste are both empty: nothing to flip", code="nerts.nothing_to_flip"
            )
        self._touch(layout, False)
        if self._quiet:
            return _NO_EVENTS
        return [
            {
                "type": "flipped",
                "seat": seat,
                "pack": layout.pack,
                "waste_top": CODE[layout.waste[-1]] if layout.waste else None,
                "stock_count": len(layout.stock),
                "turned_over": turned,
            }
        ]

    def _rotate(self, by: str) -> list[Event]:
        """Every waste back onto its stock, then the top card of the stock to the bottom (rules: "Stuck")."""
        for layout in self._layouts:
            stock = layout.stock + layout.waste[::-1]
            if stock:
                stock.insert(0, stock.pop())
            layout.stock = stock
            layout.waste = []
            layout.stuck = False
        self._touch_all(False)
        self._rotated = True
        self._moved_since_rotate = False
        return [{"type": "rotated", "by": by}]

    def _end(self, reason: str) -> list[Event]:
        self._ended = reason
        self._scores = None
        self._touch_all(False)
        return [{"type": "hand_over", "reason": reason, "scores": self.scores()}]

    # -- views ---------------------------------------------------------------------------------------------

    @staticmethod
    def _foundation_view(found: _Foundation, last: dict[str, Any]) -> dict[str, Any]:
        """``found``'s view after one card more than in ``last`` (its previous view, ``{}`` for a new one): the
        entries of the cards below are ``last``'s own (views are read-only)."""
        cards: list[dict[str, Any]] = list(last["cards"]) if last else []
        card = found.cards[-1]
        entry: dict[str, Any] = {"card": CODE[card], "pack": card >> 6}
        if JOKER[card]:
            entry["as"] = _card_code(found.decl[-1], found.suit)
        cards.append(entry)
        return {"id": found.fid, "suit": SUITS[found.suit], "cards": cards, "finished": found.finished}

    def _layout_view(self, layout: _Layout) -> dict[str, Any]:
        cached = self._layout_views[layout.pack]
        if cached is not None:
            return cached
        nerts, waste = layout.nerts, layout.waste
        pack = layout.pack
        nerts_view = self._nerts_views[pack]
        if nerts_view is None:
            nerts_view = self._nerts_views[pack] = {
                "count": len(nerts),
                "top": CODE[nerts[-1]] if nerts else None,
            }
        view = _LAYOUT_VIEW.copy()  # the keys in order, each set below
        view["pack"] = pack
        view["seats"] = self._seat_lists[pack]
        view["nerts"] = nerts_view
        view["work"] = self._work_codes(layout)
        stock = len(layout.stock)
        stock_view = self._stock_views[stock] if stock < len(self._stock_views) else None
        if stock_view is None:
            stock_view = {"count": stock}
            if stock < len(self._stock_views):
                self._stock_views[stock] = stock_view
        view["stock"] = stock_view
        waste_key = len(waste) * 1024 + (waste[-1] if waste else 1023)
        waste_view = self._waste_views[pack]
        if waste_view is None or self._waste_keys[pack] != waste_key:
            waste_view = {"count": len(waste), "top": CODE[waste[-1]] if waste else None}
            self._waste_views[pack] = waste_view
            self._waste_keys[pack] = waste_key
        view["waste"] = waste_view
        view["stuck"] = layout.stuck
        if self._ended is not None:
            view["nerts_cards"] = [CODE[c] for c in nerts]
            view["stock_cards"] = [CODE[c] for c in reversed(layout.stock)]
            view["waste_cards"] = [CODE[c] for c in waste]
        self._layout_views[layout.pack] = view
        return view

    def _work_codes(self, layout: _Layout) -> list[list[str]]:
        """The cards of ``layout``'s work piles as codes, kept until they change."""
        codes = self._work_view[layout.pack]
        if codes is None:
            kept = self._pile_codes[layout.pack]  # per pile, until that pile changes (_piles_changed)
            codes = []
            for j, pile in enumerate(layout.work):
                pile_codes = kept[j]
                if pile_codes is None:
                    pile_codes = kept[j] = [CODE[c] for c in pile]
                codes.append(pile_codes)
            self._work_view[layout.pack] = codes
        return codes

    def _piles_changed(self, layout: _Layout, first: list[int], second: list[int]) -> None:
        """The piles ``first`` and ``second`` of ``layout`` changed: those that are work piles show anew."""
        kept = self._pile_codes[layout.pack]
        work = layout.work
        for j in range(len(work)):
            if work[j] is first or work[j] is second:
                kept[j] = None

    def view(self, seat: int | None) -> View:
        """What ``seat`` sees (``None``: a spectator); the shape is documented in ``docs/views-nerts.md``.

        In play every seat sees the same public cards (Nerts pile tops, work piles, waste tops, counts); face-down
        Nerts cards and stock order are never shown. Once the hand is over each layout also reveals
        ``nerts_cards`` (bottom first), ``stock_cards`` (top first) and ``waste_cards`` (bottom first).
        """
        shared = self._view
        if shared is None:  # built once per applied action: every seat sees the same, but for "seat"
            layouts: list[dict[str, Any]] = []
            for layout in self._layouts:
                kept = self._layout_views[layout.pack]
                layouts.append(kept if kept is not None else self._layout_view(layout))
            # never handed out (each seat gets a copy), so brought up to date in place, only where it changed
            shared = self._view = self._view_base
            shared["ms"] = self._ms
            shared["layouts"] = layouts
            found = self._foundations_view()
            if found is not self._shown_found:
                shared["foundations"] = self._shown_found = found
            scores = self._seat_scores()
            if scores is not self._shown_scores:
                shared["scores"] = self._shown_scores = scores
            if self._called is not None or self._ended is not None:  # each set once, near the end of a hand
                shared["called"] = self._called
                shared["over"] = self._ended is not None
                shared["ended"] = self._ended
        view = dict(shared)
        view["seat"] = seat
        return view

    def _foundations_view(self) -> list[dict[str, Any]]:
        """The views' ``foundations`` list: the same list object until a foundation changes."""
        found = self._found_list
        if found is None:
            found = self._found_list = list(self._found_views)
        return found

    def events_for(self, events: Sequence[Event], seat: int | None) -> list[Event]:
        """Nerts events carry only public cards, so every viewer gets them all."""
        return list(events)

    # -- testing and debugging -------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The whole state, hidden cards included, as plain data (for tests and debugging, never for players)."""
        return {
            "layouts": [
                {
                    "nerts": [CODE[c] + f"/{c >> 6}" for c in lay.nerts],
                    "work": [[CODE[c] + f"/{c >> 6}" for c in pile] for pile in lay.work],
                    "stock": [CODE[c] + f"/{c >> 6}" for c in lay.stock],
                    "waste": [CODE[c] + f"/{c >> 6}" for c in lay.waste],
                    "stuck": lay.stuck,
                }
                for lay in self._layouts
            ],
            "foundations": [
                {
                    "cards": [CODE[c] + f"/{c >> 6}" for c in f.cards],
                    "decl": list(f.decl),
                    "top": (f.top_rank, f.top_ms, f.top_pack),
                    "finished": f.finished,
                }
                for f in self._foundations
            ],
            "wants": [(k, sorted(f.fid for f in v)) for k, v in enumerate(self._wants) if v is not None],
            "in_found": list(self._in_found),
            "ms": self._ms,
            "called": (self._called, self._called_ms),
            "ended": self._ended,
            "progress": (self._last_progress, self._stall_base),
            "rotated": (self._rotated, self._moved_since_rotate),
            "actions": self._actions,
        }

    def card_places(self) -> list[tuple[str, int]]:
        """Every card in the hand as ``(code, pack)`` (for invariant tests)."""
        out: list[tuple[str, int]] = []
        for lay in self._layouts:
            for pile in (lay.nerts, *lay.work, lay.stock, lay.waste):
                out.extend((CODE[c], c >> 6) for c in pile)
        for f in self._foundations:
            out.extend((CODE[c], c >> 6) for c in f.cards)
        return out


# ---------------------------------------------------------------------------------------------------------
# The match


class NertsMatch:
    """A Nerts match: hands until some seat or team has ``target_score`` with a unique top (rules: "Scoring").

    ``totals`` and each result's ``scores`` have one entry per seat; partners show their team's figure.
    ``options`` may also be a record's options mapping (``ValueError`` naming a bad option).
    """

    game = "nerts"

    def __init__(self, options: NertsOptions | Mapping[str, Any]) -> None:
        if not isinstance(options, NertsOptions):
            options = NertsOptions.from_dict(options)
        self.options = options
        self.players = options.players
        self.totals = [0] * options.players
        self.results: list[HandResult] = []
        self._hand: NertsState | None = None
        self._hands_started = 0

    def __reduce__(
        self,
    ) -> tuple[Callable[[NertsOptions, dict[str, Any]], NertsMatch], tuple[NertsOptions, dict[str, Any]]]:
        """Copied and pickled as :class:`NertsState` is (``_attributes``)."""
        return _match_from, (self.options, _attributes(self))
        self._cycle_packs: list[list[str]] = []

    @property
    def hand(self) -> NertsState | None:
        """The hand in play, or the last one once finished; ``None`` before the first deal."""
        return self._hand

    def _packs(self, deal: Mapping[str, Any]) -> list[list[int]]:
        if not isinstance(deal, Mapping):
            raise ValueError("deal: must be an object")
        keys = set(deal)
        rotation = self._rotation()
        if keys == {"seed"}:
            seed = deal["seed"]
            if not isinstance(seed, int) or isinstance(seed, bool):
                raise ValueError(f"deal.seed: must be a whole number, not {seed!r}")
            packs: Any = (
                rotation[1]
                if rotation is not None
                else seed_packs(seed, self.options.layouts, self.options.jokers)
            )
        elif keys == {"packs"}:
            packs = deal["packs"]
        else:
            extra = sorted(keys - {"seed", "packs"})
            if extra:
                raise ValueError(f"deal.{extra[0]}: unknown field in a Nerts deal")
            raise ValueError("deal: needs either 'seed' or 'packs' (one of them)")
        cards = _check_packs(packs, self.options.layouts, self.options.jokers)
        if rotation is not None:
            k, expected = rotation
            n = self.options.layouts
            number = self._hands_started
            for p, pack in enumerate(cards):
                if [CODE[c] for c in pack] != expected[p]:
                    raise ValueError(
                        f"deal.packs[{p}]: hand {number + 1} of rotated deals must repeat pack {(p - k) % n} of hand "
                        f"{number - k + 1} here, card for card (each hand moves the deal on one seat)"
                    )
        return cards

    def deal_cycle(self, hand: int) -> int | None:
        """With ``deals: "rotated"``, the deal (cycle of one hand per pack: per seat, per team with partnerships;
        from 0) that hand ``hand`` (from 0) plays; ``None`` with fresh deals (rules: "Rotated deals").

        >>> NertsMatch({"players": 4, "partnerships": True, "deals": "rotated"}).deal_cycle(5)
        2
        """
        return hand // self.options.layouts if self.options.deals == "rotated" else None

    def _rotation(self) -> tuple[int, list[list[str]]] | None:
        """For a rotated hand after a cycle's first, ``(k, packs)``: the cycle's first packs moved ``k`` seats
        (teams) on, pack ``p`` going to ``(p + k) % layouts``; ``None`` when the next hand is dealt fresh."""
        n = self.options.layouts
        k = self._hands_started % n
        if self.options.deals != "rotated" or k == 0 or not self._cycle_packs:
            return None
        return k, [self._cycle_packs[(p - k) % n][:] for p in range(n)]

    def check_deal(self, deal: Mapping[str, Any]) -> None:
        """Raise ``ValueError`` naming the field (``"deal.packs[1]: missing 7H"``) when ``deal`` is bad; with
        ``deals: "rotated"``, also when a hand after a cycle's first is not that hand's packs moved on, pack ``p``
        dealt as pack ``(p - k) % layouts`` was, card for card (rules: "Rotated deals"; a seed is then ignored)."""
        self._packs(deal)

    def deal_cards(self, seed: int) -> dict[str, Any]:
        """``{"packs": [[codes]]}`` shuffled from ``seed`` (see the module docstring for how); with ``deals:
        "rotated"``, a hand after a cycle's first is that hand's packs moved on and ``seed`` is not used."""
        rotation = self._rotation()
        if rotation is not None:
            return {"packs": rotation[1]}
        return {"packs": seed_packs(seed, self.options.layouts, self.options.jokers)}

    def start_hand(self, deal: Mapping[str, Any]) -> NertsState:
        """Begin the next hand; ``ValueError`` for a bad deal, a match that is over, or an unfinished hand."""
        if self.is_over:
            raise ValueError("the match is over")
        if self._hand is not None and len(self.results) < self._hands_started:
            raise ValueError("the current hand has not been finished")
        packs = self._packs(deal)
        if self.options.deals == "rotated" and self._hands_started % self.options.layouts == 0:
            self._cycle_packs = [[CODE[c] for c in pack] for pack in packs]
        self._hand = NertsState(self.options, packs)
        self._hands_started += 1
        return self._hand

    def finish_hand(self) -> HandResult:
        """Score the ended hand into ``totals``; ``ValueError`` if no hand has ended or it was scored already."""
        hand = self._hand
        if hand is None or not hand.is_over:
            raise ValueError("no hand has ended")
        if len(self.results) >= self._hands_started:
            raise ValueError("this hand has already been scored")
        scores = hand.scores()
        self.totals = [t + s for t, s in zip(self.totals, scores, strict=True)]
        result = HandResult(scores=scores, ended=hand.ended, extra={"called": hand.called})
        self.results.append(result)
        return result

    def _team_totals(self) -> list[int]:
        return self.totals[: self.options.layouts]

    @property
    def is_over(self) -> bool:
        """True when, after a scored hand, some seat/team has ``target_score`` and the highest total is unique, or
        the match has played its ``hands`` (rules: "Scoring")."""
        return self.winners() is not None

    def winners(self) -> list[int] | None:
        """The winning seats (both partners of a winning team; every seat or team sharing the top total when the
        ``hands`` limit ends the match on a tie), or ``None`` while the match goes on (rules: "Scoring")."""
        if not self.results:
            return None
        teams = self._team_totals()
        best = max(teams)
        last_hand = 0 < self.options.hands <= len(self.results)
        if not last_hand and (best < self.options.target_score or teams.count(best) > 1):
            return None
        top = [team for team, total in enumerate(teams) if total == best]
        if self.options.partnerships:
            return sorted(top + [team + self.options.layouts for team in top])
        return top


def new_match(options: Mapping[str, Any]) -> NertsMatch:
    """A fresh match from a record's ``options`` mapping; ``ValueError`` naming a bad option."""
    return NertsMatch(NertsOptions.from_dict(options))


register(GameInfo(name="nerts", title="Nerts", option_specs=OPTION_SPECS, new_match=new_match))
