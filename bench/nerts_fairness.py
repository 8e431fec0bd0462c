"""Latency fairness in Nerts races: the far client's share of races with and without compensation.

Two parts, both through the one ordering the server uses (``cardtable.race``) and the real engine:

1. Duels (``cardtable.sim.fairness``): a near and a far client race for the same foundation place, their send
   times ``--spread`` ms apart at most (uniform), with 20 ms of jitter on every ping and arrival; the far client is
   50, 100 or 150 ms away. Printed: the far client's share of races (ties count a half; a fair share is 50%), the
   share of races it sent first (by more than the tie window) that it won, the share of races sent within the tie
   window that ended as ties, the share that ended as the send times say, and the longest hold-back. Also a client
   that lies (answers its pings a second late while really 20 ms away): it gains at most the cap.
2. Bots at a table (``cardtable.sim.nerts``): two greedy:hard bots, one far away, play ``--hands`` two-seat hands
   on the timed simulator (seats rotated); printed: the far bot's share of contested foundation places and of hands
   won.

Usage: ``python bench/nerts_fairness.py [--races 2000] [--hands 200] [--jobs 2] [--spread 250]``.
"""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

from cardtable.sim import nerts
from cardtable.sim.fairness import race_many

DELAYS = (50, 100, 150)


def main() -> None:
    """Print the duel and table figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--races", type=int, default=2000)
    parser.add_argument("--hands", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--spread", type=int, default=250)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    console = Console()
    if not console.is_terminal:
        console.width = 160
    started = time.perf_counter()
    duels = Table(title=f"Duels: {args.races} races per row, send gaps within ±{args.spread} ms, tie window 100 ms")
    for column in ("far delay", "compensation", "far share", "far first: won", "tie due: tied", "as sent", "held max"):
        duels.add_column(column, justify="right")
    for delay in DELAYS:
        for cap in (0, 150):
            r = race_many(delay, cap, args.races, args.seed, spread_ms=args.spread)
            duels.add_row(
                f"{delay} ms",
                "off" if cap == 0 else f"cap {cap} ms",
                f"{r['far']:.1%}",
                f"{r['far_when_due']:.1%}",
                f"{r['tie_when_due']:.1%}",
                f"{r['fair']:.1%}",
                f"{r['max_held_ms']:.0f} ms",
            )
    honest = race_many(20, 150, args.races, args.seed, spread_ms=args.spread)
    liar = race_many(20, 150, args.races, args.seed, spread_ms=args.spread, lie_ms=1000)
    duels.add_row("20 ms", "cap 150, honest", f"{honest['far']:.1%}", f"{honest['far_when_due']:.1%}",
                  f"{honest['tie_when_due']:.1%}", f"{honest['fair']:.1%}", f"{honest['max_held_ms']:.0f} ms")
    duels.add_row("20 ms", "cap 150, liar", f"{liar['far']:.1%}", f"{liar['far_when_due']:.1%}",
                  f"{liar['tie_when_due']:.1%}", f"{liar['fair']:.1%}", f"{liar['max_held_ms']:.0f} ms")
    console.print(duels)
    console.print(
        f"the liar's estimate: {liar['far_estimate_ms']:.0f} ms (its true delay 20 ms): it gains "
        f"{liar['far_estimate_ms'] - honest['far_estimate_ms']:.0f} ms at most, never more than the 150 ms cap"
    )
    console.print(f"duels took {time.perf_counter() - started:.1f} s")

    tables = Table(title=f"Bots: greedy:hard near vs greedy:hard far, {args.hands} two-seat hands per row")
    for column in ("far delay", "compensation", "far share of contested places", "far hands won", "hands/s"):
        tables.add_column(column, justify="right")
    for delay in DELAYS:
        for cap in (0, 150):
            began = time.perf_counter()
            summary = nerts.run(
                players=2, hands=args.hands, seed=args.seed, jobs=args.jobs,
                bots=["greedy:hard", "greedy:hard"], delays=[0, delay], cap_ms=cap, show=False,
            )
            seconds = time.perf_counter() - began
            far = _far_figures(summary, f"greedy:hard +{delay} ms")
            tables.add_row(f"{delay} ms", "off" if cap == 0 else f"cap {cap} ms", far[0], far[1],
                           f"{summary['hands'] / seconds:.1f}")
    console.print(tables)


def _far_figures(summary: dict[str, object], name: str) -> tuple[str, str]:
    bots = summary["bots"]
    assert isinstance(bots, dict)
    far = bots.get(name)
    if far is None:
        return "-", "-"
    entered, won, tied, _lost = far["races"]
    share = (won + tied / 2) / entered if entered else 0.0
    return f"{share:.1%} of {entered}", f"{far['win_rate'][0]:.1%}"


if __name__ == "__main__":
    main()
