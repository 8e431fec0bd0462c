"""Servers in the test process: the settings tests run them with and the client type of conftest.py's
``make_client`` fixture (``client`` and ``db_client`` are made with it)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Self

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.testclient import TestClient

from cardtable.server.core.settings import Settings


def fast_settings(**knobs: Any) -> Settings:
    """Server settings for tests: 50 ms between hands (the ready step's countdown too: a test that does not press
    Ready waits no longer), bots at pace 0.05, Enemy Anemone bots without a delay; ``knobs`` (any :class:`Settings`
    field) override or add to them."""
    return Settings(**{"hand_pause_s": 0.05, "default_ready_s": 0.05, "bot_pace": 0.05, "anemone_bot_delay_ms": 0,
                       **knobs})


class ServerClient(TestClient):
    """A :class:`TestClient` whose app conftest.py's ``make_client`` has already started. ``with client:`` does not start it
    again; leaving the block stops it (a test that restarts a server on the same database), and the fixture's
    teardown stops whatever is still running (stopping twice is harmless)."""

    def __enter__(self) -> Self:
        return self


MakeClient = Callable[..., ServerClient]
"""``make_client(settings=None, db=None, *, raise_server_exceptions=True)``: see conftest.py."""



def query(client: TestClient, statement: Any) -> list[Any]:
    """The rows (a list of SQLAlchemy ``Row``) of ``statement`` run on the database of ``client``'s server, in
    the server's own event loop."""
    store = client.app.state.store  # type: ignore[attr-defined]

    async def go() -> list[Any]:
        async with store.engine.connect() as conn:
            return list((await conn.execute(statement)).all())

    return client.portal.call(go)  # type: ignore[union-attr]


class Statements:
    """The statements ``engine`` runs while entered (``before_cursor_execute``): ``(sql, parameters)`` each, left
    out those of the server's own background tasks (named ``cardtable-...``: sweeps, the writer, lease work),
    which may run at any moment and are not the cost of the request measured."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine.sync_engine
        self.seen: list[tuple[str, Any]] = []

    def _seen(self, _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, _many: bool) -> None:
        task = asyncio.current_task()
        if task is None or not task.get_name().startswith("cardtable-"):
            self.seen.append((statement, parameters))

    def __enter__(self) -> Statements:
        event.listen(self.engine, "before_cursor_execute", self._seen)
        return self

    def __exit__(self, *_: object) -> None:
        event.remove(self.engine, "before_cursor_execute", self._seen)

    @property
    def selects(self) -> list[tuple[str, Any]]:
        """The reads (``SELECT`` without a row lock) among them."""
        return [(s, p) for s, p in self.seen if s.lstrip().upper().startswith("SELECT") and " FOR " not in s.upper()]

    def naming(self, text: str) -> list[str]:
        """The statements whose SQL names ``text`` (a table, a column)."""
        return [s for s, _ in self.seen if text in s]


def play_out(client: TestClient, table_id: str, token: str, pick: int = 0) -> list[str]:
    """Play the token's seat to the end of the match through a WebSocket, ``legal[pick]`` each time (the first
    legal action by default; a ``pick`` past the end takes the last); the seat's cards in the first hand's snapshot
    (``[]`` for a game whose view has no ``hand``)."""
    cards: list[str] = []
    with client.websocket_connect(f"/ws/tables/{table_id}") as ws:
        ws.send_json({"type": "hello", "token": token})
        seq = 0
        while True:
            message = ws.receive_json()
            if (message.get("table") or {}).get("status") == "finished" or (
                message["type"] == "hand_over" and message["winners"]
            ):
                return cards
            if message["type"] == "snapshot" and not cards:
                cards = sorted((message.get("view") or {}).get("hand") or [])
            if message["type"] in ("update", "snapshot") and message.get("legal"):
                seq += 1
                legal = message["legal"]
                ws.send_json({"type": "action", "seq": seq, "action": legal[min(pick, len(legal) - 1)]})


ORIGIN = {"Origin": "http://testserver"}
"""The ``Origin`` header of the test client's own pages (the account routes check it)."""


def sign_up(client: TestClient, name: str) -> str:
    """A new account, signed in on ``client``: its session cookie."""
    client.cookies.clear()
    made = client.post("/api/accounts", json={"name": name, "password": "long enough"}, headers=ORIGIN)
    assert made.status_code == 201, made.text
    return str(client.cookies.get("ct_session"))


def as_account(client: TestClient, cookie: str | None) -> None:
    """Make ``client``'s next requests the account of session ``cookie`` (``None``: a guest)."""
    client.cookies.clear()
    if cookie is not None:
        client.cookies.set("ct_session", cookie)


def make_table(
    client: TestClient, cookie: str, clock: dict[str, int], seats: list[dict[str, Any]], rounds: int = 1
) -> tuple[str, str]:
    """A turn-based Enemy Anemone table of ``rounds`` rounds made by the account of session ``cookie`` (left signed
    in on ``client``), its ``turn_clock`` ``clock`` (``{"start_s", "per_move_s"}``, seconds) and its seats ``seats``
    (``[{"kind": "open"}, {"kind": "bot", "bot": ...}, ...]``, the creator at the first open one): its id and the
    creator's token (``AssertionError`` unless created, 201)."""
    as_account(client, cookie)
    made = client.post(
        "/api/tables",
        headers=ORIGIN,
        json={
            "game": "anemone",
            "options": {"players": len(seats), "rounds": rounds},
            "pace": "turn-based",
            "turn_clock": clock,
            "seats": seats,
        },
    )
    assert made.status_code == 201, made.text
    return str(made.json()["table"]["id"]), str(made.json()["token"])
