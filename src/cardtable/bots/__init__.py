"""Bots: players that act only through the public engine API (a seat's view and its legal actions).

A bot is made from a spec string, ``NAME`` or ``NAME:LEVEL`` (``"greedy:medium"``, ``"ismcts:hard"``), and a seed;
the same seed, view and legal actions always give the same choice.

>>> [b.spec for b in bot_infos("anemone")][:2]
['random', 'heuristic']
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from cardtable.engine import Action, View

_MODULES = {
    "nerts": ("cardtable.bots.nerts", "cardtable.bots.nerts_expert"),
    "anemone": ("cardtable.bots.anemone",),
}


class Bot(Protocol):
    """Chooses an action for its seat from what that seat may see."""

    def choose(self, view: View, legal: Sequence[Action]) -> Action | None:
        """One of ``legal`` (or an equal action), or ``None`` to wait (Nerts only: nobody is forced to play)."""
        ...


@dataclass(frozen=True, slots=True)
class BotInfo:
    """A bot the lobby offers.

    ``spec`` names it (``"greedy:easy"``); ``reaction_ms`` is its human pace in Nerts (milliseconds between its
    actions at a table, 0 where turns set the pace); ``pooled`` means it searches and the server runs it in a
    process pool; ``make(seed)`` builds one. ``make_fixed(seed)``, for a bot whose search stops at a wall-clock cap
    too, builds the same bot with its number of simulations only (no cap), so that its choice depends on nothing but
    the seed and the position, however busy the machine (the daily deal's bots); ``None`` when ``make`` already does.
    """

    spec: str
    game: str
    description: str
    make: Callable[[int], Bot]
    reaction_ms: int = 0
    pooled: bool = False
    make_fixed: Callable[[int], Bot] | None = None


_REGISTRY: dict[str, dict[str, BotInfo]] = {}


def register(info: BotInfo) -> None:
    """Called at the bottom of each bot module."""
    _REGISTRY.setdefault(info.game, {})[info.spec] = info


def bot_infos(game: str) -> list[BotInfo]:
    """Every bot of ``game``, weakest first; ``ValueError`` for an unknown game."""
    if game not in _MODULES:
        raise ValueError(f"unknown game {game!r} (known: {', '.join(sorted(_MODULES))})")
    for module in _MODULES[game]:
        importlib.import_module(module)  # cached after the first time
    return list(_REGISTRY[game].values())


def get_bot(game: str, spec: str) -> BotInfo:
    """The bot ``spec`` of ``game``; a bare name (``"ismcts"``) means its middle level. ``ValueError`` if unknown."""
    infos = {info.spec: info for info in bot_infos(game)}
    if spec in infos:
        return infos[spec]
    if f"{spec}:medium" in infos:
        return infos[f"{spec}:medium"]
    raise ValueError(f"unknown {game} bot {spec!r} (known: {', '.join(infos)})")


def make_bot(game: str, spec: str, seed: int) -> Bot:
    """A new bot ``spec`` for ``game``, seeded; ``ValueError`` if unknown."""
    return get_bot(game, spec).make(seed)


def run_bot(
    game: str, spec: str, seed: int, view: View, legal: Sequence[Action], fixed: bool = False
) -> Action | None:
    """One choice by a fresh bot: a picklable entry point for a process pool. ``fixed``: the bot's fixed-budget form
    (``BotInfo.make_fixed``, when it has one), whose choice follows from ``seed``, ``view`` and ``legal`` alone."""
    info = get_bot(game, spec)
    make = info.make_fixed if fixed and info.make_fixed is not None else info.make
    return make(seed).choose(view, legal)
