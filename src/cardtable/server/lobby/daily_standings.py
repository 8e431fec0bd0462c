"""The daily deal's standings (``docs/protocol.md``, "The daily deal"): duplicate scoring of the day's results, a
player's streak, and the reads of ``daily_results`` behind ``GET /api/daily/{game}`` and its standings.

Duplicate scoring (as bridge clubs score boards, "matchpoints"): every finished result of the day's deal is
compared with every other one: 1 matchpoint for each result it outscored, 0.5 for each tie. A result's percent is
its matchpoints over the most it could have had, ``n - 1`` for ``n`` results (100.0 alone), so the percents of
``n`` results always add up to ``50 * n``.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, timedelta
from typing import Any

from sqlalchemy import func, select

from cardtable.server.storage import players_schema as ps
from cardtable.server.storage.store import Store

STREAK_DAYS = 366
"""Most days a streak counts back (one year and a day): a bounded read."""


def matchpoints(scores: list[int]) -> list[float]:
    """Each score's matchpoints among ``scores`` (higher is better): 1 per score it beats, 0.5 per other equal one.

    >>> matchpoints([10, 4, 10, -2])
    [2.5, 1.0, 2.5, 0.0]
    """
    counts = Counter(scores)
    ordered = sorted(counts)
    below = 0
    points: dict[int, float] = {}
    for score in ordered:
        points[score] = below + 0.5 * (counts[score] - 1)
        below += counts[score]
    return [points[s] for s in scores]


def percents(scores: list[int]) -> list[float]:
    """Each score's matchpoints as a percent of the possible (``n - 1``; 100.0 for a lone result), unrounded.

    >>> percents([10, 4, 10, -2, 4])
    [87.5, 37.5, 87.5, 0.0, 37.5]
    >>> percents([7])
    [100.0]
    """
    if len(scores) == 1:
        return [100.0]
    most = len(scores) - 1
    return [mp / most * 100.0 for mp in matchpoints(scores)]


def ranked(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The standings of ``rows`` (``{"name", "score", "table"}``, each a finished result): ``[{"rank", "name",
    "score", "percent", "table"}]``, best first; equal scores share a rank (1, 2, 2, 4), ties in name order."""
    ordered = sorted(rows, key=lambda r: (-r["score"], r["name"], r["table"]))
    shares = percents([r["score"] for r in ordered])
    out: list[dict[str, Any]] = []
    for i, (row, percent) in enumerate(zip(ordered, shares, strict=True)):
        rank = out[-1]["rank"] if out and out[-1]["score"] == row["score"] else i + 1
        out.append(
            {
                "rank": rank,
                "name": row["name"],
                "score": row["score"],
                "percent": percent,
                "table": row["table"],
            }
        )
    return out


def streak(days: set[date], today: date) -> int:
    """Days in a row with a daily played, ending today, or yesterday when today's is not played yet (a streak
    lasts until a day is missed).

    >>> from datetime import date
    >>> streak({date(2026, 11, 25), date(2026, 11, 26)}, date(2026, 11, 27))
    2
    >>> streak({date(2026, 11, 24), date(2026, 11, 26), date(2026, 11, 27)}, date(2026, 11, 27))
    2
    """
    day = today if today in days else today - timedelta(days=1)
    count = 0
    while day in days:
        count += 1
        day -= timedelta(days=1)
    return count


async def standings(store: Store, game: str, day: date) -> list[dict[str, Any]]:
    """:func:`ranked` of ``game``'s finished daily results on ``day`` (attempts with a score)."""
    d = ps.daily_results
    query = select(d.c.name, d.c.score, d.c.table_id).where(
        d.c.game == game, d.c.day == day.isoformat(), d.c.score.is_not(None)
    )
    async with store.engine.connect() as conn:
        rows = (await conn.execute(query)).all()
    return ranked([{"name": r.name, "score": int(r.score), "table": r.table_id} for r in rows])


async def played(store: Store, game: str, day: date) -> int:
    """Attempts of ``game``'s daily deal on ``day`` by signed-in players (finished or not)."""
    d = ps.daily_results
    query = select(func.count()).select_from(d).where(d.c.game == game, d.c.day == day.isoformat())
    async with store.engine.connect() as conn:
        return int((await conn.execute(query)).scalar_one())


async def attempt(store: Store, game: str, day: date, account_id: int) -> dict[str, Any] | None:
    """The account's attempt of ``game``'s daily deal on ``day``: ``{"table", "finished", "score"}`` (score None
    until it ends, or when the player was gone at the end), or ``None``."""
    d = ps.daily_results
    query = select(d.c.table_id, d.c.finished, d.c.score).where(
        d.c.game == game, d.c.day == day.isoformat(), d.c.account_id == account_id
    )
    async with store.engine.connect() as conn:
        row = (await conn.execute(query)).first()
    if row is None:
        return None
    return {"table": row.table_id, "finished": row.finished is not None, "score": row.score}


async def streak_of(store: Store, game: str, account_id: int, today: date) -> int:
    """:func:`streak` of the account's days with an attempt of ``game``'s daily deal."""
    d = ps.daily_results
    since = (today - timedelta(days=STREAK_DAYS)).isoformat()
    query = select(d.c.day).where(d.c.game == game, d.c.account_id == account_id, d.c.day >= since)
    async with store.engine.connect() as conn:
        days = {date.fromisoformat(r.day) for r in await conn.execute(query)}
    return streak(days, today)
