"""The play WebSocket ``/ws/tables/{id}`` (``docs/protocol.md``, "WebSocket").

One reader loop per connection validates each message (size, rate, shape) and hands actions to the table's owner;
one writer task sends what the owner queued for this connection. A bad message gets an ``error`` (or, for an
action, a ``reject``) and the connection stays open.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

from starlette.websockets import WebSocket, WebSocketDisconnect

from cardtable.server.core import limits, messages
from cardtable.server.core.addresses import client_address
from cardtable.server.core.errors import RECONNECT_CODE, TableError, refusal_message
from cardtable.server.core.socket_extension import connection_budget
from cardtable.server.lobby.manager import Manager
from cardtable.server.players.names import has_control
from cardtable.server.table.actions import QueuedAction
from cardtable.server.table.connections import Connection, write_outbox
from cardtable.server.table.owner import Table

FLUSH_TIMEOUT_S = 2.0
"""Seconds the writer of a connection the server closes has to send what is queued and the close frame."""


async def table_socket(websocket: WebSocket, table_id: str) -> None:
    """Serve one connection to table ``table_id`` until it closes. With several processes (``server/cluster/member.py``)
    a table nobody owns is taken here, and a connection to a table owned by another process is relayed to it."""
    manager: Manager = websocket.app.state.manager
    settings = manager.settings
    address = client_address(websocket)
    counted: str | None = None
    redis_away = False
    if manager.cluster is not None:  # counted over every process, before the client sees the socket open
        try:
            counted = await manager.cluster.limits.open_socket(address, settings.max_sockets_per_address)
        except Exception:
            redis_away = True
    try:
        await websocket.accept()
    except BaseException:  # the client went away before the socket opened: stop counting it
        if counted is not None and manager.cluster is not None:
            with contextlib.suppress(Exception):
                await manager.cluster.limits.close_socket(counted)
        raise
    if redis_away:  # Redis away for a moment: the client reconnects
        await websocket.close(code=RECONNECT_CODE)
        return
    if counted is None and (manager.cluster is not None
                            or manager.sockets[address] >= settings.max_sockets_per_address):
        limit = settings.max_sockets_per_address
        await websocket.send_text(messages.encode(refusal_message(
            "error", f"too many connections from your address: at most {limit}", "connection.server_limit",
            {"limit": limit})))
        await websocket.close(code=1008)
        return
    manager.sockets[address] += 1
    try:
        table = manager.tables.get(table_id)
        if table is None and manager.cluster is None and not has_control(table_id):  # a waiting turn-based table
            try:
                table = await manager.load_waiting(table_id)
            except Exception:  # the database away for a moment: the client reconnects
                await websocket.close(code=RECONNECT_CODE)
                return
        if table is None and manager.cluster is not None and not has_control(table_id):  # no table's id has one
            try:
                where = await manager.cluster.locate(table_id)
            except Exception:  # Redis or the database away for a moment: the client reconnects
                await websocket.close(code=RECONNECT_CODE)
                return
            if isinstance(where, str):
                await manager.cluster.relay(websocket, table_id, where, address)
                return
            table = where
        await serve_connection(manager, table, websocket, address, table_id)
    finally:
        manager.sockets[address] -= 1
        if manager.sockets[address] <= 0:
            del manager.sockets[address]
        if counted is not None and manager.cluster is not None:
            with contextlib.suppress(Exception):
                await manager.cluster.limits.close_socket(counted)


async def serve_connection(manager: Manager, table: Table | None, websocket: WebSocket, address: str,
                           table_id: str = "") -> None:
    """Serve one accepted connection from ``address`` to ``table`` (``None``: unknown) until it closes:
    ``websocket`` is Starlette's, or, on the owner, a relayed connection's ``OwnerSide`` (``server/cluster/relay.py``)."""
    if table is None or table.broken:
        if table is None:
            error = refusal_message("error", f"no table {table_id!r}", "table.not_found", {"table": table_id})
        else:
            error = refusal_message("error", table.broken or "", "table.broken", {"detail": table.broken or ""})
        await websocket.send_text(messages.encode(error))
        await websocket.close(code=4404)
        return
    settings = manager.settings
    connection = Connection(address=address, max_outbox=settings.max_outbox)
    writer = asyncio.create_task(write_outbox(websocket, connection))
    limiter = connection_budget(websocket) or limits.TokenBucket()  # shared with its control frames
    identified = False
    deadline = time.monotonic() + messages.HELLO_TIMEOUT_S
    try:
        while not connection.closed:
            if identified:
                received = await websocket.receive()
            else:
                try:
                    received = await asyncio.wait_for(websocket.receive(), max(0.0, deadline - time.monotonic()))
                except TimeoutError:
                    connection.send_message(refusal_message(
                        "error", f"no hello within {messages.HELLO_TIMEOUT_S:g} s: closing", "hello.timeout",
                        {"seconds": messages.HELLO_TIMEOUT_S}))
                    connection.close()
                    break
            if received["type"] == "websocket.disconnect":
                break
            data = received.get("text")
            if data is None:
                data = received.get("bytes") or b""
            if not limiter.allow():
                connection.send_message(refusal_message(
                    "error", f"too many messages: at most {messages.RATE_PER_SECOND:g} a second",
                    "message.rate_limited", {"rate": messages.RATE_PER_SECOND}))
                continue
            try:
                message = messages.decode(data)
            except messages.MessageError as error:
                connection.send_message(refusal_message("error", str(error), error.code, error.params))
                continue
            if isinstance(message, messages.Ping):
                connection.send_message({"type": "pong", "t": message.t, "server_ms": time.time() * 1000.0})
                if message.rtt is not None and table.gate is not None and identified:
                    table.gate.observe(connection, message.rtt)  # the delay estimate ("Fairness")
            elif isinstance(message, messages.Hello):
                if identified:
                    connection.send_message(refusal_message(
                        "error", "hello was already said on this connection", "hello.repeated"))
                    continue
                try:
                    await manager.hello(table, connection, message.token)
                except TableError as error:
                    code = "hello.bad_token" if error.code == "token.bad" else error.code
                    connection.send_message(refusal_message("error", str(error), code, error.params))
                    # refused and closed: over a connection cap, the table moved, or a spectator of a daily table
                    # while its day lasts (server/lobby/daily_private.py)
                    if error.status in (429, 503) or error.code == "daily.private":
                        if error.status == 503:
                            connection.close_code = RECONNECT_CODE  # reconnect: another process has the table
                        connection.close()
                        break
                    continue
                identified = True
            elif not identified:
                connection.send_message(refusal_message("error", "say hello first", "hello.missing"))
            elif isinstance(message, messages.Resync):
                table.submit_call(_snapshot(table, connection))
            elif isinstance(message, messages.Ready):
                if connection.seat is None:
                    connection.send_message(refusal_message(
                        "error", "a spectator cannot act: join a seat first", "action.spectator"))
                    continue
                table.submit_call(_ready(table, connection))
            elif isinstance(message, messages.React):  # shown to the table, never stored (server/table/reactions.py)
                table.reactions.react(connection, message.reaction)
            elif isinstance(message, messages.ActionMessage):
                if connection.seat is None:
                    connection.send_message({**refusal_message(
                        "reject", "a spectator cannot act: join a seat first", "action.spectator"), "seq": message.seq})
                    continue
                table.submit_action(QueuedAction(connection.seat, message.action, connection=connection, seq=message.seq))
    except WebSocketDisconnect:
        pass
    finally:
        if identified and not table.broken:
            await manager.goodbye(table, connection)
        # A connection closed by the server (no hello in time, over a cap, dropped) gets what was queued for it
        # and a close frame: the writer has a moment to flush before it is cancelled.
        flush = connection.closed
        connection.close()
        if flush:
            with contextlib.suppress(TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(writer), FLUSH_TIMEOUT_S)
        writer.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await writer


def _ready(table: Table, connection: Connection) -> Callable[[], Awaitable[None]]:
    async def go() -> None:
        if connection.seat is not None:  # still seated when the owner gets to it
            table.press_ready(connection.seat)

    return go


def _snapshot(table: Table, connection: Connection) -> Callable[[], Awaitable[None]]:
    async def go() -> None:
        table.send_snapshot(connection)

    return go
