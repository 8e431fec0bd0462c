"""Shared test settings: Hypothesis profiles sized for a 2-core machine, and the databases store tests run on."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from services import Postgres, new_database, postgres_cluster

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("default")


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A private PostgreSQL cluster for this test process (tests/services.py), started on first use."""
    with postgres_cluster() as cluster:
        yield cluster


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database's SQLAlchemy URL: a SQLite file, then a fresh database in the PostgreSQL cluster."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"
    return new_database(request.getfixturevalue("postgres"))
