"""Enemy Anemone as an OpenSpiel Python game, ``python_enemy_anemone`` (the ``ai`` extra; ``docs/ai.md``).

Importing this module registers the game with ``pyspiel.register_game``; then
``pyspiel.load_game("python_enemy_anemone", {"players": 4, "rounds": 1})`` makes it. The rules are
``cardtable.games.anemone`` (``docs/rules/enemy-anemone.md``): this module only deals through chance nodes and
translates actions.

- Chance nodes deal each hand card by card (seat 0's cards first, then seat 1's, ...; with 2 seats then the 16
  cards of the central deck, top first, so the draws are chance outcomes seen by no one until drawn), and, for
  the first hand with ``random_first_leader``, draw the leader. A chance outcome is an engine card number
  (0-59; the leader draw: a seat number).
- Player actions are the indices of :mod:`cardtable.envs.anemone_encoding` (3,360 distinct actions).
- Imperfect information: information state and observation strings and tensors per player, from the player's
  own view and its private history only.
- Rewards: each seat's points at the end of each hand; returns: the match totals so far, in points.
- Parameters: ``players`` (2-6, default 4), ``rounds`` (1-10, default 1), ``random_first_leader`` (default
  false), as the table's options.

States implement ``resample_from_infostate`` (the hidden cards dealt again consistently with the player's view:
hand counts, deck count, the voids forced discards reveal), which ``open_spiel.python.algorithms.ismcts`` uses.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyspiel

from cardtable.bots import Bot, make_bot
from cardtable.bots.ismcts import Determinizer
from cardtable.envs import anemone_encoding as enc
from cardtable.games.anemone import (
    CODE,
    POINTS_OF,
    SUIT_OF,
    AnemoneMatch,
    AnemoneOptions,
    AnemoneState,
    card_number,
    game_cards,
    hand_size,
)

GAME_NAME = "python_enemy_anemone"
_DEFAULTS = {"players": 4, "rounds": 1, "random_first_leader": False}
_MAX_TRICKS = 10
_TERMINAL = int(pyspiel.PlayerId.TERMINAL)
_CHANCE = int(pyspiel.PlayerId.CHANCE)
_TRICK_SLOT = enc.CARDS + 2

_GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Enemy Anemone (cardtable)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.GENERAL_SUM,
    reward_model=pyspiel.GameType.RewardModel.REWARDS,
    max_num_players=6,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=_DEFAULTS,
)


def _points_in_game(players: int) -> int:
    return sum(POINTS_OF[card] for card in game_cards(players))


def _action_string(index: int) -> str:
    act = enc.index_action(index)
    if act["type"] == "discard":
        return f"discard {act['card']}"
    spent = "".join(f"+{f}" for f in act["anemones"])
    return f"play {act['card']}{spent}"


_ACTION_STRINGS = tuple(_action_string(i) for i in range(enc.NUM_ACTIONS))
"""Each player action as text (``play 7C+1+2``, ``discard 10F``), by index."""
_SPEND_COUNT = len(enc.SPENDS)
_SPENDS_HELD: dict[tuple[int, int], tuple[int, ...]] = {
    (ones, twos): tuple(sorted(enc.spend_index(i, j) for i in range(ones + 1) for j in range(twos + 1)))
    for ones, twos in enc.SPENDS
}
"""For the faces a seat holds (``ones`` +1s, ``twos`` +2s): the spend index of every way to spend some of them,
ascending."""
_SPEND_FACES: tuple[tuple[int, ...], ...] = tuple((1,) * ones + (2,) * twos for ones, twos in enc.SPENDS)
"""The anemone faces a spend index spends, as the engine's moves list them (+1s first)."""
_MOVES: tuple[tuple[bool, int, tuple[int, ...]], ...] = tuple(
    (True, index // _SPEND_COUNT, _SPEND_FACES[index % _SPEND_COUNT])
    if index < enc.PLAYS
    else (False, index - enc.PLAYS, ())
    for index in range(enc.NUM_ACTIONS)
)
"""The engine move ``(is_play, card, anemone faces)`` of each action index."""
_SUIT_BIT: tuple[int, ...] = tuple(1 << suit for suit in SUIT_OF)


def _legal_indices(hand: AnemoneState) -> tuple[int, ...]:
    """The legal action indices of the seat to act in ``hand`` (a hand not over), ascending.

    Every hand of the game's engine state is kept in ascending card order (sorted when dealt, resampled or
    drawn into), so the playable cards come out ascending without sorting.
    """
    turn = hand.turn
    held = hand.hands[turn]
    mask = hand.trick_suit_mask
    if mask:
        suit_bit = _SUIT_BIT
        playable = [card for card in held if not mask & suit_bit[card]]
        if not playable:
            return tuple([enc.PLAYS + card for card in held])
    else:
        playable = held
    faces = hand.anemones[turn]
    if faces:
        ones = faces.count(1)
        spends = _SPENDS_HELD[ones, len(faces) - ones]
        return tuple([card * _SPEND_COUNT + spend for card in playable for spend in spends])
    return tuple([card * _SPEND_COUNT for card in playable])


class EnemyAnemoneGame(pyspiel.Game):
    """The game for some options (``players``, ``rounds``, ``random_first_leader``); a bad one is a
    ``ValueError`` naming it."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        values = dict(_DEFAULTS)
        values.update(params or {})
        self.options = AnemoneOptions(
            players=int(values["players"]),
            rounds=int(values["rounds"]),
            random_first_leader=bool(values["random_first_leader"]),
        )
        players = self.options.players
        size = hand_size(players)
        deck = 16 if players == 2 else 0
        turns_per_hand = players * size + deck
        chance_per_hand = players * size + deck
        info = pyspiel.GameInfo(
            num_distinct_actions=enc.NUM_ACTIONS,
            max_chance_outcomes=enc.CARDS,
            num_players=players,
            min_utility=0.0,
            max_utility=float(_points_in_game(players) * self.options.rounds),
            utility_sum=None,
            max_game_length=(turns_per_hand + chance_per_hand) * self.options.rounds + 1,
        )
        super().__init__(_GAME_TYPE, info, params or {})

    def new_initial_state(self) -> EnemyAnemoneState:
        """A match about to be dealt (a chance node)."""
        return EnemyAnemoneState(self)

    def make_py_observer(
        self, iig_obs_type: pyspiel.IIGObservationType | None = None, params: dict[str, Any] | None = None
    ) -> AnemoneObserver:
        """The observer for information states (``perfect_recall``) or observations."""
        perfect_recall = iig_obs_type is not None and iig_obs_type.perfect_recall
        return AnemoneObserver(self.options.players, perfect_recall)


_NO_REWARDS: dict[int, tuple[float, ...]] = {n: (0.0,) * n for n in range(2, 7)}
_CACHES = ("actions", "info", "resampling")
"""The _Core slots that only cache what the others determine (never pickled)."""


class _Resampling:
    """What resampling a position for one player needs, computed once per position (``resample_from_infostate``
    runs once per simulation of OpenSpiel's ISMCTS, always from the same root state)."""

    __slots__ = ("determinizer", "kept", "played", "round_start")

    def __init__(self, state: EnemyAnemoneState, hand: AnemoneState, player: int) -> None:
        core = state.core
        players = core.match.options.players
        self.determinizer = Determinizer(hand.view(player))
        self.round_start = _round_start(core.public)
        # each seat's cards played or discarded this hand (public)
        self.played: list[list[int]] = [[] for _ in range(players)]
        for trick in [(hand.trick, hand.trick_discards), *((t[1], t[2]) for t in hand.history)]:
            for entries in trick:
                for entry in entries:
                    self.played[entry[0]].append(entry[1])
        # each other seat's private tokens from before this hand (its cards dealt this hand are replaced)
        self.kept = [
            [(i, token) for i, token in core.private[seat] if i < self.round_start] for seat in range(players)
        ]


class _Core:
    """The state's Python side, copied quickly (OpenSpiel clones a state by deep-copying its attributes).

    ``actions`` (the legal action indices of the position), ``info`` (per player, the information state string
    built so far, extended as the history grows) and ``resampling`` (per player, :class:`_Resampling`) are
    caches: shared by copies while they are the same position (``resampling`` may gain a player's entry, valid
    for all of them), dropped when the position changes, never pickled.
    """

    __slots__ = (
        "actions",
        "dealt",
        "info",
        "leader",
        "match",
        "ms",
        "player",
        "private",
        "public",
        "resampling",
        "rewards",
    )

    def __init__(self, options: AnemoneOptions) -> None:
        self.match = AnemoneMatch(options)
        self.dealt: list[int] = []
        self.leader: int | None = None
        self.ms = 0
        self.public: list[str | tuple[int, int]] = []  # a seat's action stays (seat, index) until shown
        self.player = _CHANCE  # the player to act, kept up to date by the state
        self.private: list[list[tuple[int, str]]] = [[] for _ in range(options.players)]
        self.rewards: tuple[float, ...] = _NO_REWARDS[options.players]  # replaced, never mutated
        # the legal action indices of the position, ascending (computed once per position, never mutated:
        # copies share them); None until asked for
        self.actions: tuple[int, ...] | None = None
        # per player: (public tokens, private tokens, text) of the information state built so far, or None
        self.info: list[tuple[int, int, str] | None] = [None] * options.players
        self.resampling: dict[int, _Resampling] | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> _Core:
        other = _Core.__new__(_Core)
        other.match = self.match.copy()
        other.dealt = self.dealt[:]
        other.leader = self.leader
        other.ms = self.ms
        other.public = self.public[:]
        other.player = self.player
        other.private = [p[:] for p in self.private]
        other.rewards = self.rewards
        other.actions = self.actions
        other.info = self.info[:]
        other.resampling = self.resampling
        return other

    def __getstate__(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__ if name not in _CACHES}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.actions = None
        self.resampling = None
        for name, value in state.items():
            setattr(self, name, value)
        self.rewards = tuple(self.rewards)
        self.info = [None] * len(self.private)

    def changed(self) -> None:
        """Drop the caches of the position (after an action)."""
        self.actions = None
        self.resampling = None


class EnemyAnemoneState(pyspiel.State):
    """A match of Enemy Anemone in progress: chance deals, then the seats' turns, hand after hand."""

    def __init__(self, game: EnemyAnemoneGame) -> None:
        super().__init__(game)
        self.core = _Core(game.options)

    # ------------------------------------------------------------------ helpers

    @property
    def _options(self) -> AnemoneOptions:
        return self.core.match.options

    def _hand(self) -> AnemoneState | None:
        """The hand in play (``None`` while dealing or once the match is over)."""
        return self.core.match.hand if self.core.player >= 0 else None

    def _deal_size(self) -> int:
        players = self._options.players
        return players * hand_size(players) + (16 if players == 2 else 0)

    def _needs_leader(self) -> bool:
        return self._options.random_first_leader and self.core.match.round == 0

    # ------------------------------------------------------------------ pyspiel.State

    def current_player(self) -> int:
        """The seat to act, ``pyspiel.PlayerId.CHANCE`` while dealing, ``TERMINAL`` once the match is over."""
        return self.core.player

    def _actions(self) -> tuple[int, ...]:
        """The legal action indices of the seat to act, ascending (the engine's :meth:`AnemoneState.moves` as
        indices); cached until the next action (empty while dealing or once over)."""
        core = self.core
        actions = core.actions
        if actions is None:
            actions = core.actions = _legal_indices(core.match.hand) if core.player >= 0 else ()  # type: ignore[arg-type]
        return actions

    def _legal_actions(self, player: int) -> list[int]:
        hand = self._hand()
        if hand is None or player != hand.turn:
            return []
        return list(self._actions())

    def legal_actions(self, player: int | None = None) -> list[int]:
        """The legal action indices of ``player`` (default: the player to act), ascending, as OpenSpiel's
        ``State.legal_actions`` gives them (its own answer for chance nodes, a terminal state and a player not
        to act); answered here directly for the seat to act, without the round trip through C++."""
        core = self.core
        if core.player >= 0 and (player is None or player == core.player):
            actions = core.actions
            if actions is None:
                actions = core.actions = _legal_indices(core.match.hand)  # type: ignore[arg-type]
            return list(actions)
        if player is None:
            return list(pyspiel.State.legal_actions(self))
        return list(pyspiel.State.legal_actions(self, player))

    def is_chance_node(self) -> bool:
        """True while dealing (or drawing the first leader)."""
        return self.core.player == _CHANCE

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The cards not yet dealt, equally likely (or the seats, for the leader draw)."""
        core = self.core
        if len(core.dealt) < self._deal_size():
            dealt = set(core.dealt)
            left = [c for c in game_cards(self._options.players) if c not in dealt]
            return [(c, 1.0 / len(left)) for c in left]
        players = self._options.players
        return [(s, 1.0 / players) for s in range(players)]

    def _apply_action(self, action: int) -> None:
        core = self.core
        if core.player == _CHANCE:
            self._deal(int(action))  # a hand's rewards stay until the next seat acts
            return
        hand = core.match.hand
        assert hand is not None
        seat = hand.turn
        action = int(action)
        actions = core.actions
        if actions is None:
            actions = _legal_indices(hand)
        if action not in actions:
            raise ValueError(f"action {action} is not legal for seat {seat} here")
        is_play, card, faces = _MOVES[action]
        core.rewards = _NO_REWARDS[hand.players]
        core.actions = None
        core.resampling = None
        public = core.public
        # the engine's step, as its apply does after checking (the events are only needed for the 2-seat draws)
        if hand.deck:
            events: list[dict[str, Any]] = []
            hand.step(is_play, card, faces, events)
            public.append((seat, action))
            for event in events:
                if event["type"] == "drew":
                    drawer = event["seat"]
                    hand.hands[drawer].sort()  # hands are kept in ascending order (_legal_indices)
                    core.private[drawer].append((len(public), f"drew:{','.join(event['cards'])}"))
        else:
            hand.step(is_play, card, faces, None)
            public.append((seat, action))
        hand.last_ms = core.ms
        core.ms += 1000
        if hand.over:
            result = core.match.finish_hand()
            core.rewards = tuple([float(points) for points in result.scores])
            public.append(f"end:{','.join([str(p) for p in result.scores])}")
            core.dealt = []
            core.leader = None
            self._update_player()
        else:
            core.player = hand.turn

    def _update_player(self) -> None:
        match = self.core.match
        if match.is_over:
            self.core.player = _TERMINAL
        elif len(match.results) == match.round:
            self.core.player = _CHANCE
        else:
            hand = match.hand
            assert hand is not None
            self.core.player = hand.turn

    def _deal(self, outcome: int) -> None:
        core = self.core
        core.changed()
        players = self._options.players
        size = hand_size(players)
        if len(core.dealt) < self._deal_size():
            position = len(core.dealt)
            core.dealt.append(outcome)
            if position < players * size:
                core.private[position // size].append((len(core.public), f"dealt:{CODE[outcome]}"))
            if len(core.dealt) < self._deal_size() or self._needs_leader():
                return
        else:
            core.leader = outcome
            core.public.append(f"leader:{outcome}")
        codes = [CODE[c] for c in core.dealt]
        deal: dict[str, Any] = {"hands": [codes[s * size : (s + 1) * size] for s in range(players)]}
        if players == 2:
            deal["deck"] = codes[players * size :]
        if self._needs_leader():
            deal["leader"] = core.leader
        for held in core.match.start_hand(deal).hands:
            held.sort()  # kept in ascending order (_legal_indices)
        core.ms = 0
        core.public.append(f"hand:{core.match.round}")
        self._update_player()

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            if len(self.core.dealt) >= self._deal_size():
                return f"leader:{action}"
            return f"deal:{CODE[action]}"
        return _ACTION_STRINGS[action]

    def is_terminal(self) -> bool:
        """True once every hand of the match has been played."""
        return self.core.player == _TERMINAL

    def returns(self) -> list[float]:
        """The match totals so far (points of the finished hands), per seat."""
        return [float(t) for t in self.core.match.totals]

    def rewards(self) -> list[float]:
        """Points each seat scored by the last seat's action (its hand's points when that action ended a hand;
        the deal that follows keeps them)."""
        return list(self.core.rewards)

    def information_state_string(self, player: int | None = None) -> str:
        """The information state of ``player`` (default: the player to act) as text: what the C++ side gives
        through :meth:`AnemoneObserver.string_from`, without the round trip (and built incrementally)."""
        if player is None:
            player = self.core.player
        if not 0 <= player < len(self.core.private):
            return str(pyspiel.State.information_state_string(self, player))
        return _information_state(self, player)

    def resample_from_infostate(self, player_id: int, probability_sampler: Any = None) -> EnemyAnemoneState:
        """A state ``player_id`` cannot tell from this one: every card hidden from it dealt again at random,
        consistently with its view. Only while a hand is in play (else a plain clone)."""
        state: EnemyAnemoneState = self.clone()
        hand = state._hand()
        if hand is None:
            return state
        core = self.core
        resampling = core.resampling
        if resampling is None:
            resampling = core.resampling = {}
        known = resampling.get(player_id)
        if known is None:
            known = resampling[player_id] = _Resampling(self, hand, player_id)
        seed = None
        if probability_sampler is not None:
            seed = int(probability_sampler() * 2**31) if callable(probability_sampler) else None
        rng = random.Random(seed)
        hands, deck = known.determinizer.sample(rng)
        other = state.core
        round_start = known.round_start
        for seat in range(len(hands)):
            if seat == player_id:
                continue
            hand.hands[seat] = sorted(hands[seat])  # kept in ascending order (_legal_indices)
            held = sorted([CODE[c] for c in hands[seat] + known.played[seat]])
            other.private[seat] = [*known.kept[seat], (round_start, "held:" + ",".join(held))]
            other.info[seat] = None
        if hand.turn != player_id:
            other.actions = None
        # the resampled state looks the same to player_id only
        other.resampling = {player_id: known}
        hand.deck = deck
        return state

    def __str__(self) -> str:
        hand = self.core.match.hand
        if hand is None:
            return f"dealing ({len(self.core.dealt)} cards dealt)"
        view = hand.view(None)
        return (
            f"hand {view.get('round')}/{view.get('rounds')} turn {view['turn']} "
            f"trick {[p['card'] for p in view['trick']]} points {view['points']} "
            f"totals {self.core.match.totals}"
        )


def _information_state(state: EnemyAnemoneState, player: int) -> str:
    """:meth:`AnemoneObserver.string_from` with ``perfect_recall``, from the text cached on the state: the
    public and the player's private tokens form one stream only ever appended to (a private token goes before
    the public token at its index; resampling rewrites other seats' private tokens and drops their text), so
    only the tokens added since are rendered."""
    core = state.core
    public = core.public
    private = core.private[player]
    cached = core.info[player]
    n_public, n_private, body = cached if cached is not None else (0, 0, "")
    if n_public < len(public) or n_private < len(private):
        tokens: list[str] = []
        j = n_private
        end = len(private)
        strings = _ACTION_STRINGS
        for i in range(n_public, len(public)):
            while j < end and private[j][0] <= i:
                tokens.append(private[j][1])
                j += 1
            token = public[i]
            tokens.append(token if isinstance(token, str) else f"{token[0]}:{strings[token[1]]}")
        while j < end:
            tokens.append(private[j][1])
            j += 1
        added = " ".join(tokens)
        body = f"{body} {added}" if body else added
        core.info[player] = (len(public), end, body)
    hand = core.match.hand
    own = ",".join([CODE[c] for c in sorted(hand.hands[player])]) if hand is not None else ""
    return f"p{player} {body} | hand:{own}"


def information_state_from_scratch(state: EnemyAnemoneState, player: int) -> str:
    """The information state string of ``player`` built from the whole history at once (what
    ``information_state_string`` returns, built incrementally; kept for the tests to compare with)."""
    core = state.core
    hand = core.match.hand
    own = ",".join(CODE[c] for c in sorted(hand.hands[player])) if hand is not None else ""
    tokens = [
        token if isinstance(token, str) else f"{token[0]}:{state.action_to_string(token[0], token[1])}"
        for token in core.public
    ]
    for index, token in reversed(core.private[player]):
        tokens.insert(index, token)
    return f"p{player} " + " ".join(tokens) + f" | hand:{own}"


def _round_start(public: list[str | tuple[int, int]]) -> int:
    """Where the current (or last) hand's ``hand:N`` token is in ``public``; -1 before the first deal."""
    for i in range(len(public) - 1, -1, -1):
        token = public[i]
        if isinstance(token, str) and token.startswith("hand:"):
            return i
    return -1


class AnemoneObserver:
    """OpenSpiel's observer interface (``tensor``, ``dict``, ``set_from``, ``string_from``).

    Observation (``perfect_recall=False``): :func:`cardtable.envs.anemone_encoding.observe` of the player's view.
    Information state (``perfect_recall=True``): the same, then the player's own cards dealt this hand (60), then
    the current hand's tricks, trick by trick (10) and turn by turn (6): the card (60), 1 for a discard, the
    value played.
    """

    def __init__(self, players: int, perfect_recall: bool) -> None:
        self.players = players
        self.perfect_recall = perfect_recall
        size = enc.observation_size(players)
        pieces: list[tuple[str, int, tuple[int, ...]]] = [("view", size, (size,))]
        if perfect_recall:
            pieces.append(("dealt", enc.CARDS, (enc.CARDS,)))
            pieces.append(("tricks", _MAX_TRICKS * 6 * _TRICK_SLOT, (_MAX_TRICKS, 6, _TRICK_SLOT)))
        self.tensor = np.zeros(sum(p[1] for p in pieces), np.float32)
        self.dict: dict[str, Any] = {}
        index = 0
        for name, length, shape in pieces:
            self.dict[name] = self.tensor[index : index + length].reshape(shape)
            index += length

    def set_from(self, state: EnemyAnemoneState, player: int) -> None:
        """Fill ``tensor`` from ``player``'s point of view of ``state``."""
        self.tensor.fill(0)
        hand = state.core.match.hand
        if hand is not None:
            self.dict["view"][:] = enc.observe(hand.view(player), state.core.match.totals)
        if not self.perfect_recall:
            return
        round_start = _round_start(state.core.public)
        dealing = state.is_chance_node()
        for index, token in state.core.private[player]:
            if token.startswith("dealt:") and (index > round_start or (not dealing and index == round_start)):
                self.dict["dealt"][card_number(token[6:])] = 1
        if hand is None or dealing:
            return
        view = hand.view(player)
        tricks = [*view["tricks"], {"plays": view["trick"], "discards": view["trick_discards"]}]
        for t, trick in enumerate(tricks[:_MAX_TRICKS]):
            entries = [(p["order"], p["card"], 0, p["value"]) for p in trick["plays"]]
            entries += [(d["order"], d["card"], 1, 0) for d in trick["discards"]]
            for order, code, discard, value in entries:
                slot = self.dict["tricks"][t, order]
                slot[card_number(code)] = 1
                slot[enc.CARDS] = discard
                slot[enc.CARDS + 1] = value

    def string_from(self, state: EnemyAnemoneState, player: int) -> str:
        """The information state (everything ``player`` has seen, in order) or the observation as text."""
        if self.perfect_recall:
            return _information_state(state, player)
        core = state.core
        hand = core.match.hand
        own = ",".join(CODE[c] for c in sorted(hand.hands[player])) if hand is not None else ""
        if hand is None:
            return f"p{player} dealing"
        view = hand.view(player)
        trick = " ".join(f"{p['seat']}:{p['card']}={p['value']}" for p in view["trick"])
        discards = " ".join(f"{d['seat']}:{d['card']}" for d in view["trick_discards"])
        return (
            f"p{player} round:{view.get('round')} hand:{own} trick:[{trick}] discards:[{discards}] "
            f"leader:{view['leader']} turn:{view['turn']} points:{view['points']} totals:{core.match.totals} "
            f"anemones:{view['anemones']} supply:{view['supply']} deck:{view['deck_count']} "
            f"piles:{[len(p) for p in view['score_piles']]} seen:{sorted(c for p in view['score_piles'] for c in p)}"
        )


pyspiel.register_game(_GAME_TYPE, EnemyAnemoneGame)


class CardtableBot(pyspiel.Bot):
    """One of cardtable's Enemy Anemone bots (a spec, ``"ismcts:hard"``, ``"heuristic"``..., or a bot object
    such as ``IsmctsBot(seed, Budget(500, 60.0))``) as an OpenSpiel bot.

    It sees only its seat's view and legal actions (``cardtable.bots``), never the state's hidden cards.
    """

    def __init__(self, player_id: int, spec: str | Bot = "ismcts:hard", seed: int = 0) -> None:
        pyspiel.Bot.__init__(self)
        self.player_id = player_id
        self.bot = make_bot("anemone", spec, seed) if isinstance(spec, str) else spec

    def step(self, state: EnemyAnemoneState) -> int:
        """The action index the bot chooses for its seat (which must be to act)."""
        hand = state.core.match.hand
        assert hand is not None and state.current_player() == self.player_id
        legal = hand.legal_actions(self.player_id)
        action = self.bot.choose(hand.view(self.player_id), legal)
        assert action is not None
        return enc.action_index(action)

    def restart_at(self, state: EnemyAnemoneState) -> None:
        """Nothing to forget: the bot keeps no memory between moves."""

    def inform_action(self, state: EnemyAnemoneState, player_id: int, action: int) -> None:
        """Nothing to remember."""


def ismcts_bot(
    game: EnemyAnemoneGame, simulations: int, uct_c: float = 10.0, seed: int = 0, rollouts: int = 1
) -> pyspiel.Bot:
    """OpenSpiel's own ``ISMCTSBot`` (``RandomRolloutEvaluator`` with ``rollouts`` random rollouts, its default
    1; UCT; the most visited move; no limit on world samples) for this game.

    ``uct_c`` is in points, the scale of the game's returns. OpenSpiel's Python ISMCTS keeps no memory between
    moves but does not say so to ``evaluate_bots``; the bot returned here does (``restart_at`` and
    ``inform_action`` do nothing). Its world samples draw from a generator seeded by ``seed`` (through the bot's
    ``set_resampler`` hook, the same uniform resampling): left to itself the bot passes a fresh
    ``pyspiel.UniformProbabilitySampler`` each time, seeded by the machine, so the same seed gave different
    moves from run to run.
    """
    from open_spiel.python.algorithms import ismcts, mcts

    class _Bot(ismcts.ISMCTSBot):
        def restart_at(self, state: pyspiel.State) -> None:
            self.reset()

        def inform_action(self, state: pyspiel.State, player_id: int, action: int) -> None:
            pass

    random_state = np.random.RandomState(seed)
    evaluator = mcts.RandomRolloutEvaluator(rollouts, random_state)
    bot = _Bot(game, evaluator, uct_c, simulations, random_state=random_state)
    worlds = random.Random(seed)
    bot.set_resampler(lambda state, player: state.resample_from_infostate(player, worlds.random))
    return bot
