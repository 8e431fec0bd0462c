"""The scaling curve of ``cardtable simulate nerts --jobs N``: greedy four-seat hands per second on 1 to 16 workers.

For each worker count of ``--jobs`` (default ``1,2,4,8,16``), plays ``--hands-per-job`` x N hands through
``cardtable.sim.nerts.run`` (the command's own path: a process pool, tasks of 1 to 16 hands, results in order) and
prints the hands per second (wall clock, the pool's start included), and, against the first count measured in the
same run as the baseline, the speed-up and the efficiency (the speed-up over the ideal). Every count plays the first
``--hands-per-job`` hands with the same seeds, and their summary (scores, endings, actions) must be the same as the
baseline's: the curve is of the same work, not merely of more hands.

    .venv/bin/python bench/simulate_scaling.py --jobs 1,2,4,8,16 --hands-per-job 400

The first line names the build of the engines (``cardtable.build.engines()``): the editable install is pure Python;
``PYTHONPATH=build/compiled`` after ``scripts/setup --compiled-copy build/compiled`` measures the compiled one.
"""

from __future__ import annotations

import argparse
import os
import time

from cardtable.build import engines
from cardtable.sim.nerts import run


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--jobs", default="1,2,4,8,16", help="worker counts, comma-separated (the first is the baseline)"
    )
    parser.add_argument("--hands-per-job", type=int, default=400, help="hands per worker in each run")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    counts = [int(n) for n in args.jobs.split(",")]
    if any(n < 1 for n in counts) or args.hands_per_job < 1:
        raise SystemExit("--jobs and --hands-per-job: 1 or more")
    print(f"engines: {engines()}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    check = run(4, args.hands_per_job, args.seed, jobs=1, show=False)
    rows: dict[int, tuple[float, float]] = {}
    for n in counts:
        started = time.perf_counter()
        summary = run(4, args.hands_per_job * n, args.seed, jobs=n, show=False)
        wall = time.perf_counter() - started
        first = run(4, args.hands_per_job, args.seed, jobs=n, show=False) if n > 1 else check
        for key in ("mean_scores", "endings", "mean_actions"):
            if first[key] != check[key]:
                raise SystemExit(f"--jobs {n}: {key} differs from one worker's for the same hands")
        rows[n] = (summary["hands"] / wall, summary["hands_per_cpu_second"])
        print(
            f"{n:>2} workers: {summary['hands']} hands in {wall:.1f} s, {rows[n][0]:,.0f} hands/s "
            f"({rows[n][1]:,.0f} per CPU second in the workers)"
        )
    base_n, (base, _) = counts[0], rows[counts[0]]
    print(
        f"\nbaseline: {base_n} worker{'s' if base_n > 1 else ''}, same run; the same hands give the same results "
        "on every count"
    )
    print("workers  hands/s  speed-up  efficiency")
    for n, (speed, _) in rows.items():
        up = speed / base
        print(f"{n:>7}  {speed:>7,.0f}  {up:>8.2f}  {up / (n / base_n):>9.0%}")


if __name__ == "__main__":
    main()
