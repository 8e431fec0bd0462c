"""Our Enemy Anemone search against OpenSpiel's ISMCTS at equal simulations per move, and our search's speed.

Usage: ``python bench/anemone_vs_openspiel.py [--games 200] [--budgets 500,2500] [--settings pairs,solo]
[--jobs 1] [--seed 1] [--speed-positions 12]`` (needs the ``ai`` extra).

- Strength: four seats, one hand per game (``--rounds`` for more). ``pairs``: two of ours (``ismcts:hard``'s
  search with the simulation budget given and no time cap) against two of OpenSpiel's
  ``open_spiel.python.algorithms.ismcts.ISMCTSBot`` (random-rollout evaluator, UCT, ``uct_c`` 10 points),
  seats alternating and swapped every other game; ``solo``: one of ours against three of theirs, our seat
  rotating. A game is won by the highest score; a shared win counts 1/k to each side in it. Win rates with 95%
  Wilson intervals against par (1/2 for pairs, 1/4 for solo), and milliseconds per move of each bot (moves
  with a choice only).
- Speed: our search from four-seat positions (first moves of hands, and positions later in hands), a fixed number
  of simulations each: simulations per CPU second (and per wall-clock second), and the ratio to the baseline
  measured in the same run: the search as first written (``search(..., engine_playouts=True)``: the engine's
  ``AnemoneState.playout`` and a card-by-card deal).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyspiel

import cardtable.openspiel as cos
from cardtable.bots.ismcts import LEVELS, Budget, IsmctsBot, search
from cardtable.games.anemone import AnemoneMatch, AnemoneOptions
from cardtable.sim.anemone import wilson


@dataclass(frozen=True)
class Task:
    setting: str
    simulations: int
    game: int
    seed: int
    rounds: int


@dataclass
class Outcome:
    task: Task
    ours: list[int]
    returns: list[float]
    ms: dict[str, list[float]] = field(default_factory=dict)


def our_seats(setting: str, game: int) -> list[int]:
    """Seats our bot plays in game ``game`` of ``setting``."""
    if setting == "pairs":
        return [0, 2] if game % 2 == 0 else [1, 3]
    return [game % 4]


def play(task: Task) -> Outcome:
    """One game (a picklable entry point for the process pool)."""
    game = pyspiel.load_game(cos.GAME_NAME, {"players": 4, "rounds": task.rounds})
    ours = our_seats(task.setting, task.game)
    base = task.seed * 100_003 + task.game * 17
    hard = LEVELS["hard"]
    bots: list[pyspiel.Bot] = []
    for seat in range(4):
        if seat in ours:
            budget = Budget(task.simulations, 3600.0, hard.exploration)
            bots.append(cos.CardtableBot(seat, IsmctsBot(base + seat, budget)))
        else:
            bots.append(cos.ismcts_bot(game, task.simulations, seed=base + seat))
    rng = np.random.RandomState(base)
    state = game.new_initial_state()
    ms: dict[str, list[float]] = {"ours": [], "theirs": []}
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(outcomes, p=probs)))
            continue
        seat = state.current_player()
        choices = len(state.legal_actions())
        start = time.perf_counter()
        action = bots[seat].step(state)
        elapsed = (time.perf_counter() - start) * 1000
        if choices > 1:
            ms["ours" if seat in ours else "theirs"].append(elapsed)
        state.apply_action(int(action))
    return Outcome(task, ours, list(state.returns()), ms)


def our_share(outcome: Outcome) -> float:
    """Our share of the game's win (1/k per seat among k tied top seats)."""
    best = max(outcome.returns)
    top = [s for s, r in enumerate(outcome.returns) if r == best]
    return sum(1 for s in top if s in outcome.ours) / len(top)


def speed(positions: int, seed: int, simulations: int = 4000) -> None:
    """Simulations per second of our search and of the baseline (the search as first written).

    Each search runs a fixed number of simulations; the rate is given per second of this process's CPU time
    (what the search gets on an idle core; the wall-clock rate is printed too, lower on a busy machine).
    """
    rng = random.Random(seed)
    rates: dict[str, list[float]] = {"fast": [], "engine": [], "first": [], "wall": []}
    for i in range(positions):
        match = AnemoneMatch(AnemoneOptions(players=4))
        state = match.start_hand({"seed": seed * 1000 + i})
        if i % 2:
            for _ in range(rng.randrange(1, 30)):
                seat = state.to_act()[0]
                state.apply(seat, rng.choice(state.legal_actions(seat)))
        seat = state.to_act()[0]
        view = state.view(seat)
        for engine in (False, True):
            cpu = time.process_time()
            wall = time.perf_counter()
            _, visits = search(view, Budget(simulations, 3600.0), random.Random(i), engine_playouts=engine)
            done = sum(visits.values())
            rate = done / max(1e-9, time.process_time() - cpu)
            rates["engine" if engine else "fast"].append(rate)
            if not engine:
                rates["wall"].append(done / (time.perf_counter() - wall))
                if i % 2 == 0:
                    rates["first"].append(rate)
    fast, engine = statistics.mean(rates["fast"]), statistics.mean(rates["engine"])
    print(
        f"speed, {positions} four-seat positions, {simulations} simulations each: {fast:,.0f} simulations per "
        f"CPU second (min {min(rates['fast']):,.0f}; first move of a hand {statistics.mean(rates['first']):,.0f}); "
        f"baseline (as first written) {engine:,.0f}; ratio {fast / engine:.2f}x; wall clock {statistics.mean(rates['wall']):,.0f}/s",
        flush=True,
    )


def main() -> None:
    """Run the settings and budgets asked for and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200, help="games per setting and budget")
    parser.add_argument("--budgets", default="500,2500", help="simulations per move, comma-separated")
    parser.add_argument("--settings", default="pairs,solo", help="pairs, solo or both")
    parser.add_argument("--rounds", type=int, default=1, help="hands per game")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--speed-positions", type=int, default=12, help="0 to skip the speed test")
    parser.add_argument("--progress", action="store_true", help="print every game as it ends")
    args = parser.parse_args()
    if args.speed_positions:
        speed(args.speed_positions, args.seed)
    for simulations in (int(b) for b in args.budgets.split(",")):
        for setting in args.settings.split(","):
            tasks = [Task(setting, simulations, g, args.seed, args.rounds) for g in range(args.games)]
            start = time.perf_counter()
            outcomes = []
            with ProcessPoolExecutor(args.jobs) as pool:
                for outcome in pool.map(play, tasks):
                    outcomes.append(outcome)
                    if args.progress:
                        print(
                            f"  {setting} {simulations} game {outcome.task.game}: ours in seats {outcome.ours}, "
                            f"returns {outcome.returns}, our share of the win {our_share(outcome):.2f}",
                            flush=True,
                        )
            wins = sum(our_share(o) for o in outcomes)
            low, high = wilson(wins, len(outcomes))
            par = 0.5 if setting == "pairs" else 0.25
            ours_ms = [m for o in outcomes for m in o.ms["ours"]]
            theirs_ms = [m for o in outcomes for m in o.ms["theirs"]]
            margin = statistics.mean(
                statistics.mean(o.returns[s] for s in o.ours)
                - statistics.mean(o.returns[s] for s in range(4) if s not in o.ours)
                for o in outcomes
            )
            verdict = "ahead" if low > par else ("behind" if high < par else "not clear of par")
            print(
                f"{setting:5} {simulations:>5} sims: ours won {wins / len(outcomes):.1%} of {len(outcomes)} games "
                f"(95% {low:.1%}-{high:.1%}, par {par:.0%}: {verdict}); points per seat ours-theirs "
                f"{margin:+.2f}; ms/move ours {statistics.mean(ours_ms):.0f}, OpenSpiel "
                f"{statistics.mean(theirs_ms):.0f}; {time.perf_counter() - start:.0f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
