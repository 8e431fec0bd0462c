"""Enemy Anemone's engine and search bot play exactly as they did before they were made faster.

Golden fingerprints, computed from the code before the speed work (issue 28) and stored below: seeded whole
matches of 2 to 6 seats (both ``random_first_leader`` settings) between the random, heuristic and searching bots
(every search option at a small budget and no wall-clock cap), hashing every action, its events as each seat
sees them, every seat's and a spectator's view along the way, the scores, results and winners; the search's
chosen move and root visit counts from fixed positions and seeds (so the search must draw the same random
numbers in the same order); the engine's and the search's random playouts; and the determinizations dealt.

A fingerprint that changes means the rules, a view, an event or a bot's choice changed: the speed work must not
do that (if a change is meant, recompute with :func:`fingerprints` and say why in the commit).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from cardtable.bots import make_bot
from cardtable.bots.ismcts import LEVELS, Budget, Determinizer, IsmctsBot, playout, search
from cardtable.games.anemone import AnemoneMatch, AnemoneOptions, AnemoneState

NO_CAP = 1e9
"""Seconds: a wall-clock cap no search reaches, so that only the simulation budget stops it."""

SEARCHES: dict[str, Budget] = {
    "easy": Budget(40, NO_CAP),
    "hard": replace(LEVELS["hard"], simulations=48, seconds=NO_CAP),
    "smart_mast": Budget(
        40, NO_CAP, smart=0.5, mast=0.5, win_weight=0.5, own_win=0.5, others_exploration=1.2
    ),
    "imagined": Budget(40, NO_CAP, self_determinize=0.3, greedy=0.3, max_depth=3),
    "paired": Budget(40, NO_CAP, halving=True, paired=True, common_playouts=True, prune_spends=True),
}
"""Search budgets the matches use: ``ismcts:easy`` and ``ismcts:hard``'s options, and every other option."""

MATCHES: dict[str, tuple[int, int, bool, tuple[str, ...]]] = {
    "p2": (2, 2, False, ("hard", "heuristic")),
    "p3": (3, 2, True, ("random", "heuristic", "easy")),
    "p4": (4, 2, False, ("hard", "smart_mast", "random", "heuristic")),
    "p5": (5, 1, True, ("imagined", "paired", "random", "heuristic", "hard")),
    "p6": (6, 1, False, ("heuristic", "random", "easy", "random", "heuristic", "hard")),
}
"""Match cases: (players, rounds, random_first_leader, bot of each seat)."""


def _bot(name: str, seed: int) -> Any:
    if name in SEARCHES:
        return IsmctsBot(seed, SEARCHES[name])
    return make_bot("anemone", name, seed)


def _digest(entries: list[Any]) -> str:
    text = json.dumps(entries, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def play_match(players: int, rounds: int, random_first_leader: bool, bots: tuple[str, ...], seed: int) -> str:
    """Play a whole match between ``bots`` dealt from ``seed``; the digest of everything that happened."""
    match = AnemoneMatch(
        AnemoneOptions(players=players, rounds=rounds, random_first_leader=random_first_leader)
    )
    seats = [_bot(name, seed * 100 + seat) for seat, name in enumerate(bots)]
    log: list[Any] = []
    for hand in range(rounds):
        deal = match.deal_cards(seed * 16 + hand)
        state = match.start_hand(deal)
        log.append(["deal", deal])
        ms = 0
        step = 0
        while not state.is_over:
            seat = state.to_act()[0]
            legal = state.legal_actions(seat)
            view = state.view(seat)
            action = seats[seat].choose(view, legal)
            assert action is not None
            events = state.apply(seat, action, ms)
            log.append([seat, action, legal, [state.events_for(events, s) for s in [*range(players), None]]])
            if step % 5 == 0:
                log.append([state.view(s) for s in [*range(players), None]])
            step += 1
            ms += 250
        log.append([state.view(s) for s in [*range(players), None]])
        result = match.finish_hand()
        log.append(["result", result.scores, result.ended, result.extra, match.totals, match.anemones])
    log.append(["winners", match.winners()])
    return _digest(log)


def position(players: int, seed: int, steps: int) -> AnemoneState:
    """A hand of ``players`` seats after ``steps`` random legal actions through the public API."""
    state = AnemoneMatch(AnemoneOptions(players=players)).start_hand({"seed": seed})
    rng = random.Random(seed)
    for _ in range(steps):
        if state.is_over:
            break
        seat = state.to_act()[0]
        state.apply(seat, rng.choice(state.legal_actions(seat)))
    return state


POSITIONS = [
    (players, seed, steps) for players in (2, 3, 4, 5, 6) for seed, steps in ((1, 0), (2, 3), (3, 9))
]
"""Positions (players, deal seed, random steps) the searches, playouts and determinizations start from."""


def searches() -> str:
    """The move and root visits of every search budget from every position."""
    log: list[Any] = []
    for players, seed, steps in POSITIONS:
        state = position(players, seed, steps)
        view = state.view(state.turn)
        for name, budget in SEARCHES.items():
            move, visits = search(view, budget, random.Random(seed * 31 + steps))
            log.append([players, seed, steps, name, move, sorted(visits.items())])
    for players in (2, 4, 6):
        # a deeper tree: the hard level's search at 600 simulations from a hand's first move
        view = position(players, 5, 0).view(0)
        move, visits = search(
            view, replace(LEVELS["hard"], simulations=600, seconds=NO_CAP), random.Random(5)
        )
        log.append([players, move, sorted(visits.items())])
    return _digest(log)


def playouts() -> str:
    """The engine's ``playout`` and the search's ``playout`` (every policy, with its trace) from every position."""
    log: list[Any] = []
    for players, seed, steps in POSITIONS:
        state = position(players, seed, steps)
        for k in range(3):
            copy = state.copy()
            copy.playout(random.Random(k), anemone_chance=0.1 + 0.3 * k)
            log.append([copy.view(None), copy.scores()])
        options: list[dict[str, Any]] = [{}, {"greedy": 0.5}, {"smart": 0.7}, {"mast": 0.6}]
        for k, opts in enumerate(options):
            copy = state.copy()
            trace: list[Any] = []
            played: list[int] = []
            mast_value = [random.Random(k).random() for _ in range(64)]
            playout(copy, random.Random(k), trace=trace, mast_value=mast_value, played=played, **opts)
            log.append(
                [trace, played, copy.points, copy.anemones, copy.supply, copy.over, copy.deck, copy.hands]
            )
    return _digest(log)


def determinizations() -> str:
    """Ten samples of each kind (shuffle, card by card, the seat's own hand hidden) from every position."""
    log: list[Any] = []
    for players, seed, steps in POSITIONS:
        state = position(players, seed, steps)
        view = state.view(state.turn)
        rng = random.Random(seed)
        det = Determinizer(view)
        hidden = Determinizer(view, hide_own=True)
        for _ in range(10):
            log.append([det.sample(rng), det.sample_card_by_card(rng), hidden.sample(rng)])
    return _digest(log)


GOLDEN: dict[str, str] = {
    "determinizations": "f4796ed34a97d261bcaeb9de",
    "match p2 seed 1": "7a394c89d9442195c0e8f796",
    "match p2 seed 2": "86afc93548135eb630bf9f23",
    "match p3 seed 1": "f27a2b7e07d626d211cc6a03",
    "match p3 seed 2": "e6dc5a7204a7b516cb500fae",
    "match p4 seed 1": "694ebdd5ac86a2de87e37b38",
    "match p4 seed 2": "f77e36857fd36a5cab5bf6ce",
    "match p5 seed 1": "581d30e4a1a320b78e5c5c0a",
    "match p5 seed 2": "a38c7cb69b0399bdfba62c21",
    "match p6 seed 1": "ce80e3519bd07efd6d42f2f9",
    "match p6 seed 2": "1362e243ce79446b2273acfc",
    "playouts": "2e6ca3339339d4269a93b1f2",
    "random 2 False": "06b8519c34e913d91dff22eb",
    "random 2 True": "8e73c4fb85adc91533224a68",
    "random 3 False": "8294e72f8d23dbbd9d7abe30",
    "random 3 True": "b6e1206522fc64b35408a840",
    "random 4 False": "ea832d5c93e8707ba235e9a8",
    "random 4 True": "efcc6b0dc4af1387cbfefb4e",
    "random 5 False": "aa9d0740f0e285414d0d6818",
    "random 5 True": "e1004f8d3bbb391c9fa5cf27",
    "random 6 False": "93a8fb298e3772476dbb2ecc",
    "random 6 True": "5634d9e52147cd1b384a4108",
    "searches": "eee5ca593ac006e582e343e2",
}
"""Fingerprints computed from the engine and search before issue 28's speed work (``python tests/test_anemone_equivalence.py`` prints them)."""

CASES: dict[str, Callable[[], str]] = {
    **{
        f"match {name} seed {seed}": (
            lambda spec=spec, seed=seed: play_match(spec[0], spec[1], spec[2], spec[3], seed)
        )
        for name, spec in MATCHES.items()
        for seed in (1, 2)
    },
    **{
        f"random {players} {first}": (
            lambda players=players, first=first: play_match(
                players, 3, first, ("random",) * players, 7 + players
            )
        )
        for players in (2, 3, 4, 5, 6)
        for first in (False, True)
    },
    "searches": searches,
    "playouts": playouts,
    "determinizations": determinizations,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fingerprint_is_unchanged(name: str) -> None:
    assert CASES[name]() == GOLDEN[name]


def fingerprints() -> dict[str, str]:
    """Every fingerprint, by name (what ``GOLDEN`` holds)."""
    return {name: CASES[name]() for name in sorted(CASES)}


if __name__ == "__main__":
    print(json.dumps(fingerprints(), indent=4))
