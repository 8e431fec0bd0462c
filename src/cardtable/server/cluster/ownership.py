"""Taking and keeping tables (``docs/architecture.md``, "Several server processes": "Ownership", "Losing a lease",
"Taking over").

A process owns tables through Redis leases (``server/cluster/lease.py``) fenced at the database (``Store.take``,
``Store.fences``): a table is taken on the first request for it that finds no owner (:meth:`Ownership.locate`), by
a periodic sweep (so tables of bots only, and clocks, resume after their owner died), and at once when another
process lets it go (:data:`RELEASED`). The leases are renewed every third of the lease time from a thread of their
own (``LeaseKeeper``: a slow turn of the event loop does not let them lapse, a loop stuck for good does); a lease
that can no longer be renewed (expired while the process was paused, Redis restarted) drops the table here: nothing
more is acknowledged for it, its connections are closed with :data:`RECONNECT_CODE`, and whichever process takes
it next rebuilds it from its record.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec
from redis.asyncio import Redis

from cardtable.server.cluster.calls import LOBBY
from cardtable.server.cluster.lease import LeaseKeeper, Leases
from cardtable.server.cluster.redis_clients import ALIVE_PREFIX
from cardtable.server.cluster.relay import Relays
from cardtable.server.core.clock import unix_ms
from cardtable.server.core.errors import RECONNECT_CODE, TableError
from cardtable.server.core.limits import SharedLimits
from cardtable.server.storage.store import Store
from cardtable.server.table.owner import Table
from cardtable.server.table.seat_accounts import restore_seat_accounts

if TYPE_CHECKING:
    from cardtable.server.cluster.host import TableHost

log = logging.getLogger("cardtable.server.cluster.ownership")

RELEASED = "ct:released"
"""Channel on which a stopping process names each table it let go, so another process takes it at once."""

LIVE = ("open", "playing")
"""The statuses of a table that some process should own."""

TAKE_CHUNK = 50
"""Most tables taken together (one lease script, one database transaction, one load of their records): a chunk
is taken well within a lease time, and its tables play as soon as it is done."""


@dataclass(slots=True)
class ClusterSettings:
    """``lease_ms``: a lease's life without renewal (default 5000 ms; renewed every third of it); ``sweep_s``:
    seconds between sweeps for tables nobody owns; ``call_timeout_s``: how long a lobby operation forwarded to
    another process may take before it is answered 503."""

    lease_ms: int = 5000
    sweep_s: float = 2.0
    call_timeout_s: float = 10.0


class Ownership:
    """The tables this process owns, and how it takes, keeps and lets go of them. ``redis``: the client for
    requests; ``control``: the client of the renewals and the lobby's view (never queued behind requests);
    ``store``: the database, whose fences follow the epochs held; ``process``: this process's id; ``relays``: the
    relayed connections (those to a table taken here reconnect; each renewal ends those whose other end is gone);
    ``limits``: the shared counters, refreshed with each renewal. Set :attr:`manager` before the first take."""

    def __init__(self, redis: Redis, control: Redis, store: Store, settings: ClusterSettings, process: str,
                 relays: Relays, limits: SharedLimits) -> None:
        self.redis = redis
        self.control = control
        """The client of the publisher and the renewals (``CONTROL_CONNECTIONS``): never queued behind
        requests."""
        self.store = store
        self.settings = settings
        self.process = process
        self.relays = relays
        """The connections relayed between this process and the others, both sides."""
        self.limits = limits
        """Per-address limits counted over every process (``server/core/limits.py``)."""
        self.leases = Leases(redis, process, settings.lease_ms)
        self._renewals = Leases(control, process, settings.lease_ms)
        self.manager: TableHost | None = None
        self.owned: dict[str, int] = {}
        """Tables this process owns -> their epoch."""
        self.draining = False
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
        """The thread that renews the leases (made by ``Cluster.open``); without one, :meth:`renew` renews them on the
        event loop."""

    def _on_released(self, table_id: str) -> None:
        if not self.draining:
            if not self._released:  # the first of a loop turn: take them all together just after
                asyncio.get_running_loop().call_soon(self._take_released)
            self._released.add(table_id)

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
        ``None`` when another process holds it, the table is not open or in play, this process is stopping, or the
        table was dropped here again before the take finished (a failed write: ``drop``).
        A take of the same table under way here (the sweep's) is waited for."""
        with self._take_lock(table_id) as lock:
            async with asyncio.timeout(self.settings.lease_ms * 2 / 1000.0):  # never stuck: the next try will do
                async with lock:
                    return (await self._take_many([table_id])).get(table_id)

    async def take_many(self, table_ids: list[str]) -> dict[str, Table]:
        """:meth:`take` of every table of ``table_ids`` nobody owns, together (:data:`TAKE_CHUNK` at most: one
        lease script, one database transaction, one load of their records): table id -> the table, for those
        taken and still live here when it returns. Tables being taken here already are left to that take."""
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
            # epochs, not owned: a table taken may have been dropped since (a failed write, a hand-over)
            log.info("took %d table%s (%s)", len(tables), "" if len(tables) == 1 else "s",
                     ", ".join(f"{t} at epoch {epochs[t]}" for t in list(tables)[:5]) + (
                         ", ..." if len(tables) > 5 else ""))
        # only what is still live here: a table may have been dropped while the take finished (a failed write)
        return {t: table for t, table in (found | tables).items() if manager.tables.get(t) is table}

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
        for connection in table.all_connections():
            connection.close_code = RECONNECT_CODE
            connection.close()
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
        await self.relays.end_orphans(self.redis, self.leases)

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
        ids = await self.store.live_table_ids(unix_ms())
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
