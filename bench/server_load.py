"""Load on the table server: N Nerts tables of 4 scripted WebSocket clients each, on loopback.

Starts ``python -m cardtable serve`` on a free port with a temporary SQLite database, opens ``--tables``
four-seat Nerts tables, and connects four clients to each. Every client sends, ``--rate`` times a second (random
phase), an action picked at random from the ``legal`` of its latest update, and times each until its ``ack`` (or
``reject``). In the same run, the same clients measure a bare WebSocket echo server (the ``websockets`` library,
another process, same rate and message size) as the baseline, then a durable echo server (the same, each message
stored through the table server's own ``Store`` before it is answered: the price of durability by itself). Prints
actions/s, ack latency p50/p99, the server's own event-loop lag over the window (its ``GET /api/loop-lag``, on at
10 ms here), the machine's soft interrupts, steal and ``ksoftirqd`` over each window (``machine.host_line``) and
the ratios of the p99s (server/echo, durable echo/echo, server/durable echo). Figures and what makes
the server's tail: ``docs/deploy.md``, "The server's tail".

The clients run in this one process on picows (a WebSocket library in Cython), each a listener with a timer rather
than a task, with the garbage collector set as the server sets it: the load generator shares the machine with what
it measures, so it takes as little of it as it can (about 0.2 cores for 1,600 clients, against 0.4 with the
``websockets`` library's asyncio client), and its own event-loop lag is printed beside the figures (a latency
includes it). Its own garbage collections are kept out of the measuring window (:func:`quiet_collector`).

    .venv/bin/python bench/server_load.py --tables 200 --rate 1 --duration 20

Bounded: at most 500 tables and 120 s of measuring; loopback only. Target: 200 tables x 4 seats at 1 action/s/seat,
p99 ack < 25 ms.

Several processes (``docs/deploy.md``, "Several processes"): ``--processes N`` (N >= 2) measures, in one run, one
process on SQLite, one process on PostgreSQL, then N processes on PostgreSQL and Redis, the tables created and the
clients connected round robin over the processes (so about half the connections are relayed); for each: acks/s,
p50/p99/max ack latency, CPU per process, and the relayed/direct p99 ratio. ``--failover`` then SIGKILLs one of
the N processes mid-run and prints the seconds until every one of its tables acknowledges again and the
acknowledged actions lost. ``--db`` (a PostgreSQL URL, emptied first) and ``--redis`` use running services;
without them private ones are started (``tests/services.py``: PostgreSQL and redis-server installed).

    nice -n 10 .venv/bin/python bench/server_load.py --processes 2 --tables 400 --duration 20 --failover

Target: 400 tables x 4 seats at 1 action/s/seat over two processes, p99 ack < 40 ms.

On a shared machine compare versions by the servers' CPU per answered action (printed for every configuration;
``--only sqlite|pg|cluster`` runs one), at a load the servers keep up with: a starved server batches more and its
figure drops. ``--direct`` connects every client to the process owning its table, so nothing is relayed: the
difference to a run without it is what the relay costs. ``--profile FOLDER`` writes a cProfile of each server over
the measuring window, timed by the thread's CPU clock (``FOLDER/{sqlite,pg}-{processes}-server{n}.prof``; read
with ``python -m pstats``): its own cost per call is large (a server runs about twice as slow), so read it for
where the time goes, not for how much. ``--stages FOLDER`` (one process) runs the server through
``ack_stages.py`` instead, which times each acknowledged action inside the server stage by stage over the window
and prints where the acks, and the slowest 1% of them, spent their time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec
from picows import WSCloseCode, WSError, WSFrame, WSListener, WSMsgType, WSTransport, ws_connect

from ack_stages import summary as summary_of_stages
from cardtable import records
from cardtable.server.core.loop_lag import LagHistogram
from cardtable.server.edge.app import GC_THRESHOLDS
from cardtable.server.storage.rows import SeatRow, TableRow
from cardtable.server.storage.store import Store
from machine import cpu_seconds, cpu_speed_ms, free_port, host_line, host_ticks, parent_pid, stop

ECHO_SERVER = """
import asyncio, sys, websockets
async def echo(ws):
    async for message in ws:
        await ws.send(message)
async def main():
    async with websockets.serve(echo, "127.0.0.1", int(sys.argv[1]), max_size=2**20, compression=None):
        await asyncio.Future()
asyncio.run(main())
"""

DURABLE_ECHO_SERVER = """
import asyncio, sys, websockets
from cardtable.server.storage.store import Store
async def main():
    store = await Store.open(sys.argv[2])  # the server's own store: SQLite pragmas, group commit, checkpoints
    count = 0
    async def echo(ws):
        nonlocal count
        async for message in ws:
            count += 1
            await store.insert_actions("echo", 0, [(count, 0, 0, {"message": message})])
            await ws.send(message)
    async with websockets.serve(echo, "127.0.0.1", int(sys.argv[1]), max_size=2**20, compression=None):
        await asyncio.Future()
asyncio.run(main())
"""
"""The bare echo server, each message stored before it is answered through the table server's own ``Store``
(``server/storage/store.py``: the same SQLite settings, group commit and checkpoints, as one action row): what
the durability promise costs by itself (``docs/architecture.md``: an action is acknowledged once stored)."""



SERVICES = ("postgres", "redis")
"""Names in :func:`measure_cpu`'s ``pids`` that are services of their own (PostgreSQL's postmaster: counted with its
backends), not servers or clients."""


async def measure_cpu(pids: dict[str, int], clock: Clock, out: dict[str, float], profiling: bool = False,
                      sample: str | None = None) -> None:
    """Fill ``out`` with each process's CPU use (cores) over the measuring window; with ``profiling``, start the
    servers' profilers (SIGUSR1, :func:`profiled`) when it opens and have them written (SIGUSR2) when it closes;
    with ``sample`` (a file name prefix), sample each server's stacks on CPU with py-spy over the window
    (``{sample}-{name}.txt``, collapsed stacks)."""
    await asyncio.sleep(max(0.0, clock.start - time.monotonic()))
    samplers = [sample_stacks(pid, f"{sample}-{name}.txt", clock.end - clock.start)
                for name, pid in pids.items() if sample and name.startswith("server")]
    if profiling:
        for name, pid in pids.items():
            if name.startswith("server"):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGUSR1)
    before = {name: cpu_seconds(pid, children=name in SERVICES) for name, pid in pids.items()}
    await asyncio.sleep(max(0.0, clock.end - time.monotonic()))
    for name, pid in pids.items():
        out[name] = (cpu_seconds(pid, children=name in SERVICES) - before[name]) / (clock.end - clock.start)
        if profiling and name.startswith("server"):
            with contextlib.suppress(ProcessLookupError):  # killed by the failover run
                os.kill(pid, signal.SIGUSR2)
    for sampler in samplers:  # each ends by itself after its duration, writing its file
        try:
            await asyncio.to_thread(sampler.wait, 30)
        except subprocess.TimeoutExpired:
            stop(sampler, 5)


def sample_stacks(pid: int, out: str, seconds: float) -> subprocess.Popen[bytes]:
    """Start py-spy sampling process ``pid``'s stacks while it holds the GIL (running Python, not waiting: 100 a
    second, ``seconds`` long) into ``out`` (collapsed stacks: one line a stack, its count last). ``SystemExit`` when
    py-spy is not installed."""
    binary = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    if not os.path.exists(binary):
        raise SystemExit("--sample needs py-spy (pip install py-spy)")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    return subprocess.Popen([binary, "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", "100",
                             "--format", "raw", "--gil", "--nonblocking", "--output", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)



async def measure_host(clock: Clock, out: list[str]) -> None:
    """Append to ``out`` the machine's line over the measuring window (:func:`machine.host_line`: soft interrupts,
    the hypervisor's steal, the ``ksoftirqd`` threads), where waits that no event loop sees show."""
    await asyncio.sleep(max(0.0, clock.start - time.monotonic()))
    before = host_ticks()
    await asyncio.sleep(max(0.0, clock.end - time.monotonic()))
    out.append(host_line(before, host_ticks(), clock.end - clock.start))


async def loop_lag(clock: Clock, out: list[float], every: float = 0.005) -> None:
    """The load generator's own event-loop lag over the measuring window: how late (ms) a timer of ``every``
    seconds fires, appended to ``out``. Latencies measured while the clients' loop lags include its lag."""
    while time.monotonic() < clock.end:
        t = time.monotonic()
        await asyncio.sleep(every)
        if clock.measuring(t):
            out.append((time.monotonic() - t - every) * 1000.0)


async def measure_server_lag(port: int, clock: Clock, out: dict[str, float]) -> None:
    """Fill ``out`` with the server's own event-loop lag over the measuring window (``p50``, ``p99``, ``max``, ms,
    and ``samples``), from its ``GET /api/loop-lag`` read when the window opens and when it closes (the server
    runs with ``CARDTABLE_LOOP_LAG_INTERVAL_MS``, :data:`BENCH_ENV`); nothing when the route is not there."""
    readings = []
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
        for at in (clock.start, clock.end):
            await asyncio.sleep(max(0.0, at - time.monotonic()))
            try:
                response = await http.get("/api/loop-lag")
            except httpx.HTTPError:
                return
            if response.status_code != 200:
                return
            readings.append(LagHistogram.from_dict(response.json()))
    window = readings[1].minus(readings[0])
    out.update(p50=window.quantile(0.5), p99=window.quantile(0.99), max=window.max_ms, samples=window.samples)


def server_lag_line(lag: dict[str, float]) -> str:
    if not lag:
        return "server's event-loop lag: not measured (no GET /api/loop-lag)"
    return (f"server's event-loop lag (a {SERVER_LAG_INTERVAL_MS:g} ms timer, {lag['samples']:.0f} samples): "
            f"p50 {lag['p50']:.2f} ms, p99 {lag['p99']:.2f} ms, max {lag['max']:.1f} ms")


async def quiet_collector(clock: Clock) -> None:
    """Keep the load generator's own garbage collections out of the measuring window: half a second before it
    opens (the clients connected), collect once, freeze what is alive (every connection's objects) and stop
    automatic collections; start them again when the window closes. The load generator is the instrument: a
    young collection over 2,000 connections' objects paused it for 20-50 ms, and every latency in flight then
    grew by as much (clustered in one 100 ms span), whichever server it measured."""
    await asyncio.sleep(max(0.0, clock.start - 0.5 - time.monotonic()))
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        await asyncio.sleep(max(0.0, clock.end - time.monotonic()))
    finally:
        gc.enable()


def lag_line(lags: list[float]) -> str:
    lags = sorted(lags) or [float("nan")]
    return (f"load generator's own loop lag: p50 {lags[len(lags) // 2]:.1f} ms, "
            f"p99 {p99(lags):.1f} ms, max {lags[-1]:.1f} ms")


async def wait_http(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient() as http:
        while time.monotonic() < deadline:
            try:
                if (await http.get(url, timeout=1)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    raise SystemExit(f"server at {url} did not start")


async def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.1)
    raise SystemExit(f"nothing listens on {port}")


class Incoming(msgspec.Struct):
    """The fields of a server message a scripted client reads (the rest, views included, are skipped unparsed)."""

    type: str
    seq: int | None = None
    legal: msgspec.Raw = msgspec.Raw(b"null")
    """Left undecoded: a seat reads it only when it acts (about one update in four)."""
    v: int | None = None
    code: str | None = None


_decode = msgspec.json.Decoder(Incoming).decode
_encode = msgspec.json.Encoder().encode
_decode_items = msgspec.json.Decoder(list[msgspec.Raw] | None).decode


@dataclass
class Stats:
    """Latencies in ms of acknowledged actions (or echoes) and counts, over the measuring window."""

    acks: list[float] = field(default_factory=list)
    rejects: list[float] = field(default_factory=list)
    errors: int = 0
    updates: int = 0
    error_codes: Counter[str] = field(default_factory=Counter)
    """The ``code`` of each ``error`` counted in :attr:`errors`."""

    def __add__(self, other: Stats) -> Stats:
        """Both sets of figures as one (direct and relayed connections, or several load generators)."""
        return Stats(acks=self.acks + other.acks, rejects=self.rejects + other.rejects,
                     errors=self.errors + other.errors, updates=self.updates + other.updates,
                     error_codes=self.error_codes + other.error_codes)


def p99(ordered: list[float]) -> float:
    """The 99th percentile of ``ordered`` (sorted, not empty): the value 99% of them do not exceed."""
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def summary(name: str, stats: Stats, seconds: float) -> dict[str, float]:
    lat = sorted(stats.acks)
    if not lat:
        print(f"{name}: no responses")
        return {"p50": float("nan"), "p99": float("nan")}
    p50 = lat[len(lat) // 2]
    slow = p99(lat)
    extra = ""
    if stats.rejects:
        extra = f", rejects {len(stats.rejects)} (p99 {p99(sorted(stats.rejects)):.1f} ms)"
    print(f"{name}: {len(lat) / seconds:.0f} /s acknowledged, latency p50 {p50:.1f} ms, p99 {slow:.1f} ms, "
          f"max {lat[-1]:.1f} ms, mean {statistics.fmean(lat):.1f} ms{extra}, errors {stats.errors}"
          f"{' ' + str(dict(stats.error_codes)) if stats.error_codes else ''}, "
          f"updates received {stats.updates / seconds:.0f} /s")
    return {"p50": p50, "p99": slow}


class Clock:
    """Shared window: only responses to messages sent in [start, end) count."""

    def __init__(self, warmup: float, duration: float) -> None:
        self.start = time.monotonic() + warmup
        self.end = self.start + duration

    @classmethod
    def between(cls, start: float, end: float) -> Clock:
        """The window from ``start`` to ``end`` (``time.monotonic()`` values: the same clock in every process)."""
        clock = cls(0.0, 0.0)
        clock.start, clock.end = start, end
        return clock

    def measuring(self, t: float) -> bool:
        return self.start <= t < self.end


class SeatListener(WSListener):
    """One scripted seat on a picows connection: says hello with ``token`` once connected, then sends, ``rate`` times a
    second (random phase, a timer on the loop: no task per seat), an action picked from the ``legal`` of its latest
    update, and times each until its ``ack`` or ``reject`` into ``stats`` (those sent in the measuring window).
    ``on_ack(message, now, opened)`` sees every ack (``opened``: when this connection opened). ``seq`` goes on from the value given (a reconnecting client).

    The load generator shares the machine with the servers, so it is kept lean: picows (Cython) parses the frames,
    msgspec reads only the fields a client uses (:class:`Incoming`), and no task waits on each connection."""

    def __init__(self, token: str, rate: float, clock: Clock, stats: Stats, rng: random.Random, seq: int = 0,
                 on_ack: Callable[[Incoming, float, float], None] | None = None) -> None:
        self.token = token
        self.period = 1.0 / rate
        self.clock = clock
        self.stats = stats
        self.rng = rng
        self.seq = seq
        self.on_ack = on_ack
        self.legal = msgspec.Raw(b"null")
        self.sent: dict[int, float] = {}
        self.transport: WSTransport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.next_at = 0.0
        self.parts: list[bytes] = []
        self.opened = 0.0

    def on_ws_connected(self, transport: WSTransport) -> None:
        self.transport = transport
        self.opened = time.monotonic()
        transport.send(WSMsgType.TEXT, _encode({"type": "hello", "token": self.token}))
        loop = asyncio.get_running_loop()
        self.next_at = loop.time() + self.rng.uniform(0, self.period)
        self.timer = loop.call_at(self.next_at, self.tick)

    def on_ws_disconnected(self, transport: WSTransport) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def on_ws_frame(self, transport: WSTransport, frame: WSFrame) -> None:
        kind = frame.msg_type
        if kind == WSMsgType.CLOSE:
            transport.send_close(frame.get_close_code())
            transport.disconnect()
            return
        if kind not in (WSMsgType.TEXT, WSMsgType.CONTINUATION):
            return
        if not frame.fin:
            self.parts.append(frame.get_payload_as_bytes())
            return
        raw = frame.get_payload_as_bytes()
        if self.parts:
            raw, self.parts = b"".join([*self.parts, raw]), []
        self.handle(_decode(raw))

    def handle(self, message: Incoming) -> None:
        kind = message.type
        now = time.monotonic()
        clock, stats = self.clock, self.stats
        if kind in ("update", "snapshot"):
            self.legal = message.legal
            if clock.measuring(now):
                stats.updates += 1
        elif kind in ("ack", "reject") and message.seq is not None:
            t0 = self.sent.pop(message.seq, None)
            if kind == "ack" and self.on_ack is not None:
                self.on_ack(message, now, self.opened)
            if t0 is not None and clock.measuring(t0):
                (stats.acks if kind == "ack" else stats.rejects).append((now - t0) * 1000.0)
        elif kind == "error" and clock.measuring(now):
            stats.errors += 1
            stats.error_codes[message.code or "?"] += 1

    def tick(self) -> None:
        self.timer = None
        transport = self.transport
        if transport is None or transport.is_disconnected or time.monotonic() >= self.clock.end:
            return
        legal = _decode_items(self.legal) or []
        if legal:
            self.seq += 1
            self.sent[self.seq] = time.monotonic()
            transport.send(WSMsgType.TEXT, _encode({"type": "action", "seq": self.seq,
                                                    "action": self.rng.choice(legal)}))
        self.next_at += self.period
        self.timer = asyncio.get_running_loop().call_at(self.next_at, self.tick)


async def drive_seat(url: str, token: str, rate: float, clock: Clock, stats: Stats, rng: random.Random,
                     seq: int = 0, on_ack: Callable[[Incoming, float, float], None] | None = None
                     ) -> tuple[int, bool]:
    """One scripted seat (:class:`SeatListener`) connected to ``url`` until the clock's end (then half a second
    for the last answers) or until the connection ends. Returns the last ``seq`` used, so that a reconnecting
    client goes on from it, and whether the server ended the connection first. Connecting may raise ``OSError``,
    ``TimeoutError`` or picows' ``WSError``."""
    transport, seat = await ws_connect(lambda: SeatListener(token, rate, clock, stats, rng, seq, on_ack), url,
                                       websocket_handshake_timeout=60, max_frame_size=2**22)
    assert isinstance(seat, SeatListener)
    ended = transport.wait_disconnected()
    try:
        await asyncio.wait_for(asyncio.shield(ended), max(0.0, clock.end - time.monotonic()) + 0.5)
        return seat.seq, True
    except TimeoutError:
        transport.send_close(WSCloseCode.OK)
        transport.disconnect()
        return seat.seq, False


async def table_client(port: int, tid: str, token: str, rate: float, clock: Clock, stats: Stats,
                       rng: random.Random) -> None:
    """A seat's client for the one-process runs; a connection the server ends before the clock does is an error
    (raised, as before: the run stops)."""
    _, ended = await drive_seat(f"ws://127.0.0.1:{port}/ws/tables/{tid}", token, rate, clock, stats, rng)
    if ended and time.monotonic() < clock.end:
        raise ConnectionError(f"table {tid}: the server closed the connection before the end of the run")


class EchoListener(WSListener):
    """A client of the bare echo server: sends ``rate`` messages a second (padded with ``size`` characters) and
    times each echo, like a seat's actions."""

    def __init__(self, rate: float, size: int, clock: Clock, stats: Stats, rng: random.Random) -> None:
        self.period = 1.0 / rate
        self.pad = "x" * size
        self.clock = clock
        self.stats = stats
        self.rng = rng
        self.seq = 0
        self.sent: dict[int, float] = {}
        self.transport: WSTransport | None = None
        self.next_at = 0.0

    def on_ws_connected(self, transport: WSTransport) -> None:
        self.transport = transport
        loop = asyncio.get_running_loop()
        self.next_at = loop.time() + self.rng.uniform(0, self.period)
        loop.call_at(self.next_at, self.tick)

    def on_ws_frame(self, transport: WSTransport, frame: WSFrame) -> None:
        if frame.msg_type != WSMsgType.TEXT:
            return
        message = _decode(frame.get_payload_as_bytes())
        t0 = self.sent.pop(message.seq or 0, None)
        now = time.monotonic()
        if t0 is not None and self.clock.measuring(t0):
            self.stats.acks.append((now - t0) * 1000.0)

    def tick(self) -> None:
        transport = self.transport
        if transport is None or transport.is_disconnected or time.monotonic() >= self.clock.end:
            return
        self.seq += 1
        self.sent[self.seq] = time.monotonic()
        transport.send(WSMsgType.TEXT, _encode({"type": "action", "seq": self.seq,
                                                "action": {"type": "move", "pad": self.pad}}))
        self.next_at += self.period
        asyncio.get_running_loop().call_at(self.next_at, self.tick)


async def echo_client(port: int, rate: float, size: int, clock: Clock, stats: Stats, rng: random.Random) -> None:
    transport, _ = await ws_connect(lambda: EchoListener(rate, size, clock, stats, rng), f"ws://127.0.0.1:{port}",
                                    websocket_handshake_timeout=60, max_frame_size=2**22)
    await asyncio.sleep(max(0.0, clock.end - time.monotonic()) + 0.5)
    transport.send_close(WSCloseCode.OK)
    transport.disconnect()


async def open_tables(base: str, count: int, first: int = 0) -> list[tuple[str, list[str]]]:
    tables: list[tuple[str, list[str]]] = []
    limits = httpx.Limits(max_connections=20)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:

        async def one(i: int) -> tuple[str, list[str]]:
            made = (await http.post("/api/tables", json={"game": "nerts", "options": {"players": 4},
                                                         "name": f"p{i}-0", "seed": i})).json()
            tid = made["table"]["id"]
            tokens = [made["token"]]
            for s in range(1, 4):
                tokens.append((await http.post(f"/api/tables/{tid}/join", json={"name": f"p{i}-{s}"})).json()["token"])
            return tid, tokens

        tables = list(await asyncio.gather(*(one(i) for i in range(first, first + count))))
        for tid, tokens in tables:
            response = await http.post(f"/api/tables/{tid}/start", json={"token": tokens[0]})
            response.raise_for_status()
    return tables


REVIEW_RECORD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "records", "anemone",
                             "4p-full-match-random-leader.ok.json")
"""The finished 4-round Enemy Anemone match stored again and again for ``--reviews`` (29 searches per seat)."""


async def store_finished(db: str, count: int) -> list[str]:
    """Store ``count`` finished copies of :data:`REVIEW_RECORD` in ``db`` (before the server starts); their ids."""
    record = records.load(REVIEW_RECORD)
    store = await Store.open(db)
    ids = [f"review{i}" for i in range(count)]
    try:
        for i, tid in enumerate(ids):
            await store.insert_table(TableRow(
                id=tid, game="anemone", options=record.options, status="finished", seed=i, grace_seconds=30.0,
                created="2026-01-01T00:00:00Z",
                seats=[SeatRow(s, "person", seat.name) for s, seat in enumerate(record.seats)]))
            for h, hand in enumerate(record.hands):
                await store.insert_hand(tid, h, hand.deal)
                await store.insert_actions(tid, h, [(j, a.seat, a.ms, a.action) for j, a in enumerate(hand.actions)])
            await store.update_status(tid, "finished", finished="2026-01-01T01:00:00Z", hands_played=4)
    finally:
        await store.close()
    return ids


async def keep_reviews(base: str, ids: list[str], running: int, clock: Clock, done: Counter[str]) -> None:
    """Keep ``running`` reviews asked for and not ready (``GET /api/tables/{id}/review``, each seat of ``ids`` in
    turn) until the clock's end; counts the ``ready`` ones in ``done``."""
    todo = [(tid, seat) for tid in ids for seat in range(4)]
    asked: list[tuple[str, int]] = []
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        while time.monotonic() < clock.end:
            while len(asked) < running and todo:
                asked.append(todo.pop(0))
            for tid, seat in list(asked):
                body = (await http.get(f"/api/tables/{tid}/review", params={"seat": seat})).json()
                if body.get("status") == "ready":
                    asked.remove((tid, seat))
                    done["ready"] += 1
            await asyncio.sleep(0.5)


async def run(args: argparse.Namespace) -> None:
    tables_n = min(args.tables, 500)
    duration = min(args.duration, 120.0)
    rng = random.Random(args.seed)
    tmp = tempfile.mkdtemp(prefix="cardtable-bench-")
    port, echo_port, durable_port = free_port(), free_port(), free_port()
    env = dict(os.environ, **BENCH_ENV)
    review_ids = await store_finished(f"sqlite+aiosqlite:///{tmp}/bench.db", args.reviews * 2) if args.reviews else []
    stages = os.path.join(args.stages, "server.stages.json") if args.stages else None
    if args.stages:
        os.makedirs(args.stages, exist_ok=True)
    program = [ACK_STAGES, stages] if stages else profiled(args.profile, "server")
    server = subprocess.Popen(
        [sys.executable, *program, "cardtable", "serve", "--port", str(port),
         "--db", f"sqlite+aiosqlite:///{tmp}/bench.db"], env=env)
    echo = subprocess.Popen([sys.executable, "-c", ECHO_SERVER, str(echo_port)])
    durable = subprocess.Popen([sys.executable, "-c", DURABLE_ECHO_SERVER, str(durable_port),
                                f"sqlite+aiosqlite:///{tmp}/echo.db"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
        await wait_http(f"http://127.0.0.1:{port}/api/games")
        await wait_port(echo_port)
        await wait_port(durable_port)
        t0 = time.monotonic()
        tables = await open_tables(f"http://127.0.0.1:{port}", tables_n)
        print(f"{tables_n} tables x 4 seats opened and started in {time.monotonic() - t0:.1f} s; "
              f"{args.rate:g} action/s/seat for {duration:g} s after {args.warmup:g} s warm-up")

        stats = Stats()
        clock = Clock(args.warmup + 2.0, duration)
        cpu: dict[str, float] = {}
        lags: list[float] = []
        server_lag: dict[str, float] = {}
        host: list[str] = []
        await asyncio.gather(
            measure_cpu({"server": server.pid, "clients": os.getpid()}, clock, cpu, bool(args.profile or stages)),
            loop_lag(clock, lags), measure_server_lag(port, clock, server_lag), quiet_collector(clock),
            measure_host(clock, host),
            *(table_client(port, tid, token, args.rate, clock, stats, random.Random(rng.random()))
              for tid, tokens in tables for token in tokens),
        )
        server_figures = summary("cardtable server", stats, duration)
        print(f"CPU over the window: server {cpu.get('server', 0):.2f} cores, clients {cpu.get('clients', 0):.2f} "
              f"cores (of {os.cpu_count()}); load average {os.getloadavg()[0]:.1f}")
        print(cpu_per_ack(cpu.get("server", 0.0), stats, duration))
        print(server_lag_line(server_lag))
        print(lag_line(lags))
        print("\n".join(host))
        if stages:
            print("\n".join(await stage_lines(stages)))
        if args.reviews:  # the same tables again, with reviews running in the bot pool at low priority
            stats, clock, done = Stats(), Clock(args.warmup, duration), Counter[str]()
            lag_reviews: dict[str, float] = {}
            cpu_reviews: dict[str, float] = {}
            await asyncio.gather(
                keep_reviews(f"http://127.0.0.1:{port}", review_ids, args.reviews, clock, done),
                measure_server_lag(port, clock, lag_reviews),
                measure_cpu({"server": server.pid}, clock, cpu_reviews),
                *(table_client(port, tid, token, args.rate, clock, stats, random.Random(rng.random()))
                  for tid, tokens in tables for token in tokens))
            with_reviews = summary(f"cardtable server, {args.reviews} reviews running", stats, duration)
            print(f"   {server_lag_line(lag_reviews)}; server CPU {cpu_reviews.get('server', 0):.2f} cores")
            print(f"   reviews ready in the window: {done['ready']}; p99 with/without reviews: "
                  f"{with_reviews['p99'] / server_figures['p99']:.2f}")

        echoes: dict[str, dict[str, float]] = {}
        for name, echo_at in (("bare echo server", echo_port), ("durable echo server (SQLite, the store's own "
                                                                "settings)", durable_port)):
            echo_stats = Stats()
            clock = Clock(args.warmup, duration)
            lags = []
            cpu = {}
            host = []
            await asyncio.gather(
                loop_lag(clock, lags), quiet_collector(clock), measure_host(clock, host),
                measure_cpu({"echo": (echo if echo_at == echo_port else durable).pid}, clock, cpu),
                *(echo_client(echo_at, args.rate, args.echo_size, clock, echo_stats, random.Random(rng.random()))
                  for _ in range(tables_n * 4)))
            echoes[name] = summary(name, echo_stats, duration)
            print(f"   its CPU {cpu.get('echo', 0):.2f} cores; {lag_line(lags)}; "
                  f"load average {os.getloadavg()[0]:.1f}")
            print("   " + "\n".join(host))
        bare, durable_p99 = (figures["p99"] for figures in echoes.values())
        lag_p99 = server_lag.get("p99", float("nan"))
        print(f"p99 ratio server/echo: {server_figures['p99'] / bare:.2f} (target <= 2); durable echo/echo: "
              f"{durable_p99 / bare:.2f}; server/durable echo: {server_figures['p99'] / durable_p99:.2f}; "
              f"server's loop lag p99 {lag_p99:.2f} ms; "
              f"target p99 < 25 ms: {'met' if server_figures['p99'] < 25 else 'NOT met'}")
    finally:
        for proc in (server, echo, durable):
            stop(proc, 10)
        shutil.rmtree(tmp, ignore_errors=True)


SERVER_LAG_INTERVAL_MS = 10.0
"""The servers' loop-lag monitor's period in the benchmark (``CARDTABLE_LOOP_LAG_INTERVAL_MS``)."""

BENCH_ENV = {
    "CARDTABLE_GRACE_SECONDS": "3600", "CARDTABLE_CREATES_PER_MINUTE": "1000000", "CARDTABLE_CREATE_BURST": "1000000",
    "CARDTABLE_MAX_SOCKETS_PER_ADDRESS": "100000", "CARDTABLE_MAX_CONNECTIONS_PER_ADDRESS": "100000",
    "CARDTABLE_MAX_CONNECTIONS_PER_ADDRESS_PER_TABLE": "100000",
    "CARDTABLE_JOINS_PER_MINUTE": "1000000", "CARDTABLE_JOIN_BURST": "1000000",
    "CARDTABLE_MAX_SEATS_PER_ADDRESS": "1000000",
    "CARDTABLE_CHOSEN_SEEDS": "1",  # each table dealt by its seed, the same every run (unrated)
    "CARDTABLE_LOOP_LAG_INTERVAL_MS": str(SERVER_LAG_INTERVAL_MS),  # GET /api/loop-lag (measure_server_lag)
}
"""Every client comes from 127.0.0.1: the per-address limits are lifted for the benchmark."""


PROFILED = """
import cProfile, os, runpy, signal, sys, time
profile, out = cProfile.Profile(time.thread_time), sys.argv[1]  # CPU time: a preempted server is not charged
def stop(*_):
    profile.disable()
    profile.dump_stats(out)
signal.signal(signal.SIGUSR1, lambda *_: profile.enable())  # sent when the measuring window opens
signal.signal(signal.SIGUSR2, stop)  # and when it closes
sys.argv = sys.argv[2:]
runpy.run_module("cardtable", run_name="__main__")
"""


ACK_STAGES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ack_stages.py")
"""The server's program with ``--stages``: ``cardtable`` with each action timed stage by stage (``ack_stages.py``)."""


async def stage_lines(path: str) -> list[str]:
    """The stage figures the server wrote at the window's close (SIGUSR2), once the file is there (at most 10 s)."""
    for _ in range(100):
        if os.path.exists(path):
            await asyncio.sleep(0.2)  # written in one go, but let it finish
            return summary_of_stages(path)
        await asyncio.sleep(0.1)
    return [f"ack stages: {path} was not written"]


def profiled(folder: str | None, name: str) -> list[str]:
    """The interpreter arguments that run a server under cProfile, its profile written to ``folder/name.prof`` when
    :func:`measure_cpu` sends it SIGUSR2 (the measuring window's end), of what it ran from SIGUSR1 on (the window's
    start); ``-m`` alone without ``folder``. Use them in place of ``-m``."""
    if not folder:
        return ["-m"]
    os.makedirs(folder, exist_ok=True)
    return ["-c", PROFILED, os.path.join(folder, f"{name}.prof")]


def cpu_per_ack(server_cores: float, stats: Stats, seconds: float, services: float | None = None) -> str:
    """The main figure on a shared machine: the servers' CPU milliseconds per answered action (with the updates
    each action sends), from their CPU use in cores over the window and the acks and rejects counted in it; with
    ``services`` (the cores PostgreSQL and Redis used), also the whole service's (servers, database and Redis)."""
    answered = len(stats.acks) + len(stats.rejects)
    if not answered:
        return "server CPU per answered action: no answers"
    per = seconds * 1000.0 / answered
    extra = "" if services is None else f"; with PostgreSQL and Redis {(server_cores + services) * per:.3f} ms"
    return (f"server CPU per answered action: {server_cores * per:.3f} ms{extra} "
            f"({answered / seconds:.0f} acks+rejects/s, {stats.updates / answered:.1f} updates received each)")


async def count_commits(db: str, clock: Clock, out: dict[str, float]) -> None:
    """PostgreSQL: put in ``out["commits"]`` the transactions committed per second in ``db`` over the window (its
    ``pg_stat_database.xact_commit``, which PostgreSQL updates about once a second: close enough over a window)."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(db)
    query = text("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
    try:
        counts = []
        for at in (clock.start, clock.end):
            await asyncio.sleep(max(0.0, at - time.monotonic()))
            async with engine.connect() as conn:
                counts.append(int((await conn.execute(query)).scalar_one()))
        out["commits"] = (counts[1] - counts[0]) / (clock.end - clock.start)
    finally:
        await engine.dispose()


async def count_redis(url: str, clock: Clock, out: dict[str, float]) -> None:
    """Redis: put in ``out`` the commands per second over the window, in all (``"commands"``) and of each kind
    (``INFO commandstats``), e.g. ``"publish"``: how many pub/sub messages carried the relayed ones."""
    from redis.asyncio import Redis

    client = Redis.from_url(url)
    try:
        counts = []
        for at in (clock.start, clock.end):
            await asyncio.sleep(max(0.0, at - time.monotonic()))
            stats = await client.info("commandstats")
            counts.append({name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()})
        seconds = clock.end - clock.start
        for name, calls in counts[1].items():
            out[name] = (calls - counts[0].get(name, 0)) / seconds
        out["commands"] = sum(calls - counts[0].get(name, 0) for name, calls in counts[1].items()) / seconds
    finally:
        await client.aclose()


async def service_pids(db: str, redis: str | None) -> dict[str, int]:
    """The processes of the PostgreSQL (its postmaster) and Redis at ``db`` and ``redis`` when they run on this
    machine (their CPU use is measured too); none for SQLite or a service elsewhere."""
    from redis.asyncio import Redis
    from sqlalchemy import make_url, text
    from sqlalchemy.ext.asyncio import create_async_engine

    pids: dict[str, int] = {}
    local = ("127.0.0.1", "localhost", "::1", None)
    if db.startswith("postgresql") and make_url(db).host in local:
        engine = create_async_engine(db)
        async with engine.connect() as conn:  # the parent of this backend, read while the backend runs
            postmaster = parent_pid(int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()))
        await engine.dispose()
        if postmaster is not None:
            pids["postgres"] = postmaster
    if redis and urlsplit(redis).hostname in local:
        client = Redis.from_url(redis)
        pids["redis"] = int((await client.info("server"))["process_id"])
        await client.aclose()
    return pids


def start_server(port: int, db: str, redis: str | None, profile: str | None = None,
                 name: str = "server", logs: str | None = None) -> subprocess.Popen[bytes]:
    """Start one ``cardtable serve``; its output goes to ``logs/{name}.log`` with ``logs``, else nowhere."""
    args = [sys.executable, *profiled(profile, name), "cardtable", "serve", "--port", str(port), "--db", db]
    if redis:
        args += ["--redis", redis]
    env = dict(os.environ, **BENCH_ENV)
    if not logs:
        return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.makedirs(logs, exist_ok=True)
    with open(os.path.join(logs, f"{name}.log"), "wb") as out:  # the child keeps its own copy
        return subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)


async def start_servers(servers: list[subprocess.Popen[bytes]], ports: list[int], db: str, redis: str | None,
                        tag: str, profile: str | None = None, logs: str | None = None) -> None:
    """Start one ``cardtable serve`` per port (named ``{tag}-server{n}``), each appended to ``servers`` as soon as it
    starts (the caller stops them, whatever happens here), and wait until each answers: the first alone, since it
    applies the migrations."""
    for i, port in enumerate(ports):
        servers.append(start_server(port, db, redis, profile, f"{tag}-server{i + 1}", logs))
        if i == 0:
            await wait_http(f"http://127.0.0.1:{port}/api/games", 120)
    for port in ports[1:]:
        await wait_http(f"http://127.0.0.1:{port}/api/games", 120)


async def open_round_robin(ports: list[int], count: int) -> list[list[tuple[str, list[str]]]]:
    """Open ``count`` four-seat Nerts tables in even shares over the processes at ``ports`` (each process makes its
    share, which it then owns); per port, its tables as ``(id, the four seats' tokens)``."""
    share = -(-count // len(ports))
    return list(await asyncio.gather(*(open_tables(f"http://127.0.0.1:{port}", min(share, count - i * share),
                                                   first=i * share) for i, port in enumerate(ports))))


async def empty_postgres(url: str) -> None:
    """Drop every cardtable table of the database at ``url`` (a fresh start for each configuration)."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))
    await engine.dispose()


async def flush_redis(url: str) -> None:
    from redis.asyncio import Redis

    redis = Redis.from_url(url)
    await redis.flushdb()
    await redis.aclose()


@dataclass
class Ack:
    """Per table of the failover run: the highest version acknowledged, and when it last acknowledged."""

    version: int = 0
    at: float = 0.0
    after_kill: float | None = None
    """When it first acknowledged after the SIGKILL (failover run)."""


async def cluster_client(ports: list[int], start: int, tid: str, token: str, rate: float, clock: Clock,
                         direct: Stats, relayed: Stats, owner_port: dict[str, int], acked: dict[str, Ack],
                         rng: random.Random, killed: dict[str, Any]) -> None:
    """A seat's client for the several-process runs: connects to ``ports[start]`` (round robin), counts its
    latencies as relayed or direct (the table's owner is the process that created it), and, when its process
    dies, reconnects to the next one up (as the web client does), recording each table's acknowledged versions."""
    index = start
    seq = 0
    while time.monotonic() < clock.end:
        port = ports[index % len(ports)]
        stats = direct if owner_port.get(tid) == port else relayed

        def on_ack(message: Incoming, now: float, opened: float) -> None:
            # acks on a connection opened after the kill come from the new owner
            mark = acked.setdefault(tid, Ack())
            mark.version, mark.at = max(mark.version, message.v or 0), now
            if mark.after_kill is None and "at" in killed and opened > killed["at"]:
                mark.after_kill = now

        try:
            seq, _ = await drive_seat(f"ws://127.0.0.1:{port}/ws/tables/{tid}", token, rate, clock, stats, rng, seq,
                                      on_ack)
            if time.monotonic() >= clock.end:
                return
        except (OSError, WSError, TimeoutError):
            pass
        index += 1  # that process is gone or closed us: the next one
        await asyncio.sleep(0.2)


async def stored_versions(url: str) -> dict[str, int]:
    """Actions stored per table (= the table's version)."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT table_id, count(*) FROM actions GROUP BY table_id"))).all()
    await engine.dispose()
    return {str(t): int(n) for t, n in rows}


async def run_config(name: str, args: argparse.Namespace, db: str, redis: str | None, processes: int,
                     failover: bool = False) -> dict[str, float]:
    """One configuration: ``processes`` servers on ``db`` (and ``redis``), tables and clients round robin."""
    tables_n = min(args.tables, 500)
    duration = min(args.duration, 120.0)
    if failover:  # the kill comes a third in; the lease (5 s) and a sweep must fit in the rest
        duration = max(duration, 30.0)
    rng = random.Random(args.seed)
    ports = [free_port() for _ in range(processes)]
    tag = "failover" if failover else "sqlite" if db.startswith("sqlite") else "pg"
    servers: list[subprocess.Popen[bytes]] = []
    try:
        await start_servers(servers, ports, db, redis, f"{tag}-{processes}", args.profile, args.logs)
        t0 = time.monotonic()
        batches = await open_round_robin(ports, tables_n)
        owner_port = {tid: port for port, batch in zip(ports, batches, strict=True) for tid, _ in batch}
        tables = [table for batch in batches for table in batch]
        print(f"\n== {name}: {len(tables)} tables x 4 seats opened and started in {time.monotonic() - t0:.1f} s; "
              f"{args.rate:g} action/s/seat for {duration:g} s")
        direct, relayed = Stats(), Stats()
        acked: dict[str, Ack] = {}
        clock = Clock(args.warmup + 2.0, duration)
        cpu: dict[str, float] = {}
        pids = ({f"server{i + 1}": server.pid for i, server in enumerate(servers)} | {"clients": os.getpid()}
                | await service_pids(db, redis))
        k = 0
        clients = []
        killed: dict[str, Any] = {}
        for tid, tokens in tables:
            for token in tokens:
                start = ports.index(owner_port[tid]) if args.direct else k  # --direct: no connection relayed
                clients.append(cluster_client(ports, start, tid, token, args.rate, clock, direct, relayed,
                                              owner_port, acked, random.Random(rng.random()), killed))
                k += 1

        async def kill_one() -> None:
            await asyncio.sleep(max(0.0, clock.start + duration / 3 - time.monotonic()))
            victim = servers[-1]
            killed["at"] = time.monotonic()
            killed["wall"] = time.time()  # to read the servers' logs (--logs) against
            killed["before"] = {t: a.version for t, a in acked.items() if owner_port[t] == ports[-1]}
            victim.kill()

        extra = [kill_one()] if failover else []
        sample = os.path.join(args.sample, f"{tag}-{processes}") if args.sample else None
        commits: dict[str, float] = {}
        if db.startswith("postgresql"):
            extra.append(count_commits(db, clock, commits))
        redis_calls: dict[str, float] = {}
        if redis:
            extra.append(count_redis(redis, clock, redis_calls))
        lags: list[float] = []
        await asyncio.gather(measure_cpu(pids, clock, cpu, bool(args.profile), sample), loop_lag(clock, lags),
                             quiet_collector(clock), *clients, *extra)
        both = direct + relayed
        figures = summary(name, both, duration)
        print("CPU over the window: " + ", ".join(f"{n} {c:.2f} cores" for n, c in cpu.items())
              + f" (of {os.cpu_count()}); load average {os.getloadavg()[0]:.1f}")
        services = sum(c for n, c in cpu.items() if n in SERVICES) if any(n in cpu for n in SERVICES) else None
        print(cpu_per_ack(sum(c for n, c in cpu.items() if n.startswith("server")), both, duration, services))
        print(lag_line(lags))
        if "commits" in commits:
            answered = (len(both.acks) + len(both.rejects)) / duration
            print(f"PostgreSQL: {commits['commits']:.0f} transactions/s committed "
                  f"({answered / max(commits['commits'], 1e-9):.1f} answered actions each)")
        if redis_calls:
            top = sorted(((n, c) for n, c in redis_calls.items() if n != "commands"), key=lambda x: -x[1])[:5]
            print(f"Redis: {redis_calls['commands']:.0f} commands/s (" + ", ".join(f"{n} {c:.0f}" for n, c in top)
                  + ")")
        if processes > 1 and direct.acks and relayed.acks:
            d = summary("   direct connections", direct, duration)
            r = summary("   relayed connections", relayed, duration)
            print(f"   relayed/direct p99 ratio: {r['p99'] / d['p99']:.2f}")
        if failover:
            victims = [t for t, port in owner_port.items() if port == ports[-1]]
            after = [mark.after_kill - killed["at"] for t in victims
                     if (mark := acked.get(t)) is not None and mark.after_kill is not None]
            stored = await stored_versions(db)
            lost = sum(max(0, acked[t].version - stored.get(t, 0)) for t in acked)
            back = len(after)
            wall = time.strftime("%H:%M:%S", time.localtime(killed["wall"])) + f".{int(killed['wall'] % 1 * 1000):03d}"
            print(f"failover: SIGKILL of 1 of {processes} processes ({len(victims)} tables) at {wall}; "
                  f"{back}/{len(victims)} of its tables acknowledged again, every one within {max(after or [0]):.1f} s "
                  f"(median {statistics.median(after) if after else float('nan'):.1f} s); "
                  f"acknowledged actions lost: {lost}")
            if len(after) >= 10:
                tenths = statistics.quantiles(after, n=10)
                print("   seconds until each table acknowledged again, by tenths: "
                      + " ".join(f"{q:.1f}" for q in tenths))
        return figures
    finally:
        for server in servers:
            stop(server, 20)


async def run_processes(args: argparse.Namespace, db: str, redis: str) -> None:
    """The three configurations (and the failover run) on PostgreSQL ``db`` and Redis ``redis``; with ``--only``,
    just that one."""
    tmp = tempfile.mkdtemp(prefix="cardtable-bench-")
    try:
        print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; PostgreSQL at {db}, Redis at {redis}")
        print(f"machine speed before: a fixed pure-Python loop takes {cpu_speed_ms():.0f} ms of CPU (about 200 ms at this "
              "machine's fastest; slower means a busy host, and every latency here grows with it)")
        results: dict[str, dict[str, float]] = {}
        if args.only in (None, "sqlite"):
            results["sqlite"] = await run_config("1 process, SQLite", args, f"sqlite+aiosqlite:///{tmp}/bench.db",
                                                 None, 1)
        if args.only in (None, "pg"):
            await empty_postgres(db)
            results["pg"] = await run_config("1 process, PostgreSQL", args, db, None, 1)
        if args.only in (None, "cluster"):
            await empty_postgres(db)
            await flush_redis(redis)
            results["cluster"] = await run_config(f"{args.processes} processes, PostgreSQL + Redis", args, db, redis,
                                                  args.processes)
        if "cluster" in results:
            cluster = results["cluster"]["p99"]
            others = "".join(f"{label} {results[key]['p99']:.1f} ms, " for key, label in
                             (("sqlite", "one process on SQLite"), ("pg", "one process on PostgreSQL"))
                             if key in results)
            print(f"\np99: {others}{args.processes} processes {cluster:.1f} ms; target p99 < 40 ms: "
                  f"{'met' if cluster < 40 else 'NOT met'}; machine speed after: {cpu_speed_ms():.0f} ms")
        if args.failover:
            await empty_postgres(db)
            await flush_redis(redis)
            await run_config(f"{args.processes} processes, failover", args, db, redis, args.processes,
                             failover=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=200, help="Nerts tables of 4 clients (at most 500)")
    parser.add_argument("--rate", type=float, default=1.0, help="actions per second per seat")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds measured (at most 120)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before measuring")
    parser.add_argument("--echo-size", type=int, default=60, help="padding of each echo message, in characters")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reviews", type=int, default=0,
                        help="one process: measure again while this many reviews of finished 4-round Enemy Anemone "
                             "matches are kept running (GET /api/tables/{id}/review), and print the p99 ratio")
    parser.add_argument("--processes", type=int, default=1,
                        help="2 or more: compare SQLite, PostgreSQL and this many processes on PostgreSQL + Redis")
    parser.add_argument("--db", default=None, help="PostgreSQL URL for --processes (emptied; default: a private one)")
    parser.add_argument("--redis", default=None, help="Redis URL for --processes (flushed; default: a private one)")
    parser.add_argument("--unix", action="store_true",
                        help="with --processes and no --db/--redis: reach the private PostgreSQL and Redis through "
                             "their Unix sockets (as on one machine), not TCP on loopback")
    parser.add_argument("--failover", action="store_true", help="with --processes: also SIGKILL one mid-run")
    parser.add_argument("--profile", default=None, metavar="FOLDER",
                        help="run each server under cProfile, writing FOLDER/NAME.prof (read with pstats)")
    parser.add_argument("--stages", default=None, metavar="FOLDER",
                        help="one process: time each acknowledged action stage by stage inside the server "
                             "(ack_stages.py), written to FOLDER/server.stages.json and summed up after the run")
    parser.add_argument("--logs", default=None, metavar="FOLDER",
                        help="with --processes: write each server's output to FOLDER/NAME.log")
    parser.add_argument("--sample", default=None, metavar="FOLDER",
                        help="with --processes: sample each server's stacks on CPU with py-spy over the window, "
                             "writing FOLDER/NAME-serverN.txt (collapsed stacks)")
    parser.add_argument("--direct", action="store_true",
                        help="with --processes: connect each client to the process owning its table (none relayed): "
                             "what several processes cost without the relay")
    parser.add_argument("--only", choices=["sqlite", "pg", "cluster"], default=None,
                        help="with --processes: run only this configuration")
    args = parser.parse_args()
    if args.stages and (args.processes > 1 or args.profile):
        raise SystemExit("--stages: one process, without --profile")
    if args.processes > 1:
        import contextlib

        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
        from services import new_database, postgres_cluster, redis_server

        with contextlib.ExitStack() as stack:
            db = args.db or new_database(stack.enter_context(postgres_cluster()), unix=args.unix)
            redis = args.redis or stack.enter_context(redis_server()).url(unix=args.unix)
            run_loop(run_processes(args, db, redis))
        return
    run_loop(run(args))


def run_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on uvloop when installed (as the servers do: uvicorn's default), else on asyncio's loop, with
    the garbage collector set as the servers set it (``cardtable.server.edge.app.serve``): the start-up objects frozen out
    of every collection and rare full collections, so the load generator's own pauses stay out of the latencies."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


if __name__ == "__main__":
    main()
