"""CPU of the store's group commit on PostgreSQL (``server/storage/store.py``): this process's CPU per commit and per action.

Starts a private PostgreSQL (``tests/services.py``; or ``--db URL``, emptied), stores ``--tables`` tables, each owned
at an epoch (fenced, as when several processes serve), then queues ``--commits`` group commits of B actions each
(one action each for B tables, queued in one loop turn, as tables acknowledge together) for each batch size B of
``--batches``, and measures this process's CPU time (``time.process_time``: the server's share, not the
database's) and wall time per commit. The baseline, in the same run and on the same store, is the write path as it
was before one fence and one insert per commit: each action its own write in the group commit, a fence
``UPDATE tables SET epoch = epoch WHERE id = ? AND epoch = ?`` then its insert, through SQLAlchemy. Prints both and
their ratio for each batch size.

    nice -n 10 .venv/bin/python bench/store_commit.py --commits 1000 --batches 1,4,16,64

CPU time is little disturbed by other work on the machine (wall time is); run it twice to see the spread.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import msgspec
from sqlalchemy import bindparam, update
from sqlalchemy.engine import Connection

from cardtable.server.storage import schema
from cardtable.server.storage.rows import SeatRow, TableRow
from cardtable.server.storage.store import Store

ACTION = {"type": "move", "from": "work:1", "to": "foundation:3"}


def table_row(table_id: str) -> TableRow:
    return TableRow(id=table_id, game="nerts", options={"players": 2}, status="playing", seed=1, grace_seconds=60.0,
                    created="2026-11-25T00:00:00Z", seats=[SeatRow(seat=0, kind="bot", bot="greedy")])


def old_write(store: Store, table_id: str, hand: int, idx: int) -> Callable[[Connection], None]:
    """The write of one action as the store made it before: the fence, then the insert, one statement each, both
    compiled once and run with ``exec_driver_sql`` (as it did)."""
    epoch = store.fences[table_id]
    fence, order, insert = _old_statements(store)
    values = {"table_id": table_id, "epoch": epoch}

    def fn(conn: Connection) -> None:
        if conn.exec_driver_sql(fence, tuple(values[name] for name in order)).rowcount != 1:
            raise RuntimeError("fenced")
        conn.exec_driver_sql(insert, (table_id, hand, idx, 0, idx, msgspec.json.encode(ACTION).decode(), epoch))

    return fn


def _old_statements(store: Store) -> tuple[str, list[str], str]:
    dialect = store.engine.dialect
    t = schema.tables
    fence = update(t).where(t.c.id == bindparam("table_id"), t.c.epoch == bindparam("epoch")).values(
        epoch=bindparam("epoch")).compile(dialect=dialect)
    return str(fence), list(fence.positiontup or ()), str(schema.actions.insert().compile(dialect=dialect))


async def measure(store: Store, ids: list[str], batch: int, commits: int, next_idx: dict[str, int],
                  old: bool) -> tuple[float, float]:
    """CPU and wall milliseconds per commit of ``batch`` actions, over ``commits`` commits."""
    k = 0
    before = store.commits
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(commits):
        writes = []
        for _ in range(batch):
            table_id = ids[k % len(ids)]
            k += 1
            idx = next_idx[table_id]
            next_idx[table_id] = idx + 1
            if old:
                writes.append(store.write(old_write(store, table_id, 0, idx)))
            else:
                writes.append(store.insert_actions(table_id, 0, [(idx, 0, idx, ACTION)]))
        await asyncio.gather(*writes)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    done = store.commits - before
    return cpu * 1000.0 / done, wall * 1000.0 / done


async def run(url: str, args: argparse.Namespace) -> None:
    store = await Store.open(url, cluster=True)
    try:
        ids = [f"t{i}" for i in range(args.tables)]
        for table_id in ids:
            store.fences[table_id] = 1
            await store.insert_table(table_row(table_id))
        next_idx = dict.fromkeys(ids, 0)
        print(f"{args.tables} fenced tables; {args.commits} group commits per batch size; load average "
              f"{os.getloadavg()[0]:.1f}")
        print("actions per commit | ms CPU per commit: now / before (ratio) | ms CPU per action: now / before "
              "| ms wall per commit: now / before")
        for batch in args.batches:
            await measure(store, ids, batch, 20, next_idx, False)  # warm: statements prepared, connections open
            await measure(store, ids, batch, 20, next_idx, True)
            now_cpu, now_wall = await measure(store, ids, batch, args.commits, next_idx, False)
            old_cpu, old_wall = await measure(store, ids, batch, args.commits, next_idx, True)
            print(f"{batch:>18} | {now_cpu:.3f} / {old_cpu:.3f} ({old_cpu / now_cpu:.1f}x) | "
                  f"{now_cpu / batch:.3f} / {old_cpu / batch:.3f} | {now_wall:.2f} / {old_wall:.2f}")
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default=None, help="a PostgreSQL URL (emptied first); default: a private cluster")
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--commits", type=int, default=1000, help="group commits measured per batch size")
    parser.add_argument("--batches", type=lambda s: [int(b) for b in s.split(",")], default=[1, 4, 16, 64],
                        help="actions per group commit, comma-separated")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from server_load import empty_postgres, run_loop
    from services import new_database, postgres_cluster

    with contextlib.ExitStack() as stack:
        if args.db:
            run_loop(empty_postgres(args.db))
        url: Any = args.db or new_database(stack.enter_context(postgres_cluster()))
        run_loop(run(url, args))


if __name__ == "__main__":
    main()
