"""cardtable.envs.anemone_v0: PettingZoo's own conformance tests, the action encoding, hidden cards, records."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

pytest.importorskip("pettingzoo")

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, seed_test
from typer.testing import CliRunner

from cardtable.cli import app
from cardtable.envs import anemone_encoding as enc
from cardtable.envs import anemone_v0
from cardtable.games.anemone import CODE, AnemoneMatch, AnemoneOptions, AnemoneState


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_pettingzoo_api_and_seed(players: int) -> None:
    api_test(anemone_v0.env(players=players), num_cycles=60)
    seed_test(lambda: anemone_v0.env(players=players, rounds=2), num_cycles=60)


def test_bad_option_is_refused() -> None:
    with pytest.raises(ValueError, match="players"):
        anemone_v0.env(players=7)
    with pytest.raises(ValueError, match="reward"):
        anemone_v0.env(reward="money")


def play_out(seed: int, **kwargs: object) -> tuple[anemone_v0.raw_env, dict[str, float], int]:
    """A random-agent episode; returns the raw env, the summed rewards per agent and the steps taken."""
    env = anemone_v0.raw_env(**kwargs)  # type: ignore[arg-type]
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    steps = 0
    for agent in env.agent_iter():
        observation, reward, termination, truncation, _ = env.last()
        totals[agent] += reward
        if termination or truncation:
            env.step(None)
            continue
        legal = np.flatnonzero(observation["action_mask"])
        env.step(int(rng.choice(legal)))
        steps += 1
    return env, totals, steps


def test_points_rewards_add_up_to_match_totals() -> None:
    env, totals, steps = play_out(4, players=4, rounds=3)
    assert env.match is not None and env.match.is_over
    assert [totals[a] for a in env.possible_agents] == [float(t) for t in env.match.totals]
    assert steps == 3 * 40


def test_match_reward_goes_to_the_winners() -> None:
    env, totals, _ = play_out(9, players=3, rounds=2, reward="match")
    assert env.match is not None
    winners = env.match.winners() or []
    assert sum(totals.values()) == pytest.approx(1.0)
    assert {a for a, r in totals.items() if r > 0} == {env.possible_agents[s] for s in winners}


def test_illegal_index_is_refused_and_changes_nothing() -> None:
    env = anemone_v0.raw_env(players=3)
    env.reset(seed=2)
    before = env.observe("seat_0")
    illegal = int(np.flatnonzero(before["action_mask"] == 0)[0])
    with pytest.raises(ValueError, match="not legal"):
        env.step(illegal)
    after = env.observe("seat_0")
    assert np.array_equal(before["observation"], after["observation"])
    assert env.agent_selection == "seat_0"


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_action_encoding_round_trip(players: int) -> None:
    """Every legal engine action maps to one index and back, all along random hands (anemones held too)."""
    rng = random.Random(players)
    for hand in range(3):
        match = AnemoneMatch(AnemoneOptions(players=players, rounds=3))
        for _ in range(hand + 1):
            state = match.start_hand(match.deal_cards(rng.randrange(1000)))
            while not state.is_over:
                seat = state.to_act()[0]
                legal = state.legal_actions(seat)
                indices = [enc.action_index(a) for a in legal]
                assert len(set(indices)) == len(legal)
                assert [enc.index_action(i) for i in indices] == legal
                mask = enc.legal_mask(legal)
                assert mask.sum() == len(legal)
                state.apply(seat, legal[rng.randrange(len(legal))])
            match.finish_hand()


def swap_hidden(state: AnemoneState, seat: int, rng: random.Random) -> AnemoneState:
    """The same position with every card hidden from ``seat`` (other hands, the deck) dealt again at random."""
    other = state.copy()
    holders = [s for s in range(state.players) if s != seat]
    pool = [card for s in holders for card in state.hands[s]] + list(state.deck)
    rng.shuffle(pool)
    for s in holders:
        count = len(state.hands[s])
        other.hands[s], pool = pool[:count], pool[count:]
    other.deck = pool
    return other


@settings(max_examples=25, deadline=None)
@given(
    players=st.integers(2, 6),
    seed=st.integers(0, 10_000),
    moves=st.integers(0, 30),
    swap_seed=st.integers(0, 1000),
)
def test_observation_never_encodes_a_hidden_card(players: int, seed: int, moves: int, swap_seed: int) -> None:
    match = AnemoneMatch(AnemoneOptions(players=players))
    state = match.start_hand(match.deal_cards(seed))
    rng = random.Random(seed)
    for _ in range(moves):
        if state.is_over:
            break
        seat = state.to_act()[0]
        legal = state.legal_actions(seat)
        state.apply(seat, legal[rng.randrange(len(legal))])
    if state.is_over:
        return
    for seat in range(players):
        swapped = swap_hidden(state, seat, random.Random(swap_seed))
        assert np.array_equal(enc.observe(state.view(seat)), enc.observe(swapped.view(seat)))
        assert np.array_equal(
            enc.legal_mask(state.legal_actions(seat)), enc.legal_mask(swapped.legal_actions(seat))
        )
    # and the vector does see the seat's own cards: changing them changes it
    seat = state.to_act()[0]
    other = (seat + 1) % players
    if state.hands[seat] and state.hands[other]:
        mine = state.copy()
        mine.hands[seat][0], mine.hands[other][0] = mine.hands[other][0], mine.hands[seat][0]
        assert not np.array_equal(enc.observe(state.view(seat)), enc.observe(mine.view(seat)))


def test_episode_record_replays(tmp_path: Path) -> None:
    env, _, _ = play_out(11, players=2, rounds=2)
    path = tmp_path / "episode.json"
    path.write_text(json.dumps(env.record()))
    result = CliRunner().invoke(app, ["replay", "--json", str(path)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert env.match is not None
    assert summary["totals"] == env.match.totals
    assert summary["winner"] == env.match.winners()


def test_ansi_render_shows_no_hidden_card() -> None:
    env = anemone_v0.raw_env(players=4, render_mode="ansi")
    env.reset(seed=5)
    text = env.render()
    assert text is not None and "seat 0 to act" in text
    assert env.state_ is not None
    assert not any(CODE[card] in text.split() for hand in env.state_.hands for card in hand)
