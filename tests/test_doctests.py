"""The examples in docstrings run as doctests (python-chess style)."""

import doctest
import importlib

import pytest

MODULES = [
    "cardtable.cards",
    "cardtable.records",
    "cardtable.games",
    "cardtable.bots",
    "cardtable.sim.runner",
    "cardtable.race",
    "cardtable.sim.fairness",
    "cardtable.bots.nerts_expert",
    "cardtable.games.nerts",
    "cardtable.bots.nerts",
    "cardtable.sim.nerts",
    "cardtable.games.anemone",
    "cardtable.bots.anemone",
    "cardtable.review.anemone",
    "cardtable.engine",
    "cardtable.refusals",
    "cardtable.cli",
    "cardtable.server.core.clock",
    "cardtable.server.table.bots",
    "cardtable.server.lobby.daily",
    "cardtable.server.lobby.daily_standings",
    "cardtable.server.lobby.play_now",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
