"""What a finished match leaves for its players (``docs/protocol.md``, "Accounts and players"): its
:class:`~cardtable.server.players.results.MatchResult`, read back from the table's stored record and its seats (who
holds each seat now, who left, who never moved), stored with the new ratings by ``players.results.record_results``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from sqlalchemy.engine import Connection

from cardtable.engine import HandState
from cardtable.replay import fold
from cardtable.server.core.clock import now_iso
from cardtable.server.players.account_seats import holding_accounts
from cardtable.server.players.results import MatchResult, SeatResult, record_results
from cardtable.server.storage.rows import record_of

if TYPE_CHECKING:
    from cardtable.engine import Match
    from cardtable.server.storage.rows import SeatRow, TableRow
    from cardtable.server.storage.store import Store


class FinishedSeat(Protocol):
    """A seat of a finished table: its stored row and the stand-in bot playing for its absent person, if any."""

    row: SeatRow
    standin: str | None


class FinishedTable(Protocol):
    """What a match's result is read from (``server/table/owner.py``'s ``Table``)."""

    id: str
    row: TableRow
    store: Store
    match: Match
    moved: set[int]
    """Seats whose person made a move of their own."""

    @property
    def game(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def seats(self) -> Sequence[FinishedSeat]: ...

    def timed_out_seats(self) -> set[int]:
        """Seats a stand-in kept after three timeouts this match (turn-based tables; empty for real-time)."""
        ...

log = logging.getLogger("cardtable.server.table.match_results")


def _hand_stats(table: FinishedTable, states: list[HandState], anemones: list[list[int]] | None) -> tuple[
        list[dict[str, int]], list[list[int]]]:
    """Per seat stats and the teams (seats sharing a Nerts layout; one seat each otherwise)."""
    players = len(table.seats)
    stats: list[dict[str, int]] = [{} for _ in range(players)]
    teams = [[s] for s in range(players)]
    if table.game == "nerts":
        for seat in range(players):
            stats[seat].update(nerts_calls=0, cards_left=0)
        for result in table.match.results:
            called = result.extra.get("called")
            if isinstance(called, int) and 0 <= called < players:
                stats[called]["nerts_calls"] += 1
        for state in states:
            for layout in state.view(None).get("layouts", []):
                for seat in layout["seats"]:
                    stats[seat]["cards_left"] += int(layout["nerts"]["count"])
        if states:
            teams = [list(layout["seats"]) for layout in states[-1].view(None).get("layouts", [])]
    elif anemones is not None:
        for seat in range(players):
            stats[seat]["anemones"] = len(anemones[seat]) if seat < len(anemones) else 0
    return stats, teams


async def match_result(table: FinishedTable) -> MatchResult:
    """The :class:`MatchResult` of ``table``, whose match has just ended or was abandoned (its record read back
    from the store): each person's seat goes to the account holding it now, marked ``gone`` (left, timed out, or
    abandoned), ``idle`` (no move of their own, ``Table.moved``) and ``timed_out`` (lost to the turn clock:
    ``Table.timed_out_seats``, also ``gone``)."""
    rows = await table.store.load_tables(table_id=table.id, with_hands=True)
    record = record_of(rows[0])
    last: dict[int, HandState] = {}

    def step(hand: int, _index: int | None, state: HandState) -> None:
        last[hand] = state

    folded = await asyncio.to_thread(fold, record, step)
    states = [last[h] for h in sorted(last)]
    stats, teams = _hand_stats(table, states, folded.anemones)
    bound = await holding_accounts(table.store, table.id, {s.row.seat: s.row.token_hash for s in table.seats})
    abandoned = table.status == "abandoned"
    timed_out = table.timed_out_seats()
    seats = []
    totals = list(table.match.totals)
    for state in table.seats:
        row = state.row
        person = row.kind == "person"
        lost = person and row.seat in timed_out
        seats.append(SeatResult(
            seat=row.seat, name=row.name, points=totals[row.seat], stats=stats[row.seat],
            account_id=bound.get(row.seat) if person else None,
            bot=row.bot if row.kind == "bot" else None,
            gone=person and (abandoned or row.left or state.standin is not None or lost),
            idle=person and row.seat not in table.moved, timed_out=lost,
        ))
    return MatchResult(table_id=table.id, game=table.game, finished=table.row.finished or now_iso(),
                       hands=table.row.hands_played or len(states), seats=seats, teams=teams,
                       winners=table.row.winners, rated=not table.row.seed_chosen)


FinishHook = Callable[[Connection, FinishedTable, MatchResult], None]
"""What else a finished match leaves, written in the transaction that stores its results (so once, with them)."""

FINISH_HOOKS: list[FinishHook] = []
"""The :data:`FinishHook` s the layers above register at import (``server/lobby/daily.py``: the daily deal's
result), run in order for every match that ends or is abandoned."""


ENDED_CALLBACKS: list[Callable[[FinishedTable], None]] = []
"""Called (in order, after the results are stored) for every match that ends or is abandoned; registered at import
by the layers above (``server/lobby/reviews.py``: the reviews of the seats)."""


async def record_finished(table: FinishedTable) -> None:
    """Store the results and the new ratings of ``table``'s finished match, and run :data:`FINISH_HOOKS` in the
    same transaction (logged, never raised: a failure here must not stop the table)."""
    try:
        result = await match_result(table)

        def fn(conn: Connection) -> None:
            record_results(conn, result)
            for hook in FINISH_HOOKS:
                hook(conn, table, result)

        await table.store.write(fn)
    except Exception:
        log.exception("table %s: recording the results and ratings failed", table.id)
    for callback in ENDED_CALLBACKS:
        try:
            callback(table)
        except Exception:
            log.exception("table %s: a callback at the match's end failed", table.id)
