"""The server facing the open internet (issue 10): malformed input gets a 4xx or an ``error`` and never a 5xx,
bodies and connections are capped, ``table`` messages are coalesced, idle tables expire, lists are paged, the
SQLite log stays small, and the layers import top-down. Each test failed before its fix."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from cardtable.server.core import messages
from cardtable.server.core.limits import TokenBuckets
from cardtable.server.storage.sqlite_upkeep import JOURNAL_SIZE_LIMIT
from cardtable.server.storage.store import Store
from cardtable.server.table.connections import Connection
from clients import MakeClient, fast_settings
from polling import wait_for, wait_status

Message = dict[str, Any]


def create(client: TestClient, players: int = 2, **extra: Any) -> dict[str, Any]:
    body = {"game": "anemone", "options": {"players": players, "rounds": 1}, **extra}
    response = client.post("/api/tables", json=body)
    assert response.status_code == 201, response.text
    made: dict[str, Any] = response.json()
    return made


def post_raw(client: TestClient, path: str, text: str) -> Any:
    return client.post(path, content=text.encode("utf-8", "surrogatepass"),
                       headers={"content-type": "application/json"})


# -- 1. HTTP 500 on four bodies --------------------------------------------------------------------------


@pytest.mark.parametrize("body", [
    '{"game":"anemone","grace_seconds":NaN}',
    '{"game":"anemone","grace_seconds":Infinity}',
    '{"game":"anemone","seed":1e400}',
    '{"game":"anemone","name":"\\ud800"}',
    '{"game":"anemone","name":"' + "\ud800" + '"}',
    '{"game":"anemone","options":' + "[" * 200 + "]" * 200 + "}",
])
def test_bodies_that_are_not_strict_json_are_422_with_a_code(client: TestClient, body: str) -> None:
    response = post_raw(client, "/api/tables", body)
    assert response.status_code == 422, response.text
    answer = response.json()
    assert set(answer) == {"detail", "code", "params"} and answer["code"] == "request.invalid"
    assert "JSON" in answer["detail"] and "ud800" not in response.text and "\ud800" not in answer["detail"]


def test_join_refuses_a_lone_surrogate_too(client: TestClient) -> None:
    tid = create(client)["table"]["id"]
    response = post_raw(client, f"/api/tables/{tid}/join", '{"name":"\\udc00"}')
    assert response.status_code == 422 and response.json()["code"] == "request.invalid"
    assert client.get(f"/api/tables/{tid}").json()["seats"][1] == {"seat": 1, "kind": "open"}


def test_a_validation_error_never_echoes_the_input(client: TestClient) -> None:
    huge = "Z" * 30_000
    response = client.post("/api/tables", json={"game": "anemone", "name": huge, huge[:50]: 1})
    assert response.status_code == 422
    answer = response.json()
    assert answer["code"] == "request.invalid" and answer["params"]["field"] == "name"
    assert answer["detail"].startswith("name: String should have at most 40 characters; ")
    assert "Z" * 41 not in response.text and len(response.content) < 1000


# -- 4. body size ----------------------------------------------------------------------------------------


def test_a_body_over_the_cap_is_413_whether_declared_or_chunked(make_client: MakeClient) -> None:
    with make_client(fast_settings(max_body_bytes=1000)) as client:
        declared = post_raw(client, "/api/tables", json.dumps({"game": "anemone", "name": "x" * 2000}))
        assert declared.status_code == 413 and declared.json()["code"] == "request.too_large"
        assert declared.json()["params"] == {"limit": 1000}

        def chunks() -> Iterator[bytes]:
            yield b'{"game": "anemone", "name": "'
            for _ in range(100):
                yield b"y" * 100
            yield b'"}'

        chunked = client.post("/api/tables", content=chunks(), headers={"content-type": "application/json"})
        assert chunked.status_code == 413
        assert client.post("/api/tables", json={"game": "anemone"}).status_code == 201


# -- 2. deep WebSocket messages ---------------------------------------------------------------------------


def test_a_message_nested_1000_deep_gets_an_error_and_the_connection_lives(client: TestClient) -> None:
    made = create(client)
    deep = '{"type":"action","seq":1,"action":{"type":"play","x":' + "[" * 1000 + "]" * 1000 + "}}"
    with client.websocket_connect(f"/ws/tables/{made['table']['id']}") as ws:
        ws.send_json({"type": "hello", "token": made["token"]})
        assert ws.receive_json()["type"] == "welcome"
        assert ws.receive_json()["type"] == "snapshot"
        ws.send_text(deep)
        reply = next_reply(ws)
        assert reply["type"] == "error" and "deeper" in reply["reason"]
        ws.send_json({"type": "ping", "t": 1.0})
        assert next_reply(ws)["type"] == "pong"


def next_reply(ws: Any) -> Message:
    """The next message that is not a (coalesced, so possibly late) ``table`` message."""
    while True:
        message: Message = ws.receive_json()
        if message["type"] != "table":
            return message


def test_depth_counts_brackets_outside_strings_only() -> None:
    messages.check_depth(b'{"a": "' + b"[" * 500 + b'"}')
    messages.check_depth(b"[" * 32 + b"]" * 32)
    with pytest.raises(ValueError, match="deeper"):
        messages.check_depth(b"[" * 33 + b"]" * 33)
    with pytest.raises(ValueError, match="deeper"):
        messages.check_depth(b'["\\"", ' + b"{" * 40)


# -- 7. the hello timeout's error is delivered -----------------------------------------------------------


def test_no_hello_in_time_gets_the_error_then_a_close(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(messages, "HELLO_TIMEOUT_S", 0.2)
    tid = create(client)["table"]["id"]
    with client.websocket_connect(f"/ws/tables/{tid}") as ws:
        reply = ws.receive_json()
        assert reply["type"] == "error" and "no hello" in reply["reason"]
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == 1000


# -- 3. fan-out ------------------------------------------------------------------------------------------


def hello(ws: Any, token: str | None) -> Message:
    ws.send_json({"type": "hello", "token": token})
    reply: Message = ws.receive_json()
    return reply


def test_a_seat_token_opens_at_most_four_connections(client: TestClient) -> None:
    made = create(client)
    tid = made["table"]["id"]
    opened = []
    try:
        for _ in range(4):
            ws = client.websocket_connect(f"/ws/tables/{tid}").__enter__()
            opened.append(ws)
            assert hello(ws, made["token"])["type"] == "welcome"
        with client.websocket_connect(f"/ws/tables/{tid}") as fifth:
            refused = hello(fifth, made["token"])
            assert refused["type"] == "error" and "at most 4" in refused["reason"]
            with pytest.raises(WebSocketDisconnect):
                fifth.receive_json()
    finally:
        for ws in opened:
            ws.__exit__(None, None, None)


def test_spectators_are_capped_with_a_clear_refusal(make_client: MakeClient) -> None:
    with make_client(fast_settings(max_spectators=2)) as client:
        tid = create(client)["table"]["id"]
        with client.websocket_connect(f"/ws/tables/{tid}") as a, client.websocket_connect(f"/ws/tables/{tid}") as b:
            assert hello(a, None)["type"] == "welcome" and hello(b, None)["type"] == "welcome"
            with client.websocket_connect(f"/ws/tables/{tid}") as c:
                refused = hello(c, None)
                assert refused["type"] == "error" and "spectators" in refused["reason"]


def test_connections_per_address_per_table_are_capped(make_client: MakeClient) -> None:
    with make_client(fast_settings(max_connections_per_address_per_table=2)) as client:
        made = create(client)
        tid = made["table"]["id"]
        with client.websocket_connect(f"/ws/tables/{tid}") as a, client.websocket_connect(f"/ws/tables/{tid}") as b:
            assert hello(a, None)["type"] == "welcome" and hello(b, made["token"])["type"] == "welcome"
            with client.websocket_connect(f"/ws/tables/{tid}") as c:
                assert "one address" in hello(c, None)["reason"]


def test_table_messages_are_coalesced(make_client: MakeClient) -> None:
    with make_client(fast_settings(table_message_interval_s=1.0)) as client:
        tid = create(client, players=4)["table"]["id"]
        with client.websocket_connect(f"/ws/tables/{tid}") as ws:
            assert hello(ws, None)["type"] == "welcome"
            assert ws.receive_json()["type"] == "snapshot"
            for name in ("bo", "cy", "di"):
                assert client.post(f"/api/tables/{tid}/join", json={"name": name}).status_code == 200
            tables = []
            while not tables or tables[-1]["seats"][3]["kind"] == "open":
                message = ws.receive_json()
                assert message["type"] == "table"
                tables.append(message["table"])
            assert len(tables) <= 2  # one at once, then one for the rest: not one per join
            assert [seat["name"] for seat in tables[-1]["seats"][1:]] == ["bo", "cy", "di"]


def test_a_slow_reader_is_dropped_not_waited_for() -> None:
    async def go() -> None:
        peer = Connection(max_outbox=3)
        for i in range(3):
            peer.send(str(i))
        assert not peer.closed and peer.outbox.qsize() == 3
        peer.send("one too many")
        assert peer.closed and peer.outbox.qsize() == 1 and peer.outbox.get_nowait() is None
        peer.send("after")
        assert peer.outbox.empty()

    asyncio.run(go())


def test_a_connection_outbox_keeps_order_and_wakes_its_writer() -> None:
    async def go() -> None:
        peer = Connection()
        got: list[str | None] = []

        async def writer() -> None:
            while (text := await peer.outbox.get()) is not None:
                got.append(text)
            got.append(None)

        task = asyncio.create_task(writer())
        await asyncio.sleep(0)  # the writer waits on an empty outbox
        peer.send("a")
        await asyncio.sleep(0)  # not a wait: one turn of the loop, in which the writer takes it
        assert got == ["a"]
        for text in ("b", "c", "d"):  # queued in one step: delivered in order
            peer.send(text)
        peer.close()
        await asyncio.wait_for(task, 1)
        assert got == ["a", "b", "c", "d", None]
        with pytest.raises(asyncio.QueueEmpty):
            peer.outbox.get_nowait()

    asyncio.run(go())


# -- 6. expiry, creation limit, paging ----------------------------------------------------------------------


def test_an_open_table_nobody_visits_closes(make_client: MakeClient) -> None:
    with make_client(fast_settings(open_table_idle_s=0.3, expiry_check_s=0.05)) as client:
        visited = create(client)["table"]["id"]
        idle = create(client)["table"]["id"]
        with client.websocket_connect(f"/ws/tables/{visited}") as ws:
            assert hello(ws, None)["type"] == "welcome"
            wait_status(client, idle, ("closed",), 20)
            assert client.get(f"/api/tables/{visited}").json()["status"] == "open"
        assert [t["id"] for t in client.get("/api/tables").json()] == [visited]
        assert client.post(f"/api/tables/{idle}/join", json={"name": "late"}).status_code == 404


def test_a_table_in_play_with_nobody_left_ends_as_abandoned(make_client: MakeClient) -> None:
    with make_client(fast_settings(abandon_after_s=0.3, expiry_check_s=0.05, anemone_bot_delay_ms=60_000)) as client:
        made = create(client, seats=[{"kind": "open"}, {"kind": "bot", "bot": "random"}], grace_seconds=0)
        tid = made["table"]["id"]
        assert client.post(f"/api/tables/{tid}/start", json={"token": made["token"]}).status_code == 200
        table = wait_status(client, tid, ("abandoned",), 20)
        assert table["winners"] is None and table["totals"] == [0, 0]
        assert [t["id"] for t in client.get("/api/finished").json()] == [tid]
        record = client.get(f"/api/tables/{tid}/record")
        assert record.status_code == 200 and len(record.json()["hands"]) == 1


def test_table_creation_is_limited_per_address(make_client: MakeClient) -> None:
    with make_client(fast_settings(creates_per_minute=0.0, create_burst=2)) as client:
        create(client)
        create(client)
        refused = client.post("/api/tables", json={"game": "anemone"})
        assert refused.status_code == 429 and refused.json()["code"] == "table.create_limit"
        assert refused.json()["params"] == {"rate": "0"}


def test_tables_are_listed_in_pages(make_client: MakeClient) -> None:
    with make_client(fast_settings(page_size=2)) as client:
        made = [create(client)["table"]["id"] for _ in range(5)]
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            response = client.get("/api/tables", params={} if cursor is None else {"cursor": cursor})
            page = [t["id"] for t in response.json()]
            assert len(page) <= 2
            seen += page
            pages += 1
            cursor = response.headers.get("x-next-cursor")
            if cursor is None:
                break
        assert sorted(seen) == sorted(made) and len(seen) == 5 and pages == 3
        assert len(client.get("/api/tables", params={"limit": 4}).json()) == 4
        assert client.get("/api/tables", params={"cursor": "junk"}).status_code == 422
        assert client.get("/api/tables", params={"limit": 0}).status_code == 422


def test_per_address_buckets_forget_refilled_addresses_and_keep_busy_ones() -> None:
    """The lobby-read limiter's memory follows the addresses seen lately: refilled buckets are forgotten when the
    count doubles; an address still waiting keeps its bucket (else it could read again at once)."""
    idle = TokenBuckets(rate=1e9, burst=2)
    for i in range(5000):
        assert idle.take(f"10.0.{i // 256}.{i % 256}") == 0
    assert len(idle.buckets) <= TokenBuckets.FORGET_AT
    busy = TokenBuckets(rate=0.001, burst=1)
    assert busy.take("10.9.9.9") == 0 and busy.take("10.9.9.9") == 1000
    for i in range(3000):
        busy.take(f"10.1.{i // 256}.{i % 256}")
    assert len(busy.buckets) == 3001 and busy.take("10.9.9.9") == 1000


# -- 6. SQLite housekeeping -----------------------------------------------------------------------------------


def test_the_sqlite_log_is_bounded_and_truncated(tmp_path: Path) -> None:
    db = tmp_path / "wal.db"

    async def go() -> None:
        from cardtable.server.storage.rows import SeatRow, TableRow

        store = await Store.open(f"sqlite+aiosqlite:///{db}")
        try:
            async with store.engine.connect() as conn:
                limit = (await conn.exec_driver_sql("PRAGMA journal_size_limit")).scalar()
            assert limit == JOURNAL_SIZE_LIMIT
            await store.insert_table(TableRow(id="t1", game="nerts", options={}, status="playing", seed=1,
                                              grace_seconds=60, created="2026-01-01T00:00:00Z",
                                              seats=[SeatRow(seat=0, kind="bot", bot="greedy:medium")]))
            await store.insert_hand("t1", 0, {"x": 1})
            for start in range(0, 3000, 300):
                await store.insert_actions("t1", 0, [(i, 0, i, {"type": "flip", "pad": "p" * 200})
                                                     for i in range(start, start + 300)])
            wal = Path(f"{db}-wal")
            assert wal.stat().st_size > 500_000
            busy, _, _ = await store.checkpoint(truncate=True)
            assert busy == 0 and wal.stat().st_size == 0
            rows = await store.load_tables(table_id="t1", with_hands=True)
            assert len(rows[0].hands[0].actions) == 3000
        finally:
            await store.close()

    asyncio.run(go())


# -- layers -----------------------------------------------------------------------------------------------


def test_bots_do_not_import_the_table_owner() -> None:
    code = "import sys, cardtable.server.table.bots; print('cardtable.server.table.owner' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# -- 4. the HTTP side of a real server: heads, slow requests, connections per address -----------------------


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    import os

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    db = tmp_path_factory.mktemp("live") / "live.db"
    env = dict(os.environ, CARDTABLE_REQUEST_TIMEOUT_S="1.5", CARDTABLE_MAX_CONNECTIONS_PER_ADDRESS="6",
               CARDTABLE_MAX_HEADER_BYTES="8192", CARDTABLE_KEEP_ALIVE_S="2")
    proc = subprocess.Popen([sys.executable, "-m", "cardtable", "serve", "--port", str(port), "--db",
                             f"sqlite+aiosqlite:///{db}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        def answers() -> bool:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as probe:
                    probe.sendall(b"GET /api/games HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                    return probe.recv(12).startswith(b"HTTP/1.1 200")
            except OSError:
                return False

        wait_for(answers, 90, "the server to start", every=0.1)
        yield port
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
        assert b"Traceback" not in err, err.decode(errors="replace")[-2000:]


def closed_within(sock: socket.socket, seconds: float) -> bytes:
    """What the server sent before closing ``sock``; AssertionError if it is still open after ``seconds``."""
    sock.settimeout(seconds)
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except TimeoutError:
        raise AssertionError(f"still open after {seconds} s (received {got[:80]!r})") from None
    except ConnectionResetError:
        pass
    return got


@pytest.mark.slow  # a real server process; waits out the request timeout
def test_half_sent_requests_are_closed_after_the_request_timeout(live: int) -> None:
    head = socket.create_connection(("127.0.0.1", live))
    head.sendall(b"GET /api/games HTTP/1.1\r\nHost: t\r\n")
    body = socket.create_connection(("127.0.0.1", live))
    body.sendall(b"POST /api/tables HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100\r\n\r\n{\"game\"")
    idle = socket.create_connection(("127.0.0.1", live))
    for sock in (head, body, idle):
        with sock:
            assert b"200" not in closed_within(sock, 6.0)


@pytest.mark.slow  # a real server process; waits out keep-alive
def test_an_idle_keep_alive_connection_is_closed_after_keep_alive_s(live: int) -> None:
    """Between requests the request timeout does not run: ``keep_alive_s`` (2 here; uvicorn's own default is 5)
    closes a connection that stays idle after its answer."""
    with socket.create_connection(("127.0.0.1", live)) as sock:
        sock.sendall(b"GET /api/games HTTP/1.1\r\nHost: t\r\n\r\n")
        sock.settimeout(5.0)
        assert sock.recv(12) == b"HTTP/1.1 200"
        closed_within(sock, 4.0)


@pytest.mark.slow  # a real server process
def test_a_huge_head_or_declared_body_is_refused_at_once(live: int) -> None:
    with socket.create_connection(("127.0.0.1", live)) as sock:
        sock.sendall(b"GET /api/games HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n")
        answer = closed_within(sock, 5.0)
        assert answer.startswith(b"HTTP/1.1 431") and b"request.head_too_large" in answer
    with socket.create_connection(("127.0.0.1", live)) as sock:  # arriving in pieces: h11 refuses it
        sock.sendall(b"GET /api/games HTTP/1.1\r\nHost: t\r\nX-Big: ")
        with contextlib.suppress(OSError):
            for _ in range(100):
                sock.sendall(b"a" * 10_000)
        assert closed_within(sock, 5.0).startswith(b"HTTP/1.1 400")
    with socket.create_connection(("127.0.0.1", live)) as sock:
        sock.sendall(b"POST /api/tables HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 500000000\r\n\r\n{")
        answer = closed_within(sock, 5.0)
        assert answer.startswith(b"HTTP/1.1 413") and b"request.too_large" in answer


@pytest.mark.slow  # a real server process
def test_connections_per_address_are_capped(live: int) -> None:
    def served() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", live)) as again:
                again.sendall(b"GET /api/games HTTP/1.1\r\nHost: t\r\n\r\n")
                again.settimeout(5.0)
                return again.recv(12) == b"HTTP/1.1 200"
        except OSError:  # refused: closed connections not released yet
            return False

    wait_for(served, 10, "the connections of earlier tests to be released")
    held = [socket.create_connection(("127.0.0.1", live)) for _ in range(6)]
    try:
        with socket.create_connection(("127.0.0.1", live)) as extra:
            extra.sendall(b"GET /api/games HTTP/1.1\r\nHost: t\r\n\r\n")
            assert b"200" not in closed_within(extra, 1.0)
    finally:
        for sock in held:
            sock.close()
    wait_for(served, 10, "a new connection served once the held ones are closed")
