"""A connection as a table sees it (:class:`Connection`: its seat, its address and its outbox) and the writer task that
drains an outbox into a WebSocket, for direct and relayed connections alike (``docs/architecture.md``, "The table
server")."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any, cast

from starlette.websockets import WebSocket

from cardtable.server.core import messages
from cardtable.server.core.socket_extension import WriteTextsNow, burst_sender, direct_writer

DEFAULT_MAX_OUTBOX = 500
"""Messages waiting for a slow connection before it is dropped (``Settings.max_outbox``)."""


class Outbox:
    """A connection's queue of encoded messages (``None``: close), for one reader (its writer task): an
    ``asyncio.Queue`` without the bookkeeping a queue with many getters and putters needs; the owner queues about
    four messages per action for every connection, so this is on the hot path.

    Same interface as the queue's part in use: :meth:`put_nowait`, :meth:`get`, :meth:`get_nowait`
    (``asyncio.QueueEmpty`` when empty), :meth:`qsize`, :meth:`empty`.

    With a :attr:`direct` writer (the connection's ``write_texts_now``, ``server/edge/ws_protocol.py``), texts
    queued while the reader waits are not handed to it: they are written by :meth:`flush`, which a table's owner
    calls once it has queued everything of a step (so an ``ack`` leaves in the step that made it, with its
    updates, in one write), and which a callback runs right after the current step otherwise. What the direct
    writer cannot take now (the socket's buffer full, the connection closing) and a close go to the reader as
    before, so the messages keep their order.
    """

    __slots__ = ("_flush_soon", "_items", "_waiter", "direct")

    def __init__(self) -> None:
        self._items: deque[str | None] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._flush_soon = False
        self.direct: WriteTextsNow | None = None
        """Writes texts at once when the connection can take them (``True``), else nothing (``False``)."""

    def qsize(self) -> int:
        """Messages waiting."""
        return len(self._items)

    def empty(self) -> bool:
        """Whether nothing waits."""
        return not self._items

    def put_nowait(self, item: str | None) -> None:
        """Queue ``item``; wake the reader, or, when it waits and a :attr:`direct` writer is set, have
        :meth:`flush` write it right after the current step (unless the owner flushes first)."""
        self._items.append(item)
        waiter = self._waiter
        if waiter is None:
            return
        if item is not None and self.direct is not None:
            if not self._flush_soon:
                self._flush_soon = True
                waiter.get_loop().call_soon(self.flush)
            return
        self._wake()

    def flush(self) -> None:
        """Write what waits through the :attr:`direct` writer, in one write, if the reader is waiting (so that no
        write of its own is under way); if the writer cannot take it, or a close waits, wake the reader instead."""
        self._flush_soon = False
        if self._waiter is None or not self._items:
            return
        direct = self.direct
        if direct is not None and None not in self._items:
            try:
                written = direct(cast("deque[str]", self._items))
            except Exception:  # the reader meets it again and ends: the table's owner never fails on a connection
                written = False
            if written:
                self._items.clear()
                return
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def get_nowait(self) -> str | None:
        """The oldest item; ``asyncio.QueueEmpty`` when nothing waits."""
        if not self._items:
            raise asyncio.QueueEmpty
        return self._items.popleft()

    async def get(self) -> str | None:
        """The oldest item, waiting for one (one reader at a time)."""
        while not self._items:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                if self._waiter is waiter:
                    self._waiter = None
        return self._items.popleft()

    def clear(self) -> None:
        """Drop what waits."""
        self._items.clear()


class Connection:
    """One WebSocket connection as the table sees it: its ``seat`` (``None``: spectator), its client ``address``
    and its outbox.

    The connection's writer task drains :attr:`outbox`; ``None`` in the outbox closes the connection. Queueing
    never waits: a connection with ``max_outbox`` messages not yet written is a slow reader and is dropped (what is
    queued is discarded, then it is closed), so one slow reader never holds up the table or the others.
    """

    __slots__ = ("address", "close_code", "closed", "max_outbox", "outbox", "seat")

    def __init__(self, seat: int | None = None, address: str = "?", max_outbox: int = DEFAULT_MAX_OUTBOX) -> None:
        self.seat = seat
        self.address = address
        self.max_outbox = max_outbox
        self.outbox = Outbox()
        self.closed = False
        self.close_code = 1000
        """The WebSocket close code the writer closes with (1012 when the table moved: reconnect)."""

    def send(self, text: str) -> None:
        """Queue one encoded message; a connection that falls ``max_outbox`` messages behind is dropped."""
        if self.closed:
            return
        if self.outbox.qsize() >= self.max_outbox:
            self.outbox.clear()
            self.close()
            return
        self.outbox.put_nowait(text)

    def send_message(self, message: dict[str, Any]) -> None:
        """Encode and queue one message."""
        self.send(messages.encode(message))

    def close(self) -> None:
        """Ask the writer to close the connection (after what is already queued)."""
        if not self.closed:
            self.closed = True
            self.outbox.put_nowait(None)


async def write_outbox(websocket: WebSocket, connection: Connection) -> None:
    """Send what the owner queued for ``connection``, and close the socket at the ``None``. Everything queued together
    (an ``ack`` and its ``update``, a group commit's updates) goes in one write when the server offers it
    (``server/edge/ws_protocol.py``), else one message at a time, without waiting for the loop in between."""
    outbox = connection.outbox
    send_texts = burst_sender(websocket)
    send_text = websocket.send_text
    outbox.direct = direct_writer(websocket)
    with contextlib.suppress(Exception):
        while True:
            text = await outbox.get()
            burst: list[str] = []
            while text is not None:
                burst.append(text)
                if outbox.empty():
                    break
                text = outbox.get_nowait()
            if burst:
                if send_texts is not None:
                    await send_texts(burst)
                else:
                    for each in burst:
                        await send_text(each)
            if text is None:
                await websocket.close(code=connection.close_code)
                return
