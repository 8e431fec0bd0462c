"""This process as one of a service of several processes on one PostgreSQL and one Redis (``docs/architecture.md``,
"Several server processes"): its :class:`Cluster`, which puts the parts together, starts them, hands the tables
over on SIGTERM and closes.

Each process started with ``--redis`` builds one :class:`Cluster`. It

- owns tables through Redis leases fenced at the database (:class:`~.ownership.Ownership`: taking, keeping and
  letting go of tables, ``server/cluster/ownership.py``);
- relays a connection to a table owned elsewhere through Redis pub/sub (``server/cluster/relay.py``): the client's
  frames go to the owner, which serves them with the same connection code a direct connection runs
  (``server/edge/ws.py``), and the owner's messages come back the same way. The client protocol does not change;
- forwards lobby operations (join, leave, start, Play now's join) on a table owned elsewhere to its owner, and
  serialises Play now over all processes with a Redis lock (``server/cluster/calls.py``);
- on SIGTERM (:meth:`Cluster.hand_over`) stops taking tables, stops its tables, releases their leases and
  announces them on ``ct:released`` so another process takes each at once, and closes their connections with
  :data:`RECONNECT_CODE` (the web client reconnects on any close it did not ask for).

Every message between processes is a map ``{"op": ...}`` carried by the process's :class:`~.mailbox.Mailbox`
(what one loop turn queued for another process travels as one pub/sub message).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from redis.asyncio import Redis

from cardtable.server.cluster.calls import Calls
from cardtable.server.cluster.lease import LeaseKeeper
from cardtable.server.cluster.mailbox import Mailbox
from cardtable.server.cluster.ownership import RELEASED, ClusterSettings, Ownership
from cardtable.server.cluster.redis_clients import (
    ALIVE_PREFIX,
    CONTROL_CONNECTIONS,
    REDIS_CONNECTIONS,
    new_process_id,
    redis_client,
)
from cardtable.server.cluster.relay import Relays
from cardtable.server.core.limits import SharedLimits
from cardtable.server.storage.store import Store

if TYPE_CHECKING:
    from starlette.websockets import WebSocket

    from cardtable.server.cluster.host import TableHost

log = logging.getLogger("cardtable.server.cluster.member")


class Cluster(Ownership):
    """This process's part in a service of several processes: the tables it owns (:class:`Ownership`, whose
    methods it has), its :attr:`mailbox`, :attr:`relays` and :attr:`calls`. Build with :meth:`open`, then
    :meth:`attach` the manager; :meth:`hand_over` on SIGTERM, :meth:`close` at the end."""

    def __init__(self, redis: Redis, store: Store, settings: ClusterSettings, process: str,
                 control: Redis | None = None) -> None:
        control = control or redis
        mailbox = Mailbox(redis, control, process, self._lost)
        super().__init__(redis, control, store, settings, process, Relays(mailbox),
                         SharedLimits(redis, settings.lease_ms * 2, control))
        self.mailbox = mailbox
        """Messages to and from the other processes (``server/cluster/mailbox.py``)."""
        self.calls = Calls(mailbox, redis, settings.call_timeout_s, lambda: self.draining)
        """Lobby operations on tables owned elsewhere, and this process's answers to the others'
        (``server/cluster/calls.py``)."""
        self.mailbox.channels[RELEASED] = self._on_released
        self._tasks: list[asyncio.Task[None]] = []

    @classmethod
    async def open(cls, url: str, store: Store, settings: ClusterSettings | None = None) -> Cluster:
        """Connect to Redis at ``url`` (``redis://HOST:PORT/DB``); ``ConnectionError`` if it does not answer."""
        redis, control = redis_client(url, REDIS_CONNECTIONS), redis_client(url, CONTROL_CONNECTIONS)
        await redis.ping()
        cluster = cls(redis, store, settings or ClusterSettings(), new_process_id(), control)
        # Alive from the start, not only from the first renewal: an owner that sees a relayed connection from a
        # process not (yet) marked alive ends it as coming from a dead process.
        await redis.set(ALIVE_PREFIX + cluster.process, b"1", px=cluster.settings.lease_ms)
        cluster.keeper = LeaseKeeper(url, cluster.process, cluster.settings.lease_ms, cluster.owned,
                                     ALIVE_PREFIX + cluster.process, cluster._leases_lost, asyncio.get_running_loop())
        return cluster

    def attach(self, manager: TableHost) -> None:
        """Start serving: the pub/sub listener, the publisher, lease renewal and the sweep for unowned tables."""
        self.manager = manager
        self.relays.host = manager
        self.calls.host = manager
        for coro, name in ((self.mailbox.publish_loop(), "publish"), (self.mailbox.listen_loop(), "listen"),
                           (self._renew_loop(), "renew"), (self._sweep_loop(), "sweep"), (self._beat_loop(), "beat")):
            self._tasks.append(asyncio.create_task(coro, name=f"cardtable-cluster-{name}"))
        if self.keeper is not None:
            self.keeper.start()

    async def close(self) -> None:
        """Hand the tables over (if not done yet), stop the background tasks, disconnect from Redis."""
        await self.hand_over()
        for _ in range(100):  # let the publisher send the last messages (2 s at most)
            if self.mailbox.idle():
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.05)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.keeper is not None:
            await asyncio.to_thread(self.keeper.stop)
        with contextlib.suppress(Exception):
            await self.redis.delete(ALIVE_PREFIX + self.process)
        await self.redis.aclose()
        if self.control is not self.redis:
            await self.control.aclose()

    # -- messages between processes ------------------------------------------------------------------

    def send(self, process: str, message: dict[str, Any]) -> None:
        """Queue ``message`` for ``process`` (published in order; never waits)."""
        self.mailbox.send(process, message)

    def _lost(self) -> None:
        """Messages between processes may have been lost: every relayed connection starts again."""
        self.relays.reset()

    # -- relayed connections -------------------------------------------------------------------------

    async def relay(self, websocket: WebSocket, table_id: str, owner: str, address: str) -> None:
        """Serve a client connection to ``table_id``, owned by process ``owner``, by relaying it both ways until
        either end closes (``Relays.relay``); a relay whose owner changes is closed with :data:`RECONNECT_CODE`."""
        manager = self.manager
        assert manager is not None
        await self.relays.relay(websocket, table_id, owner, address, manager.settings.max_outbox)


    # -- calls between processes ----------------------------------------------------------------------

    async def call(self, owner: str, table_id: str, method: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run lobby operation ``method`` (``join``, ``leave``, ``start``, ``play_join``) on ``table_id`` at its
        owner ``owner`` and return its answer; its ``TableError`` is raised here, 503 when it does not answer
        (``Calls.call``)."""
        return await self.calls.call(owner, table_id, method, args)

    async def lobby(self, table_ids: list[str]) -> dict[str, dict[str, Any]]:
        """``TABLE`` of each of ``table_ids`` as its owner last published it (those it published:
        ``Calls.lobby``)."""
        return await self.calls.lobby(table_ids)

    def lock(self, name: str) -> contextlib.AbstractAsyncContextManager[None]:
        """A lock over all processes (Redis, expiring after 10 s should its holder die); ``TableError`` 503 when
        it cannot be had within 15 s (``Calls.lock``)."""
        return self.calls.lock(name)

    # -- stopping ------------------------------------------------------------------------------------

    async def hand_over(self) -> None:
        """Stop taking tables and give every table up at once: stop it, release its lease, name it on
        :data:`RELEASED` (another process takes it), close its connections with :data:`RECONNECT_CODE`, and close
        the relayed connections this process holds (their clients reconnect). Idempotent."""
        if self.draining:
            return
        self.draining = True
        self.relays.draining = True
        manager = self.manager
        if manager is None:
            return
        released: list[str] = []
        for table_id in list(self.owned):
            table = manager.tables.get(table_id)
            if table is None:
                continue
            await self.drop(table)
            released.append(table_id)
        for table_id in released:
            with contextlib.suppress(Exception):
                await self.redis.publish(RELEASED, table_id)
        self.relays.reconnect()
        log.info("handed over %d tables", len(released))
