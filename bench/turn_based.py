"""Turn-based tables that wait cost nothing (issue 29, "Idle tables cost nothing"): the server's memory with many
waiting turn-based Enemy Anemone tables stored against the same server with only the connected ones, and the time
to load a waiting table and answer its first ``hello``.

For each database (``--db sqlite|postgresql|both``; PostgreSQL is a private cluster, ``tests/services.py``) it
prepares two databases with bulk SQL through the server's own ``Store`` (its migrations, its JSON):

- *full*: ``--tables`` N (10,000) turn-based Enemy Anemone tables in play plus ``--connected`` C (50);
- *only*: the same C tables alone.

Each table has 4 seats (persons at seats 0 and 2, each with a token the bench knows, ``heuristic`` bots at 1 and
3), its first hand dealt by the engine (``new_match(options).deal_cards(seed)``) and 3 to 12 legal actions folded
through it, ended on a person's turn, and its ``turn_banks``: that person's deadline 2 to 5 days ahead (a *waiting*
table, ``server/table/turn_clock.py``: nothing needs it in memory).

Then, once on each database, it starts ``python -m cardtable serve`` (``turn_idle_s`` 2 s, ``expiry_check_s`` 1 s,
the per-address limits lifted as in ``server_load.py``), connects a seated WebSocket (``hello`` with the seat's
token) to each of the C tables, waits until only those C are live (``GET /api/tables?status=playing``, which one
process answers from memory) and reads the server's RSS (``/proc``) five times a second apart: the median of each
and their ratio, full/only (target: at most 1.2).

On the full server it then measures, one at a time, K (``--hellos``, 300) ``hello``s at distinct waiting tables
(connect, ``hello`` with the seat's token, until the ``snapshot``: the load from the database included) and, as
the baseline, interleaved with them, K ``hello``s at the C tables already in memory (a second connection of the
same seat); prints p50/p99/max of each (target: waiting-table p99 < 50 ms) and the p99 ratio. After the loaded
tables are let go again it reads the RSS once more (``after loads``: what letting go gives back; it must stop
growing with more ``--hellos``: 3,000 loads on SQLite left 215 MB while each table let go waited for a full garbage
collection, 171 MB, as after 1,500, once it was freed at once, ``server/lobby/idle_tables.py``, ``unlink``). It
also counts the tables the server's log says it loaded again and the tracebacks in its logs (must be none).

    .venv/bin/python bench/turn_based.py                       # both databases, about 40 s each on 2 cores
    .venv/bin/python bench/turn_based.py --db sqlite --tables 4000 --hellos 3000   # what letting go gives back

Exits 1 when a target is missed or a server's log has a traceback (after printing every figure). Loopback only;
every process it starts (servers, PostgreSQL) ends with it, also on Ctrl-C. Each server's log is kept in the run's
temporary folder while it runs and its last lines printed if it fails to start.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import websockets
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable

from cardtable.games import get_game
from cardtable.server.core.clock import iso_of_ms, unix_ms
from cardtable.server.core.tokens import hash_token
from cardtable.server.storage import schema
from cardtable.server.storage.store import Store
from machine import free_port, rss_mb, stop

console = Console(width=None if sys.stdout.isatty() else 120)

OPTIONS = {"players": 4, "rounds": 4}
"""The Enemy Anemone options of every table."""

PERSONS = (0, 2)
"""The person seats (the others are ``heuristic`` bots)."""

CLOCK = {"start_s": 259200, "per_move_s": 86400}
"""The turn clock of every table ("1 move a day")."""

CHUNK = 500
"""Tables written per transaction."""

TURN_IDLE_S = 2.0
EXPIRY_CHECK_S = 1.0

SERVER_ENV = {
    "CARDTABLE_TURN_IDLE_S": str(TURN_IDLE_S),
    "CARDTABLE_EXPIRY_CHECK_S": str(EXPIRY_CHECK_S),
    "CARDTABLE_MAX_SOCKETS_PER_ADDRESS": "100000",
    "CARDTABLE_MAX_CONNECTIONS_PER_ADDRESS": "100000",
    "CARDTABLE_MAX_CONNECTIONS_PER_ADDRESS_PER_TABLE": "100000",
    "CARDTABLE_LOBBY_READS_PER_SECOND": "100000",
    "CARDTABLE_LOBBY_READ_BURST": "100000",
}
"""The server's settings: waiting tables let go 2 s after their last connection, swept every second; the
per-address limits out of the way of one client holding many connections."""

RSS_TARGET = 1.2
P99_TARGET_MS = 50.0


# -- the tables ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Seat:
    """A person's seat the bench can connect to: its table and token."""

    table_id: str
    token: str


@dataclass(slots=True)
class Rows:
    """The rows of a chunk of tables, per database table."""

    tables: list[dict[str, Any]] = field(default_factory=list)
    seats: list[dict[str, Any]] = field(default_factory=list)
    hands: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    banks: list[dict[str, Any]] = field(default_factory=list)


def token_of(table_id: str, seat: int) -> str:
    """The bench's token of a person's seat (its hash is what is stored)."""
    return f"bench-{table_id}-{seat}"


def add_table(rows: Rows, table_id: str, rng: random.Random, now_ms: int, created_ms: int) -> Seat:
    """Add one turn-based table in play to ``rows``: its first hand dealt and 3 to 12 legal actions applied, ending
    on a person's turn; returns the seat to move."""
    match = get_game("anemone").new_match(OPTIONS)
    seed = rng.randrange(2**62)
    deal = match.deal_cards(seed)
    state = match.start_hand(deal)
    wanted = rng.randint(3, 12)
    applied: list[tuple[int, dict[str, Any]]] = []
    while True:
        to_act = state.to_act()
        if len(applied) >= wanted and len(to_act) == 1 and to_act[0] in PERSONS:
            break
        if state.is_over or not to_act:
            raise RuntimeError(f"table {table_id}: the hand ended before a person's turn")
        seat = to_act[0]
        action = dict(rng.choice(state.legal_actions(seat)))
        state.apply(seat, action, len(applied) * 60_000)
        applied.append((seat, action))
    mover = state.to_act()[0]
    rows.tables.append(
        {
            "id": table_id,
            "game": "anemone",
            "options": OPTIONS,
            "status": "playing",
            "seed": seed,
            "grace_seconds": 60.0,
            "created": iso_of_ms(created_ms),
            "epoch": 0,
            "play_now": 0,
            "seed_chosen": 1,
            "ready_seconds": None,
            "daily": None,
            "pace": "turn-based",
            "turn_clock": CLOCK,
        }
    )
    for seat in range(OPTIONS["players"]):
        person = seat in PERSONS
        rows.seats.append(
            {
                "table_id": table_id,
                "seat": seat,
                "kind": "person" if person else "bot",
                "name": f"p{seat}-{table_id}" if person else None,
                "bot": None if person else "heuristic",
                "token_hash": hash_token(token_of(table_id, seat)) if person else None,
                "left": 0,
            }
        )
    rows.hands.append({"table_id": table_id, "hand": 0, "deal": deal})
    start_at = now_ms - len(applied) * 3_600_000
    for idx, (seat, action) in enumerate(applied):
        rows.actions.append(
            {
                "table_id": table_id,
                "hand": 0,
                "idx": idx,
                "seat": seat,
                "ms": idx * 60_000,
                "action": action,
                "epoch": None,
                "at": iso_of_ms(start_at + idx * 3_600_000),
            }
        )
    start_ms = CLOCK["start_s"] * 1000
    deadline = now_ms + rng.randint(2 * 86_400_000, 5 * 86_400_000)
    for seat in range(OPTIONS["players"]):
        rows.banks.append(
            {
                "table_id": table_id,
                "seat": seat,
                "bank_ms": start_ms,
                "deadline_ms": deadline if seat == mover else None,
                "timeouts": 0,
            }
        )
    return Seat(table_id, token_of(table_id, mover))


async def write_rows(store: Store, rows: Rows) -> None:
    """Insert ``rows`` in one transaction (the tables first: the others refer to them)."""
    async with store.engine.begin() as conn:
        for table, values in (
            (schema.tables, rows.tables),
            (schema.seats, rows.seats),
            (schema.hands, rows.hands),
            (schema.actions, rows.actions),
            (schema.turn_banks, rows.banks),
        ):
            if values:
                await conn.execute(table.insert(), values)


def bar() -> Progress:
    """A Rich progress bar: what is done, the bar, done of all, time taken."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console)


async def prepare(url: str, ids: list[str], label: str, seed: int) -> dict[str, Seat]:
    """Create the schema at ``url`` (the server's migrations) and store one waiting table per id of ``ids``, with
    a progress bar; returns each table's seat to move. The same id gets the same table in every database."""
    store = await Store.open(url)
    seats: dict[str, Seat] = {}
    now_ms = unix_ms()
    try:
        with bar() as progress:
            task = progress.add_task(f"{label}: storing tables", total=len(ids))
            for start in range(0, len(ids), CHUNK):
                rows = Rows()
                for i, table_id in enumerate(ids[start : start + CHUNK], start):
                    rng = random.Random(f"{seed}:{table_id}")
                    seats[table_id] = add_table(rows, table_id, rng, now_ms, now_ms - 7 * 86_400_000 + i)
                await write_rows(store, rows)
                progress.advance(task, len(rows.tables))
    finally:
        await store.close()
    return seats


# -- the server -----------------------------------------------------------------------------------------------


@dataclass
class Server:
    """A running ``cardtable serve``."""

    proc: subprocess.Popen[bytes]
    port: int
    log: str
    loaded: int = 0
    """Tables loaded again, as its log says (counted when it stops)."""
    tracebacks: int = 0
    """Tracebacks in its log (counted when it stops)."""

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ws(self, table_id: str) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/tables/{table_id}"

    def log_tail(self, lines: int = 30) -> str:
        with open(self.log, errors="replace") as f:
            return "".join(f.readlines()[-lines:])


@contextlib.asynccontextmanager
async def running_server(url: str, folder: str, name: str) -> AsyncIterator[Server]:
    """Start ``python -m cardtable serve`` on ``url`` and a free port; yield it once it answers; stop it at the end
    (also on an error or Ctrl-C)."""
    port = free_port()
    log = os.path.join(folder, f"{name}.log")
    with open(log, "wb") as out:  # the child keeps its own copy
        proc = subprocess.Popen(
            [sys.executable, "-m", "cardtable", "serve", "--port", str(port), "--db", url],
            env=dict(os.environ, **SERVER_ENV),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = Server(proc, port, log)
    try:
        deadline = time.monotonic() + 120
        async with httpx.AsyncClient(base_url=server.http, timeout=5) as http:
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the server did not start; its log ends:\n{server.log_tail()}")
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get("/api/games")).status_code == 200:
                        break
                await asyncio.sleep(0.2)
        yield server
    finally:
        await asyncio.to_thread(stop, proc)
        with open(log, errors="replace") as f:
            text = f.read()
        server.loaded = text.count(": loaded again")
        if "Traceback" in text:
            server.tracebacks = text.count("Traceback")
            console.print(
                f"[red]{name}: {server.tracebacks} traceback(s) in the server's log:[/]\n"
                f"{text[text.index('Traceback') :][:3000]}"
            )


async def live_tables(server: Server) -> int:
    """How many tables in play the server holds in memory (one process lists its live tables from memory)."""
    count, cursor = 0, None
    async with httpx.AsyncClient(base_url=server.http, timeout=10) as http:
        while True:
            params: dict[str, Any] = {"status": "playing", "limit": 1000}
            if cursor:
                params["cursor"] = cursor
            response = await http.get("/api/tables", params=params)
            response.raise_for_status()
            count += len(response.json())
            cursor = response.headers.get("X-Next-Cursor")
            if not cursor:
                return count


async def settle(server: Server, expected: int, timeout_s: float = 60.0) -> int:
    """Wait until the server holds exactly ``expected`` tables in play (the sweep let the others go), seen twice an
    expiry sweep apart, and at least ``turn_idle_s`` plus two sweeps after the call; returns the count seen last
    (not ``expected`` after ``timeout_s``)."""
    start = time.monotonic()
    least = start + TURN_IDLE_S + 2 * EXPIRY_CHECK_S
    seen: list[int] = []
    while True:
        seen.append(await live_tables(server))
        if time.monotonic() >= least and seen[-2:] == [expected, expected]:
            return expected
        if time.monotonic() - start > timeout_s:
            return seen[-1]
        await asyncio.sleep(EXPIRY_CHECK_S)


def server_rss(server: Server) -> float:
    """The server process's resident memory, in MB."""
    return rss_mb(server.proc.pid)


async def rss_samples(server: Server, count: int = 5, every_s: float = 1.0) -> list[float]:
    samples = []
    for i in range(count):
        if i:
            await asyncio.sleep(every_s)
        samples.append(server_rss(server))
    return samples


# -- the connections ------------------------------------------------------------------------------------------


async def hello(url: str, token: str) -> tuple[Any, float]:
    """Connect to ``url``, say ``hello`` with ``token`` and read until the ``snapshot``; returns the open
    connection and the milliseconds from the connect to the snapshot. ``RuntimeError`` when the server refuses or
    does not seat the token."""
    t0 = time.perf_counter()
    ws = await websockets.connect(url, max_size=2**22, compression=None, open_timeout=30)
    try:
        await ws.send(json.dumps({"type": "hello", "token": token}))
        while True:
            message = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if message["type"] == "snapshot":
                return ws, (time.perf_counter() - t0) * 1000.0
            if message["type"] == "welcome" and message.get("seat") is None:
                raise RuntimeError(f"{url}: hello did not seat the token")
            if message["type"] == "error":
                raise RuntimeError(f"{url}: {message}")
    except BaseException:
        await ws.close()
        raise


async def drain(ws: Any) -> None:
    """Read and drop what the server sends to a held connection, until it closes."""
    with contextlib.suppress(websockets.ConnectionClosed):
        async for _ in ws:
            pass


@contextlib.asynccontextmanager
async def held_connections(server: Server, seats: list[Seat]) -> AsyncIterator[None]:
    """A seated connection to each of ``seats``' tables, held (and read) while the context lasts."""
    sockets: list[Any] = []
    readers: list[asyncio.Task[None]] = []
    try:
        for seat in seats:
            ws, _ = await hello(server.ws(seat.table_id), seat.token)
            sockets.append(ws)
            readers.append(asyncio.create_task(drain(ws)))
        yield
    finally:
        for ws in sockets:
            with contextlib.suppress(Exception):
                await ws.close()
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)


async def timed_hellos(server: Server, idle: list[Seat], live: list[Seat]) -> tuple[list[float], list[float]]:
    """One at a time, a ``hello`` at each waiting table of ``idle`` (loaded from the database) interleaved with one
    at a table of ``live`` (in memory, taken in turn); each connection closed after its snapshot. Returns the
    milliseconds of each kind."""
    loads: list[float] = []
    baseline: list[float] = []
    with bar() as progress:
        task = progress.add_task("hellos (waiting tables / in memory)", total=len(idle))
        for i, seat in enumerate(idle):
            for target, out in ((seat, loads), (live[i % len(live)], baseline)):
                ws, ms = await hello(server.ws(target.table_id), target.token)
                out.append(ms)
                await ws.close()
            progress.advance(task)
    return loads, baseline


# -- one database ---------------------------------------------------------------------------------------------


@dataclass
class Figures:
    """What one database gave."""

    db: str
    tables: int
    connected: int
    rss_full: list[float] = field(default_factory=list)
    rss_only: list[float] = field(default_factory=list)
    rss_after: list[float] = field(default_factory=list)
    live_full: int = 0
    live_only: int = 0
    live_after: int = 0
    loads: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)
    prepare_s: float = 0.0
    loaded: int = 0
    """Tables the full server's log says it loaded again."""
    tracebacks: int = 0

    @property
    def ratio(self) -> float:
        return statistics.median(self.rss_full) / statistics.median(self.rss_only)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(f: Figures) -> RichTable:
    """The table of one database's figures."""
    out = RichTable(title=f"{f.db}: {f.tables:,} waiting turn-based tables + {f.connected} connected")
    out.add_column("measure")
    out.add_column("value", justify="right")
    out.add_column("target", justify="right")
    med = statistics.median
    out.add_row(
        f"server RSS, {f.tables + f.connected:,} tables stored ({f.live_full} live)",
        f"{med(f.rss_full):.1f} MB",
        "",
    )
    out.add_row(
        f"server RSS, {f.connected} tables stored ({f.live_only} live)", f"{med(f.rss_only):.1f} MB", ""
    )
    ok = "ok" if f.ratio <= RSS_TARGET else "MISSED"
    out.add_row("RSS ratio (full / only)", f"{f.ratio:.3f}", f"<= {RSS_TARGET} {ok}")
    if f.rss_after:
        out.add_row(
            f"server RSS after {len(f.loads)} loads, let go again ({f.live_after} live)",
            f"{med(f.rss_after):.1f} MB",
            "",
        )
        out.add_row("RSS ratio (after loads / before)", f"{med(f.rss_after) / med(f.rss_full):.3f}", "")
    if f.loads:
        p99 = quantile(f.loads, 0.99)
        out.add_row(
            f"hello at a waiting table (load + snapshot), {len(f.loads)}: p50 / p99 / max",
            f"{quantile(f.loads, 0.5):.1f} / {p99:.1f} / {max(f.loads):.1f} ms",
            f"p99 < {P99_TARGET_MS:g} ms {'ok' if p99 < P99_TARGET_MS else 'MISSED'}",
        )
        base = quantile(f.baseline, 0.99)
        out.add_row(
            f"hello at a table in memory (baseline), {len(f.baseline)}: p50 / p99 / max",
            f"{quantile(f.baseline, 0.5):.1f} / {base:.1f} / {max(f.baseline):.1f} ms",
            "",
        )
        out.add_row("p99 ratio (waiting / in memory)", f"{p99 / base:.2f}", "")
    out.add_row("tables loaded again (the full server's log)", f"{f.loaded:,}", "")
    out.add_row("tracebacks in the servers' logs", f"{f.tracebacks}", "0")
    out.add_row("storing the tables (both databases)", f"{f.prepare_s:.0f} s", "")
    return out


async def run_database(
    db: str, full_url: str, only_url: str, args: argparse.Namespace, folder: str
) -> Figures:
    figures = Figures(db, args.tables, args.connected)
    connected_ids = [f"tbc{i:07d}" for i in range(args.connected)]
    idle_ids = [f"tbi{i:07d}" for i in range(args.tables)]
    t0 = time.monotonic()
    seats = await prepare(full_url, connected_ids + idle_ids, f"{db} full", args.seed)
    await prepare(only_url, connected_ids, f"{db} only", args.seed)
    figures.prepare_s = time.monotonic() - t0
    connected = [seats[i] for i in connected_ids]
    sampled = random.Random(args.seed).sample(idle_ids, min(args.hellos, len(idle_ids)))

    console.print(f"[bold]{db}[/]: the server with {args.connected} tables stored")
    async with running_server(only_url, folder, f"{db}-only") as server, held_connections(server, connected):
        figures.live_only = await settle(server, args.connected)
        figures.rss_only = await rss_samples(server)
    figures.tracebacks += server.tracebacks
    console.print(f"  RSS {statistics.median(figures.rss_only):.1f} MB, {figures.live_only} live")

    console.print(f"[bold]{db}[/]: the server with {args.tables + args.connected:,} tables stored")
    async with running_server(full_url, folder, f"{db}-full") as server, held_connections(server, connected):
        figures.live_full = await settle(server, args.connected)
        figures.rss_full = await rss_samples(server)
        console.print(f"  RSS {statistics.median(figures.rss_full):.1f} MB, {figures.live_full} live")
        if sampled:
            figures.loads, figures.baseline = await timed_hellos(
                server, [seats[i] for i in sampled], connected
            )
            figures.live_after = await settle(server, args.connected)
            figures.rss_after = await rss_samples(server)
    figures.tracebacks += server.tracebacks
    figures.loaded = server.loaded
    return figures


async def run_sqlite(args: argparse.Namespace, folder: str) -> Figures:
    return await run_database(
        "SQLite",
        f"sqlite+aiosqlite:///{folder}/full.db",
        f"sqlite+aiosqlite:///{folder}/only.db",
        args,
        folder,
    )


def tests_on_path() -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))


@contextlib.contextmanager
def postgres_databases() -> Iterator[tuple[str, str]]:
    """Two empty databases in a private PostgreSQL cluster (``tests/services.py``), stopped at the end."""
    tests_on_path()
    from services import new_database, postgres_cluster

    with postgres_cluster() as cluster:
        yield new_database(cluster), new_database(cluster)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument(
        "--tables", type=int, default=10_000, help="waiting turn-based tables nobody connects to"
    )
    parser.add_argument(
        "--connected", type=int, default=50, help="turn-based tables with a seated connection"
    )
    parser.add_argument(
        "--hellos",
        type=int,
        default=300,
        help="hellos timed at waiting tables (and as many at tables in memory)",
    )
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.connected < 1 or args.tables < 0 or args.hellos < 0:
        parser.error("--connected must be 1 or more, --tables and --hellos 0 or more")
    results: list[Figures] = []
    with tempfile.TemporaryDirectory(prefix="cardtable-turn-bench-") as folder:
        if args.db in ("sqlite", "both"):
            results.append(asyncio.run(run_sqlite(args, folder)))
            console.print(summary(results[-1]))
        if args.db in ("postgresql", "both"):
            with postgres_databases() as (full_url, only_url):
                results.append(asyncio.run(run_database("PostgreSQL", full_url, only_url, args, folder)))
            console.print(summary(results[-1]))
    if len(results) > 1:
        for figures in results:
            console.print(summary(figures))
    missed = [
        f.db
        for f in results
        if f.ratio > RSS_TARGET or f.tracebacks or (f.loads and quantile(f.loads, 0.99) >= P99_TARGET_MS)
    ]
    if missed:
        console.print(f"[red]target missed on {', '.join(missed)}[/]")
        sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # every server and PostgreSQL already stopped on the way out
        console.print("interrupted")
        sys.exit(130)
