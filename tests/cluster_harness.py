"""Real ``cardtable serve --redis`` processes for the multi-process tests (``tests/test_server_cluster.py``) and
``bench/server_load.py``: start, stop (SIGTERM, SIGKILL, SIGSTOP/SIGCONT), and WebSocket clients that reconnect to
whichever process answers, as the web client does."""

from __future__ import annotations

import contextlib
import json
import signal as signals
import socket
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from cardtable.replay import fold
from cardtable.server.cluster.member import Cluster
from cardtable.server.cluster.ownership import ClusterSettings
from cardtable.server.core.settings import Settings
from cardtable.server.lobby.manager import Manager
from cardtable.server.storage import schema
from cardtable.server.storage.rows import record_of
from cardtable.server.storage.store import Store
from polling import wait_for
from services import Server, free_port, run_async, start_server

Message = dict[str, Any]

CLUSTER_ENV = {
    "CARDTABLE_HAND_PAUSE": "0.2", "CARDTABLE_DEFAULT_READY_S": "0.2", "CARDTABLE_ANEMONE_BOT_DELAY_MS": "0",
    "CARDTABLE_BOT_PACE": "0.3",
    "CARDTABLE_SOLO_START": "0.5",
}
"""Settings of the test processes given as variables: quick bots, short pauses."""

CLUSTER_OPTIONS = ["--lease-ms", "2000", "--sweep-s", "0.5"]
"""Settings of the test processes given as ``serve`` options: a 2 s lease (failover within about 3 s), a sweep
every 0.5 s."""


class Proc:
    """One ``python -m cardtable serve`` process (``services.start_server``) on a port of 127.0.0.1 chosen when it
    is made, so that it keeps its address over restarts."""

    def __init__(self, db: str, redis: str | None, log: Path, env: dict[str, str] | None = None,
                 options: list[str] | None = None) -> None:
        self.db = db
        self.redis = redis
        self.log = log
        self.env = {**CLUSTER_ENV, **(env or {})}
        self.options = CLUSTER_OPTIONS + (options or [])
        self.port = free_port()
        self.server: Server | None = None

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        """The running (or ended) process, ``None`` before :meth:`start`."""
        return None if self.server is None else self.server.proc

    @property
    def base(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, wait: bool = True) -> Proc:
        """Start it; with ``wait``, until it answers ``GET /api/games`` (60 s at most)."""
        self.server = start_server(self.db, redis=self.redis, options=self.options, env=self.env, log=self.log,
                                   port=self.port, wait=60 if wait else None)
        return self

    def ready(self) -> bool:
        """Whether it answers HTTP (``AssertionError`` with its log if it exited)."""
        assert self.server is not None
        try:
            return self.server.ready()
        except RuntimeError as exited:
            raise AssertionError(str(exited)) from None

    @property
    def alive(self) -> bool:
        """Whether the process runs."""
        return self.server is not None and self.server.alive

    def signal(self, sig: int) -> None:
        """Send ``sig`` (SIGKILL, SIGTERM, SIGSTOP, SIGCONT)."""
        assert self.server is not None
        self.server.proc.send_signal(sig)

    def stop(self, sig: int = signals.SIGTERM, timeout: float = 30) -> int:
        """Send ``sig`` and wait for the exit; returns the exit status."""
        assert self.server is not None
        return self.server.stop(sig, timeout)

    def post(self, path: str, body: dict[str, Any]) -> Message:
        """POST JSON, retried while the answer is 503 (a table moving between processes); the JSON answer."""
        for _ in range(40):
            reply = httpx.post(self.base + path, json=body, timeout=20)
            if reply.status_code != 503:
                assert reply.status_code < 300, reply.text
                answer: Message = reply.json()
                return answer
            time.sleep(0.25)  # not a wait: a client's pause before it retries a 503
        raise AssertionError(f"{path}: 503 throughout")

    def get(self, path: str) -> Any:
        """GET JSON (``AssertionError`` for an error status)."""
        reply = httpx.get(self.base + path, timeout=20)
        assert reply.status_code == 200, reply.text
        return reply.json()


class Client(threading.Thread):
    """A WebSocket client of one table (a seat's ``token``, or ``None`` to watch) that keeps every message, plays
    the first legal action when ``play`` is set, and on any close reconnects to the first process of ``procs`` that
    is up, starting with ``procs[0]`` (as the web client does, through a proxy)."""

    def __init__(self, procs: list[Proc], table_id: str, token: str | None, play: bool = False) -> None:
        super().__init__(daemon=True)
        self.procs = procs
        self.table_id = table_id
        self.token = token
        self.play = play
        self.messages: list[Message] = []
        self.closes: list[int | None] = []
        self.connects: list[int] = []
        self.stop_flag = threading.Event()
        self.seq = 0
        self.lock = threading.Lock()
        self.ws: ClientConnection | None = None

    def run(self) -> None:
        attempt = 0
        while not self.stop_flag.is_set():
            proc = self.procs[attempt % len(self.procs)]
            attempt += 1
            if not proc.alive:
                time.sleep(0.05)  # not a wait: a reconnecting client's pause, as the web client's
                continue
            try:
                with connect(f"ws://127.0.0.1:{proc.port}/ws/tables/{self.table_id}", open_timeout=5) as ws:
                    self.ws = ws
                    ws.send(json.dumps({"type": "hello", "token": self.token}))
                    with self.lock:
                        self.connects.append(proc.port)
                    attempt -= 1  # stay with a process that answered
                    self._serve(ws)
            except ConnectionClosed as closed:
                with self.lock:
                    self.closes.append(closed.rcvd.code if closed.rcvd else None)
            except (OSError, TimeoutError):
                pass
            self.ws = None
            if not self.stop_flag.is_set():
                time.sleep(0.2)  # not a wait: a reconnecting client's pause, as the web client's

    def _serve(self, ws: ClientConnection) -> None:
        while not self.stop_flag.is_set():
            try:
                text = ws.recv(timeout=0.5)
            except TimeoutError:
                continue
            message: Message = json.loads(text)
            message["_conn"] = len(self.connects) - 1  # which connection brought it (0: the first)
            with self.lock:
                self.messages.append(message)
            legal = message.get("legal")
            if self.play and legal and message.get("type") in ("snapshot", "update"):
                self.seq += 1
                ws.send(json.dumps({"type": "action", "seq": self.seq, "action": legal[0]}))

    def close(self) -> None:
        """Stop and disconnect."""
        self.stop_flag.set()
        if self.ws is not None:
            with contextlib.suppress(Exception):
                self.ws.close()
        self.join(10)

    def seen(self, kind: str) -> list[Message]:
        """The messages of type ``kind`` so far."""
        with self.lock:
            return [m for m in self.messages if m.get("type") == kind]

    def versions(self) -> list[int]:
        """The versions of every ``update`` and ``ack`` received, in order."""
        with self.lock:
            return [int(m["v"]) for m in self.messages if m.get("type") in ("update", "ack")]

    def last_version(self) -> int:
        """The highest version received (updates, acks, snapshots), or -1."""
        with self.lock:
            return max((int(m["v"]) for m in self.messages if "v" in m), default=-1)


def port_open(port: int) -> bool:
    """Whether something listens on 127.0.0.1:``port``."""
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class TcpProxy:
    """A TCP proxy on a free port of 127.0.0.1 to ``target_port``, which can be cut (every connection closed, new
    ones refused) and restored: a database that is briefly unreachable."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.up = True
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if not self.up:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """Close every connection and refuse new ones."""
        self.up = False
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def restore(self) -> None:
        """Accept connections again."""
        self.up = True

    def close(self) -> None:
        """Stop the proxy."""
        self.cut()
        self._server.close()


def start(procs: list[Proc], db: str, redis: str, *logs: Path, env: dict[str, str] | None = None,
          options: list[str] | None = None) -> list[Proc]:
    """Start one process per log file at once (they apply the migrations one at a time), each with ``env`` and
    ``options`` (``cardtable serve``'s), and wait for all."""
    new = [Proc(db, redis, log, env=env, options=options) for log in logs]
    procs.extend(new)
    for proc in new:
        proc.start(wait=False)
    for proc in new:
        wait_for(proc.ready, 90, f"the server on port {proc.port} to answer")
    return new


def stored(db: str, table_id: str) -> tuple[dict[int, dict[str, Any]], list[tuple[int, int, int | None]]]:
    """The public view after each version of ``table_id``'s stored record (replayed), and its actions'
    ``(hand, idx, epoch)`` in order."""

    async def load() -> tuple[Any, list[tuple[int, int, int | None]]]:
        store = await Store.open(db)
        try:
            rows = await store.load_tables(table_id=table_id, with_hands=True)
            a = schema.actions
            async with store.engine.connect() as conn:
                epochs = (await conn.execute(select(a.c.hand, a.c.idx, a.c.epoch).where(a.c.table_id == table_id)
                                             .order_by(a.c.hand, a.c.idx))).all()
        finally:
            await store.close()
        return rows[0], [(int(h), int(i), None if e is None else int(e)) for h, i, e in epochs]

    row, epochs = run_async(load)
    views: dict[int, dict[str, Any]] = {}

    def step(_hand: int, index: int | None, state: Any) -> None:
        if index is not None:
            views[len(views) + 1] = state.view(None)

    fold(record_of(row), on_step=step)
    return views, epochs


def check_record(db: str, table_id: str, watchers: list[Client], acked: list[Client]) -> int:
    """Every update a watcher saw matches the record at its version, every version acknowledged to anyone is
    stored, and epochs never go down; returns the number of stored actions."""
    views, epochs = stored(db, table_id)
    for watcher in watchers:
        for message in watcher.seen("update"):
            v = int(message["v"])
            assert v in views, f"version {v} was sent but is not stored (stored: {len(views)})"
            assert message["view"] == views[v], f"version {v} sent differs from the record (a fork)"
    for client in acked:
        for v in client.versions():
            assert v <= len(views), f"version {v} acknowledged but not stored (stored: {len(views)})"
    stamps = [e for _, _, e in epochs]
    assert all(e is not None for e in stamps)
    assert stamps == sorted(stamps, key=lambda e: e or 0), "an older owner stored after a newer one"
    return len(views)


def stored_actions(db: str, table_id: str) -> list[tuple[int, dict[str, Any]]]:
    """``table_id``'s stored actions in version order (version ``v`` is item ``v - 1``): ``(seat, action)``."""

    async def load() -> list[tuple[int, dict[str, Any]]]:
        store = await Store.open(db)
        try:
            rows = await store.load_tables(table_id=table_id, with_hands=True)
        finally:
            await store.close()
        return [(seat, action) for hand in rows[0].hands for seat, _ms, action in hand.actions]

    return run_async(load)


async def stored_tables(url: str, count: int, settings: Settings, *, seeded: bool = False) -> list[str]:
    """``count`` two-person Nerts tables in play at database ``url``, stored by a process that then stopped (nobody
    owns them): their ids. ``seeded``: table ``i`` is dealt from seed ``i`` (``settings.chosen_seeds`` on)."""
    store = await Store.open(url)
    manager = await Manager.open(store, settings)
    ids = []
    try:
        for i in range(count):
            table, _, first = await manager.create("nerts", {"players": 2}, None, "ana", i if seeded else None, 60)
            await manager.join(table.id, "bo", None)
            await manager.start(table.id, first)
            ids.append(table.id)
    finally:
        await manager.close()
        await store.close()
    return ids


@contextlib.asynccontextmanager
async def opened_managers(
    url: str, redis_url: str, settings: Settings
) -> AsyncIterator[Callable[[], Awaitable[Manager]]]:
    """Server processes in this test process sharing the database ``url`` and the Redis ``redis_url``: the opener
    returns a new one's manager (its own ``Store``, a cluster member sweeping every 600 s and a ``Manager`` with
    ``settings``); every one opened closes, last first, when the block ends."""
    opened: list[tuple[Store, Cluster, Manager]] = []

    async def open_one() -> Manager:
        store = await Store.open(url, cluster=True)
        cluster = await Cluster.open(redis_url, store, ClusterSettings(sweep_s=600))
        manager = await Manager.open(store, settings, cluster)
        opened.append((store, cluster, manager))
        return manager

    yield open_one
    for store, cluster, manager in reversed(opened):
        await manager.close()
        await cluster.close()
        await store.close()
