"""A daily deal's tables stay private while their day lasts (``docs/protocol.md``, "The daily deal"): everyone plays
the same cards, so another player's try must not show them before one's own.

A daily table (``TableRow.daily``, the deal's day, UTC) is, until that day is over by the app's clock
(``app.state.clock``, :func:`app_clock`): left out of the lobby's lists (``records.py``), closed to spectators
(``joining.py``), and its record, replay and review are refused (:func:`check_readable`, 403 ``daily.private``)
except to a signed-in account with a finished attempt of the same game's deal that day. These routes take no seat
token, so a guest sees their own daily replay from the next day on. The table's ``TABLE`` stays readable
(the seat's own client reads it). From the next day on it is like any other table.
"""

from __future__ import annotations

from datetime import date

from fastapi import Request
from sqlalchemy import select

from cardtable.server.core.clock import Clock
from cardtable.server.core.errors import TableError
from cardtable.server.players.sessions import COOKIE, Account, current_account, same_origin
from cardtable.server.storage import players_schema as ps
from cardtable.server.storage import schema
from cardtable.server.storage.store import Store

PRIVATE = "daily.private"
"""The refusal code of what a daily table keeps private while its day lasts."""


def app_clock(request: Request) -> Clock:
    """The app's :class:`Clock` (``app.state.clock``)."""
    clock: Clock = request.app.state.clock
    return clock


async def signed_in_account(request: Request) -> Account | None:
    """The account whose attempt a daily request is: the session cookie's, honoured only from the page's own
    origin (as a seat is tied: ``lobby/seating.bind_seat``); ``None`` for a guest."""
    if COOKIE not in request.cookies or not same_origin(request):
        return None
    return await current_account(request)


def private_on(daily: str | None, today: date) -> bool:
    """Whether a table with ``TableRow.daily`` = ``daily`` (an ISO date, or ``None``) is private ``today``: a daily
    table, until the end of its day.

    >>> from datetime import date
    >>> private_on("2026-11-27", date(2026, 11, 27)), private_on("2026-11-27", date(2026, 11, 28))
    (True, False)
    >>> private_on(None, date(2026, 11, 27))
    False
    """
    return daily is not None and daily >= today.isoformat()


def private_refusal(table_id: str, daily: str) -> TableError:
    """The 403 ``daily.private`` refusal (params ``table``, ``date``) for the daily table ``table_id`` of ``daily``."""
    return TableError(
        403,
        PRIVATE,
        f"a daily deal's table is private until the end of its day ({daily}, UTC): play the deal first",
        {"table": table_id, "date": daily},
    )


async def finished_attempt(store: Store, game: str, day: str, account_id: int) -> bool:
    """Whether the account has finished its attempt of ``game``'s daily deal of ``day`` (an ISO date)."""
    d = ps.daily_results
    query = select(d.c.finished).where(
        d.c.game == game, d.c.day == day, d.c.account_id == account_id, d.c.finished.is_not(None)
    )
    async with store.engine.connect() as conn:
        return (await conn.execute(query)).first() is not None


async def check_readable(request: Request, store: Store, table_id: str) -> None:
    """Let the requester read the record, replay or review of ``table_id`` only if it is not a daily table private
    today (:func:`private_on`) or they are signed in with a finished attempt of its game's deal that day (then
    every table of that deal opens, the day's best replay included); else ``TableError`` 403 ``daily.private``.
    Nothing for an unknown table (the route answers its own 404)."""
    t = schema.tables
    async with store.engine.connect() as conn:
        row = (await conn.execute(select(t.c.game, t.c.daily).where(t.c.id == table_id))).first()
    if row is None or row.daily is None or not private_on(row.daily, app_clock(request).today()):
        return
    account = await signed_in_account(request)
    if account is not None and await finished_attempt(store, row.game, row.daily, account.id):
        return
    raise private_refusal(table_id, row.daily)
