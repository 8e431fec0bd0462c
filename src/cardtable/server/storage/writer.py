"""The group-commit writer: the queue of the store's writes and the task that commits them (``Store`` owns it).

Every write goes through one writer task that batches whatever is waiting into a single transaction (group
commit), so a burst of actions from many tables costs one commit. A write's future resolves once the transaction
holding it has committed: the server acknowledges an action only after that.

On PostgreSQL group commits start at least ``commit_interval_s`` apart (``--commit-interval-ms``, default 4 ms):
under load the writes of those milliseconds share a transaction, and a transaction costs the server and
PostgreSQL about 0.2 ms of CPU each whatever its size; a write after a quiet spell is committed at once.

A group commit costs a handful of statements whatever its size: one owner check (the fence) over every fenced
table of the batch, the batch's other writes, and one insert for all its actions (on PostgreSQL one ``unnest``
statement over arrays, elsewhere one executemany). A write whose table has a newer owner fails alone with
:class:`Fenced`; the rest of the batch commits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import text, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from cardtable.server.storage import schema

log = logging.getLogger("cardtable.server.storage.writer")

WriteFn = Callable[[Connection], None]
"""One write: SQLAlchemy Core statements run on the batch's (synchronous) connection, inside its transaction.

SQLite: the writer runs each batch right on the event loop through the standard ``sqlite3`` driver: with WAL and
``synchronous=NORMAL`` a commit is a write to the log, no fsync (about 0.1 ms), which is cheaper than two thread
hops; the fsyncs happen in the checkpoints, on their own connection in a thread. Other databases (PostgreSQL): the
batch runs through the async engine (``AsyncConnection.run_sync``)."""

MAX_BATCH = 1000
"""Most writes committed in one transaction."""


class Fenced(RuntimeError):
    """A write for a table refused at the database: a newer owner (a higher epoch) has taken the table
    (``server/cluster/lease.py``). Nothing of that transaction is stored."""

    def __init__(self, table_id: str, epoch: int) -> None:
        super().__init__(f"table {table_id}: epoch {epoch} is no longer the owner's")
        self.table_id = table_id
        self.epoch = epoch


ActionParams = tuple[str, int, int, int | None, int, str, int | None, str | None]
"""One stored action as the insert takes it: ``(table_id, hand, idx, seat, ms, action as JSON text, epoch, at)``
(``at``: when it was made, ISO 8601 UTC, at turn-based tables; else ``None``)."""

_ACTION_COLUMNS = ("table_id", "hand", "idx", "seat", "ms", "action", "epoch", "at")

_PG_ROWS = (
    "unnest(CAST(:table_id AS VARCHAR[]), CAST(:hand AS INTEGER[]), CAST(:idx AS INTEGER[]), "
    "CAST(:seat AS INTEGER[]), CAST(:ms AS BIGINT[]), CAST(:action AS TEXT[]), CAST(:epoch AS BIGINT[]), "
    "CAST(:at AS VARCHAR[])) AS r (table_id, hand, idx, seat, ms, action, epoch, at)"
)
_PG_INSERT = ("INSERT INTO actions (table_id, hand, idx, seat, ms, action, epoch, at) "
              f"SELECT r.table_id, r.hand, r.idx, r.seat, r.ms, CAST(r.action AS JSON), r.epoch, r.at FROM {_PG_ROWS}")
_PG_FENCE = "SELECT id, epoch FROM tables WHERE id = ANY(CAST(:ids AS VARCHAR[])) ORDER BY id FOR NO KEY UPDATE"

PG_FENCE = text(_PG_FENCE)
"""PostgreSQL: the owner check of a group commit: the stored epoch of each table in ``ids``, their rows locked
until the commit (``FOR NO KEY UPDATE``, the lock an ``UPDATE`` of the row takes, without writing a new row
version), in id order, so that two owners' batches never wait on each other in a cycle."""

PG_INSERT_ACTIONS = text(_PG_INSERT)
"""PostgreSQL: every action of a group commit in one statement, one array per column (``unnest``): one statement
to plan and run, not one per row."""

PG_INSERT_ACTIONS_FENCED = text(
    f"WITH owned AS ({_PG_FENCE}), stored AS ({_PG_INSERT} WHERE r.epoch IS NULL OR EXISTS "
    "(SELECT FROM owned WHERE owned.id = r.table_id AND owned.epoch = r.epoch)) SELECT id, epoch FROM owned"
)
"""PostgreSQL: a group commit of actions only, as one statement run on its own (its own transaction: one round
trip): :data:`PG_FENCE` and :data:`PG_INSERT_ACTIONS` together, the rows of a table whose stored epoch is not
theirs left out; returns the stored epochs as :data:`PG_FENCE` does."""


ACTIONS_INSERT = schema.actions.insert()
"""Every database but PostgreSQL: the insert of action rows. One statement object for the process: the store
compiles each statement once and keeps it by the object (a new ``insert()`` per commit would add one for every
commit, for ever)."""


@dataclass(slots=True, eq=False)
class _Write:
    """One queued write: either ``fn`` or the action rows ``actions``; ``epoch`` is the owner epoch of
    ``table_id`` it is fenced at (``None``: not fenced), taken when the write was queued."""

    future: asyncio.Future[None]
    fn: WriteFn | None = None
    actions: list[ActionParams] | None = None
    table_id: str | None = None
    epoch: int | None = None


def _columns(rows: list[ActionParams]) -> dict[str, Any]:
    """Action rows as one list per column (the arrays of :data:`PG_INSERT_ACTIONS`), by column name."""
    return dict(zip(_ACTION_COLUMNS, map(list, zip(*rows, strict=True)), strict=True))


def _refused(batch: list[_Write], stored: dict[str, int]) -> list[_Write]:
    """The fenced writes of ``batch`` whose table's stored epoch (``stored``: table id -> epoch) is not theirs."""
    return [w for w in batch if w.epoch is not None and stored.get(str(w.table_id)) != w.epoch]


async def _close_quietly(conn: AsyncConnection | None) -> None:
    """Close a connection that failed (its errors, the database being away, do not matter any more)."""
    if conn is not None:
        with contextlib.suppress(Exception):
            await conn.close()


def _settle(batch: list[_Write], refused: list[_Write]) -> None:
    """After the commit of ``batch``: its writes refused by the fence fail with :class:`Fenced`, the rest are done."""
    failed = set(refused)
    for write in batch:
        if write.future.done():
            continue
        if write in failed:
            write.future.set_exception(Fenced(str(write.table_id), int(write.epoch or 0)))
        else:
            write.future.set_result(None)


class Writer:
    """The group-commit writer of one store: the queue of its writes, the task that commits them in batches of
    up to :data:`MAX_BATCH` (:meth:`start`), its connections, and the write path's statements compiled once.

    ``engine``: the store's database; ``commit_interval_s``: least seconds from one group commit's start to the
    next; ``sync_engine``: SQLite, the synchronous engine (the standard ``sqlite3`` driver) the writer commits
    through on its own connection, right on the event loop (``None``: through ``engine``)."""

    def __init__(self, engine: AsyncEngine, commit_interval_s: float = 0.0, sync_engine: Engine | None = None) -> None:
        self.engine = engine
        self.commit_interval_s = commit_interval_s
        """Least seconds from one group commit's start to the next (not SQLite, whose commits are cheap)."""
        self._queue: asyncio.Queue[_Write] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._conn: AsyncConnection | None = None
        """The writer's connection (not SQLite)."""
        self._auto: AsyncConnection | None = None
        """PostgreSQL through asyncpg: the writer's connection in autocommit, for a batch of actions only."""
        self._driver: Any = None
        """The asyncpg connection of :attr:`_auto`."""
        self._compiled: dict[Any, tuple[str, tuple[str, ...]] | None] = {}
        self._busy = False
        self._sync_engine = sync_engine
        self._sync_conn: Connection | None = None if sync_engine is None else sync_engine.connect()
        self._postgresql = engine.dialect.name == "postgresql"
        self._asyncpg = self._postgresql and engine.dialect.driver == "asyncpg"
        self.commits = 0
        """Transactions committed by the writer (for the benchmark)."""

    def start(self) -> None:
        """Start the writer's task (on the running event loop): from then on queued writes are committed."""
        self._task = asyncio.create_task(self._write_loop(), name="cardtable-store-writer")

    async def close(self) -> None:
        """Finish the queued writes (once started), stop the task, close the writer's connections and dispose of
        the synchronous engine (not ``engine``: the store's)."""
        if self._task is not None:
            while not self._queue.empty() or self._busy:
                await asyncio.sleep(0.01)
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for conn in (self._conn, self._auto):
            if conn is not None:
                await conn.close()
        if self._sync_conn is not None:
            self._sync_conn.close()
        if self._sync_engine is not None:
            self._sync_engine.dispose()

    # -- queueing --------------------------------------------------------------------------------------

    def write(self, fn: WriteFn, table_id: str | None = None, epoch: int | None = None) -> asyncio.Future[None]:
        """Queue ``fn`` for the next group commit; the future resolves once it is committed (or fails). With an
        ``epoch`` (the owner epoch of ``table_id`` the write is fenced at), ``fn`` runs only if the table row still
        holds that epoch at the commit; else the future fails with :class:`Fenced` and nothing of ``fn`` is stored."""
        write = _Write(asyncio.get_running_loop().create_future(), fn=fn, table_id=table_id, epoch=epoch)
        self._queue.put_nowait(write)
        return write.future

    def write_actions(self, table_id: str, epoch: int | None, rows: list[ActionParams]) -> asyncio.Future[None]:
        """Queue action ``rows`` of ``table_id`` for the next group commit, fenced at ``epoch`` (``None``: not
        fenced) as :meth:`write`; the future resolves once they are committed (or fails)."""
        write = _Write(asyncio.get_running_loop().create_future(), actions=rows, table_id=table_id, epoch=epoch)
        self._queue.put_nowait(write)
        return write.future

    # -- committing ------------------------------------------------------------------------------------

    async def _write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        started = -1e9
        while True:
            batch = [await self._queue.get()]
            self._busy = True  # from here on :meth:`close` waits for this batch
            try:
                wait = started + self.commit_interval_s - loop.time()
                if wait > 0:  # the last commit began less than the interval ago: gather what comes meanwhile
                    await asyncio.sleep(wait)
                started = loop.time()
                while len(batch) < MAX_BATCH and not self._queue.empty():
                    batch.append(self._queue.get_nowait())
                await self._commit_and_settle(batch)
            finally:
                self._busy = False

    async def _commit_and_settle(self, batch: list[_Write]) -> None:
        try:
            refused = await self._commit(batch)
        except Exception:
            log.exception("group commit of %d writes failed; retrying one by one", len(batch))
            for write in batch:
                try:
                    refused = await self._commit([write])
                except Exception as error:
                    if not write.future.done():
                        write.future.set_exception(error)
                    continue
                _settle([write], refused)
            return
        _settle(batch, refused)

    async def _commit(self, batch: list[_Write]) -> list[_Write]:
        """Run ``batch`` in one transaction; returns its writes refused by the fence (nothing of them stored).
        Raises whatever the database raised (nothing of the batch stored)."""
        if self._sync_conn is not None:
            refused = self._transaction(self._sync_conn, batch)
        elif self._asyncpg and all(w.actions is not None for w in batch):
            refused = await self._actions_alone(batch)
        else:
            if self._conn is None:  # the first commit, or the last lost its connection (the database restarted)
                self._conn = await self.engine.connect()
            try:
                refused = await self._conn.run_sync(self._transaction, batch)
            except Exception:  # the next commit opens a new connection (the database may have restarted)
                conn, self._conn = self._conn, None
                await _close_quietly(conn)
                raise
        self.commits += 1
        return refused

    async def _actions_alone(self, batch: list[_Write]) -> list[_Write]:
        """PostgreSQL through asyncpg, a batch of actions only: :data:`PG_INSERT_ACTIONS_FENCED`, one statement
        run on its own (its own transaction: one round trip), straight on the asyncpg connection of a connection
        held in autocommit (SQLAlchemy's ``driver_connection``: no greenlet, no execution context per commit)."""
        values = _columns([row for write in batch for row in write.actions or ()])
        values["ids"] = sorted({w.table_id for w in batch if w.epoch is not None})
        compiled = self._driver_sql(PG_INSERT_ACTIONS_FENCED)
        assert compiled is not None  # asyncpg's parameters are positional ($1)
        sql, names = compiled
        try:
            if self._auto is None:
                self._auto = await (await self.engine.connect()).execution_options(isolation_level="AUTOCOMMIT")
                self._driver = (await self._auto.get_raw_connection()).driver_connection
            stored = {str(i): int(e) for i, e in await self._driver.fetch(sql, *(values[name] for name in names))}
        except Exception:  # as above: a new connection next time
            conn, self._auto = self._auto, None
            await _close_quietly(conn)
            raise
        return _refused(batch, stored)

    def _transaction(self, conn: Connection, batch: list[_Write]) -> list[_Write]:
        """The group commit on the (synchronous) connection: the fence, then the writes in order, then every
        action in one insert (last, so that a table created in the same batch exists first)."""
        with conn.begin():
            refused = self._fence(conn, batch)
            skip = set(refused)
            rows: list[ActionParams] = []
            for write in batch:
                if write in skip:
                    continue
                if write.fn is not None:
                    write.fn(conn)
                elif write.actions is not None:
                    rows.extend(write.actions)
            if rows:
                self._insert_action_rows(conn, rows)
        return refused

    def _fence(self, conn: Connection, batch: list[_Write]) -> list[_Write]:
        """The owner check of every fenced table of ``batch``, in one statement that also locks their rows until
        the commit (so a new owner's ``Store.take`` waits for this transaction, then sees all it stored): the
        writes whose table row no longer holds their epoch (a newer owner took it, or it is gone)."""
        ids = sorted({w.table_id for w in batch if w.epoch is not None and w.table_id is not None})
        if not ids:
            return []
        if self._postgresql:
            result = self._run(conn, PG_FENCE, {"ids": ids})
        else:  # SQLite: the update takes the database's write lock first, which is its only lock
            t = schema.tables
            result = conn.execute(update(t).where(t.c.id.in_(ids)).values(epoch=t.c.epoch).returning(t.c.id, t.c.epoch))
        return _refused(batch, {str(i): int(e) for i, e in result})

    def _insert_action_rows(self, conn: Connection, rows: list[ActionParams]) -> None:
        if self._postgresql:
            self._run(conn, PG_INSERT_ACTIONS, _columns(rows))
            return
        compiled = self._driver_sql(ACTIONS_INSERT)
        if compiled is not None and compiled[1] == _ACTION_COLUMNS:  # parameters in column order, as the rows
            conn.exec_driver_sql(compiled[0], rows if len(rows) > 1 else rows[0])
        else:
            conn.execute(ACTIONS_INSERT, [
                {**dict(zip(_ACTION_COLUMNS, row, strict=True)), "action": msgspec.json.decode(row[5])}
                for row in rows])

    def _driver_sql(self, statement: Any) -> tuple[str, tuple[str, ...]] | None:
        """``statement`` compiled once for this database: its SQL and parameter names in order, for
        ``exec_driver_sql`` (no compiling nor cache lookup per commit); ``None`` when the driver's parameters
        are not positional."""
        if statement not in self._compiled:
            compiled = statement.compile(dialect=self.engine.dialect)
            positions = compiled.positiontup
            self._compiled[statement] = None if positions is None else (str(compiled), tuple(positions))
        return self._compiled[statement]

    def _run(self, conn: Connection, statement: Any, values: dict[str, Any]) -> Any:
        """Run ``statement`` (a write path statement: no type processing) with ``values``; returns its result."""
        compiled = self._driver_sql(statement)
        if compiled is None:
            return conn.execute(statement, values)
        return conn.exec_driver_sql(compiled[0], tuple(values[name] for name in compiled[1]))
