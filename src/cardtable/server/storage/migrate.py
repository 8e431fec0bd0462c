"""The migrations runner: Alembic's configuration of the server's migrations (``server/storage/migrations``) and
their upgrade to the head when a store opens."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

MIGRATION_LOCK = 7_283_401
"""PostgreSQL advisory lock key held while a process applies the migrations."""


def alembic_config(connection: Connection) -> Config:
    """Alembic's configuration of the server's migrations (``server/storage/migrations``), run on ``connection``."""
    config = Config(str(Path(__file__).with_name("alembic.ini")))
    config.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
    config.attributes["connection"] = connection
    return config


def _run_migrations(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "head")


async def migrate(engine: AsyncEngine) -> None:
    """Apply the migrations to ``engine``'s database up to the head, in one transaction; on PostgreSQL under the
    advisory lock :data:`MIGRATION_LOCK`. Raises whatever Alembic or the database raised."""
    async with engine.begin() as conn:
        if engine.dialect.name == "postgresql":  # several processes starting at once migrate one at a time
            await conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
        await conn.run_sync(_run_migrations)
