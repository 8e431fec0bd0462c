"""``server/storage/store.py``: the store's API. Every seat field is written back and only to its own seat; a
table's end is stored only with its status; actions keep their seat, time and order; loading filters, orders
and pages; a stale owner's writes are fenced and others' are not; live ids in order; the default database;
the fenced session settings of a process of several."""

from __future__ import annotations

from pathlib import Path

import pytest

from cardtable.server.storage import store as store_module
from cardtable.server.storage.rows import SeatRow
from cardtable.server.storage.store import Store
from cardtable.server.storage.writer import Fenced
from table_helpers import table_row


async def test_every_seat_field_is_stored_and_only_on_its_own_seat(store: Store) -> None:
    full = [SeatRow(0, "person", "ana", None, "hash-0", left=True), SeatRow(1, "bot", "Bo", "greedy:easy", None)]
    await store.insert_table(table_row("t0", seats=full))
    assert (await store.load_tables(table_id="t0"))[0].seats == full
    await store.insert_table(table_row("t1"))
    await store.insert_table(table_row("t2"))
    person = SeatRow(1, "person", "ana", None, "hash-1", left=True)
    await store.update_seat("t1", person)
    rows = {row.id: row for row in await store.load_tables()}
    assert rows["t1"].seats == [SeatRow(0, "open"), person]
    assert rows["t2"].seats == [SeatRow(0, "open"), SeatRow(1, "open")]
    bot = SeatRow(0, "bot", "Bot", "greedy:hard", None, left=False)
    await store.update_seat("t1", bot)
    await store.update_seat("t1", SeatRow(1, "person", "ana", None, "hash-2", left=False))
    seats = (await store.load_tables(table_id="t1"))[0].seats
    assert seats == [bot, SeatRow(1, "person", "ana", None, "hash-2", left=False)]


async def test_a_status_change_stores_the_end_only_when_the_table_finished(store: Store) -> None:
    await store.insert_table(table_row("t1"))
    await store.insert_table(table_row("t2"))
    await store.update_status("t1", "playing", hands_played=3, totals=[1, 2], winners=[1])
    row = (await store.load_tables(table_id="t1"))[0]
    assert (row.status, row.finished, row.hands_played, row.totals, row.winners) == ("playing", None, None, None, None)
    await store.update_status("t1", "finished", finished="2026-01-02T00:00:00Z", hands_played=3, totals=[1, 2],
                              winners=[1])
    rows = {row.id: row for row in await store.load_tables()}
    done = rows["t1"]
    assert (done.status, done.finished, done.hands_played, done.totals, done.winners) == (
        "finished", "2026-01-02T00:00:00Z", 3, [1, 2], [1])
    assert rows["t2"].status == "open" and rows["t2"].finished is None


async def test_actions_keep_their_seat_time_and_order_across_hands_and_tables(store: Store) -> None:
    for tid in ("t1", "t2"):
        await store.insert_table(table_row(tid))
        for hand in (1, 0):  # stored out of order: loaded in order
            await store.insert_hand(tid, hand, {"hand": hand, "table": tid})
    await store.insert_actions("t1", 1, [(0, None, 5, {"type": "end_hand"})])
    await store.insert_actions("t1", 0, [(1, 1, 20, {"type": "move", "to": "foundation:0"}),
                                         (0, 0, 10, {"type": "flip"})])
    await store.insert_actions("t2", 0, [(0, 1, 3, {"type": "stuck"})])
    rows = {row.id: row for row in await store.load_tables(with_hands=True)}
    t1 = rows["t1"]
    assert [hand.deal for hand in t1.hands] == [{"hand": 0, "table": "t1"}, {"hand": 1, "table": "t1"}]
    assert t1.hands[0].actions == [(0, 10, {"type": "flip"}), (1, 20, {"type": "move", "to": "foundation:0"})]
    assert t1.hands[1].actions == [(None, 5, {"type": "end_hand"})]
    assert rows["t2"].hands[0].actions == [(1, 3, {"type": "stuck"})] and rows["t2"].hands[1].actions == []
    # without with_hands: no hands, and the stored ones are not lost
    assert all(row.hands == [] for row in await store.load_tables())


async def test_loading_filters_by_status_and_id_and_orders_by_creation(store: Store) -> None:
    await store.insert_table(table_row("x", created="2026-01-02T00:00:00Z"))
    await store.insert_table(table_row("y", created="2026-01-03T00:00:00Z", status="playing"))
    await store.insert_table(table_row("z", created="2026-01-01T00:00:00Z",
                                       seats=[SeatRow(1, "open"), SeatRow(0, "person", "p", None, "h")]))
    assert [row.id for row in await store.load_tables()] == ["z", "x", "y"]  # by creation, not by id
    assert [row.id for row in await store.load_tables(statuses=("open",))] == ["z", "x"]
    assert [row.id for row in await store.load_tables(statuses=("playing", "finished"))] == ["y"]
    assert [row.id for row in await store.load_tables(statuses=())] == []
    assert [row.id for row in await store.load_tables(table_id="x")] == ["x"]
    assert await store.load_tables(table_id="zz") == []
    assert [row.id for row in await store.load_tables(limit=2)] == ["z", "x"]
    only = (await store.load_tables(table_id="z"))[0]
    assert [seat.seat for seat in only.seats] == [0, 1] and only.seats[0].name == "p"
    assert (only.game, only.options, only.seed, only.grace_seconds, only.created, only.status) == (
        "nerts", {"players": 2}, 7, 30.0, "2026-01-01T00:00:00Z", "open")


async def test_finished_pages_continue_after_the_cursor(store: Store) -> None:
    for tid, when in [("a", "2026-01-01"), ("b", "2026-01-02"), ("c", "2026-01-02"), ("d", "2026-01-03"),
                      ("a0", "2026-01-05")]:
        await store.insert_table(table_row(tid))
        await store.update_status(tid, "finished", finished=when, hands_played=1, totals=[0, 0], winners=[0])
    page = await store.load_tables(statuses=("finished",), newest_first=True, before=("2026-01-02", "c"))
    assert [row.id for row in page] == ["b", "a"]
    page = await store.load_tables(statuses=("finished",), newest_first=True, before=("2026-01-03", "d"), limit=1)
    assert [row.id for row in page] == ["c"]
    everything = await store.load_tables(statuses=("finished",), newest_first=True)
    assert [row.id for row in everything] == ["a0", "d", "c", "b", "a"]


async def test_a_stale_owner_stores_nothing_and_others_are_untouched(url: str) -> None:
    old, new = await Store.open(url), await Store.open(url)
    try:
        old.fences["t1"] = 1
        old.fences["t0"] = 1  # another table of the old owner's, at the same epoch, open and as old as t1
        await old.insert_table(table_row("t1", status="playing"))
        await old.insert_table(table_row("t0"))
        await old.insert_table(table_row("t2", status="playing", created="2025-12-31T00:00:00Z"))
        await old.insert_hand("t1", 0, {"packs": []})
        await old.insert_actions("t1", 0, [(0, 0, 10, {"type": "flip"})])
        await old.update_seat("t1", SeatRow(0, "person", "ana", None, "h"))
        await old.insert_actions("t1", 0, [(1, 1, 15, {"type": "flip"})])
        assert await new.take("t1", 1) == 2  # the stored epoch is still 1 after the old owner's writes
        new.fences["t1"] = 2
        writes = [lambda: old.insert_actions("t1", 0, [(2, 0, 20, {"type": "flip"})]),
                  lambda: old.update_status("t1", "finished", finished="2026-01-02T00:00:00Z"),
                  lambda: old.update_seat("t1", SeatRow(1, "person", "bo", None, "h1")),
                  lambda: old.insert_hand("t1", 1, {"packs": []})]
        for write in writes:
            with pytest.raises(Fenced) as fenced:
                await write()
            assert (fenced.value.table_id, fenced.value.epoch, str(fenced.value)) == (
                "t1", 1, "table t1: epoch 1 is no longer the owner's")
        await old.update_seat("t2", SeatRow(1, "person", "cy", None, "h2"))  # not fenced: stored
        await old.update_seat("t0", SeatRow(0, "person", "eve", None, "h4"))  # still the owner of t0: stored
        await new.insert_actions("t1", 0, [(2, 1, 30, {"type": "flip"})])
        await new.update_seat("t1", SeatRow(1, "person", "di", None, "h3"))
        rows = {row.id: row for row in await new.load_tables(with_hands=True)}
        t1 = rows["t1"]
        assert (t1.status, len(t1.hands)) == ("playing", 1)
        assert t1.hands[0].actions == [(0, 10, {"type": "flip"}), (1, 15, {"type": "flip"}), (1, 30, {"type": "flip"})]
        assert t1.seats == [SeatRow(0, "person", "ana", None, "h"), SeatRow(1, "person", "di", None, "h3")]
        assert rows["t2"].seats[1] == SeatRow(1, "person", "cy", None, "h2")
        assert rows["t0"].seats[0] == SeatRow(0, "person", "eve", None, "h4")
        assert await new.take("t1", 9) == 9 and await new.take("t1", 9) == 10
        assert await new.take("unknown", 1) is None
        assert await new.live_table_ids() == ["t2", "t0", "t1"]  # oldest first, then by id
        await new.update_status("t2", "finished", finished="2026-01-03T00:00:00Z")
        assert await new.take("t2", 1) is None and await new.live_table_ids() == ["t0", "t1"]
        assert await new.take("t0", 1) == 2  # an open table is taken too
    finally:
        await old.close()
        await new.close()


async def test_live_ids_break_ties_by_id_and_only_sqlite_checkpoints(url: str, store: Store) -> None:
    for tid in ("b", "a", "c"):  # created in the same second, stored out of id order
        await store.insert_table(table_row(tid, created="2026-01-01T00:00:00Z"))
    await store.insert_table(table_row("0", created="2026-01-02T00:00:00Z", status="playing"))
    await store.insert_table(table_row("z", created="2025-12-31T00:00:00Z", status="finished"))
    assert await store.live_table_ids() == ["a", "b", "c", "0"]
    if not url.startswith("sqlite"):
        assert await store.checkpoint() == (0, 0, 0) and await store.checkpoint(truncate=True) == (0, 0, 0)


def test_the_default_database_is_a_file_in_the_users_data_folder(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    folder = tmp_path / "data" / "cardtable"
    monkeypatch.setattr(platformdirs, "user_data_dir", lambda name: str(tmp_path / "data" / name))
    assert store_module.default_url() == f"sqlite+aiosqlite:///{folder / 'cardtable.db'}"
    assert folder.is_dir()
    assert store_module.default_url() == f"sqlite+aiosqlite:///{folder / 'cardtable.db'}"  # already there: fine


async def test_tables_loaded_by_ids_are_those_tables_only(store: Store) -> None:
    """``load_tables(table_ids=...)`` (a process taking over several tables at once) reads exactly those tables,
    with their hands and actions, and nothing for an id it does not know."""
    for tid in ("a", "b", "c"):
        await store.insert_table(table_row(tid, status="playing"))
        await store.insert_hand(tid, 0, {"packs": []})
        await store.insert_actions(tid, 0, [(0, 0, 5, {"type": "flip", "table": tid})])
    rows = await store.load_tables(table_ids=["c", "a", "zz"], with_hands=True)
    assert sorted(row.id for row in rows) == ["a", "c"]
    assert {row.id: row.hands[0].actions for row in rows} == {
        "a": [(0, 5, {"type": "flip", "table": "a"})], "c": [(0, 5, {"type": "flip", "table": "c"})]}
    assert await store.load_tables(table_ids=[]) == []


async def test_a_process_of_several_gets_the_fenced_session_settings_on_postgresql(url: str) -> None:
    """With ``cluster`` (several processes), PostgreSQL sessions cut off a paused owner's open transaction and lock
    waits after 3 s, and pooled connections are checked before use; one process keeps the defaults."""
    several, alone = await Store.open(url, cluster=True), await Store.open(url)
    try:
        postgres = not url.startswith("sqlite")
        for store, fenced in ((several, postgres), (alone, False)):
            assert store.engine.pool._pre_ping is fenced  # type: ignore[attr-defined]
            if postgres:
                async with store.engine.connect() as conn:
                    shown = [(await conn.exec_driver_sql(f"SHOW {name}")).scalar()
                             for name in store_module.FENCED_SETTINGS]
                assert shown == (["3s", "3s"] if fenced else ["0", "0"])
        await alone.insert_table(table_row("t1"))  # stored by a process that holds no fence: epoch 0
        assert await several.take("t1", 1) == 1
    finally:
        await several.close()
        await alone.close()
