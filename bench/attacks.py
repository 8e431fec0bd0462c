"""Issue 10's attacks, replayed against a running ``cardtable serve``: each gets 4xx or a clear error, never a 5xx,
no traceback in the server's log, and other tables keep playing (their worst ack within 100 ms of the baseline).

Starts ``python -m cardtable serve`` on a free loopback port with a temporary SQLite database and the default
settings (``docs/deploy.md``), and a timing client in a second process: ``--tables`` Nerts tables of one scripted
person and two ``greedy:medium`` bots, the person sending a legal action every 200 ms (one at a time) and timing
each ``ack``. After a quiet baseline window, runs each attack of issue 10 in turn from other loopback addresses
(``127.0.0.2`` and up, so that the per-address limits meet the attacker, not the timing client):

1. bodies that are not strict JSON: ``NaN``, ``Infinity``, ``1e400``, a lone surrogate (create and join);
2. a WebSocket ``action`` nested 1,000 levels deep (then a ``ping``: the connection must live);
3. 1,000 WebSockets saying ``hello`` with one seat token (over 125 addresses);
4. a 500 MB body (declared, then chunked and streamed until refused), a 100 MB header (streamed until refused),
   2,000 half-sent requests (over 40 addresses: all must be closed by the server);
5. an open-table flood (50 addresses x 30 creates) and a ``GET /api/tables?status=open`` flood (8 clients, 10 s).

And issue 25's:

7. the escaped-quote body, a JSON text that opens 40 brackets then a string of ``\\"`` that never closes: (a) ten
   64 KiB ``POST /api/tables`` bodies, (b) 4 KiB WebSocket messages from a spectator at 25 a second for 10 s
   (within the 30/s limit); each must be refused (4xx, ``error``) in milliseconds;
8. a ping flood from a client that never reads (100,000 ping frames, 13 MB, from a socket with a 4 KiB receive
   buffer): the server must stop reading it or close it, answer at most the message budget's pongs, and hold no
   memory for it;
9. forged ``X-Forwarded-For`` / ``X-Forwarded-Proto`` headers from ``127.0.0.1`` (where a proxy would be): 45 table
   creations, each claiming another address; at most ``create_burst`` (20) may pass, the rest are 429.

For each it prints the HTTP statuses and WebSocket close codes / ``error`` codes seen, whether the server's log got
a traceback, the timing tables' worst and p99 ack latency during the attack against the baseline, and the server's
RSS before and after, its CPU time and how long its event loop's thread waited for a CPU (on a shared machine,
other processes' load: a worst ack far above the baseline with a long wait says the machine, not the server, was
busy). Exits 1 on any failure: a 5xx or 1011, a traceback, an expected refusal missing, or a worst
ack more than ``--max-extra-ms`` (100) over the baseline's worst. Bounded: loopback only, sizes capped as above,
each attack stops after at most ``--attack-seconds`` (60). The attacks run at ``--attacker-nice`` (10) while the server
and the timing client stay at 0: on one machine, the attacker's own CPU (a real one's is elsewhere) must not be
what delays the server.

    .venv/bin/python bench/attacks.py                 # run by hand; takes about 3 minutes
    .venv/bin/python bench/attacks.py --only 3,6b     # some of them (by number)
    nice .venv/bin/python bench/attacks.py --only 7a,7b,8,9
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import random
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import websockets
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from machine import HOST, cpu_seconds, cpu_wait_seconds, free_port, rss_mb, stop


def address(group: int, index: int) -> str:
    """An attacker's loopback source address: ``127.0.<group>.<index + 2>`` (never ``127.0.0.1``)."""
    return f"127.0.{group}.{index + 2}"


# -- the timing client (a separate process, so that the attacks' own work does not delay its clock) ------------


def choose(legal: list[dict[str, Any]], rng: random.Random) -> dict[str, Any] | None:
    if not legal:
        return None
    flips = [a for a in legal if a["type"] == "flip"]
    if flips and rng.random() < 0.8:
        return flips[0]
    return rng.choice(legal)


async def timed_table(port: int, index: int, out: Callable[[str], None]) -> None:
    """One person against two bots, table after table: prints ``ack <monotonic s> <latency ms>`` per ack."""
    rng = random.Random(index)
    async with httpx.AsyncClient(base_url=f"http://{HOST}:{port}", timeout=30) as http:
        while True:
            while True:  # attack 9 spends 127.0.0.1's creations too: wait for the next one
                answer = await http.post("/api/tables", json={
                    "game": "nerts", "options": {"players": 3}, "name": f"timer{index}",
                    "seats": [{"kind": "open"}, {"kind": "bot", "bot": "greedy:medium"},
                              {"kind": "bot", "bot": "greedy:medium"}]})
                if answer.status_code != 429:
                    break
                await asyncio.sleep(float(answer.headers.get("retry-after") or 1))
            made = answer.json()
            tid, token = made["table"]["id"], made["token"]
            async with websockets.connect(f"ws://{HOST}:{port}/ws/tables/{tid}", max_size=2**22,
                                          compression=None, open_timeout=60) as ws:
                await play_table(ws, token, rng, out)


async def play_table(ws: Any, token: str, rng: random.Random, out: Callable[[str], None]) -> None:
    """Say hello with ``token``, then send a legal action every 200 ms (one at a time) until the match ends."""
    await ws.send(json.dumps({"type": "hello", "token": token}))
    legal: list[dict[str, Any]] = []
    sent: dict[int, float] = {}
    over = asyncio.Event()

    async def read() -> None:
        nonlocal legal
        async for raw in ws:
            message = json.loads(raw)
            kind = message["type"]
            if kind in ("update", "snapshot"):
                legal = message.get("legal") or []
            elif kind in ("ack", "reject"):
                t0 = sent.pop(message.get("seq"), None)
                if t0 is not None and kind == "ack":
                    now = time.monotonic()
                    out(f"ack {now:.6f} {(now - t0) * 1000.0:.3f}")
            elif kind == "error":
                out(f"error to a timing seat: {str(raw)[:200]}")
            elif kind == "table" and message["table"]["status"] not in ("open", "playing"):
                over.set()
                return

    reader = asyncio.create_task(read())
    seq = 0
    while not over.is_set() and not reader.done():
        action = choose(legal, rng)
        if action is not None and not sent:
            seq += 1
            sent[seq] = time.monotonic()
            await ws.send(json.dumps({"type": "action", "seq": seq, "action": action}))
        elif sent and time.monotonic() - min(sent.values()) > 10:
            out("error: an action got no answer within 10 s")
            sent.clear()
        await asyncio.sleep(0.2)
    if reader.done() and not over.is_set():
        out(f"error: a timing seat's connection ended ({reader.exception()!r})")
    reader.cancel()


async def timing_client(port: int, tables: int) -> None:
    lock = threading.Lock()

    def out(line: str) -> None:
        with lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    tasks = [asyncio.create_task(timed_table(port, i, out)) for i in range(tables)]
    done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    for task in done:
        out(f"error: a timing table failed: {task.exception()!r}")


# -- the attacks ---------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one attack saw: HTTP statuses and WebSocket codes (``Counter``), failures, notes."""

    seen: collections.Counter[str] = field(default_factory=collections.Counter)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def status(self, code: int | str) -> None:
        self.seen[str(code)] += 1
        if isinstance(code, int) and code >= 500:
            self.failures.append(f"HTTP {code}")


def http_client(port: int, source: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=f"http://{HOST}:{port}", timeout=30,
                             transport=httpx.AsyncHTTPTransport(local_address=source))


async def create_table(port: int, source: str) -> dict[str, Any]:
    async with http_client(port, source) as http:
        answer = await http.post("/api/tables", json={"game": "nerts", "options": {"players": 2}, "name": "x"})
        answer.raise_for_status()
        made: dict[str, Any] = answer.json()
        return made


async def bad_bodies(port: int, out: Outcome) -> None:
    """Issue 10, 1: four bodies that are not strict JSON, 25 times each, on create and join."""
    tid = (await create_table(port, address(0, 0)))["table"]["id"]
    bodies = [("/api/tables", '{"game":"anemone","grace_seconds":NaN}'),
              ("/api/tables", '{"game":"anemone","grace_seconds":Infinity}'),
              ("/api/tables", '{"game":"nerts","seed":1e400}'),
              ("/api/tables", '{"game":"nerts","name":"\\ud800"}'),
              (f"/api/tables/{tid}/join", '{"name":"\\ud800"}')]
    async with http_client(port, address(0, 0)) as http:
        for _ in range(25):
            for path, body in bodies:
                answer = await http.post(path, content=body.encode(), headers={"content-type": "application/json"})
                out.status(answer.status_code)
                if answer.status_code != 422:
                    out.failures.append(f"{path} {body}: {answer.status_code}, not 422")
                elif "ud800" in answer.text or "NaN" in answer.text:
                    out.failures.append(f"the 422 echoes the input: {answer.text[:120]}")


async def ws_next(ws: Any, seconds: float = 10.0) -> dict[str, Any]:
    """The next message that is not a ``table``/``update``/``presence`` message."""
    while True:
        message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), seconds))
        if message["type"] in ("error", "welcome", "pong", "reject", "ack"):
            return message


async def deep_nesting(port: int, out: Outcome) -> None:
    """Issue 10, 2: an ``action`` nested 1,000 deep, 20 times; each must get an ``error`` and the socket live on."""
    made = await create_table(port, address(0, 1))
    deep = '{"type":"action","seq":1,"action":{"type":"play","x":' + "[" * 1000 + "]" * 1000 + "}}"
    async with websockets.connect(f"ws://{HOST}:{port}/ws/tables/{made['table']['id']}",
                                  local_addr=(address(0, 1), 0), max_size=2**22) as ws:
        await ws.send(json.dumps({"type": "hello", "token": made["token"]}))
        out.seen["ws " + (await ws_next(ws))["type"]] += 1
        for _ in range(20):
            await ws.send(deep)
            reply = await ws_next(ws)
            out.seen[f"ws {reply['type']} {reply.get('code', '')}".strip()] += 1
            if reply["type"] != "error":
                out.failures.append(f"a 1,000-deep message got {reply['type']}, not an error")
            await ws.send(json.dumps({"type": "ping", "t": 1.0}))
            if (await ws_next(ws))["type"] != "pong":
                out.failures.append("no pong after the deep message")
        out.notes.append("connection still open after 20 deep messages")


async def one_token_hellos(port: int, out: Outcome) -> None:
    """Issue 10, 3: 1,000 WebSockets say ``hello`` with one seat token, from 125 addresses (8 each)."""
    made = await create_table(port, address(0, 2))
    url = f"ws://{HOST}:{port}/ws/tables/{made['table']['id']}"
    held: list[Any] = []

    async def one(source: str) -> None:
        try:
            ws = await websockets.connect(url, local_addr=(source, 0), open_timeout=30, max_size=2**22)
        except Exception as error:  # refused during the handshake
            out.seen[f"connect failed {type(error).__name__}"] += 1
            return
        held.append(ws)
        try:
            await ws.send(json.dumps({"type": "hello", "token": made["token"]}))
            reply = await ws_next(ws)
            out.seen[f"ws {reply['type']} {reply.get('code', '')}".strip()] += 1
            if reply["type"] == "error":
                await asyncio.wait_for(ws.wait_closed(), 10)
                out.seen[f"close {ws.close_code}"] += 1
                if ws.close_code == 1011:
                    out.failures.append("close 1011 (internal error)")
        except websockets.ConnectionClosed as closed:
            out.seen[f"close {closed.rcvd.code if closed.rcvd else 'none'}"] += 1
        except TimeoutError:
            out.failures.append("no answer to hello within 10 s")

    for group in range(10):  # 100 at a time
        await asyncio.gather(*(one(address(1 + i // 8, 0)) for i in range(group * 100, group * 100 + 100)))
    welcomed = out.seen["ws welcome"]
    if welcomed > 4:
        out.failures.append(f"{welcomed} connections welcomed with one token (cap 4)")
    await asyncio.gather(*(ws.close() for ws in held), return_exceptions=True)


def raw_connection(source: str, port: int) -> socket.socket:
    return socket.create_connection((HOST, port), timeout=10, source_address=(source, 0))


def answer_of(sock: socket.socket, seconds: float) -> bytes:
    """What the server sends before closing (or within ``seconds``)."""
    sock.settimeout(seconds)
    got = b""
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            got += chunk
    return got


def stream_until_refused(sock: socket.socket, head: bytes, piece: bytes, cap: int, seconds: float) -> tuple[int, bytes]:
    """Send ``head`` then ``piece`` after ``piece`` until the server answers or closes, ``cap`` bytes are sent or
    ``seconds`` pass: (bytes sent after the head, the server's answer)."""
    sock.sendall(head)
    sock.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE)
    sent = 0
    end = time.monotonic() + seconds
    while sent < cap and time.monotonic() < end:
        events = 0
        for _, mask in selector.select(0.5):
            events |= mask
        if events & selectors.EVENT_READ:
            break
        if events & selectors.EVENT_WRITE:
            try:
                sent += sock.send(piece)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                break
    selector.close()
    sock.setblocking(True)
    return sent, answer_of(sock, 5.0)


def status_of(answer: bytes) -> int | str:
    if answer.startswith(b"HTTP/1.1 "):
        return int(answer[9:12])
    return "closed without an answer" if not answer else f"?{answer[:20]!r}"


async def huge_bodies(port: int, out: Outcome, seconds: float) -> None:
    """Issue 10, 4: a 500 MB body, declared (``Content-Length``) and chunked (streamed until refused)."""

    def run() -> None:
        with raw_connection(address(0, 3), port) as sock:
            head = (b"POST /api/tables HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 500000000\r\n\r\n")
            sent, answer = stream_until_refused(sock, head, b"[" * 1_048_576, 500_000_000, seconds)
            out.status(status_of(answer))
            out.notes.append(f"declared 500 MB: refused after {sent / 1e6:.1f} MB sent")
            if status_of(answer) != 413:
                out.failures.append(f"declared 500 MB body: {status_of(answer)}, not 413")
        with raw_connection(address(0, 3), port) as sock:
            head = (b"POST /api/tables HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n")
            piece = b"100000\r\n" + b"[" * 0x100000 + b"\r\n"
            sent, answer = stream_until_refused(sock, head, piece, 500_000_000, seconds)
            out.status(status_of(answer))
            out.notes.append(f"chunked 500 MB: refused after {sent / 1e6:.1f} MB sent")
            if status_of(answer) != 413:
                out.failures.append(f"chunked 500 MB body: {status_of(answer)}, not 413")
            if sent >= 500_000_000:
                out.failures.append("the whole 500 MB chunked body was taken")

    await asyncio.to_thread(run)


async def huge_header(port: int, out: Outcome, seconds: float) -> None:
    """Issue 10, 4: a 100 MB header, whole in one send and streamed in 1 MB pieces until refused."""

    def run() -> None:
        with raw_connection(address(0, 4), port) as sock:
            head = b"GET /api/games HTTP/1.1\r\nHost: t\r\nX-Big: "
            sent, answer = stream_until_refused(sock, head, b"a" * 1_048_576, 100_000_000, seconds)
            out.status(status_of(answer))
            out.notes.append(f"100 MB header: refused after {sent / 1e6:.1f} MB sent")
            if status_of(answer) not in (400, 431):
                out.failures.append(f"100 MB header: {status_of(answer)}, not 400/431")
            if sent >= 100_000_000:
                out.failures.append("the whole 100 MB header was taken")

    await asyncio.to_thread(run)


async def half_sent(port: int, out: Outcome, seconds: float) -> None:
    """Issue 10, 4: 2,000 half-sent requests (40 addresses x 50, under the per-address cap): each must be closed by
    the server (its request timeout), none answered 200."""

    def run() -> None:
        socks: list[socket.socket] = []
        try:
            for i in range(2000):
                sock = raw_connection(address(200 + i // 50, 0), port)
                sock.sendall(b"POST /api/tables HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                             if i % 2 else b"POST /api/tables HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{")
                socks.append(sock)
            opened = time.monotonic()
            out.notes.append(f"{len(socks)} half-sent requests open")
            selector = selectors.DefaultSelector()  # epoll: more than 1,024 sockets
            for sock in socks:
                sock.setblocking(False)
                selector.register(sock, selectors.EVENT_READ)
            pending = len(socks)
            while pending and time.monotonic() < opened + seconds:
                for key, _ in selector.select(0.5):
                    sock = key.fileobj  # type: ignore[assignment]
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        out.seen["closed by the server"] += 1
                        selector.unregister(sock)
                        pending -= 1
                    else:
                        out.status(status_of(data))
            selector.close()
            out.notes.append(f"all closed {time.monotonic() - opened:.1f} s after the last opened"
                             if not pending else f"{pending} still open after {seconds:.0f} s")
            if pending:
                out.failures.append(f"{pending} half-sent requests still held after {seconds:.0f} s")
        finally:
            for sock in socks:
                sock.close()

    await asyncio.to_thread(run)


async def open_table_flood(port: int, out: Outcome) -> None:
    """Issue 10, 6: 50 addresses each try to create 30 tables; beyond the per-address burst: 429."""

    async def one(source: str) -> None:
        async with http_client(port, source) as http:
            for _ in range(30):
                answer = await http.post("/api/tables", json={"game": "nerts", "options": {"players": 2}})
                out.status(answer.status_code)

    await asyncio.gather(*(one(address(160, i)) for i in range(50)))
    if not out.seen["429"]:
        out.failures.append("no 429: table creation is not limited per address")


async def list_flood(port: int, out: Outcome, seconds: float = 10.0) -> None:
    """Issue 10, 6: 8 clients repeat ``GET /api/tables?status=open`` for 10 s (over the open tables left by the
    flood); notes the largest answer and the requests' p99."""
    sizes: list[int] = []
    took: list[float] = []
    end = time.monotonic() + seconds

    async def one(source: str) -> None:
        async with http_client(port, source) as http:
            while time.monotonic() < end:
                t0 = time.monotonic()
                answer = await http.get("/api/tables", params={"status": "open"})
                took.append((time.monotonic() - t0) * 1000.0)
                sizes.append(len(answer.content))
                out.status(answer.status_code)

    await asyncio.gather(*(one(address(150, i)) for i in range(8)))
    out.notes.append(f"{len(took)} requests, largest answer {max(sizes) / 1000:.1f} kB, "
                     f"p99 {pct(took, 0.99):.0f} ms")


ESCAPED_QUOTE_DEPTH = 40
"""Brackets opened before the escaped-quote string (more than the 32 levels allowed, so the depth is measured)."""


def escaped_quotes(head: str, size: int) -> bytes:
    """``head``, 40 opening brackets, then a string of ``\\"`` that never closes: ``size`` bytes in all (the
    regular expression of old took 14.6 s over 64 KiB of it)."""
    text = (head + "[" * ESCAPED_QUOTE_DEPTH + '"').encode()
    return text + b'\\"' * ((size - len(text)) // 2) + b"\\" * ((size - len(text)) % 2)


async def escaped_quote_bodies(port: int, out: Outcome) -> None:
    """Issue 25, 1: ten 64 KiB escaped-quote bodies posted to ``/api/tables``: each a 4xx, answered in milliseconds."""
    body = escaped_quotes('{"a":', 65536)
    took: list[float] = []
    async with http_client(port, address(0, 5)) as http:
        for _ in range(10):
            t0 = time.monotonic()
            answer = await http.post("/api/tables", content=body, headers={"content-type": "application/json"})
            took.append((time.monotonic() - t0) * 1000.0)
            out.status(answer.status_code)
            if not 400 <= answer.status_code < 500:
                out.failures.append(f"a {len(body)}-byte escaped-quote body: {answer.status_code}, not 4xx")
    out.notes.append(f"{len(body)}-byte bodies answered in {min(took):.0f} to {max(took):.0f} ms")


async def escaped_quote_messages(port: int, out: Outcome, seconds: float = 10.0, rate: float = 25.0) -> None:
    """Issue 25, 1: a spectator sends 4 KiB escaped-quote messages at 25 a second (under the 30/s limit) for 10 s:
    each gets an ``error`` and the connection lives on."""
    made = await create_table(port, address(0, 6))
    message = escaped_quotes('{"type":"action","seq":1,"action":{"type":"flip","a":', 4096).decode()
    async with websockets.connect(f"ws://{HOST}:{port}/ws/tables/{made['table']['id']}",
                                  local_addr=(address(0, 6), 0), max_size=2**22, compression=None) as ws:
        await ws.send(json.dumps({"type": "hello", "token": None}))
        out.seen["ws " + (await ws_next(ws))["type"]] += 1
        sent = 0
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            await ws.send(message)
            sent += 1
            await asyncio.sleep(max(0.0, start + sent / rate - time.monotonic()))
        for _ in range(sent):
            reply = await ws_next(ws)
            out.seen[f"ws {reply['type']} {reply.get('code', '')}".strip()] += 1
            if reply["type"] != "error" or reply.get("code") == "message.rate_limited":
                out.failures.append(f"an escaped-quote message got {reply['type']} {reply.get('code')}")
                break
        await ws.send(json.dumps({"type": "ping", "t": 1.0}))
        if (await ws_next(ws))["type"] != "pong":
            out.failures.append("no pong after the escaped-quote messages")
    out.notes.append(f"{sent} messages of {len(message)} bytes in {seconds:g} s; connection still open")


FLOOD_PINGS = 100_000
"""Ping frames of attack 8 (131 bytes each: the largest control frame)."""


def raw_websocket(source: str, port: int, path: str, rcvbuf: int) -> tuple[socket.socket, ClientProtocol]:
    """A WebSocket handshake over a plain socket with a ``rcvbuf``-byte receive buffer (websockets' sans-I/O
    protocol), for a client that then writes frames of its own and reads nothing."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.bind((source, 0))
    sock.settimeout(10)
    sock.connect((HOST, port))
    protocol = ClientProtocol(parse_uri(f"ws://{HOST}:{port}{path}"))
    protocol.send_request(protocol.connect())
    sock.sendall(b"".join(protocol.data_to_send()))
    while not any(isinstance(event, Response) for event in protocol.events_received()):
        data = sock.recv(4096)
        if not data:
            raise ConnectionError("closed during the handshake")
        protocol.receive_data(data)
    return sock, protocol


async def ping_flood(port: int, out: Outcome, seconds: float) -> None:
    """Issue 25, 2: 100,000 ping frames from a client that never reads (a 4 KiB receive buffer); then what the server
    sent it is read: at most the message budget's pongs (60 + 30 a second), and the server stopped reading it or
    closed it before the whole flood went in."""
    made = await create_table(port, address(0, 7))

    def run() -> None:
        sock, protocol = raw_websocket(address(0, 7), port, f"/ws/tables/{made['table']['id']}", 4096)
        with sock:
            data = memoryview(Frame(Opcode.PING, b"p" * 125).serialize(mask=True) * FLOOD_PINGS)
            sock.settimeout(5.0)
            sent, ended = 0, "all sent"
            t0 = time.monotonic()
            try:
                while sent < len(data) and time.monotonic() - t0 < seconds:
                    sent += sock.send(data[sent:sent + 65536])
            except TimeoutError:
                ended = "the server stopped reading (5 s without taking a byte)"
            except OSError as error:
                ended = f"closed by the server ({type(error).__name__})"
            took = time.monotonic() - t0
            frames: list[Frame] = []
            sock.settimeout(2.0)
            with contextlib.suppress(OSError):
                while chunk := sock.recv(1 << 20):
                    protocol.receive_data(chunk)
                    frames += [e for e in protocol.events_received() if isinstance(e, Frame)]
        pongs = sum(frame.opcode == Opcode.PONG for frame in frames)
        closes = [int.from_bytes(f.data[:2], "big") for f in frames if f.opcode == Opcode.CLOSE]
        out.seen[ended] += 1
        for code in closes:
            out.seen[f"close {code}"] += 1
        out.notes.append(f"sent {sent / 1e6:.2f} MB of {len(data) / 1e6:.1f} MB in {took:.1f} s; {pongs} pongs read "
                         f"back")
        budget = 60 + 30 * (took + 2.0)
        if pongs > budget:
            out.failures.append(f"{pongs} pongs answered (budget {budget:.0f})")
        if sent >= len(data):
            out.failures.append("the server read the whole flood")
        if 1011 in closes:
            out.failures.append("close 1011 (internal error)")

    await asyncio.to_thread(run)


async def forged_forwarded(port: int, out: Outcome, creations: int = 45, burst: int = 20) -> None:
    """Issue 25, 3: from ``127.0.0.1`` (where a proxy would be), table creations that each claim another client in
    ``X-Forwarded-For`` (and ``https`` in ``X-Forwarded-Proto``): the per-address limit must hold, at most
    ``burst`` (``create_burst``) created."""
    async with httpx.AsyncClient(base_url=f"http://{HOST}:{port}", timeout=30) as http:
        for i in range(creations):
            answer = await http.post("/api/tables", json={"game": "nerts", "options": {"players": 2}},
                                     headers={"X-Forwarded-For": f"203.0.113.{i + 1}", "X-Forwarded-Proto": "https"})
            out.status(answer.status_code)
            if answer.status_code == 201 and "secure" in answer.headers.get("set-cookie", "").lower():
                out.failures.append("a forged X-Forwarded-Proto made the cookie Secure")
    created = out.seen["201"]
    out.notes.append(f"{created} of {creations} created with a forged address each (create_burst {burst})")
    if created > burst:
        out.failures.append(f"{created} creations passed: the forged addresses escaped the per-address limit")


# -- the run ------------------------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


class Acks:
    """The timing client's lines, read by a thread: acks ``(monotonic s, ms)`` and errors."""

    def __init__(self, stream: Any) -> None:
        self.acks: list[tuple[float, float]] = []
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            if line.startswith("ack "):
                _, at, ms = line.split()
                self.acks.append((float(at), float(ms)))
            else:
                self.errors.append(line.strip())

    def between(self, t0: float, t1: float) -> list[float]:
        return [ms for at, ms in list(self.acks) if t0 <= at <= t1]


async def run(args: argparse.Namespace) -> int:
    tmp = tempfile.mkdtemp(prefix="cardtable-attacks-")
    port = free_port()
    log_path = os.path.join(tmp, "server.log")
    failures: list[str] = []
    with open(log_path, "wb") as log:
        server = subprocess.Popen([sys.executable, "-m", "cardtable", "serve", "--port", str(port),
                                   "--db", f"sqlite+aiosqlite:///{tmp}/attacks.db"], stdout=log, stderr=log)
    timer: subprocess.Popen[str] | None = None
    try:
        deadline = time.monotonic() + 90
        async with httpx.AsyncClient(base_url=f"http://{HOST}:{port}") as http:
            while True:
                try:
                    if (await http.get("/api/games")).status_code == 200:
                        break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.2)
        timer = subprocess.Popen([sys.executable, __file__, "--timing-client", "--port", str(port),
                                  "--tables", str(args.tables)], stdout=subprocess.PIPE, text=True)
        acks = Acks(timer.stdout)
        if args.attacker_nice:  # the attacks' own CPU is not the server's: on one machine they yield to it
            os.nice(args.attacker_nice)
        await asyncio.sleep(args.baseline_seconds / 2)  # tables open and start
        t0 = time.monotonic()
        wait_before = cpu_wait_seconds(server.pid)
        await asyncio.sleep(args.baseline_seconds)
        base = acks.between(t0, time.monotonic())
        base_wait = cpu_wait_seconds(server.pid) - wait_before
        if not base:
            print("no acks in the baseline window: the timing tables do not play")
            return 1
        base_worst = max(base)
        print(f"server pid {server.pid}, port {port}; {args.tables} timing tables (1 person + 2 bots each); "
              f"baseline {args.baseline_seconds:g} s: {len(base)} acks, p50 {pct(base, 0.5):.1f} ms, "
              f"p99 {pct(base, 0.99):.1f} ms, worst {base_worst:.1f} ms; RSS {rss_mb(server.pid):.1f} MB; server waiting "
              f"for a CPU {1000 * base_wait:.0f} ms", flush=True)
        attacks: list[tuple[str, Callable[[Outcome], Awaitable[None]]]] = [
            ("1. NaN/Infinity/1e400/lone surrogate bodies", lambda o: bad_bodies(port, o)),
            ("2. WebSocket action nested 1,000 deep", lambda o: deep_nesting(port, o)),
            ("3. 1,000 hellos with one seat token", lambda o: one_token_hellos(port, o)),
            ("4a. 500 MB body", lambda o: huge_bodies(port, o, args.attack_seconds)),
            ("4b. 100 MB header", lambda o: huge_header(port, o, args.attack_seconds)),
            ("4c. 2,000 half-sent requests", lambda o: half_sent(port, o, args.attack_seconds)),
            ("6a. open-table flood (50 addresses x 30)", lambda o: open_table_flood(port, o)),
            ("6b. GET /api/tables flood (8 clients, 10 s)", lambda o: list_flood(port, o)),
            ("7a. 64 KiB escaped-quote bodies (x10)", lambda o: escaped_quote_bodies(port, o)),
            ("7b. 4 KiB escaped-quote messages from a spectator (25/s, 10 s)",
             lambda o: escaped_quote_messages(port, o)),
            ("8. ping flood from a client that never reads (100,000 pings)",
             lambda o: ping_flood(port, o, args.attack_seconds)),
            ("9. forged X-Forwarded-For/-Proto from 127.0.0.1 (45 creations)", lambda o: forged_forwarded(port, o)),
        ]
        for name, attack in attacks:
            if args.only and name.split(".")[0] not in args.only.split(","):
                continue
            outcome = Outcome()
            rss_before = rss_mb(server.pid)
            cpu_before = cpu_seconds(server.pid)
            wait_before = cpu_wait_seconds(server.pid)
            log_offset = os.path.getsize(log_path)
            errors_before = len(acks.errors)
            t0 = time.monotonic()
            try:
                await asyncio.wait_for(attack(outcome), args.attack_seconds + 30)
            except Exception as error:
                outcome.failures.append(f"the attack itself failed: {error!r}")
            t1 = time.monotonic()
            await asyncio.sleep(1.0)  # an ack delayed by the attack arrives
            during = acks.between(t0, t1 + 1.0)
            with open(log_path, "rb") as f:
                f.seek(log_offset)
                tracebacks = f.read().count(b"Traceback")
            worst = max(during, default=float("nan"))
            if tracebacks:
                outcome.failures.append(f"{tracebacks} tracebacks in the server's log")
            if not during:
                outcome.failures.append("no ack from the timing tables during the attack")
            elif worst > base_worst + args.max_extra_ms:
                outcome.failures.append(f"worst ack {worst:.0f} ms, more than {args.max_extra_ms:g} ms over the "
                                        f"baseline's {base_worst:.0f} ms")
            if len(acks.errors) > errors_before:
                outcome.failures += [f"timing client: {e}" for e in acks.errors[errors_before:]]
            seen = ", ".join(f"{k} x{v}" for k, v in sorted(outcome.seen.items()))
            print(f"\n{name}: {'FAILED' if outcome.failures else 'ok'} ({t1 - t0:.1f} s)\n"
                  f"  seen: {seen or 'nothing'}\n"
                  + "".join(f"  {note}\n" for note in outcome.notes)
                  + f"  traceback in the server's log: {'yes' if tracebacks else 'no'}\n"
                  f"  other tables: {len(during)} acks, p99 {pct(during, 0.99):.1f} ms, worst {worst:.1f} ms "
                  f"(baseline worst {base_worst:.1f} ms, {worst - base_worst:+.1f} ms)\n"
                  f"  RSS {rss_before:.1f} MB -> {rss_mb(server.pid):.1f} MB; server CPU "
                  f"{cpu_seconds(server.pid) - cpu_before:.1f} s ({100 * (cpu_seconds(server.pid) - cpu_before) / (t1 + 1.0 - t0):.0f}% of a core), "
                  f"waiting for a CPU {1000 * (cpu_wait_seconds(server.pid) - wait_before):.0f} ms (other processes' load)"
                  + "".join(f"\n  failure: {f}" for f in outcome.failures), flush=True)
            failures += [f"{name}: {f}" for f in outcome.failures]
    finally:
        if timer is not None:
            stop(timer, 10)
        stop(server)
        with open(log_path, "rb") as f:
            total = f.read().count(b"Traceback")
        print(f"\nserver log ({log_path}): {total} tracebacks in all")
    print("attacks: FAILED\n  " + "\n  ".join(failures) if failures else "attacks: all passed")
    return 1 if failures else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=3, help="timing tables (one person and two bots each)")
    parser.add_argument("--baseline-seconds", type=float, default=10.0, help="quiet window measured first")
    parser.add_argument("--attack-seconds", type=float, default=60.0, help="longest any one attack may run")
    parser.add_argument("--max-extra-ms", type=float, default=100.0,
                        help="worst ack during an attack may exceed the baseline's worst by this much")
    parser.add_argument("--attacker-nice", type=int, default=10,
                        help="niceness of this process once the server and the timing client have started (they "
                             "stay at 0), so that on one machine the attacks' own CPU does not starve the server")
    parser.add_argument("--only", default="", help="run only these attacks, by number (\"3,6b\"); default: all")
    parser.add_argument("--timing-client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.timing_client:
        asyncio.run(timing_client(args.port, args.tables))
    else:
        sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
