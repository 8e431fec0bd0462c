"""Table leases in Redis (``docs/architecture.md``, "Several server processes"): who owns each live table.

A lease is the key ``ct:lease:{table}`` holding ``"{process}:{epoch}"``, set with ``SET NX PX`` (only if nobody
holds it, expiring after ``lease_ms``) and renewed by its holder well before it expires. The epoch comes from
``INCR ct:epoch:{table}``, so each new owner of a table has a higher epoch than the one before; the database
(``Store.take``) keeps the epoch of the current owner and refuses the writes of an older one (the fence). Renewing
and releasing compare the whole value first (a Lua script, atomic in Redis), so a process never extends or deletes
a lease some other process took after its own expired.
"""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis

LEASE_PREFIX = "ct:lease:"
EPOCH_PREFIX = "ct:epoch:"

_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
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


class Leases:
    """One process's view of the leases: ``process`` is its id, ``lease_ms`` how long a lease lives unrenewed."""

    def __init__(self, redis: Redis, process: str, lease_ms: int) -> None:
        self.redis = redis
        self.process = process
        self.lease_ms = lease_ms

    async def acquire(self, table_id: str) -> int | None:
        """Take the lease of ``table_id`` if nobody holds it: returns the new epoch, or ``None`` if it is held."""
        epoch = int(await self.redis.incr(EPOCH_PREFIX + table_id))
        taken = await self.redis.set(LEASE_PREFIX + table_id, lease_value(self.process, epoch), nx=True,
                                     px=self.lease_ms)
        return epoch if taken else None

    async def move_epoch(self, table_id: str, old: int, new: int) -> bool:
        """The database gave a higher epoch ``new`` than Redis counted (``old``): write it into the lease (if it
        is still ours) and the counter. Returns whether the lease is still ours."""
        await self._eval(_RAISE_EPOCH, EPOCH_PREFIX + table_id, new)
        done = await self._eval(_REPLACE, LEASE_PREFIX + table_id, lease_value(self.process, old),
                                lease_value(self.process, new), self.lease_ms)
        return bool(done)

    async def renew(self, held: dict[str, int]) -> set[str]:
        """Extend every lease in ``held`` (table id -> epoch) by ``lease_ms``, in one round trip; returns the
        tables whose lease is no longer ours (expired, or taken by another process)."""
        if not held:
            return set()
        pipe = self.redis.pipeline(transaction=False)
        ids = list(held)
        for table_id in ids:
            pipe.eval(_RENEW, 1, LEASE_PREFIX + table_id, lease_value(self.process, held[table_id]), self.lease_ms)
        results = await pipe.execute()
        return {table_id for table_id, ok in zip(ids, results, strict=True) if not ok}

    async def release(self, table_id: str, epoch: int) -> bool:
        """Give up the lease of ``table_id`` at once if it is still ours; returns whether it was."""
        return bool(await self._eval(_RELEASE, LEASE_PREFIX + table_id, lease_value(self.process, epoch)))

    async def _eval(self, script: str, key: str, *args: Any) -> Any:
        return await self.redis.eval(script, 1, key, *args)

    async def owner(self, table_id: str) -> tuple[str, int] | None:
        """``(process, epoch)`` holding the lease of ``table_id``, or ``None``."""
        return parse_lease(await self.redis.get(LEASE_PREFIX + table_id))

    async def owners(self, table_ids: list[str]) -> list[tuple[str, int] | None]:
        """:meth:`owner` of each table, in one round trip."""
        if not table_ids:
            return []
        values = await self.redis.mget([LEASE_PREFIX + t for t in table_ids])
        return [parse_lease(v) for v in values]
