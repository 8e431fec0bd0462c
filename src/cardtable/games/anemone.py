"""Enemy Anemone: the rules engine (``docs/rules/enemy-anemone.md``).

A trick-taking game in which every card played into a trick must be of a suit not yet in it; a seat with no such
card discards one into its own score pile. The highest card wins the trick, the lowest takes an anemone (+1 or +2
to a later card).

- :class:`AnemoneOptions`: ``players`` (2 to 6), ``rounds`` (1 to 10), ``random_first_leader``, ``deals``.
- :class:`AnemoneMatch`: a match (``rounds`` hands) as a fold over a record's deals and actions.
- :class:`AnemoneState`: one hand in play; ``view`` (``docs/views-anemone.md``), ``legal_actions``, ``apply``.

Cards are written rank then suit (``"7C"``, ``"10F"``). Inside the engine a card is an ``int``,
``suit_index * 10 + rank - 1`` (``"1A"`` is 0, ``"10F"`` is 59), so that random playouts are cheap.

>>> match = AnemoneMatch(AnemoneOptions(players=3))
>>> state = match.start_hand({"seed": 7})
>>> state.to_act(), len(state.view(0)["hand"]), state.view(None)["hand_counts"]
([0], 10, [10, 10, 10])
>>> action = state.legal_actions(0)[0]
>>> [event["type"] for event in state.apply(0, action, 0)]
['played']
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cardtable.cards import CREATURE_SUITS, CreatureCard
from cardtable.engine import Action, Event, HandResult, IllegalAction, OptionSpec, View
from cardtable.games import GameInfo, register

ANEMONE_CARDS = 9
"""Anemone cards in the game: supply plus every seat's holding is always 9."""

BONUS_RANKS = frozenset({3, 5, 8})
"""Ranks worth one extra point in a score pile ("End of a hand")."""

CODE: tuple[str, ...] = tuple(f"{rank}{suit}" for suit in CREATURE_SUITS for rank in range(1, 11))
"""Card code by engine card number: ``CODE[0] == "1A"``, ``CODE[59] == "10F"``."""

SUIT_OF: tuple[int, ...] = tuple(card // 10 for card in range(60))
RANK_OF: tuple[int, ...] = tuple(card % 10 + 1 for card in range(60))
POINTS_OF: tuple[int, ...] = tuple(2 if card % 10 + 1 in BONUS_RANKS else 1 for card in range(60))
"""Points a card is worth in a score pile: 1, or 2 for a 3, 5 or 8."""
SUIT_BIT: tuple[int, ...] = tuple(1 << (card // 10) for card in range(60))
"""A card's suit as a bit of :attr:`AnemoneState.trick_suit_mask`: ``1 << SUIT_OF[card]``."""

_NUMBER: dict[str, int] = {code: number for number, code in enumerate(CODE)}

DEALS: tuple[str, ...] = ("fresh", "rotated")
"""Values of the ``deals`` option: a fresh deal every hand, or each deal played once from every seat ("Rotated
deals")."""


def _plain(value: Any) -> Any:
    """A refusal param from a value a client sent: numbers and strings as they are, anything else as text."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return repr(value)


def card_number(code: str) -> int:
    """The engine number of a card code (``"7c"`` and ``"7C"`` alike); ``ValueError`` names a bad code."""
    number = _NUMBER.get(code) if isinstance(code, str) else None
    if number is None:
        card = CreatureCard.parse(code)
        number = (ord(card.suit) - ord("A")) * 10 + card.rank - 1
    return number


def sort_key(code: str) -> int:
    """Sort key of a card code: suit by suit, rank within a suit (the order hands are shown in)."""
    return card_number(code)


def game_cards(players: int) -> list[int]:
    """Every card of a ``players``-seat game, suit by suit (the fixed pack order a seed shuffles).

    2 seats: suits A-D without 1s and 10s (32 cards); 3-5 seats: one suit per seat (10 each);
    6 seats: all six suits without 1s and 10s (48 cards). ("Set-up")
    """
    if players == 2:
        return [s * 10 + r - 1 for s in range(4) for r in range(2, 10)]
    if players == 6:
        return [s * 10 + r - 1 for s in range(6) for r in range(2, 10)]
    return [s * 10 + r - 1 for s in range(players) for r in range(1, 11)]


def hand_size(players: int) -> int:
    """Cards dealt to each seat: 8 with 2 or 6 seats, else 10."""
    return 8 if players in (2, 6) else 10


def _sub_multisets(faces: Sequence[int]) -> list[tuple[int, ...]]:
    ones = faces.count(1)
    twos = len(faces) - ones
    return [(1,) * i + (2,) * j for i in range(ones + 1) for j in range(twos + 1)]


# --------------------------------------------------------------------------------------------------- options


@dataclass(frozen=True, slots=True)
class AnemoneOptions:
    """A table's options ("Options"): ``players`` 2 to 6 (default 4), ``rounds`` (hands) 1 to 10 (default 4),
    ``random_first_leader`` (default false: seat 0 leads the first hand), ``deals`` (``"fresh"``, the default, or
    ``"rotated"``: each deal is played once from every seat in turn; ``docs/rules/enemy-anemone.md``, "Rotated
    deals")."""

    players: int = 4
    rounds: int = 4
    random_first_leader: bool = False
    deals: str = "fresh"

    def __post_init__(self) -> None:
        _check_options(self.players, self.rounds, self.random_first_leader, self.deals)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AnemoneOptions:
        """Options from a record's ``options``: missing ones take their defaults.

        Raises ``ValueError`` naming the option when one is unknown, of the wrong type or out of range.
        """
        if not isinstance(data, Mapping):
            raise ValueError("options: expected an object")
        known = {spec.name for spec in OPTION_SPECS}
        for key in data:
            if key not in known:
                raise ValueError(f"option {key!r}: unknown option (known: {', '.join(sorted(known))})")
        values = {key: data[key] for key in known if key in data}
        # checked before the fields are set too: a class compiled with mypyc checks their types on its own
        _check_options(
            values.get("players", 4),
            values.get("rounds", 4),
            values.get("random_first_leader", False),
            values.get("deals", "fresh"),
        )
        return cls(**values)

    def __reduce__(self) -> tuple[type[AnemoneOptions], tuple[int, int, bool, str]]:
        """Pickled and copied through the constructor (a frozen class compiled with mypyc cannot be filled in
        field by field, as pickle's default does)."""
        return AnemoneOptions, (self.players, self.rounds, self.random_first_leader, self.deals)

    def to_dict(self) -> dict[str, Any]:
        """Every option, JSON-ready."""
        return {
            "players": self.players,
            "rounds": self.rounds,
            "random_first_leader": self.random_first_leader,
            "deals": self.deals,
        }


def _check_options(
    players: object, rounds: object, random_first_leader: object, deals: object = "fresh"
) -> None:
    """Raise ``ValueError`` naming the first bad option ("Options")."""
    for name, value in (("players", players), ("rounds", rounds)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"option {name!r}: expected a whole number, not {value!r}")
    assert isinstance(players, int) and isinstance(rounds, int)
    if not 2 <= players <= 6:
        raise ValueError(f"option 'players': must be 2 to 6, not {players}")
    if not 1 <= rounds <= 10:
        raise ValueError(f"option 'rounds': must be 1 to 10, not {rounds}")
    if not isinstance(random_first_leader, bool):
        raise ValueError(f"option 'random_first_leader': expected true or false, not {random_first_leader!r}")
    if not isinstance(deals, str) or deals not in DEALS:
        raise ValueError(f"option 'deals': must be 'fresh' or 'rotated', not {deals!r}")


OPTION_SPECS: list[OptionSpec] = [
    OptionSpec("players", "int", 4, minimum=2, maximum=6, help="Seats at the table."),
    OptionSpec("rounds", "int", 4, minimum=1, maximum=10, help="Hands in the game."),
    OptionSpec(
        "random_first_leader", "bool", False, help="Draw the first leader at random (else seat 0 leads)."
    ),
    OptionSpec(
        "deals",
        "choice",
        "fresh",
        choices=DEALS,
        help="rotated: each deal is played once from every seat in turn.",
    ),
]


# --------------------------------------------------------------------------------------------------- anemones


def take_anemone(
    anemones: list[list[int]], supply: int, seat: int, plus_two: bool = False
) -> tuple[int, Event]:
    """``seat`` takes an anemone ("Taking an anemone"); mutates ``anemones`` and returns the new supply and the event.

    Normal taking: flip one of its +1 to +2; else a +1 from the supply; else the other seat holding the most
    anemone cards (tie: nearest clockwise from ``seat``) gives one (a +1 if it has one), arriving +1 side up;
    else nothing. With ``plus_two`` (the 6-seat end of a hand's lowest): no flip; a new card +2 side up from the
    supply, else given as above arriving +2 side up. The event is
    ``{"type": "anemone", "seat": s, "how": "flip" | "supply" | "given" | "none", "from": giver or None, "face": f}``.
    """
    supply, how, giver, face = anemone_taken(anemones, supply, seat, plus_two)
    return supply, {
        "type": "anemone",
        "seat": seat,
        "how": how,
        "from": giver if giver >= 0 else None,
        "face": face,
    }


def anemone_taken(
    anemones: list[list[int]], supply: int, seat: int, plus_two: bool = False
) -> tuple[int, str, int, int]:
    """:func:`take_anemone` without its event, for playouts: ``(new supply, how, giver or -1, face)``
    ("Taking an anemone"); mutates ``anemones``. ``how`` is ``"flip"``, ``"supply"``, ``"given"`` or ``"none"``,
    ``face`` the face the seat got (0 for none)."""
    held = anemones[seat]
    face = 2 if plus_two else 1
    if not plus_two and 1 in held:
        held.remove(1)
        held.append(2)
        return supply, "flip", -1, 2
    if supply > 0:
        held.append(face)
        return supply - 1, "supply", -1, face
    players = len(anemones)
    giver = -1
    most = 0
    for step in range(1, players):
        other = (seat + step) % players
        count = len(anemones[other])
        if count > most:
            most = count
            giver = other
    if giver < 0:
        return supply, "none", -1, 0
    given = anemones[giver]
    given.remove(1 if 1 in given else 2)
    held.append(face)
    return supply, "given", giver, face


# --------------------------------------------------------------------------------------------------- the hand


_Play = tuple[int, int, tuple[int, ...], int, int]
"""A card in the trick: (seat, card, anemone faces, value, order within the trick)."""
_Discard = tuple[int, int, int]
"""A discard during a trick: (seat, card, order within the trick)."""
_Trick = tuple[int, tuple[_Play, ...], tuple[_Discard, ...], int, int]
"""A finished trick: (leader, plays, discards, winner, lowest)."""


class AnemoneState:
    """One hand of Enemy Anemone in play (``engine.HandState``).

    Build it with :meth:`AnemoneMatch.start_hand`, :meth:`new` or, for a bot's determinization,
    :meth:`from_view`. Copy it with :meth:`copy` (cheap: lists of ints and tuples).

    Its fields (below) are public so that bots, playouts and the AI adapters read them without building a view;
    cards are engine card numbers (``suit_index * 10 + rank - 1``, :data:`CODE` writes them out), seats are
    0-based. Outside the engine, read them only, except on a copy of one's own (a search's determinization or
    playout; :meth:`with_hidden` replaces the hidden ``hands`` and ``deck``).
    """

    __slots__ = (
        "anemones",
        "deck",
        "hands",
        "history",
        "last_ms",
        "leader",
        "over",
        "players",
        "points",
        "round",
        "rounds",
        "score_piles",
        "supply",
        "trick",
        "trick_discards",
        "trick_suit_mask",
        "turn",
        "turns_per_trick",
        "turns_taken",
    )

    def __init__(self) -> None:
        """An empty state with no fields set: build one with :meth:`new`, :meth:`from_view` or
        :meth:`AnemoneMatch.start_hand`. (No ``__new__`` tricks, so that mypyc can compile the class.)"""

    players: int
    """Seats at the table, 2 to 6; seats are numbered 0 to ``players - 1``, clockwise."""
    turns_per_trick: int
    """Turns in a full trick: one per seat, or 4 with 2 seats (leader, other, leader, other; "The 2-seat
    variant")."""
    hands: list[list[int]]
    """Each seat's hand, by seat: engine card numbers (``players`` lists, in no fixed order)."""
    deck: list[int]
    """The 2-seat central deck, top first, engine card numbers (16 at the start of a hand; empty with 3 to 6
    seats)."""
    anemones: list[list[int]]
    """Each seat's anemone cards, by seat: one face value per card, 1 (+1 side up) or 2 (+2 side up), in no fixed
    order. ``supply`` plus every seat's count is always :data:`ANEMONE_CARDS` (9)."""
    supply: int
    """Anemone cards in the supply, 0 to 9."""
    score_piles: list[list[int]]
    """Each seat's score pile, by seat: engine card numbers in the order they arrived (the cards of the tricks it
    won and its own discards)."""
    points: list[int]
    """Each seat's points this hand, by seat: 1 per card in its score pile, 1 more per 3, 5 and 8 in it."""
    leader: int
    """The seat that led (or leads) the current trick."""
    turn: int
    """The seat to act (while the hand goes on; once it is over, the last trick's winner)."""
    turns_taken: int
    """Turns taken in the current trick so far (plays and discards alike), 0 to ``turns_per_trick - 1``; also the
    ``order`` the next play or discard gets."""
    trick: list[_Play]
    """The cards played into the current trick, in play order: ``(seat, card, anemone faces, value, order)`` each
    (value: the card's rank plus its anemone faces; order: its turn in the trick, 0 for the leader's)."""
    trick_discards: list[_Discard]
    """The discards made during the current trick, in order: ``(seat, card, order)`` each (not part of the
    trick; each is already in its seat's score pile)."""
    trick_suit_mask: int
    """The suits already in the current trick, as a bit mask: bit ``s`` is set when suit ``s`` (0 for ``A`` to 5
    for ``F``) has been played into it; 0 between tricks. A card's suit is ``SUIT_OF[card]``."""
    history: list[_Trick]
    """The finished tricks of this hand, oldest first: ``(leader, plays, discards, winner, lowest)`` each (plays
    and discards as in ``trick`` and ``trick_discards``; winner: the seat that took the cards; lowest: the seat
    that took an anemone)."""
    over: bool
    """True once every hand is empty (the hand is over)."""
    round: int | None
    """The 1-based number of this hand in its match, or ``None`` outside a match (shown in the view only)."""
    rounds: int | None
    """Hands in the match, or ``None`` outside a match (shown in the view only)."""
    last_ms: int
    """The ``ms`` of the last action :meth:`apply` accepted, in milliseconds since the hand began (0 before
    the first); :meth:`apply` refuses an action with an earlier ``ms``. Callers that drive :meth:`step`
    themselves keep it up to date."""

    @classmethod
    def new(
        cls,
        hands: Sequence[Sequence[int]],
        deck: Sequence[int] = (),
        leader: int = 0,
        anemones: Sequence[Sequence[int]] | None = None,
        round: int | None = None,
        rounds: int | None = None,
    ) -> AnemoneState:
        """A hand about to start: engine card numbers per seat, the 2-seat ``deck`` (top first), the ``leader``
        and each seat's anemone faces (none by default; the supply holds the rest of the 9).

        ``round``/``rounds`` (1-based hand number, hands in the match) only appear in the view. No checks: the
        match checks deals (:meth:`AnemoneMatch.check_deal`).
        """
        self = cls()
        players = len(hands)
        self.players = players
        self.turns_per_trick = 4 if players == 2 else players
        self.hands = [list(hand) for hand in hands]
        self.deck = list(deck)
        self.anemones = [list(faces) for faces in anemones] if anemones is not None else [[] for _ in hands]
        self.supply = ANEMONE_CARDS - sum(len(faces) for faces in self.anemones)
        self.score_piles = [[] for _ in hands]
        self.points = [0] * players
        self.leader = leader
        self.turn = leader
        self.turns_taken = 0
        self.trick = []
        self.trick_discards = []
        self.trick_suit_mask = 0
        self.history = []
        self.over = not any(self.hands)
        self.round = round
        self.rounds = rounds
        self.last_ms = 0
        return self

    @classmethod
    def from_view(cls, view: View, hands: Sequence[Sequence[str]], deck: Sequence[str] = ()) -> AnemoneState:
        """Rebuild a full state from a seat's ``view`` (``docs/views-anemone.md``) plus every seat's hidden cards.

        ``hands`` gives each seat's hand (the viewing seat's own included) and ``deck`` the 2-seat deck, top
        first: a determinization as a searching bot samples it. Everything else (trick, score piles, anemones,
        supply, history, leader, turn) comes from the view. Raises ``ValueError`` when ``hands`` do not match
        the view's ``hand_counts`` or ``deck`` its ``deck_count``.
        """
        players = int(view["players"])
        if len(hands) != players or [len(hand) for hand in hands] != list(view["hand_counts"]):
            raise ValueError("hands: sizes do not match the view's hand_counts")
        if len(deck) != int(view.get("deck_count", 0)):
            raise ValueError("deck: size does not match the view's deck_count")
        self = cls.new(
            [[card_number(code) for code in hand] for hand in hands],
            [card_number(code) for code in deck],
            int(view["leader"]),
            [list(faces) for faces in view["anemones"]],
            view.get("round"),
            view.get("rounds"),
        )
        self.supply = int(view["supply"])
        self.score_piles = [[card_number(code) for code in pile] for pile in view["score_piles"]]
        self.points = [sum(POINTS_OF[card] for card in pile) for pile in self.score_piles]

        def plays(entries: Sequence[Mapping[str, Any]]) -> list[_Play]:
            return [
                (
                    int(e["seat"]),
                    card_number(e["card"]),
                    tuple(e["anemones"]),
                    int(e["value"]),
                    int(e.get("order", i)),
                )
                for i, e in enumerate(entries)
            ]

        def discards(entries: Sequence[Mapping[str, Any]]) -> list[_Discard]:
            return [(int(e["seat"]), card_number(e["card"]), int(e.get("order", 0))) for e in entries]

        self.trick = plays(view["trick"])
        self.trick_discards = discards(view["trick_discards"])
        self.turns_taken = len(self.trick) + len(self.trick_discards)
        self.trick_suit_mask = 0
        for play in self.trick:
            self.trick_suit_mask |= 1 << SUIT_OF[play[1]]
        self.history = [
            (
                int(t["leader"]),
                tuple(plays(t["plays"])),
                tuple(discards(t["discards"])),
                int(t["winner"]),
                int(t["lowest"]),
            )
            for t in view["tricks"]
        ]
        self.over = bool(view["over"])
        if view.get("turn") is not None:
            self.turn = int(view["turn"])
        return self

    def copy(self) -> AnemoneState:
        """An independent copy (cheap enough for thousands of playouts per move)."""
        return self.with_hidden([hand[:] for hand in self.hands], self.deck[:])

    def with_hidden(self, hands: list[list[int]], deck: list[int]) -> AnemoneState:
        """An independent copy whose hands and draw deck are ``hands`` and ``deck`` (card codes, one list per
        seat; used as they are, not copied): a determinization's deal for search bots. Everything else (anemones,
        piles, points, the trick, history) is copied from this state."""
        other = AnemoneState()
        other.players = self.players
        other.turns_per_trick = self.turns_per_trick
        other.hands = hands
        other.deck = deck
        other.anemones = [faces[:] for faces in self.anemones]
        other.supply = self.supply
        other.score_piles = [pile[:] for pile in self.score_piles]
        other.points = self.points[:]
        other.leader = self.leader
        other.turn = self.turn
        other.turns_taken = self.turns_taken
        other.trick = self.trick[:]
        other.trick_discards = self.trick_discards[:]
        other.trick_suit_mask = self.trick_suit_mask
        other.history = self.history[:]
        other.over = self.over
        other.round = self.round
        other.rounds = self.rounds
        other.last_ms = self.last_ms
        return other

    # ------------------------------------------------------------------ fast internal API (bots, playouts)

    def playable_cards(self) -> list[int]:
        """Cards the seat to act may play into the trick (suits not yet in it); empty means it must discard."""
        mask = self.trick_suit_mask
        suit_bit = SUIT_BIT
        return [card for card in self.hands[self.turn] if not mask & suit_bit[card]]

    def moves(self) -> list[tuple[bool, int, tuple[int, ...]]]:
        """Every legal move of the seat to act as ``(is_play, card, anemone faces)``; empty once over."""
        if self.over:
            return []
        playable = self.playable_cards()
        if not playable:
            return [(False, card, ()) for card in self.hands[self.turn]]
        subs = _sub_multisets(self.anemones[self.turn])
        return [(True, card, sub) for card in playable for sub in subs]

    def step(
        self, is_play: bool, card: int, anemones: tuple[int, ...] = (), events: list[Event] | None = None
    ) -> None:
        """Apply a move of the seat to act, unchecked (the caller took it from :meth:`moves`).

        Events are appended to ``events`` when given (``apply`` does; playouts pass ``None``).
        """
        seat = self.turn
        self.hands[seat].remove(card)
        order = self.turns_taken
        if is_play:
            value = RANK_OF[card]
            if anemones:
                held = self.anemones[seat]
                for face in anemones:
                    held.remove(face)
                    value += face
                self.supply += len(anemones)
            self.trick.append((seat, card, anemones, value, order))
            self.trick_suit_mask |= SUIT_BIT[card]
            if events is not None:
                events.append(
                    {
                        "type": "played",
                        "seat": seat,
                        "card": CODE[card],
                        "anemones": list(anemones),
                        "value": value,
                    }
                )
        else:
            self.trick_discards.append((seat, card, order))
            self.score_piles[seat].append(card)
            self.points[seat] += POINTS_OF[card]
            if events is not None:
                events.append({"type": "discarded", "seat": seat, "card": CODE[card]})
        self.turns_taken = order + 1
        if self.turns_taken < self.turns_per_trick:
            self.turn = (self.leader + self.turns_taken) % self.players
            return
        self._finish_trick(events)

    def _finish_trick(self, events: list[Event] | None) -> None:
        """The end of a full trick ("A trick", steps 4-5; "The 2-seat variant"): the highest value takes the
        cards and the lowest takes an anemone (ties: the later-played card), with 2 seats each draws two (the
        winner first); the winner leads next. Events are appended to ``events`` when given."""
        trick = self.trick
        winner, _card, _faces, high, _order = trick[0]
        lowest = winner
        low = high
        gained = 0
        points_of = POINTS_OF
        for seat, card, _faces, value, _order in trick:
            if value >= high:
                high = value
                winner = seat
            if value <= low:
                low = value
                lowest = seat
            gained += points_of[card]
        pile = [play[1] for play in trick]
        self.score_piles[winner].extend(pile)
        self.points[winner] += gained
        self.history.append((self.leader, tuple(trick), tuple(self.trick_discards), winner, lowest))
        if events is not None:
            events.append(
                {
                    "type": "trick_won",
                    "winner": winner,
                    "lowest": lowest,
                    "cards": [CODE[c] for c in pile],
                }
            )
        if events is None:
            self.supply = anemone_taken(self.anemones, self.supply, lowest)[0]
        else:
            self.supply, event = take_anemone(self.anemones, self.supply, lowest)
            events.append(event)
        deck = self.deck
        if deck:
            for seat in (winner, 1 - winner):
                drawn = deck[:2]
                del deck[:2]
                self.hands[seat].extend(drawn)
                if events is not None:
                    events.append(
                        {"type": "drew", "seat": seat, "count": len(drawn), "cards": [CODE[c] for c in drawn]}
                    )
        self.trick = []
        self.trick_discards = []
        self.trick_suit_mask = 0
        self.turns_taken = 0
        self.leader = winner
        self.turn = winner
        if not any(self.hands):
            self.over = True
            if events is not None:
                events.append({"type": "hand_over", "scores": self.points[:]})

    def playout(self, rng: random.Random, anemone_chance: float = 0.1) -> None:
        """Play the hand to its end at random: a uniformly random card; anemones, when held, with probability
        ``anemone_chance`` (a random sub-multiset). Used by benchmarks and searching bots.

        The same moves as :meth:`step` makes, without events, with the trick's turns inlined (the trick's end is
        :meth:`_finish_trick`, as for :meth:`step`): every field is brought up to date, history included."""
        if self.over:
            return
        hands = self.hands
        anemones = self.anemones
        score_piles = self.score_piles
        points = self.points
        rand = rng.random
        suit_bit = SUIT_BIT
        rank_of = RANK_OF
        players = self.players
        turns_per_trick = self.turns_per_trick
        leader = self.leader
        turn = self.turn
        taken = self.turns_taken
        mask = self.trick_suit_mask
        trick = self.trick
        discards = self.trick_discards
        supply = self.supply
        while True:
            hand = hands[turn]
            # the k-th playable card in hand order, k uniformly random: counted, then found, without building the
            # list of playable cards (no allocation per turn: what makes the loop fast once compiled with mypyc)
            playable = 0
            if mask:
                for card in hand:
                    if not mask & suit_bit[card]:
                        playable += 1
            else:
                playable = len(hand)
            if playable:
                k = int(rand() * playable)
                if mask:
                    at = 0
                    while True:
                        card = hand[at]
                        if not mask & suit_bit[card]:
                            if not k:
                                break
                            k -= 1
                        at += 1
                    del hand[at]
                else:
                    card = hand.pop(k)
                value = rank_of[card]
                held = anemones[turn]
                if held and rand() < anemone_chance:
                    # a sub-multiset in _sub_multisets' order: i +1s and j +2s at index i * (twos + 1) + j
                    ones = held.count(1)
                    twos = len(held) - ones
                    i, j = divmod(int(rand() * ((ones + 1) * (twos + 1))), twos + 1)
                    faces = (1,) * i + (2,) * j
                    for face in faces:
                        held.remove(face)
                    value += i + 2 * j
                    supply += i + j
                else:
                    faces = ()
                trick.append((turn, card, faces, value, taken))
                mask |= suit_bit[card]
            else:
                card = hand[int(rand() * len(hand))]
                hand.remove(card)
                discards.append((turn, card, taken))
                score_piles[turn].append(card)
                points[turn] += POINTS_OF[card]
            taken += 1
            if taken < turns_per_trick:
                turn = (leader + taken) % players
                continue
            self.supply = supply
            self.turns_taken = taken
            self._finish_trick(None)
            if self.over:
                return
            supply = self.supply
            trick = self.trick
            discards = self.trick_discards
            leader = turn = self.leader
            taken = 0
            mask = 0

    # ------------------------------------------------------------------ HandState

    @property
    def is_over(self) -> bool:
        """True once every hand is empty."""
        return self.over

    @property
    def ended(self) -> str | None:
        """``"complete"`` once the hand is over, else ``None``."""
        return "complete" if self.over else None

    def scores(self) -> list[int]:
        """Points per seat so far: 1 per card in the score pile, 1 more per 3, 5 and 8 in it."""
        return self.points[:]

    def to_act(self) -> list[int]:
        """``[seat]`` whose turn it is; empty once over."""
        return [] if self.over else [self.turn]

    def clock_action(self) -> tuple[int, Action] | None:
        """Always ``None``: nothing in Enemy Anemone happens by the clock."""
        return None

    def legal_actions(self, seat: object) -> list[Action]:
        """Every action of ``seat`` now: each playable card with each sub-multiset of its anemone faces
        (``{"type": "play", "card": "7C", "anemones": [1, 2]}``, faces sorted), or, when it holds no card of a
        suit not yet in the trick, ``{"type": "discard", "card": ...}`` for each card. Empty off turn (and for anything
        that is no seat: ``seat`` is typed ``object``)."""
        if self.over or seat != self.turn:
            return []
        out: list[Action] = []
        for is_play, card, sub in self.moves():
            if is_play:
                out.append({"type": "play", "card": CODE[card], "anemones": list(sub)})
            else:
                out.append({"type": "discard", "card": CODE[card]})
        return out

    def check(self, seat: object, action: object) -> tuple[bool, int, tuple[int, ...]]:
        """Check ``action`` for ``seat`` without applying it; returns the move ``(is_play, card, faces)``.

        Raises :class:`IllegalAction` with the reason ("A trick" steps 1-3, the 2-seat variant), for arguments of
        any type too (typed ``object``: checked here, not by a compiled build's ``TypeError``).
        """
        if self.over:
            raise IllegalAction("the hand is over", code="hand.over")
        if not isinstance(action, Mapping):
            raise IllegalAction("an action is an object with a type", code="action.malformed")
        kind = action.get("type")
        if kind not in ("play", "discard"):
            raise IllegalAction(
                f"unknown action type {kind!r} (expected 'play' or 'discard')",
                code="action.unknown_type",
                params={"type": _plain(kind)},
            )
        extra = set(action) - {"type", "card", "anemones"}
        if extra:
            field = sorted(extra)[0]
            raise IllegalAction(
                f"unknown field {field!r} in a {kind} action",
                code="action.unexpected_field",
                params={"field": _plain(field), "type": kind},
            )
        if seat is None:
            raise IllegalAction("the table takes no actions in Enemy Anemone", code="anemone.table_action")
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < self.players:
            raise IllegalAction(
                f"no seat {seat!r}",
                code="action.no_seat",
                params={"seat": _plain(seat), "seats": self.players},
            )
        if seat != self.turn:
            raise IllegalAction(
                f"not seat {seat}'s turn (seat {self.turn} is to act)",
                code="anemone.not_your_turn",
                params={"seat": seat, "to_act": self.turn},
            )
        code = action.get("card")
        if not isinstance(code, str):
            raise IllegalAction(
                f"a {kind} action needs a card code", code="anemone.needs_card", params={"type": kind}
            )
        try:
            card = card_number(code)
        except ValueError as error:
            raise IllegalAction(str(error), code="action.bad_card", params={"value": code}) from None
        faces_raw = action.get("anemones", [])
        if not isinstance(faces_raw, list) or any(
            isinstance(f, bool) or not isinstance(f, int) or f not in (1, 2) for f in faces_raw
        ):
            raise IllegalAction("anemones must be a list of faces, each 1 or 2", code="anemone.bad_anemones")
        faces = tuple(sorted(faces_raw))
        hand = self.hands[seat]
        if card not in hand:
            raise IllegalAction(
                f"seat {seat} does not hold {CODE[card]}",
                code="anemone.card_not_held",
                params={"seat": seat, "card": CODE[card]},
            )
        playable = self.playable_cards()
        if kind == "discard":
            if faces:
                raise IllegalAction("a discard takes no anemones", code="anemone.discard_with_anemones")
            if playable:
                raise IllegalAction(
                    f"seat {seat} cannot discard: it can play a new suit",
                    code="anemone.discard_can_play",
                    params={"seat": seat},
                )
            return False, card, ()
        if card not in playable:
            suit = CREATURE_SUITS[SUIT_OF[card]]
            if playable:
                raise IllegalAction(
                    f"suit {suit} is already in the trick; play another suit",
                    code="anemone.suit_in_trick",
                    params={"card": CODE[card], "suit": suit},
                )
            raise IllegalAction(
                f"suit {suit} is already in the trick; seat {seat} must discard",
                code="anemone.must_discard",
                params={"card": CODE[card], "suit": suit, "seat": seat},
            )
        held = list(self.anemones[seat])
        for face in faces:
            if face not in held:
                raise IllegalAction(
                    f"seat {seat} does not hold the anemones {list(faces)} (it holds {sorted(self.anemones[seat])})",
                    code="anemone.anemones_not_held",
                    params={
                        "seat": seat,
                        "wanted": ", ".join(str(f) for f in faces),
                        "held": ", ".join(str(f) for f in sorted(self.anemones[seat])),
                    },
                )
            held.remove(face)
        return True, card, faces

    def apply(self, seat: object, action: object, ms: object = 0) -> list[Event]:
        """Apply ``seat``'s action at ``ms`` and return its events (``played``, ``discarded``, ``trick_won``,
        ``anemone``, ``drew``, ``hand_over``; ``docs/views-anemone.md``).

        Raises :class:`IllegalAction` and changes nothing when the action is malformed, out of turn, names a card
        or anemones the seat does not hold, breaks the suit rule, or ``ms`` went backwards (arguments of any type:
        typed ``object``, checked here).
        """
        if isinstance(ms, bool) or not isinstance(ms, int):
            raise IllegalAction(
                f"ms must be a whole number, not {ms!r}", code="action.bad_time", params={"ms": _plain(ms)}
            )
        if ms < self.last_ms:
            raise IllegalAction(
                f"time went backwards ({ms} ms after {self.last_ms} ms)",
                code="action.time_backwards",
                params={"ms": ms, "last_ms": self.last_ms},
            )
        is_play, card, faces = self.check(seat, action)
        events: list[Event] = []
        self.step(is_play, card, faces, events)
        self.last_ms = ms
        return events

    def events_for(self, events: Sequence[Event], seat: int | None) -> list[Event]:
        """``events`` as ``seat`` sees them: a ``drew`` event keeps its ``cards`` only for the seat that drew."""
        out: list[Event] = []
        for event in events:
            if event.get("type") == "drew" and event.get("seat") != seat:
                out.append({"type": "drew", "seat": event["seat"], "count": event["count"]})
            else:
                out.append(dict(event))
        return out

    def view(self, seat: int | None) -> View:
        """What ``seat`` may see (``None``: a spectator); the shape is ``docs/views-anemone.md``."""
        codes = CODE
        mask = self.trick_suit_mask

        def play_dict(p: _Play) -> dict[str, Any]:
            return {"seat": p[0], "card": codes[p[1]], "anemones": list(p[2]), "value": p[3], "order": p[4]}

        def discard_dict(d: _Discard) -> dict[str, Any]:
            return {"seat": d[0], "card": codes[d[1]], "order": d[2]}

        out: View = {"game": "anemone", "seat": seat, "players": self.players}
        if self.round is not None:
            out["round"] = self.round
        if self.rounds is not None:
            out["rounds"] = self.rounds
        if seat is not None and 0 <= seat < self.players:
            out["hand"] = [codes[c] for c in sorted(self.hands[seat])]
        out["hand_counts"] = [len(hand) for hand in self.hands]
        out["deck_count"] = len(self.deck)
        out["leader"] = self.leader
        out["turn"] = None if self.over else self.turn
        out["trick"] = [play_dict(p) for p in self.trick]
        out["trick_discards"] = [discard_dict(d) for d in self.trick_discards]
        out["suits_in_trick"] = [CREATURE_SUITS[s] for s in range(6) if (mask >> s) & 1]
        out["anemones"] = [sorted(faces) for faces in self.anemones]
        out["supply"] = self.supply
        out["score_piles"] = [[codes[c] for c in pile] for pile in self.score_piles]
        out["points"] = self.points[:]
        out["tricks"] = [
            {
                "leader": t[0],
                "plays": [play_dict(p) for p in t[1]],
                "discards": [discard_dict(d) for d in t[2]],
                "winner": t[3],
                "lowest": t[4],
            }
            for t in self.history
        ]
        my_turn = not self.over and seat == self.turn
        playable = sorted(self.playable_cards()) if my_turn else []
        out["playable"] = [codes[c] for c in playable]
        out["must_discard"] = my_turn and not playable
        out["over"] = self.over
        out["ended"] = self.ended
        if self.over:
            out["hands"] = [[codes[c] for c in sorted(hand)] for hand in self.hands]
            out["deck"] = [codes[c] for c in self.deck]
        return out


# --------------------------------------------------------------------------------------------------- the match


class AnemoneMatch:
    """A match of ``options.rounds`` hands (``engine.Match``): deals, scores, anemones kept between hands,
    the next leader and the winners ("End of a hand", "End of the game").

    ``totals`` are running totals in points; ``results`` one :class:`~cardtable.engine.HandResult` per finished
    hand, whose ``extra`` holds ``"anemone_events"`` (the end-of-hand anemones) and ``"next_leader"``.
    """

    game = "anemone"

    def __init__(self, options: AnemoneOptions | None = None) -> None:
        self.options = options if options is not None else AnemoneOptions()
        self.players = self.options.players
        self.totals: list[int] = [0] * self.players
        self.results: list[HandResult] = []
        self._hand: AnemoneState | None = None
        self._anem: list[list[int]] = [[] for _ in range(self.players)]
        self._first_leaders: list[int] = []
        self._next_leader = 0
        self._cycle_hands: list[list[int]] = []
        self._cycle_deck: list[int] = []

    def copy(self) -> AnemoneMatch:
        """An independent copy of the match: the hand in play copied with :meth:`AnemoneState.copy`, ``totals``,
        ``results`` and the anemones kept between hands in new lists (the :class:`~cardtable.engine.HandResult`
        entries shared: they are never changed). The ``options`` are shared (frozen)."""
        other = AnemoneMatch(self.options)
        other.options = self.options
        other.players = self.players
        other.totals = self.totals[:]
        other.results = self.results[:]
        other._hand = self._hand.copy() if self._hand is not None else None
        other._anem = [faces[:] for faces in self._anem]
        other._first_leaders = self._first_leaders[:]
        other._next_leader = self._next_leader
        other._cycle_hands = [hand[:] for hand in self._cycle_hands]
        other._cycle_deck = self._cycle_deck[:]
        return other

    @property
    def hand(self) -> AnemoneState | None:
        """The hand in play, or the last one once finished; ``None`` before the first deal."""
        return self._hand

    @property
    def anemones(self) -> list[list[int]]:
        """Each seat's anemone faces, sorted (live during a hand)."""
        if self._hand is not None and len(self.results) < len(self._first_leaders):
            return [sorted(faces) for faces in self._hand.anemones]
        return [sorted(faces) for faces in self._anem]

    @property
    def round(self) -> int:
        """Hands started so far (the 1-based number of the hand in play)."""
        return len(self._first_leaders)

    @property
    def is_over(self) -> bool:
        """True once ``rounds`` hands have been finished."""
        return len(self.results) >= self.options.rounds

    def _in_hand(self) -> bool:
        return len(self._first_leaders) > len(self.results)

    def deal_cycle(self, hand: int) -> int | None:
        """With ``deals: "rotated"``, the deal (cycle of ``players`` hands, from 0) that hand ``hand`` (from 0)
        plays; ``None`` with fresh deals ("Rotated deals").

        >>> match = AnemoneMatch(AnemoneOptions(players=3, deals="rotated"))
        >>> [match.deal_cycle(h) for h in range(7)]
        [0, 0, 0, 1, 1, 1, 2]
        """
        return hand // self.players if self.options.deals == "rotated" else None

    def _rotation(self) -> tuple[int, list[list[int]]] | None:
        """For a rotated hand after a cycle's first, ``(k, hands)``: the cycle's first hands moved ``k`` seats on
        (seat ``s``'s hand goes to seat ``(s + k) % players``); ``None`` when the next hand is dealt fresh."""
        k = len(self._first_leaders) % self.players
        if self.options.deals != "rotated" or k == 0 or not self._cycle_hands:
            return None
        n = self.players
        return k, [self._cycle_hands[(seat - k) % n][:] for seat in range(n)]

    def check_deal(self, deal: Mapping[str, Any]) -> None:
        """Raise ``ValueError`` naming the field when ``deal`` cannot start this match's next hand.

        ``{"seed": N}`` (a whole number), or ``{"hands": [[...], ...], "deck": [...], "leader": SEAT}``: exactly
        the game's cards ("Set-up"), each once, the right number per seat; ``deck`` only (and always) with 2
        seats; ``leader`` only in the first hand and only with ``random_first_leader`` (and then required). With
        ``deals: "rotated"``, a hand after a cycle's first must be that hand's deal moved on ("Rotated deals"):
        each seat's cards (in any order) those of the seat ``k`` seats before it, the 2-seat ``deck`` the same, in
        the same order (a seed is then ignored: :meth:`deal_cards`).
        """
        if not isinstance(deal, Mapping):
            raise ValueError("deal: expected an object")
        if "seed" in deal:
            extra = set(deal) - {"seed"}
            if extra:
                raise ValueError(f"deal.{sorted(extra)[0]}: not allowed beside a seed")
            seed = deal["seed"]
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise ValueError(f"deal.seed: expected a whole number, not {seed!r}")
            return
        players = self.players
        extra = set(deal) - {"hands", "deck", "leader"}
        if extra:
            raise ValueError(f"deal.{sorted(extra)[0]}: unknown field")
        hands = deal.get("hands")
        if not isinstance(hands, list):
            raise ValueError("deal.hands: missing or not a list")
        if len(hands) != players:
            raise ValueError(f"deal.hands: {len(hands)} hands for {players} seats")
        size = hand_size(players)
        seen: set[int] = set()
        allowed = set(game_cards(players))

        def take(code: Any, where: str) -> None:
            try:
                card = card_number(code)
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
            if card not in allowed:
                raise ValueError(f"{where}: {CODE[card]} is not used with {players} seats")
            if card in seen:
                raise ValueError(f"{where}: {CODE[card]} appears twice")
            seen.add(card)

        for i, hand in enumerate(hands):
            if not isinstance(hand, list):
                raise ValueError(f"deal.hands[{i}]: not a list")
            if len(hand) != size:
                raise ValueError(f"deal.hands[{i}]: {len(hand)} cards, expected {size}")
            for j, code in enumerate(hand):
                take(code, f"deal.hands[{i}][{j}]")
        if players == 2:
            deck = deal.get("deck")
            if not isinstance(deck, list):
                raise ValueError("deal.deck: the 2-seat game needs the central deck (a list)")
            if len(deck) != 16:
                raise ValueError(f"deal.deck: {len(deck)} cards, expected 16")
            for j, code in enumerate(deck):
                take(code, f"deal.deck[{j}]")
        elif "deck" in deal:
            raise ValueError("deal.deck: only the 2-seat game has a central deck")
        missing = allowed - seen
        if missing:
            raise ValueError(f"deal.hands: missing cards {', '.join(CODE[c] for c in sorted(missing))}")
        first = not self._first_leaders
        if "leader" in deal:
            if not (first and self.options.random_first_leader):
                raise ValueError("deal.leader: only in hand 1 with random_first_leader")
            leader = deal["leader"]
            if isinstance(leader, bool) or not isinstance(leader, int) or not 0 <= leader < players:
                raise ValueError(f"deal.leader: expected a seat 0 to {players - 1}, not {leader!r}")
        elif first and self.options.random_first_leader:
            raise ValueError("deal.leader: required with random_first_leader")
        rotation = self._rotation()
        if rotation is not None:
            k, expected = rotation
            number = len(self._first_leaders)
            for seat in range(players):
                if sorted(card_number(code) for code in hands[seat]) != sorted(expected[seat]):
                    raise ValueError(
                        f"deal.hands[{seat}]: hand {number + 1} of rotated deals must give seat {seat} the cards "
                        f"seat {(seat - k) % players} held in hand {number - k + 1} (each hand moves the deal on one seat)"
                    )
            if players == 2 and [card_number(code) for code in deal["deck"]] != self._cycle_deck:
                raise ValueError(
                    f"deal.deck: hand {number + 1} of rotated deals must have hand {number - k + 1}'s deck"
                )

    def deal_cards(self, seed: int) -> dict[str, Any]:
        """The next hand's deal from ``seed``, cards written out.

        Stable: the game's cards in pack order (:func:`game_cards`: suit by suit, rank up) are shuffled by
        ``random.Random(seed).shuffle``; seat 0 gets the first ``hand_size`` cards, seat 1 the next, and so on;
        with 2 seats the remaining 16 are the deck, top first. For the first hand with ``random_first_leader``
        the same generator then draws ``leader = rng.randrange(players)``. With ``deals: "rotated"``, a hand after
        a cycle's first is that hand's deal moved on (see :meth:`check_deal`) and ``seed`` is not used.
        """
        players = self.players
        rotation = self._rotation()
        if rotation is not None:
            rotated: dict[str, Any] = {"hands": [[CODE[card] for card in hand] for hand in rotation[1]]}
            if players == 2:
                rotated["deck"] = [CODE[card] for card in self._cycle_deck]
            return rotated
        rng = random.Random(seed)
        cards = [CODE[c] for c in game_cards(players)]
        rng.shuffle(cards)
        size = hand_size(players)
        deal: dict[str, Any] = {"hands": [cards[i * size : (i + 1) * size] for i in range(players)]}
        if players == 2:
            deal["deck"] = cards[players * size :]
        if not self._first_leaders and self.options.random_first_leader:
            deal["leader"] = rng.randrange(players)
        return deal

    def start_hand(self, deal: Mapping[str, Any]) -> AnemoneState:
        """Begin the next hand from ``deal`` (see :meth:`check_deal`); ``ValueError`` if the deal is bad, the
        match is over or the hand in play has not been finished."""
        if self.is_over:
            raise ValueError("the match is over")
        if self._in_hand():
            raise ValueError("the hand in play is not finished")
        self.check_deal(deal)
        if "seed" in deal:
            deal = self.deal_cards(int(deal["seed"]))
        leader = self._next_leader
        if not self._first_leaders and self.options.random_first_leader:
            leader = int(deal["leader"])
        hands = [[card_number(code) for code in hand] for hand in deal["hands"]]
        deck = [card_number(code) for code in deal.get("deck", [])]
        if self.options.deals == "rotated" and len(self._first_leaders) % self.players == 0:
            self._cycle_hands = [hand[:] for hand in hands]
            self._cycle_deck = deck[:]
        self._first_leaders.append(leader)
        self._hand = AnemoneState.new(
            hands, deck, leader, self._anem, round=len(self._first_leaders), rounds=self.options.rounds
        )
        return self._hand

    def finish_hand(self) -> HandResult:
        """Score the ended hand into ``totals``; unless it was the last hand, the lowest running total takes an
        anemone (6 seats: lowest a +2, second lowest a +1; ties each in seat order from 0); the highest total
        leads the next hand (tie: first tied seat clockwise from this hand's first leader).

        Raises ``ValueError`` when no hand has ended since the last ``finish_hand``.
        """
        state = self._hand
        if state is None or not self._in_hand() or not state.over:
            raise ValueError("no hand has ended")
        scores = state.scores()
        self.totals = [t + s for t, s in zip(self.totals, scores, strict=True)]
        anem = [list(faces) for faces in state.anemones]
        supply = state.supply
        events: list[Event] = []
        last = len(self.results) + 1 >= self.options.rounds
        if not last:
            distinct = sorted(set(self.totals))
            lowest = [s for s in range(self.players) if self.totals[s] == distinct[0]]
            if self.players == 6:
                for seat in lowest:
                    supply, event = take_anemone(anem, supply, seat, plus_two=True)
                    events.append(event)
                if len(distinct) > 1:
                    for seat in (s for s in range(self.players) if self.totals[s] == distinct[1]):
                        supply, event = take_anemone(anem, supply, seat)
                        events.append(event)
            else:
                for seat in lowest:
                    supply, event = take_anemone(anem, supply, seat)
                    events.append(event)
        self._anem = anem
        first = self._first_leaders[-1]
        best = max(self.totals)
        self._next_leader = next(
            (first + i) % self.players
            for i in range(self.players)
            if self.totals[(first + i) % self.players] == best
        )
        result = HandResult(
            scores,
            "complete",
            {"anemone_events": events, "next_leader": self._next_leader, "anemones": self.anemones},
        )
        self.results.append(result)
        return result

    def winners(self) -> list[int] | None:
        """Seats with the highest total (tie: the most anemone cards; still tied: all of them), or ``None``
        while the match goes on."""
        if not self.is_over:
            return None
        best = max(self.totals)
        top = [s for s in range(self.players) if self.totals[s] == best]
        most = max(len(self._anem[s]) for s in top)
        return [s for s in top if len(self._anem[s]) == most]


def new_match(options: Mapping[str, Any]) -> AnemoneMatch:
    """A fresh match from a record's ``options``; ``ValueError`` names a bad option."""
    return AnemoneMatch(AnemoneOptions.from_dict(options))


register(GameInfo(name="anemone", title="Enemy Anemone", option_specs=OPTION_SPECS, new_match=new_match))
