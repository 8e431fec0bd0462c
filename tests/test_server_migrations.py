"""The migrations on SQLite and PostgreSQL: accounts_0001 up from 0001, down again, up again, the same tables;
stats_0001 counts one match per account in a database written before it."""

from __future__ import annotations

import asyncio

from alembic import command
from sqlalchemy import inspect, text
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


async def _recount(url: str) -> dict[int, tuple[int, int]]:
    """Store the counts the server kept before stats_0001 (one match per seat) for a bot level that held two seats of
    one match and won with one of them, and one seat of another that it lost; run the migration; the counts after."""
    store = await Store.open(url)
    await store.close()
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: command.downgrade(alembic_config(c), "ready_0001"))
            await conn.execute(text("INSERT INTO accounts (id, name, kind, created, deleted) "
                                    "VALUES (7, 'heuristic', 'bot', '2026-11-01T00:00:00Z', 0)"))
            for table_id, seat, won in (("t1", 1, 1), ("t1", 2, 0), ("t2", 3, 0)):
                await conn.execute(text(
                    "INSERT INTO match_seats (table_id, seat, game, account_id, name, finished, players, rank, won,"
                    " points, hands, stats) VALUES (:t, :s, 'anemone', 7, NULL, '2026-11-01T00:00:00Z', 4, 1, :w,"
                    " 10, 4, '{}')"), {"t": table_id, "s": seat, "w": won})
            await conn.execute(text(  # as the old code counted: three matches, one won
                "INSERT INTO player_stats (account_id, game, matches, wins, points, hands, nerts_calls, cards_left,"
                " anemones) VALUES (7, 'anemone', 3, 1, 30, 12, 0, 0, 0)"))
            await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "heads"))
            rows = (await conn.execute(text("SELECT account_id, matches, wins, points FROM player_stats"))).all()
            return {row[0]: (row[1], row[2], row[3]) for row in rows}
    finally:
        await engine.dispose()


def test_stats_0001_counts_one_match_per_account_however_many_seats(db_url: str) -> None:
    """A database written before one-match-per-account: after the upgrade the bot level that held two seats of one
    match (winning with one) and a seat of another has played 2 matches and won 1; its points stay summed."""
    assert asyncio.run(_recount(db_url)) == {7: (2, 1, 30)}
