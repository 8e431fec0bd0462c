"""``server/table/owner.py``: the table's owner task. Refusals before the start and after the end; stamps that
never go back; plays applied together, each with its update and answer, at most ``MAX_BATCH`` before one
write; the clock's plays in the batch; refused actions with the engine's code; calls queued among plays; a
failed call or write; stopping; ending early; a restored table's count, version, clock and hands; the end of
a match; a new table's gate."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from cardtable import records
from cardtable.games import get_game
from cardtable.server.core.errors import TableError
from cardtable.server.core.settings import Settings
from cardtable.server.storage.rows import SeatRow
from cardtable.server.storage.store import Store
from cardtable.server.table.actions import QueuedAction
from cardtable.server.table.connections import Connection
from cardtable.server.table.owner import Table
from polling import until
from table_helpers import RECORDS, live_table, messages_of, play, started_nerts, table_row


async def test_actions_are_refused_before_the_start_and_after_the_end(store: Store) -> None:
    table = await live_table(store, "t1")
    table.start_owner()
    connection = Connection()
    try:
        assert await play(table, 0, {"type": "flip"}, connection=connection) == (False, "the game has not started")
        table.submit_action(QueuedAction(0, {"type": "flip"}, connection=connection, seq=7))  # from a connection: no future
        await until(lambda: connection.outbox.qsize() == 2)
        # two refused together: each gets its answer
        both = [play(table, 0, {"type": "flip"}), play(table, 1, {"type": "flip"})]
        assert await asyncio.wait_for(asyncio.gather(*both), 10) == [(False, "the game has not started")] * 2
        table.row.status = "finished"
        assert await play(table, 0, {"type": "flip"}, connection=connection) == (False, "the game is over")
        assert (await store.load_tables(table_id="t1", with_hands=True))[0].hands == []
        assert messages_of(connection) == [
            {"type": "reject", "seq": 7, "reason": "the game has not started", "code": "table.not_started", "params": {}},
            {"type": "reject", "seq": 7, "reason": "the game has not started", "code": "table.not_started", "params": {}},
            {"type": "reject", "seq": 7, "reason": "the game is over", "code": "table.over", "params": {}}]
    finally:
        await table.stop()


async def test_stamps_never_go_back_and_are_stored_as_used(store: Store) -> None:
    table, connection = await started_nerts(store, "t1")
    try:
        assert (await play(table, 0, {"type": "flip"}, ms=500))[0]
        assert (await play(table, 1, {"type": "flip"}, ms=200))[0]  # earlier than the last stamp: kept at 500
        assert (await play(table, 0, {"type": "flip"}, ms=900))[0]
        assert table.last_ms == 900 and table.n_actions == 3 and table.version == 3
        ok, reason = await play(table, 0, {"type": "move", "from": "nerts", "to": "work:9"}, connection=connection)
        assert not ok and reason
        stored = (await store.load_tables(table_id="t1", with_hands=True))[0].hands[0].actions
        assert [(seat, ms) for seat, ms, _ in stored] == [(0, 500), (1, 500), (0, 900)]
        got = messages_of(connection)
        updates = [m for m in got if m["type"] == "update"]
        assert [m["v"] for m in updates] == [1, 2, 3]
        assert updates[-1]["legal"] == table.legal_for(0) != []
        assert all(m["view"]["seat"] == 0 for m in updates)
        (reject,) = [m for m in got if m["type"] == "reject"]
        assert reject["seq"] == 7 and reject["reason"] == reason and reject["code"] and "params" in reject
        table.row.status = "finished"  # over, though a hand is still in the state
        assert await play(table, 0, {"type": "flip"}) == (False, "the game is over")
        assert table.n_actions == 3
    finally:
        await table.stop()


async def test_plays_applied_together_each_get_their_own_update_and_answer(store: Store) -> None:
    table, connection = await started_nerts(store, "t1")
    try:
        messages_of(connection)
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in range(3)]
        # queued together, so the owner applies them as one batch: a flip, an illegal move, a flip
        for future, action in zip(futures, ({"type": "flip"}, {"type": "move", "from": "nerts", "to": "work:9"},
                                            {"type": "flip"}), strict=True):
            table.queue.put_nowait(QueuedAction(0, action, future=future, connection=connection, seq=len(action)))
        answers = await asyncio.wait_for(asyncio.gather(*futures), 10)
        assert [ok for ok, _ in answers] == [True, False, True] and answers[0][1] == 1 and answers[2][1] == 2
        got = messages_of(connection)
        assert [m for m in got if m["type"] == "ack"] == [{"type": "ack", "seq": 1, "v": 1},
                                                          {"type": "ack", "seq": 1, "v": 2}]
        assert [(m["type"], m["seq"]) for m in got if m["type"] == "reject"] == [("reject", 3)]
        updates = [m for m in got if m["type"] == "update"]
        assert [m["v"] for m in updates] == [1, 2]
        first, second = (m["view"]["layouts"][0] for m in updates)
        assert first["stock"]["count"] != second["stock"]["count"]  # each update shows the table at its version
        assert second == table.state.view(0)["layouts"][0]
    finally:
        await table.stop()


async def test_a_restored_table_resumes_its_count_version_and_clock(store: Store) -> None:
    table, _ = await started_nerts(store, "t1")
    for ms in (100, 2500):
        assert (await play(table, 0, {"type": "flip"}, ms=ms))[0]
    await table.stop()
    row = (await store.load_tables(table_id="t1", with_hands=True))[0]
    row.status = "playing"
    restored = Table(row, get_game("nerts"), store, Settings(hand_pause_s=60))
    restored.fold()
    assert (restored.hand_index, restored.n_actions, restored.version, restored.last_ms) == (0, 2, 2, 2500)
    assert 2500 <= restored.now_ms() < 60_000 and row.hands == []
    await store.insert_hand("t1", 1, {"packs": []})  # a second hand dealt, nothing played yet
    row = (await store.load_tables(table_id="t1", with_hands=True))[0]
    row.hands[1].deal = row.hands[0].deal
    row.hands[0].actions.append((None, 3000, {"type": "end_hand", "reason": "stalled"}))
    restored = Table(row, get_game("nerts"), store, Settings(hand_pause_s=60))
    restored.fold()
    assert (restored.hand_index, restored.n_actions, restored.version, restored.last_ms) == (1, 0, 3, 0)


async def test_the_end_of_a_match_cancels_the_away_timers(store: Store) -> None:
    table, connection = await started_nerts(store, "t1")
    try:

        async def leave() -> None:
            table.detach(connection)

        await table.submit_call(leave)
        timer = table.seats[0].away_timer
        assert timer is not None
        await table.submit_call(table._finish_match)
        assert table.status == "finished" and table.seats[0].away_timer is None and timer.cancelled()
        row = (await store.load_tables(table_id="t1"))[0]
        assert (row.status, row.totals, row.hands_played) == ("finished", table.match.totals, 1)
    finally:
        await table.stop()


async def test_a_table_whose_write_fails_stops_and_tells_every_connection(store: Store) -> None:
    table, seated = await started_nerts(store, "t1")
    watcher = Connection()
    table.attach(watcher, None)
    try:
        async with store.engine.begin() as conn:  # a real failure of the next write: its table is gone
            await conn.exec_driver_sql("DROP TABLE actions")
        future: asyncio.Future[tuple[bool, Any]] = asyncio.get_running_loop().create_future()
        table.queue.put_nowait(QueuedAction(0, {"type": "flip"}, future=future, connection=seated, seq=1))
        await until(lambda: table.broken is not None, timeout=10)
        reason = table.broken
        assert reason is not None and reason.startswith("the table stopped on a server error: ")
        assert table.task is not None
        await asyncio.wait_for(table.task, 10)  # the owner has stopped
        for connection in (seated, watcher):
            got = messages_of(connection)
            assert got[-1] == {"type": "error", "reason": reason, "code": "table.broken", "params": {"detail": reason}}
            assert connection.closed and not any(m["type"] == "ack" for m in got)
    finally:
        await table.stop()


async def test_ending_a_table_early_stores_and_tells_it(store: Store) -> None:
    table = await live_table(store, "t0")
    watcher = Connection()
    table.attach(watcher, None)
    await table.end("closed")
    table.flush_spectators()
    (told,) = messages_of(watcher)
    assert told["type"] == "table" and told["table"]["status"] == "closed"
    row = (await store.load_tables(table_id="t0"))[0]
    assert (row.status, row.finished, row.totals, row.hands_played) == ("closed", None, None, None)
    table, seated = await started_nerts(store, "t1")
    try:
        assert (await play_flip(table))[0]
        await table.end("abandoned")
        row = (await store.load_tables(table_id="t1"))[0]
        assert (row.status, row.totals, row.winners, row.hands_played) == ("abandoned", [0, 0], None, 1)
        assert row.finished is not None and row.finished == table.row.finished
        assert (table.row.totals, table.row.hands_played, table.row.winners) == ([0, 0], 1, None)
        assert messages_of(seated)[-1]["table"]["status"] == "abandoned"
    finally:
        await table.stop()


async def play_flip(table: Table) -> tuple[bool, Any]:
    future: asyncio.Future[tuple[bool, Any]] = asyncio.get_running_loop().create_future()
    table.queue.put_nowait(QueuedAction(0, {"type": "flip"}, future=future, seq=7))
    return await future


async def test_a_failed_call_is_answered_and_with_several_processes_stops_the_owner(store: Store) -> None:
    async def refuse() -> None:
        raise TableError(409, "seat.taken", "taken")

    async def fail() -> None:
        raise RuntimeError("disk gone")

    async def fine() -> int:
        return 5

    alone = await live_table(store, "t1")  # one process: the call's own error, and the owner goes on
    alone.start_owner()
    try:
        with pytest.raises(RuntimeError, match=r"^disk gone$"):
            await alone.submit_call(fail)
        assert await alone.submit_call(fine) == 5
    finally:
        await alone.stop()
    errors: list[Exception] = []
    table = await live_table(store, "t2")
    table.on_error = errors.append  # several processes: the cluster moves the table elsewhere
    table.start_owner()
    try:
        with pytest.raises(TableError) as refused:  # a refusal is only an answer
            await table.submit_call(refuse)
        assert (refused.value.status, refused.value.code) == (409, "seat.taken") and errors == []
        with pytest.raises(TableError) as moving:
            await table.submit_call(fail)
        assert (moving.value.status, moving.value.code, str(moving.value), moving.value.params) == (
            503, "http.error", "the table is moving to another server process: try again", {"status": 503})
        assert [str(error) for error in errors] == ["disk gone"]
        later = table.submit_call(fine)  # the owner has stopped: nothing more is done here
        await asyncio.sleep(0.1)  # a fixed wait on purpose: what is tested is that nothing is done in that time
        assert not later.done()
        later.cancel()
    finally:
        await table.stop()


async def test_stopping_answers_what_was_queued_and_refuses_what_comes_after(store: Store) -> None:
    async def fine() -> int:
        return 5

    table = await live_table(store, "t1")  # no owner running: what is submitted stays queued
    call = table.submit_call(fine)
    played: asyncio.Future[tuple[bool, Any]] = asyncio.get_running_loop().create_future()
    table.queue.put_nowait(QueuedAction(0, {"type": "flip"}, future=played))
    table.queue.put_nowait(QueuedAction(0, {"type": "flip"}, connection=Connection(), seq=1))  # from a connection: no future
    await table.stop()
    assert table.stopped is True and table.queue.empty()
    with pytest.raises(TableError) as stopped:
        await call
    assert (stopped.value.status, stopped.value.code, str(stopped.value), stopped.value.params) == (
        503, "http.error", "the table stopped here: try again", {"status": 503})
    assert played.result() == (False, "the table stopped here")
    later = table.submit_call(fine)  # answered at once, never left waiting
    refused = later.exception() if later.done() else None
    assert isinstance(refused, TableError)
    assert (refused.status, refused.code, str(refused), refused.params) == (
        503, "http.error", "the table stopped here: try again", {"status": 503})
    running = await live_table(store, "t2")
    running.start_owner()
    await running.stop()
    assert running.task is not None and running.task.done()


async def restored(store: Store, tid: str, hands: int, settings: Settings) -> Table:
    """A table in play restored from the first ``hands`` hands of a whole two-hand Enemy Anemone match."""
    record = records.load(RECORDS / "anemone" / "2p-full-match.ok.json")
    await store.insert_table(table_row(tid, status="playing", game="anemone",
                                       seats=[SeatRow(0, "bot", "A", "random"), SeatRow(1, "bot", "B", "random")]))
    for number, hand in enumerate(record.hands[:hands]):
        await store.insert_hand(tid, number, hand.deal)
        await store.insert_actions(tid, number, [(i, entry.seat, entry.ms, dict(entry.action))
                                                 for i, entry in enumerate(hand.actions)])
    row = (await store.load_tables(table_id=tid, with_hands=True))[0]
    row.options = dict(record.options)
    table = Table(row, get_game("anemone"), store, settings)
    table.fold()
    return table


async def test_a_restored_table_in_play_carries_on_where_it_was(store: Store) -> None:
    slow = Settings(hand_pause_s=60, anemone_bot_delay_ms=60_000)
    fresh = await live_table(store, "t0", status="playing", settings=slow,
                             seats=[SeatRow(0, "person", "a", None, "h0"), SeatRow(1, "person", "b", None, "h1")])
    between = await restored(store, "t1", 1, Settings(hand_pause_s=0.05, default_ready_s=0.05, anemone_bot_delay_ms=60_000))
    waiting = await restored(store, "t2", 1, slow)
    over = await restored(store, "t3", 2, slow)
    assert between.state is not None and between.state.is_over and not between.match.is_over
    assert over.match.is_over and over.status == "playing"
    tables = (fresh, between, waiting, over)
    try:
        for table in tables:
            table.start_owner()
        # no hand yet: the first starts at once; one hand over: the next after the pause; the match over: finished
        await until(lambda: fresh.state is not None and between.hand_index == 1 and over.status == "finished",
                    timeout=20)
        assert fresh.hand_index == 0 and between.state is not None and not between.state.is_over
        assert waiting.hand_index == 0 and waiting.state is not None and waiting.state.is_over  # 60 s pause
        row = (await store.load_tables(table_id="t3"))[0]
        assert (row.status, row.hands_played, row.totals) == ("finished", 2, over.match.totals)
    finally:
        for table in tables:
            await table.stop()


async def test_a_call_queued_among_plays_is_run_and_the_owner_goes_on(store: Store) -> None:
    async def fine() -> int:
        return 5

    table, _ = await started_nerts(store, "t1")
    try:
        loop = asyncio.get_running_loop()
        first, last = loop.create_future(), loop.create_future()
        table.queue.put_nowait(QueuedAction(0, {"type": "flip"}, future=first))  # taken together with what follows
        call = table.submit_call(fine)
        table.queue.put_nowait(QueuedAction(0, {"type": "flip"}, future=last))
        assert await asyncio.wait_for(asyncio.gather(first, call, last), 10) == [(True, 1), 5, (True, 2)]
    finally:
        await table.stop()


async def test_the_clock_acts_when_due_stamps_then_and_never_holds_up_other_plays(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A clock play (``Play.due``) woken more than 5 ms early sets its timer again; one whose action the clock no
    longer wants is dropped; either way the plays queued with it are answered. One on time is stamped at the latest
    of now, its due time and the last stamp."""
    table, _ = await started_nerts(store, "t1")
    now = 0
    monkeypatch.setattr(table, "now_ms", lambda: now)

    async def clock_then_flip(action: dict[str, Any], due: int) -> None:
        flipped: asyncio.Future[tuple[bool, Any]] = asyncio.get_running_loop().create_future()
        table.queue.put_nowait(QueuedAction(None, action, due=due))
        table.queue.put_nowait(QueuedAction(0, {"type": "flip"}, future=flipped))  # one batch with the clock's play
        assert (await asyncio.wait_for(flipped, 10))[0]

    async def stored() -> list[tuple[int | None, int, str]]:
        hands = (await store.load_tables(table_id="t1", with_hands=True))[0].hands
        return [(seat, ms, action["type"]) for seat, ms, action in hands[0].actions]

    try:
        assert table.state is not None
        due, rotate = table.state.clock_action()
        assert rotate == {"type": "rotate"}
        now = due - 6
        await clock_then_flip(rotate, due)  # early: the timer is set again, nothing applied
        assert table._clock_key == (due, rotate) and table._clock_handles
        await clock_then_flip({"type": "end_hand", "reason": "nerts"}, due)  # not what the clock wants now
        now = due - 5
        await clock_then_flip(rotate, due)  # on time (within 5 ms): stamped at its due time
        assert await stored() == [(0, due - 6, "flip"), (0, due - 6, "flip"), (None, due, "rotate"), (0, due, "flip")]
        late, _ = table.state.clock_action()
        now = late + 300
        await clock_then_flip(rotate, late)  # late: stamped when applied
        ahead, _ = table.state.clock_action()
        now = ahead
        assert (await play(table, 0, {"type": "flip"}, ms=ahead + 1000))[0]  # a stamp past the clock's due time
        await clock_then_flip(rotate, ahead)  # stamps never go back
        assert (await stored())[4:] == [(None, late + 300, "rotate"), (0, late + 300, "flip"),
                                        (0, ahead + 1000, "flip"), (None, ahead + 1000, "rotate"),
                                        (0, ahead + 1000, "flip")]
    finally:
        await table.stop()


async def test_a_clock_play_when_the_hand_has_no_clock_is_dropped(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A clock play that reaches the table when its hand no longer has a clock (its timer fired as the hand
    ended) is dropped, and the plays queued with it are answered: the table plays on."""
    table, _ = await started_nerts(store, "t1")
    try:
        assert table.state is not None
        due, rotate = table.state.clock_action()
        monkeypatch.setattr(table.state, "clock_action", lambda: None)
        table.queue.put_nowait(QueuedAction(None, rotate, due=due))
        assert (await asyncio.wait_for(play(table, 0, {"type": "flip"}), 10))[0]
        assert (await asyncio.wait_for(play(table, 0, {"type": "flip"}), 10))[0]
        hands = (await store.load_tables(table_id="t1", with_hands=True))[0].hands
        assert [action["type"] for _, _, action in hands[0].actions] == ["flip", "flip"]
        assert table.task is not None and not table.task.done()
    finally:
        await table.stop()


async def test_a_refused_action_gets_the_engines_code_and_params_and_the_batch_goes_on(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine's refusal (``IllegalAction``) reaches the seat with its code and params; a plain ``ValueError`` (no
    engine raises one today) is refused as ``action.illegal``, with a reason even when it has none; the plays queued
    after a refused one are applied."""
    table, connection = await started_nerts(store, "t1")
    try:
        assert table.state is not None
        state = table.state
        apply = state.apply

        def engine(seat: int | None, action: dict[str, Any], ms: int) -> Any:
            if action["type"] == "boom":
                raise ValueError(action.get("why", ""))
            return apply(seat, action, ms)

        monkeypatch.setattr(state, "apply", engine)
        messages_of(connection)
        actions = [{"type": "move", "from": "nerts", "to": "work:9"}, {"type": "boom", "why": "a bad shape"},
                   {"type": "boom"}, {"type": "flip"}]
        futures = [asyncio.get_running_loop().create_future() for _ in actions]
        for seq, (action, future) in enumerate(zip(actions, futures, strict=True)):
            table.queue.put_nowait(QueuedAction(0, action, future=future, connection=connection, seq=seq))
        answers = await asyncio.wait_for(asyncio.gather(*futures), 10)
        assert [ok for ok, _ in answers] == [False, False, False, True]
        rejects = [m for m in messages_of(connection) if m["type"] == "reject"]
        assert rejects[0] == {"type": "reject", "seq": 0, "reason": answers[0][1], "code": "nerts.no_work_pile",
                              "params": {"pile": {"kind": "work", "number": 10}, "count": 4}}
        assert rejects[1:] == [
            {"type": "reject", "seq": 1, "reason": "a bad shape", "code": "action.illegal", "params": {}},
            {"type": "reject", "seq": 2, "reason": "that action is not allowed now", "code": "action.illegal",
             "params": {}}]
        assert table.n_actions == 1
    finally:
        await table.stop()


async def test_a_new_hand_starts_its_clock_at_zero_and_only_at_a_table_in_play(store: Store) -> None:
    table, _ = await started_nerts(store, "t1")
    try:
        assert (table.hand_index, table.last_ms, table.n_actions) == (0, 0, 0)
        assert 0 <= table.now_ms() < 60_000
        table.hand_start = time.monotonic() - 1000.0  # the hand's clock counts milliseconds
        assert 1_000_000 <= table.now_ms() < 1_000_500
        assert table.state is not None
        table.state.apply(None, {"type": "end_hand", "reason": "stalled"}, 5)
        table.match.finish_hand()
        table.row.status = "abandoned"  # ended early: a hand timer that fires now deals nothing
        await table._start_hand()
        assert table.hand_index == 0 and len((await store.load_tables(table_id="t1", with_hands=True))[0].hands) == 1
        table.row.status = "playing"
        await table._start_hand()
        assert (table.hand_index, table.last_ms, table.n_actions) == (1, 0, 0)
    finally:
        await table.stop()


async def test_the_owner_applies_at_most_max_batch_plays_before_one_write(store: Store,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from cardtable.server.table import owner as table_module

    table, _ = await started_nerts(store, "t1")
    written: list[int] = []
    insert = store.insert_actions

    def insert_actions(tid: str, hand: int, rows: list[Any], at: str | None = None) -> Any:
        written.append(len(rows))
        return insert(tid, hand, rows, at)

    monkeypatch.setattr(store, "insert_actions", insert_actions)
    try:
        count = table_module.MAX_BATCH + 1
        futures = [asyncio.get_running_loop().create_future() for _ in range(count)]
        for future in futures:  # queued together, before the owner runs
            table.queue.put_nowait(QueuedAction(0, {"type": "flip"}, future=future))
        answers = await asyncio.wait_for(asyncio.gather(*futures), 30)
        assert all(ok for ok, _ in answers) and written == [table_module.MAX_BATCH, 1]
    finally:
        await table.stop()


async def test_stopping_a_table_whose_bot_task_failed_does_not_fail(store: Store) -> None:
    table = await live_table(store, "t1")
    table.start_owner()

    async def crash() -> None:
        raise RuntimeError("a bot fell over")

    failed = asyncio.create_task(crash())
    await until(failed.done)
    table._bot_tasks[1] = ("greedy:easy", failed)
    await table.stop()  # no exception
    assert table.task is not None and table.task.done() and failed.done()


async def test_a_new_table_races_nerts_plays_by_send_time_only_in_nerts(store: Store) -> None:
    from cardtable.server.table.fairness import FairGate

    nerts = await live_table(store, "t1")
    anemone = await live_table(store, "t2", game="anemone")
    assert isinstance(nerts.gate, FairGate) and anemone.gate is None
    for table in (nerts, anemone):  # not a Play now table, not started by a hello, not stopped, just seen
        assert (table.play_now, table.start_on_hello, table.stopped) == (False, False, False)
        assert 0 <= time.monotonic() - table.last_person < 60 and 0 <= time.monotonic() - table.last_presence < 60
