"""Driving bots at a table: one task per bot-played seat, feeding the table's queue like a person would.

A bot sees only ``state.view(seat)`` and ``state.legal_actions(seat)`` (``cardtable.bots``). Nerts bots act at
human pace: their ``reaction_ms`` with seeded jitter (``Settings.bot_pace`` scales it). Enemy Anemone bots play
when it is their seat's turn, after a short pause. Bots that search (``pooled``) run in a process pool of at most
two workers through :func:`cardtable.bots.run_bot`, so the event loop never waits for them.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import random
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

from cardtable import bots
from cardtable.engine import Action, HandState, View
from cardtable.server.play import Play

log = logging.getLogger("cardtable.server.bots")

POOL_WORKERS = 2
"""Processes in the pool that runs searching bots."""

MIN_REACTION_MS = 300
"""A Nerts bot at a table waits at least this long between looks, even a bot made for simulations (0 ms)."""

_pool: ProcessPoolExecutor | None = None


class BotSettings(Protocol):
    """The server settings a bot reads (``Settings`` in ``server/table.py``)."""

    @property
    def bot_pace(self) -> float: ...

    @property
    def anemone_bot_delay_ms(self) -> int: ...


class BotSeed(Protocol):
    """The stored table's seed, which seeds each bot seat's choices."""

    @property
    def seed(self) -> int: ...


class Table(Protocol):
    """What a bot driver sees of a live table (``server/table.py``'s ``Table``): its state, its version and
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

    def submit_play(self, play: Play) -> None: ...


def get_pool() -> ProcessPoolExecutor:
    """The shared process pool (spawned processes, made on first use)."""
    global _pool
    if _pool is None:
        _pool = ProcessPoolExecutor(max_workers=POOL_WORKERS, mp_context=multiprocessing.get_context("spawn"))
    return _pool


def shutdown_pool() -> None:
    """Stop the pool's processes (at server shutdown)."""
    global _pool
    if _pool is not None:
        _pool.shutdown(wait=False, cancel_futures=True)
        _pool = None


def _seat_rng(table: Table, seat: int) -> random.Random:
    return random.Random(f"{table.row.seed}:{table.id}:{seat}")


async def _run_pooled(game: str, spec: str, seed: int, view: View, legal: list[Action]) -> Action | None:
    """One choice of a searching bot in the process pool; in a thread if the pool cannot run (broken, or the main
    module cannot be imported by a spawned process)."""
    global _pool
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(get_pool(), bots.run_bot, game, spec, seed, view, legal)
    except (BrokenProcessPool, OSError):
        log.exception("the bot process pool failed; this choice runs in a thread")
        shutdown_pool()
        return await asyncio.to_thread(bots.run_bot, game, spec, seed, view, legal)


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
            action = await _run_pooled(table.game, spec, rng.randrange(2**31), view, legal)
        else:
            action = bot.choose(view, legal)
        if action is None:
            if table.version == version and not nerts:
                await table.changed.wait()
            continue
        if table.version != version and not nerts:
            continue  # the table moved on while the bot thought: look again
        future: asyncio.Future[tuple[bool, Any]] = loop.create_future()
        table.submit_play(Play(seat, dict(action), future=future))
        ok, _ = await future
        if not ok and table.version == version:
            await table.changed.wait()
