"""The review of a seat's Nerts hands (issue 30; rules: ``docs/rules/nerts.md``), read from the record alone.

The record is replayed (``state.view(seat)`` and ``state.legal_actions(seat)`` after each action); between two
actions the position does not change, so each moment lasts from one action's ``ms`` to the next one's.

- A missed play (``kind: "foundation"``): a card of the seat's (the top of its Nerts pile, of its waste or of one of
  its work piles) that could have gone to a foundation ("The common area: foundations") for :data:`MISSED_MS` or more
  without a break, whether it was played in the end or not. ``kind: "free_nerts"``: the top of its Nerts pile could
  have gone onto a work pile (or under one) for as long: a work-pile move that frees the next Nerts card ("Nerts
  pile").
- ``stuck_ms``: the time the seat had no move (no ``move`` or ``under``: only flips, cycles, the stuck mark) while
  the hand went on, summed over the match.
- ``cards_left``: the cards left in the seat's Nerts pile at each hand's end, summed over the match.

Only cards every seat sees appear (tops of piles), so the review names no hidden card.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cardtable.bots.nerts import own_layout
from cardtable.engine import Action, HandState, View
from cardtable.records import Record
from cardtable.replay import fold

MISSED_MS = 2000
"""A card playable this long (ms) or longer without being played is a missed play."""


def _card_at(layout: dict[str, Any], source: str) -> str | None:
    """The card on top of ``source`` (``nerts``, ``waste``, ``work:J``) in ``layout``, or ``None``."""
    if source in ("nerts", "waste"):
        top = layout[source]["top"]
        return None if top is None else str(top)
    pile = layout["work"][int(source.partition(":")[2])]
    return str(pile[-1]) if pile else None


def chances(view: View, legal: list[Action], seat: int) -> tuple[set[tuple[str, str]], bool]:
    """What ``seat`` could do now: the ``(kind, card)`` of each missed-play chance (see the module) and whether it
    has any ``move`` or ``under`` at all."""
    layout = own_layout(view, seat)
    found: set[tuple[str, str]] = set()
    moving = False
    for action in legal:
        kind = action.get("type")
        if kind not in ("move", "under"):
            continue
        moving = True
        source, target = str(action.get("from")), str(action.get("to"))
        card = _card_at(layout, source)
        if card is None:
            continue
        if kind == "move" and target.startswith("foundation"):
            found.add(("foundation", card))
        elif source == "nerts" and target.startswith("work"):
            found.add(("free_nerts", card))
    return found, moving


@dataclass(slots=True)
class _Hand:
    """What the replay of one hand has seen so far."""

    open: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    """Chances open now: (kind, card) -> (action index and ms at which it began)."""
    stuck_since: int | None = None
    """ms since which the seat has had no move, or ``None``."""
    last_ms: int = 0


def review(record: Record, seat: int) -> dict[str, Any]:
    """The review of ``seat`` in ``record``: ``{"status": "ready", "game": "nerts", "seat", "missed": [{"hand",
    "index", "ms", "card", "kind", "waited_ms"}], "summary": {"missed", "stuck_ms", "cards_left"}}``, missed
    plays in the order they began (``index``: the action index in the hand before which the chance began; ``ms``:
    when; ``waited_ms``: how long it lasted). Raises what :func:`cardtable.replay.fold` raises."""
    missed: list[dict[str, Any]] = []
    stuck_ms = 0
    cards_left = 0
    hands: dict[int, _Hand] = {}
    finals: dict[int, HandState] = {}

    def close(number: int, seen: _Hand, keys: set[tuple[str, str]], now: int) -> None:
        for key in sorted(keys, key=lambda k: seen.open[k]):
            index, began = seen.open.pop(key)
            if now - began >= MISSED_MS:
                missed.append(
                    {
                        "hand": number,
                        "index": index,
                        "ms": began,
                        "card": key[1],
                        "kind": key[0],
                        "waited_ms": now - began,
                    }
                )

    def step(number: int, index: int | None, state: HandState) -> None:
        nonlocal stuck_ms
        seen = hands.setdefault(number, _Hand())
        finals[number] = state
        actions = record.hands[number].actions
        now = 0 if index is None else actions[index].ms
        seen.last_ms = now
        upcoming = 0 if index is None else index + 1
        if state.is_over:
            found: set[tuple[str, str]] = set()
            moving = True
        else:
            found, moving = chances(state.view(seat), state.legal_actions(seat), seat)
        close(number, seen, set(seen.open) - found, now)
        for key in found - set(seen.open):
            seen.open[key] = (upcoming, now)
        if moving and seen.stuck_since is not None:
            stuck_ms += now - seen.stuck_since
            seen.stuck_since = None
        elif not moving and seen.stuck_since is None:
            seen.stuck_since = now

    fold(record, on_step=step)
    for number, seen in sorted(hands.items()):
        close(number, seen, set(seen.open), seen.last_ms)
        if seen.stuck_since is not None:
            stuck_ms += seen.last_ms - seen.stuck_since
        state = finals[number]
        cards_left += int(own_layout(state.view(seat), seat)["nerts"]["count"])
    missed.sort(key=lambda m: (m["hand"], m["index"], m["ms"]))
    return {
        "status": "ready",
        "game": "nerts",
        "seat": seat,
        "missed": missed,
        "summary": {"missed": len(missed), "stuck_ms": stuck_ms, "cards_left": cards_left},
    }
