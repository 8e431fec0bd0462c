"""Bot strength and speed for Enemy Anemone: four-seat games with seats rotated.

- heuristic against three random bots (target: heuristic wins >= 40% of games);
- ismcts:hard against three heuristic bots (target: ismcts:hard wins >= 40%), with its time per move.

Usage: ``python bench/anemone_bots.py [--games 400] [--jobs 2] [--rounds 4] [--seed 1]``.
Win rates count shared wins fractionally; intervals are 95% Wilson intervals. Time per move counts only moves
with a choice (more than one legal action), measured inside the worker process.
"""

from __future__ import annotations

import argparse
import time

from rich.console import Console

from cardtable.sim import anemone


def main() -> None:
    """Run both match-ups and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=400)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=["heuristic", "ismcts"], default=None)
    args = parser.parse_args()
    console = Console()
    matchups = [("heuristic", ["heuristic", "random"]), ("ismcts", ["ismcts:hard", "heuristic"])]
    for name, bots in matchups:
        if args.only and args.only != name:
            continue
        start = time.perf_counter()
        # seat list: the tested bot once, the opponent three times; rotation puts it in every seat
        specs = [bots[0], bots[1], bots[1], bots[1]]
        stats = anemone.run(
            4, args.games, specs, args.seed, jobs=args.jobs, rounds=args.rounds, console=console
        )
        tested = stats[bots[0]]
        low, high = anemone.wilson(tested.wins, tested.games)
        console.print(
            f"{bots[0]} vs 3x {bots[1]}: {tested.win_rate:.1%} of {tested.games} games "
            f"(95% interval {low:.1%} - {high:.1%}; target >= 40%) in {time.perf_counter() - start:.0f} s"
        )
        if tested.think_ms:
            console.print(
                f"{bots[0]} time per move: mean {sum(tested.think_ms) / len(tested.think_ms):.0f} ms, "
                f"max {max(tested.think_ms):.0f} ms over {len(tested.think_ms)} moves with a choice"
            )


if __name__ == "__main__":
    main()
