"""cardtable.openspiel: OpenSpiel's conformance test, its ISMCTS and evaluate_bots, and what a player sees."""

from __future__ import annotations

import random

import pytest

pyspiel = pytest.importorskip("pyspiel")

import numpy as np  # noqa: E402
from open_spiel.python.algorithms import evaluate_bots  # noqa: E402

from cardtable.games.anemone import CODE  # noqa: E402
from cardtable.openspiel import (  # noqa: E402
    GAME_NAME,
    CardtableBot,
    information_state_from_scratch,
    ismcts_bot,
)


@pytest.mark.parametrize(
    "params",
    [
        {"players": 2, "rounds": 2},
        {"players": 3, "random_first_leader": True},
        {"players": 4},
        {"players": 6},
    ],
)
def test_random_sim_test_with_serialization(params: dict[str, object]) -> None:
    game = pyspiel.load_game(GAME_NAME, params)
    pyspiel.random_sim_test(game, num_sims=2, serialize=True, verbose=False)


def test_parameters_and_bad_option() -> None:
    game = pyspiel.load_game(GAME_NAME, {"players": 5, "rounds": 3})
    assert game.num_players() == 5
    assert game.get_parameters()["rounds"] == 3
    with pytest.raises(ValueError, match="players"):
        pyspiel.load_game(GAME_NAME, {"players": 7})


def deal_out(game: pyspiel.Game, seed: int, moves: int) -> pyspiel.State:
    rng = random.Random(seed)
    state = game.new_initial_state()
    while state.is_chance_node():
        outcomes = [a for a, _ in state.chance_outcomes()]
        state.apply_action(rng.choice(outcomes))
    for _ in range(moves):
        if state.is_chance_node() or state.is_terminal():
            break
        state.apply_action(rng.choice(state.legal_actions()))
    return state


@pytest.mark.parametrize("players", [2, 4])
def test_resampled_state_is_the_same_information_state(players: int) -> None:
    game = pyspiel.load_game(GAME_NAME, {"players": players})
    state = deal_out(game, players, 9)
    player = state.current_player()
    others = [s for s in range(players) if s != player]
    hands_before = [list(state.core.match.hand.hands[s]) for s in others]
    changed = False
    for _ in range(5):
        sample = state.resample_from_infostate(player, pyspiel.UniformProbabilitySampler(0.0, 1.0))
        assert sample.information_state_string(player) == state.information_state_string(player)
        assert sample.information_state_tensor(player) == state.information_state_tensor(player)
        assert sample.observation_tensor(player) == state.observation_tensor(player)
        assert sample.legal_actions() == state.legal_actions()
        changed |= [list(sample.core.match.hand.hands[s]) for s in others] != hands_before
    assert changed
    # the original was left alone
    assert [list(state.core.match.hand.hands[s]) for s in others] == hands_before


def test_strings_show_no_hidden_card() -> None:
    game = pyspiel.load_game(GAME_NAME, {"players": 4})
    state = deal_out(game, 1, 5)
    hand = state.core.match.hand
    for player in range(4):
        hidden = {CODE[c] for s in range(4) if s != player for c in hand.hands[s]}
        for text in (state.information_state_string(player), state.observation_string(player)):
            assert not any(code in text.replace(",", " ").replace(":", " ").split() for code in hidden)


def test_openspiel_ismcts_plays_ours_through_evaluate_bots() -> None:
    game = pyspiel.load_game(GAME_NAME, {"players": 3})
    bots = [CardtableBot(0, "heuristic", 1), ismcts_bot(game, 20, seed=2), CardtableBot(2, "random", 3)]
    returns = evaluate_bots.evaluate_bots(game.new_initial_state(), bots, np.random.RandomState(4))
    assert len(returns) == 3
    assert sum(returns) == pytest.approx(sum(1 + (r in (3, 5, 8)) for r in range(1, 11)) * 3)


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_legal_actions_are_the_engines_through_play_and_resampling(players: int) -> None:
    """The cached legal actions (and the fast apply) agree with the engine's own legal_actions, also on a
    state resampled for a seat not to act (its cache must not carry over), and an illegal index is refused."""
    from cardtable.envs.anemone_encoding import action_index

    game = pyspiel.load_game(GAME_NAME, {"players": players, "rounds": 2})
    rng = random.Random(players)
    state = game.new_initial_state()
    sampler = pyspiel.UniformProbabilitySampler(0.0, 1.0)
    while not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()]))
            continue
        seat = state.current_player()
        hand = state.core.match.hand
        legal = state.legal_actions()
        assert legal == sorted(action_index(a) for a in hand.legal_actions(seat))
        other = (seat + 1) % players
        sample = state.resample_from_infostate(other, sampler)
        sample_hand = sample.core.match.hand
        assert sample.legal_actions() == sorted(action_index(a) for a in sample_hand.legal_actions(seat))
        illegal = next(i for i in range(game.num_distinct_actions()) if i not in legal)
        with pytest.raises(ValueError):
            state.apply_action(illegal)
        assert state.legal_actions() == legal
        state.apply_action(rng.choice(legal))
    assert sum(state.returns()) > 0


@pytest.mark.parametrize("players", [2, 3, 4, 6])
def test_incremental_information_state_strings_equal_the_ones_built_from_scratch(players: int) -> None:
    """The information state strings (built incrementally and cached per state) equal the ones built from the
    whole history, through whole 2-hand matches: asked at random moments (so a cached string is extended over
    several actions, across deals and hands), from Python and through C++ (the observer), on clones and on
    resampled states (whose other seats' histories were rewritten) and after acting on them. The Python
    ``legal_actions``/``is_chance_node`` shortcuts agree with OpenSpiel's C++ answers too."""
    game = pyspiel.load_game(GAME_NAME, {"players": players, "rounds": 2})
    rng = random.Random(100 + players)
    sampler = pyspiel.UniformProbabilitySampler(0.0, 1.0)
    state = game.new_initial_state()
    checked = 0

    def check(s: pyspiel.State) -> None:
        for p in range(players):
            expected = information_state_from_scratch(s, p)
            assert s.information_state_string(p) == expected
            assert pyspiel.State.information_state_string(s, p) == expected
        if not s.is_terminal():
            assert s.is_chance_node() == pyspiel.State.is_chance_node(s)
            assert s.legal_actions() == list(pyspiel.State.legal_actions(s))
            for p in range(players):
                assert s.legal_actions(p) == list(pyspiel.State.legal_actions(s, p))

    while not state.is_terminal():
        if rng.random() < 0.3:
            check(state)
            checked += 1
        if state.is_chance_node():
            state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()]))
            continue
        if rng.random() < 0.3:
            clone = state.clone()
            check(clone)
            player = rng.randrange(players)
            sample = state.resample_from_infostate(player, sampler)
            check(sample)
            for s in (clone, sample):
                for _ in range(rng.randrange(1, 4)):
                    if s.is_terminal():
                        break
                    if s.is_chance_node():
                        s.apply_action(rng.choice([a for a, _ in s.chance_outcomes()]))
                    else:
                        s.apply_action(rng.choice(s.legal_actions()))
                check(s)
        state.apply_action(rng.choice(state.legal_actions()))
    check(state)
    assert checked > 10
