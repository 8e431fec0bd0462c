"""The WebSocket protocol of ``cardtable serve`` (``server/edge/ws_protocol.py``): uvicorn's, with a burst send offered in
the ASGI scope. Run on the real uvicorn configuration in this process, with real clients (the ``websockets``
library, with and without compression): a burst reaches the client as the same messages in the same order, in one
write to the socket; a table's messages arrive as before; a burst after the close or the client's going is refused.
The write at once (``write_texts_now``) writes a burst in one write while the socket takes it, and refuses, writing
nothing, while its buffer is full and after the close; what it wrote and what was sent after arrive in order."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosedOK
from websockets.frames import Frame, Opcode
from websockets.sync.client import connect
from websockets.uri import parse_uri

from cardtable.server.core.settings import Settings
from cardtable.server.core.socket_extension import EXTENSION, burst_sender, direct_writer
from cardtable.server.edge.app import create_app
from polling import wait_for
from services import serve_in_thread

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

BURST = ["first", json.dumps({"type": "update", "v": 2, "text": "é" * 3000}), "", "last"]


class Counting:
    """A transport that counts its writes and passes everything to the real one."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        self.transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class Recorder:
    """A bare ASGI WebSocket application: accepts, sends :data:`BURST` in one ``send_texts``, then, on any
    message, tries another burst after its close; records what the server did (writes to the socket included)."""

    def __init__(self) -> None:
        self.writes_per_burst: list[int] = []
        self.errors: list[str] = []
        self.offered = threading.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if not await accepted(scope, receive, send):
            return
        send_texts = scope["extensions"][EXTENSION]["send_texts"]
        self.offered.set()
        protocol = send_texts.__self__
        counting = protocol.transport = Counting(protocol.transport)  # observe this connection's socket writes
        await send_texts(BURST)
        self.writes_per_burst.append(counting.writes)
        message = await receive()
        if message["type"] == "websocket.receive":
            await send({"type": "websocket.close", "code": 1000})
            try:
                await send_texts(["after the close"])
            except RuntimeError as error:
                self.errors.append(str(error))


async def accepted(scope: dict[str, Any], receive: Any, send: Any) -> bool:
    """Serve the lifespan (``False``), or take the WebSocket's connect and accept it (``True``)."""
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return False
    assert scope["type"] == "websocket"
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    return True


async def lifespan(receive: Any, send: Any) -> None:
    while True:
        kind = (await receive())["type"]
        await send({"type": f"{kind}.complete"})
        if kind == "lifespan.shutdown":
            return


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port




@pytest.fixture
def recorder() -> Iterator[tuple[Recorder, int]]:
    app, port = Recorder(), free_port()
    running, thread = serve_in_thread(app, port)
    yield app, port
    running.should_exit = True
    thread.join(10)


@pytest.mark.parametrize("compression", ["deflate", None])
def test_a_burst_is_the_same_messages_in_order_in_one_write(recorder: tuple[Recorder, int],
                                                            compression: str | None) -> None:
    app, port = recorder
    with connect(f"ws://127.0.0.1:{port}/", compression=compression) as ws:
        got = [ws.recv(timeout=10) for _ in BURST]
        assert got == BURST
        ws.send("close, please")
        with pytest.raises(ConnectionClosedOK):  # the server closed: nothing more comes
            ws.recv(timeout=10)
    wait_for(lambda: app.errors, 10, "the failed send to be logged", every=0.02)
    assert app.writes_per_burst == [1]
    assert app.errors == ["send_texts: the WebSocket is not open for messages"]


def test_a_write_at_once_is_refused_while_the_buffer_is_full_and_after_the_close() -> None:
    big = "x" * 16_000
    done = threading.Event()
    seen: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if not await accepted(scope, receive, send):
            return
        offer = scope["extensions"][EXTENSION]
        write_now, send_texts = offer["write_texts_now"], offer["send_texts"]
        protocol = write_now.__self__
        counting = protocol.transport = Counting(protocol.transport)
        seen["burst"] = write_now(BURST)
        seen["burst writes"] = counting.writes
        written = 0
        while written < 10_000 and write_now([f"{written}:{big}"]):  # the client reads nothing yet
            written += 1
        seen["written"], seen["writable"] = written, protocol.writable.is_set()
        await send_texts(["after"])  # waits until the client has read enough
        await receive()
        await send({"type": "websocket.close", "code": 1000})
        seen["after the close"] = write_now(["too late"])
        done.set()

    port = free_port()
    running, thread = serve_in_thread(app, port)
    client = ClientProtocol(parse_uri(f"ws://127.0.0.1:{port}/"), max_size=None)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a client that does not read fills this at once
    try:
        sock.connect(("127.0.0.1", port))
        client.send_request(client.connect())
        sock.sendall(b"".join(client.data_to_send()))
        wait_for(lambda: "written" in seen, 10, "the buffer to fill", every=0.02)
        assert seen["burst"] is True and seen["burst writes"] == 1
        assert 0 < seen["written"] < 10_000 and seen["writable"] is False
        expected = [*BURST, *(f"{i}:{big}" for i in range(seen["written"])), "after"]
        texts: list[str] = []
        sock.settimeout(10)
        while len(texts) < len(expected):
            client.receive_data(sock.recv(1 << 16))
            texts.extend(frame.data.decode() for frame in client.events_received()
                         if isinstance(frame, Frame) and frame.opcode is Opcode.TEXT)
        assert texts == expected
        client.send_text(b"close, please")
        sock.sendall(b"".join(client.data_to_send()))
        assert done.wait(10)
        assert seen["after the close"] is False
    finally:
        sock.close()
        running.should_exit = True
        thread.join(10)


def test_a_burst_to_a_client_gone_is_refused() -> None:
    gone = threading.Event()
    outcome: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if not await accepted(scope, receive, send):
            return
        send_texts = scope["extensions"][EXTENSION]["send_texts"]
        assert (await receive())["type"] == "websocket.disconnect"
        assert EXTENSION not in scope["extensions"]  # taken out when the connection was lost: no cycle is left
        gone.set()
        try:
            await send_texts(["too late"])
        except Exception as error:  # uvicorn's ClientDisconnected
            outcome.append(type(error).__name__)

    port = free_port()
    running, thread = serve_in_thread(app, port)
    try:
        ws = connect(f"ws://127.0.0.1:{port}/")
        ws.socket.shutdown(socket.SHUT_RDWR)
        ws.socket.close()
        assert gone.wait(10)
        wait_for(lambda: outcome, 10, "the send's outcome", every=0.02)
        assert outcome == ["ClientDisconnected"]
    finally:
        running.should_exit = True
        thread.join(10)


def test_a_table_plays_over_bursts(tmp_path: Path) -> None:
    """The real application: each ack comes before the update of its action, versions go up by one, and the
    connection's scope offered the burst send (so the writer used it)."""
    port = free_port()
    app = create_app(f"sqlite+aiosqlite:///{tmp_path / 'burst.db'}", Settings())
    running, thread = serve_in_thread(app, port)
    try:
        base = f"http://127.0.0.1:{port}"
        made = httpx.post(f"{base}/api/tables", json={"game": "nerts", "options": {"players": 2}}).json()
        tid, token = made["table"]["id"], made["token"]
        other = httpx.post(f"{base}/api/tables/{tid}/join", json={"name": "bo"}).json()["token"]
        assert httpx.post(f"{base}/api/tables/{tid}/start", json={"token": token}).status_code == 200
        with connect(f"ws://127.0.0.1:{port}/ws/tables/{tid}") as ws, \
                connect(f"ws://127.0.0.1:{port}/ws/tables/{tid}") as watcher:
            ws.send(json.dumps({"type": "hello", "token": token}))
            watcher.send(json.dumps({"type": "hello", "token": other}))
            for sock in (ws, watcher):
                assert json.loads(sock.recv(timeout=10))["type"] == "welcome"
                snapshot = json.loads(sock.recv(timeout=10))
                assert snapshot["type"] == "snapshot"
            version = snapshot["v"]
            for seq in range(1, 6):
                ws.send(json.dumps({"type": "action", "seq": seq, "action": {"type": "flip"}}))
                kinds = []
                while "update" not in kinds:
                    message = json.loads(ws.recv(timeout=10))
                    kinds.append(message["type"])
                    if message["type"] == "ack":
                        assert message == {"type": "ack", "seq": seq, "v": version + 1}
                    elif message["type"] == "update":
                        assert message["v"] == version + 1
                assert kinds == ["ack", "update"]
                seen = json.loads(watcher.recv(timeout=10))
                assert (seen["type"], seen["v"]) == ("update", version + 1)
                version += 1
    finally:
        running.should_exit = True
        thread.join(10)


def test_other_sockets_have_no_burst_send() -> None:
    class OwnerSide:  # shaped like server/cluster/relay.py's OwnerSide: no scope
        pass

    class Plain:  # another server's scope
        def __init__(self) -> None:
            self.scope = {"type": "websocket", "extensions": {"websocket.http.response": {}}}

    assert burst_sender(OwnerSide()) is None
    assert burst_sender(Plain()) is None
    assert direct_writer(OwnerSide()) is None
    assert direct_writer(Plain()) is None
