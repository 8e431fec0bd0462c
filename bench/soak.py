"""Soak of the table server: many Nerts tables played for minutes while spectators come and go; memory must stay
flat, the ack latency steady and nothing fail.

Starts ``python -m cardtable serve`` on a free port with a temporary SQLite database, opens ``--tables`` Nerts
tables of ``--seats`` scripted clients each (every client sends ``--rate`` actions a second, picked from its latest
``legal``: mostly flips, so hands last), and keeps ``--spectators`` spectator connections churning: each watches a
random table for 0.5 to 3 s, then leaves (one in five drops its TCP connection without a close frame). A table whose
match ends is replaced by a new one. Every ``--report`` seconds prints the window's acks/s, ack latency p50/p99/max,
rejects, errors and the server's RSS; at the end, RSS after the warm-up and at the end, and their ratio (target:
within 10 %), p99 over time, and the error count (target 0). The warm-up starts once every table is open. Exits 1 (after printing why) on any error, a traceback
in the server's log, a table that did not open, or RSS growth beyond ``--max-rss-growth`` (10 %) after the
warm-up; CI runs it for a minute (``.ci/run``).

    .venv/bin/python bench/soak.py --minutes 30          # the issue's soak
    .venv/bin/python bench/soak.py --minutes 1 --tables 60 --report 10   # what CI runs

The baseline is the run's own state after warm-up (RSS, first window's p99). Loopback only; at most 500 tables.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec
import websockets

from machine import free_port, rss_mb, stop


class Incoming(msgspec.Struct):
    """The fields of a server message a scripted client reads (views are skipped unparsed)."""

    type: str
    seq: int | None = None
    legal: list[dict[str, Any]] | None = None
    table: dict[str, Any] | None = None


_decode = msgspec.json.Decoder(Incoming).decode




@dataclass
class Window:
    """What happened since the last report."""

    acks: list[float] = field(default_factory=list)
    rejects: int = 0
    errors: int = 0
    spectators: int = 0


@dataclass
class Soak:
    port: int
    rate: float
    seats: int
    end: float
    window: Window = field(default_factory=Window)
    errors: int = 0
    details: list[str] = field(default_factory=list)
    live: list[str] = field(default_factory=list)
    opened: int = 0

    def error(self, what: str) -> None:
        self.window.errors += 1
        self.errors += 1
        if len(self.details) < 10:
            self.details.append(what)


def choose(legal: list[dict[str, Any]], rng: random.Random) -> dict[str, Any] | None:
    if not legal:
        return None
    flips = [a for a in legal if a["type"] == "flip"]
    if flips and rng.random() < 0.8:
        return flips[0]
    moves = [a for a in legal if a["type"] in ("move", "under", "flip", "cycle", "stuck")]
    return rng.choice(moves or legal)


async def seat_client(soak: Soak, tid: str, token: str, rng: random.Random) -> None:
    """One seated person until the match ends or the soak does."""
    url = f"ws://127.0.0.1:{soak.port}/ws/tables/{tid}"
    async with websockets.connect(url, max_size=2**22, compression=None, open_timeout=60) as ws:
        await ws.send(json.dumps({"type": "hello", "token": token}))
        legal: list[dict[str, Any]] = []
        sent: dict[int, float] = {}
        over = asyncio.Event()

        async def reader() -> None:
            try:
                await read()
            except websockets.ConnectionClosed:
                if time.monotonic() < soak.end:
                    soak.error("a seat's connection closed with an error")
                over.set()

        async def read() -> None:
            nonlocal legal
            async for raw in ws:
                message = _decode(raw)
                if message.type in ("update", "snapshot"):
                    legal = message.legal or []
                elif message.type in ("ack", "reject") and message.seq is not None:
                    t0 = sent.pop(message.seq, None)
                    if t0 is not None and message.type == "ack":
                        soak.window.acks.append((time.monotonic() - t0) * 1000.0)
                    elif t0 is not None:
                        soak.window.rejects += 1
                elif message.type == "error":
                    soak.error(f"error to a seat: {raw[:200]!r}")
                elif message.type == "table" and message.table and message.table["status"] != "playing":
                    over.set()
                    return
            if time.monotonic() < soak.end:
                soak.error("a seat's connection closed")
            over.set()

        task = asyncio.create_task(reader())
        await asyncio.sleep(rng.uniform(0, 1.0 / soak.rate))
        seq = 0
        next_at = time.monotonic()
        while time.monotonic() < soak.end and not over.is_set():
            next_at += 1.0 / soak.rate
            action = choose(legal, rng)
            if action is not None and not sent:
                seq += 1
                sent[seq] = time.monotonic()
                await ws.send(json.dumps({"type": "action", "seq": seq, "action": action}))
            elif sent and time.monotonic() - min(sent.values()) > 10:
                soak.error("an action got no answer within 10 s")
                sent.clear()
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        task.cancel()


async def table_slot(soak: Soak, http: httpx.AsyncClient, index: int, rng: random.Random) -> None:
    """Keep one table in play: open it, seat the clients, start; when its match ends, open another."""
    generation = 0
    while time.monotonic() < soak.end:
        made = (await http.post("/api/tables", json={"game": "nerts", "options": {"players": soak.seats},
                                                     "name": f"p{index}", "seed": index * 1000 + generation})).json()
        tid = made["table"]["id"]
        tokens = [made["token"]]
        for s in range(1, soak.seats):
            tokens.append((await http.post(f"/api/tables/{tid}/join", json={"name": f"p{index}-{s}"})).json()["token"])
        (await http.post(f"/api/tables/{tid}/start", json={"token": tokens[0]})).raise_for_status()
        soak.live.append(tid)
        soak.opened += generation == 0
        try:
            await asyncio.gather(*(seat_client(soak, tid, token, random.Random(rng.random())) for token in tokens))
        finally:
            soak.live.remove(tid)
        generation += 1


async def spectator(soak: Soak, rng: random.Random) -> None:
    """Come and go: watch a random table for a moment, leave (sometimes by dropping the connection)."""
    while time.monotonic() < soak.end:
        if not soak.live:
            await asyncio.sleep(0.5)
            continue
        tid = rng.choice(soak.live)
        try:
            ws = await websockets.connect(f"ws://127.0.0.1:{soak.port}/ws/tables/{tid}", max_size=2**22,
                                          compression=None, open_timeout=60)
        except Exception as error:
            soak.error(f"a spectator could not connect: {error!r}")
            continue
        try:
            await ws.send(json.dumps({"type": "hello", "token": None}))
            stay = time.monotonic() + rng.uniform(0.5, 3.0)
            while time.monotonic() < stay:
                try:
                    raw = await asyncio.wait_for(ws.recv(), max(0.01, stay - time.monotonic()))
                except TimeoutError:
                    break
                message = _decode(raw)
                if message.type == "error":
                    soak.error(f"error to a spectator: {raw[:200]!r}")
            soak.window.spectators += 1
        except websockets.ConnectionClosed:
            pass  # the table ended: the server closed the connection
        finally:
            if rng.random() < 0.2:
                ws.transport.abort()
            else:
                await ws.close()


def p(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def run(args: argparse.Namespace) -> int:
    tables_n = min(args.tables, 500)
    seconds = args.minutes * 60.0
    warmup = max(10.0, min(120.0, seconds * 0.2))
    tmp = tempfile.mkdtemp(prefix="cardtable-soak-")
    failures: list[str] = []
    port = free_port()
    env = dict(os.environ, CARDTABLE_GRACE_SECONDS="3600", CARDTABLE_MAX_SOCKETS_PER_ADDRESS="100000",
               CARDTABLE_CREATES_PER_MINUTE="100000", CARDTABLE_CREATE_BURST="100000",
               CARDTABLE_MAX_CONNECTIONS_PER_ADDRESS_PER_TABLE="1000", CARDTABLE_MAX_CONNECTIONS_PER_ADDRESS="100000",
               CARDTABLE_JOINS_PER_MINUTE="100000", CARDTABLE_JOIN_BURST="100000",
               CARDTABLE_MAX_SEATS_PER_ADDRESS="100000", CARDTABLE_CHOSEN_SEEDS="1")  # tables dealt by their seeds (unrated)
    server = subprocess.Popen([sys.executable, "-m", "cardtable", "serve", "--port", str(port),
                               "--db", f"sqlite+aiosqlite:///{tmp}/soak.db"], env=env, stderr=subprocess.PIPE)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60,
                                     limits=httpx.Limits(max_connections=20)) as http:
            deadline = time.monotonic() + 90
            while True:
                try:
                    if (await http.get("/api/games")).status_code == 200:
                        break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.1)
            soak = Soak(port=port, rate=args.rate, seats=args.seats, end=time.monotonic() + 3600 + warmup + seconds)
            rng = random.Random(args.seed)
            print(f"soak: {tables_n} Nerts tables x {args.seats} seats at {args.rate:g} action/s/seat, "
                  f"{args.spectators} spectators coming and going; {warmup:.0f} s warm-up, then "
                  f"{args.minutes:g} min; server pid {server.pid}, RSS {rss_mb(server.pid):.1f} MB")
            tasks = [asyncio.create_task(table_slot(soak, http, i, random.Random(rng.random())))
                     for i in range(tables_n)]
            opening = time.monotonic()
            while soak.opened < tables_n and time.monotonic() < opening + 600:
                await asyncio.sleep(0.2)
            print(f"{soak.opened} tables opened and started in {time.monotonic() - opening:.1f} s", flush=True)
            start = time.monotonic()
            soak.end = start + warmup + seconds
            soak.window = Window()
            tasks += [asyncio.create_task(spectator(soak, random.Random(rng.random())))
                      for _ in range(args.spectators)]
            rss_after_warmup: float | None = None
            p99s: list[float] = []
            last = time.monotonic()
            while time.monotonic() < soak.end:
                await asyncio.sleep(min(args.report, max(0.1, soak.end - time.monotonic())))
                window, soak.window = soak.window, Window()
                now = time.monotonic()
                rss = rss_mb(server.pid)
                phase = "warm-up" if now - start < warmup else "soak"
                if phase == "soak" and rss_after_warmup is None:
                    rss_after_warmup = rss
                if phase == "soak":
                    p99s.append(p(window.acks, 0.99))
                print(f"[{now - start:6.0f} s {phase:7}] acks {len(window.acks) / (now - last):6.0f}/s  "
                      f"p50 {p(window.acks, 0.5):6.1f} ms  p99 {p(window.acks, 0.99):6.1f} ms  "
                      f"max {max(window.acks, default=float('nan')):7.1f} ms  rejects {window.rejects:4}  "
                      f"errors {window.errors}  spectator visits {window.spectators:4}  RSS {rss:6.1f} MB  "
                      f"tables {len(soak.live)}", flush=True)
                last = now
            for task in tasks:
                task.cancel()
            for result in await asyncio.gather(*tasks, return_exceptions=True):
                if isinstance(result, Exception):  # a table or spectator loop that died (not cancelled)
                    soak.error(f"a client loop failed: {result!r}")
            rss_end = rss_mb(server.pid)
            ratio = rss_end / (rss_after_warmup or rss_end)
            print(f"RSS after warm-up {rss_after_warmup or float('nan'):.1f} MB, at the end {rss_end:.1f} MB, "
                  f"ratio {ratio:.3f} (target <= {1 + args.max_rss_growth:.2f})")
            print("p99 ack over time (ms): " + ", ".join(f"{v:.1f}" for v in p99s))
            print(f"errors: {soak.errors}" + "".join(f"\n  {d}" for d in soak.details))
            if rss_after_warmup is None:
                failures.append("no report after the warm-up (RSS not measured)")
            elif ratio > 1 + args.max_rss_growth:
                failures.append(f"RSS grew {100 * (ratio - 1):.1f}% after the warm-up")
            if soak.errors:
                failures.append(f"{soak.errors} errors")
            if soak.opened < tables_n:
                failures.append(f"only {soak.opened} of {tables_n} tables opened")
    finally:
        log = stop(server)
        tracebacks = log.count("Traceback")
        print(f"server log: {tracebacks} tracebacks")
        if tracebacks:
            print(log[-3000:])
            failures.append(f"{tracebacks} tracebacks in the server log")
    print("soak: FAILED: " + "; ".join(failures) if failures else "soak: passed")
    return 1 if failures else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0, help="minutes measured after the warm-up")
    parser.add_argument("--tables", type=int, default=200, help="Nerts tables kept in play (at most 500)")
    parser.add_argument("--seats", type=int, default=2, help="seats (scripted persons) per table")
    parser.add_argument("--rate", type=float, default=1.0, help="actions per second per seat")
    parser.add_argument("--spectators", type=int, default=40, help="spectator connections coming and going")
    parser.add_argument("--report", type=float, default=30.0, help="seconds between reports")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-rss-growth", type=float, default=0.10,
                        help="RSS growth after the warm-up beyond which the soak fails (0.10: 10%%)")
    args = parser.parse_args()
    try:  # the server runs on uvloop (uvicorn's default when installed); so do the clients
        import uvloop
    except ImportError:
        sys.exit(asyncio.run(run(args)))
    else:
        sys.exit(uvloop.run(run(args)))


if __name__ == "__main__":
    main()
