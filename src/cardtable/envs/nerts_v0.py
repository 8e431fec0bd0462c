"""Nerts as a PettingZoo Parallel environment, one step per clock tick (``docs/ai.md``; rules ``docs/rules/nerts.md``).

Nerts is played in real time. Each :meth:`parallel_env.step` is one tick of ``tick_ms`` milliseconds (default
100): every seat submits one action index or the no-op (index 0). The tick's actions are applied in an order
drawn from the environment's seeded generator, at times spread across the tick (``ms`` advancing), through the
engine itself: its tie window and in-flight window decide what a late card still does, and an action that an
earlier one in the same tick made impossible is refused by the engine and counts as a no-op
(``infos[agent]["refused"]`` is true). The table's own actions are made as the server makes them, from
``state.clock_action()``: the ``end_hand`` after a Nerts call once ``in_flight_ms`` have passed, and the stall
guard's ``rotate``, each at its due time (or at once if an action came later in the same tick).

An episode is one hand; rewards are the hand's scores (points) when it ends. ``max_cycles`` ticks (default
6,000: 10 minutes at 100 ms) truncate it. Jokers are not supported (``ValueError``).

>>> env = parallel_env(players=2)
>>> observations, infos = env.reset(seed=1)
>>> sorted(observations), observations["seat_0"]["action_mask"][0]
(['seat_0', 'seat_1'], np.int8(1))
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils import parallel_to_aec, wrappers

from cardtable import records
from cardtable.cards import RANK_CODES, SUITS
from cardtable.engine import Action, View
from cardtable.games.nerts import NertsMatch, NertsOptions, NertsState

NOOP = 0
"""The index of doing nothing this tick."""
_TABLE_ACTIONS = ("flip", "cycle", "stuck", "nerts")
_MAX_RUN = 13
_CARD_SLOTS = 54
_FOUNDATION = 7


def card_slot(code: str | None) -> int:
    """0-51 for a card (suit ``S H D C`` by 13, then rank), 52 and 53 for the jokers, -1 for none."""
    if code is None:
        return -1
    if code.startswith("JK"):
        return 51 + int(code[2:])
    return SUITS.index(code[-1]) * 13 + RANK_CODES.index(code[:-1])


class ActionCodec:
    """The fixed action enumeration of a table's options: no-op, flip, cycle, stuck, nerts, then for each source
    (``nerts``, ``waste``, ``work:0``...) its moves to ``foundation:new``, to each ``foundation:F`` (F below
    4 per pack), to each ``work:J`` with each run length 1-13 (1 only from the Nerts pile or the waste), and
    its slides under each ``work:J``.
    """

    def __init__(self, options: NertsOptions) -> None:
        self.work = options.work_piles
        self.foundations = 4 * options.layouts
        self.sources = ["nerts", "waste", *(f"work:{j}" for j in range(self.work))]
        self.per_source = 1 + self.foundations + self.work * _MAX_RUN + self.work
        self.size = 1 + len(_TABLE_ACTIONS) + len(self.sources) * self.per_source
        self._actions: list[Action | None] = [None]
        self._actions += [{"type": kind} for kind in _TABLE_ACTIONS]
        for source in self.sources:
            single = not source.startswith("work:")
            self._actions.append({"type": "move", "from": source, "to": "foundation:new"})
            for f in range(self.foundations):
                self._actions.append({"type": "move", "from": source, "to": f"foundation:{f}"})
            for j in range(self.work):
                for count in range(1, _MAX_RUN + 1):
                    if single or source == f"work:{j}":
                        self._actions.append(
                            {"type": "move", "from": source, "to": f"work:{j}"}
                            if single and count == 1
                            else None
                        )
                    else:
                        self._actions.append(
                            {"type": "move", "from": source, "to": f"work:{j}", "count": count}
                        )
            for j in range(self.work):
                self._actions.append(
                    None if source == f"work:{j}" else {"type": "under", "from": source, "to": f"work:{j}"}
                )
        assert len(self._actions) == self.size
        self._index = {self._key(a): i for i, a in enumerate(self._actions) if a is not None}

    @staticmethod
    def _key(action: Action) -> tuple[Any, ...]:
        return (action.get("type"), action.get("from"), action.get("to"), action.get("count"))

    def index(self, action: Action) -> int:
        """The index of an engine action; ``ValueError`` for one outside the enumeration (a joker's ``as``)."""
        if "as" in action:
            raise ValueError("jokers are not supported by nerts_v0")
        try:
            return self._index[self._key(action)]
        except KeyError:
            raise ValueError(f"no index for {action!r}") from None

    def action(self, index: int) -> Action | None:
        """The engine action of an index (``None`` for the no-op and unused slots)."""
        if not 0 <= index < self.size:
            raise ValueError(f"action index {index} is out of range 0..{self.size - 1}")
        action = self._actions[index]
        return dict(action) if action is not None else None

    def mask(self, legal: list[Action]) -> npt.NDArray[np.int8]:
        """0/1 ``int8`` of :attr:`size`: the no-op and every legal action."""
        out = np.zeros(self.size, dtype=np.int8)
        out[NOOP] = 1
        for action in legal:
            out[self.index(action)] = 1
        return out


def observation_size(options: NertsOptions) -> int:
    """Length of :func:`observe`'s vector (``docs/ai.md`` lists every element)."""
    layout = 2 + _CARD_SLOTS + 2 + _CARD_SLOTS + options.work_piles * (1 + 2 * _CARD_SLOTS)
    return options.layouts * layout + 4 * options.layouts * _FOUNDATION + 3 + options.players


def observe(view: View, options: NertsOptions) -> npt.NDArray[np.float32]:
    """The observation vector of a seat's view; layouts start with the seat's own, then by pack after it.

    Per layout: Nerts pile count, 1 if stuck, Nerts top (54 one-hot), stock count, waste count, waste top (54),
    then per work pile its length, bottom card (54) and top card (54). Per foundation slot (4 per pack, by id):
    1 if started, its suit (4 one-hot), top rank (1-13), 1 if finished. Then: 1 if Nerts was called, 1 if by
    this seat, the hand time in seconds, and the seats' scores, this seat first. Only public cards appear: the
    view never holds a face-down card.
    """
    seat = int(view["seat"]) if view["seat"] is not None else 0
    out = np.zeros(observation_size(options), dtype=np.float32)
    layouts = view["layouts"]
    n = len(layouts)
    own = next((i for i, lay in enumerate(layouts) if seat in lay["seats"]), 0)
    per_layout = 2 + _CARD_SLOTS + 2 + _CARD_SLOTS + options.work_piles * (1 + 2 * _CARD_SLOTS)
    for r in range(n):
        lay = layouts[(own + r) % n]
        base = r * per_layout
        out[base] = lay["nerts"]["count"]
        out[base + 1] = 1 if lay["stuck"] else 0
        slot = card_slot(lay["nerts"]["top"])
        if slot >= 0:
            out[base + 2 + slot] = 1
        base += 2 + _CARD_SLOTS
        out[base] = lay["stock"]["count"]
        out[base + 1] = lay["waste"]["count"]
        slot = card_slot(lay["waste"]["top"])
        if slot >= 0:
            out[base + 2 + slot] = 1
        base += 2 + _CARD_SLOTS
        for pile in lay["work"]:
            out[base] = len(pile)
            if pile:
                out[base + 1 + card_slot(pile[0])] = 1
                out[base + 1 + _CARD_SLOTS + card_slot(pile[-1])] = 1
            base += 1 + 2 * _CARD_SLOTS
    base = n * per_layout
    for found in view["foundations"][: 4 * n]:
        at = base + int(found["id"]) * _FOUNDATION
        out[at] = 1
        out[at + 1 + SUITS.index(found["suit"])] = 1
        top = found["cards"][-1]
        code = top.get("as", top["card"])
        out[at + 5] = RANK_CODES.index(code[:-1]) + 1
        out[at + 6] = 1 if found["finished"] else 0
    base += 4 * n * _FOUNDATION
    called = view["called"]
    out[base] = 0 if called is None else 1
    out[base + 1] = 1 if called == seat else 0
    out[base + 2] = view["ms"] / 1000
    players = len(view["scores"])
    for s in range(players):
        out[base + 3 + (s - seat) % players] = view["scores"][s]
    return out


def env(**kwargs: Any) -> Any:
    """The AEC form of :class:`parallel_env` (PettingZoo's ``parallel_to_aec``), with its order checks."""
    return wrappers.OrderEnforcingWrapper(parallel_to_aec(parallel_env(**kwargs)))


class parallel_env(ParallelEnv):
    """Nerts, 1 to 8 seats, one hand per episode.

    Keyword arguments: the game's options (``players``, ``work_piles``, ``nerts_pile_size``, ``flip_count``,
    ``tie_window_ms``, ``in_flight_ms``, ``stall_seconds``... as ``NertsOptions``; not ``jokers``), ``tick_ms``
    (default 100), ``max_cycles`` (ticks, default 6,000) and ``render_mode`` (``"ansi"`` or ``None``). A bad
    option raises ``ValueError`` naming it.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "nerts_v0",
        "render_modes": ["ansi"],
        "is_parallelizable": True,
    }

    def __init__(
        self,
        tick_ms: int = 100,
        max_cycles: int = 6000,
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        self.options = NertsOptions.from_dict(options)
        if self.options.jokers:
            raise ValueError("jokers: not supported by nerts_v0")
        if not isinstance(tick_ms, int) or tick_ms < 1:
            raise ValueError(f"tick_ms: expected a whole number of milliseconds >= 1, not {tick_ms!r}")
        if not isinstance(max_cycles, int) or max_cycles < 1:
            raise ValueError(f"max_cycles: expected a whole number >= 1, not {max_cycles!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode: expected 'ansi' or None, not {render_mode!r}")
        self.tick_ms = tick_ms
        self.max_cycles = max_cycles
        self.render_mode = render_mode
        self.codec = ActionCodec(self.options)
        self.possible_agents = [f"seat_{s}" for s in range(self.options.players)]
        self.agents: list[str] = []
        size = observation_size(self.options)
        self._observation_space = spaces.Dict(
            {
                "observation": spaces.Box(-1000.0, 1000.0, shape=(size,), dtype=np.float32),
                "action_mask": spaces.Box(0, 1, shape=(self.codec.size,), dtype=np.int8),
            }
        )
        self._action_space = spaces.Discrete(self.codec.size)
        self.np_random = np.random.default_rng()
        self.state: NertsState | None = None
        self.match: NertsMatch | None = None
        self._record: records.Record | None = None
        self.ticks = 0
        self._last_ms = 0

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        """``Dict(observation=Box(float32), action_mask=Box(int8, codec.size))``."""
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Space[Any]:
        """``Discrete(codec.size)``: 0 is the no-op."""
        return self._action_space

    def _observations(self) -> dict[str, dict[str, Any]]:
        assert self.state is not None
        now = self.ticks * self.tick_ms
        out = {}
        for agent in self.agents:
            seat = self.possible_agents.index(agent)
            legal = self.state.legal_actions(seat, max(now, self.state.ms))
            out[agent] = {
                "observation": observe(self.state.view(seat), self.options),
                "action_mask": self.codec.mask(legal),
            }
        return out

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Deal a new hand (from ``seed`` when given, or ``options={"deal": {"packs": ...}}``, a record's
        deal); returns observations and infos."""
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        self.match = NertsMatch(self.options)
        deal = self.match.deal_cards(int(self.np_random.integers(2**31)))
        if options and "deal" in options:
            deal = dict(options["deal"])
        self.state = self.match.start_hand(deal)
        self._record = records.new_record(
            "nerts", [records.Seat(name=a) for a in self.possible_agents], self.options.to_dict()
        )
        self._record.hands.append(records.HandRecord(deal=deal, actions=[]))
        self.agents = self.possible_agents[:]
        self.ticks = 0
        self._last_ms = 0
        return self._observations(), {agent: {} for agent in self.agents}

    def _apply(self, seat: int | None, action: Action, ms: int) -> bool:
        assert self.state is not None and self._record is not None
        ms = max(ms, self._last_ms)
        try:
            self.state.apply(seat, action, ms)
        except ValueError:
            return False
        self._last_ms = ms
        self._record.hands[-1].actions.append(records.ActionRecord(seat=seat, ms=ms, action=action))
        return True

    def _run_clock(self, until: int) -> None:
        """Apply the table's clock actions due by ``until`` ms (the end of a hand after a call, the stall rotate)."""
        assert self.state is not None
        while not self.state.is_over:
            due = self.state.clock_action()
            if due is None or due[0] > until:
                return
            self._apply(None, due[1], due[0])

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]]:
        """One tick: the seats' actions in a seeded random order, the clock, then observations and rewards.

        An index out of range raises ``ValueError``; an action the engine refuses (the mask was taken at the
        start of the tick, another seat may have taken the card) does nothing and is reported in ``infos``.
        """
        assert self.state is not None
        start = self.ticks * self.tick_ms
        infos: dict[str, dict[str, Any]] = {agent: {} for agent in self.agents}
        chosen = []
        for agent in self.agents:
            index = int(actions.get(agent, NOOP))
            action = self.codec.action(index)
            if action is not None:
                chosen.append((self.possible_agents.index(agent), agent, action))
        order = self.np_random.permutation(len(chosen))
        for position, k in enumerate(order):
            seat, agent, action = chosen[int(k)]
            ms = start + (position * self.tick_ms) // max(1, len(chosen))
            self._run_clock(ms)
            if self.state.is_over:
                break
            infos[agent]["refused"] = not self._apply(seat, action, ms)
        self.ticks += 1
        self._run_clock(self.ticks * self.tick_ms)
        over = self.state.is_over
        truncated = not over and self.ticks >= self.max_cycles
        scores = self.state.scores()
        rewards = {
            agent: float(scores[self.possible_agents.index(agent)]) if over else 0.0 for agent in self.agents
        }
        terminations = dict.fromkeys(self.agents, over)
        truncations = dict.fromkeys(self.agents, truncated)
        observations = self._observations()
        if over or truncated:
            if over and self.match is not None:
                self.match.finish_hand()
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def record(self) -> dict[str, Any]:
        """The episode so far as a ``cardtable/1`` record (``docs/records.md``), ready for ``cardtable replay``."""
        if self._record is None:
            raise ValueError("no episode yet: call reset() first")
        return self._record.to_dict()

    def render(self) -> str | None:
        """``render_mode="ansi"``: the table as text (public cards only)."""
        if self.render_mode is None or self.state is None:
            return None
        view = self.state.view(None)
        lines = [
            f"Nerts at {self.ticks * self.tick_ms} ms" + (f", over ({view['ended']})" if view["over"] else "")
        ]
        for lay in view["layouts"]:
            work = " | ".join(" ".join(pile) or "-" for pile in lay["work"])
            lines.append(
                f"seats {lay['seats']}: nerts {lay['nerts']['count']} ({lay['nerts']['top']}), "
                f"waste {lay['waste']['top']}, stock {lay['stock']['count']}, work {work}"
            )
        tops = [f"{f['cards'][-1].get('as', f['cards'][-1]['card'])}" for f in view["foundations"]]
        lines.append("foundations: " + (" ".join(tops) or "-"))
        lines.append(f"scores: {view['scores']}")
        return "\n".join(lines)

    def close(self) -> None:
        """Nothing to release."""
