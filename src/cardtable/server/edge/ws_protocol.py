"""uvicorn's WebSocket protocol with a burst send: several text messages, one write to the socket.

A table's owner queues several messages for a connection at once (an ``ack`` and the ``update`` it caused, the
updates of a group commit), and the ASGI interface sends one message per ``send`` call, which uvicorn writes to the
socket at once: one system call, and one pass through Starlette's and uvicorn's layers, per message. This protocol
(``uvicorn.Config(ws=BurstWebSockets)``, :func:`cardtable.server.edge.app.uvicorn_config`) is uvicorn's own
(websockets' sans-I/O protocol) with one more ASGI extension in the connection's scope, :data:`EXTENSION`:
``scope["extensions"]["cardtable.send_texts"]["send_texts"]`` is a coroutine function that frames each text as one
text message (the negotiated extensions, such as compression, apply to each as usual) and writes them all at once;
``write_texts_now`` does the same at once, without waiting, when the connection can take it (else it answers
``False`` and writes nothing), so that a table's owner writes an ``ack`` in the step that made it. The messages a
client receives are the same, in the same order; ``server/table/connections.py`` uses them when the scope has them
and sends one message at a time otherwise (another server, a relayed connection).

It also holds each connection to its limits below the messages (``docs/protocol.md``, "Limits"):

- Control frames take from the connection's message budget (:class:`cardtable.server.core.limits.TokenBucket`, offered
  in the scope as ``budget`` and used by ``server/edge/ws.py`` for the messages too): a ping within the budget is
  answered with a pong; one over it is not (RFC 6455, 5.5.3, lets an endpoint answer only the latest ping); an
  unsolicited pong takes a token and is ignored (the pong to the server's own keepalive ping is free). After
  :data:`MAX_REFUSED_CONTROL_FRAMES` control frames refused in a row, the connection is closed with 1008.
- The bytes waiting to be written to a connection are bounded: past :data:`WRITE_BUFFER_HIGH_BYTES` the transport
  pauses writing (``send`` waits, as in uvicorn) and this protocol stops reading from the client too, until the
  buffer drains below :data:`WRITE_BUFFER_LOW_BYTES`; a client that never reads can only fill the kernel's buffers.
- A text message that is not UTF-8 closes the connection with 1007 (and the parser's protocol errors with theirs:
  1002, 1009), logged in one line, without a traceback.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from uvicorn._types import ASGIReceiveEvent, ASGISendEvent
from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState, ProtocolError
from websockets.frames import CloseCode, Frame, Opcode
from websockets.http11 import Request
from websockets.server import ServerProtocol

from cardtable.server.core.limits import TokenBucket
from cardtable.server.core.messages import RATE_BURST
from cardtable.server.core.socket_extension import EXTENSION

WRITE_BUFFER_HIGH_BYTES = 64 * 1024
"""Bytes waiting to be written to a connection past which the server stops writing to it (``send`` waits) and
stops reading from it (asyncio's default high-water mark, named)."""

WRITE_BUFFER_LOW_BYTES = 16 * 1024
"""Bytes waiting to be written below which writing and reading resume."""

MAX_REFUSED_CONTROL_FRAMES = int(RATE_BURST)
"""Control frames over the connection's budget in a row after which it is closed with :data:`POLICY_CLOSE_CODE`."""

POLICY_CLOSE_CODE = int(CloseCode.POLICY_VIOLATION)
"""1008: the close code of a connection that keeps sending control frames over its budget."""

ABORT_AFTER_CLOSE_S = 15.0
"""Seconds a connection the server closed has to take its last bytes (and the close frame) before its socket is
dropped without them: a client that never reads holds nothing longer."""


class BudgetedServerProtocol(ServerProtocol):
    """websockets' sans-I/O server protocol (``kwargs`` are its own) taking a token from ``budget`` for each ping or
    pong it receives, except the pong to the server's own keepalive ping (:attr:`expected_pong`): a ping refused
    gets no pong, a pong refused is dropped, and after :data:`MAX_REFUSED_CONTROL_FRAMES` refused in a row the
    connection fails with :data:`POLICY_CLOSE_CODE` (the parser's way: a ``ProtocolError`` after the close frame, so
    ``parser_exc`` is set and the caller closes the socket)."""

    def __init__(self, budget: TokenBucket, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.budget = budget
        self.expected_pong: bytes | None = None
        """The payload of the server's keepalive ping waiting for its pong (free), else ``None``."""
        self.refused_in_a_row = 0

    def allow(self, frame: Frame) -> bool:
        """Whether the control ``frame`` is within the budget (taking its token)."""
        if frame.opcode is Opcode.PONG and self.expected_pong is not None and bytes(frame.data) == self.expected_pong:
            self.expected_pong = None
            return True
        return self.budget.allow()

    def recv_frame(self, frame: Frame) -> None:
        """Take ``frame`` as websockets does, unless it is a control frame the budget refuses."""
        if frame.opcode is Opcode.PING or frame.opcode is Opcode.PONG:
            if not self.allow(frame):
                self.refused_in_a_row += 1
                if self.refused_in_a_row >= MAX_REFUSED_CONTROL_FRAMES:
                    self.fail(POLICY_CLOSE_CODE, "too many control frames")
                    raise ProtocolError(f"{self.refused_in_a_row} control frames over the budget in a row")
                return
            self.refused_in_a_row = 0
        super().recv_frame(frame)


class BurstWebSockets(WebSocketsSansIOProtocol):
    """uvicorn's ``websockets-sansio`` protocol, plus :meth:`send_texts` and the connection's message budget
    offered in the scope (:data:`EXTENSION`), control frames counted against that budget, a bounded write buffer
    and protocol errors closed without a traceback (see the module's docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.budget = TokenBucket()
        """The connection's message budget: its control frames here, its messages in ``server/edge/ws.py``."""
        self.write_paused = False
        self.abort_timer: asyncio.TimerHandle | None = None
        made = self.conn  # uvicorn's, configured from its Config: the same, counting control frames
        self.budgeted = BudgetedServerProtocol(
            self.budget, extensions=made.available_extensions,
            max_size=(made.max_message_size, made.max_fragment_size), logger=made.logger)
        self.conn = self.budgeted

    def send_keepalive_ping(self) -> None:
        """As uvicorn does; its pong will be free."""
        super().send_keepalive_ping()
        self.budgeted.expected_pong = self.pending_ping_payload

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """As uvicorn does, with the write buffer's limits (:data:`WRITE_BUFFER_HIGH_BYTES`)."""
        super().connection_made(transport)
        self.transport.set_write_buffer_limits(high=WRITE_BUFFER_HIGH_BYTES, low=WRITE_BUFFER_LOW_BYTES)

    def pause_writing(self) -> None:
        """The write buffer is past its high-water mark: ``send`` waits (uvicorn) and nothing more is read."""
        super().pause_writing()
        self.write_paused = True
        self.transport.pause_reading()

    def resume_writing(self) -> None:
        """The write buffer drained: ``send`` goes on, and reading too unless the application has a message
        waiting (uvicorn's own pause)."""
        super().resume_writing()
        self.write_paused = False
        if not self.read_paused:
            self.transport.resume_reading()

    async def receive(self) -> ASGIReceiveEvent:
        """As uvicorn does (which resumes reading once the application took the waiting messages), reading staying
        paused while the write buffer is full."""
        message = await super().receive()
        if self.write_paused:
            self.transport.pause_reading()
        return message

    def send_receive_event_to_app(self) -> None:
        """Pass a whole message to the application as uvicorn does; a text message that is not UTF-8 fails the
        connection with 1007 and one line in the log (uvicorn logs a traceback)."""
        if self.curr_msg_data_type == "text" and not self.close_sent:
            data = self.frames[0] if len(self.frames) == 1 else b"".join(self.frames)
            if not data.isascii():
                try:
                    data.decode()
                except UnicodeDecodeError as error:
                    self.frames = []
                    self.conn.fail(CloseCode.INVALID_DATA, f"{error.reason} at position {error.start}")
                    self.handle_parser_exception()
                    return
        super().send_receive_event_to_app()

    def handle_parser_exception(self) -> None:
        """Close a connection whose frames broke the protocol or its limits, as uvicorn does, with one line in the
        log, and drop the socket if the client does not take the close in :data:`ABORT_AFTER_CLOSE_S`."""
        if self.logger.isEnabledFor(logging.INFO):
            sent = self.conn.close_sent
            self.logger.info("%s - WebSocket closed by the server (%s): %s", _client(self.client),
                             sent.code if sent else "-", sent.reason if sent else self.conn.parser_exc)
        super().handle_parser_exception()
        self.abort_later()

    def keepalive_timeout(self) -> None:
        """As uvicorn does (close with 1011), and drop the socket if the client does not take the close."""
        super().keepalive_timeout()
        self.abort_later()

    async def send(self, message: ASGISendEvent) -> None:
        """As uvicorn does; after a ``websocket.close``, the socket is dropped if the client takes neither the
        close frame nor what was before it within :data:`ABORT_AFTER_CLOSE_S`."""
        await super().send(message)
        if message["type"] == "websocket.close":
            self.abort_later()

    async def run_asgi(self) -> None:
        """As uvicorn does (the socket closed when the application returns), dropped if it never drains."""
        await super().run_asgi()
        self.abort_later()

    def abort_later(self) -> None:
        """Drop the socket in :data:`ABORT_AFTER_CLOSE_S` unless the connection is lost before (a closed transport
        with bytes a client never reads would otherwise hold them and the socket for good)."""
        if self.abort_timer is None and not self.disconnected and self.transport is not None:
            self.abort_timer = self.loop.call_later(ABORT_AFTER_CLOSE_S, self.transport.abort)

    def handle_connect(self, event: Request) -> None:
        """Accept the handshake as uvicorn does; the scope it builds offers :meth:`send_texts` and the budget (the
        application task it starts has not run yet)."""
        super().handle_connect(event)
        scope: Any = getattr(self, "scope", None)  # only made for a handshake that is going on
        if scope is not None:
            scope["extensions"][EXTENSION] = {"send_texts": self.send_texts, "write_texts_now": self.write_texts_now,
                                              "budget": self.budget}

    def connection_lost(self, exc: Exception | None) -> None:
        """As uvicorn does, then take the offer out of the scope: it holds this protocol, which holds the scope, a
        reference cycle that would otherwise outlive the connection (``tests/test_server_memory.py``)."""
        super().connection_lost(exc)
        if self.abort_timer is not None:
            self.abort_timer.cancel()
            self.abort_timer = None
        scope: Any = getattr(self, "scope", None)
        if scope is not None:
            scope["extensions"].pop(EXTENSION, None)

    async def send_texts(self, texts: Sequence[str]) -> None:
        """Send each of ``texts`` as one text message, in order, in one write to the socket. Waits while the
        socket's buffer is full (as ``send`` does); ``ClientDisconnected`` once the client has gone,
        ``RuntimeError`` before the handshake or after ``websocket.close``."""
        await self.writable.wait()
        if self.disconnected:
            raise ClientDisconnected()
        if not self._open_for_messages():
            raise RuntimeError("send_texts: the WebSocket is not open for messages")
        self._write_texts(texts)

    def write_texts_now(self, texts: Sequence[str]) -> bool:
        """Send ``texts`` as :meth:`send_texts` does, at once, without waiting for anything: ``True`` once written;
        ``False``, and nothing written, when :meth:`send_texts` would wait or fail (the write buffer full, the client
        gone, the WebSocket not open for messages). Lets a table's owner write its acks and updates in the step
        that made them (``server/table/connections.py``, ``Outbox.flush``)."""
        if not self.writable.is_set() or self.disconnected or not self._open_for_messages():
            return False
        try:
            self._write_texts(texts)
        except ClientDisconnected:
            return False
        return True

    def _open_for_messages(self) -> bool:
        """The handshake done, no HTTP response sent instead, no close sent."""
        return self.handshake_complete and not self.close_sent and self.initial_response is None

    def _write_texts(self, texts: Sequence[str]) -> None:
        try:
            for text in texts:
                self.conn.send_text(text.encode())
        except InvalidState:
            raise ClientDisconnected() from None
        self.transport.write(b"".join(self.conn.data_to_send()))


def _client(client: tuple[str, int] | None) -> str:
    return f"{client[0]}:{client[1]}" if client else "?"
