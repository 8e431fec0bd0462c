"""Several server processes on one PostgreSQL and one Redis (``docs/architecture.md``, "Several server processes").

Each process started with ``--redis`` builds one :class:`Cluster`. It

- owns tables through Redis leases (``server/cluster/lease.py``) fenced at the database (``Store.take``, ``Store.fences``):
  a table is taken on the first request for it that finds no owner, and by a periodic sweep (so tables of bots
  only, and clocks, resume after their owner died);
- renews its leases every third of the lease time from a thread of its own (``LeaseKeeper``: a slow turn of the
  event loop does not let them lapse, a loop stuck for good does); a lease it can no longer renew (expired while
  the process was paused, Redis restarted) drops the table here: nothing more is acknowledged for it, its
  connections are closed with :data:`RECONNECT_CODE`, and whichever process takes it next rebuilds it from its
  record;
- relays a connection to a table owned elsewhere through Redis pub/sub (``server/cluster/relay.py``): the client's
  frames go to the owner, which serves them with the same connection code a direct connection runs
  (``server/edge/ws.py``), and the owner's messages come back the same way. The client protocol does not change;
- forwards lobby operations (join, leave, start, Play now's join) on a table owned elsewhere to its owner, and
  serialises Play now over all processes with a Redis lock;
- on SIGTERM (:meth:`hand_over`) stops taking tables, stops its tables, releases their leases and announces them on
  ``ct:released`` so another process takes each at once, and closes their connections with
  :data:`RECONNECT_CODE` (the web client reconnects on any close it did not ask for).

Every message between processes is a map ``{"op": ...}`` carried by the process's :class:`~.relay.Mailbox`
(what one loop turn queued for another process travels as one pub/sub message).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from redis.asyncio import BlockingConnectionPool, Redis

from cardtable.server.cluster.lease import LeaseKeeper, Leases
from cardtable.server.cluster.relay import Mailbox, Relays
from cardtable.server.core.counters import SharedLimits
from cardtable.server.core.errors import RECONNECT_CODE, TableError
from cardtable.server.storage.store import Store
from cardtable.server.table.owner import Table
from cardtable.server.table.seat_accounts import restore_seat_accounts

if TYPE_CHECKING:
    from starlette.websockets import WebSocket

    from cardtable.server.cluster.host import TableHost

log = logging.getLogger("cardtable.server.cluster.ownership")

RELEASED = "ct:released"
"""Channel on which a stopping process names each table it let go, so another process takes it at once."""

LOBBY = "ct:lobby"
"""Hash of table id -> ``TABLE`` (JSON) as its owner last published it (with every lease renewal): the lobby of
every process shows live details (who is connected, when a table starts by itself) of tables owned elsewhere."""

LIVE = ("open", "playing")
"""The statuses of a table that some process should own."""

TAKE_CHUNK = 50
"""Most tables taken together (one lease script, one database transaction, one load of their records): a chunk
is taken well within a lease time, and its tables play as soon as it is done."""

REDIS_CONNECTIONS = 50
"""Connections to Redis one process opens at most for its requests (locating tables, counting sockets, relays'
lookups): more at once wait for a free one (5 s at most) rather than fail, as redis-py's default pool does past
its size (a burst of reconnecting clients used to make the publisher and the lease renewals fail too)."""

CONTROL_CONNECTIONS = 2
"""Connections of a process's own client for what must not wait behind requests: the lobby's view of its tables,
the shared counters. (The publisher has a connection of its own, with the same settings; the lease renewals a
thread and a connection of their own, ``LeaseKeeper``.)"""

ALIVE_PREFIX = "ct:alive:"
"""``ct:alive:{process}`` exists while the process runs (renewed with its leases)."""


def new_process_id() -> str:
    """A process id unique over machines and restarts: ``{host}-{pid}-{random}``."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


@dataclass(slots=True)
class ClusterSettings:
    """``lease_ms``: a lease's life without renewal (default 5000 ms; renewed every third of it); ``sweep_s``:
    seconds between sweeps for tables nobody owns; ``call_timeout_s``: how long a lobby operation forwarded to
    another process may take before it is answered 503."""

    lease_ms: int = 5000
    sweep_s: float = 2.0
    call_timeout_s: float = 10.0


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


class Cluster:
    """This process's part in a service of several processes. Build with :meth:`open`, then :meth:`attach` the
    manager; :meth:`hand_over` on SIGTERM, :meth:`close` at the end."""

    def __init__(self, redis: Redis, store: Store, settings: ClusterSettings, process: str,
                 control: Redis | None = None) -> None:
        self.redis = redis
        self.control = control or redis
        """The client of the publisher and the renewals (:data:`CONTROL_CONNECTIONS`): never queued behind
        requests."""
        self.store = store
        self.settings = settings
        self.process = process
        self.leases = Leases(redis, process, settings.lease_ms)
        self._renewals = Leases(self.control, process, settings.lease_ms)
        self.limits = SharedLimits(redis, settings.lease_ms * 2, self.control)
        """Per-address limits counted over every process (``server/core/counters.py``)."""
        self.manager: TableHost | None = None
        self.owned: dict[str, int] = {}
        """Tables this process owns -> their epoch."""
        self.draining = False
        self.mailbox = Mailbox(redis, self.control, process, self._lost)
        """Messages to and from the other processes (``server/cluster/relay.py``)."""
        self.relays = Relays(self.mailbox)
        """The connections relayed between this process and the others, both sides."""
        self.mailbox.handlers.update(call=self._call_in, reply=self._reply)
        self.mailbox.channels[RELEASED] = self._on_released
        self.calls: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._taking: dict[str, asyncio.Lock] = {}
        self._waiting: Counter[str] = Counter()
        self._creating: set[str] = set()
        self._released: set[str] = set()
        """Tables another process let go (``ct:released``), to be taken together at the next loop turn."""
        self._expiring_s: float | None = None
        """Seconds, as the last sweep saw it, until the first lease of another process that missed a renewal
        expires (its owner likely died): the next sweep runs then."""
        self._last_renewal = time.monotonic()
        self.keeper: LeaseKeeper | None = None
        """The thread that renews the leases (made by :meth:`open`); without one, :meth:`renew` renews them on the
        event loop."""

    @classmethod
    async def open(cls, url: str, store: Store, settings: ClusterSettings | None = None) -> Cluster:
        """Connect to Redis at ``url`` (``redis://HOST:PORT/DB``); ``ConnectionError`` if it does not answer."""
        def client(connections: int) -> Redis:
            return Redis.from_pool(BlockingConnectionPool.from_url(
                url, max_connections=connections, timeout=5, socket_timeout=5, socket_connect_timeout=5,
                health_check_interval=10))

        redis, control = client(REDIS_CONNECTIONS), client(CONTROL_CONNECTIONS)
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
        self.relays.manager = manager
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

    def _on_released(self, table_id: str) -> None:
        if not self.draining:
            if not self._released:  # the first of a loop turn: take them all together just after
                asyncio.get_running_loop().call_soon(self._take_released)
            self._released.add(table_id)

    def _call_in(self, body: dict[str, Any]) -> None:
        asyncio.get_running_loop().create_task(self._answer_call(body))

    def _reply(self, body: dict[str, Any]) -> None:
        future = self.calls.pop(str(body.get("id")), None)
        if future is not None and not future.done():
            future.set_result(body)

    # -- ownership -----------------------------------------------------------------------------------

    async def locate(self, table_id: str) -> Table | str | None:
        """Where ``table_id`` lives: the live :class:`Table` here (taken now if nobody owned it), the id of the
        process that owns it, or ``None`` when it is not open or in play anywhere. A table whose owner missed a
        lease renewal is waited for (at most half a lease time) and taken here when its lease expires, so the
        clients of a process that died reconnect once, not through a relay to it first."""
        manager = self.manager
        assert manager is not None
        for _ in range(3):
            table = manager.tables.get(table_id)
            if table is not None:
                return table
            ((owner, left_ms),) = await self.leases.owners_and_ttls([table_id])
            if owner is not None and owner[0] != self.process:
                if 0 <= left_ms < self.settings.lease_ms / 2:  # its owner missed a renewal (likely dead): rather
                    # than relay to it, wait for its lease to expire and serve the table here once taken
                    await asyncio.sleep(left_ms / 1000.0 + 0.05)
                    continue
                return owner[0]
            # Nobody owns it, or this process does and is taking it (a sweep): take it, or wait for that take.
            table = await self.take(table_id)
            if table is not None:
                return table
            if await self.leases.owner(table_id) is None and (
                    self.draining or not await self.store.load_tables(table_id=table_id, statuses=LIVE)):
                return None  # not live (unknown or finished), or this process is stopping
            await asyncio.sleep(0.05)  # being taken or dropped here, or lost a race: look again
        raise TableError(503, "http.error", "the table is moving between server processes: try again",
                         {"status": 503})

    async def take(self, table_id: str) -> Table | None:
        """Become the owner of ``table_id`` if nobody is: lease, fence at the database, rebuild from the record.
        ``None`` when another process holds it, the table is not open or in play, or this process is stopping.
        A take of the same table under way here (the sweep's) is waited for."""
        with self._take_lock(table_id) as lock:
            async with asyncio.timeout(self.settings.lease_ms * 2 / 1000.0):  # never stuck: the next try will do
                async with lock:
                    return (await self._take_many([table_id])).get(table_id)

    async def take_many(self, table_ids: list[str]) -> dict[str, Table]:
        """:meth:`take` of every table of ``table_ids`` nobody owns, together (:data:`TAKE_CHUNK` at most: one
        lease script, one database transaction, one load of their records): table id -> the table, for those
        taken. Tables being taken here already are left to that take."""
        with contextlib.ExitStack() as stack:
            free: list[str] = []
            for table_id in table_ids:
                lock = stack.enter_context(self._take_lock(table_id))
                if not lock.locked():
                    await lock.acquire()  # free: at once, without waiting
                    stack.callback(lock.release)
                    free.append(table_id)
            async with asyncio.timeout(self.settings.lease_ms * 2 / 1000.0):
                return await self._take_many(free)

    @contextlib.contextmanager
    def _take_lock(self, table_id: str) -> Iterator[asyncio.Lock]:
        """The lock that one take of ``table_id`` at a time holds here; forgotten when nobody wants it."""
        lock = self._taking.setdefault(table_id, asyncio.Lock())
        self._waiting[table_id] += 1
        try:
            yield lock
        finally:
            self._waiting[table_id] -= 1
            if not self._waiting[table_id]:  # nobody else wants to take it now: forget the lock
                del self._waiting[table_id]
                self._taking.pop(table_id, None)

    async def _take_many(self, table_ids: list[str]) -> dict[str, Table]:
        manager = self.manager
        assert manager is not None
        found = {t: manager.tables[t] for t in table_ids if t in manager.tables}
        wanted = [t for t in table_ids if t not in found]
        if self.draining or not wanted:
            return found
        epochs = await self.leases.acquire_many(wanted)
        if not epochs:
            return found
        self.owned.update(epochs)
        tables: dict[str, Table] = {}
        try:
            stored = await self.store.take_many(epochs)
            for table_id, epoch in list(stored.items()):
                if epoch != epochs[table_id]:  # the database's epoch is higher (Redis restarted): the lease follows
                    if await self.leases.move_epoch(table_id, epochs[table_id], epoch):
                        self.owned[table_id] = epochs[table_id] = epoch
                    else:
                        del stored[table_id]
            for table_id in stored:
                self.store.fences[table_id] = epochs[table_id]
            for row in await self.store.load_tables(table_ids=list(stored), with_hands=True) if stored else []:
                table = manager.restore(row)  # it plays from now on: its store failures drop it here
                if table is not None:
                    self.adopt(table)
                    tables[row.id] = table
            if tables:  # seats tied to accounts name them again, as after a restart
                await restore_seat_accounts(self.store, tables)
        except BaseException:  # failed, or timed out (cancelled): nothing of it stays
            for table_id, epoch in epochs.items():
                self.owned.pop(table_id, None)
                self.store.fences.pop(table_id, None)
                table = manager.tables.pop(table_id, None)
                with contextlib.suppress(BaseException):
                    if table is not None:
                        await asyncio.shield(table.stop())
                    await asyncio.shield(self.leases.release(table_id, epoch))
            raise
        for table_id, epoch in epochs.items():
            if table_id not in tables:  # not live after all (finished meanwhile), or its record does not replay
                self.owned.pop(table_id, None)
                self.store.fences.pop(table_id, None)
                await self.leases.release(table_id, epoch)
        if tables:  # relays here to its old owner: reconnect, now direct
            self.relays.reconnect(set(tables))
        if tables:
            log.info("took %d table%s (%s)", len(tables), "" if len(tables) == 1 else "s",
                     ", ".join(f"{t} at epoch {self.owned[t]}" for t in list(tables)[:5]) + (
                         ", ..." if len(tables) > 5 else ""))
        return found | tables

    def _take_released(self) -> None:
        released, self._released = sorted(self._released), set()

        async def take() -> None:
            for start in range(0, len(released), TAKE_CHUNK):
                try:
                    await self.take_many(released[start:start + TAKE_CHUNK])
                except Exception as error:
                    log.warning("taking %d released tables failed: %r", len(released), error)

        asyncio.get_running_loop().create_task(take(), name="cardtable-cluster-take")

    async def claim_new(self, table_id: str) -> None:
        """Own a table about to be created here: its lease and epoch (written with the table row). ``TableError``
        503 when this process is stopping or the lease is somehow held."""
        try:
            epoch = None if self.draining else await self.leases.acquire(table_id)
        except Exception:  # Redis away
            epoch = None
        if epoch is None:
            raise TableError(503, "http.error", "this server process is stopping: try again", {"status": 503})
        self.owned[table_id] = epoch
        self.store.fences[table_id] = epoch
        self._creating.add(table_id)

    def forget_new(self, table_id: str) -> None:
        """A table claimed by :meth:`claim_new` was not created after all: its lease goes at the next renewal."""
        self._creating.discard(table_id)

    def adopt(self, table: Table) -> None:
        """Route ``table``'s store failures here: a refused (fenced) or failed write drops the table."""
        self._creating.discard(table.id)

        def lost(error: BaseException) -> None:
            log.warning("table %s: a write failed (%s): dropping it here", table.id, error)
            asyncio.get_running_loop().create_task(self.drop(table), name="cardtable-cluster-drop")

        table.on_error = lost

    async def drop(self, table: Table, *, release: bool = True) -> None:
        """Stop ``table`` here: nothing more is acknowledged, its connections close with :data:`RECONNECT_CODE`,
        its lease is released (if still ours) so that another process may take it and rebuild it from its record."""
        manager = self.manager
        assert manager is not None
        if manager.tables.get(table.id) is not table:
            return
        del manager.tables[table.id]
        epoch = self.owned.pop(table.id, None)
        manager.disarm(table)
        table.flush_spectators()
        for peer in table.all_peers():
            peer.close_code = RECONNECT_CODE
            peer.close()
        await table.stop()
        self.store.fences.pop(table.id, None)
        if table.status not in ("open", "playing"):
            with contextlib.suppress(Exception):
                await self.redis.hdel(LOBBY, table.id)
        if release and epoch is not None:
            with contextlib.suppress(Exception):
                await self.leases.release(table.id, epoch)

    async def _beat_loop(self) -> None:
        """Tell the lease keeper, every sixth of a lease time, that the event loop is alive."""
        while True:
            if self.keeper is not None:
                self.keeper.beat()
            await asyncio.sleep(self.settings.lease_ms / 6000.0)

    def _leases_lost(self, lost: dict[str, int]) -> None:
        """The keeper found these leases (table id -> epoch) no longer ours: drop each table still held here at
        that epoch (not one taken again since)."""
        manager = self.manager
        if manager is None:
            return
        for table_id, epoch in lost.items():
            table = manager.tables.get(table_id)
            if table is not None and self.owned.get(table_id) == epoch:
                log.warning("table %s: lease lost: dropping it here", table_id)
                asyncio.get_running_loop().create_task(self.drop(table, release=False), name="cardtable-cluster-drop")

    async def _renew_loop(self) -> None:
        interval = self.settings.lease_ms / 3000.0
        while True:
            await asyncio.sleep(interval)
            try:
                async with asyncio.timeout(self.settings.lease_ms / 1000.0):
                    await self.renew()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("renewing leases failed: %s", error)
                if self.keeper is None and time.monotonic() - self._last_renewal > self.settings.lease_ms / 1000.0 * 0.8:
                    await self._drop_all("leases not renewed in time")

    async def renew(self) -> None:
        """One renewal: let go of the tables ended here, publish the lobby's view of the tables held, end relayed
        connections whose other end is gone; without a :attr:`keeper` also extend every lease held, drop the tables
        whose lease is gone and say this process is alive (the keeper does that from its thread)."""
        manager = self.manager
        assert manager is not None
        started = time.monotonic()
        for table_id in [t for t in self.owned if t not in manager.tables and t not in self._taking
                         and t not in self._creating]:  # ended here (closed, abandoned): let it go
            epoch = self.owned.pop(table_id)
            self.store.fences.pop(table_id, None)
            await self.leases.release(table_id, epoch)
        held = {t: e for t, e in self.owned.items() if t in manager.tables}
        lost: set[str] = set()
        if self.keeper is None:
            lost = await self._renewals.renew(held)
            self._last_renewal = started
            await self.control.set(ALIVE_PREFIX + self.process, b"1", px=self.settings.lease_ms)
        await self.limits.refresh()
        live = {t: msgspec.json.encode(manager.tables[t].to_dict()) for t in held if t not in lost}
        if live:
            await self.control.hset(LOBBY, mapping=live)  # type: ignore[arg-type]
        for table_id in lost:
            table = manager.tables.get(table_id)
            if table is not None:
                log.warning("table %s: lease lost: dropping it here", table_id)
                await self.drop(table, release=False)
        # Owner side: connections from a process that stopped.
        origins = sorted({r.origin for r in self.relays.remotes.values()})
        if origins:
            alive = await self.redis.exists(*(ALIVE_PREFIX + o for o in origins)) if len(origins) == 1 else None
            gone: set[str] = set()
            if alive is not None:
                if not alive:
                    gone = set(origins)
            else:
                pipe = self.redis.pipeline(transaction=False)
                for origin in origins:
                    pipe.exists(ALIVE_PREFIX + origin)
                gone = {o for o, n in zip(origins, await pipe.execute(), strict=True) if not n}
            if gone:  # their close still goes out: if such a process lives after all (a pause, a slow start),
                # its client is told to reconnect instead of waiting for updates that never come
                self.relays.end_remotes(gone, 1006)
        # Origin side: relays whose table changed owner (or has none any more).
        if self.relays.relays:
            items = list(self.relays.relays.values())
            relayed = sorted({r.table for r in items})
            now = dict(zip(relayed, await self.leases.owners(relayed), strict=True))
            moved = {r.table for r in items if (owner := now[r.table]) is None or owner[0] != r.owner}
            if moved:
                self.relays.reconnect(moved)

    async def _drop_all(self, reason: str) -> None:
        manager = self.manager
        assert manager is not None
        for table in [manager.tables[t] for t in list(self.owned) if t in manager.tables]:
            log.warning("table %s: %s: dropping it here", table.id, reason)
            await self.drop(table, release=False)

    async def _sweep_loop(self) -> None:
        while True:
            delay = self.settings.sweep_s * (0.75 + random.random() * 0.5)
            if self._expiring_s is not None:  # a lease whose owner missed its renewal: sweep as it expires
                delay = min(delay, self._expiring_s + 0.05)
            await asyncio.sleep(delay)
            if self.draining:
                continue
            try:
                async with asyncio.timeout(self.settings.lease_ms * 4 / 1000.0):
                    await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("the ownership sweep failed: %r", error)

    async def sweep(self) -> int:
        """Take every open or playing table that no process owns (its owner died), :data:`TAKE_CHUNK` at a time;
        returns how many were taken. Also notes when the first lease whose holder missed a renewal expires
        (``Leases.owners_and_ttls``), so that the next sweep comes right then."""
        ids = await self.store.live_table_ids()
        seen = await self.leases.owners_and_ttls(ids)
        free = [t for t, (owner, _) in zip(ids, seen, strict=True) if owner is None]
        late = [ttl for owner, ttl in seen if owner is not None and owner[0] != self.process
                and 0 <= ttl < self.settings.lease_ms / 2]
        self._expiring_s = min(late) / 1000.0 if late else None
        random.shuffle(free)  # several processes sweeping at once share the work
        taken = 0
        for start in range(0, len(free), TAKE_CHUNK):
            if self.draining:
                break
            chunk = free[start:start + TAKE_CHUNK]
            try:
                taken += len(await self.take_many(chunk))
            except Exception as error:  # one table may hold the rest up (a lock): one at a time then
                log.warning("taking %d tables together failed (%r): one at a time", len(chunk), error)
                for table_id in chunk:
                    try:
                        taken += await self.take(table_id) is not None
                    except Exception as one:
                        log.warning("table %s: taking it failed: %r", table_id, one)
        return taken

    # -- relayed connections -------------------------------------------------------------------------

    async def relay(self, websocket: WebSocket, table_id: str, owner: str, address: str) -> None:
        """Serve a client connection to ``table_id``, owned by process ``owner``, by relaying it both ways until
        either end closes (``Relays.relay``); a relay whose owner changes is closed with :data:`RECONNECT_CODE`."""
        manager = self.manager
        assert manager is not None
        await self.relays.relay(websocket, table_id, owner, address, manager.settings.max_outbox)

    # -- lobby operations on another process's table ----------------------------------------------------

    async def call(self, owner: str, table_id: str, method: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run lobby operation ``method`` (``join``, ``leave``, ``start``, ``play_join``) on ``table_id`` at its
        owner ``owner`` and return its answer; its ``TableError`` is raised here, 503 when it does not answer."""
        call_id = uuid.uuid4().hex
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.calls[call_id] = future
        self.send(owner, {"op": "call", "id": call_id, "from": self.process, "table": table_id, "method": method,
                          "args": args})
        try:
            reply = await asyncio.wait_for(future, self.settings.call_timeout_s)
        except TimeoutError:
            raise TableError(503, "http.error", "the server process holding this table did not answer: try again",
                             {"status": 503}) from None
        finally:
            self.calls.pop(call_id, None)
        if not reply.get("ok"):
            raise TableError(int(reply["status"]), str(reply["code"]), str(reply["reason"]), reply.get("params"))
        result: dict[str, Any] = reply["result"]
        return result

    async def _answer_call(self, body: dict[str, Any]) -> None:
        manager = self.manager
        assert manager is not None
        reply: dict[str, Any] = {"op": "reply", "id": body.get("id")}
        try:
            table_id, args = str(body["table"]), dict(body.get("args") or {})
            if table_id not in manager.tables or self.draining:
                raise TableError(503, "http.error", "the table moved to another server process: try again",
                                 {"status": 503})
            reply["result"] = await manager.run_local(str(body["method"]), table_id, args)
            reply["ok"] = True
        except TableError as error:
            reply.update(ok=False, status=error.status, code=error.code, reason=str(error), params=error.params)
        except Exception as error:
            log.exception("a forwarded %s failed", body.get("method"))
            reply.update(ok=False, status=503, code="http.error", reason=f"the operation failed: {error}",
                         params={"status": 503})
        self.send(str(body["from"]), reply)

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
