"""Cards and packs: the standard 52-card pack with jokers (Nerts) and the creature cards of Enemy Anemone.

Card codes follow ``docs/records.md`` ("Cards"):

- standard cards are rank ``A 2 3 4 5 6 7 8 9 10 J Q K`` then suit ``S H D C``; jokers are ``JK1`` and ``JK2``.
  Parsing accepts lower case and ``T`` for ten; writing always uses the forms above.
- Enemy Anemone cards are rank ``1`` to ``10`` then suit ``A`` to ``F``.

>>> Card.parse("th")
Card(rank=10, suit='H', joker=0)
>>> str(Card.parse("qd")), Card.parse("QD").colour
('QD', 'red')
>>> str(CreatureCard.parse("10f"))
'10F'
>>> Card.parse("1S")
Traceback (most recent call last):
...
ValueError: bad card code '1S': rank must be one of A 2 3 4 5 6 7 8 9 10 J Q K
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

RANK_CODES: tuple[str, ...] = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
"""Rank codes by rank number minus one: ``RANK_CODES[0]`` is the ace (rank 1), ``RANK_CODES[12]`` the king (13)."""

SUITS: tuple[str, ...] = ("S", "H", "D", "C")
"""Standard suits in pack order: spades, hearts, diamonds, clubs."""

RED_SUITS = frozenset({"H", "D"})

Colour = Literal["red", "black"]

CREATURE_SUITS: tuple[str, ...] = ("A", "B", "C", "D", "E", "F")
"""Enemy Anemone suits, in letter order (``docs/rules/enemy-anemone.md``, "Components")."""


def _parse_rank(text: str, code: str) -> int:
    if text == "T":
        return 10
    try:
        return RANK_CODES.index(text) + 1
    except ValueError:
        raise ValueError(f"bad card code {code!r}: rank must be one of {' '.join(RANK_CODES)}") from None


@dataclass(frozen=True, slots=True, order=True)
class Card:
    """A standard playing card or a joker.

    ``rank`` is 1 (ace) to 13 (king), or 0 for a joker; ``suit`` is one of ``S H D C``, or ``""`` for a joker;
    ``joker`` is 0 for a standard card and 1 or 2 for ``JK1`` / ``JK2``.
    """

    rank: int
    suit: str
    joker: int = 0

    @classmethod
    def parse(cls, code: str) -> Card:
        """Read a card code such as ``"AS"``, ``"10h"``, ``"Td"`` or ``"JK1"``.

        Raises ``ValueError`` naming the code when it is not a card.
        """
        if not isinstance(code, str):
            raise ValueError(f"bad card code {code!r}: a card code is a string")
        text = code.strip().upper()
        if text in ("JK1", "JK2"):
            return cls(0, "", int(text[2]))
        if len(text) < 2:
            raise ValueError(f"bad card code {code!r}: too short")
        suit = text[-1]
        if suit not in SUITS:
            raise ValueError(f"bad card code {code!r}: suit must be one of {' '.join(SUITS)}")
        return cls(_parse_rank(text[:-1], code), suit)

    @property
    def is_joker(self) -> bool:
        """True for ``JK1`` and ``JK2``."""
        return self.joker != 0

    @property
    def colour(self) -> Colour | None:
        """``"red"`` for hearts and diamonds, ``"black"`` for spades and clubs, ``None`` for a joker."""
        if self.is_joker:
            return None
        return "red" if self.suit in RED_SUITS else "black"

    @property
    def code(self) -> str:
        """The canonical code: ``"AS"``, ``"10H"``, ``"JK2"``."""
        if self.is_joker:
            return f"JK{self.joker}"
        return RANK_CODES[self.rank - 1] + self.suit

    def __str__(self) -> str:
        return self.code


def standard_pack(jokers: bool = False) -> list[Card]:
    """A new pack in a fixed order: ``AS 2S ... KS AH ... KC`` then, with ``jokers``, ``JK1 JK2``.

    52 cards, or 54 with jokers.
    """
    cards = [Card(rank, suit) for suit in SUITS for rank in range(1, 14)]
    if jokers:
        cards += [Card(0, "", 1), Card(0, "", 2)]
    return cards


@dataclass(frozen=True, slots=True, order=True)
class CreatureCard:
    """An Enemy Anemone creature card: ``rank`` 1 to 10, ``suit`` one of ``A`` to ``F``."""

    rank: int
    suit: str

    @classmethod
    def parse(cls, code: str) -> CreatureCard:
        """Read a code such as ``"7C"`` or ``"10f"``; raises ``ValueError`` naming a bad code."""
        if not isinstance(code, str):
            raise ValueError(f"bad card code {code!r}: a card code is a string")
        text = code.strip().upper()
        if len(text) < 2 or text[-1] not in CREATURE_SUITS:
            raise ValueError(f"bad card code {code!r}: suit must be one of {' '.join(CREATURE_SUITS)}")
        rank_text = text[:-1]
        if not rank_text.isdigit() or not 1 <= int(rank_text) <= 10:
            raise ValueError(f"bad card code {code!r}: rank must be 1 to 10")
        return cls(int(rank_text), text[-1])

    @property
    def code(self) -> str:
        """The canonical code, rank then suit: ``"7C"``."""
        return f"{self.rank}{self.suit}"

    def __str__(self) -> str:
        return self.code


def creature_deck(suits: int, ranks: Iterable[int] = range(1, 11)) -> list[CreatureCard]:
    """The creature cards of the first ``suits`` suits (``A`` onward) in the given ranks, suit by suit."""
    if not 1 <= suits <= len(CREATURE_SUITS):
        raise ValueError(f"suits must be 1 to {len(CREATURE_SUITS)}, not {suits}")
    rank_list = list(ranks)
    return [CreatureCard(rank, suit) for suit in CREATURE_SUITS[:suits] for rank in rank_list]


def shuffled(cards: Sequence[object], seed: int) -> list[str]:
    """The codes of ``cards`` shuffled by ``random.Random(seed).shuffle``: the documented, stable seed shuffle.

    A record's ``{"seed": N}`` deal means: start from the game's fixed pack order and apply this shuffle
    (each game's module says which packs, in which order, share one ``Random(seed)``).
    """
    codes = [str(card) for card in cards]
    random.Random(seed).shuffle(codes)
    return codes


def parse_cards(codes: Iterable[str], field: str) -> list[Card]:
    """Parse a list of standard card codes; a ``ValueError`` names ``field`` and the bad code."""
    try:
        return [Card.parse(code) for code in codes]
    except ValueError as error:
        raise ValueError(f"{field}: {error}") from None
