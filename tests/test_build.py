"""The two builds of the engines (cardtable.build; docs/architecture.md, "Builds"): what `cardtable --version` says,
and what a build compiled with mypyc needs of the source: copies and pickles of hands and matches (the process pool,
Ray), and a clear refusal, not a TypeError, for arguments of the wrong type. scripts/test runs this file on both
builds."""

from __future__ import annotations

import copy
import importlib.util
import inspect
import pickle
from typing import Any

import pytest
from typer.testing import CliRunner

from cardtable import __version__
from cardtable.bots.nerts import GreedyBot
from cardtable.build import COMPILED, ENGINE_MODULES, PURE, engines
from cardtable.cli import app
from cardtable.engine import IllegalAction
from cardtable.games.anemone import AnemoneMatch, AnemoneOptions
from cardtable.games.nerts import NertsMatch, NertsOptions, NertsState
from cardtable.race import DelayEstimator


def test_engines_says_which_build_runs() -> None:
    """A compiled method is no Python function: that, not the file names engines() reads, tells the builds apart."""
    compiled = not inspect.isfunction(NertsState.apply)
    assert engines() == (COMPILED if compiled else PURE)
    assert all(importlib.util.find_spec(name) is not None for name in ENGINE_MODULES)


def test_cardtable_version_names_the_build() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"cardtable {__version__}; engines: {engines()}"


def _mid_hand() -> NertsState:
    """A four-seat hand with jokers and partnerships, 60 greedy plays in: foundations started, piles moved."""
    match = NertsMatch(NertsOptions(players=4, partnerships=True, jokers=True))
    state = match.start_hand({"seed": 11})
    bots = [GreedyBot(seat) for seat in range(4)]
    ms = 0
    for turn in range(400):
        if state.is_over or state.snapshot()["actions"] >= 60:
            break
        ms += 40
        seat = turn % 4
        action = bots[seat].choose(state.view(seat), state.legal_actions(seat, ms))
        if action is not None:
            state.apply(seat, action, ms)
    assert state.snapshot()["actions"] >= 60
    return state


def _play_on(state: NertsState, steps: int) -> list[Any]:
    """What ``steps`` more greedy plays do to ``state``: every event and the snapshot after."""
    bots = [GreedyBot(100 + seat) for seat in range(4)]
    out: list[Any] = []
    ms = state.ms
    for turn in range(steps):
        ms += 40
        seat = turn % 4
        action = bots[seat].choose(state.view(seat), state.legal_actions(seat, ms))
        if action is not None:
            out.append(state.apply(seat, action, ms))
    out.append(state.snapshot())
    return out


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_nerts_hand_copies_and_pickles_mid_hand(how: str) -> None:
    """A copy shows every seat the same view and legal actions, then plays on alone exactly as the original would,
    leaving the original as it was."""
    state = _mid_hand()
    clone: NertsState = copy.deepcopy(state) if how == "deepcopy" else pickle.loads(pickle.dumps(state))
    assert clone is not state and clone.snapshot() == state.snapshot()
    for seat in (0, 1, 2, 3, None):
        assert clone.view(seat) == state.view(seat)
    for seat in range(4):
        assert clone.legal_actions(seat) == state.legal_actions(seat)
    before = state.snapshot()
    reference = copy.deepcopy(state)
    played = _play_on(clone, 80)
    assert state.snapshot() == before
    assert played == _play_on(reference, 80)


def test_a_nerts_match_and_both_games_options_pickle() -> None:
    match = NertsMatch({"players": 3, "target_score": 50})
    hand = match.start_hand({"seed": 2})
    hand.apply(0, {"type": "flip"}, 10)
    again: NertsMatch = pickle.loads(pickle.dumps(match))
    assert again.options == match.options and again.totals == match.totals
    assert again.hand is not None and again.hand.snapshot() == hand.snapshot()
    for options in (NertsOptions(players=6, jokers=True, flip_count=1), AnemoneOptions(players=5, rounds=2)):
        assert pickle.loads(pickle.dumps(options)) == options
        assert copy.deepcopy(options) == options
    anemone = AnemoneMatch(AnemoneOptions(players=3))
    assert pickle.loads(pickle.dumps(anemone.options)) == anemone.options


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"players": "4"}, "players: must be a whole number"),
        ({"jokers": 1}, "jokers: must be true or false"),
        ({"deals": 3}, "deals: must be"),
    ],
)
def test_options_of_the_wrong_type_are_a_value_error(data: dict[str, Any], message: str) -> None:
    """From a record, as from Python: a ValueError naming the option, in either build (a compiled class would
    otherwise refuse the type with its own TypeError)."""
    with pytest.raises(ValueError, match=message):
        NertsOptions.from_dict(data)
    with pytest.raises(ValueError, match=message):
        NertsMatch(data)


@pytest.mark.parametrize(
    ("seat", "action", "ms", "code"),
    [
        ("0", {"type": "flip"}, 10, "action.no_seat"),
        (0, ["flip"], 10, "action.malformed"),
        (0, {"type": "flip"}, "10", "action.bad_time"),
        (0, {"type": "flip"}, 1.5, "action.bad_time"),
    ],
)
def test_engine_arguments_of_the_wrong_type_are_refused(seat: Any, action: Any, ms: Any, code: str) -> None:
    """Both games refuse them with IllegalAction and change nothing; ``legal_actions`` of no seat is empty."""
    nerts = NertsMatch(NertsOptions(players=2)).start_hand({"seed": 3})
    before = nerts.snapshot()
    with pytest.raises(IllegalAction) as refused:
        nerts.apply(seat, action, ms)
    assert refused.value.code == code and nerts.snapshot() == before
    assert nerts.legal_actions("0") == [] and nerts.legal_actions(None) == []
    anemone = AnemoneMatch(AnemoneOptions(players=2)).start_hand({"seed": 3})
    turn = anemone.to_act()[0]
    with pytest.raises(IllegalAction):
        anemone.apply(str(turn) if seat == "0" else turn, action, ms)
    assert anemone.legal_actions(str(turn)) == [] and anemone.legal_actions(None) == []


@pytest.mark.parametrize("rtt", ["90", None, float("nan"), -1])
def test_a_round_trip_that_is_no_number_is_a_value_error(rtt: Any) -> None:
    estimator = DelayEstimator()
    with pytest.raises(ValueError, match="a round trip is a finite number"):
        estimator.add(rtt)
    assert estimator.samples == 0
