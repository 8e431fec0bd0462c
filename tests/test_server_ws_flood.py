"""Control frames and protocol errors on the play WebSocket (``server/edge/ws_protocol.py``; ``docs/protocol.md``,
"Limits"), on the real uvicorn configuration of ``cardtable serve`` run in this process, with raw clients (a socket
and websockets' sans-I/O frames):

- ping frames take from the connection's message budget: a client that sends thousands of pings and never reads
  gets at most the budget's pongs, is closed (1008), the server's bytes waiting to be written to it stay bounded,
  and another table's connection keeps its answers timely;
- an invalid UTF-8 text frame and the other protocol errors close the connection with their code (1007, 1002,
  1009) and log no traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.sync.client import connect
from websockets.uri import parse_uri

from cardtable.server.core import messages
from cardtable.server.core.settings import Settings
from cardtable.server.edge.app import create_app
from polling import wait_for
from services import serve_in_thread

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

PING = Frame(Opcode.PING, b"p" * 125).serialize(mask=True)
"""One masked ping frame with the largest payload a control frame may carry (131 bytes)."""

FLOOD_PINGS = 100_000
"""Ping frames the flooding client sends (13 MB): far more than the kernel's socket buffers hold."""

PENDING_BOUND_BYTES = 512 * 1024
"""Most bytes the server may hold for the flooding client (its write buffer's high-water mark is 64 KiB,
``server/edge/ws_protocol.py``)."""


class Traces(logging.Handler):
    """Records every log record that carries an exception (a traceback in the server's log)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.exc_text or "Traceback" in record.getMessage():
            self.records.append(record)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[uvicorn.Server, int, Traces]]:
    """``cardtable serve``'s app and uvicorn configuration on a free port, in a thread of this process (so that the
    test can see each connection's write buffer); yields the server, its port and the tracebacks it logs."""
    port = free_port()
    app = create_app(f"sqlite+aiosqlite:///{tmp_path / 'flood.db'}", Settings())
    running, thread = serve_in_thread(app, port)
    traces = Traces()  # after uvicorn configured its logging (which replaces handlers)
    watched = [logging.getLogger(name) for name in ("", "uvicorn", "uvicorn.error", "cardtable")]
    for logger in watched:
        logger.addHandler(traces)
    try:
        yield running, port, traces
    finally:
        for logger in watched:
            logger.removeHandler(traces)
        running.should_exit = True
        thread.join(10)


def create_table(port: int) -> tuple[str, str]:
    made = httpx.post(f"http://127.0.0.1:{port}/api/tables", json={"game": "nerts", "options": {"players": 2}},
                      timeout=30).json()
    return made["table"]["id"], made["token"]


class RawClient:
    """A WebSocket client over a plain socket: websockets' sans-I/O protocol does the handshake and reads the
    server's frames; the test writes whatever bytes it likes. ``rcvbuf``: a small receive buffer, so that a client
    that never reads fills up at once."""

    def __init__(self, port: int, path: str, rcvbuf: int | None = None) -> None:
        self.sock = socket.socket()
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(10)
        self.sock.connect(("127.0.0.1", port))
        self.protocol = ClientProtocol(parse_uri(f"ws://127.0.0.1:{port}{path}"))
        self.protocol.send_request(self.protocol.connect())
        self.sock.sendall(b"".join(self.protocol.data_to_send()))
        self.frames: list[Frame] = []
        while not any(isinstance(event, Response) for event in self._read(4096)):
            pass

    def _read(self, size: int) -> list[Any]:
        data = self.sock.recv(size)
        if data:
            self.protocol.receive_data(data)
        else:
            self.protocol.receive_eof()
        events = self.protocol.events_received()
        self.frames += [event for event in events if isinstance(event, Frame)]
        if not data:
            raise EOFError
        return events

    def send_text(self, text: bytes) -> None:
        self.sock.sendall(Frame(Opcode.TEXT, text).serialize(mask=True))

    def read_until_closed(self, seconds: float) -> None:
        """Read the server's frames until it closes the connection (``AssertionError`` after ``seconds``)."""
        deadline = time.monotonic() + seconds
        while True:
            assert time.monotonic() < deadline, "the server did not close the connection"
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                self._read(65536)
            except (EOFError, ConnectionResetError):
                return
            except TimeoutError:
                continue

    def close_code(self) -> int | None:
        closes = [frame for frame in self.frames if frame.opcode == Opcode.CLOSE]
        return int.from_bytes(closes[0].data[:2], "big") if closes else None

    def count(self, opcode: Opcode) -> int:
        return sum(frame.opcode == opcode for frame in self.frames)

    def close(self) -> None:
        self.sock.close()


def pending_bytes(running: uvicorn.Server) -> int:
    """The most bytes waiting in any one of the server's connections' write buffers now."""
    while True:
        try:
            protocols = list(running.server_state.connections)
            break
        except RuntimeError:  # the set changed while copied (the server's thread)
            continue
    sizes = [p.transport.get_write_buffer_size() for p in protocols if getattr(p, "transport", None) is not None]
    return max(sizes, default=0)


def flood(client: RawClient, pings: int, outcome: dict[str, Any]) -> None:
    """Send ``pings`` ping frames and never read; stops when the server closes or stops reading (``sent`` bytes)."""
    data = memoryview(PING * pings)
    client.sock.settimeout(5)
    sent = 0
    started = time.monotonic()
    try:
        while sent < len(data):
            sent += client.sock.send(data[sent:sent + 65536])
        outcome["ended"] = "all sent"
    except TimeoutError:
        outcome["ended"] = "the server stopped reading"
    except OSError as error:
        outcome["ended"] = f"closed by the server ({type(error).__name__})"
    outcome["sent"] = sent
    outcome["seconds"] = time.monotonic() - started


def test_a_ping_flood_from_a_client_that_never_reads_is_cut_and_bounded(server: tuple[uvicorn.Server, int, Traces]) \
        -> None:
    running, port, traces = server
    flooded_table, _ = create_table(port)
    other_table, token = create_table(port)
    with connect(f"ws://127.0.0.1:{port}/ws/tables/{other_table}", compression=None) as other:
        other.send(json.dumps({"type": "hello", "token": token}))
        assert json.loads(other.recv(timeout=10))["type"] == "welcome"
        flooder = RawClient(port, f"/ws/tables/{flooded_table}", rcvbuf=4096)
        outcome: dict[str, Any] = {}
        thread = threading.Thread(target=flood, args=(flooder, FLOOD_PINGS, outcome), daemon=True)
        started = time.monotonic()
        thread.start()
        worst_pending = 0
        waits: list[float] = []
        while thread.is_alive() or time.monotonic() - started < 2.0:  # the other table's pings, during and after
            worst_pending = max(worst_pending, pending_bytes(running))
            t0 = time.monotonic()
            other.send(json.dumps({"type": "ping", "t": t0}))
            while json.loads(other.recv(timeout=30))["type"] != "pong":
                pass
            waits.append(time.monotonic() - t0)
            worst_pending = max(worst_pending, pending_bytes(running))
            time.sleep(0.05)  # not a wait: pacing the pings while the flood goes on
        thread.join(30)
        took = time.monotonic() - started
        flooder.read_until_closed(60)  # everything the server sent it, then its close
        flooder.close()
    pongs = flooder.count(Opcode.PONG)
    budget = messages.RATE_BURST + messages.RATE_PER_SECOND * took
    print(f"flood: {outcome}; {pongs} pongs, close {flooder.close_code()}, at most {worst_pending} bytes pending; "
          f"other table: {len(waits)} pongs, worst {1000 * max(waits):.0f} ms")
    assert pongs <= budget, f"{pongs} pongs answered in {took:.1f} s (budget {budget:.0f}); flood: {outcome}"
    assert outcome["sent"] < len(PING) * FLOOD_PINGS, f"the server read the whole flood: {outcome}"
    assert flooder.close_code() in (None, 1008), flooder.close_code()
    assert worst_pending <= PENDING_BOUND_BYTES, f"{worst_pending} bytes waited for the flooder"
    assert max(waits) < 1.0, f"the other table's worst pong took {max(waits):.2f} s"
    assert not traces.records, [r.getMessage() for r in traces.records]


def server_side(running: uvicorn.Server, client: RawClient) -> Any:
    """The server's protocol object of ``client``'s connection."""
    port = client.sock.getsockname()[1]
    for protocol in list(running.server_state.connections):
        if getattr(protocol, "client", None) == ("127.0.0.1", port) and hasattr(protocol, "send_texts"):
            return protocol
    raise AssertionError("no such connection on the server")


def test_a_connection_whose_write_buffer_is_full_is_not_read(server: tuple[uvicorn.Server, int, Traces]) -> None:
    """Past the write buffer's high-water mark the server stops reading the client (its pings wait in the kernel,
    unanswered); once the client has read what was waiting, reading resumes and they are answered."""
    running, port, _ = server
    table, _ = create_table(port)
    client = RawClient(port, f"/ws/tables/{table}", rcvbuf=4096)
    protocol = server_side(running, client)
    texts = ["x" * 60_000] * 70  # 4.2 MB: more than the kernel's socket buffers take at once
    asyncio.run_coroutine_threadsafe(protocol.send_texts(texts), protocol.loop).result(10)
    wait_for(lambda: not protocol.transport.is_reading(), 10, "the server to stop reading (its write buffer full)",
             every=0.01)
    assert protocol.transport.get_write_buffer_size() > 0
    client.sock.sendall(PING * 10)
    deadline = time.monotonic() + 30
    while client.count(Opcode.PONG) < 10:  # reading now: the server drains, then reads the pings
        assert time.monotonic() < deadline, f"{client.count(Opcode.PONG)} of 10 pongs"
        client._read(1 << 20)
    assert [len(f.data) for f in client.frames if f.opcode == Opcode.TEXT] == [60_000] * 70
    assert protocol.transport.is_reading()
    client.close()


@pytest.mark.parametrize("opcode", [Opcode.PING, Opcode.PONG])
def test_control_frames_over_the_budget_close_with_1008(server: tuple[uvicorn.Server, int, Traces],
                                                        opcode: Opcode) -> None:
    """A burst of 200 pings (or unsolicited pongs) at once: the budget's 60 pings are answered, the next 60 are
    refused and the connection is closed with 1008 (the client sends nothing more, so it reads the close frame)."""
    _, port, traces = server
    table, _ = create_table(port)
    client = RawClient(port, f"/ws/tables/{table}")
    client.sock.sendall(Frame(opcode, b"x").serialize(mask=True) * 200)
    client.read_until_closed(10)
    client.close()
    assert client.close_code() == 1008
    answered = messages.RATE_BURST if opcode == Opcode.PING else 0  # and one more per 33 ms the burst took
    assert answered <= client.count(Opcode.PONG) <= answered + 3 * (opcode == Opcode.PING)
    assert not traces.records, [r.getMessage() for r in traces.records]


def test_pings_within_the_budget_are_answered(server: tuple[uvicorn.Server, int, Traces]) -> None:
    _, port, _ = server
    table, _ = create_table(port)
    client = RawClient(port, f"/ws/tables/{table}")
    client.sock.sendall(PING * 20)
    deadline = time.monotonic() + 10
    while client.count(Opcode.PONG) < 20:
        assert time.monotonic() < deadline, f"{client.count(Opcode.PONG)} of 20 pongs"
        client._read(65536)
    client.send_text(json.dumps({"type": "hello", "token": None}).encode())
    while not any(frame.opcode == Opcode.TEXT and b"welcome" in frame.data for frame in client.frames):
        client._read(65536)
    client.close()


@pytest.mark.parametrize(("frames", "code"), [
    ([Frame(Opcode.TEXT, b'{"type": "ping", "t": "\xff\xfe"}').serialize(mask=True)], 1007),
    ([Frame(Opcode.TEXT, b'{"type": "ping", "t": "\xe2\x82', fin=False).serialize(mask=True),
      Frame(Opcode.CONT, b'"}').serialize(mask=True)], 1007),  # a character cut between two frames, never ended
    ([Frame(Opcode.TEXT, b'{"type": "resync"}').serialize(mask=False)], 1002),  # a client's frame must be masked
    ([Frame(Opcode.TEXT, b"[" * (17 * 1024)).serialize(mask=True)], 1009),  # over ws_max_size (16 KiB)
    ([Frame(Opcode.CONT, b"{}").serialize(mask=True)], 1002),  # a continuation of nothing
])
def test_a_protocol_error_closes_with_its_code_and_no_traceback(server: tuple[uvicorn.Server, int, Traces],
                                                                 frames: list[bytes], code: int) -> None:
    _, port, traces = server
    table, _ = create_table(port)
    client = RawClient(port, f"/ws/tables/{table}")
    client.sock.sendall(b"".join(frames))
    client.read_until_closed(10)
    client.close()
    assert client.close_code() == code
    # the server still serves
    with connect(f"ws://127.0.0.1:{port}/ws/tables/{table}", compression=None) as ws:
        ws.send(json.dumps({"type": "hello", "token": None}))
        assert json.loads(ws.recv(timeout=10))["type"] == "welcome"
    assert not traces.records, [r.getMessage() for r in traces.records]
