"""The games cardtable plays, each one module, registered by name (``nerts``, ``anemone``).

>>> sorted(game_names())
['anemone', 'nerts']
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cardtable.engine import Match, OptionSpec

_MODULES = {"nerts": "cardtable.games.nerts", "anemone": "cardtable.games.anemone"}


@dataclass(frozen=True, slots=True)
class GameInfo:
    """A registered game.

    ``new_match(options)`` validates a record's ``options`` mapping (missing ones take their defaults, the number
    of seats is the ``players`` option) and returns a fresh :class:`~cardtable.engine.Match`; a bad or unknown
    option is a ``ValueError`` naming it. ``option_specs`` is what the lobby shows.
    """

    name: str
    title: str
    option_specs: Sequence[OptionSpec]
    new_match: Callable[[Mapping[str, Any]], Match]


_REGISTRY: dict[str, GameInfo] = {}


def register(info: GameInfo) -> None:
    """Called at the bottom of each game module."""
    _REGISTRY[info.name] = info


def game_names() -> list[str]:
    """Names of every game, whether or not its module is imported yet."""
    return list(_MODULES)


def get_game(name: str) -> GameInfo:
    """The game called ``name``; ``ValueError`` for an unknown game."""
    if name not in _MODULES:
        raise ValueError(f"unknown game {name!r} (known: {', '.join(sorted(_MODULES))})")
    if name not in _REGISTRY:
        importlib.import_module(_MODULES[name])
    return _REGISTRY[name]
