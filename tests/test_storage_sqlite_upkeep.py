"""``server/storage/sqlite_upkeep.py``: SQLite runs in WAL mode with its limits; checkpoints copy the log and
truncate empties it; the checkpointer truncates every so many checkpoints, and only then."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardtable.server.storage import sqlite_upkeep
from cardtable.server.storage.store import Store
from polling import until
from table_helpers import table_row


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A SQLite file, for what only SQLite has (its log, checkpoints and pragmas)."""
    return f"sqlite+aiosqlite:///{tmp_path / 'promises.db'}"


async def test_checkpoints_copy_the_log_and_truncate_empties_it(sqlite_url: str, tmp_path: Path) -> None:
    store = await Store.open(sqlite_url)
    try:
        await store.insert_table(table_row("t1"))
        await store.insert_hand("t1", 0, {"packs": list(range(2000))})
        wal = tmp_path / "promises.db-wal"
        busy, pages, done = await store.checkpoint()
        assert busy == 0 and pages > 0 and done == pages
        assert wal.stat().st_size > 0
        busy, _, _ = await store.checkpoint(truncate=True)
        assert busy == 0 and wal.stat().st_size == 0
        assert (await store.load_tables(table_id="t1", with_hands=True))[0].hands[0].deal["packs"][-1] == 1999
    finally:
        await store.close()


async def test_the_checkpointer_empties_the_log_every_so_many_checkpoints(
        sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_upkeep, "CHECKPOINT_EVERY_S", 0.02)
    monkeypatch.setattr(sqlite_upkeep, "TRUNCATE_EVERY", 3)
    store = await Store.open(sqlite_url)
    try:
        await store.insert_table(table_row("t1"))
        await store.insert_hand("t1", 0, {"packs": list(range(2000))})
        wal = tmp_path / "promises.db-wal"
        await until(lambda: wal.stat().st_size == 0, timeout=10)
    finally:
        await store.close()


async def test_sqlite_runs_in_wal_mode_with_its_limits(sqlite_url: str) -> None:
    store = await Store.open(sqlite_url)
    try:
        async with store.engine.connect() as conn:
            mode = (await conn.exec_driver_sql("PRAGMA journal_mode")).scalar()
            limit = (await conn.exec_driver_sql("PRAGMA journal_size_limit")).scalar()
            auto = (await conn.exec_driver_sql("PRAGMA wal_autocheckpoint")).scalar()
            sync = (await conn.exec_driver_sql("PRAGMA synchronous")).scalar()
    finally:
        await store.close()
    assert (mode, limit, auto, sync) == ("wal", sqlite_upkeep.JOURNAL_SIZE_LIMIT, 0, 1)


async def test_the_checkpointer_truncates_every_so_many_checkpoints_and_only_then(
        sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_upkeep, "CHECKPOINT_EVERY_S", 0.01)
    monkeypatch.setattr(sqlite_upkeep, "TRUNCATE_EVERY", 4)
    store = await Store.open(sqlite_url)
    modes: list[bool] = []

    async def checkpoint(truncate: bool = False) -> tuple[int, int, int]:
        modes.append(truncate)
        return (0, 0, 0)

    monkeypatch.setattr(store, "checkpoint", checkpoint)
    try:
        await until(lambda: len(modes) >= 9, timeout=10)
    finally:
        await store.close()
    assert modes[:9] == [False, False, False, True] * 2 + [False]
