"""Leaderboards and player pages (``docs/protocol.md``, "Accounts and players"), and the bot level for Play now.

``GET /api/leaderboard?game=&limit=``, ``GET /api/players/{name}`` (profile, ratings, rating history, stats) and
``GET /api/players/{name}/matches?game=&before=&limit=`` (newest first, paged by the ``next`` cursor). People are
found by their name in any case or width; bot levels (players too) by their spec, e.g. ``greedy:hard``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from cardtable import ratings
from cardtable.games import game_names
from cardtable.server.core.errors import error_responses
from cardtable.server.players.account_errors import AccountError
from cardtable.server.players.names import has_control, name_key
from cardtable.server.players.sessions import current_account
from cardtable.server.storage import players_schema as ps
from cardtable.server.storage.store import Store

router = APIRouter(prefix="/api", tags=["players"])

HISTORY_POINTS = 200
"""Most recent rating changes a player page carries per game (the chart's points)."""


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def _check_game(game: str) -> None:
    if game not in game_names():
        raise AccountError(422, "game.unknown", f"unknown game {game!r}", game=game)


def _check_name(name: str) -> None:
    """:class:`AccountError` 404 ``player.unknown`` for a name with a control character (no player's name holds
    one), before it reaches the database (PostgreSQL answers a NUL in text with an error)."""
    if has_control(name):
        raise AccountError(404, "player.unknown", "no such player", name=name.encode("unicode_escape").decode())


async def _find(conn: AsyncConnection, name: str) -> Any:
    a = ps.accounts
    cols = (a.c.id, a.c.kind, a.c.name, a.c.created)
    row = (await conn.execute(select(*cols).where(a.c.name_key == name_key(name.strip()), a.c.deleted == 0))).first()
    if row is None:
        row = (await conn.execute(select(*cols).where(a.c.kind == "bot", a.c.name == name))).first()
    if row is None:
        raise AccountError(404, "player.unknown", f"no player {name!r}", name=name)
    return row


@router.get("/leaderboard", responses=error_responses(422))
async def leaderboard(
    request: Request, game: Annotated[str, Query(max_length=40)] = "nerts",
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> list[dict[str, Any]]:
    """The best ``limit`` players of ``game`` by ordinal (``mu - 3 sigma``), people and bot levels alike:
    ``[{"rank", "name", "kind", "ordinal", "mu", "sigma", "matches", "wins"}]``. 422 ``game.unknown``."""
    _check_game(game)
    r, a = ps.ratings, ps.accounts
    # the best rows straight from the (game, ordinal, account_id) index, then their names (a deleted account has
    # no ratings left)
    top = (select(r.c.account_id, r.c.ordinal, r.c.mu, r.c.sigma, r.c.matches, r.c.wins).where(r.c.game == game)
           .order_by(r.c.ordinal.desc(), r.c.account_id.desc()).limit(limit).subquery())
    query = (select(a.c.name, a.c.kind, top.c.ordinal, top.c.mu, top.c.sigma, top.c.matches, top.c.wins)
             .select_from(top.join(a, a.c.id == top.c.account_id))
             .order_by(top.c.ordinal.desc(), top.c.account_id.desc()))
    async with _store(request).engine.connect() as conn:
        rows = (await conn.execute(query)).all()
    return [{"rank": i + 1, "name": row.name, "kind": row.kind, "ordinal": round(row.ordinal, 3),
             "mu": round(row.mu, 3), "sigma": round(row.sigma, 3), "matches": row.matches, "wins": row.wins}
            for i, row in enumerate(rows)]


@router.get("/players/{name}", responses=error_responses(404, 422))
async def player(name: str, request: Request) -> dict[str, Any]:
    """A player's page: ``{"name", "kind", "created", "games": {game: {"rating": {"ordinal", "mu", "sigma",
    "matches"} | null, "history": [{"at", "table", "ordinal"}] (oldest first, the last 200), "matches", "wins",
    "win_rate", "points_per_hand", "left", "timed_out", and for Nerts "nerts_calls", "cards_left_per_hand", for
    Enemy Anemone "anemones"}}}``. Only games played appear. ``left`` counts the matches the player was gone from at
    the end (left after the start, timed out thrice at a turn-based table, or abandoned), ``timed_out`` those of
    them lost to the turn clock. ``matches`` counts the finished matches (one per match, however many
    seats the player held: a bot level may hold several), ``wins`` those in which one of its seats won;
    ``rating.matches`` counts the rated ones, one ``history`` point each (a chosen deal, or a match with no other
    rated player, is not rated). 404 ``player.unknown``."""
    _check_name(name)
    r, h, p = ps.ratings, ps.rating_history, ps.player_stats
    async with _store(request).engine.connect() as conn:
        found = await _find(conn, name)
        rated = {row.game: row for row in await conn.execute(select(r).where(r.c.account_id == found.id))}
        stats = {row.game: row for row in await conn.execute(select(p).where(p.c.account_id == found.id))}
        games: dict[str, Any] = {}
        for game in game_names():
            if game not in rated and game not in stats:
                continue
            query = (select(h.c.at, h.c.table_id, h.c.ordinal).where(h.c.account_id == found.id, h.c.game == game)
                     .order_by(h.c.id.desc()).limit(HISTORY_POINTS))
            history = [{"at": row.at, "table": row.table_id, "ordinal": round(row.ordinal, 3)}
                       for row in await conn.execute(query)][::-1]
            rating = rated.get(game)
            entry: dict[str, Any] = {
                "rating": None if rating is None else {
                    "ordinal": round(rating.ordinal, 3), "mu": round(rating.mu, 3), "sigma": round(rating.sigma, 3),
                    "matches": rating.matches},
                "history": history,
            }
            s = stats.get(game)
            matches, hands = (s.matches, s.hands) if s is not None else (0, 0)
            entry.update(matches=matches, wins=s.wins if s else 0,
                         win_rate=round(s.wins / matches, 4) if s and matches else None,
                         points_per_hand=round(s.points / hands, 3) if s and hands else None,
                         left=s.left if s else 0, timed_out=s.timed_out if s else 0)
            if game == "nerts":
                entry.update(nerts_calls=s.nerts_calls if s else 0,
                             cards_left_per_hand=round(s.cards_left / hands, 3) if s and hands else None)
            if game == "anemone":
                entry["anemones"] = s.anemones if s else 0
            games[game] = entry
    return {"name": found.name, "kind": found.kind, "created": found.created, "games": games}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _cursor(finished: str, table_id: str) -> str:
    return f"{finished}~{table_id}"


@router.get("/players/{name}/matches", responses=error_responses(404, 422))
async def player_matches(
    name: str, request: Request, game: Annotated[str | None, Query(max_length=40)] = None,
    before: Annotated[str | None, Query(max_length=80)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> dict[str, Any]:
    """A player's matches, newest first, one entry per match: ``{"matches": [{"table", "game", "finished",
    "seat", "mine", "players", "rank", "won", "points", "hands", "stats", "ordinal_before", "ordinal_after",
    "seats": [{"seat", "name", "kind", "rank", "points"}], "replay"}], "next": cursor | null}``. ``mine`` lists
    the seats the player held (a bot level may hold several); ``seat``, ``rank``, ``points`` and ``stats`` are those
    of the best placed of them, ``won`` is true when any of them won; ``ordinal_before``/``ordinal_after`` are the
    player's rating around the match (null when it was not rated). A seat's ``name`` is its player's (a bot
    level's spec, an account's name), a guest's seat name, or null for a deleted player (``kind`` ``guest``,
    ``deleted``); pass ``next`` as ``before`` for the older page.
    422 ``game.unknown`` or ``player.bad_cursor``; 404 ``player.unknown``."""
    if game is not None:
        _check_game(game)
    _check_name(name)
    if before is not None:
        finished, sep, table_id = before.partition("~")
        if not sep or has_control(before):
            raise AccountError(422, "player.bad_cursor", "before: pass the 'next' of the previous page")
    m, a = ps.match_seats, ps.accounts
    async with _store(request).engine.connect() as conn:
        found = await _find(conn, name)
        query = select(m.c.table_id, m.c.finished).where(m.c.account_id == found.id)
        if game is not None:
            query = query.where(m.c.game == game)
        if before is not None:
            query = query.where(or_(m.c.finished < finished, and_(m.c.finished == finished, m.c.table_id < table_id)))
        query = (query.group_by(m.c.table_id, m.c.finished)
                 .order_by(m.c.finished.desc(), m.c.table_id.desc()).limit(limit + 1))
        tables = (await conn.execute(query)).all()
        more = len(tables) > limit
        tables = tables[:limit]
        seats: dict[str, list[Any]] = {row.table_id: [] for row in tables}
        if seats:
            seats_q = (select(m, a.c.kind, a.c.deleted, a.c.name.label("account_name"))
                       .select_from(m.outerjoin(a, a.c.id == m.c.account_id))
                       .where(m.c.table_id.in_(list(seats))).order_by(m.c.table_id, m.c.seat))
            for s in await conn.execute(seats_q):
                seats[s.table_id].append(s)
    out = [_match_entry(found.id, seats[row.table_id]) for row in tables]
    return {"matches": out, "next": _cursor(tables[-1].finished, tables[-1].table_id) if more and tables else None}


def _match_entry(account_id: int, rows: list[Any]) -> dict[str, Any]:
    """One match of :func:`player_matches` from its ``match_seats`` rows (joined with their accounts)."""
    mine = [s for s in rows if s.account_id == account_id]
    best = min(mine, key=lambda s: (s.rank, s.seat))
    listed = []
    for s in rows:
        kind = "guest" if s.kind is None else ("deleted" if s.deleted else s.kind)
        shown = s.account_name if kind in ("person", "bot") else (None if kind == "deleted" else s.name)
        listed.append({"seat": s.seat, "name": shown, "kind": kind, "rank": s.rank, "points": s.points})
    return {
        "table": best.table_id, "game": best.game, "finished": best.finished, "seat": best.seat,
        "mine": [s.seat for s in mine], "players": best.players, "rank": best.rank,
        "won": any(s.won for s in mine), "points": best.points, "hands": best.hands, "stats": best.stats,
        "ordinal_before": _round(best.ordinal_before), "ordinal_after": _round(best.ordinal_after),
        "seats": listed, "replay": f"/?replay={best.table_id}",
    }


PLAY_NOW_LADDER: dict[str, list[str]] = {
    "nerts": ["greedy:easy", "greedy:medium", "greedy:hard"],
    "anemone": ["random", "heuristic", "ismcts:easy", "ismcts:medium", "ismcts:hard"],
}
"""The bot levels Play now chooses among, by game."""


async def play_now_bot(request: Request, game: str, default: str, levels: list[str] | None = None) -> str:
    """The bot level Play now seats against the requesting player: for a signed-in player rated in ``game``, the
    one of ``levels`` (default :data:`PLAY_NOW_LADDER`) whose rating is nearest theirs
    (:func:`cardtable.ratings.bot_level_for`; levels not rated yet are left out); ``default`` for a guest, an
    unrated player or an unrated ladder."""
    if levels is None:
        levels = PLAY_NOW_LADDER.get(game, [])
    account = await current_account(request)
    if account is None:
        return default
    r, a = ps.ratings, ps.accounts
    async with _store(request).engine.connect() as conn:
        mine = (await conn.execute(select(r.c.ordinal).where(r.c.account_id == account.id, r.c.game == game))).first()
        if mine is None:
            return default
        ladder_q = (select(a.c.name, r.c.ordinal).select_from(r.join(a, a.c.id == r.c.account_id))
                    .where(r.c.game == game, a.c.kind == "bot", a.c.name.in_(levels)))
        ladder = {row.name: float(row.ordinal) for row in await conn.execute(ladder_q)}
    return ratings.bot_level_for(float(mine.ordinal), ladder, default)
