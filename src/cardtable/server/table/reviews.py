"""The review of a finished match, per seat (issue 30; ``GET /api/tables/{id}/review``, ``server/lobby/reviews.py``):
computed once, stored in ``reviews`` (``server/storage/schema.py``) and read back from there.

Once a match ends, the review of every person's seat is computed (:func:`review_finished`, run by
``server/table/match_results.py`` after the results are stored); any other seat's on its first request. One process
computes a review: the one whose insert of the ``pending`` row succeeds (insert if absent, through the store's
writer); a row left ``pending`` for :data:`STALE_S` (its process died) is claimed again. The work runs in the bot
pool at a lower priority than live tables (``server/table/review_pool.py``): each Enemy Anemone decision is one job
(:func:`cardtable.review.anemone.review_decision`), a Nerts review one job (:func:`cardtable.review.nerts.review`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from sqlalchemy import and_, delete, insert, select, update
from sqlalchemy.engine import Connection

from cardtable.review import anemone, nerts
from cardtable.server.core.clock import now_iso
from cardtable.server.storage import schema
from cardtable.server.storage.rows import SeatRow, record_of
from cardtable.server.storage.store import Store
from cardtable.server.table.bots import get_pool
from cardtable.server.table.review_pool import get_low_priority

log = logging.getLogger("cardtable.server.table.reviews")

STALE_S = 600
"""Seconds after which a review still ``pending`` is taken to be abandoned (its process gone) and claimed again."""

SAVE_ON_STOP_S = 2.0
"""Seconds a review cancelled by the server's stop may take to delete its ``pending`` row."""

PENDING: dict[str, Any] = {"status": "pending"}
"""The route's answer while a review is being computed."""


@dataclass(slots=True)
class ReviewRow:
    """A stored review: ``status`` ``pending`` or ``ready``, when it was ``claimed`` (ISO 8601 UTC), how many
    computations began (``attempts``), when it was ``finished`` and its ``body`` (the route's ``ready`` answer)."""

    status: str
    claimed: str
    attempts: int
    finished: str | None
    body: dict[str, Any] | None


def _stale(claimed: str, now: datetime | None = None) -> bool:
    at = datetime.strptime(claimed, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return ((now or datetime.now(UTC)) - at).total_seconds() >= STALE_S


async def stored_review(store: Store, table_id: str, seat: int) -> ReviewRow | None:
    """The stored review of ``seat`` at ``table_id``, or ``None``."""
    r = schema.reviews
    async with store.engine.connect() as conn:
        row = (
            await conn.execute(
                select(r.c.status, r.c.claimed, r.c.attempts, r.c.finished, r.c.body).where(
                    r.c.table_id == table_id, r.c.seat == seat
                )
            )
        ).first()
    if row is None:
        return None
    return ReviewRow(str(row.status), str(row.claimed), int(row.attempts), row.finished, row.body)


async def claim(store: Store, table_id: str, seat: int) -> bool:
    """Whether this process is to compute the review of ``seat`` at ``table_id``: a ``pending`` row inserted if
    none was there, or a stale ``pending`` one taken over (``attempts`` + 1). Never true for a ready review."""
    r = schema.reviews
    claimed: list[bool] = []

    def fn(conn: Connection) -> None:
        claimed.clear()
        now = now_iso()
        row = conn.execute(
            select(r.c.status, r.c.claimed).where(r.c.table_id == table_id, r.c.seat == seat)
        ).first()
        if row is None:
            conn.execute(
                insert(r).values(table_id=table_id, seat=seat, status="pending", claimed=now, attempts=1)
            )
            claimed.append(True)
        elif row.status == "pending" and _stale(str(row.claimed)):
            done = conn.execute(
                update(r)
                .where(
                    and_(
                        r.c.table_id == table_id,
                        r.c.seat == seat,
                        r.c.claimed == row.claimed,
                        r.c.status == "pending",
                    )
                )
                .values(claimed=now, attempts=r.c.attempts + 1)
            )
            claimed.append(done.rowcount == 1)

    try:
        await store.write(fn)
    except Exception:  # the same row, inserted meanwhile by another process (IntegrityError)
        return False
    return bool(claimed and claimed[0])


async def _save(store: Store, table_id: str, seat: int, body: dict[str, Any] | None) -> None:
    r = schema.reviews

    def fn(conn: Connection) -> None:
        where = and_(r.c.table_id == table_id, r.c.seat == seat)
        if body is None:  # failed: the next request computes it again
            conn.execute(delete(r).where(where, r.c.status == "pending"))
        else:
            conn.execute(update(r).where(where).values(status="ready", finished=now_iso(), body=body))

    await store.write(fn)


async def compute(store: Store, table_id: str, seat: int) -> dict[str, Any]:
    """Compute the review of ``seat`` at the finished table ``table_id`` (its record read from ``store``), the
    searches in the bot pool at low priority, each of the simulations ``serve_reviews`` gave ``store`` (else
    :data:`DEFAULT_SIMULATIONS`); the ``ready`` body. Raises what the replay raises for a bad record."""
    rows = await store.load_tables(table_id=table_id, with_hands=True)
    record = record_of(rows[0])
    low = get_low_priority()
    if record.game == "nerts":
        body: dict[str, Any] = await low.run(get_pool(), nerts.review, record, seat)
        return body
    seed = rows[0].seed
    budget = dataclasses.replace(anemone.REVIEW_BUDGET, simulations=_serving.get(store, DEFAULT_SIMULATIONS))
    found: list[anemone.Decision] = await low.run(get_pool(), anemone.decisions, record, seat)

    async def one(d: anemone.Decision) -> dict[str, Any]:
        if not anemone.needs_search(d.legal):
            return anemone.review_decision(d.hand, d.index, d.view, d.legal, d.played, seed)
        entry: dict[str, Any] = await low.run(
            get_pool(), anemone.review_decision, d.hand, d.index, d.view, d.legal, d.played, seed, budget
        )
        return entry

    entries = await asyncio.gather(*(one(d) for d in found))
    return anemone.summarize(seat, list(entries))


_tasks: set[asyncio.Task[None]] = set()


async def _claim_and_compute(store: Store, table_id: str, seat: int) -> None:
    if not await claim(store, table_id, seat):
        return
    try:
        body = await compute(store, table_id, seat)
    except asyncio.CancelledError:  # the server stops: the next request (here or elsewhere) computes it again
        with contextlib.suppress(Exception):
            await asyncio.wait_for(_save(store, table_id, seat, None), SAVE_ON_STOP_S)
        raise
    except Exception:
        log.exception("table %s: the review of seat %d failed", table_id, seat)
        await _save(store, table_id, seat, None)
        return
    await _save(store, table_id, seat, body)


def start_review(store: Store, table_id: str, seat: int) -> None:
    """Compute and store the review of ``seat`` at ``table_id`` in the background, unless another process or task
    already does (:func:`claim`)."""
    task = asyncio.create_task(
        _claim_and_compute(store, table_id, seat), name=f"cardtable-review-{table_id}-{seat}"
    )
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


async def review_of(store: Store, table_id: str, seat: int) -> dict[str, Any]:
    """The stored review of ``seat`` at the finished table ``table_id`` (the route's ``ready`` body), else
    :data:`PENDING`, having started its computation if nobody computes it."""
    row = await stored_review(store, table_id, seat)
    if row is not None and row.status == "ready" and row.body is not None:
        return row.body
    if row is None or _stale(row.claimed):
        start_review(store, table_id, seat)
    return dict(PENDING)


DEFAULT_SIMULATIONS = anemone.REVIEW_BUDGET.simulations
"""Simulations per searched decision where the store's server named none (``Settings.review_simulations``)."""
MIN_SIMULATIONS = 100
"""The fewest simulations per searched decision a server may ask for."""

_serving: weakref.WeakKeyDictionary[Store, int] = weakref.WeakKeyDictionary()


def serve_reviews(store: Store, simulations: int = DEFAULT_SIMULATIONS) -> None:
    """Review the matches that end on ``store`` from now on (:func:`review_finished`): the app's store, while it
    runs (a table tested alone, without the app, starts no review); each searched decision gets ``simulations``
    (``Settings.review_simulations``, raised to :data:`MIN_SIMULATIONS`)."""
    _serving[store] = max(MIN_SIMULATIONS, int(simulations))


async def stop_reviews(store: Store | None = None) -> None:
    """Cancel the reviews being computed here (the server is stopping): their ``pending`` rows are deleted, so that
    the next request computes them again (a process killed outright leaves its rows to :data:`STALE_S`)."""
    if store is not None:
        _serving.pop(store, None)
    loop = asyncio.get_running_loop()
    tasks = [task for task in _tasks if task.get_loop() is loop]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class EndedTable(Protocol):
    """What :func:`review_finished` reads of a table whose match has ended (``server/table/owner.py``'s ``Table``)."""

    id: str
    store: Store

    @property
    def status(self) -> str: ...

    @property
    def seats(self) -> Sequence[Any]: ...


def review_finished(table: EndedTable) -> None:
    """Start the reviews of every person's seat of ``table`` once its match is ``finished`` (not abandoned), if its
    store is served (:func:`serve_reviews`)."""
    if table.status != "finished" or table.store not in _serving:
        return
    for seat in table.seats:
        row: SeatRow = seat.row
        if row.kind == "person":
            start_review(table.store, table.id, row.seat)
