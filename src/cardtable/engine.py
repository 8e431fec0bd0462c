"""The engine shape both games share (``docs/architecture.md``, "The engine's shape").

Every game module (``cardtable.games.nerts``, ``cardtable.games.anemone``) provides:

- an options type with ``from_dict`` (a clear ``ValueError`` naming a bad option) and ``to_dict``, and
  ``OPTION_SPECS``, the list of :class:`OptionSpec` the lobby shows;
- a :class:`Match` class: a match (hands until its end) as a fold over a record's hands;
- a hand state implementing :class:`HandState`.

Actions and events are plain JSON-ready dicts, exactly as written in ``cardtable/1`` records
(``docs/records.md``), so the server, the bots, the simulator and the records all speak one language.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Action = dict[str, Any]
"""An action as in a record, e.g. ``{"type": "move", "from": "work:1", "to": "foundation:new"}``."""

Event = dict[str, Any]
"""Something that happened, e.g. ``{"type": "moved", "seat": 0, ...}``; ``type`` is always present."""

View = dict[str, Any]
"""Everything one seat (or a spectator, seat ``None``) may see: JSON-ready, never a hidden card."""


class IllegalAction(ValueError):
    """An action that cannot be applied now; ``str()`` is a reason a person can read (English).

    Raised by :meth:`HandState.apply`, which then leaves the state exactly as it was. ``code`` is a stable,
    lower-case dotted name of the refusal (``"nerts.work_pile_order"``) registered with its English template in
    :mod:`cardtable.refusals`; ``params`` fills the template's ``{placeholders}`` (``docs/protocol.md``, "Refusal
    codes"): card-valued keys end in ``card`` and hold card codes (``"KD"``), pile-valued keys end in ``pile`` and
    hold ``{"kind": ..., "number": N | None}``, suit-valued keys end in ``suit``; others are numbers or strings.

    >>> error = IllegalAction("KD does not go on 5D", code="nerts.work_pile_order", params={"card": "KD"})
    >>> str(error), error.code, error.params
    ('KD does not go on 5D', 'nerts.work_pile_order', {'card': 'KD'})
    """

    def __init__(self, reason: str, code: str = "action.illegal", params: Mapping[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code
        self.params: dict[str, Any] = dict(params or {})


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One table option as the lobby shows it: ``kind`` is ``"int"``, ``"bool"`` or ``"choice"``.

    ``minimum``/``maximum`` bound an ``int``; ``choices`` lists the allowed values of a ``choice``.
    """

    name: str
    kind: str
    default: Any
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[Any, ...] = ()
    help: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as served by ``GET /api/games``."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "default": self.default, "help": self.help}
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if self.choices:
            out["choices"] = list(self.choices)
        return out


@runtime_checkable
class HandState(Protocol):
    """One hand (one deal) in play.

    ``seat`` is a seat number from 0, or ``None`` for the table itself (``rotate``, ``end_hand``) or,
    in :meth:`view`, for a spectator. ``ms`` is milliseconds since the hand began, by the server's clock,
    never decreasing.
    """

    players: int

    def legal_actions(self, seat: int) -> list[Action]:
        """Every action ``seat`` may take now (a Nerts seat may also simply wait). Empty when none."""
        ...

    def apply(self, seat: int | None, action: Mapping[str, Any], ms: int) -> list[Event]:
        """Apply ``action`` for ``seat`` at time ``ms`` and return the events it caused, in order.

        Raises :class:`IllegalAction` (a reason a person can read) and changes nothing when the action is
        malformed, not allowed now, out of turn, or ``ms`` is earlier than the last applied action.
        """
        ...

    def view(self, seat: int | None) -> View:
        """What ``seat`` may see (``None``: a spectator); a finished hand reveals everything."""
        ...

    def events_for(self, events: Sequence[Event], seat: int | None) -> list[Event]:
        """``events`` as ``seat`` may see them: hidden cards removed or the event dropped."""
        ...

    @property
    def is_over(self) -> bool:
        """True once the hand has ended."""
        ...

    @property
    def ended(self) -> str | None:
        """Why the hand ended (``"nerts"``, ``"stalled"``, ``"stuck"``, ``"complete"``), ``None`` while in play."""
        ...

    def scores(self) -> list[int]:
        """Points per seat for this hand, as it stands (what it would score if it ended now), in points."""
        ...

    def to_act(self) -> list[int]:
        """Seats that may act now: every seat in Nerts, the one seat whose turn it is in Enemy Anemone."""
        ...

    def clock_action(self) -> tuple[int, Action] | None:
        """The table action the clock will take if nothing else happens first, and its due time in ms.

        Nerts: ``end_hand`` after a Nerts call (``in_flight_ms``), or the stall guard's ``rotate``
        (``stall_seconds`` plus the 10 s warning). ``None`` when the clock has nothing to do.
        """
        ...


@dataclass(slots=True)
class HandResult:
    """A finished (or abandoned) hand: per-seat ``scores`` in points and why it ``ended``."""

    scores: list[int]
    ended: str | None
    extra: dict[str, Any] = field(default_factory=dict)


class Match(Protocol):
    """A match: hands until the game's end, folded from the record's deals and actions.

    ``start_hand(deal)`` checks a record deal (``{"seed": N}`` or the cards themselves) and begins the next hand;
    ``finish_hand()`` scores the current, ended hand into ``totals`` and carries over what the rules carry.
    """

    game: str
    players: int
    totals: list[int]
    results: list[HandResult]

    @property
    def hand(self) -> HandState | None:
        """The hand in play, or the last one once finished; ``None`` before the first deal."""
        ...

    def check_deal(self, deal: Mapping[str, Any]) -> None:
        """Raise ``ValueError`` naming the field when ``deal`` cannot start a hand of this match."""
        ...

    def deal_cards(self, seed: int) -> dict[str, Any]:
        """A deal for the next hand with the cards written out, shuffled from ``seed``; with rotated deals, a hand
        after a cycle's first is that hand's deal moved on, whatever ``seed`` is."""
        ...

    def deal_cycle(self, hand: int) -> int | None:
        """With the ``deals: "rotated"`` option, the deal (a cycle of one hand per seat, per team with Nerts
        partnerships; from 0) that hand ``hand`` (from 0) plays; ``None`` when every hand is dealt fresh."""
        ...

    def start_hand(self, deal: Mapping[str, Any]) -> HandState:
        """Begin the next hand from ``deal``; ``ValueError`` if the deal is bad or the match is over."""
        ...

    def finish_hand(self) -> HandResult:
        """Score the ended hand into ``totals``; ``ValueError`` if no hand has ended."""
        ...

    @property
    def is_over(self) -> bool:
        """True when the match has reached its end (target score or rounds)."""
        ...

    def winners(self) -> list[int] | None:
        """The winning seats (more than one for a shared win), or ``None`` while the match goes on."""
        ...
