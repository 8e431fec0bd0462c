"""Low-priority work in the bot pool (issue 30: the reviews of finished matches): it runs only while no live
table's choice waits, and in at most ``workers - 1`` of the pool's workers (1 with one worker), so live tables always
keep a worker and a flood of low-priority work delays a table's bot by at most the one job in that worker when its
choice came.

The live choices' fair turns are :class:`~cardtable.server.table.bots.SearchScheduler`'s; :class:`LowPriority` is
let in by its ``on_free`` call (a worker free, no choice waiting) and counts its jobs in the scheduler's
``running``, so a choice and a low-priority job never share a worker. In the pool process the job runs in a thread
of lower OS priority (:func:`niced_call`), so that, on a machine short of cores, the server and the live searches
get the CPU first.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import sys
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from cardtable.server.table.bots import SearchScheduler, get_scheduler

T = TypeVar("T")

LOW_NICE = 10
"""The niceness (Linux, 0 to 19) of the thread that runs a low-priority job in a pool process: on a busy machine the
operating system gives the CPU to the server and to the live tables' searches first."""


def niced_call(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a thread of this process whose niceness is :data:`LOW_NICE` (Linux; elsewhere as it is), its
    result or what it raised. A new thread each time, so the process's own threads keep their niceness: lowering it
    again would need a privilege."""
    results: list[T] = []
    errors: list[BaseException] = []

    def work() -> None:
        if sys.platform.startswith("linux"):  # a thread's niceness is its own there
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOW_NICE)
        try:
            results.append(fn(*args))
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=work, name="cardtable-low-priority")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return results[0]


class LowPriority:
    """The line of low-priority jobs of one :class:`SearchScheduler` (one event loop), first come first served;
    ``running`` is how many are in the pool now."""

    def __init__(self, scheduler: SearchScheduler) -> None:
        self.scheduler = scheduler
        self.line: deque[asyncio.Future[None]] = deque()
        self.running = 0
        scheduler.on_free = self.let_in

    def limit(self) -> int:
        """Low-priority jobs allowed in the pool at once: every worker but one (1 with one worker)."""
        return max(1, self.scheduler.workers - 1)

    def let_in(self) -> None:
        """Let waiting jobs in while a worker is free, none of the scheduler's choices waits and :meth:`limit`
        allows."""
        s = self.scheduler
        while self.line and s.running < s.workers and self.running < self.limit() and not s.waiting():
            grant = self.line.popleft()
            if grant.done():  # cancelled while waiting
                continue
            s.running += 1
            s.peak = max(s.peak, s.running)
            self.running += 1
            grant.set_result(None)

    def _release(self) -> None:
        self.scheduler.running -= 1
        self.running -= 1
        self.scheduler.dispatch()  # the choices first, then this line again (``on_free``)

    async def run(self, pool: concurrent.futures.Executor, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in ``pool`` (a picklable ``fn``, run by :func:`niced_call`) once it is this job's turn: its
        result or what it raised. Cancelled while
        waiting, the job leaves the line; cancelled while it runs, its worker stays counted until it ends."""
        loop = asyncio.get_running_loop()
        grant: asyncio.Future[None] = loop.create_future()
        self.line.append(grant)
        self.let_in()
        try:
            await grant
        except BaseException:
            if grant.done() and not grant.cancelled():
                self._release()
            raise
        try:
            future = pool.submit(niced_call, fn, *args)
        except BaseException:
            self._release()
            raise

        def done(_: concurrent.futures.Future[T]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing waits any more
                loop.call_soon_threadsafe(self._release)

        future.add_done_callback(done)
        return await asyncio.wrap_future(future)


_lines: weakref.WeakKeyDictionary[SearchScheduler, LowPriority] = weakref.WeakKeyDictionary()


def get_low_priority() -> LowPriority:
    """The low-priority line of the running event loop's scheduler (:func:`~cardtable.server.table.bots.get_scheduler`)."""
    scheduler = get_scheduler()
    line = _lines.get(scheduler)
    if line is None:
        line = _lines[scheduler] = LowPriority(scheduler)
    return line
