"""Fan-out cost on the table owner: how much a table's spectators delay a seat's ack.

Builds a two-seat Nerts table in this process (a real ``Store`` on a temporary SQLite file and a real ``Manager``),
attaches ``--spectators`` spectator connections (each with its own writer task draining its queue, as a socket's
would), then times ``--actions`` flips from seat 0, one at a time: from ``submit_play`` to the ``ack`` being queued
for the seat. The same run with no spectators is the baseline; prints p50/p99 of both and the p99 difference
(target: a few milliseconds at 500 spectators).

    .venv/bin/python bench/fanout.py --spectators 500 --actions 300
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time

from cardtable.server.core.settings import Settings
from cardtable.server.lobby.manager import Manager
from cardtable.server.storage.store import Store
from cardtable.server.table.actions import QueuedAction
from cardtable.server.table.connections import Connection


async def drain(connection: Connection) -> None:
    while await connection.outbox.get() is not None:
        pass


async def measure(spectators: int, actions: int) -> list[float]:
    folder = tempfile.mkdtemp(prefix="cardtable-fanout-")
    store = await Store.open(f"sqlite+aiosqlite:///{folder}/fanout.db")
    settings = Settings(max_spectators=spectators + 1, max_connections_per_address_per_table=spectators + 10)
    manager = await Manager.open(store, settings)
    try:
        table, _, first = await manager.create("nerts", {"players": 2}, None, "ana", 1, 3600)
        await manager.join(table.id, "bo", None)
        await manager.start(table.id, first)
        watchers = [Connection(max_outbox=10_000) for _ in range(spectators)]
        writers = [asyncio.create_task(drain(connection)) for connection in watchers]
        for connection in watchers:
            await manager.hello(table, connection, None)
        seat = Connection(max_outbox=10_000)
        await manager.hello(table, seat, first)
        loop = asyncio.get_running_loop()
        latencies: list[float] = []
        for i in range(actions):
            while not seat.outbox.empty():
                seat.outbox.get_nowait()
            future: asyncio.Future[tuple[bool, object]] = loop.create_future()
            t0 = time.perf_counter()
            table.submit_action(QueuedAction(0, {"type": "flip"}, connection=seat, seq=i, future=future))
            await future
            acked = [json.loads(t) for t in list(seat.outbox._queue) if t is not None]  # type: ignore[attr-defined]
            assert any(m["type"] == "ack" for m in acked)
            latencies.append((time.perf_counter() - t0) * 1000.0)
            await asyncio.sleep(0.005)
        for connection in watchers:
            connection.close()
        await asyncio.gather(*writers)
        return latencies
    finally:
        await manager.close()
        await store.close()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def run(args: argparse.Namespace) -> None:
    base = await measure(0, args.actions)
    loaded = await measure(args.spectators, args.actions)
    print(f"ack latency on the owner, {args.actions} flips: 0 spectators p50 {pct(base, 0.5):.2f} ms, "
          f"p99 {pct(base, 0.99):.2f} ms; {args.spectators} spectators p50 {pct(loaded, 0.5):.2f} ms, "
          f"p99 {pct(loaded, 0.99):.2f} ms; p99 difference {pct(loaded, 0.99) - pct(base, 0.99):+.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spectators", type=int, default=500)
    parser.add_argument("--actions", type=int, default=300)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
