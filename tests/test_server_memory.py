"""Memory stays flat (issue 10, point 5): a closed connection leaves no reference cycle in the server, whatever way
it ends (a seat, a spectator, junk, a dropped TCP connection, no hello, a hello over the seat's connection cap, refused
HTTP bodies). Measured on the real
uvicorn configuration of ``cardtable serve`` in this process, with the clients in another process, by counting what
a full garbage collection finds unreachable after 30 connections of each kind (it was 3 to 17 objects per
connection: uvicorn's httptools protocol left after each upgrade, and the tracebacks of the 500s; about 10 for a
hello refused on the table's owner, whose refusal's traceback held the call that held it)."""

from __future__ import annotations

import gc
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from cardtable.server.core import messages
from cardtable.server.core.settings import Settings
from cardtable.server.edge.app import create_app, uvicorn_config
from polling import wait_for

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CLIENTS = r"""
import json, socket, sys, time, httpx
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect
port, tid, token, kind = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
url, base = f"ws://127.0.0.1:{port}/ws/tables/{tid}", f"http://127.0.0.1:{port}"
def one():
    if kind == "http":
        with httpx.Client(base_url=base) as http:
            http.post("/api/tables", content=b'{"game":"anemone","grace_seconds":NaN}',
                      headers={"content-type": "application/json"})
            http.post(f"/api/tables/{tid}/join", json={"seat": "x"})
            http.post(f"/api/tables/{tid}/join", json={"seat": 0})  # taken: refused on the table's owner
            http.get("/api/tables/nope")
    elif kind == "nohello":
        with connect(url) as ws:
            ws.recv(timeout=5)
    elif kind == "refused":  # over the seat's connection cap: an error, then the server closes
        with connect(url) as ws:
            ws.send(json.dumps({"type": "hello", "token": token})); ws.recv()
            try:
                ws.recv(timeout=5)
            except ConnectionClosed:
                pass
    elif kind == "dropped":
        ws = connect(url)
        ws.send(json.dumps({"type": "hello", "token": token})); ws.recv(); ws.recv()
        ws.socket.shutdown(socket.SHUT_RDWR); ws.socket.close()
    else:
        with connect(url) as ws:
            ws.send(json.dumps({"type": "hello", "token": token if kind == "seat" else None})); ws.recv(); ws.recv()
            if kind == "junk":
                ws.send("[" * 100); ws.recv()
for n in (int(sys.argv[5]), int(sys.argv[6])):  # warm-up, then the measured connections
    sys.stdin.readline()
    for _ in range(n):
        one()
    print("done", flush=True)
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[int, str, str, Settings]]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = Settings(max_connections_per_token=100, max_connections_per_address_per_table=100)
    app = create_app(f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}", settings)
    running = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port, settings))
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            httpx.get(f"{base}/api/games", timeout=1)
        except httpx.HTTPError:
            return False
        return True

    wait_for(answers, 90, "the server to answer")
    made = httpx.post(f"{base}/api/tables", json={"game": "anemone", "options": {"players": 2, "rounds": 1}}).json()
    yield port, made["table"]["id"], made["token"], settings
    running.should_exit = True
    thread.join(10)


N = 30
"""Connections measured per kind."""


@pytest.mark.slow  # a real uvicorn and a client process, batches of connections each
@pytest.mark.parametrize("kind", ["seat", "spectator", "junk", "dropped", "nohello", "refused", "http"])
def test_closed_connections_leave_no_reference_cycles(server: tuple[int, str, str, Settings], kind: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    port, tid, token, settings = server
    if kind == "nohello":
        monkeypatch.setattr(messages, "HELLO_TIMEOUT_S", 0.1)
    if kind == "refused":  # every hello with the token is one too many (issue 10, 3: 1,000 hellos with one token)
        monkeypatch.setattr(settings, "max_connections_per_token", 0)

    clients = subprocess.Popen([sys.executable, "-c", CLIENTS, str(port), tid, token, kind, "5", str(N)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert clients.stdin is not None and clients.stdout is not None

    def batch() -> None:
        assert clients.stdin is not None and clients.stdout is not None
        clients.stdin.write("go\n")
        clients.stdin.flush()
        line = clients.stdout.readline().strip()
        if line != "done":
            clients.kill()
            raise AssertionError(f"the clients failed: {clients.communicate()[1][-2000:]}")
        time.sleep(0.3)  # the server notices the last closes

    try:
        batch()  # warm-up: first-use caches
        for _ in range(3):  # let whatever earlier tests in this process left behind settle and go
            gc.collect()
            time.sleep(0.2)  # not a wait on one thing: time for what earlier tests left to run out and be freed
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            batch()
            found = gc.collect()
            kinds = Counter(type(o).__qualname__ for o in gc.garbage).most_common(8)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
    finally:
        clients.kill()
        clients.wait(10)
    assert found / N < 1.0, f"{found} unreachable objects after {N} {kind} connections: {kinds}"
