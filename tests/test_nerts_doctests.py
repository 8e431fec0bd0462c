"""The examples in the Nerts modules' docstrings run as doctests."""

import doctest
import importlib

import pytest

MODULES = ["cardtable.games.nerts", "cardtable.bots.nerts", "cardtable.sim.nerts"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
