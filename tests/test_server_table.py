"""The table owner of cardtable.server.table.owner: the clock's actions (Nerts' stall guard and in-flight end), warnings,
stand-in bots and group commits, with a tiny fake game so the clock can be fast."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from cardtable.engine import Action, Event, HandResult, IllegalAction, OptionSpec, View
from cardtable.games import GameInfo
from cardtable.server.core.settings import Settings
from cardtable.server.storage.rows import SeatRow, TableRow
from cardtable.server.storage.store import Store
from cardtable.server.table.actions import QueuedAction
from cardtable.server.table.connections import Connection
from cardtable.server.table.owner import Table
from polling import until


class FakeHand:
    """Every seat may ``tap``; the clock ``rotate``s 300 ms after the last tap; three rotates end the hand."""

    def __init__(self, players: int) -> None:
        self.players = players
        self.last = 0
        self.rotates = 0
        self.taps = [0] * players

    def legal_actions(self, seat: int) -> list[Action]:
        return [] if self.is_over else [{"type": "tap"}]

    def apply(self, seat: int | None, action: Mapping[str, Any], ms: int) -> list[Event]:
        if self.is_over:
            raise IllegalAction("the hand is over")
        if ms < self.last:
            raise IllegalAction("time went backwards")
        if seat is None and action.get("type") == "rotate":
            self.rotates += 1
            self.last = ms
            return [{"type": "rotated", "ms": ms}]
        if seat is not None and action.get("type") == "tap":
            self.taps[seat] += 1
            self.last = ms
            return [{"type": "tapped", "seat": seat}]
        raise IllegalAction(f"cannot {action.get('type')!r} here")

    def view(self, seat: int | None) -> View:
        return {"seat": seat, "taps": list(self.taps), "rotates": self.rotates}

    def events_for(self, events: Sequence[Event], seat: int | None) -> list[Event]:
        return list(events)

    @property
    def is_over(self) -> bool:
        return self.rotates >= 3

    @property
    def ended(self) -> str | None:
        return "stalled" if self.is_over else None

    def scores(self) -> list[int]:
        return list(self.taps)

    def to_act(self) -> list[int]:
        return [] if self.is_over else list(range(self.players))

    def clock_action(self) -> tuple[int, Action] | None:
        return None if self.is_over else (self.last + 300, {"type": "rotate"})


class FakeMatch:
    game = "nerts"

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.players = int(options.get("players", 2))
        self.totals = [0] * self.players
        self.results: list[HandResult] = []
        self.hand: FakeHand | None = None

    def check_deal(self, deal: Mapping[str, Any]) -> None:
        pass

    def deal_cards(self, seed: int) -> dict[str, Any]:
        return {"seed": seed}

    def start_hand(self, deal: Mapping[str, Any]) -> FakeHand:
        self.hand = FakeHand(self.players)
        return self.hand

    def finish_hand(self) -> HandResult:
        assert self.hand is not None
        result = HandResult(self.hand.scores(), self.hand.ended)
        self.results.append(result)
        self.totals = [a + b for a, b in zip(self.totals, result.scores, strict=True)]
        return result

    @property
    def is_over(self) -> bool:
        return len(self.results) >= 1

    def winners(self) -> list[int] | None:
        if not self.is_over:
            return None
        best = max(self.totals)
        return [i for i, t in enumerate(self.totals) if t == best]


FAKE = GameInfo("nerts", "Fake", [OptionSpec("players", "int", 2, 1, 8)], FakeMatch)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'table.db'}")
    yield opened
    await opened.close()


def drain(peer: Connection) -> list[dict[str, Any]]:
    out = []
    while not peer.outbox.empty():
        text = peer.outbox.get_nowait()
        if text is not None:
            out.append(json.loads(text))
    return out


async def playing_table(store: Store) -> Table:
    row = TableRow(id="t1", game="nerts", options={"players": 2}, status="open", seed=7, grace_seconds=60,
                   created="2026-11-22T21:00:00Z",
                   seats=[SeatRow(0, "person", "ana", None, "h0"), SeatRow(1, "person", "bo", None, "h1")])
    await store.insert_table(row)
    table = Table(row, FAKE, store, Settings(hand_pause_s=0.01))
    table.start_owner()
    return table


async def test_clock_rotates_warns_and_ends_the_hand(store: Store) -> None:
    table = await playing_table(store)
    peer = Connection()
    table.attach(peer, 0)

    async def start() -> None:
        table.row.status = "playing"
        await table._start_hand()

    await table.submit_call(start)
    future: asyncio.Future[tuple[bool, Any]] = asyncio.get_running_loop().create_future()
    table.submit_action(QueuedAction(1, {"type": "tap"}, future=future))
    assert (await future)[0] is True
    await until(lambda: table.status == "finished", 5, "the table to finish", every=0.05)
    messages = drain(peer)
    kinds = [m["type"] for m in messages]
    assert kinds.count("warning") >= 3 and all(m["kind"] == "stall" for m in messages if m["type"] == "warning")
    assert [m["v"] for m in messages if m["type"] == "update"] == [1, 2, 3, 4]
    assert kinds.index("hand_over") > max(i for i, k in enumerate(kinds) if k == "update")
    rows = await store.load_tables(table_id="t1", with_hands=True)
    actions = rows[0].hands[0].actions
    assert [(seat, action["type"]) for seat, _, action in actions] == [(1, "tap")] + [(None, "rotate")] * 3
    ms = [m for _, m, _ in actions]
    assert ms == sorted(ms) and ms[1] >= ms[0] + 300
    assert rows[0].status == "finished" and rows[0].winners == [1]
    await table.stop()


async def test_actions_waiting_together_share_one_commit(store: Store) -> None:
    table = await playing_table(store)

    async def start() -> None:
        table.row.status = "playing"
        await table._start_hand()

    await table.submit_call(start)
    commits = store.commits
    loop = asyncio.get_running_loop()
    futures = [loop.create_future() for _ in range(20)]
    for i, future in enumerate(futures):
        table.submit_action(QueuedAction(i % 2, {"type": "tap"}, future=future))
    results = await asyncio.gather(*futures)
    assert [ok for ok, _ in results] == [True] * 20 and [v for _, v in results] == list(range(1, 21))
    assert store.commits - commits <= 2
    stored = (await store.load_tables(table_id="t1", with_hands=True))[0].hands[0].actions
    assert [(seat, action) for seat, _, action in stored] == [(i % 2, {"type": "tap"}) for i in range(20)]
    bad: asyncio.Future[tuple[bool, Any]] = loop.create_future()
    table.submit_action(QueuedAction(0, {"type": "jump"}, future=bad))
    assert await bad == (False, "cannot 'jump' here")
    assert table.version == 20
    await table.stop()


async def test_the_clock_is_set_for_its_due_time_and_warns_ten_seconds_before(store: Store) -> None:
    # a stall guard 15 s after the last play: its timer is due in 15 s and the warning in 5 s, from the hand's
    # clock as it is now (read from the timers themselves, not by waiting)
    table = await playing_table(store)

    async def start() -> None:
        table.row.status = "playing"
        await table._start_hand()

    await table.submit_call(start)
    await asyncio.sleep(0.2)  # the hand's clock has moved on: a timer must count from now, not from 0
    hand = table.state
    assert isinstance(hand, FakeHand)
    hand.clock_action = lambda: (hand.last + 15_000, {"type": "rotate"})  # type: ignore[method-assign]
    table._clock_key = None
    table._schedule_clock()
    loop = asyncio.get_running_loop()
    now_ms = table.now_ms()
    due_s, warn_s = (handle.when() - loop.time() for handle in table._clock_handles)
    assert now_ms >= 200
    assert abs(due_s - (15_000 - now_ms) / 1000.0) < 0.05, due_s
    assert abs(warn_s - (5_000 - now_ms) / 1000.0) < 0.05, warn_s
    soon = table.now_ms() + 300  # a timer due in less than a second (as Nerts' in-flight end) is not held back
    hand.clock_action = lambda: (soon, {"type": "end_hand"})  # type: ignore[method-assign]
    table._schedule_clock()
    (handle,) = table._clock_handles
    assert abs(handle.when() - loop.time() - (soon - table.now_ms()) / 1000.0) < 0.05
    await table.stop()
