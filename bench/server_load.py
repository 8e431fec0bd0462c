"""Load on the table server: N Nerts tables of 4 scripted WebSocket clients each, on loopback.

Starts ``python -m cardtable serve`` on a free port with a temporary SQLite database, opens ``--tables``
four-seat Nerts tables, and connects four clients to each. Every client sends, ``--rate`` times a second (random
phase), an action picked at random from the ``legal`` of its latest update, and times each until its ``ack`` (or
``reject``). In the same run, the same clients measure a bare WebSocket echo server (the ``websockets`` library,
another process, same rate and message size) as the baseline. Prints actions/s, ack latency p50/p99 and the ratio
of the server's p99 to the echo's p99.

    .venv/bin/python bench/server_load.py --tables 200 --rate 1 --duration 20

Bounded: at most 500 tables and 120 s of measuring; loopback only. Target: 200 tables x 4 seats at 1 action/s/seat,
p99 ack < 25 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec
import websockets

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


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` in seconds (Linux ``/proc``; 0.0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


async def measure_cpu(pids: dict[str, int], clock: Clock, out: dict[str, float]) -> None:
    """Fill ``out`` with each process's CPU use (cores) over the measuring window."""
    await asyncio.sleep(max(0.0, clock.start - time.monotonic()))
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    await asyncio.sleep(max(0.0, clock.end - time.monotonic()))
    for name, pid in pids.items():
        out[name] = (cpu_seconds(pid) - before[name]) / (clock.end - clock.start)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


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
    legal: list[dict[str, Any]] | None = None


_decode = msgspec.json.Decoder(Incoming).decode


@dataclass
class Stats:
    """Latencies in ms of acknowledged actions (or echoes) and counts, over the measuring window."""

    acks: list[float] = field(default_factory=list)
    rejects: list[float] = field(default_factory=list)
    errors: int = 0
    updates: int = 0


def summary(name: str, stats: Stats, seconds: float) -> dict[str, float]:
    lat = sorted(stats.acks)
    if not lat:
        print(f"{name}: no responses")
        return {"p50": float("nan"), "p99": float("nan")}
    p50 = lat[len(lat) // 2]
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    extra = ""
    if stats.rejects:
        rej = sorted(stats.rejects)
        extra = f", rejects {len(rej)} (p99 {rej[min(len(rej) - 1, int(len(rej) * 0.99))]:.1f} ms)"
    print(f"{name}: {len(lat) / seconds:.0f} /s acknowledged, latency p50 {p50:.1f} ms, p99 {p99:.1f} ms, "
          f"max {lat[-1]:.1f} ms, mean {statistics.fmean(lat):.1f} ms{extra}, errors {stats.errors}, "
          f"updates received {stats.updates / seconds:.0f} /s")
    return {"p50": p50, "p99": p99}


class Clock:
    """Shared window: only responses to messages sent in [start, end) count."""

    def __init__(self, warmup: float, duration: float) -> None:
        self.start = time.monotonic() + warmup
        self.end = self.start + duration

    def measuring(self, t: float) -> bool:
        return self.start <= t < self.end


async def table_client(port: int, tid: str, token: str, rate: float, clock: Clock, stats: Stats,
                       rng: random.Random) -> None:
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws/tables/{tid}", max_size=2**22,
                                  compression=None, open_timeout=60) as ws:
        await ws.send(json.dumps({"type": "hello", "token": token}))
        legal: list[dict[str, Any]] = []
        sent: dict[int, float] = {}
        done = asyncio.Event()

        async def reader() -> None:
            nonlocal legal
            async for raw in ws:
                message = _decode(raw)
                kind = message.type
                now = time.monotonic()
                if kind in ("update", "snapshot"):
                    legal = message.legal or []
                    if clock.measuring(now):
                        stats.updates += 1
                elif kind in ("ack", "reject") and message.seq is not None:
                    t0 = sent.pop(message.seq, None)
                    if t0 is not None and clock.measuring(t0):
                        (stats.acks if kind == "ack" else stats.rejects).append((now - t0) * 1000.0)
                elif kind == "error" and clock.measuring(now):
                    stats.errors += 1
            done.set()

        task = asyncio.create_task(reader())
        await asyncio.sleep(rng.uniform(0, 1.0 / rate))
        seq = 0
        next_at = time.monotonic()
        while time.monotonic() < clock.end:
            next_at += 1.0 / rate
            if legal:
                seq += 1
                sent[seq] = time.monotonic()
                await ws.send(json.dumps({"type": "action", "seq": seq, "action": rng.choice(legal)}))
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        await asyncio.sleep(0.5)
        task.cancel()


async def echo_client(port: int, rate: float, size: int, clock: Clock, stats: Stats, rng: random.Random) -> None:
    async with websockets.connect(f"ws://127.0.0.1:{port}", max_size=2**22, compression=None,
                                  open_timeout=60) as ws:
        sent: dict[int, float] = {}
        pad = "x" * size

        async def reader() -> None:
            async for raw in ws:
                message = _decode(raw)
                t0 = sent.pop(message.seq or 0, None)
                now = time.monotonic()
                if t0 is not None and clock.measuring(t0):
                    stats.acks.append((now - t0) * 1000.0)

        task = asyncio.create_task(reader())
        await asyncio.sleep(rng.uniform(0, 1.0 / rate))
        seq = 0
        next_at = time.monotonic()
        while time.monotonic() < clock.end:
            next_at += 1.0 / rate
            seq += 1
            sent[seq] = time.monotonic()
            await ws.send(json.dumps({"type": "action", "seq": seq, "action": {"type": "move", "pad": pad}}))
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        await asyncio.sleep(0.5)
        task.cancel()


async def open_tables(base: str, count: int) -> list[tuple[str, list[str]]]:
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

        tables = list(await asyncio.gather(*(one(i) for i in range(count))))
        for tid, tokens in tables:
            response = await http.post(f"/api/tables/{tid}/start", json={"token": tokens[0]})
            response.raise_for_status()
    return tables


async def run(args: argparse.Namespace) -> None:
    tables_n = min(args.tables, 500)
    duration = min(args.duration, 120.0)
    rng = random.Random(args.seed)
    tmp = tempfile.mkdtemp(prefix="cardtable-bench-")
    port, echo_port = free_port(), free_port()
    env = dict(os.environ, CARDTABLE_GRACE_SECONDS="3600")
    server = subprocess.Popen(
        [sys.executable, "-m", "cardtable", "serve", "--port", str(port),
         "--db", f"sqlite+aiosqlite:///{tmp}/bench.db"], env=env)
    echo = subprocess.Popen([sys.executable, "-c", ECHO_SERVER, str(echo_port)])
    try:
        await wait_http(f"http://127.0.0.1:{port}/api/games")
        await wait_port(echo_port)
        t0 = time.monotonic()
        tables = await open_tables(f"http://127.0.0.1:{port}", tables_n)
        print(f"{tables_n} tables x 4 seats opened and started in {time.monotonic() - t0:.1f} s; "
              f"{args.rate:g} action/s/seat for {duration:g} s after {args.warmup:g} s warm-up")

        stats = Stats()
        clock = Clock(args.warmup + 2.0, duration)
        cpu: dict[str, float] = {}
        await asyncio.gather(
            measure_cpu({"server": server.pid, "clients": os.getpid()}, clock, cpu),
            *(table_client(port, tid, token, args.rate, clock, stats, random.Random(rng.random()))
              for tid, tokens in tables for token in tokens),
        )
        server_figures = summary("cardtable server", stats, duration)
        print(f"CPU over the window: server {cpu.get('server', 0):.2f} cores, clients {cpu.get('clients', 0):.2f} "
              f"cores (of {os.cpu_count()}); load average {os.getloadavg()[0]:.1f}")

        echo_stats = Stats()
        clock = Clock(args.warmup, duration)
        await asyncio.gather(*(
            echo_client(echo_port, args.rate, args.echo_size, clock, echo_stats, random.Random(rng.random()))
            for _ in range(tables_n * 4)
        ))
        echo_figures = summary("bare echo server", echo_stats, duration)
        print(f"p99 ratio server/echo: {server_figures['p99'] / echo_figures['p99']:.2f}; "
              f"target p99 < 25 ms: {'met' if server_figures['p99'] < 25 else 'NOT met'}")
    finally:
        for proc in (server, echo):
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=200, help="Nerts tables of 4 clients (at most 500)")
    parser.add_argument("--rate", type=float, default=1.0, help="actions per second per seat")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds measured (at most 120)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before measuring")
    parser.add_argument("--echo-size", type=int, default=60, help="padding of each echo message, in characters")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    try:  # the server runs on uvloop (uvicorn's default when installed); so do the clients
        import uvloop
    except ImportError:
        asyncio.run(run(args))
    else:
        uvloop.run(run(args))


if __name__ == "__main__":
    main()
