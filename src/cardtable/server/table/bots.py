"""Driving bots at a table: one task per bot-played seat, feeding the table's queue like a person would.

A bot sees only ``state.view(seat)`` and ``state.legal_actions(seat)`` (``cardtable.bots``). Nerts bots act at
human pace: their ``reaction_ms`` with seeded jitter (``Settings.bot_pace`` scales it). Enemy Anemone bots play
when it is their seat's turn, after a short pause. Bots that search (``pooled``) run in a process pool of
``Settings.bot_workers`` processes through :func:`cardtable.bots.run_bot`, so the event loop never waits for them.

The pool is shared fairly (:class:`SearchScheduler`): each table has at most one choice in the pool at once, the
tables made from one address at most ``Settings.bot_searches_per_creator``, and waiting tables are served in turn,
so a flood of tables delays another table's bot by about one choice, not by all of theirs. The pool's processes
end with the server whatever ends it: on Linux the kernel kills each one when the server dies
(``PR_SET_PDEATHSIG``), and everywhere a thread in each polls its parent and exits once it is gone.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import logging
import multiprocessing
import os
import random
import signal
import sys
import threading
import time
import weakref
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from cardtable import bots
from cardtable.engine import Action, HandState, View
from cardtable.server.table.actions import QueuedAction

log = logging.getLogger("cardtable.server.table.bots")

POOL_WORKERS = 2
"""Processes in the pool that runs searching bots, unless ``Settings.bot_workers`` says otherwise."""

SEARCHES_PER_CREATOR = 1
"""Choices of one creator's tables in the pool at once, unless ``Settings.bot_searches_per_creator`` says
otherwise."""

MIN_REACTION_MS = 300
"""A Nerts bot at a table waits at least this long between looks, even a bot made for simulations (0 ms)."""

PARENT_POLL_S = 0.25
"""Seconds between a pool process's looks at whether the server that started it is still there."""

PR_SET_PDEATHSIG = 1
"""Linux ``prctl`` option: the signal the kernel sends a process when its parent dies."""

T = TypeVar("T")

_pool: ProcessPoolExecutor | None = None
_pool_workers = POOL_WORKERS


class BotSettings(Protocol):
    """The server settings a bot reads (``Settings`` in ``server/table/owner.py``)."""

    @property
    def bot_pace(self) -> float: ...

    @property
    def anemone_bot_delay_ms(self) -> int: ...

    @property
    def bot_workers(self) -> int: ...

    @property
    def bot_searches_per_creator(self) -> int: ...


class BotSeed(Protocol):
    """The stored table's seed, which seeds each bot seat's choices."""

    @property
    def seed(self) -> int: ...

    @property
    def seed_chosen(self) -> bool:
        """A replayable table (a chosen seed, the daily deal): its bots' choices follow from the seed, the seat and
        the position alone (:func:`choice_seed`), never from the table's id or the machine's speed."""
        ...


class Table(Protocol):
    """What a bot driver sees of a live table (``server/table/owner.py``'s ``Table``): its state, its version and
    ``changed`` event to wait on, and :meth:`submit_play` to queue an action like a connection does."""

    @property
    def id(self) -> str: ...

    @property
    def state(self) -> HandState | None: ...

    @property
    def version(self) -> int: ...

    @property
    def changed(self) -> asyncio.Event: ...

    @property
    def settings(self) -> BotSettings: ...

    @property
    def row(self) -> BotSeed: ...

    @property
    def game(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def creator(self) -> str | None:
        """The client address the table was made from (``None`` when not known, as after a restart): the key of
        the per-creator quota of :class:`SearchScheduler`."""
        ...

    def submit_action(self, play: QueuedAction) -> None: ...


def _watch_parent(parent: int) -> None:
    """A pool process's watchdog thread: exit at once when the server process ``parent`` is gone (the process is
    then adopted by another, so its parent id changes)."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(0)


def _worker_start(parent: int) -> None:
    """The pool processes' initializer: end with the server ``parent``, whatever ends it. On Linux the kernel
    sends ``SIGKILL`` when the parent dies (``prctl(PR_SET_PDEATHSIG)``); everywhere a daemon thread polls the
    parent every :data:`PARENT_POLL_S` seconds. ``SIGINT`` is ignored: a Ctrl-C reaches the server, which ends
    its pool itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the server died before the watch began
        os._exit(0)
    threading.Thread(target=_watch_parent, args=(parent,), name="cardtable-parent-watch", daemon=True).start()


def get_pool() -> ProcessPoolExecutor:
    """The shared process pool (spawned processes, made on first use, :func:`configure_pool`'s size); its
    processes end with this one (:func:`_worker_start`)."""
    global _pool
    if _pool is None:
        _pool = ProcessPoolExecutor(max_workers=_pool_workers, mp_context=multiprocessing.get_context("spawn"),
                                    initializer=_worker_start, initargs=(os.getpid(),))
    return _pool


def shutdown_pool() -> None:
    """Stop the pool's processes at once (server shutdown, or a broken pool): a choice being searched is not
    waited for, its bot looks again on the next start."""
    global _pool
    pool, _pool = _pool, None
    if pool is None:
        return
    found = getattr(pool, "_processes", None)  # the executor's own processes: terminated, not waited for
    processes = list(found.values()) if isinstance(found, dict) else []
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            process.terminate()


@dataclass(slots=True)
class _Waiting:
    """A choice waiting for the pool: its table's creator and the future that lets it in."""

    creator: str
    grant: asyncio.Future[None]


class SearchScheduler:
    """Fair turns at the bot pool: at most ``workers`` choices run at once, at most one per table and at most
    ``per_creator`` for the tables of one creator (a client address). Waiting choices are let in round robin, first
    over creators, then over each creator's tables, so a creator's many tables weigh no more than one creator's
    turn: a choice of another creator waits for at most about one choice to end, however many tables wait.

    One scheduler belongs to one event loop. :meth:`run` is what callers use; ``running`` and ``peak`` (choices
    in the pool now, and the most at once) are there to watch it. ``ValueError`` for ``workers`` or
    ``per_creator`` below 1.
    """

    def __init__(self, workers: int = POOL_WORKERS, per_creator: int = SEARCHES_PER_CREATOR) -> None:
        if workers < 1 or per_creator < 1:
            raise ValueError(f"workers ({workers}) and per_creator ({per_creator}) must be at least 1")
        self.workers = workers
        self.per_creator = per_creator
        self._waiting: dict[str, dict[str, deque[_Waiting]]] = {}
        """Creator, then table, in turn order (dicts keep insertion order: the one served goes to the back)."""
        self._tables: set[str] = set()
        self._creators: Counter[str] = Counter()
        self.running = 0
        """Choices in the pool now."""
        self.peak = 0
        """The most choices that were in the pool at once."""
        self.on_free: Callable[[], None] | None = None
        """Called when a worker is free and no table's choice waits (``server/table/review_pool.py``)."""

    def waiting(self) -> int:
        """Choices waiting for their turn."""
        return sum(len(queue) for tables in self._waiting.values() for queue in tables.values()
                   for job in queue if not job.grant.done())

    def _next(self) -> tuple[str, str, _Waiting] | None:
        """The next choice to let in (taken out of the line, its creator and table sent to the back), if any may
        run now."""
        for creator, tables in list(self._waiting.items()):
            for table_id, queue in list(tables.items()):
                while queue and queue[0].grant.done():  # cancelled while waiting
                    queue.popleft()
                if not queue:
                    del tables[table_id]
            if not tables:
                del self._waiting[creator]
                continue
            if self._creators[creator] >= self.per_creator:
                continue
            for table_id, queue in tables.items():
                if table_id in self._tables:
                    continue
                job = queue.popleft()
                del tables[table_id]
                if queue:
                    tables[table_id] = queue
                del self._waiting[creator]
                if tables:
                    self._waiting[creator] = tables
                return creator, table_id, job
        return None

    def _dispatch(self) -> None:
        """Let in waiting choices while there is room (:meth:`_next`)."""
        while self.running < self.workers:
            chosen = self._next()
            if chosen is None:
                break
            creator, table_id, job = chosen
            self._take(table_id, creator)
            job.grant.set_result(None)
        if self.on_free is not None and self.running < self.workers and not self.waiting():
            self.on_free()  # no table's choice waits: low-priority work may use a free worker

    def dispatch(self) -> None:
        """Let waiting choices in while there is room (after low-priority work ends)."""
        self._dispatch()

    def _take(self, table_id: str, creator: str) -> None:
        self._tables.add(table_id)
        self._creators[creator] += 1
        self.running += 1
        self.peak = max(self.peak, self.running)

    def _release(self, table_id: str, creator: str) -> None:
        self._tables.discard(table_id)
        self._creators[creator] -= 1
        if self._creators[creator] <= 0:
            del self._creators[creator]
        self.running -= 1
        self._dispatch()

    async def run(self, table_id: str, creator: str, pool: concurrent.futures.Executor,
                  fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in ``pool`` once it is ``table_id``'s turn: its result, or what it raised (a
        ``BrokenProcessPool`` among them). Cancelled while waiting, the choice leaves the line; cancelled while
        it runs, its place is kept until the pool has finished it (a pool process cannot be interrupted)."""
        loop = asyncio.get_running_loop()
        job = _Waiting(creator, loop.create_future())
        self._waiting.setdefault(creator, {}).setdefault(table_id, deque()).append(job)
        self._dispatch()
        try:
            await job.grant
        except BaseException:
            if job.grant.done() and not job.grant.cancelled():  # let in, then cancelled before it ran
                self._release(table_id, creator)
            raise
        try:
            future = pool.submit(fn, *args)
        except BaseException:
            self._release(table_id, creator)
            raise

        def done(_: concurrent.futures.Future[T]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing waits any more
                loop.call_soon_threadsafe(self._release, table_id, creator)

        future.add_done_callback(done)
        return await asyncio.wrap_future(future)


_schedulers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, SearchScheduler] = weakref.WeakKeyDictionary()
_per_creator = SEARCHES_PER_CREATOR


def get_scheduler() -> SearchScheduler:
    """The scheduler of the shared pool for the running event loop (a server has one loop; tests make several)."""
    loop = asyncio.get_running_loop()
    scheduler = _schedulers.get(loop)
    if scheduler is None:
        scheduler = _schedulers[loop] = SearchScheduler(_pool_workers, _per_creator)
    return scheduler


def configure_pool(settings: BotSettings) -> None:
    """Size the pool and the per-creator quota from ``settings`` (``bot_workers``, ``bot_searches_per_creator``);
    the pool, if already made with another size, is made again on its next use."""
    global _pool_workers, _per_creator
    workers, per_creator = max(1, int(settings.bot_workers)), max(1, int(settings.bot_searches_per_creator))
    _per_creator = per_creator
    scheduler = get_scheduler()
    scheduler.per_creator, scheduler.workers = per_creator, workers
    if workers != _pool_workers:
        _pool_workers = workers
        if _pool is not None:
            shutdown_pool()


def _seat_rng(table: Table, seat: int) -> random.Random:
    if table.row.seed_chosen:  # replayable: the same seed gives the same bots at any table
        return random.Random(f"{table.row.seed}:{seat}")
    return random.Random(f"{table.row.seed}:{table.id}:{seat}")


def choice_seed(seed: int, seat: int, version: int) -> int:
    """The seed (0 to 2**31 - 1) of a searching bot's choice at a replayable table (``TableRow.seed_chosen``: a
    chosen seed, the daily deal) seeded ``seed``, for ``seat`` at table version ``version`` (the actions applied
    so far, all hands): the same table seed and the same moves give every bot choice the same seed, whatever the
    table and whatever happened before (a restart, a rejected action).

    >>> choice_seed(7, 1, 12) == choice_seed(7, 1, 12) != choice_seed(7, 2, 12)
    True
    """
    return random.Random(f"{seed}:{seat}:{version}").randrange(2**31)


async def _run_pooled(table: Table, spec: str, seed: int, view: View, legal: list[Action]) -> Action | None:
    """One choice of a searching bot at ``table``, in the process pool when :class:`SearchScheduler` gives the
    table its turn; in a thread if the pool cannot run (broken, or the main module cannot be imported by a spawned
    process)."""
    game = table.game
    fixed = table.row.seed_chosen  # replayable: a fixed number of simulations, no wall-clock cap
    configure_pool(table.settings)
    try:
        result: Action | None = await get_scheduler().run(table.id, table.creator or table.id, get_pool(),
                                                         bots.run_bot, game, spec, seed, view, legal, fixed)
        return result
    except (BrokenProcessPool, OSError):
        log.exception("the bot process pool failed; this choice runs in a thread")
        shutdown_pool()
        return await asyncio.to_thread(bots.run_bot, game, spec, seed, view, legal, fixed)


async def drive_seat(table: Table, seat: int, spec: str) -> None:
    """Play ``seat`` with bot ``spec`` until cancelled: wait for a chance to act, choose, queue the action.

    A rejected action (another seat got there first) is simply followed by a new look after the next change.
    """
    try:
        await _drive(table, seat, spec)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("table %s: bot %s at seat %d stopped", table.id, spec, seat)


async def _drive(table: Table, seat: int, spec: str) -> None:
    info = bots.get_bot(table.game, spec)
    rng = _seat_rng(table, seat)
    bot = None if info.pooled else info.make(rng.randrange(2**31))
    nerts = table.game == "nerts"
    loop = asyncio.get_running_loop()
    while True:
        state = table.state
        if table.status != "playing" or state is None or state.is_over or seat not in state.to_act():
            await table.changed.wait()
            continue
        if nerts:
            delay = max(info.reaction_ms, MIN_REACTION_MS) * rng.uniform(0.75, 1.25) * table.settings.bot_pace / 1000.0
        else:
            delay = table.settings.anemone_bot_delay_ms * table.settings.bot_pace / 1000.0
        if delay > 0:
            await asyncio.sleep(delay)
        else:
            await asyncio.sleep(0)
        state = table.state
        if table.status != "playing" or state is None or state.is_over or seat not in state.to_act():
            continue
        version = table.version
        view = state.view(seat)
        legal = state.legal_actions(seat)
        if not legal:
            await table.changed.wait()
            continue
        action: Any
        if bot is None:
            seed = choice_seed(table.row.seed, seat, version) if table.row.seed_chosen else rng.randrange(2**31)
            action = await _run_pooled(table, spec, seed, view, legal)
        else:
            action = bot.choose(view, legal)
        if action is None:
            if table.version == version and not nerts:
                await table.changed.wait()
            continue
        if table.version != version and not nerts:
            continue  # the table moved on while the bot thought: look again
        future: asyncio.Future[tuple[bool, Any]] = loop.create_future()
        table.submit_action(QueuedAction(seat, dict(action), future=future))
        ok, _ = await future
        if not ok and table.version == version:
            await table.changed.wait()
