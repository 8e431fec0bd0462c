"""Recording a finished match: one result row per seat, and new ratings for the rated players.

``table/match_results.py``'s ``record_finished`` is the one call the table makes when its match ends: it reads the
match's record back (to count each hand's Nerts calls and cards left in Nerts piles, and the anemones taken), then
:func:`record_results`, in one transaction, stores a ``match_seats`` row for every seat (guests too, without an
account) and updates the ratings (:mod:`cardtable.ratings`) of the accounts and bot levels that played, with a
history row for each change.
Recording twice (a server restarted just after the end) changes nothing. An abandoned match is recorded too.

Who is rated (``docs/protocol.md``, "Ratings"): a seat's result goes to the account that holds it when the match
ends (``players/account_seats.holding_accounts``), never to a deleted account, and an account on two seats of one match is
rated on neither. A person who is *gone* at the end (left after the start, timed out so that a stand-in bot plays
for them, or every person of an abandoned match) is last, and did not win. A person who is gone or never made a
move of their own is *absent*: their own rating is updated as last place (or where their points put them)
against the teams that did play, but nobody else's rating changes because of them: the present teams are rated
among themselves alone. So a second account that never plays raises nobody's rating. A table whose creator chose
its seed is never rated.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection

from cardtable import ratings
from cardtable.server.core.clock import now_iso
from cardtable.server.storage import players_schema as ps

if TYPE_CHECKING:
    pass

log = logging.getLogger("cardtable.server.players.results")


@dataclass(slots=True)
class SeatResult:
    """One seat of a finished match: who sat there (``account_id`` for a signed-in person, ``bot`` for a bot
    level, neither for a guest), its ``name``, total ``points`` and ``stats`` (``nerts_calls``, ``cards_left``
    summed over hands, ``anemones``); ``gone``: its person left or timed out (last place); ``idle``: its person
    never made a move of their own (with ``gone``: absent, see the module's docstring); ``timed_out``: its person
    lost the seat to the turn clock (three timeouts at a turn-based table: a stand-in kept it; also ``gone``)."""

    seat: int
    name: str | None
    account_id: int | None = None
    bot: str | None = None
    points: int = 0
    stats: dict[str, int] = field(default_factory=dict)
    gone: bool = False
    idle: bool = False
    timed_out: bool = False


@dataclass(slots=True)
class MatchResult:
    """A finished match as rated: its seats, ``teams`` (lists of seats that share a result: Nerts partners),
    the ``winners`` seats, ``hands`` played and the ``finished`` time (ISO 8601 UTC); ``rated`` false for a
    table whose creator chose its seed (results stored, no rating changes)."""

    table_id: str
    game: str
    finished: str
    hands: int
    seats: list[SeatResult]
    teams: list[list[int]]
    winners: list[int] | None
    rated: bool = True


def _bot_account(conn: Connection, spec: str) -> int:
    a = ps.accounts
    row = conn.execute(select(a.c.id).where(a.c.kind == "bot", a.c.name == spec)).first()
    if row is not None:
        return int(row.id)
    result = conn.execute(insert(a).values(kind="bot", name=spec, name_key=None, password_hash=None,
                                           created=now_iso(), deleted=0))
    return int(result.inserted_primary_key[0])  # type: ignore[index]


def final_ranks(result: MatchResult) -> tuple[list[int], set[int]]:
    """Each seat's rank (1 = best; equal seats share one) and the seats that won: those still there rank above
    the ``gone``, then winners first, then by points (:func:`cardtable.ratings.standings` with the gone last);
    a gone seat never wins.

    >>> seats = [SeatResult(0, "a", points=9, gone=True), SeatResult(1, "b", points=3), SeatResult(2, "c")]
    >>> final_ranks(MatchResult("t", "nerts", "", 1, seats, [[0], [1], [2]], [0]))
    ([3, 1, 2], set())
    """
    won = {s.seat for s in result.seats if s.seat in set(result.winners or ()) and not s.gone}
    keys = [(0 if s.gone else 1, 1 if s.seat in won else 0, s.points) for s in result.seats]
    return [1 + sum(1 for other in keys if other > key) for key in keys], won


def _drop_unratable(conn: Connection, result: MatchResult) -> None:
    """Make guests of the seats whose account is deleted, and of every seat of an account on two seats."""
    ids = [s.account_id for s in result.seats if s.account_id is not None and s.bot is None]
    if not ids:
        return
    a = ps.accounts
    deleted = {row.id for row in conn.execute(select(a.c.id).where(a.c.id.in_(ids), a.c.deleted != 0))}
    twice = {i for i in ids if ids.count(i) > 1}
    for seat in result.seats:
        if seat.bot is None and seat.account_id in deleted | twice:
            seat.account_id = None


def record_results(conn: Connection, result: MatchResult) -> bool:
    """Store ``result`` and rate it, on ``conn`` inside the caller's transaction. False (and nothing written)
    when the match was recorded before. Rated: accounts and bot levels (deleted accounts, and an account on two
    seats, count as guests); a team with no rated player is left out of the rating (its rank still separates the
    others); fewer than two rated teams: no rating change. Ranks are :func:`final_ranks`; absent teams (a seat
    ``gone`` or ``idle``) change only their own ratings, each against the present teams (module docstring)."""
    m = ps.match_seats
    if conn.execute(select(m.c.seat).where(m.c.table_id == result.table_id).limit(1)).first() is not None:
        return False
    _drop_unratable(conn, result)
    for seat in result.seats:
        if seat.account_id is None and seat.bot is not None:
            seat.account_id = _bot_account(conn, seat.bot)
    by_seat = {s.seat: s for s in result.seats}
    ranks, won = final_ranks(result)
    ranks_by_seat = dict(zip((s.seat for s in result.seats), ranks, strict=True))
    kept: list[tuple[list[int], int, bool]] = []  # (accounts, rank, absent) of each team with a rated player
    for team in result.teams:
        ids_in = [i for i in (by_seat[s].account_id for s in team) if i is not None]
        if ids_in:
            kept.append((ids_in, max(ranks_by_seat[s] for s in team),
                         any(by_seat[s].gone or by_seat[s].idle for s in team)))
    ids = sorted({i for team, _, _ in kept for i in team})
    r = ps.ratings
    before: dict[int, Any] = {}
    if ids and result.rated:
        query = select(r).where(r.c.game == result.game, r.c.account_id.in_(ids)).with_for_update()
        before = {row.account_id: row for row in conn.execute(query)}
    after: dict[int, ratings.Rating] = {}

    def rate(teams: list[tuple[list[int], int, bool]], only: list[int] | None = None) -> None:
        old = [[ratings.Rating(before[i].mu, before[i].sigma) if i in before else ratings.Rating() for i in team]
               for team, _, _ in teams]
        new = ratings.rate(old, [rank for _, rank, _ in teams])
        for (team, _, _), team_new in zip(teams, new, strict=True):
            for account_id, rating in zip(team, team_new, strict=True):
                if only is None or account_id in only:
                    after[account_id] = rating

    present = [entry for entry in kept if not entry[2]]
    if result.rated:
        if len(present) >= 2:
            rate(present)
        for entry in kept:
            if entry[2] and present:
                rate([entry, *present], only=entry[0])
    rows = []
    for seat in result.seats:
        prev = before.get(seat.account_id) if seat.account_id is not None else None
        changed = after.get(seat.account_id) if seat.account_id is not None else None
        rows.append({
            "table_id": result.table_id, "seat": seat.seat, "game": result.game, "account_id": seat.account_id,
            "name": seat.name, "finished": result.finished, "players": len(result.seats),
            "rank": ranks_by_seat[seat.seat], "won": int(seat.seat in won), "points": seat.points,
            "hands": result.hands, "stats": seat.stats,
            "ordinal_before": None if changed is None else (prev.ordinal if prev is not None else ratings.Rating().ordinal),
            "ordinal_after": None if changed is None else changed.ordinal,
        })
    conn.execute(insert(m), rows)
    _add_stats(conn, result, won)
    history = []
    for account_id, rating in after.items():
        wins = sum(1 for s in result.seats if s.account_id == account_id and s.seat in won)  # won: not gone
        values = {"mu": rating.mu, "sigma": rating.sigma, "ordinal": rating.ordinal, "updated": result.finished}
        if account_id in before:
            conn.execute(update(r).where(r.c.account_id == account_id, r.c.game == result.game).values(
                matches=before[account_id].matches + 1, wins=before[account_id].wins + min(wins, 1), **values))
        else:
            conn.execute(insert(r).values(account_id=account_id, game=result.game, matches=1, wins=min(wins, 1),
                                          **values))
        history.append({"account_id": account_id, "game": result.game, "table_id": result.table_id,
                        "at": result.finished, "mu": rating.mu, "sigma": rating.sigma, "ordinal": rating.ordinal})
    if history:
        conn.execute(insert(ps.rating_history), history)
    return True


def _add_stats(conn: Connection, result: MatchResult, won: set[int]) -> None:
    """Add the match to each account's (and bot level's) running totals in ``player_stats``: one match per account
    however many seats it held (a bot level on three seats played one match, and won it when any of its seats
    won), and its seats' points, Nerts calls, cards left and anemones summed, with ``hands`` counted per seat
    (seats times hands), so that points and cards left per hand stay per seat and hand. ``left`` counts the match
    when one of the account's seats was ``gone`` at the end, ``timed_out`` when one was lost to the turn clock."""
    p = ps.player_stats
    totals: dict[int, dict[str, int]] = {}
    for seat in result.seats:
        if seat.account_id is None:
            continue
        add = totals.setdefault(seat.account_id, {"matches": 1, "wins": 0, "points": 0, "hands": 0,
                                                  "nerts_calls": 0, "cards_left": 0, "anemones": 0, "left": 0,
                                                  "timed_out": 0})
        add["wins"] = max(add["wins"], int(seat.seat in won))
        add["left"] = max(add["left"], int(seat.gone))
        add["timed_out"] = max(add["timed_out"], int(seat.timed_out))
        add["points"] += seat.points
        add["hands"] += result.hands
        for stat in ("nerts_calls", "cards_left", "anemones"):
            add[stat] += seat.stats.get(stat, 0)
    for account_id, add in totals.items():
        key = (p.c.account_id == account_id) & (p.c.game == result.game)
        done = conn.execute(update(p).where(key).values({p.c[k]: p.c[k] + v for k, v in add.items()}))
        if done.rowcount == 0:
            conn.execute(insert(p).values(account_id=account_id, game=result.game, **add))
