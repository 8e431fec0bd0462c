"""Persistence through SQLAlchemy's async engine: SQLite by default, PostgreSQL by URL (``docs/architecture.md``).

Every write goes through one writer task (``server/storage/writer.py``) that batches whatever is waiting into a
single transaction (group commit), so a burst of actions from many tables costs one commit. :meth:`Store.write`
returns once the transaction holding the write has committed: the server acknowledges an action only after that.
A write whose table has a newer owner fails alone with :class:`~cardtable.server.storage.writer.Fenced`.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import msgspec
from sqlalchemy import and_, case, create_engine, event, literal, make_url, or_, select, tuple_, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool
from sqlalchemy.sql.elements import ColumnElement

from cardtable.server.storage import schema, sqlite_upkeep
from cardtable.server.storage.migrate import migrate
from cardtable.server.storage.rows import HandRow, SeatRow, TableRow, TurnBank
from cardtable.server.storage.writer import WriteFn, Writer

FENCED_SETTINGS = {"idle_in_transaction_session_timeout": "3000", "lock_timeout": "3000"}
"""PostgreSQL session settings when several processes serve: a paused owner (SIGSTOP) that holds a transaction
open is cut off after 3 s, so the next owner's take of the table row never waits behind it for long."""


def default_url() -> str:
    """``sqlite+aiosqlite:///`` a ``cardtable.db`` file in the user's data folder (created if missing)."""
    import platformdirs

    folder = Path(platformdirs.user_data_dir("cardtable"))
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite+aiosqlite:///{folder / 'cardtable.db'}"


def public(day: str) -> ColumnElement[bool]:
    """The tables that are public on ``day`` (an ISO date, UTC): every table but a daily deal's of ``day`` or later
    (``TableRow.daily``), which stays private while its day lasts."""
    t = schema.tables
    return or_(t.c.daily.is_(None), t.c.daily < day)


def _json_dumps(value: Any) -> str:
    return msgspec.json.encode(value).decode()


class Store:
    """The server's database. Build with :meth:`open`; :meth:`close` when done.

    ``sync_engine``: SQLite, the synchronous engine the writer commits through (see
    :class:`~cardtable.server.storage.writer.Writer`)."""

    def __init__(self, engine: AsyncEngine, commit_interval_s: float = 0.0, sync_engine: Engine | None = None) -> None:
        self.engine = engine
        self._writer = Writer(engine, commit_interval_s, sync_engine)
        """The group-commit writer of every write (started by :meth:`open`)."""
        self._checkpointer: asyncio.Task[None] | None = None
        """SQLite: the task of the WAL checkpoints (``server/storage/sqlite_upkeep.py``)."""
        self.fences: dict[str, int] = {}
        """Table id -> this process's owner epoch, for tables it owns when several processes serve: every write
        for such a table checks, in its transaction, that ``tables.epoch`` still holds it (else :class:`Fenced`)."""

    @property
    def commit_interval_s(self) -> float:
        """Least seconds from one group commit's start to the next (not SQLite, whose commits are cheap)."""
        return self._writer.commit_interval_s

    @property
    def commits(self) -> int:
        """Transactions committed by the writer (for the benchmark)."""
        return self._writer.commits

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
            event.listen(engine.sync_engine, "connect", sqlite_upkeep.set_sqlite_pragmas)
        await migrate(engine)
        sync_engine: Engine | None = None
        if engine.dialect.name == "sqlite":
            sync_engine = create_engine(
                make_url(url).set(drivername="sqlite"), json_serializer=_json_dumps,
                json_deserializer=msgspec.json.decode, poolclass=NullPool,
            )
            event.listen(sync_engine, "connect", sqlite_upkeep.set_sqlite_pragmas)
        store = cls(engine, 0.0 if engine.dialect.name == "sqlite" else commit_interval_s, sync_engine)
        store._writer.start()
        if engine.dialect.name == "sqlite":
            store._checkpointer = asyncio.create_task(
                sqlite_upkeep.checkpoint_loop(lambda truncate: store.checkpoint(truncate=truncate)),
                name="cardtable-store-checkpoint")
        return store

    async def checkpoint(self, truncate: bool = False) -> tuple[int, int, int]:
        """SQLite: copy the write-ahead log into the database (``PASSIVE``: without waiting for anyone), or with
        ``truncate`` also cut the log file to zero bytes (``TRUNCATE``: waits for the writer, up to the busy
        timeout). Returns SQLite's ``(busy, log pages, pages checkpointed)``; other databases: ``(0, 0, 0)``."""
        if self.engine.dialect.name != "sqlite":
            return (0, 0, 0)
        return await sqlite_upkeep.checkpoint(self.engine, truncate)

    async def close(self) -> None:
        """Finish the queued writes, stop the writer and dispose of the engine."""
        await self._writer.close()
        if self._checkpointer is not None:
            self._checkpointer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._checkpointer
        await self.engine.dispose()

    # -- writing ---------------------------------------------------------------------------------------

    def write(self, fn: WriteFn) -> asyncio.Future[None]:
        """Queue ``fn`` for the next group commit; the future resolves once it is committed (or fails)."""
        return self._writer.write(fn)

    def _fenced(self, table_id: str, fn: WriteFn) -> asyncio.Future[None]:
        """Queue ``fn``, a write for ``table_id``: when this process owns the table among several (a fence in
        :attr:`fences`), it is stored only if the table row still holds that epoch at the commit (else the future
        fails with :class:`Fenced` and nothing of ``fn`` is stored)."""
        return self._writer.write(fn, table_id, self.fences.get(table_id))

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

    async def live_table_ids(self, now_ms: int | None = None) -> list[str]:
        """Ids of the tables open or in play (which some process should own), oldest first. With ``now_ms`` (Unix
        milliseconds), the *waiting* turn-based tables are left out: in play, with a person to move whose deadline is
        later (``server/table/turn_clock.py``): nothing needs them in memory until someone connects or the deadline
        falls due."""
        t, b = schema.tables, schema.turn_banks
        query = select(t.c.id).where(t.c.status.in_(("open", "playing")))
        if now_ms is not None:
            waiting = select(b.c.seat).where(b.c.table_id == t.c.id, b.c.deadline_ms > now_ms).exists()
            query = query.where(or_(t.c.pace != "turn-based", t.c.status == "open", ~waiting))
        async with self.engine.connect() as conn:
            rows = (await conn.execute(query.order_by(t.c.created, t.c.id))).all()
        return [str(r[0]) for r in rows]

    async def ended_tables(self, statuses: tuple[str, ...], before: tuple[str, str] | None,
                           limit: int, public_on: str | None = None) -> list[TableRow]:
        """Up to ``limit`` tables ended with one of ``statuses`` (``finished``, ``abandoned``), newest first (by
        ``finished`` time then id, both descending), before the key ``before`` = ``(finished, id)`` (``None``: from
        the newest), with their seats. One range of ``ix_tables_status_finished`` per status, each of ``limit``
        keys at most, then the chosen rows: a page costs its own rows, not the number of tables ended. With
        ``public_on`` (an ISO date), the daily deals' tables of that day or later are left out (:func:`public`)."""
        t = schema.tables
        keys: list[tuple[str, str]] = []
        async with self.engine.connect() as conn:
            for status in statuses:
                query = select(t.c.finished, t.c.id).where(t.c.status == status, t.c.finished.is_not(None))
                if public_on is not None:
                    query = query.where(public(public_on))
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
                    seed_chosen=int(row.seed_chosen), ready_seconds=row.ready_seconds, daily=row.daily,
                    pace=row.pace, turn_clock=row.turn_clock,
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
        self, table_id: str, hand: int, rows: list[tuple[int, int | None, int, dict[str, Any]]],
        at: str | None = None,
    ) -> asyncio.Future[None]:
        """Append actions ``(index, seat, ms, action)`` to hand ``hand``; ``at`` (ISO 8601 UTC): when they were made,
        stored with each (turn-based tables)."""
        epoch = self.fences.get(table_id)
        params = [(table_id, hand, i, s, ms, _json_dumps(a), epoch, at) for i, s, ms, a in rows]
        return self._writer.write_actions(table_id, epoch, params)

    def write_turn_banks(self, table_id: str, banks: list[TurnBank]) -> asyncio.Future[None]:
        """Store the time banks of the turn-based ``table_id``'s seats (``turn_banks``), replacing what was there."""
        b = schema.turn_banks

        def fn(conn: Connection) -> None:
            conn.execute(b.delete().where(b.c.table_id == table_id))
            if banks:
                conn.execute(b.insert(), [{"table_id": table_id, "seat": bank.seat, "bank_ms": bank.bank_ms,
                                           "deadline_ms": bank.deadline_ms, "timeouts": bank.timeouts}
                                          for bank in banks])

        return self._fenced(table_id, fn)

    async def due_turn_tables(self, now_ms: int, limit: int = 1000) -> list[str]:
        """Ids of up to ``limit`` turn-based tables in play whose seat to move ran out of time at ``now_ms`` (Unix
        milliseconds) or before, the longest overdue first: a range of ``ix_turn_banks_deadline``."""
        b, t = schema.turn_banks, schema.tables
        query = (select(b.c.table_id).join(t, t.c.id == b.c.table_id)
                 .where(b.c.deadline_ms <= now_ms, t.c.status == "playing")
                 .order_by(b.c.deadline_ms).limit(limit))
        async with self.engine.connect() as conn:
            return list(dict.fromkeys(str(r[0]) for r in (await conn.execute(query)).all()))

    # -- reading ---------------------------------------------------------------------------------------

    async def load_tables(self, *, statuses: tuple[str, ...] | None = None, table_id: str | None = None,
                          table_ids: list[str] | None = None, with_hands: bool = False, newest_first: bool = False,
                          limit: int | None = None, before: tuple[str, str] | None = None,
                          after: tuple[str, str] | None = None, public_on: str | None = None) -> list[TableRow]:
        """Tables by status, id or ids, with their seats and, if ``with_hands``, their hands and actions in order.

        ``newest_first``: by ``finished`` time then id, both descending (else by ``created`` then id);
        ``before``: only tables after ``(finished, id)`` in that order (the next page); ``after``: only tables
        after ``(created, id)`` in the oldest first order (one status and a ``limit``: a range of the index
        ``ix_tables_status_created``, a page costs its own rows); ``public_on`` (an ISO date): the daily deals'
        tables of that day or later left out (:func:`public`)."""
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
        if public_on is not None:
            query = query.where(public(public_on))
        if after is not None:  # a row value: an index range on both databases, where an OR is a filter
            query = query.where(tuple_(t.c.created, t.c.id) > tuple_(literal(after[0]), literal(after[1])))
        query = query.order_by(*((t.c.finished.desc(), t.c.id.desc()) if newest_first else (t.c.created, t.c.id)))
        if limit is not None:
            query = query.limit(limit)
        async with self.engine.connect() as conn:
            rows = [
                TableRow(id=r.id, game=r.game, options=dict(r.options), status=r.status, seed=r.seed,
                         grace_seconds=r.grace_seconds, created=r.created, finished=r.finished, hands_played=r.hands,
                         totals=r.totals, winners=r.winners, seed_chosen=bool(r.seed_chosen),
                         ready_seconds=r.ready_seconds, daily=r.daily, pace=r.pace,
                         turn_clock=dict(r.turn_clock) if r.turn_clock else None)
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
                    hand_row = by_id[r.table_id].hands[r.hand]
                    hand_row.actions.append((r.seat, r.ms, dict(r.action)))
                    hand_row.times.append(r.at)
                turn_based = [row.id for row in rows if row.turn_based]
                if turn_based:
                    b = schema.turn_banks
                    query_b = select(b).where(b.c.table_id.in_(turn_based)).order_by(b.c.table_id, b.c.seat)
                    for r in (await conn.execute(query_b)).all():
                        by_id[r.table_id].turn_banks.append(
                            TurnBank(seat=r.seat, bank_ms=r.bank_ms, deadline_ms=r.deadline_ms, timeouts=r.timeouts))
        return rows


