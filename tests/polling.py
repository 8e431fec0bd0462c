"""Waiting in tests for something another task, thread or process does: one sync poll (:func:`wait_for`) and one
async poll (:func:`until`) with the same signature, and the waits on a server that several test modules share."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from sqlalchemy import select

from cardtable.server.storage import players_schema
from clients import query

if TYPE_CHECKING:
    from starlette.testclient import TestClient

T = TypeVar("T")


def wait_for(check: Callable[[], T | None], timeout: float = 30.0, what: str = "the condition", every: float = 0.05) -> T:
    """Call ``check()`` every ``every`` seconds until it returns something truthy, and return that;
    ``AssertionError`` ("timed out after ``timeout`` s waiting for ``what``") after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


@overload
async def until(check: Callable[[], Awaitable[T | None]], timeout: float = ..., what: str = ...,
                every: float = ...) -> T: ...


@overload
async def until(check: Callable[[], T | None], timeout: float = ..., what: str = ..., every: float = ...) -> T: ...


async def until(check: Callable[[], Any], timeout: float = 30.0, what: str = "the condition",
                every: float = 0.01) -> Any:
    """:func:`wait_for` for async tests: ``check`` may be sync or return an awaitable (awaited each time); the event
    loop runs between tries."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(every)


def clear_of_midnight_utc(margin: float = 240.0) -> None:
    """Return once the UTC day has at least ``margin`` seconds left (waiting into the next day when it has fewer):
    for a test that reads "today" more than once (the daily deal) and must not see the date change under it."""
    def left() -> float:
        now = time.time()
        return 86400.0 - now % 86400.0
    if left() < margin:
        wait_for(lambda: left() > margin or None, timeout=margin + 5.0, what="the next UTC day", every=1.0)


def wait_status(client: TestClient, table_id: str, statuses: tuple[str, ...] = ("finished",),
                timeout: float = 120.0) -> dict[str, Any]:
    """The table (``GET /api/tables/{table_id}``, a dict) once its status is one of ``statuses``, polled every
    0.1 s; ``AssertionError`` after ``timeout`` seconds."""

    def reached() -> dict[str, Any] | None:
        table: dict[str, Any] = client.get(f"/api/tables/{table_id}").json()
        return table if table["status"] in statuses else None

    return wait_for(reached, timeout, f"table {table_id} to reach {statuses}", every=0.1)


def wait_results(client: TestClient, table_id: str, seats: int, timeout: float = 30.0,
                 before_each: Callable[[], object] = lambda: None) -> list[Any]:
    """The table's ``match_seats`` rows (by seat) once all ``seats`` are stored, polled every 0.1 s;
    ``before_each()`` runs before each try (to fail early: it raises); ``AssertionError`` after ``timeout``."""
    m = players_schema.match_seats

    def stored() -> list[Any] | None:
        before_each()
        rows = query(client, select(m).where(m.c.table_id == table_id).order_by(m.c.seat))
        return rows if len(rows) == seats else None

    return wait_for(stored, timeout, f"the results of table {table_id}", every=0.1)
