"""``server/storage/migrate.py``: stores opened at once on a new database migrate it one at a time."""

from __future__ import annotations

import asyncio

import pytest

from cardtable.server.storage.store import Store
from table_helpers import table_row


async def test_stores_opened_at_once_on_a_new_database_migrate_one_at_a_time(url: str) -> None:
    """Several processes starting at once on a new database (a rolling deploy, a fresh service): each store
    opens, the schema is created once, and all of them work on it."""
    if url.startswith("sqlite"):
        pytest.skip("one process per SQLite file")
    stores = await asyncio.gather(*(Store.open(url) for _ in range(4)))
    try:
        for i, opened in enumerate(stores):
            await opened.insert_table(table_row(f"t{i}"))
        assert sorted(row.id for row in await stores[0].load_tables()) == ["t0", "t1", "t2", "t3"]
    finally:
        for opened in stores:
            await opened.close()
