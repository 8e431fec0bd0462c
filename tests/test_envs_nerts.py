"""cardtable.envs.nerts_v0: PettingZoo's conformance tests, the action enumeration, hidden cards, ticks, records."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

pytest.importorskip("pettingzoo")

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, parallel_seed_test
from typer.testing import CliRunner

from cardtable.bots import make_bot
from cardtable.cards import standard_pack
from cardtable.cli import app
from cardtable.envs import nerts_v0
from cardtable.games.nerts import NertsMatch, NertsOptions


def test_pettingzoo_conformance() -> None:
    parallel_api_test(nerts_v0.parallel_env(players=3, max_cycles=200), num_cycles=200)
    parallel_seed_test(lambda: nerts_v0.parallel_env(players=2, max_cycles=150), num_cycles=150)
    max_cycles_test(nerts_v0)
    api_test(nerts_v0.env(players=2, max_cycles=60), num_cycles=60)


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="jokers"):
        nerts_v0.parallel_env(jokers=True)
    with pytest.raises(ValueError, match="players"):
        nerts_v0.parallel_env(players=9)
    with pytest.raises(ValueError, match="tick_ms"):
        nerts_v0.parallel_env(tick_ms=0)


@pytest.mark.parametrize(("players", "work_piles"), [(1, 4), (2, 3), (4, 6), (8, 4)])
def test_action_enumeration_round_trip(players: int, work_piles: int) -> None:
    """Every legal engine action maps to one index and back, all along random play."""
    options = NertsOptions(players=players, work_piles=work_piles, nerts_pile_size=5)
    codec = nerts_v0.ActionCodec(options)
    state = NertsMatch(options).start_hand({"seed": players})
    rng = random.Random(players)
    ms = 0
    for _ in range(300):
        if state.is_over:
            break
        seat = rng.randrange(players)
        ms += 50
        legal = state.legal_actions(seat, ms)
        indices = [codec.index(a) for a in legal]
        assert len(set(indices)) == len(indices)
        assert [codec.action(i) for i in indices] == legal
        assert codec.mask(legal).sum() == len(legal) + 1
        if legal:
            state.apply(seat, rng.choice(legal), ms)


@settings(max_examples=20, deadline=None)
@given(
    players=st.integers(1, 4), seed=st.integers(0, 10_000), moves=st.integers(0, 80), swap=st.integers(0, 99)
)
def test_observation_never_encodes_a_hidden_card(players: int, seed: int, moves: int, swap: int) -> None:
    """Reordering every face-down card (stocks, Nerts piles under their tops) leaves every observation alone."""
    options = NertsOptions(players=players)
    match = NertsMatch(options)
    state = match.start_hand({"seed": seed})
    rng = random.Random(seed)
    for m in range(moves):
        seat = rng.randrange(players)
        legal = state.legal_actions(seat, m * 10)  # legal at the time it is applied
        if state.is_over or not legal:
            break
        state.apply(seat, rng.choice(legal), m * 10)
    if state.is_over:
        return
    before = [nerts_v0.observe(state.view(s), options) for s in range(players)]
    shuffle = random.Random(swap)
    for layout in state._layouts:
        shuffle.shuffle(layout.stock)
        if len(layout.nerts) > 1:
            under = layout.nerts[:-1]
            shuffle.shuffle(under)
            layout.nerts[:-1] = under
        state._layout_views[layout.pack] = None
    after = [nerts_v0.observe(state.view(s), options) for s in range(players)]
    for b, a in zip(before, after, strict=True):
        assert np.array_equal(b, a)


def bot_episode(seed: int, **kwargs: object) -> tuple[nerts_v0.parallel_env, dict[str, float], int]:
    env = nerts_v0.parallel_env(**kwargs)  # type: ignore[arg-type]
    env.reset(seed=seed)
    bots = {a: make_bot("nerts", "greedy:hard", i) for i, a in enumerate(env.possible_agents)}
    rewards: dict[str, float] = {}
    ticks = 0
    while env.agents:
        assert env.state is not None
        actions = {}
        for agent in env.agents:
            seat = env.possible_agents.index(agent)
            action = bots[agent].choose(env.state.view(seat), env.state.legal_actions(seat))
            actions[agent] = env.codec.index(action) if action is not None else nerts_v0.NOOP
        _, rewards, _, _, _ = env.step(actions)
        ticks += 1
    return env, rewards, ticks


def test_a_bot_hand_ends_by_the_clock_and_replays(tmp_path: Path) -> None:
    env, rewards, ticks = bot_episode(3, players=3, nerts_pile_size=5)
    assert env.state is not None and env.state.is_over
    assert list(rewards.values()) == [float(s) for s in env.state.scores()]
    record = env.record()
    actions = record["hands"][0]["actions"]
    if env.state.ended == "nerts":
        call = next(a for a in actions if a["action"]["type"] == "nerts")
        end = actions[-1]
        assert end["seat"] is None and end["action"] == {"type": "end_hand", "reason": "nerts"}
        assert end["ms"] == call["ms"] + env.options.in_flight_ms
    assert [a["ms"] for a in actions] == sorted(a["ms"] for a in actions)
    assert actions[-1]["ms"] <= ticks * env.tick_ms
    path = tmp_path / "nerts.json"
    path.write_text(json.dumps(record))
    result = CliRunner().invoke(app, ["replay", "--json", str(path)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["totals"] == env.state.scores()


def pack_with(top: list[str], size: int = 5) -> list[str]:
    """A pack whose Nerts pile ends (top last) with ``top``; the other cards in pack order."""
    codes = [card.code for card in standard_pack()]
    rest = [c for c in codes if c not in top]
    return rest[: size - len(top)] + top + rest[size - len(top) :]


def test_two_seats_tie_on_a_foundation_in_one_tick() -> None:
    """Both seats play a 2 of spades onto the same foundation in one tick: the engine's tie window takes both."""
    env = nerts_v0.parallel_env(players=2, nerts_pile_size=5)
    deal = {"packs": [pack_with(["2S", "AS"]), pack_with(["2S"])]}
    env.reset(seed=1, options={"deal": deal})
    ace = env.codec.index({"type": "move", "from": "nerts", "to": "foundation:new"})
    env.step({"seat_0": ace, "seat_1": nerts_v0.NOOP})
    two = env.codec.index({"type": "move", "from": "nerts", "to": "foundation:0"})
    observations = env._observations()
    assert observations["seat_0"]["action_mask"][two] == observations["seat_1"]["action_mask"][two] == 1
    _, _, _, _, infos = env.step({"seat_0": two, "seat_1": two})
    assert infos["seat_0"]["refused"] is False and infos["seat_1"]["refused"] is False
    assert env.state is not None
    cards = env.state.view(None)["foundations"][0]["cards"]
    assert [c["card"] for c in cards] == ["AS", "2S", "2S"]
    times = [a["ms"] for a in env.record()["hands"][0]["actions"]]
    assert times[0] == 0 and 100 <= times[1] < times[2] < 200


def test_a_refused_action_changes_nothing() -> None:
    env = nerts_v0.parallel_env(players=2)
    observations, _ = env.reset(seed=2)
    index = env.codec.index({"type": "move", "from": "nerts", "to": "foundation:7"})
    assert observations["seat_0"]["action_mask"][index] == 0
    after, _, _, _, infos = env.step({"seat_0": index, "seat_1": nerts_v0.NOOP})
    assert infos["seat_0"]["refused"] is True
    assert np.array_equal(after["seat_0"]["observation"], observations["seat_0"]["observation"])
    assert env.record()["hands"][0]["actions"] == []
    with pytest.raises(ValueError, match="out of range"):
        env.step({"seat_0": env.codec.size, "seat_1": nerts_v0.NOOP})


def test_episode_is_truncated_at_max_cycles() -> None:
    env = nerts_v0.parallel_env(players=2, max_cycles=5)
    env.reset(seed=2)
    for tick in range(5):
        _, _, terminations, truncations, _ = env.step({a: nerts_v0.NOOP for a in env.agents})
        assert not any(terminations.values())
        assert all(truncations.values()) == (tick == 4)
    assert env.agents == []
