"""Shared test settings: Hypothesis profiles sized for a 2-core machine, the databases store tests run on, and Redis."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from services import Postgres, Redis, flush_redis, new_database, postgres_cluster, redis_server

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


@pytest.fixture(scope="session")
def redis() -> Iterator[Redis]:
    """A private Redis for this test process (tests/services.py), started on first use."""
    with redis_server() as server:
        yield server


@pytest.fixture
def redis_url(redis: Redis) -> str:
    """The URL of the private Redis, emptied (``FLUSHALL``) for this test."""
    flush_redis(redis)
    return redis.url()


@pytest.fixture
def cheap_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real Argon2id with small parameters, so that the suite stays fast on a 2-core machine (modules that sign up
    and sign in use it for every test: ``pytestmark = pytest.mark.usefixtures("cheap_hashes")``)."""
    from argon2 import PasswordHasher

    from cardtable.server.players import accounts

    monkeypatch.setattr(accounts, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
