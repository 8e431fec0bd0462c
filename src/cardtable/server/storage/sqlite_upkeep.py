"""SQLite upkeep: the pragmas of every connection (write-ahead log, ``synchronous=NORMAL``, no automatic
checkpoints) and the WAL checkpoints, run every so often on their own connection (``Store`` starts them)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger("cardtable.server.storage.sqlite_upkeep")

CHECKPOINT_EVERY_S = 2.0
"""SQLite: seconds between WAL checkpoints, run on their own connection so that the writer never waits for the
checkpoint's fsync (automatic checkpoints are off)."""

TRUNCATE_EVERY = 30
"""SQLite: every this many checkpoints (a minute) one is ``TRUNCATE``: it also cuts the WAL file back to zero
bytes, so a burst (or a long reader that held the log) never leaves a large file behind."""

JOURNAL_SIZE_LIMIT = 8 * 1024 * 1024
"""SQLite ``journal_size_limit`` (bytes): when the log restarts after a checkpoint, the file is cut to this."""


def set_sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """The pragmas of a new SQLite connection (a ``connect`` event listener of the engines)."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA wal_autocheckpoint=0")
    cursor.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
    cursor.close()


async def checkpoint(engine: AsyncEngine, truncate: bool = False) -> tuple[int, int, int]:
    """Copy the write-ahead log of ``engine``'s SQLite database into the database (``PASSIVE``: without waiting
    for anyone), or with ``truncate`` also cut the log file to zero bytes (``TRUNCATE``: waits for the writer, up
    to the busy timeout). Returns SQLite's ``(busy, log pages, pages checkpointed)``."""
    mode = "TRUNCATE" if truncate else "PASSIVE"
    async with engine.connect() as conn:
        busy, pages, done = tuple((await conn.exec_driver_sql(f"PRAGMA wal_checkpoint({mode})")).one())
        await conn.commit()
    return (int(busy), int(pages), int(done))


async def checkpoint_loop(checkpoint: Callable[[bool], Awaitable[Any]]) -> None:
    """Run ``checkpoint(truncate)`` every :data:`CHECKPOINT_EVERY_S` seconds, for ever (until cancelled); every
    :data:`TRUNCATE_EVERY`-th with ``truncate``. A failed checkpoint is logged, and the next one comes as due."""
    count = 0
    while True:
        await asyncio.sleep(CHECKPOINT_EVERY_S)
        count += 1
        try:
            await checkpoint(count % TRUNCATE_EVERY == 0)
        except Exception:
            log.exception("WAL checkpoint failed")
