"""The Nerts bot ladder on the timed simulator: four-seat hands, paired deals with the seats rotated.

Each pairing puts one bot against three copies of another; every deal is played four times, the tested bot in
each seat in turn, so the luck of the deal cancels. For the tested bot it prints hands won (a tie for the best
score counts 1/k), point differential against the field (its points minus the mean of the other three) and the
Nerts-out rate (hands it called Nerts in), each with a 95% interval (Wilson for rates, normal for the mean).
Par for hands won and Nerts-outs is 25%, for the differential 0. The baseline pairing (greedy:hard against three
greedy:hard) measures par in the same run, and the simulator's speed: four-seat hands per CPU second of the worker
processes (so, per core, however loaded the machine), with each pairing's ratio to the baseline.

Targets: expert:hard beats three greedy:hard at the same reaction time (550 ms) with its interval above par, and
every level beats the one below it.

Usage: ``python bench/nerts_bots.py [--hands 1000] [--jobs 2] [--seed 1] [--only NAME]``; ``--hands`` counts
four-seat hands per pairing (a multiple of 4).
"""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

from cardtable.sim import nerts

PAIRINGS = [
    ("baseline", "greedy:hard", "greedy:hard"),
    ("expert-vs-greedy", "expert:hard", "greedy:hard"),
    ("hard-vs-medium", "expert:hard", "expert:medium"),
    ("medium-vs-easy", "expert:medium", "expert:easy"),
    ("easy-vs-greedy-easy", "expert:easy", "greedy:easy"),
]


def _fmt(triple: tuple[float, float, float], pct: bool) -> str:
    mean, low, high = triple
    return f"{mean:.1%} [{low:.1%}, {high:.1%}]" if pct else f"{mean:+.2f} [{low:+.2f}, {high:+.2f}]"


def main() -> None:
    """Run the pairings and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=[name for name, _, _ in PAIRINGS], action="append")
    args = parser.parse_args()
    console = Console()
    if not console.is_terminal:
        console.width = 160
    table = Table(title=f"Nerts ladder: {args.hands} four-seat hands per pairing, paired deals, seats rotated")
    for column in ("pairing", "tested", "field", "hands won", "points vs field", "Nerts-out", "hands/CPU-s"):
        table.add_column(column, justify="left" if column in ("pairing", "tested", "field") else "right")
    baseline_speed = None
    for name, tested, field in PAIRINGS:
        if args.only and name not in args.only:
            continue
        started = time.perf_counter()
        summary = nerts.run(
            players=4,
            hands=args.hands,
            seed=args.seed,
            jobs=args.jobs,
            bots=[tested, field, field, field],
            show=True,
        )
        seconds = time.perf_counter() - started
        speed = summary["hands_per_cpu_second"]  # per core, whatever else the machine runs
        if name == "baseline":
            baseline_speed = speed
        entry = summary["bots"][tested]
        label = f"{tested} (all 4 seats)" if tested == field else tested  # par control
        win = entry["win_rate"]
        ratio = f" ({speed / baseline_speed:.2f}x)" if baseline_speed and name != "baseline" else ""
        table.add_row(
            name,
            label,
            f"3x {field}",
            _fmt(win, True),
            _fmt(entry["diff"], False),
            _fmt(entry["nerts_rate"], True),
            f"{speed:.1f}{ratio}",
        )
        verdict = "above par" if win[1] > 0.25 else "not clearly above par"
        console.print(f"{name}: {tested} hands won {_fmt(win, True)}: {verdict}; {seconds:.0f} s")
    console.print(table)


if __name__ == "__main__":
    main()
