"""Fair races at a real table (``cardtable.server.table.fairness``): a near and a far seat race for the same foundation
place, through the table's fairness gate, owner, engine and store, on the asyncio clock.

Each race is its own two-seat table dealt so that seat 0 starts the spades with its ace and then both seats hold a
2S on top of their Nerts piles. The far seat's play reaches the table ``far`` ms after it was sent (the network);
its round trips are reported as pings carry them. Times run at twice the defaults (tie window 200 ms, cap 300 ms,
far seat 300 ms away) and send gaps sit at least 100 ms from every decision edge, so that the asyncio clock's own
lag on a loaded machine rarely flips an outcome; a few are still allowed to (the tolerance below).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from cardtable.games import GameInfo, get_game
from cardtable.games.nerts import NertsMatch, layout_pack
from cardtable.server.core.settings import Settings
from cardtable.server.storage.rows import SeatRow, TableRow
from cardtable.server.storage.store import Store
from cardtable.server.table.actions import QueuedAction
from cardtable.server.table.connections import Connection
from cardtable.server.table.fairness import FairGate
from cardtable.server.table.owner import Table

MOVE = {"type": "move", "from": "nerts", "to": "foundation:0"}
SCALE = 2
WINDOW = 100 * SCALE  # the table's tie_window_ms
CAP = 150 * SCALE  # the gate's cap
PACKS = [layout_pack(nerts=["AS", "2S"]), layout_pack(nerts=["2S"])]


class OneRace(NertsMatch):
    """Nerts, every hand dealt the same: both seats get a 2S to race with."""

    def deal_cards(self, seed: int) -> dict[str, Any]:
        return {"packs": [list(pack) for pack in PACKS]}


RACE = GameInfo("nerts", "Nerts, one race", get_game("nerts").option_specs, lambda options: OneRace(options))


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await Store.open(f"sqlite+aiosqlite:///{tmp_path / 'fair.db'}")
    yield opened
    await opened.close()


async def setup(store: Store, name: str, far_rtt: float | None, near_rtt: float = 4.0) -> tuple[Table, Connection, Connection]:
    """A two-seat table in play, the spades started by seat 0; ``far_rtt``: the round trip seat 1 reports
    (``None``: no pings, so no compensation)."""
    row = TableRow(id=name, game="nerts", options={"players": 2, "tie_window_ms": WINDOW}, status="open", seed=1, grace_seconds=60,
                   created="2026-11-23T13:00:00Z",
                   seats=[SeatRow(0, "person", "near", None, f"{name}-0"), SeatRow(1, "person", "far", None, f"{name}-1")])
    await store.insert_table(row)
    table = Table(row, RACE, store, Settings(hand_pause_s=60))
    table.gate = FairGate(table, cap_ms=CAP)
    table.start_owner()
    near_peer, far_peer = Connection(), Connection()

    async def start() -> None:
        table.attach(near_peer, 0)
        table.attach(far_peer, 1)
        table.row.status = "playing"
        await table._start_hand()

    await table.submit_call(start)
    assert table.gate is not None
    for _ in range(8):
        table.gate.observe(near_peer, near_rtt)
        if far_rtt is not None:
            table.gate.observe(far_peer, far_rtt)
    ace: asyncio.Future[tuple[bool, Any]] = asyncio.get_running_loop().create_future()
    table.submit_action(QueuedAction(0, {"type": "move", "from": "nerts", "to": "foundation:new"}, connection=near_peer, future=ace))
    assert (await ace)[0]
    return table, near_peer, far_peer


async def race(table: Table, near_peer: Connection, far_peer: Connection, gap: int, far: int, near_rtt: float = 4.0) -> str:
    """One race: the far seat sends ``gap`` ms after the near one (negative: before) and its card takes ``far`` ms
    to arrive. Returns near, far or tie."""
    loop = asyncio.get_running_loop()
    results: dict[int, bool] = {}

    async def send(seat: int, connection: Connection, after_ms: float) -> None:
        await asyncio.sleep(after_ms / 1000)  # not a wait: the action's send time, the race under test
        future: asyncio.Future[tuple[bool, Any]] = loop.create_future()
        table.submit_action(QueuedAction(seat, dict(MOVE), connection=connection, future=future))
        results[seat] = (await future)[0]

    base = max(0, -gap)
    await asyncio.gather(send(0, near_peer, base + near_rtt / 2), send(1, far_peer, base + gap + far))
    await table.stop()
    if results[0] and results[1]:
        return "tie"
    return "near" if results[0] else "far"


async def races(store: Store, tag: str, gaps: list[int], far: int, far_rtt: float | None) -> list[tuple[int, str]]:
    """``gaps`` races at once, each at its own table (set up first, so that only the races share the clock)."""
    tables = [await setup(store, f"{tag}-{i}", far_rtt) for i in range(len(gaps))]
    results = await asyncio.gather(*(race(*t, gap, far) for t, gap in zip(tables, gaps, strict=True)))
    return list(zip(gaps, results, strict=True))


def fair(gap: int, window: int = WINDOW) -> str:
    return "tie" if abs(gap) <= window else ("far" if gap < 0 else "near")


def by_arrival(gap: int, far: int, window: int = WINDOW) -> str:
    return fair(gap + far, window)


GAPS = [g * SCALE for g in (-300, -180, 0, 20, 200)]  # 100 ms or more from every edge, with or without compensation


async def run_races(store: Store, tag: str, far: int, rtt: float | None, rounds: int) -> list[tuple[int, str]]:
    outcomes: list[tuple[int, str]] = []
    for r in range(rounds):
        outcomes.extend(await races(store, f"{tag}-{r}", GAPS * 8, far, rtt))
    return outcomes


def share(outcomes: list[tuple[int, str]], expect: Mapping[int, str]) -> float:
    return sum(result == expect[gap] for gap, result in outcomes) / len(outcomes)


@pytest.mark.slow
async def test_a_far_seat_wins_its_fair_share_only_with_compensation(store: Store) -> None:
    far = 150 * SCALE
    without = await run_races(store, "plain", far, None, rounds=5)  # 200 races, by arrival
    with_cap = await run_races(store, "fair", far, 2 * far + 4, rounds=5)  # 200 races, by send time
    assert len(without) == len(with_cap) == 200
    arrival = {gap: by_arrival(gap, far) for gap in GAPS}
    sent = {gap: fair(gap) for gap in GAPS}
    # tolerance: 10% of races may go otherwise, when the event loop itself lags by 100 ms or more
    assert share(without, arrival) >= 0.9
    assert share(with_cap, sent) >= 0.9
    # the close races (the far seat sent first, or within the tie window): without compensation it hardly ever
    # wins them and loses most of the ties it is due; with it, it gets them
    close = {GAPS[1], GAPS[2], GAPS[3]}
    close_without = [result for gap, result in without if gap in close]
    close_with = [result for gap, result in with_cap if gap in close]
    assert close_without.count("far") <= 0.05 * len(close_without)
    assert close_without.count("near") >= 0.5 * len(close_without)
    assert close_with.count("near") <= 0.1 * len(close_with)


@pytest.mark.slow
async def test_a_lying_far_seat_gains_at_most_the_cap(store: Store) -> None:
    # really 20 ms away, but reports ten-second round trips: its estimate stops at the cap
    outcomes = []
    for r in range(2):
        outcomes.extend(await races(store, f"liar-{r}", [200 * SCALE, 320 * SCALE] * 10, 20, 10_000.0))
    # sent 400 ms late, it looks 120 ms late (400 + 20 - 300): a tie it did not earn, its gain of 280 ms
    assert sum(result == "tie" for gap, result in outcomes if gap == 200 * SCALE) >= 16
    # sent 640 ms late it looks 360 ms late: past the cap and the tie window, it cannot win or tie
    assert all(result == "near" for gap, result in outcomes if gap == 320 * SCALE)


async def test_pings_carry_round_trips_and_bad_ones_change_nothing(store: Store) -> None:
    from cardtable.server.core import messages

    assert messages.decode('{"type": "ping", "t": 1.5, "rtt": 84.0}') == messages.Ping(1.5, 84.0)
    assert messages.decode('{"type": "ping", "t": 1.5}') == messages.Ping(1.5, None)
    table, near_peer, far_peer = await setup(store, "pings", far_rtt=1000.0)
    assert table.gate is not None
    assert table.gate.delay(far_peer) == CAP and table.gate.delay(near_peer) == 2
    assert table.gate.orderer.horizon(0) == CAP and table.gate.orderer.horizon(1) == 2
    for bad in (-5.0, float("nan"), float("inf")):
        assert table.gate.observe(far_peer, bad) is False
    assert table.gate.delay(far_peer) == CAP
    table.detach(far_peer)  # the far connection closes: its seat counts as near again
    assert table.gate.orderer.horizon(0) == 0
    await table.stop()


async def test_a_nerts_table_has_a_gate_with_the_default_cap(store: Store) -> None:
    row = TableRow(id="plain", game="nerts", options={"players": 2}, status="open", seed=1, grace_seconds=60,
                   created="2026-11-23T13:00:00Z", seats=[SeatRow(0, "open"), SeatRow(1, "open")])
    table = Table(row, get_game("nerts"), store, Settings())
    assert table.gate is not None and table.gate.cap_ms == 150
    assert Table(row, get_game("anemone"), store, Settings()).gate is None
