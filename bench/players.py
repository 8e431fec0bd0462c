"""Players at scale: fill a database with accounts and rated matches, then time the leaderboard, a player page and
a match-history page through the app, and the recording of a finished 6-seat match's ratings.

    .venv/bin/python bench/players.py                      # 100 000 accounts, 1 000 000 matches, SQLite and PostgreSQL
    .venv/bin/python bench/players.py --accounts 10000 --matches 100000 --db sqlite
    .venv/bin/python bench/players.py --db postgresql       # starts a private cluster (tests/services.py)
    .venv/bin/python bench/players.py --url postgresql+asyncpg://postgres@127.0.0.1:5432/players  # fills it once

The filling uses bulk inserts (``executemany`` on SQLite, ``COPY`` on PostgreSQL) of synthetic rows shaped like
real ones: 2 to 6 seats a match, one seat in four a bot level, one in ten a guest, a rating history row per rated
seat. Each request is timed through the ASGI app (FastAPI, the real routes, no network); the baseline is
``GET /api/games`` (no database) timed the same way in the same run. Targets (issue 12): p99 under 50 ms each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from cardtable.server.edge.app import create_app  # noqa: E402
from cardtable.server.players.results import MatchResult, SeatResult, record_results  # noqa: E402
from cardtable.server.storage.store import Store  # noqa: E402

BOTS = ["greedy:easy", "greedy:medium", "greedy:hard", "greedy", "random", "heuristic", "ismcts:easy", "ismcts:hard"]
GAMES = ["nerts", "anemone"]
CHUNK = 50_000


def iso(t: int) -> str:
    """Seconds after 2026-01-01 as an ISO 8601 UTC string."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_767_225_600 + t))


def generate(accounts: int, matches: int, seed: int) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
    """Rows to insert, table by table, in chunks: ``(table, rows)``."""
    rng = random.Random(seed)
    n_bots = len(BOTS)
    yield "accounts", [(i + 1, "bot", spec, None, None, iso(0), 0) for i, spec in enumerate(BOTS)]
    for start in range(0, accounts, CHUNK):
        yield "accounts", [(n_bots + i + 1, "person", f"player{i}", f"player{i}", "x", iso(i), 0)
                           for i in range(start, min(accounts, start + CHUNK))]
    history_id = 0
    counts: dict[tuple[int, str], list[int]] = {}
    seats_rows: list[tuple[Any, ...]] = []
    history_rows: list[tuple[Any, ...]] = []
    for m in range(matches):
        game = GAMES[m % 2]
        table_id = f"b{m:09d}"
        finished = iso(m * 30)
        size = rng.randint(2, 6)
        for seat in range(size):
            roll = rng.random()
            if roll < 0.1:
                account = None
            elif roll < 0.35:
                account = 1 + rng.randrange(n_bots)
            else:
                account = n_bots + 1 + rng.randrange(accounts)
            rank = rng.randint(1, size)
            points = rng.randint(-10, 60)
            stats = {"nerts_calls": int(rank == 1), "cards_left": rng.randint(0, 13)} if game == "nerts" else {
                "anemones": rng.randint(0, 4)}
            ordinal = rng.uniform(-5, 30) if account else None
            seats_rows.append((table_id, seat, game, account, None if account else "guest", finished, size, rank,
                               int(rank == 1), points, 3, json.dumps(stats), ordinal, ordinal))
            if account:
                history_id += 1
                history_rows.append((history_id, account, game, table_id, finished, 25.0, 5.0, ordinal))
                c = counts.setdefault((account, game), [0, 0, 0, 0, 0, 0])
                c[0] += 1
                c[1] += int(rank == 1)
                c[2] += points
                c[3] += stats.get("cards_left", 0)
                c[4] += stats.get("nerts_calls", 0)
                c[5] += stats.get("anemones", 0)
        if len(seats_rows) >= CHUNK:
            yield "match_seats", seats_rows
            yield "rating_history", history_rows
            seats_rows, history_rows = [], []
    if seats_rows:
        yield "match_seats", seats_rows
        yield "rating_history", history_rows
    ratings, stats_rows = [], []
    for (account, game), (n, wins, points, cards_left, calls, anemones) in counts.items():
        mu, sigma = rng.uniform(15, 40), rng.uniform(1, 8)
        ratings.append((account, game, mu, sigma, mu - 3 * sigma, n, wins, iso(matches * 30)))
        stats_rows.append((account, game, n, wins, points, 3 * n, cards_left, calls, anemones))
        if len(ratings) >= CHUNK:
            yield "ratings", ratings
            yield "player_stats", stats_rows
            ratings, stats_rows = [], []
    if ratings:
        yield "ratings", ratings
        yield "player_stats", stats_rows


COLUMNS = {
    "accounts": ["id", "kind", "name", "name_key", "password_hash", "created", "deleted"],
    "match_seats": ["table_id", "seat", "game", "account_id", "name", "finished", "players", "rank", "won", "points",
                    "hands", "stats", "ordinal_before", "ordinal_after"],
    "rating_history": ["id", "account_id", "game", "table_id", "at", "mu", "sigma", "ordinal"],
    "ratings": ["account_id", "game", "mu", "sigma", "ordinal", "matches", "wins", "updated"],
    "player_stats": ["account_id", "game", "matches", "wins", "points", "hands", "cards_left", "nerts_calls",
                     "anemones"],
}


async def filled(url: str) -> dict[str, int]:
    """Rows per table of a database the bench filled before (empty dict when it holds no accounts yet)."""
    store = await Store.open(url)
    try:
        async with store.engine.connect() as conn:
            counts = {table: int((await conn.exec_driver_sql(f"SELECT count(*) FROM {table}")).scalar_one())
                      for table in COLUMNS}
    finally:
        await store.close()
    return counts if counts["accounts"] else {}


async def fill(url: str, accounts: int, matches: int, seed: int) -> dict[str, int]:
    """Create the schema (migrations) and bulk-insert the synthetic rows; returns rows per table."""
    store = await Store.open(url)
    await store.close()
    counts: dict[str, int] = {}
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        conn = sqlite3.connect(parsed.database or "")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")
        for table, rows in generate(accounts, matches, seed):
            cols = COLUMNS[table]
            conn.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", rows)
            counts[table] = counts.get(table, 0) + len(rows)
        conn.commit()
        conn.execute("ANALYZE")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
    else:
        import asyncpg

        conn = await asyncpg.connect(host=parsed.host, port=parsed.port, user=parsed.username, database=parsed.database)
        try:
            for table, rows in generate(accounts, matches, seed):
                await conn.copy_records_to_table(table, records=rows, columns=COLUMNS[table])
                counts[table] = counts.get(table, 0) + len(rows)
            await conn.execute("SELECT setval('accounts_id_seq', (SELECT max(id) FROM accounts))")
            await conn.execute("SELECT setval('rating_history_id_seq', (SELECT max(id) FROM rating_history))")
            await conn.execute("ANALYZE")
        finally:
            await conn.close()
    return counts


async def timed(n: int, call: Callable[[int], Awaitable[None]]) -> list[float]:
    """Milliseconds of each of ``n`` calls (after 5 warm-up calls)."""
    for i in range(5):
        await call(i)
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        await call(i)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def p99(ms: list[float]) -> float:
    return statistics.quantiles(ms, n=100)[98] if len(ms) >= 100 else max(ms)


async def measure(url: str, accounts: int, requests: int, seed: int) -> dict[str, list[float]]:
    """Time the routes through the app, and record_results of a 6-seat match on the store's writer."""
    app = create_app(url)
    rng = random.Random(seed + 1)
    results: dict[str, list[float]] = {}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:

            async def get(path: str) -> None:
                response = await client.get(path)
                assert response.status_code == 200, (path, response.status_code, response.text[:200])

            names = [f"player{rng.randrange(accounts)}" for _ in range(requests + 5)]
            results["baseline GET /api/games"] = await timed(requests, lambda i: get("/api/games"))
            results["leaderboard (50)"] = await timed(
                requests, lambda i: get(f"/api/leaderboard?game={GAMES[i % 2]}&limit=50"))
            results["player page"] = await timed(requests, lambda i: get(f"/api/players/{names[i]}"))
            results["match history (20)"] = await timed(requests, lambda i: get(f"/api/players/{names[i]}/matches"))
            results["bot player page"] = await timed(max(20, requests // 10), lambda i: get(f"/api/players/{BOTS[i % 8]}"))
            results["bot match history"] = await timed(
                max(20, requests // 10), lambda i: get(f"/api/players/{BOTS[i % 8]}/matches?game=nerts"))
        store: Store = app.state.store
        n_bots = len(BOTS)

        async def record(i: int) -> None:
            people = rng.sample(range(n_bots + 1, n_bots + accounts + 1), 4)
            seats = [SeatResult(s, f"p{s}", account_id=a, points=rng.randint(0, 40)) for s, a in enumerate(people)]
            seats += [SeatResult(4, "b4", bot="greedy:hard", points=10), SeatResult(5, "b5", bot="greedy:easy", points=10)]
            result = MatchResult(f"rec{seed}-{i}", "nerts", iso(10**9 + i), 3, seats, [[s] for s in range(6)], [0])

            def fn(conn: Any) -> None:
                record_results(conn, result)

            await store.write(fn)

        results["record a 6-seat match"] = await timed(max(20, requests // 4), record)
    return results


def run(kind: str, args: argparse.Namespace, folder: Path) -> None:
    if args.url:
        url = args.url
        cluster = None
    elif kind == "sqlite":
        url = f"sqlite+aiosqlite:///{folder / 'players.db'}"
        cluster = None
    else:
        from services import new_database, postgres_cluster

        cluster = postgres_cluster()
        url = new_database(cluster.__enter__())
    try:
        t0 = time.perf_counter()
        counts = asyncio.run(filled(url)) if args.url else {}
        if counts:
            print(f"\n{kind}: already filled: " + ", ".join(f"{table} {n:,}" for table, n in counts.items()))
        else:
            counts = asyncio.run(fill(url, args.accounts, args.matches, args.seed))
            print(f"\n{kind}: filled in {time.perf_counter() - t0:.0f} s: "
                  + ", ".join(f"{table} {n:,}" for table, n in counts.items()))
        results = asyncio.run(measure(url, args.accounts, args.requests, args.seed))
        base = p99(results["baseline GET /api/games"])
        print(f"{'':26} {'n':>5} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'p99/base':>9}")
        for name, ms in results.items():
            mark = ""
            if name in ("leaderboard (50)", "player page", "match history (20)"):
                mark = "  ok (< 50 ms)" if p99(ms) < 50 else "  OVER 50 ms"
            print(f"{name:26} {len(ms):5d} {statistics.median(ms):8.2f} {p99(ms):8.2f} {max(ms):8.2f} "
                  f"{p99(ms) / base:9.1f}{mark}")
    finally:
        if cluster is not None:
            cluster.__exit__(None, None, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--accounts", type=int, default=100_000)
    parser.add_argument("--matches", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=300, help="timed requests per route")
    parser.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--url", help="an existing database to use (filled on first use, kept); overrides --db")
    args = parser.parse_args()
    if args.url:
        args.db = make_url(args.url).get_backend_name()
    print(f"players bench: {args.accounts:,} accounts, {args.matches:,} matches, {args.requests} requests a route")
    with tempfile.TemporaryDirectory(prefix="cardtable-bench-") as tmp:
        for kind in (["sqlite", "postgresql"] if args.db == "both" else [args.db]):
            run(kind, args, Path(tmp))


if __name__ == "__main__":
    main()
