"""Enemy Anemone as a PettingZoo AEC environment (``docs/ai.md``; rules ``docs/rules/enemy-anemone.md``).

Agents are ``"seat_0"`` to ``"seat_{players-1}"``; the agent selected is the seat whose turn it is. Actions are
indices of :data:`cardtable.envs.anemone_encoding.NUM_ACTIONS` (every play with the anemones spent on it, and
every discard); each observation is ``{"observation": float32 vector, "action_mask": int8 vector}``, built from
the seat's view only (:func:`cardtable.envs.anemone_encoding.observe`).

Rewards: with ``reward="points"`` (default) every seat receives its points at the end of each hand; with
``reward="match"`` the winners of the match share 1 at its end (1/k each for a k-way shared win), others 0.
The episode is one hand (``rounds=1``, the default) or a whole match of ``rounds`` hands; it terminates for every
seat when the match is over. Deals are drawn from the generator seeded by ``reset(seed=...)``.

>>> env = raw_env(players=3)
>>> env.reset(seed=1)
>>> env.agent_selection, env.observe("seat_0")["action_mask"].sum() > 0
('seat_0', np.True_)
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from cardtable import records
from cardtable.envs import anemone_encoding as enc
from cardtable.games.anemone import AnemoneMatch, AnemoneOptions, AnemoneState

ACTION_MS = 1000
"""Milliseconds between two actions in the records an episode writes (turn-based: only the order matters)."""


def env(**kwargs: Any) -> AECEnv:
    """The environment wrapped in PettingZoo's order and bounds checks (an illegal index raises)."""
    wrapped: AECEnv = raw_env(**kwargs)
    wrapped = wrappers.AssertOutOfBoundsWrapper(wrapped)
    return wrappers.OrderEnforcingWrapper(wrapped)


class raw_env(AECEnv):
    """Enemy Anemone, 2 to 6 seats.

    Keyword arguments: the game's options (``players`` 2-6, default 4; ``rounds`` 1-10, default 1;
    ``random_first_leader``), ``reward`` (``"points"`` or ``"match"``) and ``render_mode`` (``"ansi"`` or
    ``None``). A bad option raises ``ValueError`` naming it.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "anemone_v0",
        "render_modes": ["ansi"],
        "is_parallelizable": False,
    }

    def __init__(
        self,
        players: int = 4,
        rounds: int = 1,
        random_first_leader: bool = False,
        reward: str = "points",
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        self.options = AnemoneOptions(players=players, rounds=rounds, random_first_leader=random_first_leader)
        if reward not in ("points", "match"):
            raise ValueError(f"reward: expected 'points' or 'match', not {reward!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode: expected 'ansi' or None, not {render_mode!r}")
        self.reward_mode = reward
        self.render_mode = render_mode
        self.possible_agents = [f"seat_{s}" for s in range(players)]
        self.agent_name_mapping = {name: s for s, name in enumerate(self.possible_agents)}
        size = enc.observation_size(players)
        self._observation_space = spaces.Dict(
            {
                "observation": spaces.Box(0.0, 1000.0, shape=(size,), dtype=np.float32),
                "action_mask": spaces.Box(0, 1, shape=(enc.NUM_ACTIONS,), dtype=np.int8),
            }
        )
        self._action_space = spaces.Discrete(enc.NUM_ACTIONS)
        self.np_random = np.random.default_rng()
        self.match: AnemoneMatch | None = None
        self.state_: AnemoneState | None = None
        self._record: records.Record | None = None
        self._ms = 0

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        """``Dict(observation=Box(float32, observation_size), action_mask=Box(int8, NUM_ACTIONS))``."""
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Space[Any]:
        """``Discrete(NUM_ACTIONS)`` (3,360)."""
        return self._action_space

    # ------------------------------------------------------------------ episode

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a new match (deal its first hand); ``seed`` seeds the deals."""
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {agent: {} for agent in self.agents}
        self.match = AnemoneMatch(self.options)
        self._record = records.new_record(
            "anemone",
            [records.Seat(name=agent) for agent in self.agents],
            self.options.to_dict(),
        )
        self._start_hand()

    def _start_hand(self) -> None:
        assert self.match is not None and self._record is not None
        deal = self.match.deal_cards(int(self.np_random.integers(2**31)))
        self.state_ = self.match.start_hand(deal)
        self._record.hands.append(records.HandRecord(deal=deal, actions=[]))
        self._ms = 0
        self.agent_selection = self.possible_agents[self.state_.to_act()[0]]

    def observe(self, agent: str) -> dict[str, Any]:
        """``agent``'s observation and action mask (all zeros when it is not its turn)."""
        assert self.state_ is not None and self.match is not None
        seat = self.agent_name_mapping[agent]
        view = self.state_.view(seat)
        totals = self.match.totals
        legal = self.state_.legal_actions(seat)
        return {"observation": enc.observe(view, totals), "action_mask": enc.legal_mask(legal)}

    def step(self, action: int | None) -> None:
        """Apply the selected seat's action index; ``ValueError`` (state unchanged) for an illegal index."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        assert self.state_ is not None and self.match is not None and self._record is not None
        if action is None:
            raise ValueError(f"{agent} must act: a None action is only for a finished episode")
        seat = self.agent_name_mapping[agent]
        record_action = enc.index_action(int(action))
        if record_action not in self.state_.legal_actions(seat):
            raise ValueError(f"action {int(action)} ({record_action}) is not legal for {agent} now")
        self.state_.apply(seat, record_action, self._ms)
        self._record.hands[-1].actions.append(
            records.ActionRecord(seat=seat, ms=self._ms, action=record_action)
        )
        self._ms += ACTION_MS
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        if self.state_.is_over:
            result = self.match.finish_hand()
            if self.reward_mode == "points":
                for s, points in enumerate(result.scores):
                    self.rewards[self.possible_agents[s]] = float(points)
            if self.match.is_over:
                winners = self.match.winners() or []
                if self.reward_mode == "match":
                    for s in winners:
                        self.rewards[self.possible_agents[s]] = 1.0 / len(winners)
                for name in self.agents:
                    self.terminations[name] = True
                    self.infos[name] = {"totals": list(self.match.totals), "winners": winners}
            else:
                self._start_hand()
        if not self.match.is_over:
            self.agent_selection = self.possible_agents[self.state_.to_act()[0]]
        else:
            self.agent_selection = self.possible_agents[(seat + 1) % len(self.possible_agents)]
        self._accumulate_rewards()

    def record(self) -> dict[str, Any]:
        """The episode so far as a ``cardtable/1`` record (``docs/records.md``), ready for ``cardtable replay``."""
        if self._record is None:
            raise ValueError("no episode yet: call reset() first")
        return self._record.to_dict()

    def render(self) -> str | None:
        """``render_mode="ansi"``: the table as text (the spectator's view: no hidden card)."""
        if self.render_mode is None or self.state_ is None or self.match is None:
            return None
        view = self.state_.view(None)
        status = "over" if view["over"] else f"seat {view['turn']} to act"
        lines = [
            f"Enemy Anemone, hand {view.get('round')} of {view.get('rounds')}; {status}",
            "trick: "
            + (" ".join(f"{p['seat']}:{p['card']}={p['value']}" for p in view["trick"]) or "-")
            + ("  discards: " + " ".join(f"{d['seat']}:{d['card']}" for d in view["trick_discards"]))
            * bool(view["trick_discards"]),
        ]
        for s in range(self.options.players):
            lines.append(
                f"seat {s}: {view['hand_counts'][s]} cards, {view['points'][s]} points, "
                f"total {self.match.totals[s]}, anemones {view['anemones'][s]}"
            )
        lines.append(
            f"supply {view['supply']}" + (f", deck {view['deck_count']}" if view["deck_count"] else "")
        )
        return "\n".join(lines)

    def close(self) -> None:
        """Nothing to release."""
