"""uvicorn's WebSocket protocol with a burst send: several text messages, one write to the socket.

A table's owner queues several messages for a connection at once (an ``ack`` and the ``update`` it caused, the
updates of a group commit), and the ASGI interface sends one message per ``send`` call, which uvicorn writes to the
socket at once: one system call, and one pass through Starlette's and uvicorn's layers, per message. This protocol
(``uvicorn.Config(ws=BurstWebSockets)``, :func:`cardtable.server.app.uvicorn_config`) is uvicorn's own
(websockets' sans-I/O protocol) with one more ASGI extension in the connection's scope, :data:`EXTENSION`:
``scope["extensions"]["cardtable.send_texts"]["send_texts"]`` is a coroutine function that frames each text as one
text message (the negotiated extensions, such as compression, apply to each as usual) and writes them all at once.
The messages a client receives are the same, in the same order; ``server/ws.py`` uses it when the scope has it and
sends one message at a time otherwise (another server, a relayed connection).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState
from websockets.http11 import Request

EXTENSION = "cardtable.send_texts"
"""The ASGI scope extension's name: ``{"send_texts": coroutine function (texts) -> None}``."""

SendTexts = Callable[[Sequence[str]], Awaitable[None]]


class BurstWebSockets(WebSocketsSansIOProtocol):
    """uvicorn's ``websockets-sansio`` protocol, plus :meth:`send_texts` offered in the scope (:data:`EXTENSION`)."""

    def handle_connect(self, event: Request) -> None:
        """Accept the handshake as uvicorn does; the scope it builds offers :meth:`send_texts` (the application
        task it starts has not run yet)."""
        super().handle_connect(event)
        scope: Any = getattr(self, "scope", None)  # only made for a handshake that is going on
        if scope is not None:
            scope["extensions"][EXTENSION] = {"send_texts": self.send_texts}

    def connection_lost(self, exc: Exception | None) -> None:
        """As uvicorn does, then take the offer out of the scope: it holds this protocol, which holds the scope, a
        reference cycle that would otherwise outlive the connection (``tests/test_server_memory.py``)."""
        super().connection_lost(exc)
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
        if not self.handshake_complete or self.close_sent or self.initial_response is not None:
            raise RuntimeError("send_texts: the WebSocket is not open for messages")
        try:
            for text in texts:
                self.conn.send_text(text.encode())
        except InvalidState:
            raise ClientDisconnected() from None
        self.transport.write(b"".join(self.conn.data_to_send()))


def burst_sender(websocket: Any) -> SendTexts | None:
    """The connection's :meth:`BurstWebSockets.send_texts` when its server offers it (``websocket`` is
    Starlette's ``WebSocket``), else ``None`` (another protocol, a relayed connection without a scope)."""
    scope = getattr(websocket, "scope", None)
    if not isinstance(scope, dict):
        return None
    offer = (scope.get("extensions") or {}).get(EXTENSION)
    return None if offer is None else offer.get("send_texts")
