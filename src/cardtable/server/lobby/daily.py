"""The daily deal (``docs/protocol.md``, "The daily deal"): for each game, one deal a day (UTC) that everyone plays
from the same seat against the same bots, one attempt per account, scored as duplicate (``daily_standings.py``).

The day's table seed is an HMAC-SHA256 of the game and the date under the server's daily secret
(``Settings.daily_secret``, else the server key ``daily`` made once and kept in the database), so nobody without
the secret can compute a day's deal. A daily table is a replayable table (``TableRow.seed_chosen``): each hand's
deal follows from the seed alone (``table/deals.py``) and its bots' choices from the seed, the seat and the position
alone, with a fixed number of simulations (``table/bots.py``'s ``choice_seed``, ``BotInfo.make_fixed``). Like every
table with a known seed it is not rated: a guest may play the day's deal any number of times, so a rated attempt
could be played with the deal already known; the standings are its score.

A daily table is marked with its day (``TableRow.daily``) and stays private while that day lasts
(``daily_private.py``): nobody learns the day's cards from another player's try.

An attempt is a row of ``daily_results`` (game, day, account), inserted before the table is made, so the database
decides "one per account per day" whatever process serves the request; the match's end fills in its score in the
transaction that stores the match's results (:func:`record_daily`, a ``match_results.FINISH_HOOKS`` hook).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from dataclasses import dataclass
from datetime import date
from typing import Any

from fastapi import Request
from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from cardtable.server.core.addresses import client_address
from cardtable.server.core.clock import now_iso
from cardtable.server.core.errors import TableError
from cardtable.server.core.settings import Settings
from cardtable.server.lobby.daily_private import app_clock, signed_in_account
from cardtable.server.lobby.manager import Manager
from cardtable.server.lobby.seating import bind_seat
from cardtable.server.players.names import NameRefused, check_name
from cardtable.server.players.results import MatchResult
from cardtable.server.players.sessions import Account
from cardtable.server.storage import players_schema as ps
from cardtable.server.storage.keys import server_key
from cardtable.server.storage.store import Store
from cardtable.server.table.match_results import FINISH_HOOKS, FinishedTable

log = logging.getLogger("cardtable.server.lobby.daily")

DAILY_KEY = "daily"
"""The server key (``storage/keys.py``) the daily seeds come from when ``Settings.daily_secret`` is empty."""

DAILY_SEAT = 0
"""The player's seat at a daily table."""


@dataclass(frozen=True, slots=True)
class DailyGame:
    """How a game's daily deal is played: the table's ``options`` and the ``bot`` on every seat but seat 0."""

    options: dict[str, Any]
    """The game options (``docs/rules/``), the others at their defaults."""
    bot: str
    """The bot spec of seats 1 to 3."""
    seats: int = 4
    """Seats at the table."""


DAILY_GAMES: dict[str, DailyGame] = {
    # Enemy Anemone (rules: "Scoring", option rounds): one 4-round match.
    "anemone": DailyGame({"players": 4, "rounds": 4}, "ismcts:medium"),
    # Nerts (rules: "Scoring", option hands): one hand.
    "nerts": DailyGame({"players": 4, "hands": 1}, "expert:medium"),
}
"""The daily deal of each game."""


def daily_game(game: str) -> DailyGame:
    """The :class:`DailyGame` of ``game``; ``TableError`` 404 ``daily.unknown_game`` for another name."""
    found = DAILY_GAMES.get(game)
    if found is None:
        raise TableError(
            404,
            "daily.unknown_game",
            f"no daily deal for {game!r} (known: {', '.join(sorted(DAILY_GAMES))})",
            {"game": game[:40]},
        )
    return found


def daily_seed(secret: bytes, game: str, day: date) -> int:
    """The table seed (0 to 2**62 - 1) of ``game``'s daily deal on ``day`` under ``secret``.

    >>> from datetime import date
    >>> daily_seed(b"k", "anemone", date(2026, 11, 27)) == daily_seed(b"k", "anemone", date(2026, 11, 27))
    True
    >>> daily_seed(b"k", "anemone", date(2026, 11, 27)) != daily_seed(b"other", "anemone", date(2026, 11, 27))
    True
    """
    digest = hmac.new(secret, f"{game}:{day.isoformat()}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") % (2**62)


async def daily_secret(store: Store, settings: Settings) -> bytes:
    """``Settings.daily_secret``, or else the server key ``daily`` (made and stored the first time)."""
    if settings.daily_secret:
        return settings.daily_secret.encode()
    return await server_key(store, DAILY_KEY)


def daily_score(table: FinishedTable) -> int:
    """The daily score of ``table``'s seat 0, in points: its match total (Enemy Anemone's 4 rounds, Nerts' one
    hand)."""
    return int(table.match.totals[DAILY_SEAT])


def record_daily(conn: Connection, table: FinishedTable, result: MatchResult) -> None:
    """The :data:`~cardtable.server.table.match_results.FINISH_HOOKS` hook: a daily attempt played at ``table``
    gets its finish time and its score (:func:`daily_score`), once; no score when the player was gone at the end
    (left, or a stand-in bot played for them), when seat 0 is no longer the attempt's account (it left before the
    start and someone else took the seat) or the match was abandoned: the attempt counts, with no result."""
    d = ps.daily_results
    found = conn.execute(
        select(d.c.account_id).where(d.c.table_id == table.id, d.c.finished.is_(None))
    ).first()
    if found is None:  # not a daily table, or its result is stored already
        return
    seat = next((s for s in result.seats if s.seat == DAILY_SEAT), None)
    present = table.status == "finished" and seat is not None and not seat.gone
    score = (
        daily_score(table) if present and seat is not None and seat.account_id == found.account_id else None
    )
    conn.execute(
        update(d)
        .where(d.c.table_id == table.id, d.c.finished.is_(None))
        .values(finished=result.finished, score=score)
    )


FINISH_HOOKS.append(record_daily)


async def _claim(store: Store, game: str, day: date, account: Account) -> None:
    d = ps.daily_results

    def fn(conn: Connection) -> None:
        conn.execute(
            insert(d).values(
                game=game, day=day.isoformat(), account_id=account.id, name=account.name, started=now_iso()
            )
        )

    try:
        await store.write(fn)
    except IntegrityError:
        raise TableError(
            409,
            "daily.played",
            f"you have played today's {game} daily deal: come back tomorrow",
            {"game": game, "date": day.isoformat()},
        ) from None


async def _settle(store: Store, game: str, day: date, account_id: int, table_id: str | None) -> None:
    """Tie the attempt to its table, or give the attempt back (``table_id`` None: the table could not be made)."""
    d = ps.daily_results
    key = (d.c.game == game) & (d.c.day == day.isoformat()) & (d.c.account_id == account_id)

    def fn(conn: Connection) -> None:
        if table_id is None:
            conn.execute(delete(d).where(key))
        else:
            conn.execute(update(d).where(key).values(table_id=table_id))

    await store.write(fn)


async def play_daily(request: Request, manager: Manager, game: str, name: str) -> dict[str, Any]:
    """Seat the requester at a new table of today's ``game`` daily deal, seat 0 against three bots
    (:data:`DAILY_GAMES`): ``{"table": TABLE, "seat": 0, "token": ..., "invite": ...}``, as Play now answers. It
    starts as soon as the player's connection says ``hello``.

    A signed-in player's attempt is stored first (``TableError`` 409 ``daily.played`` for a second one today,
    leaving included); a guest (``name`` as Play now takes it) gets an unranked table each time. The address's
    limits apply as for Play now: 429 ``table.create_limit``, 409 ``table.seat_limit``; ``name`` refused as a
    guest's name: 422 ``account.name_invalid``, ``name.invisible``, ``name.reserved``."""
    spec = daily_game(game)
    try:
        name = check_name(name, guest=True)
    except NameRefused as error:
        raise TableError(422, error.code, error.detail, error.params) from None
    address = client_address(request)
    manager.check_seats(address)
    account = await signed_in_account(request)
    day = app_clock(request).today()
    if account is not None:
        await _claim(manager.store, game, day, account)
    try:
        await manager.check_create(address)
        seed = daily_seed(await daily_secret(manager.store, manager.settings), game, day)
        seats = [{"kind": "open"}] + [{"kind": "bot", "bot": spec.bot}] * (spec.seats - 1)
        made, seat, token = await manager.create(
            game, dict(spec.options), seats, name, seed, None, daily=day.isoformat()
        )
    except BaseException:
        if account is not None:
            await _settle(manager.store, game, day, account.id, None)
        raise
    if account is not None:
        await _settle(manager.store, game, day, account.id, made.id)
    if made.creator is None:
        made.creator = address
    table, token = await bind_seat(request, made, seat, token)
    manager.hold_seat(address, table, seat, token)
    return {"table": table.to_dict(), "seat": seat, "token": token, "invite": f"/?table={table.id}"}
