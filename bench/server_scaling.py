"""The server's scaling curve: the same load per process on 1, 2, 4 and 8 processes on PostgreSQL and Redis.

Weak scaling, for ``docs/deploy.md`` ("Several processes"): for each count N of ``--processes`` (default
``1,2,4,8``), N ``cardtable serve`` processes on one private PostgreSQL and one private Redis (``tests/services.py``;
``--db``/``--redis`` to use running ones, emptied first), ``--tables-per-process`` x N four-seat Nerts tables made
round robin over the processes, and four scripted seats per table (``server_load.py``'s clients) connected round
robin too, so that (N - 1)/N of the connections are relayed to their table's owner, as behind a proxy that
balances connections without knowing tables. Each seat acts ``--rate`` times a second. The clients run in
``--generators`` processes of their own (default: one per 2,000 seats), so that the load generator never limits
the curve, each on its own event loop; their latencies are merged.

For each N it prints the actions acknowledged per second (fewer than the nominal seats x ``--rate``: a seat sends
only when its latest update offers it a legal action), the ack latency p50/p99/max (ms), the CPU the servers used
(cores, in all and per process), PostgreSQL's and Redis's, the servers' CPU per answered action, and, measured in
the same run against N = 1 as the baseline, the throughput as a multiple of it and the p99 as a ratio to it.
Perfect weak scaling: the throughput grows as N, the p99 and the CPU per action stay as they are.

    .venv/bin/python bench/server_scaling.py --processes 1,2,4,8 --tables-per-process 120 --rate 2 --duration 15

This needs the cores: 8 processes with PostgreSQL, Redis and the clients want a machine of 16 or more. Bounded:
at most 16 processes, 2,000 tables, 8 actions a second per seat and 120 s of measuring.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from machine import cpu_speed_ms, free_port, stop
from server_load import (
    SERVICES,
    Ack,
    Clock,
    Stats,
    cluster_client,
    cpu_per_ack,
    empty_postgres,
    flush_redis,
    loop_lag,
    measure_cpu,
    measure_host,
    open_round_robin,
    p99,
    quiet_collector,
    run_loop,
    service_pids,
    start_servers,
    summary,
)

SEATS_PER_GENERATOR = 2000
"""Seats one load-generator process drives (about 0.3 cores at 2 actions a second each)."""


@dataclass
class Share:
    """One load generator's work: its tables (id, seat tokens, owner's port), the servers' ports, the index of its
    first connection in the round robin, and the window (``time.monotonic()`` values, the same clock in every
    process on Linux)."""

    tables: list[tuple[str, list[str], int]]
    ports: list[int]
    first: int
    rate: float
    start: float
    end: float
    seed: int


async def generate(share: Share) -> dict[str, Any]:
    """Drive every seat of ``share`` until the window's end; the latencies (ms) of the acks and rejects sent in
    the window, split into direct and relayed connections, and the counts."""
    clock = Clock.between(share.start, share.end)
    direct, relayed = Stats(), Stats()
    owner_port = {tid: port for tid, _, port in share.tables}
    acked: dict[str, Ack] = {}
    rng = random.Random(share.seed)
    clients = []
    k = share.first
    for tid, tokens, _ in share.tables:
        for token in tokens:
            clients.append(
                cluster_client(
                    share.ports,
                    k,
                    tid,
                    token,
                    share.rate,
                    clock,
                    direct,
                    relayed,
                    owner_port,
                    acked,
                    random.Random(rng.random()),
                    {},
                )
            )
            k += 1
    lags: list[float] = []
    await asyncio.gather(loop_lag(clock, lags), quiet_collector(clock), *clients)
    lags.sort()
    return {
        "direct": asdict(direct),
        "relayed": asdict(relayed),
        "lag_p99": p99(lags) if lags else float("nan"),
    }


def generator_main() -> None:
    """``--generate``: read a :class:`Share` as JSON on stdin, drive it, write the figures as JSON on stdout."""
    share = Share(**json.load(sys.stdin))
    result: dict[str, Any] = {}

    async def main() -> None:
        result.update(await generate(share))

    run_loop(main())
    json.dump(result, sys.stdout)


def merged(results: list[dict[str, Any]], name: str) -> Stats:
    """The ``name`` ("direct" or "relayed") figures of every generator as one :class:`Stats`."""
    parts = (result[name] for result in results)
    return sum((Stats(**{**part, "error_codes": Counter(part["error_codes"])}) for part in parts), Stats())


async def run_count(args: argparse.Namespace, db: str, redis: str, processes: int) -> dict[str, float]:
    """One point of the curve: ``processes`` servers, ``tables_per_process`` tables each; its figures."""
    await empty_postgres(db)
    await flush_redis(redis)
    tables_n = min(args.tables_per_process * processes, 2000)
    duration = min(args.duration, 120.0)
    ports = [free_port() for _ in range(processes)]
    servers: list[subprocess.Popen[bytes]] = []
    try:
        await start_servers(servers, ports, db, redis, f"scaling-{processes}", logs=args.logs)
        opened = time.monotonic()
        batches = await open_round_robin(ports, tables_n)
        tables = [
            (tid, tokens, port) for port, batch in zip(ports, batches, strict=True) for tid, tokens in batch
        ]
        seats = 4 * len(tables)
        generators = args.generators or max(1, -(-seats // SEATS_PER_GENERATOR))
        print(
            f"\n== {processes} process{'es' if processes > 1 else ''}: {len(tables)} tables x 4 seats opened in "
            f"{time.monotonic() - opened:.1f} s; {args.rate:g} action/s/seat for {duration:g} s; "
            f"{generators} load generator{'s' if generators > 1 else ''}"
        )
        # every seat connected (about 2,000 a second) before the window opens
        start = time.monotonic() + args.warmup + 2.0 + seats / 2000.0
        clock = Clock.between(start, start + duration)
        per = -(-len(tables) // generators)
        procs = []
        for g in range(generators):
            part = Share(
                tables=tables[g * per : (g + 1) * per],
                ports=ports,
                first=4 * g * per,
                rate=args.rate,
                start=start,
                end=start + duration,
                seed=args.seed * 1000 + g,
            )
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                os.path.abspath(__file__),
                "--generate",
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(part.__dict__).encode())
            proc.stdin.close()
            procs.append(proc)
        cpu: dict[str, float] = {}
        pids = {f"server{i + 1}": server.pid for i, server in enumerate(servers)} | await service_pids(
            db, redis
        )
        pids |= {f"clients{g + 1}": proc.pid for g, proc in enumerate(procs)}
        host: list[str] = []
        outputs, _, _ = await asyncio.gather(
            asyncio.gather(*(proc.communicate() for proc in procs)),
            measure_cpu(pids, clock, cpu),
            measure_host(clock, host),
        )
        if any(proc.returncode for proc in procs):
            raise SystemExit(f"a load generator failed (exit {[proc.returncode for proc in procs]})")
        results = [json.loads(out) for out, _ in outputs]
        direct, relayed = merged(results, "direct"), merged(results, "relayed")
        both = direct + relayed
        figures = summary(f"{processes} process{'es' if processes > 1 else ''}", both, duration)
        server_cores = sum(c for n, c in cpu.items() if n.startswith("server"))
        print(
            f"CPU over the window: servers {server_cores:.2f} cores ({server_cores / processes:.2f} per process), "
            + ", ".join(f"{n} {cpu[n]:.2f}" for n in SERVICES if n in cpu)
            + f", load generators {sum(c for n, c in cpu.items() if n.startswith('clients')):.2f} "
            f"(of {os.cpu_count()}); load generators' loop lag p99 "
            f"{max(float(r['lag_p99']) for r in results):.1f} ms"
        )
        print(cpu_per_ack(server_cores, both, duration, sum(cpu.get(n, 0.0) for n in SERVICES)))
        print("\n".join(host))
        if direct.acks and relayed.acks:
            d = summary("   direct connections", direct, duration)
            r = summary("   relayed connections", relayed, duration)
            print(f"   relayed/direct p99 ratio: {r['p99'] / d['p99']:.2f}")
        answered = len(both.acks) + len(both.rejects)
        return figures | {
            "acks_per_s": len(both.acks) / duration,
            "offered": seats * args.rate,
            "cpu_ms": server_cores * duration * 1000.0 / max(answered, 1),
            "cores_per_process": server_cores / processes,
        }
    finally:
        for server in servers:
            stop(server, 20)


async def run(args: argparse.Namespace, db: str, redis: str) -> None:
    counts = [int(n) for n in args.processes.split(",")]
    if any(not 1 <= n <= 16 for n in counts):
        raise SystemExit("--processes: counts from 1 to 16")
    print(
        f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; machine speed: a fixed "
        f"pure-Python loop takes {cpu_speed_ms():.0f} ms of CPU"
    )
    rows = {n: await run_count(args, db, redis, n) for n in counts}
    base = rows[counts[0]]
    print(
        f"\nweak scaling, {args.tables_per_process} tables x 4 seats per process at {args.rate:g} action/s/seat "
        f"(baseline: {counts[0]} process{'es' if counts[0] > 1 else ''}, same run)"
    )
    print(
        "processes  nominal/s  acked/s  x baseline  p50 ms  p99 ms  p99 / baseline  cores/process  CPU ms/action"
    )
    for n, row in rows.items():
        print(
            f"{n:>9}  {row['offered']:>9.0f}  {row['acks_per_s']:>7.0f}  {row['acks_per_s'] / base['acks_per_s']:>10.2f}"
            f"  {row['p50']:>6.1f}  {row['p99']:>6.1f}  {row['p99'] / base['p99']:>14.2f}  "
            f"{row['cores_per_process']:>13.2f}  {row['cpu_ms']:>13.3f}"
        )
    print(f"machine speed after: {cpu_speed_ms():.0f} ms")


def main() -> None:
    if sys.argv[1:] == ["--generate"]:
        generator_main()
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--processes", default="1,2,4,8", help="process counts, comma-separated (the first is the baseline)"
    )
    parser.add_argument(
        "--tables-per-process", type=int, default=120, help="Nerts tables of 4 seats per process"
    )
    parser.add_argument("--rate", type=float, default=2.0, help="actions per second per seat (at most 8)")
    parser.add_argument("--duration", type=float, default=15.0, help="seconds measured (at most 120)")
    parser.add_argument(
        "--warmup", type=float, default=3.0, help="seconds between the last connection and the window"
    )
    parser.add_argument(
        "--generators",
        type=int,
        default=0,
        help=f"load-generator processes (default: one per {SEATS_PER_GENERATOR:,} seats)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--db", default=None, help="PostgreSQL URL (emptied; default: a private one)")
    parser.add_argument("--redis", default=None, help="Redis URL (flushed; default: a private one)")
    parser.add_argument(
        "--logs", default=None, metavar="FOLDER", help="write each server's output to FOLDER/NAME.log"
    )
    args = parser.parse_args()
    if not 0 < args.rate <= 8:
        raise SystemExit("--rate: more than 0 and at most 8 actions a second")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from services import new_database, postgres_cluster, redis_server

    with contextlib.ExitStack() as stack:
        db = args.db or new_database(stack.enter_context(postgres_cluster()))
        redis = args.redis or stack.enter_context(redis_server()).url()
        run_loop(run(args, db, redis))


if __name__ == "__main__":
    main()
