"""``server/storage/writer.py``: the group-commit writer. A write that fails fails alone; group commits hold at
most ``MAX_BATCH`` writes; closing stops the writer and its connections; actions keep their owner's epoch on
every write path; statements are compiled once; commits start at least the commit interval apart; a write
given up on, a failed commit and a fenced write do not hold up the rest."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import select

from cardtable.server.storage import writer as writer_module
from cardtable.server.storage.rows import SeatRow
from cardtable.server.storage.store import Store
from cardtable.server.storage.writer import Fenced
from table_helpers import table_row


async def test_a_write_that_fails_fails_alone(store: Store) -> None:
    await store.insert_table(table_row("t1"))
    # three writes waiting together (one group commit); the middle one breaks the primary key
    first = store.insert_hand("t1", 0, {"packs": [0]})
    broken = store.insert_table(table_row("t1"))
    last = store.insert_hand("t1", 1, {"packs": [1]})
    await first
    with pytest.raises(Exception, match=r"(?i)unique"):  # SQLite's UNIQUE, PostgreSQL's unique constraint
        await broken
    await last
    row = (await store.load_tables(table_id="t1", with_hands=True))[0]
    assert [hand.deal for hand in row.hands] == [{"packs": [0]}, {"packs": [1]}]
    assert len(await store.load_tables()) == 1
    # the writer lives on
    await store.insert_hand("t1", 2, {"packs": [2]})
    assert len((await store.load_tables(table_id="t1", with_hands=True))[0].hands) == 3


async def test_an_action_that_fails_fails_alone_in_a_batch_of_actions_only(store: Store) -> None:
    for tid in ("t1", "t2"):
        await store.insert_table(table_row(tid))
        await store.insert_hand(tid, 0, {"packs": []})
    await store.insert_actions("t1", 0, [(0, 0, 10, {"type": "flip"})])
    # three batches of actions waiting together (one group commit: one statement on PostgreSQL); the middle one
    # repeats a stored (table, hand, index)
    first = store.insert_actions("t2", 0, [(0, 1, 11, {"type": "flip"})])
    broken = store.insert_actions("t1", 0, [(1, 1, 12, {"type": "flip"}), (0, 1, 13, {"type": "stuck"})])
    last = store.insert_actions("t1", 0, [(1, 0, 14, {"type": "flip"})])
    await first
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        await broken
    await last
    rows = {row.id: row for row in await store.load_tables(with_hands=True)}
    assert rows["t1"].hands[0].actions == [(0, 10, {"type": "flip"}), (0, 14, {"type": "flip"})]
    assert rows["t2"].hands[0].actions == [(1, 11, {"type": "flip"})]
    await store.insert_actions("t2", 0, [(1, 0, 15, {"type": "flip"})])  # the writer lives on
    assert len((await store.load_tables(table_id="t2", with_hands=True))[0].hands[0].actions) == 2


async def test_writes_waiting_together_share_commits_of_at_most_max_batch(store: Store) -> None:
    await store.insert_table(table_row("t1"))
    await store.insert_hand("t1", 0, {"packs": []})
    before = store.commits
    count = writer_module.MAX_BATCH + 1
    writes = [store.insert_actions("t1", 0, [(i, i % 2, i, {"type": "flip", "n": i})]) for i in range(count)]
    await asyncio.gather(*writes)
    assert store.commits - before == 2
    actions = (await store.load_tables(table_id="t1", with_hands=True))[0].hands[0].actions
    assert actions == [(i % 2, i, {"type": "flip", "n": i}) for i in range(count)]


async def test_close_stops_the_writer_and_closes_its_connections(url: str) -> None:
    store = await Store.open(url)
    await store.insert_table(table_row("t1"))
    await store.insert_actions("t1", 0, [(0, 0, 10, {"type": "flip"})])
    writer, checkpointer, sync_conn = store._writer._task, store._checkpointer, store._writer._sync_conn
    conn, auto = store._writer._conn, store._writer._auto
    await store.close()
    assert writer is not None and writer.done()
    if url.startswith("sqlite"):  # its writer's own connection, and the checkpointer's task
        assert checkpointer is not None and checkpointer.done()
        assert sync_conn is not None and sync_conn.closed
    else:  # the writer's connections through the async engine (a batch of actions only: the autocommit one)
        assert checkpointer is None and conn is not None and conn.closed
        assert auto is not None and auto.closed


@pytest.mark.parametrize("path", ["default", "transaction", "portable"])
async def test_actions_keep_their_owners_epoch_on_every_write_path(url: str, path: str) -> None:
    """Actions are written, each with the epoch of the process that wrote it and fenced, on every write path of
    the store: the default (on PostgreSQL through asyncpg a batch of actions alone is one fenced statement, else a
    transaction of statements compiled once), the transaction even for actions alone (``transaction``), and
    SQLAlchemy's own execution when a driver's parameters are not positional (``portable``)."""
    from cardtable.server.storage import schema

    store, new = await Store.open(url), await Store.open(url)
    try:
        if path != "default":
            store._writer._asyncpg = False
        if path == "portable":
            store._writer._driver_sql = lambda statement: None  # type: ignore[method-assign]
        await store.insert_table(table_row("free"))
        store.fences["t1"] = store.fences["t2"] = 3  # two tables of one owner: the same epoch
        await store.insert_table(table_row("t1", status="playing"))
        await store.insert_table(table_row("t2", status="playing"))
        for tid in ("free", "t1"):
            await store.insert_hand(tid, 0, {"packs": []})
        await store.insert_actions("t1", 0, [(0, 1, 10, {"type": "flip"}), (1, 0, 12, {"type": "flip", "n": 2})])
        await store.insert_actions("t1", 0, [(2, None, 15, {"type": "rotate"})])
        await store.insert_actions("free", 0, [(0, 0, 7, {"type": "flip"})])
        await store.update_seat("t2", SeatRow(0, "person", "cy", None, "h"))  # the fence checks its own row only
        rows = {row.id: row for row in await store.load_tables(with_hands=True)}
        assert rows["t2"].seats[0].name == "cy"
        assert rows["t1"].hands[0].actions == [(1, 10, {"type": "flip"}), (0, 12, {"type": "flip", "n": 2}),
                                               (None, 15, {"type": "rotate"})]
        assert rows["free"].hands[0].actions == [(0, 7, {"type": "flip"})]
        a = schema.actions
        async with store.engine.connect() as conn:
            epochs = (await conn.execute(select(a.c.table_id, a.c.idx, a.c.epoch).order_by(a.c.table_id, a.c.idx))).all()
        assert [tuple(row) for row in epochs] == [("free", 0, None), ("t1", 0, 3), ("t1", 1, 3), ("t1", 2, 3)]
        assert await new.take("t1", 4) == 4  # another process takes it: this one's writes are refused
        with pytest.raises(Fenced):
            await store.insert_actions("t1", 0, [(3, 0, 20, {"type": "flip"})])
        assert len((await store.load_tables(table_id="t1", with_hands=True))[0].hands[0].actions) == 3
    finally:
        await store.close()
        await new.close()


async def test_commits_add_nothing_the_store_keeps(url: str) -> None:
    """Each statement of the write path is compiled once per store and kept: a thousand commits keep no more than
    the first did (a statement built anew for each commit was kept once per commit, and the server's memory grew
    by about 0.24 MB a second in the soak)."""
    store = await Store.open(url)
    try:
        await store.insert_table(table_row("t1", status="playing"))
        await store.insert_hand("t1", 0, {"packs": []})
        await store.insert_actions("t1", 0, [(0, 0, 5, {"type": "flip"})])
        kept = len(store._writer._compiled)
        for idx in range(1, 1000, 2):
            await asyncio.gather(store.insert_actions("t1", 0, [(idx, 0, 10 + idx, {"type": "flip"})]),
                                 store.insert_actions("t1", 0, [(idx + 1, 1, 11 + idx, {"type": "flip"})]))
        assert len(store._writer._compiled) == kept
        assert len((await store.load_tables(table_id="t1", with_hands=True))[0].hands[0].actions) == 1001
    finally:
        await store.close()


async def test_group_commits_on_postgresql_start_at_least_the_commit_interval_apart(url: str) -> None:
    """With a commit interval, a write that comes while the last commit began less than the interval ago waits
    for the interval's end, and the writes that come meanwhile share its commit; a write after a quiet spell is
    committed at once, and one still waiting when the store closes is stored before it closes. SQLite ignores the
    interval (each write is its own commit here). A negative interval is refused."""
    with pytest.raises(ValueError, match="commit interval"):
        await Store.open(url, commit_interval_s=-0.001)
    store = await Store.open(url, commit_interval_s=1.0)
    try:
        await store.insert_table(table_row("t1", status="playing"))
        await store.insert_hand("t1", 0, {"packs": []})
        # quiet for longer than the interval: a fixed wait on purpose, the quiet spell is what is tested
        await asyncio.sleep(1.05)
        before = store.commits
        await asyncio.wait_for(store.insert_actions("t1", 0, [(0, 0, 5, {"type": "flip"})]), 0.9)  # at once
        late = [store.insert_actions("t1", 0, [(1, 1, 6, {"type": "flip"})])]
        for idx in (2, 3):
            await asyncio.sleep(0.05)  # on purpose: these writes come while the one before waits out the interval
            late.append(store.insert_actions("t1", 0, [(idx, 0, 5 + idx, {"type": "flip"})]))
        await asyncio.gather(*late)
        sqlite = url.startswith("sqlite")
        assert store.commits - before == (4 if sqlite else 2)
        # a write waiting for the interval when the store closes is stored first
        waiting = store.insert_actions("t1", 0, [(4, 1, 9, {"type": "flip"})])
        await asyncio.sleep(0)  # one turn of the loop: the writer takes the write and waits out the interval
    finally:
        await store.close()
    assert waiting.done() and waiting.exception() is None
    store = await Store.open(url)
    try:
        actions = (await store.load_tables(table_id="t1", with_hands=True))[0].hands[0].actions
        assert [ms for _, ms, _ in actions] == [5, 6, 7, 8, 9]
    finally:
        await store.close()


async def test_a_write_given_up_on_does_not_hold_up_the_rest_of_its_commit(store: Store) -> None:
    """A write whose caller stopped waiting (its future cancelled) is stored with its group commit all the same,
    and every later write of that commit is still answered."""
    await store.insert_table(table_row("t1", status="playing"))
    await store.insert_hand("t1", 0, {"packs": []})
    writes = [store.insert_actions("t1", 0, [(i, 0, 10 + i, {"type": "flip"})]) for i in range(3)]
    writes[0].cancel()  # queued together: one commit
    await asyncio.wait_for(asyncio.gather(*writes[1:]), 10)
    assert len((await store.load_tables(table_id="t1", with_hands=True))[0].hands[0].actions) == 3


async def test_a_failed_commit_gives_its_database_connection_back(url: str) -> None:
    """A group commit the database refuses fails its writes, and the store closes the connection it failed on
    (it may be broken: the database restarted) and opens a new one for the next commit, so none is held for ever.
    SQLite commits on one connection of its own for the store's life."""
    if url.startswith("sqlite"):
        pytest.skip("SQLite commits on the store's own connection")

    def refused(conn: Any) -> None:
        raise RuntimeError("refused by the database")

    store = await Store.open(url)
    try:
        await store.insert_table(table_row("t1"))
        held = store.engine.pool.checkedout()  # type: ignore[attr-defined]
        for _ in range(3):
            with pytest.raises(RuntimeError, match="refused"):
                await store.write(refused)
        await store.insert_table(table_row("t2"))
        assert store.engine.pool.checkedout() == held  # type: ignore[attr-defined]
        await store.insert_hand("t1", 0, {"packs": []})
        await store.insert_actions("t1", 0, [(0, 0, 5, {"type": "flip"})])  # actions alone: their own connection
        held = store.engine.pool.checkedout()  # type: ignore[attr-defined]
        for _ in range(3):
            with pytest.raises(Exception, match="duplicate key"):  # the same (table, hand, index) again
                await store.insert_actions("t1", 0, [(0, 1, 6, {"type": "flip"})])
        await store.insert_actions("t1", 0, [(1, 1, 7, {"type": "flip"})])
        assert store.engine.pool.checkedout() == held  # type: ignore[attr-defined]
        assert {row.id for row in await store.load_tables()} == {"t1", "t2"}
        hands = (await store.load_tables(table_id="t1", with_hands=True))[0].hands
        assert hands[0].actions == [(0, 5, {"type": "flip"}), (1, 7, {"type": "flip"})]
    finally:
        await store.close()


async def test_a_refused_write_leaves_the_rest_of_its_commit_stored(url: str) -> None:
    """A group commit that holds a write refused by the fence (another process took its table) stores every other
    write of the commit, the ones queued after the refused one too: each is answered done only once stored."""
    store, new = await Store.open(url), await Store.open(url)
    try:
        store.fences["t1"] = 3
        await store.insert_table(table_row("t1", status="playing"))
        await store.insert_hand("t1", 0, {"packs": []})
        assert await new.take("t1", 4) == 4
        refused = store.insert_actions("t1", 0, [(0, 0, 5, {"type": "flip"})])
        after = [store.insert_table(table_row("t2")), store.insert_table(table_row("t3"))]  # the same commit
        with pytest.raises(Fenced):
            await refused
        await asyncio.gather(*after)
        assert sorted(row.id for row in await new.load_tables()) == ["t1", "t2", "t3"]
        assert (await new.load_tables(table_id="t1", with_hands=True))[0].hands[0].actions == []
    finally:
        await store.close()
        await new.close()
