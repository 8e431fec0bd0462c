"""The table owner (``docs/architecture.md``, "The table server"): one asyncio task per table applies actions one at a time.

Everything that changes a table goes through its queue: actions from connections, from bots and from the clock
(:class:`QueuedAction`), and lobby operations (:class:`Call`). Actions waiting together are applied in arrival order and
persisted in one write (group commit) before they are acknowledged and their updates go out. After every change
the owner re-reads the hand's clock (``state.clock_action()``: Nerts' in-flight ``end_hand`` and the stall guard's
``rotate``, ``docs/rules/nerts.md``), wakes the bots, and starts the next hand once its people are ready (``handover.py``) until the match ends.

This module holds the owner's queue, applying actions, the hands and the match; :class:`Table`'s other parts are
in their own modules: what its audience is sent (``audience.py``), its seats and who is there (``presence.py``),
and its clock and bots (``driving.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from cardtable.engine import Action, Event, HandState, IllegalAction, Match
from cardtable.games import GameInfo
from cardtable.server.core.clock import now_iso
from cardtable.server.core.errors import TableError, _refusal
from cardtable.server.core.settings import Settings
from cardtable.server.storage.keys import server_key
from cardtable.server.storage.rows import TableRow
from cardtable.server.storage.store import Store
from cardtable.server.table.actions import QueuedAction
from cardtable.server.table.audience import Audience
from cardtable.server.table.connections import Connection
from cardtable.server.table.deals import DEAL_KEY, hand_seed
from cardtable.server.table.driving import Driving
from cardtable.server.table.ending import Ending
from cardtable.server.table.fairness import FairGate
from cardtable.server.table.handover import HandOver
from cardtable.server.table.presence import STANDIN_BOTS, Presence
from cardtable.server.table.reactions import Reactions
from cardtable.server.table.seats import SeatState
from cardtable.server.table.turn_clock import TurnClock

log = logging.getLogger("cardtable.server.table.owner")

MAX_BATCH = 64
"""Most queued actions applied before one group commit."""


@dataclass(slots=True)
class Call:
    """A lobby operation run by the owner between actions; ``future`` gets its result or its exception."""

    fn: Callable[[], Awaitable[Any]]
    future: asyncio.Future[Any]


class Table(Audience, Presence, Driving, HandOver, TurnClock, Ending):
    """A live table and its owner task. Build with :meth:`create` or :meth:`restore`, then :meth:`start_owner`."""

    def __init__(self, row: TableRow, info: GameInfo, store: Store, settings: Settings) -> None:
        self.id = row.id
        self.row = row
        self.info = info
        self.store = store
        self.settings = settings
        self.match: Match = info.new_match(row.options)
        self.full_options = {spec.name: spec.default for spec in info.option_specs}
        self.full_options.update(row.options)
        self.seats = [SeatState(seat) for seat in row.seats]
        self.spectators: set[Connection] = set()
        self.state: HandState | None = None
        self.hand_index = -1
        self.hand_start = time.monotonic()
        self.last_ms = 0
        self.n_actions = 0
        self.version = 0
        self.queue: asyncio.Queue[QueuedAction | Call] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self.changed = asyncio.Event()
        self._clock_key: tuple[int, Action] | None = None
        self._clock_handles: list[asyncio.TimerHandle] = []
        self._next_hand: asyncio.TimerHandle | None = None
        self.ready: set[int] = set()
        self.next_hand_due: float | None = None
        self.countdown_due: float | None = None
        self._bot_tasks: dict[int, tuple[str, asyncio.Task[None]]] = {}
        self.broken: str | None = None
        self.gate: FairGate | None = FairGate(self) if info.name == "nerts" else None
        """Orders racing Nerts plays by estimated send time (``server/table/fairness.py``); ``None`` for other games."""
        self.last_presence = time.monotonic()
        """Monotonic seconds when a connection last came or went (or the table was built): an open table with
        nobody connected expires ``open_table_idle_s`` after it."""
        self.last_person = time.monotonic()
        """Monotonic seconds when a seated person's connection last came or went: a table in play with no person
        connected ends as abandoned its grace plus ``abandon_after_s`` after it."""
        self._announce: asyncio.TimerHandle | None = None
        self._to_watch: list[tuple[str, tuple[Connection, ...]]] = []
        self._watch_flush: asyncio.Handle | None = None
        self._announced_at = -1e9
        self.starts_at: float | None = None
        """When the table starts by itself (Unix time in seconds), or ``None``; see ``Manager.arm_autostart``."""
        self.start_on_hello = False
        """True when the creator's first connection starts the table at once (every other seat is a bot)."""
        self.autostart: asyncio.TimerHandle | None = None
        self.play_now = False
        """True for a table made by Play now: its bot seats are replaceable until the start."""
        self.moved: set[int] = set()
        """Seats whose person made a move of their own (through a connection, not a stand-in bot); after a restart,
        every seat with a move in the record. A person who never moved raises nobody's rating (``results.py``)."""
        self.creator: str | None = None
        """The client address the table was made from (set by the lobby; ``None`` after a restart): its searching
        bots share that address's quota of the bot pool (``server/table/bots.py``, ``SearchScheduler``)."""
        self.reactions = Reactions(self.broadcast)
        """Each seat's budget of reactions and their broadcast (``reactions.py``): never in the record."""
        self.successor: str | None = None
        """The id of the table Play again opened after this finished one (``server/lobby/again.py``), or ``None``."""
        self.followed: set[int] = set()
        """Seats of this table whose person took a seat at :attr:`successor` (each follows once)."""
        self.stopped = False
        """Set by :meth:`stop`: later calls are answered 503 at once."""
        self.on_error: Callable[[BaseException], None] | None = None
        """Set when several processes serve (``server/cluster/ownership.py``): a failed write (refused by the fence, or the
        database away) calls it instead of breaking the table, and the owner task stops acknowledging anything;
        the table is then dropped here and rebuilt from its record by whichever process takes it next."""
        self.init_turn_clock()

    # -- building ---------------------------------------------------------------------------------------

    @property
    def game(self) -> str:
        """The game's name."""
        return self.info.name

    @property
    def status(self) -> str:
        """``open``, ``playing`` or ``finished``."""
        return self.row.status

    def fold(self) -> None:
        """Rebuild the match by folding the stored record (``row.hands``) through the engine; ``ValueError`` if
        the record does not replay. Nerts hand clocks resume from the last action's ``ms``."""
        for h, hand in enumerate(self.row.hands):
            state = self.match.start_hand(hand.deal)
            self.state, self.hand_index, self.last_ms, self.n_actions = state, h, 0, 0
            for seat, ms, action in hand.actions:
                state.apply(seat, action, ms)
                if seat is not None:
                    self.moved.add(seat)
                self.last_ms = ms
                self.n_actions += 1
                self.version += 1
            if state.is_over:
                self.match.finish_hand()
        self.hand_start = time.monotonic() - self.last_ms / 1000.0
        self.row.hands = []

    def start_owner(self) -> None:
        """Start the owner task and, for a table in play, its clock, bots and absence timers."""
        self.task = asyncio.create_task(self._run(), name=f"table-{self.id}")
        if self.status == "playing":
            if self.state is None:
                self._schedule_next_hand(0.0)
            elif self.state.is_over and not self.match.is_over:
                self.open_ready_step(restored=True)  # rebuilt between hands: a fresh ready step (handover.py)
            elif self.state.is_over and self.match.is_over:
                self.submit_call(self._finish_match)
            for seat in self.seats:
                if seat.row.kind == "person":
                    if seat.row.left:
                        seat.standin = STANDIN_BOTS[self.game]
                    else:
                        self._start_away_timer(seat)
            self._after_change()

    async def stop(self) -> None:
        """Stop the owner, its bots and timers (the server is shutting down; nothing is lost)."""
        self.stopped = True
        for handle in self._clock_handles:
            handle.cancel()
        if self._next_hand is not None:
            self._next_hand.cancel()
        if self.gate is not None:
            self.gate.close()
        if self._announce is not None:
            self._announce.cancel()
            self._announce = None
        if self._watch_flush is not None:
            self._watch_flush.cancel()
            self._watch_flush = None
        if self.autostart is not None:
            self.autostart.cancel()
        self.stop_turn_clock()
        self.reactions.close()  # no cycle left: freed at once when let go (reactions.py)
        for seat in self.seats:
            if seat.away_timer is not None:
                seat.away_timer.cancel()
        tasks = [task for _, task in self._bot_tasks.values()]
        if self.task is not None:
            tasks.append(self.task)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        while not self.queue.empty():  # what was still queued is answered, never left waiting
            item = self.queue.get_nowait()
            if isinstance(item, Call) and not item.future.done():
                item.future.set_exception(TableError(503, "http.error", "the table stopped here: try again",
                                                     {"status": 503}))
            elif isinstance(item, QueuedAction) and item.future is not None and not item.future.done():
                item.future.set_result((False, "the table stopped here"))

    # -- the queue --------------------------------------------------------------------------------------

    def submit_call(self, fn: Callable[[], Awaitable[Any]]) -> asyncio.Future[Any]:
        """Queue a lobby operation; the future resolves with its result once the owner has run it."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.stopped:  # stopped here (moved to another process): answered at once, never left waiting
            future.set_exception(TableError(503, "http.error", "the table stopped here: try again", {"status": 503}))
            return future
        self.queue.put_nowait(Call(fn, future))
        return future

    def submit_action(self, play: QueuedAction) -> None:
        """Queue an action (Nerts: through the fairness gate, which orders racing plays by send time)."""
        if self.gate is not None:
            self.gate.submit(play)
        else:
            self.enqueue(play)

    def enqueue(self, play: QueuedAction) -> None:
        """Put ``play`` on the owner's queue as it is (past the fairness gate: the gate releases plays here)."""
        self.queue.put_nowait(play)

    async def _run(self) -> None:
        while True:
            item = await self.queue.get()
            if isinstance(item, Call):
                await self._run_call(item)
                continue
            batch = [item]
            pending_call: Call | None = None
            while len(batch) < MAX_BATCH and not self.queue.empty():
                nxt = self.queue.get_nowait()
                if isinstance(nxt, Call):
                    pending_call = nxt
                    break
                batch.append(nxt)
            try:
                await self._apply_batch(batch)
            except Exception as error:
                if self.on_error is not None:
                    self.on_error(error)
                    return
                log.exception("table %s: applying actions failed", self.id)
                self._break(f"the table stopped on a server error: {error}")
                return
            if pending_call is not None:
                await self._run_call(pending_call)

    async def _run_call(self, call: Call) -> None:
        try:
            result = await call.fn()
        except Exception as error:
            if self.on_error is not None and not isinstance(error, TableError):
                # A write failed: what this table holds in memory may be ahead of its record. Answer 503 and stop.
                if not call.future.done():
                    call.future.set_exception(TableError(
                        503, "http.error", "the table is moving to another server process: try again",
                        {"status": 503}))
                self.on_error(error)
                await asyncio.Event().wait()  # the owner stops here; the cluster drops (and cancels) it
            if not call.future.done():
                call.future.set_exception(error)
        else:
            if not call.future.done():
                call.future.set_result(result)

    def _break(self, reason: str) -> None:
        self.broken = reason
        self.flush_spectators()
        for connection in self.all_connections():
            connection.send_message({"type": "error", **_refusal(reason, "table.broken", {"detail": reason})})
            connection.close()

    # -- applying actions ---------------------------------------------------------------------------------

    async def _apply_batch(self, batch: list[QueuedAction]) -> None:
        rows: list[tuple[int, int | None, int, dict[str, Any]]] = []
        # Each update is made at its own version, just before the next action is applied; the last one after the
        # commit, once its ack is out (the state cannot change while the owner waits for the commit).
        accepted: list[tuple[QueuedAction, int, list[Event]]] = []
        texts: dict[int, dict[int | None, str]] = {}
        rejected: list[tuple[QueuedAction, dict[str, Any]]] = []
        hand = self.hand_index
        for play in batch:
            state = self.state
            if self.status != "playing" or state is None:
                if self.status == "open":
                    rejected.append((play, _refusal("the game has not started", "table.not_started")))
                else:
                    rejected.append((play, _refusal("the game is over", "table.over")))
                continue
            if play.connection is not None and play.seat is not None and self.kept(play.seat):
                rejected.append((play, _refusal("a bot plays this seat to the end of the match: it ran out of time "
                                                "three times", "seat.kept")))
                continue
            if play.due is not None:
                clock = state.clock_action()
                if clock is None or clock[1] != play.action or state.is_over:
                    continue
                if self.now_ms() + 5 < clock[0]:  # woken early: set the timer again
                    self._clock_key = None
                    self._schedule_clock()
                    continue
                ms = max(self.now_ms(), self.last_ms, clock[0])
            else:
                ms = max(self.now_ms() if play.ms is None else play.ms, self.last_ms)
            if accepted and accepted[-1][1] not in texts:
                texts[accepted[-1][1]] = self._updates(state, accepted[-1][2], accepted[-1][1])
            try:
                events = state.apply(play.seat, play.action, ms)
            except IllegalAction as error:
                rejected.append((play, _refusal(str(error), error.code, error.params)))
                continue
            except ValueError as error:
                rejected.append((play, _refusal(str(error) or "that action is not allowed now", "action.illegal")))
                continue
            self.last_ms = ms
            if play.connection is not None and play.seat is not None:
                self.moved.add(play.seat)
            if play.seat is not None and self.banks:
                self.turn_moved(play.seat)
            rows.append((self.n_actions, play.seat, ms, dict(play.action)))
            self.n_actions += 1
            self.version += 1
            accepted.append((play, self.version, events))
        if rows:
            written = self.store.insert_actions(self.id, hand, rows, now_iso() if self.row.turn_based else None)
            if self.banks:  # the new turn's deadline is stored with the actions, before the ack (turn_clock.py)
                self.turn_changed()
            await written
            await self.banks_written()
        for play, refusal in rejected:
            if play.connection is not None:
                play.connection.send_message({"type": "reject", "seq": play.seq, **refusal})
            if play.future is not None and not play.future.done():
                play.future.set_result((False, refusal["reason"]))
        for play, version, events in accepted:
            if play.connection is not None:
                play.connection.send_message({"type": "ack", "seq": play.seq, "v": version})
            if play.future is not None and not play.future.done():
                play.future.set_result((True, version))
            if version not in texts and self.state is not None:
                texts[version] = self._updates(self.state, events, version)
            self._send_by_seat(texts[version])
        self.flush_seats()
        if accepted:
            if self.state is not None and self.state.is_over:
                await self._end_hand()
            self._after_change()

    async def apply_timeout_move(self, seat: int, action: dict[str, Any]) -> None:
        """Apply the stand-in's ``action`` for ``seat``, whose time ran out (``turn_clock.py``; on the owner)."""
        await self._apply_batch([QueuedAction(seat, action)])

    # -- hands ----------------------------------------------------------------------------------------

    def _schedule_next_hand(self, delay: float) -> None:
        if self._next_hand is not None:
            self._next_hand.cancel()
        loop = asyncio.get_running_loop()
        self._next_hand = loop.call_later(delay, lambda: self.submit_call(self._start_hand))

    async def begin_match(self, on_playing: Callable[[], None] | None = None) -> None:
        """Start the match (on the owner, every seat taken): bot seats are no longer replaceable, the status becomes
        ``playing`` (stored), each absent person's grace timer starts and the first hand is dealt at once.
        ``on_playing`` runs as soon as the status is ``playing``, before anything is awaited (the lobby lists the
        table there)."""
        for seat in self.seats:
            seat.replaceable = False
        self.row.status = "playing"
        if on_playing is not None:
            on_playing()
        await self.store.update_status(self.id, "playing")
        for seat in self.seats:
            self._start_away_timer(seat)
        self.announce()
        await self._start_hand()

    async def _start_hand(self) -> None:
        self._next_hand = None
        self.close_ready_step()
        if self.status != "playing" or self.match.is_over:
            return
        if self.state is not None and not self.state.is_over:
            return
        index = self.hand_index + 1
        key = None if self.row.seed_chosen else await server_key(self.store, DEAL_KEY)
        deal = self.match.deal_cards(hand_seed(self.row.seed, index, key))
        await self.store.insert_hand(self.id, index, deal)
        self.state = self.match.start_hand(deal)
        self.hand_index, self.last_ms, self.n_actions = index, 0, 0
        self.hand_start = time.monotonic()
        if self.gate is not None:
            self.gate.reset()
        for connection in self.all_connections():
            self.send_snapshot(connection)
        self._after_change()

    async def _end_hand(self) -> None:
        result = self.match.finish_hand()
        over = self.match.is_over
        self.broadcast({
            "type": "hand_over", "hand": self.hand_index, "scores": list(result.scores),
            "totals": list(self.match.totals), "ended": result.ended,
            "winners": self.match.winners() if over else None,
        })
        if over:
            await self._finish_match()
        else:
            self.open_ready_step()  # the next hand waits for Ready (handover.py)
