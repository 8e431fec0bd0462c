"""The server's promises that planted bugs once slipped past (issue 10, point 7): an action is acknowledged only once
stored, the "left" mark survives a restart both ways, the hand clock resumes, finished tables keep their totals,
finished lists are newest first, and closing the store keeps queued writes. Each test fails on its planted bug."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest

from cardtable.replay import fold
from cardtable.server.core.settings import Settings
from cardtable.server.lobby.manager import Manager
from cardtable.server.storage.rows import SeatRow, TableRow, record_of
from cardtable.server.storage.store import Store
from cardtable.server.table.actions import QueuedAction
from cardtable.server.table.connections import Connection
from cardtable.server.table.owner import Table
from polling import until

SETTINGS = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=0, chosen_seeds=1)  # seeded deals


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'promises.db'}"


@pytest.fixture
async def store(url: str) -> AsyncIterator[Store]:
    opened = await Store.open(url)
    yield opened
    await opened.close()


async def two_person_nerts(manager: Manager) -> tuple[Table, list[str]]:
    table, _, first = await manager.create("nerts", {"players": 2}, None, "ana", 5, 60)
    _, _, second = await manager.join(table.id, "bo", None)
    await manager.start(table.id, first)
    return table, [first, second]


async def test_an_action_is_acknowledged_only_once_stored(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    manager = await Manager.open(store, SETTINGS)
    try:
        table, _ = await two_person_nerts(manager)
        slow_commit = store._writer._commit

        async def commit_later(batch: Any) -> Any:
            await asyncio.sleep(0.2)  # not a wait: the slow commit under test
            return await slow_commit(batch)

        monkeypatch.setattr(store._writer, "_commit", commit_later)
        connection = Connection()
        table.attach(connection, 0)
        future: asyncio.Future[tuple[bool, Any]] = asyncio.get_running_loop().create_future()
        table.submit_action(QueuedAction(0, {"type": "flip"}, connection=connection, seq=1, future=future))
        ok, version = await future
        assert ok and version == 1
        rows = await store.load_tables(table_id=table.id, with_hands=True)
        assert [action for _, _, action in rows[0].hands[0].actions] == [{"type": "flip"}]
    finally:
        await manager.close()


async def restart(store: Store, url: str, manager: Manager) -> tuple[Store, Manager]:
    await manager.close()
    await store.close()
    store = await Store.open(url)
    return store, await Manager.open(store, SETTINGS)


async def test_the_left_mark_is_stored_and_cleared_across_restarts(url: str) -> None:
    store = await Store.open(url)
    manager = await Manager.open(store, Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=100.0, chosen_seeds=1))
    table, tokens = await two_person_nerts(manager)
    tid = table.id
    await manager.leave(tid, tokens[0])
    store, manager = await restart(store, url, manager)
    try:
        table = manager.tables[tid]
        assert table.seats[0].row.left and table.seats[0].standin == "greedy:medium"
        assert table.seats[1].standin is None
        connection = Connection()
        await manager.hello(table, connection, tokens[0])
        assert table.seats[0].standin is None
        store, manager = await restart(store, url, manager)
        table = manager.tables[tid]
        assert not table.seats[0].row.left and table.seats[0].standin is None
    finally:
        await manager.close()
        await store.close()


async def test_the_hand_clock_resumes_after_a_restart(url: str) -> None:
    store = await Store.open(url)
    manager = await Manager.open(store, SETTINGS)
    table, _ = await two_person_nerts(manager)
    tid = table.id
    loop = asyncio.get_running_loop()
    for _ in range(2):
        await asyncio.sleep(0.3)  # not a wait: the hand's clock must move on 300 ms between the flips
        future: asyncio.Future[tuple[bool, Any]] = loop.create_future()
        table.submit_action(QueuedAction(0, {"type": "flip"}, future=future))
        assert (await future)[0]
    last_ms = table.last_ms
    assert last_ms >= 600
    store, manager = await restart(store, url, manager)
    try:
        restored = manager.tables[tid]
        assert restored.last_ms == last_ms and restored.now_ms() >= last_ms
        assert restored.state is not None and restored.state.view(0)["ms"] == last_ms
    finally:
        await manager.close()
        await store.close()


async def test_a_finished_table_is_stored_with_its_totals_and_winners(store: Store) -> None:
    manager = await Manager.open(store, SETTINGS)
    try:
        table, _, token = await manager.create("anemone", {"players": 2, "rounds": 1},
                                               [{"kind": "open"}, {"kind": "bot", "bot": "random"}], "ana", 3, 60)
        await manager.start(table.id, token)
        await manager.leave(table.id, token)
        await until(lambda: table.status == "finished")
        row = (await store.load_tables(table_id=table.id, with_hands=True))[0]
        result = fold(record_of(row))
        assert row.status == "finished" and row.finished
        assert row.totals == result.totals and any(row.totals)
        assert row.winners == result.winner and row.hands_played == len(row.hands)
        assert (await manager.table_dict(table.id))["totals"] == result.totals
    finally:
        await manager.close()


async def finish(store: Store, tid: str, when: str, totals: list[int]) -> None:
    await store.insert_table(TableRow(id=tid, game="anemone", options={"players": 2}, status="playing", seed=1,
                                      grace_seconds=60, created="2026-01-01T00:00:00Z",
                                      seats=[SeatRow(0, "bot", "bot-0", "random"), SeatRow(1, "bot", "bot-1", "random")]))
    await store.update_status(tid, "finished", finished=when, hands_played=1, totals=totals, winners=[0])


async def test_finished_tables_are_listed_newest_first_across_pages(store: Store) -> None:
    for tid, when in [("b", "2026-01-02T00:00:00Z"), ("a", "2026-01-01T00:00:00Z"), ("d", "2026-01-04T00:00:00Z"),
                      ("c", "2026-01-03T00:00:00Z"), ("c2", "2026-01-03T00:00:00Z")]:
        await finish(store, tid, when, [3, 1])
    manager = await Manager.open(store, SETTINGS)
    try:
        everything, more = await manager.list_tables("finished")
        assert [t["id"] for t in everything] == ["d", "c2", "c", "b", "a"] and more is None
        assert everything[0]["totals"] == [3, 1] and everything[0]["winners"] == [0]
        page, cursor = await manager.list_tables("finished", 2)
        ids = [t["id"] for t in page]
        while cursor is not None:
            page, cursor = await manager.list_tables("finished", 2, cursor)
            ids += [t["id"] for t in page]
        assert ids == ["d", "c2", "c", "b", "a"]
    finally:
        await manager.close()


async def test_close_commits_the_writes_still_queued(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = await Store.open(url)
    await store.insert_table(TableRow(id="q", game="nerts", options={"players": 2}, status="playing", seed=1,
                                      grace_seconds=60, created="2026-01-01T00:00:00Z",
                                      seats=[SeatRow(0, "bot", "b", "greedy:medium")]))
    await store.insert_hand("q", 0, {"packs": []})
    commit = store._writer._commit

    async def slow_commit(batch: Any) -> Any:  # a batch still in flight when the queue is already empty
        await asyncio.sleep(0.1)  # not a wait: the slow commit under test
        return await commit(batch)

    monkeypatch.setattr(store._writer, "_commit", slow_commit)
    pending: list[Awaitable[None]] = [store.insert_actions("q", 0, [(i, 0, i, {"type": "flip"})]) for i in range(50)]
    pending.append(store.update_status("q", "finished", finished="2026-01-01T00:01:00Z", hands_played=1,
                                       totals=[1, 2], winners=[1]))
    await store.close()
    assert all(future.done() for future in pending)  # type: ignore[attr-defined]
    store = await Store.open(url)
    try:
        row = (await store.load_tables(table_id="q", with_hands=True))[0]
        assert [ms for _, ms, _ in row.hands[0].actions] == list(range(50))
        assert row.status == "finished" and row.totals == [1, 2]
    finally:
        await store.close()
