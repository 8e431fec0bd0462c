"""Persistence through SQLAlchemy's async engine: SQLite by default, PostgreSQL by URL (``docs/architecture.md``).

Every write goes through one writer task that batches whatever is waiting into a single transaction (group
commit), so a burst of actions from many tables costs one commit. :meth:`Store.write` returns once the
transaction holding the write has committed: the server acknowledges an action only after that.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from alembic import command
from alembic.config import Config
from sqlalchemy import and_, case, create_engine, event, literal, make_url, or_, select, text, tuple_, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from cardtable import records
from cardtable.server.storage import schema

log = logging.getLogger("cardtable.server.storage.store")

WriteFn = Callable[[Connection], None]
"""One write: SQLAlchemy Core statements run on the batch's (synchronous) connection, inside its transaction.

SQLite: the writer runs each batch right on the event loop through the standard ``sqlite3`` driver: with WAL and
``synchronous=NORMAL`` a commit is a write to the log, no fsync (about 0.1 ms), which is cheaper than two thread
hops; the fsyncs happen in the checkpoints, on their own connection in a thread. Other databases (PostgreSQL): the
batch runs through the async engine (``AsyncConnection.run_sync``)."""

MAX_BATCH = 1000
"""Most writes committed in one transaction."""

CHECKPOINT_EVERY_S = 2.0
"""SQLite: seconds between WAL checkpoints, run on their own connection so that the writer never waits for the
checkpoint's fsync (automatic checkpoints are off)."""

TRUNCATE_EVERY = 30
"""SQLite: every this many checkpoints (a minute) one is ``TRUNCATE``: it also cuts the WAL file back to zero
bytes, so a burst (or a long reader that held the log) never leaves a large file behind."""

JOURNAL_SIZE_LIMIT = 8 * 1024 * 1024
"""SQLite ``journal_size_limit`` (bytes): when the log restarts after a checkpoint, the file is cut to this."""


class Fenced(RuntimeError):
    """A write for a table refused at the database: a newer owner (a higher epoch) has taken the table
    (``server/cluster/lease.py``). Nothing of that transaction is stored."""

    def __init__(self, table_id: str, epoch: int) -> None:
        super().__init__(f"table {table_id}: epoch {epoch} is no longer the owner's")
        self.table_id = table_id
        self.epoch = epoch


FENCED_SETTINGS = {"idle_in_transaction_session_timeout": "3000", "lock_timeout": "3000"}
"""PostgreSQL session settings when several processes serve: a paused owner (SIGSTOP) that holds a transaction
open is cut off after 3 s, so the next owner's take of the table row never waits behind it for long."""


MIGRATION_LOCK = 7_283_401
"""PostgreSQL advisory lock key held while a process applies the migrations."""


def default_url() -> str:
    """``sqlite+aiosqlite:///`` a ``cardtable.db`` file in the user's data folder (created if missing)."""
    import platformdirs

    folder = Path(platformdirs.user_data_dir("cardtable"))
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite+aiosqlite:///{folder / 'cardtable.db'}"


@dataclass(slots=True)
class SeatRow:
    """A stored seat: ``kind`` is ``open``, ``person`` or ``bot``; ``left`` marks a person who left after the start."""

    seat: int
    kind: str
    name: str | None = None
    bot: str | None = None
    token_hash: str | None = None
    left: bool = False


@dataclass(slots=True)
class HandRow:
    """A stored hand: its deal (cards written out) and its actions as ``(seat, ms, action)``."""

    deal: dict[str, Any]
    actions: list[tuple[int | None, int, dict[str, Any]]] = field(default_factory=list)


@dataclass(slots=True)
class TableRow:
    """A stored table; ``options`` are the ones the creator set, ``hands`` filled only by the loaders that say so."""

    id: str
    game: str
    options: dict[str, Any]
    status: str
    seed: int
    grace_seconds: float
    created: str
    finished: str | None = None
    hands_played: int | None = None
    totals: list[int] | None = None
    winners: list[int] | None = None
    seed_chosen: bool = False
    """The creator chose ``seed``: the deals follow from it alone (``table.hand_seed``) and the table is unrated."""
    seats: list[SeatRow] = field(default_factory=list)
    hands: list[HandRow] = field(default_factory=list)


def _json_dumps(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _set_sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA wal_autocheckpoint=0")
    cursor.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
    cursor.close()


def alembic_config(connection: Connection) -> Config:
    """Alembic's configuration of the server's migrations (``server/storage/migrations``), run on ``connection``."""
    config = Config(str(Path(__file__).with_name("alembic.ini")))
    config.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
    config.attributes["connection"] = connection
    return config


def _run_migrations(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "head")


ActionParams = tuple[str, int, int, int | None, int, str, int | None]
"""One stored action as the insert takes it: ``(table_id, hand, idx, seat, ms, action as JSON text, epoch)``."""

_ACTION_COLUMNS = ("table_id", "hand", "idx", "seat", "ms", "action", "epoch")

_PG_ROWS = (
    "unnest(CAST(:table_id AS VARCHAR[]), CAST(:hand AS INTEGER[]), CAST(:idx AS INTEGER[]), "
    "CAST(:seat AS INTEGER[]), CAST(:ms AS BIGINT[]), CAST(:action AS TEXT[]), CAST(:epoch AS BIGINT[])) "
    "AS r (table_id, hand, idx, seat, ms, action, epoch)"
)
_PG_INSERT = ("INSERT INTO actions (table_id, hand, idx, seat, ms, action, epoch) "
              f"SELECT r.table_id, r.hand, r.idx, r.seat, r.ms, CAST(r.action AS JSON), r.epoch FROM {_PG_ROWS}")
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


class Store:
    """The server's database. Build with :meth:`open`; :meth:`close` when done."""

    def __init__(self, engine: AsyncEngine, commit_interval_s: float = 0.0) -> None:
        self.engine = engine
        self.commit_interval_s = commit_interval_s
        """Least seconds from one group commit's start to the next (not SQLite, whose commits are cheap)."""
        self._queue: asyncio.Queue[_Write] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self._checkpointer: asyncio.Task[None] | None = None
        self._conn: AsyncConnection | None = None
        """The writer's connection (not SQLite)."""
        self._auto: AsyncConnection | None = None
        """PostgreSQL through asyncpg: the writer's connection in autocommit, for a batch of actions only."""
        self._driver: Any = None
        """The asyncpg connection of :attr:`_auto`."""
        self._compiled: dict[Any, tuple[str, tuple[str, ...]] | None] = {}
        self._busy = False
        self._sync_engine: Engine | None = None
        self._sync_conn: Connection | None = None
        self._postgresql = engine.dialect.name == "postgresql"
        self._asyncpg = self._postgresql and engine.dialect.driver == "asyncpg"
        self.fences: dict[str, int] = {}
        """Table id -> this process's owner epoch, for tables it owns when several processes serve: every write
        for such a table checks, in its transaction, that ``tables.epoch`` still holds it (else :class:`Fenced`)."""
        self.commits = 0
        """Transactions committed by the writer (for the benchmark)."""

    @classmethod
    async def open(cls, url: str | None = None, *, cluster: bool = False, commit_interval_s: float = 0.0) -> Store:
        """Connect to ``url`` (default :func:`default_url`), apply the Alembic migrations, start the writer.

        ``cluster``: one of several processes (``--redis``): PostgreSQL sessions get :data:`FENCED_SETTINGS` and
        pooled connections are checked before use (the database may have restarted). ``commit_interval_s``: least
        seconds between the starts of two group commits, but on SQLite (``ValueError`` if negative)."""
        if commit_interval_s < 0:
            raise ValueError(f"commit interval must be 0 or more seconds, not {commit_interval_s}")
        url = url or default_url()
        extra: dict[str, Any] = {}
        if cluster and make_url(url).get_backend_name() == "postgresql":
            extra = {"pool_pre_ping": True, "connect_args": {"server_settings": dict(FENCED_SETTINGS)}}
        engine = create_async_engine(url, json_serializer=_json_dumps, json_deserializer=msgspec.json.decode,
                                     **extra)
        if engine.dialect.name == "sqlite":
            event.listen(engine.sync_engine, "connect", _set_sqlite_pragmas)
        async with engine.begin() as conn:
            if engine.dialect.name == "postgresql":  # several processes starting at once migrate one at a time
                await conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
            await conn.run_sync(_run_migrations)
        store = cls(engine, 0.0 if engine.dialect.name == "sqlite" else commit_interval_s)
        if engine.dialect.name == "sqlite":
            sync_engine = create_engine(
                make_url(url).set(drivername="sqlite"), json_serializer=_json_dumps,
                json_deserializer=msgspec.json.decode, poolclass=NullPool,
            )
            event.listen(sync_engine, "connect", _set_sqlite_pragmas)
            store._sync_engine = sync_engine
            store._sync_conn = sync_engine.connect()
        store._writer = asyncio.create_task(store._write_loop(), name="cardtable-store-writer")
        if engine.dialect.name == "sqlite":
            store._checkpointer = asyncio.create_task(store._checkpoint_loop(), name="cardtable-store-checkpoint")
        return store

    async def _checkpoint_loop(self) -> None:
        count = 0
        while True:
            await asyncio.sleep(CHECKPOINT_EVERY_S)
            count += 1
            try:
                await self.checkpoint(truncate=count % TRUNCATE_EVERY == 0)
            except Exception:
                log.exception("WAL checkpoint failed")

    async def checkpoint(self, truncate: bool = False) -> tuple[int, int, int]:
        """SQLite: copy the write-ahead log into the database (``PASSIVE``: without waiting for anyone), or with
        ``truncate`` also cut the log file to zero bytes (``TRUNCATE``: waits for the writer, up to the busy
        timeout). Returns SQLite's ``(busy, log pages, pages checkpointed)``; other databases: ``(0, 0, 0)``."""
        if self.engine.dialect.name != "sqlite":
            return (0, 0, 0)
        mode = "TRUNCATE" if truncate else "PASSIVE"
        async with self.engine.connect() as conn:
            busy, pages, done = tuple((await conn.exec_driver_sql(f"PRAGMA wal_checkpoint({mode})")).one())
            await conn.commit()
        return (int(busy), int(pages), int(done))

    async def close(self) -> None:
        """Finish the queued writes, stop the writer and dispose of the engine."""
        if self._writer is not None:
            while not self._queue.empty() or self._busy:
                await asyncio.sleep(0.01)
        for task in (self._writer, self._checkpointer):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        for conn in (self._conn, self._auto):
            if conn is not None:
                await conn.close()
        if self._sync_conn is not None:
            self._sync_conn.close()
        if self._sync_engine is not None:
            self._sync_engine.dispose()
        await self.engine.dispose()

    # -- writing ---------------------------------------------------------------------------------------

    def write(self, fn: WriteFn) -> asyncio.Future[None]:
        """Queue ``fn`` for the next group commit; the future resolves once it is committed (or fails)."""
        return self._queue_write(_Write(asyncio.get_running_loop().create_future(), fn=fn))

    def _queue_write(self, write: _Write) -> asyncio.Future[None]:
        self._queue.put_nowait(write)
        return write.future

    def _fenced(self, table_id: str, fn: WriteFn) -> asyncio.Future[None]:
        """Queue ``fn``, a write for ``table_id``: when this process owns the table among several (a fence in
        :attr:`fences`), it is stored only if the table row still holds that epoch at the commit (else the future
        fails with :class:`Fenced` and nothing of ``fn`` is stored)."""
        return self._queue_write(_Write(asyncio.get_running_loop().create_future(), fn=fn, table_id=table_id,
                                        epoch=self.fences.get(table_id)))

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
        the commit (so a new owner's :meth:`take` waits for this transaction, then sees all it stored): the
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

    async def take(self, table_id: str, epoch: int) -> int | None:
        """Make this process the owner of ``table_id`` at the database: its ``tables.epoch`` becomes ``epoch``, or
        one more than the stored one if that is already as high (Redis may have restarted and counted again).
        Returns the epoch now stored, or ``None`` when the table is unknown or no longer open or in play. From then
        on the previous owner's writes are refused (:class:`Fenced`)."""
        return (await self.take_many({table_id: epoch})).get(table_id)

    async def take_many(self, epochs: dict[str, int]) -> dict[str, int]:
        """:meth:`take` of every table in ``epochs`` (table id -> epoch) in one transaction, the rows in id order
        (as the writer's fence locks them, so the two never wait on each other in a cycle): table id -> the epoch
        now stored, for the tables open or in play."""
        t = schema.tables
        taken: dict[str, int] = {}
        async with self.engine.begin() as conn:
            for table_id in sorted(epochs):
                epoch = epochs[table_id]
                row = (await conn.execute(
                    update(t).where(t.c.id == table_id, t.c.status.in_(("open", "playing")))
                    .values(epoch=case((t.c.epoch >= epoch, t.c.epoch + 1), else_=epoch)).returning(t.c.epoch)
                )).first()
                if row is not None:
                    taken[table_id] = int(row[0])
        return taken

    async def live_table_ids(self) -> list[str]:
        """Ids of the tables open or in play (which some process should own), oldest first."""
        t = schema.tables
        async with self.engine.connect() as conn:
            rows = (await conn.execute(select(t.c.id).where(t.c.status.in_(("open", "playing")))
                                       .order_by(t.c.created, t.c.id))).all()
        return [str(r[0]) for r in rows]

    async def ended_tables(self, statuses: tuple[str, ...], before: tuple[str, str] | None,
                           limit: int) -> list[TableRow]:
        """Up to ``limit`` tables ended with one of ``statuses`` (``finished``, ``abandoned``), newest first (by
        ``finished`` time then id, both descending), before the key ``before`` = ``(finished, id)`` (``None``: from
        the newest), with their seats. One range of ``ix_tables_status_finished`` per status, each of ``limit``
        keys at most, then the chosen rows: a page costs its own rows, not the number of tables ended."""
        t = schema.tables
        keys: list[tuple[str, str]] = []
        async with self.engine.connect() as conn:
            for status in statuses:
                query = select(t.c.finished, t.c.id).where(t.c.status == status, t.c.finished.is_not(None))
                if before is not None:  # a row value: an index range on both databases, where an OR is a filter
                    query = query.where(tuple_(t.c.finished, t.c.id) < tuple_(literal(before[0]), literal(before[1])))
                query = query.order_by(t.c.finished.desc(), t.c.id.desc()).limit(limit)
                keys.extend((str(r[0]), str(r[1])) for r in (await conn.execute(query)).all())
        chosen = sorted(keys, reverse=True)[:limit]
        if not chosen:
            return []
        return await self.load_tables(table_ids=[table_id for _, table_id in chosen], newest_first=True)

    async def play_now_tables(self, game: str, bot: str | None, limit: int) -> list[str]:
        """Ids of up to ``limit`` tables made by Play now for ``game`` that wait for people and have a free seat
        (an open seat or a bot's), oldest first; with ``bot``, only those whose bots are all ``bot``. A range of
        ``ix_tables_play_now``: the number of other tables open does not count."""
        t, s = schema.tables, schema.seats
        free = select(s.c.seat).where(s.c.table_id == t.c.id, s.c.kind.in_(("open", "bot"))).exists()
        query = select(t.c.id).where(t.c.status == "open", t.c.game == game, t.c.play_now == 1, free)
        if bot is not None:
            query = query.where(~select(s.c.seat).where(s.c.table_id == t.c.id, s.c.kind == "bot",
                                                        s.c.bot != bot).exists())
        query = query.order_by(t.c.created, t.c.id).limit(limit)
        async with self.engine.connect() as conn:
            return [str(r[0]) for r in (await conn.execute(query)).all()]

    def mark_play_now(self, table_id: str) -> asyncio.Future[None]:
        """Store that ``table_id`` was made by Play now (:meth:`play_now_tables` finds it from then on)."""

        def fn(conn: Connection) -> None:
            conn.execute(update(schema.tables).where(schema.tables.c.id == table_id).values(play_now=1))

        return self._fenced(table_id, fn)

    def insert_table(self, row: TableRow) -> asyncio.Future[None]:
        """Store a new table and its seats."""

        def fn(conn: Connection) -> None:
            conn.execute(
                schema.tables.insert().values(
                    id=row.id, game=row.game, options=row.options, status=row.status, seed=row.seed,
                    grace_seconds=row.grace_seconds, created=row.created, epoch=self.fences.get(row.id, 0),
                    seed_chosen=int(row.seed_chosen),
                )
            )
            conn.execute(
                schema.seats.insert(),
                [
                    {"table_id": row.id, "seat": s.seat, "kind": s.kind, "name": s.name, "bot": s.bot,
                     "token_hash": s.token_hash, "left": int(s.left)}
                    for s in row.seats
                ],
            )

        return self.write(fn)

    def update_seat(self, table_id: str, seat: SeatRow) -> asyncio.Future[None]:
        """Store a seat's new kind, name, token hash or ``left`` mark."""

        def fn(conn: Connection) -> None:
            conn.execute(
                update(schema.seats)
                .where(schema.seats.c.table_id == table_id, schema.seats.c.seat == seat.seat)
                .values(kind=seat.kind, name=seat.name, bot=seat.bot, token_hash=seat.token_hash,
                        left=int(seat.left))
            )

        return self._fenced(table_id, fn)

    def update_status(
        self, table_id: str, status: str, *, finished: str | None = None, hands_played: int | None = None,
        totals: list[int] | None = None, winners: list[int] | None = None,
    ) -> asyncio.Future[None]:
        """Store a table's status (``open``, ``playing``, ``finished``) and, at the end, totals and winners."""

        def fn(conn: Connection) -> None:
            values: dict[str, Any] = {"status": status}
            if finished is not None:
                values.update(finished=finished, hands=hands_played, totals=totals, winners=winners)
            conn.execute(update(schema.tables).where(schema.tables.c.id == table_id).values(**values))

        return self._fenced(table_id, fn)

    def insert_hand(self, table_id: str, hand: int, deal: dict[str, Any]) -> asyncio.Future[None]:
        """Store hand number ``hand`` (from 0) with its deal."""

        def fn(conn: Connection) -> None:
            conn.execute(schema.hands.insert().values(table_id=table_id, hand=hand, deal=deal))

        return self._fenced(table_id, fn)

    def insert_actions(
        self, table_id: str, hand: int, rows: list[tuple[int, int | None, int, dict[str, Any]]]
    ) -> asyncio.Future[None]:
        """Append actions ``(index, seat, ms, action)`` to hand ``hand``."""
        epoch = self.fences.get(table_id)
        params = [(table_id, hand, i, s, ms, _json_dumps(a), epoch) for i, s, ms, a in rows]
        return self._queue_write(_Write(asyncio.get_running_loop().create_future(), actions=params,
                                        table_id=table_id, epoch=epoch))

    # -- reading ---------------------------------------------------------------------------------------

    async def load_tables(self, *, statuses: tuple[str, ...] | None = None, table_id: str | None = None,
                          table_ids: list[str] | None = None, with_hands: bool = False, newest_first: bool = False,
                          limit: int | None = None, before: tuple[str, str] | None = None,
                          after: tuple[str, str] | None = None) -> list[TableRow]:
        """Tables by status, id or ids, with their seats and, if ``with_hands``, their hands and actions in order.

        ``newest_first``: by ``finished`` time then id, both descending (else by ``created`` then id);
        ``before``: only tables after ``(finished, id)`` in that order (the next page); ``after``: only tables
        after ``(created, id)`` in the oldest first order (one status and a ``limit``: a range of the index
        ``ix_tables_status_created``, a page costs its own rows)."""
        t = schema.tables
        query = select(t)
        if statuses is not None:
            query = query.where(t.c.status.in_(statuses))
        if table_id is not None:
            query = query.where(t.c.id == table_id)
        if table_ids is not None:
            query = query.where(t.c.id.in_(table_ids))
        if before is not None:
            query = query.where(or_(t.c.finished < before[0], and_(t.c.finished == before[0], t.c.id < before[1])))
        if after is not None:  # a row value: an index range on both databases, where an OR is a filter
            query = query.where(tuple_(t.c.created, t.c.id) > tuple_(literal(after[0]), literal(after[1])))
        query = query.order_by(*((t.c.finished.desc(), t.c.id.desc()) if newest_first else (t.c.created, t.c.id)))
        if limit is not None:
            query = query.limit(limit)
        async with self.engine.connect() as conn:
            rows = [
                TableRow(id=r.id, game=r.game, options=dict(r.options), status=r.status, seed=r.seed,
                         grace_seconds=r.grace_seconds, created=r.created, finished=r.finished, hands_played=r.hands,
                         totals=r.totals, winners=r.winners, seed_chosen=bool(r.seed_chosen))
                for r in (await conn.execute(query)).all()
            ]
            by_id = {row.id: row for row in rows}
            if not by_id:
                return rows
            ids = list(by_id)
            s = schema.seats
            for r in (await conn.execute(select(s).where(s.c.table_id.in_(ids)).order_by(s.c.seat))).all():
                by_id[r.table_id].seats.append(
                    SeatRow(seat=r.seat, kind=r.kind, name=r.name, bot=r.bot, token_hash=r.token_hash,
                            left=bool(r.left))
                )
            if with_hands:
                h = schema.hands
                for r in (await conn.execute(select(h).where(h.c.table_id.in_(ids)).order_by(h.c.hand))).all():
                    by_id[r.table_id].hands.append(HandRow(deal=dict(r.deal)))
                a = schema.actions
                query_a = select(a).where(a.c.table_id.in_(ids)).order_by(a.c.table_id, a.c.hand, a.c.idx)
                for r in (await conn.execute(query_a)).all():
                    by_id[r.table_id].hands[r.hand].actions.append((r.seat, r.ms, dict(r.action)))
        return rows


def record_of(row: TableRow) -> records.Record:
    """The ``cardtable/1`` record of a stored table (loaded with its hands)."""
    seats = [records.Seat(name=s.name or f"seat-{s.seat}", bot=s.bot if s.kind == "bot" else None)
             for s in row.seats]
    record = records.new_record(row.game, seats, row.options)
    record.hands = [
        records.HandRecord(
            deal=hand.deal,
            actions=[records.ActionRecord(seat=seat, ms=ms, action=action) for seat, ms, action in hand.actions],
        )
        for hand in row.hands
    ]
    return record
