"""``server/table/driving.py``: what moves a table besides its people. Stall warnings only for the clock still
set; the clock's timer sends its action as the clock's play; bots play on through changes and stop with play."""

from __future__ import annotations

import pytest

from cardtable.server.core.settings import Settings
from cardtable.server.storage.rows import SeatRow
from cardtable.server.storage.store import Store
from cardtable.server.table.actions import QueuedAction
from polling import until
from table_helpers import live_table, messages_of, started_nerts


async def test_stall_warnings_only_for_the_clock_still_set(store: Store) -> None:
    table, connection = await started_nerts(store, "t1")
    try:
        messages_of(connection)
        key = table._clock_key
        assert key is not None
        table._warn(key[0] + 1)  # a clock that has moved on: nothing
        table._clock_key = None
        table._warn(key[0])
        assert messages_of(connection) == []
        table._clock_key = key
        table._warn(key[0])
        (warning,) = messages_of(connection)
        assert warning["type"] == "warning" and warning["kind"] == "stall"
        assert 0 < warning["in_ms"] <= key[0]
        table.now_ms = lambda: key[0] - 10_000  # type: ignore[method-assign]
        table._warn(key[0])
        assert messages_of(connection)[0]["in_ms"] == 10_000
        table._clock_key = (0, key[1])
        table._warn(0)  # due already
        assert messages_of(connection)[0]["in_ms"] == 0
    finally:
        await table.stop()


async def test_bots_keep_playing_through_changes_and_stop_with_the_play(store: Store) -> None:
    table = await live_table(store, "t1", game="anemone", settings=Settings(anemone_bot_delay_ms=60_000),
                             seats=[SeatRow(0, "person", "a", None, "h"), SeatRow(1, "bot", "B", "random")])
    table._sync_bots()
    assert table._bot_tasks == {}  # not in play: no bot
    table.row.status = "playing"
    table._sync_bots()
    spec, task = table._bot_tasks[1]
    table._sync_bots()  # nothing changed for the bot: the same task plays on
    assert table._bot_tasks[1] == (spec, task) and not task.done()
    table.row.status = "finished"
    table._sync_bots()
    assert table._bot_tasks == {}
    await until(task.done)
    assert task.cancelled()


async def test_the_clock_timer_sends_its_action_as_the_clocks_play(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    table, _ = await started_nerts(store, "t1")
    try:
        assert table.state is not None
        due, rotate = table.state.clock_action()
        sent: list[QueuedAction] = []
        monkeypatch.setattr(table, "submit_action", sent.append)
        monkeypatch.setattr(table, "now_ms", lambda: due)
        table._clock_key = None
        table._schedule_clock()  # due now: its timer fires at once
        await until(lambda: len(sent) == 1)
        assert (sent[0].seat, sent[0].action, sent[0].due, sent[0].future) == (None, rotate, due, None)
    finally:
        await table.stop()
