"""The daily deal's routes (``docs/protocol.md``, "The daily deal"): today's deal of a game and the requester's
part in it, playing it, and a day's standings. The deal itself is ``daily.py``, the scoring ``daily_standings.py``.
No answer shows a card: the deal is seen by playing it, and in a finished table's replay."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from cardtable.server.core.errors import TableError
from cardtable.server.core.errors import error_responses as _errors
from cardtable.server.lobby import daily_standings as ds
from cardtable.server.lobby.daily import daily_game, play_daily
from cardtable.server.lobby.daily_private import app_clock, signed_in_account
from cardtable.server.lobby.manager import Manager

router = APIRouter(prefix="/api/daily", tags=["daily"])


class DailyPlay(BaseModel):
    """``POST /api/daily/{game}/play`` body (optional): a guest's name (a signed-in player's seat takes the
    account's)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(default="player", min_length=1, max_length=40)


def _manager(request: Request) -> Manager:
    manager: Manager = request.app.state.manager
    return manager


@router.get("/{game}", responses=_errors(404))
async def daily_info(game: str, request: Request) -> dict[str, Any]:
    """Today's (UTC) daily deal of ``game``: ``{"date", "game", "options", "bots", "played", "you", "streak",
    "best"}``. ``played`` counts the signed-in players' attempts today; ``you`` (signed in, once played) is
    ``{"score", "percent", "rank", "table", "finished"}`` (``score``, ``percent`` and ``rank`` null until the
    match ends, and for a player gone at its end); ``streak`` the days in a row, up to today or yesterday, with an
    attempt (0 for a guest); ``best`` the day's best finished result ``{"table", "name", "score"}`` (its replay),
    only once the requester has played today. ``404 daily.unknown_game`` for another game."""
    spec = daily_game(game)
    store = _manager(request).store
    today = app_clock(request).today()
    account = await signed_in_account(request)
    mine = None if account is None else await ds.attempt(store, game, today, account.id)
    board = await ds.standings(store, game, today) if mine is not None else []
    you = None
    if mine is not None:
        entry = next((e for e in board if e["table"] == mine["table"]), None)
        you = {
            "score": mine["score"],
            "percent": None if entry is None else entry["percent"],
            "rank": None if entry is None else entry["rank"],
            "table": mine["table"],
            "finished": mine["finished"],
        }
    best = board[0] if board else None
    return {
        "date": today.isoformat(),
        "game": game,
        "options": dict(spec.options),
        "bots": [spec.bot] * (spec.seats - 1),
        "played": await ds.played(store, game, today),
        "you": you,
        "streak": 0 if account is None else await ds.streak_of(store, game, account.id, today),
        "best": None
        if best is None
        else {"table": best["table"], "name": best["name"], "score": best["score"]},
    }


@router.post("/{game}/play", responses=_errors(404, 409, 413, 422, 429))
async def daily_play(
    game: str, request: Request, body: Annotated[DailyPlay | None, Body()] = None
) -> dict[str, Any]:
    """Play today's daily deal of ``game``: a new table, seat 0 against three bots, that starts when the seat's
    connection says ``hello``; ``{"table": TABLE, "seat": 0, "token": ..., "invite": ...}`` as Play now answers.
    Signed in: one attempt a day (``409 daily.played`` for a second, even after leaving the first); a guest plays
    unranked, as often as the address's limits allow (``429 table.create_limit``, ``409 table.seat_limit``, as
    Play now). ``404 daily.unknown_game``."""
    return await play_daily(request, _manager(request), game, (body or DailyPlay()).name)


def _day(text: str) -> date | None:
    """``text`` as a date when it is exactly ``YYYY-MM-DD``, else ``None``."""
    try:
        return date.fromisoformat(text) if len(text) == 10 else None
    except ValueError:
        return None


DateQuery = Annotated[
    str | None, Query(alias="date", max_length=32, description="The day, YYYY-MM-DD (UTC; default today).")
]


@router.get("/{game}/standings", responses=_errors(404, 422))
async def daily_standings(game: str, request: Request, date_: DateQuery = None) -> list[dict[str, Any]]:
    """The finished results of ``game``'s daily deal on ``date`` (default today, UTC): ``[{"rank", "name",
    "score", "percent", "table"}]`` best first, duplicate scored (``daily_standings.py``); guests never appear.
    ``404 daily.unknown_game``; ``422 daily.bad_date`` for a date that is not ``YYYY-MM-DD`` or is after today."""
    daily_game(game)
    today = app_clock(request).today()
    day = today if date_ is None else _day(date_)
    if day is None or day > today:
        raise TableError(422, "daily.bad_date", "date: a day up to today, as YYYY-MM-DD", {"field": "date"})
    return await ds.standings(_manager(request).store, game, day)
