"""Shared test settings: Hypothesis profiles sized for a 2-core machine, the databases store tests run on, Redis,
and servers in the test process (``make_client``, ``client``, ``db_client``)."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from starlette.testclient import TestClient

from cardtable.server.core.settings import Settings
from cardtable.server.edge.app import create_app
from cardtable.server.storage.store import Store
from clients import MakeClient, ServerClient, fast_settings
from cluster_harness import Proc
from services import Postgres, Redis, flush_redis, new_database, postgres_cluster, redis_server

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("default")


SERVICE_FIXTURES = frozenset({"postgres", "redis", "redis_url"})
"""Fixtures that start PostgreSQL or Redis: a test that uses one is left out of the quick loop."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--quick", action="store_true",
                     help="the quick loop (scripts/test --quick): SQLite only, no browser, nothing marked slow")


def quick_excludes(item: pytest.Item) -> bool:
    """Whether the quick loop leaves ``item`` out: it drives a browser, is marked slow, or needs PostgreSQL or
    Redis (a service fixture, or the ``postgresql`` case of :func:`db_url`)."""
    callspec = getattr(item, "callspec", None)
    on_postgresql = callspec is not None and callspec.params.get("db_url") == "postgresql"
    uses_services = bool(SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())))
    return "browser" in item.keywords or "slow" in item.keywords or uses_services or on_postgresql


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--quick``, deselect what :func:`quick_excludes` names."""
    if not config.getoption("--quick"):
        return
    dropped = [item for item in items if quick_excludes(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not quick_excludes(item)]


@pytest.fixture
def pg_db(postgres: Postgres) -> str:
    """A fresh database in the session's PostgreSQL."""
    return new_database(postgres)


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    """Processes a test starts (appended to this list): stopped at the end."""
    started: list[Proc] = []
    yield started
    for proc in started:
        if proc.proc is not None and proc.alive:
            proc.stop(signal.SIGKILL)


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


@pytest.fixture
def url(db_url: str) -> str:
    """Every promise is kept on both databases: a SQLite file, then a fresh PostgreSQL database."""
    return db_url


@pytest.fixture
async def store(url: str) -> AsyncIterator[Store]:
    """A :class:`Store` opened on :func:`url` (SQLite, then PostgreSQL), closed after the test (a module that needs
    another store overrides this fixture)."""
    opened = await Store.open(url)
    yield opened
    await opened.close()


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

    from cardtable.server.players import passwords

    monkeypatch.setattr(passwords, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[MakeClient]:
    """A factory of started servers in this process: ``make_client(settings, db, raise_server_exceptions=...)``
    returns a :class:`ServerClient` over ``create_app(db, settings)``. ``db`` defaults to one SQLite file under
    ``tmp_path`` (the same for every call, so a second server after the first one stopped is a restart);
    ``settings=None`` is ``create_app``'s own default (the environment). All are stopped at teardown, last first."""
    started: list[ServerClient] = []

    def make(settings: Settings | None = None, db: str | None = None, *,
             raise_server_exceptions: bool = True) -> ServerClient:
        url = db or f"sqlite+aiosqlite:///{tmp_path / 'server.db'}"
        client = ServerClient(create_app(url, settings), raise_server_exceptions=raise_server_exceptions)
        TestClient.__enter__(client)
        started.append(client)
        return client

    yield make
    for client in reversed(started):
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client: MakeClient) -> TestClient:
    """A server on a SQLite file with :func:`fast_settings` (a module that needs other settings overrides this
    fixture with its own one-line ``make_client(...)`` call)."""
    return make_client(fast_settings())


@pytest.fixture
def db_client(make_client: MakeClient, db_url: str) -> TestClient:
    """A server with :func:`fast_settings` on SQLite, then on PostgreSQL (:func:`db_url`)."""
    return make_client(fast_settings(), db_url)
