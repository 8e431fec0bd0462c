"""The accounts_0001 migration on SQLite and PostgreSQL: up from 0001, down again, up again, the same tables."""

from __future__ import annotations

import asyncio

from alembic import command
from sqlalchemy import inspect
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from cardtable.server.storage.migrate import alembic_config
from cardtable.server.storage.store import Store

ACCOUNT_TABLES = {"accounts", "sessions", "ratings", "rating_history", "player_stats", "seat_accounts", "match_seats",
                  "server_keys"}


def _tables(connection: Connection) -> set[str]:
    return set(inspect(connection).get_table_names())


async def _round_trip(url: str) -> None:
    store = await Store.open(url)
    await store.close()
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            after_up = await conn.run_sync(_tables)
            assert after_up >= ACCOUNT_TABLES and "tables" in after_up
            await conn.run_sync(lambda c: command.downgrade(alembic_config(c), "0001"))
            after_down = await conn.run_sync(_tables)
            assert not ACCOUNT_TABLES & after_down and {"tables", "seats", "hands", "actions"} <= after_down
            await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "heads"))
            assert await conn.run_sync(_tables) == after_up
    finally:
        await engine.dispose()


def test_accounts_migration_goes_up_down_and_up(db_url: str) -> None:
    asyncio.run(_round_trip(db_url))
