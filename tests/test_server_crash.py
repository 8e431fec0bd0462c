"""Crash safety of cardtable.server: a real ``python -m cardtable serve`` is killed with SIGKILL and started
again on the same database; every acknowledged action is in the record and play continues from the same state."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import ClientConnection, connect

from polling import wait_for
from services import free_port

Message = dict[str, Any]

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.slow]  # real server processes, killed and started again



class Server:
    def __init__(self, db: Path) -> None:
        self.db = db
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = dict(os.environ, CARDTABLE_ANEMONE_BOT_DELAY_MS="0", CARDTABLE_HAND_PAUSE="0.1", CARDTABLE_DEFAULT_READY_S="0.1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cardtable", "serve", "--port", str(self.port),
             "--db", f"sqlite+aiosqlite:///{self.db}"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )

        def answers() -> bool:
            try:
                return httpx.get(f"{self.base}/api/games", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(answers, 30, "the server to start", every=0.1)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def socket(self, tid: str, token: str) -> tuple[ClientConnection, Message]:
        ws = connect(f"ws://127.0.0.1:{self.port}/ws/tables/{tid}", open_timeout=10)
        ws.send(json.dumps({"type": "hello", "token": token}))
        assert recv(ws)["type"] == "welcome"
        snapshot = recv(ws)
        assert snapshot["type"] == "snapshot"
        return ws, snapshot


def recv(ws: ClientConnection) -> Message:
    message: Message = json.loads(ws.recv(timeout=10))
    return message


def recv_until(ws: ClientConnection, kind: str) -> Message:
    while True:
        message = recv(ws)
        if message["type"] == kind:
            return message


def resync(ws: ClientConnection) -> Message:
    ws.send(json.dumps({"type": "resync"}))
    return recv_until(ws, "snapshot")


def stored_actions(db: Path, tid: str) -> list[tuple[int, int, int | None, int, str]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute(
            "SELECT hand, idx, seat, ms, action FROM actions WHERE table_id = ? ORDER BY hand, idx", (tid,)))


def same(a: Message, b: Message) -> bool:
    strip = [{k: v for k, v in seat.items() if k != "connected"} for seat in a["table"]["seats"]]
    strip_b = [{k: v for k, v in seat.items() if k != "connected"} for seat in b["table"]["seats"]]
    keys = ("v", "view", "legal", "hand", "totals", "results")
    return strip == strip_b and all(a[k] == b[k] for k in keys)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = Server(tmp_path / "crash.db")
    srv.start()
    yield srv
    if srv.proc is not None and srv.proc.poll() is None:
        srv.proc.terminate()
        srv.proc.wait(10)


def two_person_table(server: Server, game: str, options: dict[str, Any]) -> tuple[str, list[str]]:
    made = httpx.post(f"{server.base}/api/tables", json={"game": game, "options": options,
                                                          "seats": [{"kind": "open"}, {"kind": "open"}]}).json()
    tid = made["table"]["id"]
    other = httpx.post(f"{server.base}/api/tables/{tid}/join", json={"name": "bo"}).json()["token"]
    assert httpx.post(f"{server.base}/api/tables/{tid}/start", json={"token": other}).status_code == 200
    return tid, [made["token"], other]


def test_anemone_table_survives_sigkill(server: Server) -> None:
    tid, tokens = two_person_table(server, "anemone", {"players": 2, "rounds": 1})
    sockets = [server.socket(tid, token) for token in tokens]
    conns = [ws for ws, _ in sockets]
    latest = [snap for _, snap in sockets]
    acked = 0
    for _ in range(7):
        turn = latest[0]["view"]["turn"]
        acting = conns[turn]
        acting.send(json.dumps({"type": "action", "seq": acked, "action": latest[turn]["legal"][0]}))
        ack = recv_until(acting, "ack")
        acked += 1
        assert ack["v"] == acked
        latest = [resync(ws) for ws in conns]
    before = latest
    server.kill()
    assert len(stored_actions(server.db, tid)) == acked
    for ws in conns:
        ws.close()

    server.start()
    assert httpx.get(f"{server.base}/api/tables/{tid}").json()["status"] == "playing"
    sockets = [server.socket(tid, token) for token in tokens]
    for (_, snap), old in zip(sockets, before, strict=True):
        assert same(snap, old), (snap, old)
    turn = before[0]["view"]["turn"]
    ws = sockets[turn][0]
    ws.send(json.dumps({"type": "action", "seq": 99, "action": before[turn]["legal"][0]}))
    assert recv_until(ws, "ack")["v"] == acked + 1
    for ws, _ in sockets:
        ws.close()


def test_nerts_table_survives_sigkill_and_its_clock_resumes(server: Server) -> None:
    tid, tokens = two_person_table(server, "nerts", {"players": 2})
    ws, snap = server.socket(tid, tokens[0])
    for i in range(6):
        ws.send(json.dumps({"type": "action", "seq": i, "action": {"type": "flip"}}))
        ack = recv_until(ws, "ack")
        assert ack == {"type": "ack", "seq": i, "v": i + 1}
        time.sleep(0.02)  # not a wait: the hand's clock moves on between the actions
    for i in range(6, 10):  # in flight when the server dies: acknowledged or not, nothing acknowledged is lost
        ws.send(json.dumps({"type": "action", "seq": i, "action": {"type": "flip"}}))
    first_in_flight = recv_until(ws, "ack")
    assert first_in_flight["seq"] == 6
    acked = first_in_flight["v"]
    assert acked == 7
    server.kill()
    ws.close()
    stored = stored_actions(server.db, tid)
    assert 7 <= len(stored) <= 10
    assert [json.loads(a) for *_, a in stored] == [{"type": "flip"}] * len(stored)
    last_ms = stored[-1][3]

    server.start()
    ws, snap = server.socket(tid, tokens[0])
    assert snap["v"] == len(stored) and snap["view"]["ms"] == last_ms
    assert snap["view"] == folded_view(server.db, tid, stored, seat=0)
    ws.send(json.dumps({"type": "action", "seq": 50, "action": {"type": "flip"}}))
    assert recv_until(ws, "ack")["v"] == len(stored) + 1
    ws.close()
    after = stored_actions(server.db, tid)
    assert after[:-1] == stored and after[-1][3] >= last_ms


def folded_view(db: Path, tid: str, stored: list[tuple[int, int, int | None, int, str]], seat: int) -> Message:
    """``seat``'s view after folding the stored deal and actions through the engine (what a restart must show)."""
    from cardtable.games import get_game

    with sqlite3.connect(db) as conn:
        options, = conn.execute("SELECT options FROM tables WHERE id = ?", (tid,)).fetchone()
        deal, = conn.execute("SELECT deal FROM hands WHERE table_id = ? AND hand = 0", (tid,)).fetchone()
    state = get_game("nerts").new_match(json.loads(options)).start_hand(json.loads(deal))
    for _, _, actor, ms, action in stored:
        state.apply(actor, json.loads(action), ms)
    view: Message = json.loads(json.dumps(state.view(seat)))
    return view
