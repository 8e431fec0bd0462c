"""Where an action's time goes inside the table server: each acknowledged action timed stage by stage.

Run as the server's program instead of ``-m cardtable`` (``bench/server_load.py --stages FOLDER`` does it):

    python bench/ack_stages.py OUT.json cardtable serve --port ... --db ...

It runs ``cardtable`` unchanged, with a few of the table's methods wrapped (in this process only) to read
``time.perf_counter()`` at each stage of a seat's action:

- ``submitted``: the WebSocket handler has read and parsed the message and hands it to the table
  (``Table.submit_action``; the Nerts fairness gate comes next);
- ``applying``: the owner starts the batch holding it (``Table._apply_batch``): the gate and the owner's queue;
- ``storing``: the batch's actions are handed to the group commit (``Store.insert_actions``): the engine;
- ``committed``: the commit's future is done (its done-callback runs): the group commit;
- ``ack queued``: the owner queues its ``ack`` (``Connection.send_message``): the owner's wake-up after the commit;
- ``ack taken``: it is written to the socket in the owner's step (``Outbox.flush``) or right after it, or, when
  the socket could not take it then, the connection's writer takes it from the outbox (``Outbox.get``/
  ``get_nowait``) just before its write: the rest of the owner's step, or the writer's wake-up.

SIGUSR1 starts recording (the measuring window opens), SIGUSR2 writes ``OUT.json``: per stage, the ms each action
spent from the stage before (a list), and the total from ``submitted`` to ``ack taken``. :func:`summary` reads
it back as lines of p50/p99/max. The wrappers cost a few microseconds per action; read the figures for where the
slowest acks wait, not for the server's speed.
"""

from __future__ import annotations

import json
import runpy
import signal
import statistics
import sys
import time
from typing import Any

STAGES = ("submitted", "applying", "storing", "committed", "ack queued", "ack taken")
"""The stages in order; each figure is the time from the one before."""


def install(out: str) -> None:
    """Wrap the server's methods and the signals (see the module docstring); ``OUT`` is written at SIGUSR2."""
    from cardtable.server.storage.store import Store
    from cardtable.server.table import connections, owner

    recording = False
    times: dict[tuple[int, int], list[float]] = {}  # (id of the outbox, seq) -> the stages' times so far
    done: list[list[float]] = []
    by_play: dict[int, tuple[int, int]] = {}  # id of a QueuedAction in a batch -> its key
    storing: list[tuple[int, int]] = []  # the keys of the batch being stored

    submit_action, apply_batch, insert_actions = (
        owner.Table.submit_action,
        owner.Table._apply_batch,
        Store.insert_actions,
    )
    send_message, get, get_nowait, flush = (
        connections.Connection.send_message,
        connections.Outbox.get,
        connections.Outbox.get_nowait,
        connections.Outbox.flush,
    )

    def mark(key: tuple[int, int], stage: int) -> None:
        seen = times.get(key)
        if seen is not None and len(seen) == stage:
            seen.append(time.perf_counter())

    def timed_submit(self: Any, play: Any) -> None:
        if recording and play.connection is not None and play.seq is not None:
            key = (id(play.connection.outbox), play.seq)
            times[key] = [time.perf_counter()]
            by_play[id(play)] = key
        submit_action(self, play)

    async def timed_apply(self: Any, batch: list[Any]) -> None:
        keys = [k for play in batch if (k := by_play.pop(id(play), None)) is not None]
        for key in keys:
            mark(key, 1)
        storing[:] = keys
        try:
            await apply_batch(self, batch)
        finally:
            storing.clear()

    def timed_insert(self: Any, *args: Any, **kwargs: Any) -> Any:
        keys = list(storing)
        for key in keys:
            mark(key, 2)
        future = insert_actions(self, *args, **kwargs)

        def committed(_: Any) -> None:
            for key in keys:
                mark(key, 3)

        future.add_done_callback(committed)
        return future

    def timed_send(self: Any, message: dict[str, Any]) -> None:
        if message.get("type") == "ack" and message.get("seq") is not None:
            mark((id(self.outbox), message["seq"]), 4)
        send_message(self, message)

    def taken(outbox: Any, text: str | None) -> None:
        if text is not None and text.startswith('{"type":"ack"'):
            seq = json.loads(text).get("seq")
            key = (id(outbox), seq)
            mark(key, 5)
            seen = times.pop(key, None)
            if seen is not None and len(seen) == len(STAGES):
                done.append(seen)

    async def timed_get(self: Any) -> str | None:
        text = await get(self)
        taken(self, text)
        return text

    def timed_get_nowait(self: Any) -> str | None:
        text = get_nowait(self)
        taken(self, text)
        return text

    def timed_flush(self: Any) -> None:
        pending = list(self._items) if self._waiter is not None else []
        flush(self)
        if pending and not self._items:  # written at once (else the writer takes them)
            for text in pending:
                taken(self, text)

    owner.Table.submit_action = timed_submit  # type: ignore[method-assign]
    owner.Table._apply_batch = timed_apply  # type: ignore[method-assign]
    Store.insert_actions = timed_insert  # type: ignore[method-assign]
    connections.Connection.send_message = timed_send  # type: ignore[method-assign]
    connections.Outbox.get = timed_get  # type: ignore[method-assign]
    connections.Outbox.get_nowait = timed_get_nowait  # type: ignore[method-assign]
    connections.Outbox.flush = timed_flush  # type: ignore[method-assign]

    def start(*_: Any) -> None:
        nonlocal recording
        recording = True

    def write(*_: Any) -> None:
        nonlocal recording
        recording = False
        stages = {name: [(t[i] - t[i - 1]) * 1000.0 for t in done] for i, name in enumerate(STAGES) if i}
        stages["total"] = [(t[-1] - t[0]) * 1000.0 for t in done]
        with open(out, "w") as f:
            json.dump(stages, f)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, write)


def summary(path: str) -> list[str]:
    """Lines of ``stage: p50 / p99 / max ms`` from a file written at SIGUSR2, and where the slowest 1% of the acks
    (by their total) spent their time: the mean of each stage over them."""
    with open(path) as f:
        stages: dict[str, list[float]] = json.load(f)
    total = stages["total"]
    if not total:
        return ["ack stages: no acknowledged action timed"]
    lines = [f"ack stages inside the server ({len(total)} acks; ms from the stage before):"]
    for name, values in stages.items():
        ordered = sorted(values)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        lines.append(
            f"   {name:>10}: p50 {statistics.median(ordered):.2f}, p99 {p99:.2f}, max {ordered[-1]:.2f}"
        )
    cut = sorted(total)[min(len(total) - 1, int(len(total) * 0.99))]
    slow = [i for i, t in enumerate(total) if t >= cut]
    means = ", ".join(f"{name} {statistics.fmean(stages[name][i] for i in slow):.2f}" for name in STAGES[1:])
    lines.append(f"   the slowest 1% ({len(slow)} acks, total >= {cut:.2f} ms), mean ms per stage: {means}")
    return lines


if __name__ == "__main__":
    install(sys.argv[1])
    sys.argv = sys.argv[2:]
    del sys.path[0]  # bench/: its modules' names are not the server's to import
    runpy.run_module("cardtable", run_name="__main__")
