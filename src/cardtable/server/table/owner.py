"""The table owner (``docs/architecture.md``, "The table server"): one asyncio task per table applies actions one at a time.

Everything that changes a table goes through its queue: actions from connections, from bots and from the clock
(:class:`Play`), and lobby operations (:class:`Call`). Actions waiting together are applied in arrival order and
persisted in one write (group commit) before they are acknowledged and their updates go out. After every change
the owner re-reads the hand's clock (``state.clock_action()``: Nerts' in-flight ``end_hand`` and the stall guard's
``rotate``, ``docs/rules/nerts.md``), wakes the bots, and starts the next hand after a pause until the match ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from cardtable.engine import Action, Event, HandState, IllegalAction, Match
from cardtable.games import GameInfo
from cardtable.server.core import messages
from cardtable.server.core.clock import now_iso
from cardtable.server.core.errors import TableError, _refusal
from cardtable.server.core.settings import Settings
from cardtable.server.storage.keys import server_key
from cardtable.server.storage.store import SeatRow, Store, TableRow
from cardtable.server.table.actions import Play
from cardtable.server.table.bots import drive_seat
from cardtable.server.table.connections import Peer
from cardtable.server.table.fairness import FairGate
from cardtable.server.table.match_results import record_finished

log = logging.getLogger("cardtable.server.table.owner")

STANDIN_BOTS = {"nerts": "greedy:medium", "anemone": "heuristic"}
"""The bot that plays for a person who left or stayed away longer than the table's grace."""

DEAL_KEY = "deal"
"""The name of the server key mixed into the seeds of the hands it deals (``server/storage/keys.py``)."""

MAX_BATCH = 64
"""Most queued actions applied before one group commit."""


def hand_seed(seed: int, hand: int, key: bytes | None = None) -> int:
    """The shuffle seed (0 to 2**62 - 1) of hand ``hand`` (from 0) of a table seeded with ``seed``.

    With the server's ``key`` (``keys.server_key(store, "deal")``, for every table whose seed the server chose) it
    is an HMAC-SHA256 of the seed and the hand, so that knowing a table's seed gives nobody its deals; without
    (a creator's chosen seed, ``TableRow.seed_chosen``: one person and bots, unrated) a plain function of both,
    so that the creator can deal the same hands again."""
    if key is not None:
        digest = hmac.new(key, f"{seed}:{hand}".encode(), hashlib.sha256).digest()
        return int.from_bytes(digest[:8], "big") % (2**62)
    return (seed * 1_000_003 + hand * 7919 + 17) % (2**62)


@dataclass(slots=True)
class Call:
    """A lobby operation run by the owner between actions; ``future`` gets its result or its exception."""

    fn: Callable[[], Awaitable[Any]]
    future: asyncio.Future[Any]


@dataclass(slots=True)
class SeatState:
    """A seat at a live table: the stored :class:`SeatRow` plus who is connected and who plays for an absent person."""

    row: SeatRow
    peers: set[Peer] = field(default_factory=set)
    standin: str | None = None
    away_timer: asyncio.TimerHandle | None = None
    replaceable: bool = False
    """A bot seat a joining person may take before the start (Play now tables)."""
    account: tuple[str, str] | None = None
    """``(token hash, account name)`` when the seat was tied to an account (``server/players/accounts.py``); it counts only
    while the seat's token hash is that one, so a seat left and taken again is nobody's account."""


class Table:
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
        self.spectators: set[Peer] = set()
        self.state: HandState | None = None
        self.hand_index = -1
        self.hand_start = time.monotonic()
        self.last_ms = 0
        self.n_actions = 0
        self.version = 0
        self.queue: asyncio.Queue[Play | Call] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self.changed = asyncio.Event()
        self._clock_key: tuple[int, Action] | None = None
        self._clock_handles: list[asyncio.TimerHandle] = []
        self._next_hand: asyncio.TimerHandle | None = None
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
        self._to_watch: list[tuple[str, tuple[Peer, ...]]] = []
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
        self.stopped = False
        """Set by :meth:`stop`: later calls are answered 503 at once."""
        self.on_error: Callable[[BaseException], None] | None = None
        """Set when several processes serve (``server/cluster/ownership.py``): a failed write (refused by the fence, or the
        database away) calls it instead of breaking the table, and the owner task stops acknowledging anything;
        the table is then dropped here and rebuilt from its record by whichever process takes it next."""

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
            if self.state is None or (self.state.is_over and not self.match.is_over):
                self._schedule_next_hand(0.0 if self.state is None else self.settings.hand_pause_s)
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
            elif isinstance(item, Play) and item.future is not None and not item.future.done():
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

    def submit_play(self, play: Play) -> None:
        """Queue an action (Nerts: through the fairness gate, which orders racing plays by send time)."""
        if self.gate is not None:
            self.gate.submit(play)
        else:
            self.enqueue(play)

    def enqueue(self, play: Play) -> None:
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
        for peer in self.all_peers():
            peer.send_message({"type": "error", **_refusal(reason, "table.broken", {"detail": reason})})
            peer.close()

    # -- applying actions ---------------------------------------------------------------------------------

    def now_ms(self) -> int:
        """Milliseconds since the current hand began, by the server's monotonic clock."""
        return int((time.monotonic() - self.hand_start) * 1000)

    async def _apply_batch(self, batch: list[Play]) -> None:
        rows: list[tuple[int, int | None, int, dict[str, Any]]] = []
        # Each update is made at its own version, just before the next action is applied; the last one after the
        # commit, once its ack is out (the state cannot change while the owner waits for the commit).
        accepted: list[tuple[Play, int, list[Event]]] = []
        texts: dict[int, dict[int | None, str]] = {}
        rejected: list[tuple[Play, dict[str, Any]]] = []
        hand = self.hand_index
        for play in batch:
            state = self.state
            if self.status != "playing" or state is None:
                if self.status == "open":
                    rejected.append((play, _refusal("the game has not started", "table.not_started")))
                else:
                    rejected.append((play, _refusal("the game is over", "table.over")))
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
            if play.peer is not None and play.seat is not None:
                self.moved.add(play.seat)
            rows.append((self.n_actions, play.seat, ms, dict(play.action)))
            self.n_actions += 1
            self.version += 1
            accepted.append((play, self.version, events))
        if rows:
            await self.store.insert_actions(self.id, hand, rows)
        for play, refusal in rejected:
            if play.peer is not None:
                play.peer.send_message({"type": "reject", "seq": play.seq, **refusal})
            if play.future is not None and not play.future.done():
                play.future.set_result((False, refusal["reason"]))
        for play, version, events in accepted:
            if play.peer is not None:
                play.peer.send_message({"type": "ack", "seq": play.seq, "v": version})
            if play.future is not None and not play.future.done():
                play.future.set_result((True, version))
            if version not in texts and self.state is not None:
                texts[version] = self._updates(self.state, events, version)
            self._send_by_seat(texts[version])
        if accepted:
            if self.state is not None and self.state.is_over:
                await self._end_hand()
            self._after_change()

    def _updates(self, state: HandState, events: list[Event], version: int) -> dict[int | None, str]:
        """Each viewer's ``update`` at ``version`` (seats with a connection, and ``None`` for the spectators,
        who all get the same text), encoded once per viewer."""
        texts: dict[int | None, str] = {}
        acting = self.acting()
        encode = messages.encode
        for viewer in self._viewers():
            texts[viewer] = encode({
                "type": "update", "v": version, "events": state.events_for(events, viewer),
                "view": state.view(viewer), "legal": self.legal_for(viewer, acting),
            })
        return texts

    def _viewers(self) -> list[int | None]:
        viewers: list[int | None] = [seat.row.seat for seat in self.seats if seat.peers]
        if self.spectators:
            viewers.append(None)
        return viewers

    def _send_by_seat(self, texts: dict[int | None, str]) -> None:
        for seat in self.seats:
            text = texts.get(seat.row.seat)
            if text is not None:
                for peer in seat.peers:
                    peer.send(text)
        if self.spectators and None in texts:
            self._send_spectators(texts[None])

    def _send_spectators(self, text: str) -> None:
        """Queue ``text`` for every spectator, off the owner's path: the spectators present now get it in a callback
        right after the owner's current step, so a seat's ack and updates never wait behind a large audience
        (``bench/fanout.py``). Messages to spectators keep their order (:meth:`flush_spectators`)."""
        if not self.spectators:
            return
        self._to_watch.append((text, tuple(self.spectators)))
        if self._watch_flush is None:
            self._watch_flush = asyncio.get_running_loop().call_soon(self.flush_spectators)

    def flush_spectators(self) -> None:
        """Hand spectators what :meth:`_send_spectators` queued (called before any message to one spectator)."""
        self._watch_flush = None
        pending, self._to_watch = self._to_watch, []
        for text, peers in pending:
            for peer in peers:
                peer.send(text)

    def acting(self) -> Collection[int]:
        """The seats that may act now: none before the start, between hands, after the end."""
        state = self.state
        if state is None or state.is_over or self.status != "playing":
            return ()
        return state.to_act()

    def legal_for(self, seat: int | None, acting: Collection[int] | None = None) -> list[Action]:
        """``seat``'s legal actions now: empty for a spectator, between hands and for a seat that may not act.
        ``acting`` is :meth:`acting` when the caller already has it (one update, many viewers)."""
        if seat is None or self.state is None:
            return []
        if seat not in (self.acting() if acting is None else acting):
            return []
        return self.state.legal_actions(seat)

    def all_peers(self) -> list[Peer]:
        """Every connection at the table, seated or watching."""
        peers = [peer for seat in self.seats for peer in seat.peers]
        peers.extend(self.spectators)
        return peers

    def broadcast(self, message: dict[str, Any]) -> None:
        """Send the same message to every connection (encoded once; queueing never waits, ``Peer.send``)."""
        text = messages.encode(message)
        for seat in self.seats:
            for peer in seat.peers:
                peer.send(text)
        self._send_spectators(text)

    def announce(self) -> None:
        """Tell every connection that seats, connections or status changed: one ``table`` message with the table
        as it is when sent, at most one per ``table_message_interval_s`` (changes in between are coalesced), so
        connections coming and going cost each connection O(1) messages a second, not one per change."""
        if self._announce is not None:
            return
        loop = asyncio.get_running_loop()
        wait = self._announced_at + self.settings.table_message_interval_s - loop.time()
        if wait <= 0:
            self._send_table()
        else:
            self._announce = loop.call_later(wait, self._send_table)

    def _send_table(self) -> None:
        self._announce = None
        self._announced_at = asyncio.get_running_loop().time()
        self.broadcast({"type": "table", "table": self.to_dict()})

    def people_connected(self) -> bool:
        """Whether a seated person has a connection open."""
        return any(seat.peers for seat in self.seats)

    # -- after each change: clock, bots ------------------------------------------------------------------

    def _after_change(self) -> None:
        self._schedule_clock()
        self._sync_bots()
        self.changed.set()
        self.changed = asyncio.Event()

    def _schedule_clock(self) -> None:
        state = self.state
        clock = None
        if self.status == "playing" and state is not None and not state.is_over:
            clock = state.clock_action()
        key = None if clock is None else (clock[0], dict(clock[1]))  # a copy: compared by value next time
        if key == self._clock_key:
            return
        for handle in self._clock_handles:
            handle.cancel()
        self._clock_handles = []
        self._clock_key = key
        if clock is None:
            return
        due, action = clock
        loop = asyncio.get_running_loop()
        now = self.now_ms()
        self._clock_handles.append(
            loop.call_later(max(0.0, (due - now) / 1000.0), self.submit_play, Play(None, dict(action), due=due))
        )
        if action.get("type") == "rotate":
            warn_at = due - 10_000
            self._clock_handles.append(loop.call_later(max(0.0, (warn_at - now) / 1000.0), self._warn, due))

    def _warn(self, due: int) -> None:
        if self._clock_key is not None and self._clock_key[0] == due:
            self.broadcast({"type": "warning", "kind": "stall", "in_ms": max(0, due - self.now_ms())})

    def driven_seats(self) -> dict[int, str]:
        """Seats a bot plays now, and which bot: bot seats, and persons away or gone (their stand-in)."""
        out: dict[int, str] = {}
        for seat in self.seats:
            if seat.row.kind == "bot" and seat.row.bot:
                out[seat.row.seat] = seat.row.bot
            elif seat.row.kind == "person" and seat.standin:
                out[seat.row.seat] = seat.standin
        return out

    def _sync_bots(self) -> None:
        wanted = self.driven_seats() if self.status == "playing" else {}
        for seat, (spec, task) in list(self._bot_tasks.items()):
            if wanted.get(seat) != spec or task.done():
                task.cancel()
                del self._bot_tasks[seat]
        for seat, spec in wanted.items():
            if seat not in self._bot_tasks:
                task = asyncio.create_task(drive_seat(self, seat, spec), name=f"bot-{self.id}-{seat}")
                self._bot_tasks[seat] = (spec, task)

    # -- hands ----------------------------------------------------------------------------------------

    def _schedule_next_hand(self, delay: float) -> None:
        if self._next_hand is not None:
            self._next_hand.cancel()
        loop = asyncio.get_running_loop()
        self._next_hand = loop.call_later(delay, lambda: self.submit_call(self._start_hand))

    async def _start_hand(self) -> None:
        self._next_hand = None
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
        for peer in self.all_peers():
            self.send_snapshot(peer)
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
            self._schedule_next_hand(self.settings.hand_pause_s)

    async def _finish_match(self) -> None:
        self.row.status = "finished"
        self.row.finished = now_iso()
        self.row.totals = list(self.match.totals)
        self.row.winners = self.match.winners()
        self.row.hands_played = self.hand_index + 1
        await self.store.update_status(
            self.id, "finished", finished=self.row.finished, hands_played=self.row.hands_played,
            totals=self.row.totals, winners=self.row.winners,
        )
        for seat in self.seats:
            if seat.away_timer is not None:
                seat.away_timer.cancel()
                seat.away_timer = None
        self.announce()
        self._after_change()
        await record_finished(self)

    async def end(self, status: str) -> None:
        """End the table early (the expiry sweep, on the owner): ``closed`` for an open table nobody came to,
        ``abandoned`` for a table in play that no person came back to. The record so far stays; an abandoned
        table is stored with its totals so far and no winners, and is published like a finished one; its results
        are recorded as a finished match's, every person in it counted absent (``results.py``)."""
        self.row.status = status
        if status == "abandoned":
            self.row.finished = now_iso()
            self.row.totals = list(self.match.totals)
            self.row.winners = None
            self.row.hands_played = self.hand_index + 1
            await self.store.update_status(self.id, status, finished=self.row.finished,
                                           hands_played=self.row.hands_played, totals=self.row.totals, winners=None)
        else:
            await self.store.update_status(self.id, status)
        self.broadcast({"type": "table", "table": self.to_dict()})
        if status == "abandoned":  # rated too: its absent people are last (closing the browser dodges nothing)
            await record_finished(self)

    # -- what connections see ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The protocol's ``TABLE``: never a token."""
        seats: list[dict[str, Any]] = []
        for seat in self.seats:
            row = seat.row
            if row.kind == "open":
                seats.append({"seat": row.seat, "kind": "open"})
            elif row.kind == "bot":
                seats.append({"seat": row.seat, "kind": "bot", "bot": row.bot, "name": row.name,
                              "replaceable": seat.replaceable and self.status == "open"})
            else:
                account = seat.account[1] if seat.account and seat.account[0] == row.token_hash else None
                seats.append({"seat": row.seat, "kind": "person", "name": row.name, "connected": bool(seat.peers),
                              "standin": seat.standin, "account": account})
        starts_at = self.starts_at if self.status == "open" else None
        return {
            "id": self.id, "game": self.game, "options": self.full_options, "status": self.status, "seats": seats,
            "rated": not self.row.seed_chosen,
            "hand": max(self.hand_index, 0), "totals": list(self.match.totals), "winners": self.match.winners()
            if self.match.is_over else None, "created": self.row.created,
            "starts_at": None if starts_at is None else int(starts_at * 1000),
            "starts_in_ms": None if starts_at is None else max(0, int((starts_at - time.time()) * 1000)),
        }

    def snapshot(self, seat: int | None) -> dict[str, Any]:
        """The protocol's ``snapshot`` for ``seat`` (``None``: a spectator)."""
        state = self.state
        return {
            "type": "snapshot", "v": self.version, "table": self.to_dict(),
            "view": None if state is None else state.view(seat), "legal": self.legal_for(seat),
            "hand": max(self.hand_index, 0), "totals": list(self.match.totals),
            "results": [{"scores": list(r.scores), "ended": r.ended} for r in self.match.results],
        }

    def send_snapshot(self, peer: Peer) -> None:
        """Send ``peer`` a snapshot for its seat (after what spectators still have queued, to keep the order)."""
        if peer.seat is None:
            self.flush_spectators()
        peer.send_message(self.snapshot(peer.seat))

    # -- connections and presence (called on the owner through submit_call) -----------------------------

    def admit(self, peer: Peer, seat: int | None) -> None:
        """``TableError`` 429 if ``peer`` may not join as ``seat`` (``None``: a spectator): the seat already has
        ``max_connections_per_token`` connections, the peer's address ``max_connections_per_address_per_table``
        at this table, or the table ``max_spectators`` spectators (``docs/protocol.md``, "Limits")."""
        settings = self.settings
        if seat is None:
            if len(self.spectators) >= settings.max_spectators:
                raise TableError(429, "connection.spectator_limit",
                                 f"too many spectators: this table allows {settings.max_spectators}",
                                 {"limit": settings.max_spectators})
        elif len(self.seats[seat].peers) >= settings.max_connections_per_token:
            limit = settings.max_connections_per_token
            raise TableError(429, "connection.seat_limit", f"too many connections for this seat: at most {limit}",
                             {"limit": limit})
        same = sum(1 for other in self.all_peers() if other.address == peer.address)
        if same >= settings.max_connections_per_address_per_table:
            limit = settings.max_connections_per_address_per_table
            raise TableError(429, "connection.address_limit",
                             f"too many connections to this table from one address: at most {limit}", {"limit": limit})

    def attach(self, peer: Peer, seat: int | None) -> list[SeatRow]:
        """Seat ``peer`` (``None``: as a spectator); returns the seat rows that changed and need storing."""
        peer.seat = seat
        changed: list[SeatRow] = []
        self.last_presence = time.monotonic()
        if seat is None:
            self.spectators.add(peer)
            return changed
        self.last_person = self.last_presence
        state = self.seats[seat]
        state.peers.add(peer)
        if state.away_timer is not None:
            state.away_timer.cancel()
            state.away_timer = None
        if state.row.left:
            state.row.left = False
            changed.append(state.row)
        if state.standin is not None:
            state.standin = None
            self._sync_bots()
        return changed

    def detach(self, peer: Peer) -> None:
        """Forget ``peer``; a person left with no connection is played by a bot after the table's grace."""
        self.spectators.discard(peer)
        if self.gate is not None:
            self.gate.forget(peer)
        self.last_presence = time.monotonic()
        if peer.seat is None:
            return
        self.last_person = self.last_presence
        state = self.seats[peer.seat]
        state.peers.discard(peer)
        if not state.peers:
            self._start_away_timer(state)

    def _start_away_timer(self, state: SeatState) -> None:
        if self.status != "playing" or state.peers or state.standin is not None or state.row.kind != "person":
            return
        if state.away_timer is not None:
            state.away_timer.cancel()
        loop = asyncio.get_running_loop()

        def fire() -> None:
            state.away_timer = None
            self.submit_call(lambda: self._stand_in(state))

        state.away_timer = loop.call_later(self.row.grace_seconds, fire)

    async def _stand_in(self, state: SeatState) -> None:
        if state.peers or self.status != "playing" or state.row.kind != "person":
            return
        state.standin = STANDIN_BOTS[self.game]
        self._sync_bots()
        self.announce()
