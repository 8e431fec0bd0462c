"""``server/table/review_pool.py``: low-priority work (reviews) in the bot pool never takes a worker a live table's
choice could have, and never takes every worker."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from cardtable.server.table.bots import SearchScheduler
from cardtable.server.table.review_pool import LOW_NICE, LowPriority, niced_call
from polling import until
from services import run_async


def _blocked(gate: threading.Event) -> str:
    """A job that runs until ``gate`` opens (at most 30 s)."""
    gate.wait(30)
    return "done"


def test_a_flood_of_low_priority_jobs_leaves_a_worker_to_the_tables() -> None:
    async def main() -> tuple[str, int, int]:
        gate = threading.Event()
        with ThreadPoolExecutor(2) as pool:
            scheduler = SearchScheduler(workers=2, per_creator=1)
            low = LowPriority(scheduler)
            flood = [asyncio.create_task(low.run(pool, _blocked, gate)) for _ in range(20)]
            await until(lambda: low.running == 1 and len(low.line) == 19)
            # every review blocks its worker; a table's choice still runs at once on the other one
            answer = await asyncio.wait_for(scheduler.run("t", "c", pool, str, "chosen"), 10)
            most = low.running
            gate.set()
            await asyncio.gather(*flood)
            return answer, most, scheduler.peak

    answer, most, peak = run_async(main)
    assert answer == "chosen"
    assert most == 1 and peak == 2


def test_a_waiting_choice_goes_before_low_priority_work() -> None:
    async def main() -> list[str]:
        gates = {name: threading.Event() for name in ("a", "b", "c", "low")}
        order: list[str] = []
        with ThreadPoolExecutor(2) as pool:
            scheduler = SearchScheduler(workers=2, per_creator=1)
            low = LowPriority(scheduler)

            async def choice(name: str) -> None:
                await scheduler.run(name, name, pool, _blocked, gates[name])
                order.append(name)

            async def review() -> None:
                await low.run(pool, _blocked, gates["low"])
                order.append("low")

            tasks = [asyncio.create_task(choice("a")), asyncio.create_task(choice("b"))]
            await until(lambda: scheduler.running == 2)
            tasks += [asyncio.create_task(review()), asyncio.create_task(choice("c"))]
            await until(lambda: scheduler.waiting() == 1 and len(low.line) == 1)
            gates["a"].set()  # a worker frees: the waiting choice takes it, not the review
            await until(lambda: order == ["a"] and scheduler.waiting() == 0 and scheduler.running == 2)
            assert low.running == 0 and len(low.line) == 1
            gates["b"].set()  # no choice waits now: the review may run
            await until(lambda: low.running == 1)
            gates["c"].set()
            gates["low"].set()
            await asyncio.gather(*tasks)
            await until(lambda: scheduler.running == 0)
            return order

    assert sorted(run_async(main)) == ["a", "b", "c", "low"]


def _own_niceness() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def _fails() -> None:
    raise ValueError("no such review")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's niceness is its own on Linux")
def test_a_low_priority_job_runs_niced_and_leaves_the_worker_as_it_was() -> None:
    before = _own_niceness()
    assert niced_call(_own_niceness) == min(19, before + LOW_NICE)
    assert _own_niceness() == before
    with pytest.raises(ValueError, match="no such review"):
        niced_call(_fails)
