"""The clock of a turn-based table (issue 29, ``docs/protocol.md``, "Turn-based tables"): each seat's time bank,
the deadline of the seat to move, the stand-in's move when a deadline passes, and the "your turn" notification.

A seat's bank starts at the table's ``turn_clock["start_s"]``. When its turn begins its deadline is then plus its
bank; when it moves, what was left of its bank plus ``per_move_s`` is its new bank, never above ``start_s``. When
the deadline passes first, the stand-in bot (``STANDIN_BOTS``) makes that one move, the seat's bank starts again at
``per_move_s`` and the seat counts a timeout; at :data:`KEPT_AFTER` timeouts the stand-in keeps the seat for the
rest of the match (its ``left`` mark is stored: the match counts as a leave, ``players/results.py``).

The banks and the deadline are stored (``turn_banks``, Unix milliseconds) each time they change, so they outlive
the process: a table rebuilt from its record reads them back, and a deadline that passed meanwhile is acted on at
once. Only the seat of a person still playing has a deadline; a table whose seat to move is a bot (or a kept
stand-in), or that is between hands, has none and is "active": held in memory until it waits for a person again.
A table in play whose person to move has time left is *waiting* (``Store.live_table_ids``): nothing needs it in
memory, and it is let go after ``turn_idle_s`` with nobody connected (``lobby/manager.py``).

:class:`TurnClock` is a part of :class:`~cardtable.server.table.owner.Table`; it declares the table's attributes it
reads. Everything here runs on the table's owner.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cardtable import bots
from cardtable.engine import HandState, Match
from cardtable.server.core.clock import iso_of_ms, unix_ms
from cardtable.server.core.settings import Settings
from cardtable.server.players.account_seats import holding_accounts
from cardtable.server.players.push import notify_turn
from cardtable.server.storage.rows import TableRow, TurnBank
from cardtable.server.storage.store import Store
from cardtable.server.table.seats import SeatState

log = logging.getLogger("cardtable.server.table.turn_clock")

KEPT_AFTER = 3
"""Timeouts in one match after which the stand-in keeps the seat for the rest of it."""

STANDIN_BOT = "heuristic"
"""The Enemy Anemone bot that moves for a seat whose time ran out (as ``presence.STANDIN_BOTS``)."""


class TurnClock:
    """The time banks and the deadline of a turn-based table (nothing for a real-time one)."""

    id: str
    row: TableRow
    store: Store
    settings: Settings
    seats: list[SeatState]
    state: HandState | None
    match: Match
    banks: list[TurnBank]
    """Each seat's bank (turn-based tables; empty for real-time ones)."""
    turn_seat: int | None
    """The seat whose deadline runs now (a person's, still playing), or ``None``."""
    _deadline_timer: asyncio.TimerHandle | None
    _timing_out: int | None
    _unstored: bool
    """A turn ended (:meth:`turn_moved`) and the banks as stored still show its deadline."""
    _notices: set[asyncio.Task[None]]
    _banks_write: asyncio.Future[None] | None

    if TYPE_CHECKING:
        @property
        def status(self) -> str: ...

        def submit_call(self, fn: Callable[[], Awaitable[Any]]) -> asyncio.Future[Any]: ...

        def announce(self) -> None: ...

        def _after_change(self) -> None: ...

        async def apply_timeout_move(self, seat: int, action: dict[str, Any]) -> None: ...

    # -- the banks ----------------------------------------------------------------------------------------

    def init_turn_clock(self) -> None:
        """Read the stored banks back (``row.turn_banks``) or start every seat's at ``start_s``; nothing for a
        real-time table."""
        self.turn_seat = None
        self._deadline_timer = None
        self._timing_out = None
        self._unstored = False
        self._notices = set()
        self._banks_write = None
        if not self.row.turn_based:
            self.banks = []
            return
        start_ms = self.turn_start_ms
        stored = {bank.seat: bank for bank in self.row.turn_banks}
        self.banks = [stored.get(seat.row.seat) or TurnBank(seat.row.seat, start_ms) for seat in self.seats]
        self.row.turn_banks = []
        for bank in self.banks:
            if bank.deadline_ms is not None:
                self.turn_seat = bank.seat

    @property
    def turn_start_ms(self) -> int:
        """The bank every seat starts with, in milliseconds (``turn_clock["start_s"]``)."""
        return int((self.row.turn_clock or {}).get("start_s", 0) * 1000)

    @property
    def turn_per_move_ms(self) -> int:
        """What a seat's bank gains after each of its moves, in milliseconds (``turn_clock["per_move_s"]``)."""
        return int((self.row.turn_clock or {}).get("per_move_s", 0) * 1000)

    def kept(self, seat: int) -> bool:
        """Whether the stand-in keeps ``seat`` for the rest of the match (:data:`KEPT_AFTER` timeouts)."""
        return bool(self.banks) and self.banks[seat].timeouts >= KEPT_AFTER

    def timed_out_seats(self) -> set[int]:
        """Seats the stand-in keeps after :data:`KEPT_AFTER` timeouts this match (empty for a real-time table)."""
        return {bank.seat for bank in self.banks if bank.timeouts >= KEPT_AFTER}

    def waiting(self) -> bool:
        """Whether the table waits for a person's move with time left (nothing else to do until then)."""
        bank = None if self.turn_seat is None else self.banks[self.turn_seat]
        return bank is not None and bank.deadline_ms is not None and bank.deadline_ms > unix_ms()

    def turn_dict(self) -> dict[str, Any] | None:
        """The ``turn`` of the protocol's ``TABLE`` (``docs/protocol.md``): ``None`` for a real-time table, else
        ``{"seat", "deadline" (ISO 8601 UTC), "deadline_ms" (Unix ms), "banks_ms" (each seat's bank left now, in
        ms), "timeouts", "kept"}``."""
        if not self.banks:
            return None
        now = unix_ms()
        seat = self.turn_seat
        deadline = None if seat is None else self.banks[seat].deadline_ms
        return {
            "seat": seat, "deadline": None if deadline is None else iso_of_ms(deadline), "deadline_ms": deadline,
            "banks_ms": [max(0, bank.deadline_ms - now) if bank.deadline_ms is not None else bank.bank_ms
                         for bank in self.banks],
            "timeouts": [bank.timeouts for bank in self.banks],
            "kept": [bank.timeouts >= KEPT_AFTER for bank in self.banks],
        }

    # -- moves and turns ----------------------------------------------------------------------------------

    def turn_moved(self, seat: int) -> None:
        """``seat`` moved (its action applied): if its deadline ran, its turn ends and its bank is what was left
        plus ``per_move_s`` (at most ``start_s``), or ``per_move_s`` after a timeout's move."""
        if seat != self.turn_seat:
            return
        bank = self.banks[seat]
        if self._timing_out == seat:
            bank.bank_ms = min(self.turn_start_ms, self.turn_per_move_ms)
        elif bank.deadline_ms is not None:
            left = max(0, bank.deadline_ms - unix_ms())
            bank.bank_ms = min(self.turn_start_ms, left + self.turn_per_move_ms)
        bank.deadline_ms = None
        self.turn_seat = None
        self._timing_out = None
        self._unstored = True  # stored by the turn_changed that follows, even if no person's turn begins

    def turn_changed(self) -> None:
        """After every change: start the turn of the seat to move now (its deadline stored, its timer armed, its
        person told when away), or end a turn that moved on without its seat's move (the match ended)."""
        if not self.banks:
            return
        state = self.state
        to_act = state.to_act() if self.status == "playing" and state is not None and not state.is_over else []
        seat = to_act[0] if len(to_act) == 1 else None
        if seat is not None and (self.seats[seat].row.kind != "person" or self.seats[seat].standin is not None):
            seat = None  # a bot moves: no deadline (the table stays active while it thinks)
        if seat == self.turn_seat and (seat is None or self._deadline_timer is not None) and not self._unstored:
            return
        changed, self._unstored = self._unstored, False
        if self.turn_seat is not None and seat != self.turn_seat:
            old = self.banks[self.turn_seat]
            if old.deadline_ms is not None:  # moved on without its move (a stand-in took over, the match ended):
                old.bank_ms = max(0, old.deadline_ms - unix_ms())  # what was left, with no move's gain
                old.deadline_ms = None
            self.turn_seat = None
            changed = True
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None
        if seat is not None:
            bank = self.banks[seat]
            if bank.deadline_ms is None:
                bank.deadline_ms = unix_ms() + bank.bank_ms
                changed = True
                if not self.seats[seat].connections:
                    self._notify(seat)
            self.turn_seat = seat
            delay = max(0.0, (bank.deadline_ms - unix_ms()) / 1000.0)
            self._deadline_timer = asyncio.get_running_loop().call_later(
                delay, lambda: self.submit_call(self._time_out))
        if changed:
            self._store_banks()
            self.announce()

    def stop_turn_clock(self) -> None:
        """Cancel the deadline's timer (the table stops here; the deadline stays stored)."""
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None

    def _store_banks(self) -> None:
        future = self.store.write_turn_banks(self.id, [TurnBank(b.seat, b.bank_ms, b.deadline_ms, b.timeouts)
                                                       for b in self.banks])
        self._banks_write = future
        future.add_done_callback(self._stored)

    def _stored(self, future: asyncio.Future[None]) -> None:
        if self._banks_write is future:
            self._banks_write = None
        if not future.cancelled() and future.exception() is not None:
            log.warning("table %s: storing the time banks failed: %r", self.id, future.exception())

    async def banks_written(self) -> None:
        """Wait until the banks' last write is committed (the owner acknowledges moves only after it: whoever
        reads the database next sees the turn they made). Raises what the write raised."""
        if self._banks_write is not None:
            await asyncio.shield(self._banks_write)

    async def _time_out(self) -> None:
        """The deadline's timer (on the owner): if the seat to move is still out of time, its stand-in moves
        for it; at :data:`KEPT_AFTER` timeouts it keeps the seat (stored as a leave)."""
        self._deadline_timer = None
        seat = self.turn_seat
        state = self.state
        if seat is None or state is None or state.is_over or self.status != "playing":
            return
        bank = self.banks[seat]
        if bank.deadline_ms is None or bank.deadline_ms > unix_ms() + 5:
            self.turn_changed()  # woken early: set the timer again
            return
        if seat not in state.to_act():
            return
        legal = state.legal_actions(seat)
        if not legal:
            return
        bank.timeouts += 1
        action = bots.get_bot(self.row.game, STANDIN_BOT).make(random.randrange(2**31)).choose(
            state.view(seat), legal) or legal[0]
        log.info("table %s: seat %d ran out of time (%d this match)", self.id, seat, bank.timeouts)
        self._timing_out = seat
        await self.apply_timeout_move(seat, dict(action))
        if self._timing_out == seat:  # refused (cannot happen with a legal action): the next look tries again
            self._timing_out = None
        if bank.timeouts >= KEPT_AFTER:
            await self.keep_seat(seat)

    async def keep_seat(self, seat: int) -> None:
        """The stand-in keeps ``seat`` for the rest of the match: stored as a leave (``SeatRow.left``)."""
        state = self.seats[seat]
        state.row.left = True
        state.standin = STANDIN_BOT
        await self.store.update_seat(self.id, state.row)
        self._after_change()
        self.announce()

    def _notify(self, seat: int) -> None:
        """Tell the account holding ``seat`` that it is its turn (Web Push, ``players/push.py``), in the background."""
        token_hashes = {s.row.seat: s.row.token_hash for s in self.seats}

        async def tell() -> None:
            try:
                account = (await holding_accounts(self.store, self.id, token_hashes)).get(seat)
                if account is not None:
                    await notify_turn(self.store, self.settings, account, self.id, self.row.game)
            except Exception:
                log.exception("table %s: the turn notification failed", self.id)

        task = asyncio.create_task(tell(), name=f"turn-notice-{self.id}")
        self._notices.add(task)
        task.add_done_callback(self._notices.discard)
