"""Tuning our Enemy Anemone search against a stand-in for OpenSpiel's ISMCTS, in duplicate.

Usage: ``python bench/anemone_tuning.py --variants "max_depth=1;paired=1" [--simulations 2500] [--deals 50]
[--setting solo] [--jobs 2] [--ray [ADDRESS]] [--out FILE]``; ``--summary --out FILE`` prints the figures of the
games in ``FILE``. The games are played through :func:`cardtable.sim.runner.parallel_map`: in ``--jobs`` processes,
or with ``--ray`` on a Ray cluster (a local one of ``--jobs`` CPUs, or the one at ``ADDRESS``; ``bench/`` travels to
its workers as their working directory, and every node needs cardtable and OpenSpiel), the same games either way.

``bench/anemone_vs_openspiel.py`` is the yardstick, and it is slow: OpenSpiel's bot spends about 2 s of CPU per
move at 2,500 simulations on our game, so 200 four-seat games take hours. This bench plays against
:class:`StandInBot`, OpenSpiel's ``ISMCTSBot`` as the yardstick sets it up, written again on our engine (the same
algorithm, about a tenth of the CPU), and plays in duplicate, so that a few hundred games tell options apart:

- Stand-in: a node per information state, keyed as OpenSpiel keys it (the player to act, its own hand, the public
  moves since the root); a node first reached is scored by one uniformly random rollout over all legal moves
  (every anemone spend a separate move, as OpenSpiel's random rollout picks among the game's action indices); UCT
  with ``c`` in points (``--uct-c``, default 10 as the yardstick) over each player's raw points; the most visited
  root move. World samples are our :class:`~cardtable.bots.ismcts.Determinizer`'s, which the OpenSpiel game's
  ``resample_from_infostate`` uses too.
- Duplicate: four-seat one-hand games; in ``solo`` each deal is played four times, ours at each seat against three
  stand-ins; in ``pairs`` twice, ours at seats 0 and 2, then 1 and 3. Every variant plays the same deals with the
  stand-ins seeded alike, so a game differs only where our moves differ, and the luck of the deal cancels out of
  a deal's mean margin (ours minus theirs, points per seat).
- Prints per variant (``hard``'s options changed as ``--ours-options`` of the yardstick changes them, ``;`` between
  variants; ``hard`` itself always plays): our win share (a shared win 1/k), our mean margin per deal with its
  standard error, and the difference from ``hard`` over the same deals with its standard error.
- Every finished game is appended to ``--out`` as a JSON line; a run skips the games already there, so it resumes.
  Deals are played in order, each by every variant, so a run stopped early compares like with like.

Fidelity (``docs/ai.md``, "Tuning against a stand-in"): ``hard`` at 2,500 simulations, one seat against three
stand-ins, won 26.6% of 192 games with a margin of +0.56 (standard error 0.55) points per seat; against OpenSpiel's
own bot 28.7% of 40 games, +0.50 (0.96). At 500 simulations the stand-in was the stronger of the two (27.5% and
+0.50 against it over 300 games, 35.8% and +2.30 against OpenSpiel's bot over 137). This bench's own run,
``--deals 30`` (120 games, about 9 minutes on two cores): ``hard`` won 26.2%, margin -0.22 (0.54).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

from cardtable.bots.ismcts import (
    LEVELS,
    Budget,
    Determinizer,
    IsmctsBot,
    Move,
    fast_moves,
    matching_action,
    position_rng,
)
from cardtable.engine import Action, View
from cardtable.games.anemone import CODE, AnemoneMatch, AnemoneOptions, AnemoneState
from cardtable.sim.anemone import wilson
from cardtable.sim.runner import LOCAL, RayCluster, parallel_map, ray_cluster

sys.path.insert(0, str(Path(__file__).parent))
from anemone_vs_openspiel import budget_options

_UNEXPANDED = -1


class _InfoNode:
    """A stand-in node: visits (``_UNEXPANDED`` until first reached) and, per move, ``[visits, points sum]``."""

    __slots__ = ("children", "visits")

    def __init__(self) -> None:
        self.visits = _UNEXPANDED
        self.children: dict[Move, list[float]] = {}


def random_rollout(state: AnemoneState, rng: random.Random) -> None:
    """Play ``state`` (mutated) to the hand's end, each turn a move drawn uniformly from all legal moves."""
    rand = rng.random
    while not state.over:
        moves = fast_moves(state)
        state.step(*moves[int(rand() * len(moves))])


def standin_search(view: View, simulations: int, uct_c: float, rng: random.Random) -> Move:
    """OpenSpiel's ISMCTS (see the module's docstring) from ``view``, ``simulations`` world samples; the move.

    ``uct_c`` is in points. Ties in UCT value (within 1e-6) are broken at random, as OpenSpiel breaks them.
    """
    seat = int(view["seat"])
    determinizer = Determinizer(view)
    hands, deck = determinizer.sample(rng)
    base = AnemoneState.from_view(view, [[CODE[c] for c in h] for h in hands], [CODE[c] for c in deck])
    nodes: dict[tuple[int, tuple[int, ...], tuple[Move, ...]], _InfoNode] = {}
    root_key: tuple[int, tuple[int, ...], tuple[Move, ...]] = (seat, (), ())
    rand = rng.random
    for done in range(simulations):
        if done:
            hands, deck = determinizer.sample(rng)
        state = base.with_hidden(hands, deck)
        path: tuple[Move, ...] = ()
        trail: list[tuple[list[float], int]] = []
        while not state.over:
            turn = state.turn
            key = (turn, tuple(sorted(state.hands[turn])), path) if path else root_key
            node = nodes.get(key)
            if node is None:
                node = nodes[key] = _InfoNode()
            if node.visits == _UNEXPANDED:
                node.visits = 0
                random_rollout(state, rng)
                break
            legal = fast_moves(state)
            children = node.children
            if len(children) < len(legal):
                untried = [m for m in legal if m not in children]
                move = untried[int(rand() * len(untried))]
                children[move] = [0, 0.0]
            else:
                log_visits = math.log(node.visits)
                best = -math.inf
                tied: list[Move] = []
                for m, (visits, total) in children.items():
                    value = total / visits + uct_c * math.sqrt(log_visits / visits)
                    if value > best + 1e-6:
                        best, tied = value, [m]
                    elif value > best - 1e-6:
                        tied.append(m)
                move = tied[int(rand() * len(tied))]
            node.visits += 1
            stats = children[move]
            stats[0] += 1
            trail.append((stats, turn))
            state.step(*move)
            path = (*path, move)
        points = state.points
        for stats, turn in trail:
            stats[1] += points[turn]
    return max(nodes[root_key].children.items(), key=lambda item: item[1][0])[0]


class StandInBot:
    """A stand-in for OpenSpiel's ``ISMCTSBot`` (:func:`standin_search`) with the bot interface of our bots."""

    def __init__(self, seed: int, simulations: int, uct_c: float = 10.0) -> None:
        self.seed = seed
        self.simulations = simulations
        self.uct_c = uct_c

    def choose(self, view: View, legal: Sequence[Action]) -> Action | None:
        """The most visited root move; with one legal action, that action at once."""
        if not legal:
            return None
        if len(legal) == 1:
            return dict(legal[0])
        move = standin_search(view, self.simulations, self.uct_c, position_rng(self.seed, view))
        action = matching_action(move, legal)
        if action is None:
            raise AssertionError(f"the stand-in chose {move}, not a legal action")
        return action


def seatings(setting: str) -> list[tuple[int, ...]]:
    """Our seats in each game of a deal: ``solo`` one seat of four in turn, ``pairs`` seats 0 and 2, then 1 and 3."""
    return [(0,), (1,), (2,), (3,)] if setting == "solo" else [(0, 2), (1, 3)]


def play(task: dict[str, Any]) -> dict[str, Any]:
    """Play one game of ``task`` (options, setting, simulations, uct_c, seed, deal, seating); the finished line."""
    ours = seatings(task["setting"])[task["seating"]]
    budget: Budget = replace(
        LEVELS["hard"], simulations=task["simulations"], seconds=3600.0, **budget_options(task["options"])
    )
    base = task["seed"] * 1_000_003 + task["deal"] * 100
    bots = [
        IsmctsBot(base + seat, budget)
        if seat in ours
        else StandInBot(base + 50 + seat, task["simulations"], task["uct_c"])
        for seat in range(4)
    ]
    state = AnemoneMatch(AnemoneOptions(players=4, rounds=1)).start_hand({"seed": base})
    while not state.is_over:
        seat = state.to_act()[0]
        state.apply(seat, bots[seat].choose(state.view(seat), state.legal_actions(seat)))
    return {**task, "ours": list(ours), "points": list(state.points)}


def _key(line: dict[str, Any]) -> tuple[Any, ...]:
    return (
        line["options"],
        line["setting"],
        line["simulations"],
        line["uct_c"],
        line["seed"],
        line["deal"],
        line["seating"],
    )


def summary(lines: list[dict[str, Any]]) -> list[str]:
    """The figures of finished games: per setting and budget, each variant against ``hard`` on the deals both
    finished (every game of the deal)."""
    out: list[str] = []
    groups: dict[tuple[Any, ...], dict[str, dict[int, list[dict[str, Any]]]]] = {}
    for line in lines:
        group = groups.setdefault((line["setting"], line["simulations"], line["uct_c"], line["seed"]), {})
        group.setdefault(line["options"], {}).setdefault(line["deal"], []).append(line)
    for (setting, simulations, uct_c, seed), variants in sorted(groups.items()):
        per_deal = len(seatings(setting))
        complete = {
            options: {deal: games for deal, games in deals.items() if len(games) == per_deal}
            for options, deals in variants.items()
        }
        hard = complete.get("", {})
        par = 0.25 if setting == "solo" else 0.5
        out.append(
            f"{setting} at {simulations} simulations against the stand-in (uct_c {uct_c:g}, seed {seed}); par {par:.0%}"
        )
        for options in sorted(complete, key=lambda o: (o != "", o)):
            deals = complete[options]
            if not deals:
                continue
            wins = [share(game) for games in deals.values() for game in games]
            margins = {deal: statistics.mean(margin(game) for game in games) for deal, games in deals.items()}
            low, high = wilson(sum(wins), len(wins))
            text = (
                f"  {options or 'hard':32} {len(deals):4} deals: won {statistics.mean(wins):.1%} of {len(wins)} "
                f"({low:.1%}-{high:.1%}), margin {statistics.mean(margins.values()):+.2f} ± {_se(list(margins.values())):.2f}"
            )
            shared = sorted(set(deals) & set(hard))
            if options and len(shared) > 1:
                diffs = [margins[d] - statistics.mean(margin(g) for g in hard[d]) for d in shared]
                text += (
                    f"; against hard on {len(shared)} deals {statistics.mean(diffs):+.2f} ± {_se(diffs):.2f}"
                )
            out.append(text)
    return out


def share(game: dict[str, Any]) -> float:
    """Our share of a game's win (1/k per seat of ours among k tied top seats)."""
    points = game["points"]
    top = [s for s, p in enumerate(points) if p == max(points)]
    return sum(1 for s in top if s in game["ours"]) / len(top)


def margin(game: dict[str, Any]) -> float:
    """Our mean points per seat minus theirs."""
    ours = game["ours"]
    return statistics.mean(game["points"][s] for s in ours) - statistics.mean(
        p for s, p in enumerate(game["points"]) if s not in ours
    )


def _se(values: list[float]) -> float:
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.nan


def workers(ray: str | None, jobs: int | None) -> AbstractContextManager[RayCluster | None]:
    """Where the games run: nowhere special (a local pool) without ``ray``; else a Ray cluster, local (``jobs``
    CPUs, default every core) for :data:`~cardtable.sim.runner.LOCAL`, or at the address ``ray``, with this folder as
    its workers' working directory (``anemone_vs_openspiel`` is imported from there). Raises
    :class:`~cardtable.sim.runner.RayMissing` without Ray, ``ConnectionError`` for an address with no cluster."""
    if ray is None:
        return nullcontext()
    here = {"working_dir": str(Path(__file__).parent)}
    return ray_cluster(ray, cpus=jobs if ray == LOCAL else None, runtime_env=here)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--variants", default="", help="';'-separated Budget options, e.g. 'max_depth=1;greedy=0'"
    )
    parser.add_argument("--simulations", type=int, default=2500)
    parser.add_argument("--deals", type=int, default=50)
    parser.add_argument("--setting", choices=("solo", "pairs"), default="solo")
    parser.add_argument("--uct-c", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--jobs", type=int, help="processes (default 2); with --ray, tasks at a time (default: its CPUs)"
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const=LOCAL,
        metavar="ADDRESS",
        help="play on a Ray cluster: a local one without ADDRESS, else the one at ADDRESS (HOST:6379, ray://HOST:10001)",
    )
    parser.add_argument("--out", type=Path, default=Path("out/anemone_tuning.jsonl"))
    parser.add_argument("--summary", action="store_true", help="print the figures of --out and stop")
    args = parser.parse_args()
    lines = [json.loads(text) for text in args.out.read_text().splitlines()] if args.out.exists() else []
    if not args.summary:
        variants = ["", *(v.strip() for v in args.variants.split(";") if v.strip())]
        for options in variants:
            budget_options(options)  # a bad name stops the run before it starts
        done = {_key(line) for line in lines}
        tasks = [
            {
                "options": options,
                "setting": args.setting,
                "simulations": args.simulations,
                "uct_c": args.uct_c,
                "seed": args.seed,
                "deal": deal,
                "seating": seating,
            }
            for deal in range(args.deals)
            for options in variants
            for seating in range(len(seatings(args.setting)))
        ]
        tasks = [task for task in tasks if _key(task) not in done]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with workers(args.ray, args.jobs) as cluster, args.out.open("a") as out:
            jobs = args.jobs or (cluster.cpus if cluster else 2)
            for line in parallel_map(play, tasks, jobs, "games"):
                out.write(json.dumps(line) + "\n")
                out.flush()
                lines.append(line)
    print("\n".join(summary(lines)))


if __name__ == "__main__":
    main()
