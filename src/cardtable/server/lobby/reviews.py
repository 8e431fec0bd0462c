"""The review route (``docs/protocol.md``, "Reviews"; issue 30): ``GET /api/tables/{id}/review?seat=N``, the review
of one seat of a finished match (``server/table/reviews.py`` computes and stores it, :mod:`cardtable.review` is the
analysis). Mounted by ``server/edge/app.py`` as a lobby read (limited per address like ``/api/tables``).

Importing this module also registers the reviews of every person's seat at each match's end
(``server/table/match_results.py``'s ``ENDED_CALLBACKS``), for the stores the app serves (``serve_reviews``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request

from cardtable.server.core.errors import TableError, error_responses
from cardtable.server.lobby.daily_private import check_readable
from cardtable.server.storage.store import Store
from cardtable.server.table.match_results import ENDED_CALLBACKS
from cardtable.server.table.reviews import review_finished, review_of, serve_reviews, stop_reviews

router = APIRouter(prefix="/api", tags=["reviews"])

__all__ = ["router", "serve_reviews", "stop_reviews", "table_review"]

if review_finished not in ENDED_CALLBACKS:
    ENDED_CALLBACKS.append(review_finished)


@router.get("/tables/{table_id}/review", responses=error_responses(403, 404, 409, 422, 429))
async def table_review(request: Request, table_id: str, seat: int = Query(ge=0, le=1000)) -> dict[str, Any]:
    """The review of ``seat`` at the finished table ``table_id``: ``{"status": "pending"}`` while it is computed
    (its computation started if nobody computes it), then the ``ready`` review (Enemy Anemone: ``decisions`` and
    ``summary``; Nerts: ``missed`` and ``summary``; shapes in ``docs/protocol.md``). 404 ``table.not_found``,
    409 ``review.not_finished`` before the match's end, 422 ``seat.no_such`` for a seat the table does not have,
    403 ``daily.private`` for a daily deal's table while its day lasts (``daily_private.check_readable``)."""
    store: Store = request.app.state.store
    await check_readable(request, store, table_id)
    rows = await store.load_tables(table_id=table_id)
    if not rows:
        raise TableError(404, "table.not_found", f"no table {table_id!r}", {"table": table_id})
    row = rows[0]
    if row.status != "finished":
        raise TableError(
            409, "review.not_finished", "the game is not finished: its review is made at the end"
        )
    if seat >= len(row.seats):
        raise TableError(
            422,
            "seat.no_such",
            f"seat: no seat {seat} (the table has {len(row.seats)})",
            {"seat": seat, "seats": len(row.seats)},
        )
    return await review_of(store, table_id, seat)
