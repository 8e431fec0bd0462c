"""Table leases in Redis (``docs/architecture.md``, "Several server processes"): who owns each live table.

A lease is the key ``ct:lease:{table}`` holding ``"{process}:{epoch}"``, set with ``SET NX PX`` (only if nobody
holds it, expiring after ``lease_ms``) and renewed by its holder well before it expires. The epoch comes from
``INCR ct:epoch:{table}``, so each new owner of a table has a higher epoch than the one before; the database
(``Store.take``) keeps the epoch of the current owner and refuses the writes of an older one (the fence). Renewing
and releasing compare the whole value first, so a process never extends or deletes a lease some other process took
after its own expired.

The renewals run in a thread of their own (:class:`LeaseKeeper`, with its own synchronous Redis connection), not
on the event loop: one slow turn of the loop (a costly request, a long garbage collection) no longer lets every
lease lapse and hands every table to another process. The keeper renews only while the loop shows it is alive (a
heartbeat at most :data:`STALL_LEASES` lease times old), so a process whose loop is stuck for good still loses its
tables. Renewing while the loop is stuck never lets two owners store: the fence at the database refuses the writes
of any owner but the newest, whatever Redis says.

Each operation is one Lua script (atomic in Redis, run by its SHA once loaded: redis-py's ``register_script``) over
any number of tables, so taking or renewing many tables costs one round trip. The scripts touch several keys at
once: one Redis server (or a Redis Cluster with all ``ct:`` keys in one slot), as ``docs/deploy.md`` says.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping

from redis import Redis as SyncRedis
from redis.asyncio import Redis
from redis.backoff import NoBackoff
from redis.retry import Retry

log = logging.getLogger("cardtable.server.cluster.lease")

LEASE_PREFIX = "ct:lease:"
EPOCH_PREFIX = "ct:epoch:"

CHUNK = 500
"""Most tables in one script call (each call holds Redis for its length: well under a millisecond)."""

STALL_LEASES = 3
"""A :class:`LeaseKeeper` renews while the event loop's last heartbeat is at most this many lease times old (15 s
with the default 5 s lease): a slower turn than that means a loop stuck for good, and the leases lapse (the tables
move to another process about one lease time later)."""

LOST_ALL_AFTER = 0.8
"""Renewals failing (Redis away) for this share of a lease time: every table is dropped here, before the leases
can have expired and another process taken them."""

_ACQUIRE = """
local n = #KEYS / 2
local out = {}
for i = 1, n do
  local epoch = redis.call('incr', KEYS[n + i])
  if redis.call('set', KEYS[i], ARGV[1] .. ':' .. epoch, 'NX', 'PX', ARGV[2]) then out[i] = epoch else out[i] = 0 end
end
return out
"""
_RENEW = """
local lost = {}
for i, key in ipairs(KEYS) do
  if redis.call('get', key) == ARGV[i + 1] then redis.call('pexpire', key, ARGV[1]) else lost[#lost + 1] = i end
end
return lost
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
_REPLACE = """
if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('set', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end
return 0
"""
_RAISE_EPOCH = """
local now = tonumber(redis.call('get', KEYS[1]) or '0')
if now < tonumber(ARGV[1]) then redis.call('set', KEYS[1], ARGV[1]) end
return 1
"""
_OWNERS_AND_TTLS = """
local out = {}
for i, key in ipairs(KEYS) do
  out[2 * i - 1] = redis.call('get', key) or false
  out[2 * i] = redis.call('pttl', key)
end
return out
"""


def lease_value(process: str, epoch: int) -> str:
    """The value of a lease: ``"{process}:{epoch}"``."""
    return f"{process}:{epoch}"


def parse_lease(value: bytes | str | None) -> tuple[str, int] | None:
    """``(process, epoch)`` of a lease value, ``None`` for no lease."""
    if value is None:
        return None
    text = value.decode() if isinstance(value, bytes) else value
    process, _, epoch = text.rpartition(":")
    return process, int(epoch)


def _chunks(items: list[str]) -> list[list[str]]:
    return [items[i:i + CHUNK] for i in range(0, len(items), CHUNK)]


class Leases:
    """One process's view of the leases: ``process`` is its id, ``lease_ms`` how long a lease lives unrenewed."""

    def __init__(self, redis: Redis, process: str, lease_ms: int) -> None:
        self.redis = redis
        self.process = process
        self.lease_ms = lease_ms
        self._acquire = redis.register_script(_ACQUIRE)
        self._renew = redis.register_script(_RENEW)
        self._release = redis.register_script(_RELEASE)
        self._replace = redis.register_script(_REPLACE)
        self._raise_epoch = redis.register_script(_RAISE_EPOCH)
        self._owners_and_ttls = redis.register_script(_OWNERS_AND_TTLS)

    async def acquire(self, table_id: str) -> int | None:
        """Take the lease of ``table_id`` if nobody holds it: returns the new epoch, or ``None`` if it is held."""
        return (await self.acquire_many([table_id])).get(table_id)

    async def acquire_many(self, table_ids: list[str]) -> dict[str, int]:
        """Take the lease of each of ``table_ids`` that nobody holds, in one round trip (per :data:`CHUNK`):
        table id -> its new epoch, for the leases taken. Each table's epoch counter goes up either way."""
        taken: dict[str, int] = {}
        for chunk in _chunks(table_ids):
            keys = [LEASE_PREFIX + t for t in chunk] + [EPOCH_PREFIX + t for t in chunk]
            epochs = await self._acquire(keys=keys, args=[self.process, self.lease_ms])
            taken.update((t, int(e)) for t, e in zip(chunk, epochs, strict=True) if int(e))
        return taken

    async def move_epoch(self, table_id: str, old: int, new: int) -> bool:
        """The database gave a higher epoch ``new`` than Redis counted (``old``): write it into the lease (if it
        is still ours) and the counter. Returns whether the lease is still ours."""
        await self._raise_epoch(keys=[EPOCH_PREFIX + table_id], args=[new])
        done = await self._replace(keys=[LEASE_PREFIX + table_id], args=[
            lease_value(self.process, old), lease_value(self.process, new), self.lease_ms])
        return bool(done)

    async def renew(self, held: dict[str, int]) -> set[str]:
        """Extend every lease in ``held`` (table id -> epoch) by ``lease_ms``, in one round trip (per
        :data:`CHUNK`); returns the tables whose lease is no longer ours (expired, or taken by another process)."""
        lost: set[str] = set()
        for chunk in _chunks(list(held)):
            args: list[str | int] = [self.lease_ms, *(lease_value(self.process, held[t]) for t in chunk)]
            gone = await self._renew(keys=[LEASE_PREFIX + t for t in chunk], args=args)
            lost.update(chunk[int(i) - 1] for i in gone)
        return lost

    async def release(self, table_id: str, epoch: int) -> bool:
        """Give up the lease of ``table_id`` at once if it is still ours; returns whether it was."""
        return bool(await self._release(keys=[LEASE_PREFIX + table_id], args=[lease_value(self.process, epoch)]))

    async def owner(self, table_id: str) -> tuple[str, int] | None:
        """``(process, epoch)`` holding the lease of ``table_id``, or ``None``."""
        return parse_lease(await self.redis.get(LEASE_PREFIX + table_id))

    async def owners(self, table_ids: list[str]) -> list[tuple[str, int] | None]:
        """:meth:`owner` of each table, in one round trip."""
        if not table_ids:
            return []
        values = await self.redis.mget([LEASE_PREFIX + t for t in table_ids])
        return [parse_lease(v) for v in values]

    async def owners_and_ttls(self, table_ids: list[str]) -> list[tuple[tuple[str, int] | None, int]]:
        """:meth:`owner` of each table and the milliseconds its lease has left (negative without a lease), in one
        round trip (per :data:`CHUNK`). A lease renewed on time never has less than two thirds of ``lease_ms``
        left: less says its holder missed a renewal (stopped, paused or cut off)."""
        out: list[tuple[tuple[str, int] | None, int]] = []
        for chunk in _chunks(table_ids):
            flat = await self._owners_and_ttls(keys=[LEASE_PREFIX + t for t in chunk])
            out.extend((parse_lease(flat[i]), int(flat[i + 1])) for i in range(0, len(flat), 2))
        return out


LostFn = Callable[[dict[str, int]], None]
"""Called on the event loop with the leases found no longer ours: table id -> the epoch renewed."""


class LeaseKeeper:
    """Renews one process's leases every third of ``lease_ms`` from a daemon thread, with a synchronous Redis
    client of its own (``url``), so that a busy event loop does not delay them.

    ``owned`` is the process's table id -> epoch map (read, never changed, here: copied at each renewal, which the
    GIL makes atomic). The loop calls :meth:`beat` often (every sixth of a lease); renewals stop while its last
    beat is more than ``STALL_LEASES`` lease times old. Each renewal also sets ``alive_key`` (``lease_ms`` to live).
    Leases found lost go to ``on_lost`` and, when renewals fail for :data:`LOST_ALL_AFTER` of a lease time, every
    held lease does, both through ``loop.call_soon_threadsafe``. :meth:`start` once, :meth:`stop` at the end."""

    def __init__(self, url: str, process: str, lease_ms: int, owned: Mapping[str, int], alive_key: str,
                 on_lost: LostFn, loop: asyncio.AbstractEventLoop) -> None:
        timeout_s = lease_ms / 6000.0  # a failed renewal takes at most a sixth of a lease to connect, one to answer
        self.redis = SyncRedis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
                                        retry=Retry(NoBackoff(), 0))  # no retry: a failure is seen at once
        self.process = process
        self.lease_ms = lease_ms
        self.stall_s = lease_ms * STALL_LEASES / 1000.0
        """Seconds of a silent event loop after which the leases are no longer renewed."""
        self.renewals = 0
        """Renewals done (for the tests)."""
        self._owned = owned
        self._alive_key = alive_key
        self._on_lost = on_lost
        self._loop = loop
        self._renew = self.redis.register_script(_RENEW)
        self._beat = time.monotonic()
        self._last_ok = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"cardtable-leases-{process}", daemon=True)

    def beat(self) -> None:
        """The event loop is alive now (call it from the loop)."""
        self._beat = time.monotonic()

    def start(self) -> None:
        """Start renewing."""
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing (waits for a renewal under way: a third of a lease time at most) and close the connection."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.lease_ms / 1000.0)
        self.redis.close()

    def renew_once(self) -> dict[str, int] | None:
        """One renewal of every lease held, unless the loop has been silent past :attr:`stall_s` (``None``, and
        nothing renewed). Returns the leases no longer ours (expired, or another process's now). Redis errors
        propagate."""
        if time.monotonic() - self._beat > self.stall_s:
            return None
        held = dict(self._owned)
        lost: dict[str, int] = {}
        for chunk in _chunks(list(held)):
            args: list[str | int] = [self.lease_ms, *(lease_value(self.process, held[t]) for t in chunk)]
            for i in self._renew(keys=[LEASE_PREFIX + t for t in chunk], args=args):
                lost[chunk[int(i) - 1]] = held[chunk[int(i) - 1]]
        self.redis.set(self._alive_key, b"1", px=self.lease_ms)
        self.renewals += 1
        return lost

    def _report(self, lost: dict[str, int]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the process is ending
            self._loop.call_soon_threadsafe(self._on_lost, lost)

    def _run(self) -> None:
        interval = self.lease_ms / 3000.0
        give_up_s = self.lease_ms / 1000.0 * LOST_ALL_AFTER
        wait = interval
        failing = False
        while not self._stop.wait(wait):
            wait = interval
            started = time.monotonic()
            if failing and started - self._last_ok >= give_up_s:  # before trying again, which takes time too
                self._report(dict(self._owned))
            try:
                lost = self.renew_once()
            except Exception as error:
                log.warning("renewing leases failed: %s", error)
                failing = True
                # wake up in time to give the leases up before they can have expired
                wait = max(0.0, min(interval, self._last_ok + give_up_s - time.monotonic()))
                continue
            failing = False
            if lost is None:
                continue
            self._last_ok = started
            if lost:
                self._report(lost)
