"""Calls between processes for the lobby (``docs/architecture.md``, "Several server processes"): a lobby operation
(join, leave, start, Play now's join) on a table owned elsewhere runs at its owner (``call`` and ``reply``
messages on the :class:`~cardtable.server.cluster.mailbox.Mailbox`), the lobby reads the details of tables owned
elsewhere as their owners published them (:data:`LOBBY`), and Play now is serialised over all processes by a Redis
lock."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import msgspec
from redis.asyncio import Redis

from cardtable.server.cluster.mailbox import Mailbox
from cardtable.server.core.errors import TableError

if TYPE_CHECKING:
    from cardtable.server.cluster.host import TableHost

log = logging.getLogger("cardtable.server.cluster.calls")

LOBBY = "ct:lobby"
"""Hash of table id -> ``TABLE`` (JSON) as its owner last published it (with every lease renewal): the lobby of
every process shows live details (who is connected, when a table starts by itself) of tables owned elsewhere."""


class RemoteTable:
    """A table owned by another process, as a lobby answer needs it: its ``id`` and ``TABLE`` (:meth:`to_dict`)."""

    remote = True

    def __init__(self, table: dict[str, Any]) -> None:
        self.id: str = table["id"]
        self.game: str = table["game"]
        self._table = table

    def to_dict(self) -> dict[str, Any]:
        """``TABLE`` as the owner sent it."""
        return self._table


class Calls:
    """This process's calls to the others and its answers to theirs. ``mailbox``: how messages travel;
    ``redis``: the client for the lobby's reads and the locks; ``timeout_s``: how long a call may take before it
    is answered 503; ``draining``: whether this process is stopping (a call that arrives then is answered 503: the
    table moves). Set :attr:`host` (this process's lobby) before the first call arrives."""

    def __init__(self, mailbox: Mailbox, redis: Redis, timeout_s: float, draining: Callable[[], bool]) -> None:
        self.mailbox = mailbox
        self.redis = redis
        self.timeout_s = timeout_s
        self.draining = draining
        self.host: TableHost | None = None
        """This process's lobby: it runs the calls that arrive."""
        self.waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        """Call id -> the future its reply resolves."""
        mailbox.handlers.update(call=self._call_in, reply=self._reply)

    async def call(self, owner: str, table_id: str, method: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run lobby operation ``method`` (``join``, ``leave``, ``start``, ``play_join``) on ``table_id`` at its
        owner ``owner`` and return its answer; its ``TableError`` is raised here, 503 when it does not answer."""
        call_id = uuid.uuid4().hex
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[call_id] = future
        self.mailbox.send(owner, {"op": "call", "id": call_id, "from": self.mailbox.process, "table": table_id,
                                  "method": method, "args": args})
        try:
            reply = await asyncio.wait_for(future, self.timeout_s)
        except TimeoutError:
            raise TableError(503, "http.error", "the server process holding this table did not answer: try again",
                             {"status": 503}) from None
        finally:
            self.waiting.pop(call_id, None)
        if not reply.get("ok"):
            raise TableError(int(reply["status"]), str(reply["code"]), str(reply["reason"]), reply.get("params"))
        result: dict[str, Any] = reply["result"]
        return result

    def _call_in(self, body: dict[str, Any]) -> None:
        asyncio.get_running_loop().create_task(self._answer_call(body))

    def _reply(self, body: dict[str, Any]) -> None:
        future = self.waiting.pop(str(body.get("id")), None)
        if future is not None and not future.done():
            future.set_result(body)

    async def _answer_call(self, body: dict[str, Any]) -> None:
        host = self.host
        assert host is not None
        reply: dict[str, Any] = {"op": "reply", "id": body.get("id")}
        try:
            table_id, args = str(body["table"]), dict(body.get("args") or {})
            if table_id not in host.tables or self.draining():
                raise TableError(503, "http.error", "the table moved to another server process: try again",
                                 {"status": 503})
            reply["result"] = await host.run_local(str(body["method"]), table_id, args)
            reply["ok"] = True
        except TableError as error:
            reply.update(ok=False, status=error.status, code=error.code, reason=str(error), params=error.params)
        except Exception as error:
            log.exception("a forwarded %s failed", body.get("method"))
            reply.update(ok=False, status=503, code="http.error", reason=f"the operation failed: {error}",
                         params={"status": 503})
        self.mailbox.send(str(body["from"]), reply)

    async def lobby(self, table_ids: list[str]) -> dict[str, dict[str, Any]]:
        """``TABLE`` of each of ``table_ids`` as its owner last published it (those it published)."""
        if not table_ids:
            return {}
        try:
            values = await self.redis.hmget(LOBBY, table_ids)
        except Exception:  # Redis away: the database's view will do
            return {}
        return {t: msgspec.json.decode(v) for t, v in zip(table_ids, values, strict=True) if v is not None}

    @contextlib.asynccontextmanager
    async def lock(self, name: str) -> AsyncIterator[None]:
        """A lock over all processes (Redis, expiring after 10 s should its holder die); ``TableError`` 503 when
        it cannot be had within 15 s."""
        lock = self.redis.lock(f"ct:lock:{name}", timeout=10, blocking_timeout=15)
        try:
            acquired = await lock.acquire()
        except Exception:  # Redis away
            acquired = False
        if not acquired:
            raise TableError(503, "http.error", "the service is busy: try again", {"status": 503})
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                await lock.release()
