"""Promises of ``server/storage/store.py``, ``server/table/owner.py`` and ``replay.py`` that mutation testing (``mutmut``, see
``docs/testing.md``) found unguarded: each test here fails on at least one mutant that survived the other tests.

Store: every seat field is written back and only to its own seat; a table's end is stored only with its status;
a write that fails fails alone; group commits hold at most ``MAX_BATCH`` writes; checkpoints copy and truncate the
log; loading filters, orders and pages. Table: refusals before the start and after the end, stamps that never go
back, the refusals of ``admit``, what ``to_dict`` shows, the clock's plays. Replay: the errors and the summary it
gives.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from sqlalchemy import select

from cardtable import records
from cardtable.games import get_game
from cardtable.records import RecordError
from cardtable.replay import IllegalRecordAction, fold, new_match
from cardtable.server.core.clock import now_iso
from cardtable.server.core.errors import TableError, refusal_message
from cardtable.server.core.settings import Settings
from cardtable.server.storage import store as store_module
from cardtable.server.storage.players_schema import match_seats
from cardtable.server.storage.store import Fenced, SeatRow, Store, TableRow
from cardtable.server.table.actions import Play
from cardtable.server.table.connections import Peer
from cardtable.server.table.owner import Table, hand_seed
from polling import until

RECORDS = Path(__file__).parent / "records"


@pytest.fixture
def url(db_url: str) -> str:
    """Every promise is kept on both databases: a SQLite file, then a fresh PostgreSQL database."""
    return db_url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A SQLite file, for what only SQLite has (its log, checkpoints and pragmas)."""
    return f"sqlite+aiosqlite:///{tmp_path / 'promises.db'}"


@pytest.fixture
async def store(url: str) -> AsyncIterator[Store]:
    opened = await Store.open(url)
    yield opened
    await opened.close()


def table_row(tid: str, *, status: str = "open", created: str = "2026-01-01T00:00:00Z",
              seats: list[SeatRow] | None = None, game: str = "nerts") -> TableRow:
    return TableRow(id=tid, game=game, options={"players": 2}, status=status, seed=7, grace_seconds=30.0,
                    created=created, seats=seats or [SeatRow(0, "open"), SeatRow(1, "open")])


# -- store -------------------------------------------------------------------------------------------------


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
    count = store_module.MAX_BATCH + 1
    writes = [store.insert_actions("t1", 0, [(i, i % 2, i, {"type": "flip", "n": i})]) for i in range(count)]
    await asyncio.gather(*writes)
    assert store.commits - before == 2
    actions = (await store.load_tables(table_id="t1", with_hands=True))[0].hands[0].actions
    assert actions == [(i % 2, i, {"type": "flip", "n": i}) for i in range(count)]


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


async def test_checkpoints_copy_the_log_and_truncate_empties_it(sqlite_url: str, tmp_path: Path) -> None:
    store = await Store.open(sqlite_url)
    try:
        await store.insert_table(table_row("t1"))
        await store.insert_hand("t1", 0, {"packs": list(range(2000))})
        wal = tmp_path / "promises.db-wal"
        busy, pages, done = await store.checkpoint()
        assert busy == 0 and pages > 0 and done == pages
        assert wal.stat().st_size > 0
        busy, _, _ = await store.checkpoint(truncate=True)
        assert busy == 0 and wal.stat().st_size == 0
        assert (await store.load_tables(table_id="t1", with_hands=True))[0].hands[0].deal["packs"][-1] == 1999
    finally:
        await store.close()


async def test_the_checkpointer_empties_the_log_every_so_many_checkpoints(
        sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "CHECKPOINT_EVERY_S", 0.02)
    monkeypatch.setattr(store_module, "TRUNCATE_EVERY", 3)
    store = await Store.open(sqlite_url)
    try:
        await store.insert_table(table_row("t1"))
        await store.insert_hand("t1", 0, {"packs": list(range(2000))})
        wal = tmp_path / "promises.db-wal"
        await until(lambda: wal.stat().st_size == 0, timeout=10)
    finally:
        await store.close()


async def test_sqlite_runs_in_wal_mode_with_its_limits(sqlite_url: str) -> None:
    store = await Store.open(sqlite_url)
    try:
        async with store.engine.connect() as conn:
            mode = (await conn.exec_driver_sql("PRAGMA journal_mode")).scalar()
            limit = (await conn.exec_driver_sql("PRAGMA journal_size_limit")).scalar()
            auto = (await conn.exec_driver_sql("PRAGMA wal_autocheckpoint")).scalar()
            sync = (await conn.exec_driver_sql("PRAGMA synchronous")).scalar()
    finally:
        await store.close()
    assert (mode, limit, auto, sync) == ("wal", store_module.JOURNAL_SIZE_LIMIT, 0, 1)


# -- table ---------------------------------------------------------------------------------------------------


async def live_table(store: Store, tid: str, *, status: str = "open", settings: Settings | None = None,
                     seats: list[SeatRow] | None = None, game: str = "nerts") -> Table:
    row = table_row(tid, status=status, seats=seats, game=game)
    await store.insert_table(row)
    return Table(row, get_game(game), store, settings or Settings(hand_pause_s=60))


async def play(table: Table, seat: int, action: dict[str, Any], ms: int | None = None,
               peer: Peer | None = None) -> tuple[bool, Any]:
    future: asyncio.Future[tuple[bool, Any]] = asyncio.get_running_loop().create_future()
    table.queue.put_nowait(Play(seat, action, future=future, ms=ms, peer=peer, seq=7))
    return await future


def messages_of(peer: Peer) -> list[dict[str, Any]]:
    import json

    out = []
    while not peer.outbox.empty():
        item = peer.outbox.get_nowait()
        if isinstance(item, str):
            out.append(json.loads(item))
    return out


async def test_actions_are_refused_before_the_start_and_after_the_end(store: Store) -> None:
    table = await live_table(store, "t1")
    table.start_owner()
    peer = Peer()
    try:
        assert await play(table, 0, {"type": "flip"}, peer=peer) == (False, "the game has not started")
        table.submit_play(Play(0, {"type": "flip"}, peer=peer, seq=7))  # from a connection: no future
        await until(lambda: peer.outbox.qsize() == 2)
        # two refused together: each gets its answer
        both = [play(table, 0, {"type": "flip"}), play(table, 1, {"type": "flip"})]
        assert await asyncio.wait_for(asyncio.gather(*both), 10) == [(False, "the game has not started")] * 2
        table.row.status = "finished"
        assert await play(table, 0, {"type": "flip"}, peer=peer) == (False, "the game is over")
        assert (await store.load_tables(table_id="t1", with_hands=True))[0].hands == []
        assert messages_of(peer) == [
            {"type": "reject", "seq": 7, "reason": "the game has not started", "code": "table.not_started", "params": {}},
            {"type": "reject", "seq": 7, "reason": "the game has not started", "code": "table.not_started", "params": {}},
            {"type": "reject", "seq": 7, "reason": "the game is over", "code": "table.over", "params": {}}]
    finally:
        await table.stop()


async def started_nerts(store: Store, tid: str) -> tuple[Table, Peer]:
    table = await live_table(store, tid, seats=[SeatRow(0, "person", "ana", None, "h0"),
                                               SeatRow(1, "person", "bo", None, "h1")])
    table.gate = None  # arrival order: this test is about stamps, not races
    table.start_owner()
    peer = Peer()

    async def start() -> None:
        table.attach(peer, 0)
        table.row.status = "playing"
        await table._start_hand()

    await table.submit_call(start)
    return table, peer


async def test_stamps_never_go_back_and_are_stored_as_used(store: Store) -> None:
    table, peer = await started_nerts(store, "t1")
    try:
        assert (await play(table, 0, {"type": "flip"}, ms=500))[0]
        assert (await play(table, 1, {"type": "flip"}, ms=200))[0]  # earlier than the last stamp: kept at 500
        assert (await play(table, 0, {"type": "flip"}, ms=900))[0]
        assert table.last_ms == 900 and table.n_actions == 3 and table.version == 3
        ok, reason = await play(table, 0, {"type": "move", "from": "nerts", "to": "work:9"}, peer=peer)
        assert not ok and reason
        stored = (await store.load_tables(table_id="t1", with_hands=True))[0].hands[0].actions
        assert [(seat, ms) for seat, ms, _ in stored] == [(0, 500), (1, 500), (0, 900)]
        got = messages_of(peer)
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
    table, peer = await started_nerts(store, "t1")
    try:
        messages_of(peer)
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in range(3)]
        # queued together, so the owner applies them as one batch: a flip, an illegal move, a flip
        for future, action in zip(futures, ({"type": "flip"}, {"type": "move", "from": "nerts", "to": "work:9"},
                                            {"type": "flip"}), strict=True):
            table.queue.put_nowait(Play(0, action, future=future, peer=peer, seq=len(action)))
        answers = await asyncio.wait_for(asyncio.gather(*futures), 10)
        assert [ok for ok, _ in answers] == [True, False, True] and answers[0][1] == 1 and answers[2][1] == 2
        got = messages_of(peer)
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


async def test_admit_refuses_at_each_limit_and_not_before(store: Store) -> None:
    settings = Settings(max_spectators=1, max_connections_per_token=2, max_connections_per_address_per_table=3)
    table = await live_table(store, "t1", settings=settings)

    def join(peer: Peer, seat: int | None) -> Peer:
        table.admit(peer, seat)
        table.attach(peer, seat)
        return peer

    def refused(peer: Peer, seat: int | None) -> tuple[int, str, dict[str, Any]]:
        with pytest.raises(TableError) as error:
            table.admit(peer, seat)
        return error.value.status, error.value.code, error.value.params

    join(Peer(address="a"), None)
    assert refused(Peer(address="b"), None) == (429, "connection.spectator_limit", {"limit": 1})
    with pytest.raises(TableError, match=r"^too many spectators: this table allows 1$"):
        table.admit(Peer(address="b"), None)
    join(Peer(address="a"), 0)
    join(Peer(address="b"), 0)
    assert refused(Peer(address="c"), 0) == (429, "connection.seat_limit", {"limit": 2})
    with pytest.raises(TableError, match=r"^too many connections for this seat: at most 2$"):
        table.admit(Peer(address="c"), 0)
    last = join(Peer(address="a"), 1)
    assert refused(Peer(address="a"), 1) == (429, "connection.address_limit", {"limit": 3})
    with pytest.raises(TableError, match=r"^too many connections to this table from one address: at most 3$"):
        table.admit(Peer(address="a"), 1)
    table.admit(Peer(address="b"), 1)  # another address: welcome
    table.detach(last)
    table.admit(Peer(address="a"), 1)  # back under the address's limit
    assert len(table.spectators) == 1 and [len(seat.peers) for seat in table.seats] == [2, 0]


def test_small_helpers() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", now_iso())
    assert refusal_message("error", "why", "a.code") == {"type": "error", "reason": "why", "code": "a.code",
                                                          "params": {}}
    assert refusal_message("error", "why", "a.code", {"n": 1})["params"] == {"n": 1}
    error = TableError(409, "seat.taken", "taken", {"seat": 1})
    assert (error.status, str(error), error.to_dict()) == (409, "taken", {"detail": "taken", "code": "seat.taken",
                                                                           "params": {"seat": 1}})
    assert TableError(404, "x", "y").to_dict()["params"] == {}
    seeds = {hand_seed(s, h) for s in (0, 1, 2, 2**61 + 3, 2**62 - 1) for h in range(50)}
    assert len(seeds) == 250 and all(isinstance(s, int) and 0 <= s < 2**62 for s in seeds)


# -- replay ----------------------------------------------------------------------------------------------------


def test_replay_summaries_and_errors() -> None:
    anemone = records.load(RECORDS / "anemone" / "2p-full-match.ok.json")
    result = fold(anemone)
    out = result.to_dict()
    assert set(out) == {"hands", "totals", "winner", "anemones"} and len(out["anemones"]) == 2
    assert out["totals"] == result.match.totals and out["winner"] == result.match.winners()
    nerts = records.load(RECORDS / "common" / "nerts-flips-in-progress.ok.json")
    summary = fold(nerts).to_dict()
    assert "anemones" not in summary and summary["winner"] is None and summary["hands"][-1]["ended"] is None
    steps: list[tuple[int, int | None, int]] = []
    fold(nerts, lambda hand, index, state: steps.append((hand, index, state.view(None)["ms"])))
    assert steps[0] == (0, None, 0)
    assert steps[1:] == [(0, i, entry.ms) for i, entry in enumerate(nerts.hands[0].actions)]
    error = IllegalRecordAction(2, 5, "no")
    assert (error.hand, error.index, error.reason, str(error)) == (2, 5, "no", "hand 2, action 5: no")
    for deal, message in (({}, "hands[0].deal: needs either 'seed' or 'packs' (one of them)"),
                          ({"packs": "x"}, "hands[0].deal.packs: must be a list of packs")):
        bad_deal = msgspec.structs.replace(nerts, hands=[msgspec.structs.replace(nerts.hands[0], deal=deal)])
        with pytest.raises(RecordError) as unreadable:
            fold(bad_deal)
        assert str(unreadable.value) == message
    with pytest.raises(IllegalRecordAction) as illegal:
        fold(records.load(RECORDS / "anemone" / "card-not-held.illegal.json"))
    assert (illegal.value.hand, illegal.value.index, illegal.value.reason) == (0, 15, "seat 0 does not hold 3A")
    one_more = msgspec.structs.replace(anemone, hands=[*anemone.hands, anemone.hands[0]])
    with pytest.raises(IllegalRecordAction) as illegal:
        fold(one_more)
    assert (illegal.value.hand, illegal.value.index, illegal.value.reason) == (
        len(anemone.hands), 0, "the match was already over before this hand")
    unfinished = msgspec.structs.replace(nerts, hands=[nerts.hands[0], nerts.hands[0]])
    with pytest.raises(IllegalRecordAction) as illegal:
        fold(unfinished)
    assert (illegal.value.hand, illegal.value.index, illegal.value.reason) == (
        0, len(nerts.hands[0].actions), "the hand had not ended when the next hand began")
    bad_seats = msgspec.structs.replace(anemone, seats=anemone.seats[:1])
    with pytest.raises(RecordError, match=r"^seats: the record has 1 seats but options.players is 2$"):
        new_match(bad_seats)


# -- what connections see ------------------------------------------------------------------------------------


async def test_a_match_as_a_seat_and_a_spectator_see_it(store: Store) -> None:
    from cardtable.server.lobby.manager import Manager

    manager = await Manager.open(store, Settings(hand_pause_s=0.01, bot_pace=0.01, anemone_bot_delay_ms=0))
    try:
        table, _, token = await manager.create("anemone", {"players": 2, "rounds": 2},
                                               [{"kind": "open"}, {"kind": "bot", "bot": "random"}], "ana", 3, 60,
                                               autostart=False)
        seat, watcher = Peer(address="a"), Peer(address="b")
        await manager.hello(table, seat, token)
        await manager.hello(table, watcher, None)
        assert seat.seat == 0 and watcher.seat is None and table.spectators == {watcher}
        await manager.start(table.id, token)
        seen: dict[Peer, list[dict[str, Any]]] = {seat: [], watcher: []}

        def pump() -> bool:
            for peer, got in seen.items():
                got.extend(messages_of(peer))
            return table.status == "finished"

        deadline = asyncio.get_running_loop().time() + 60
        while not pump():
            assert asyncio.get_running_loop().time() < deadline, "the match did not finish"
            legal = table.legal_for(0)
            if legal:
                await play(table, 0, legal[0])

            await asyncio.sleep(0.005)

        def told_finished() -> bool:
            pump()
            return all(any(m["type"] == "table" and m["table"]["status"] == "finished" for m in got)
                       for got in seen.values())

        await until(told_finished)  # table messages are coalesced: the last may come table_message_interval_s later
        recorded: list[int] = []
        for _ in range(500):  # the match's results are recorded (server/players/results.py), right after the last message
            async with store.engine.connect() as conn:
                rows = (await conn.execute(select(match_seats.c.seat).where(match_seats.c.table_id == table.id))).all()
            recorded = sorted(row.seat for row in rows)
            if recorded:
                break
            await asyncio.sleep(0.02)
        assert recorded == [0, 1]
        for peer, view_seat in ((seat, 0), (watcher, None)):
            got = seen[peer]
            assert [m["type"] for m in got[:2]] == ["welcome", "snapshot"]
            snapshots = [m for m in got if m["type"] == "snapshot" and m["view"] is not None]
            assert snapshots and all(m["view"]["seat"] == view_seat for m in snapshots)
            overs = [m for m in got if m["type"] == "hand_over"]
            for snap in snapshots:  # each new hand's snapshot carries the hands before it
                done = overs[:snap["hand"]]
                assert snap["results"] == [{"scores": m["scores"], "ended": m["ended"]} for m in done]
                assert snap["totals"] == (done[-1]["totals"] if done else [0, 0])
            assert [snap["hand"] for snap in snapshots] == list(range(len(overs)))
            updates = [m for m in got if m["type"] == "update"]
            assert updates and all(m["view"]["seat"] == view_seat for m in updates)
            drew = [e for m in updates for e in m["events"] if e["type"] == "drew"]
            if view_seat is None:  # a spectator never sees drawn cards
                assert drew and all("cards" not in e for e in drew)
            else:  # a seat sees its own
                assert any(e["seat"] == 0 and e["cards"] for e in drew)
                assert all("cards" not in e for e in drew if e["seat"] != 0)
            if view_seat is None:
                assert all(m["legal"] == [] for m in got if m["type"] in ("snapshot", "update"))
            else:
                assert any(m["legal"] for m in got if m["type"] in ("snapshot", "update"))
            overs = [m for m in got if m["type"] == "hand_over"]
            assert [m["hand"] for m in overs] == list(range(len(overs))) and len(overs) >= 2
            totals = [0, 0]
            for m in overs:
                totals = [t + s for t, s in zip(totals, m["scores"], strict=True)]
                assert m["totals"] == totals and m["ended"]
            assert all(m["winners"] is None for m in overs[:-1]) and overs[-1]["winners"] == table.match.winners()
            tables = [m["table"] for m in got if m["type"] == "table"]
            assert tables[-1]["status"] == "finished" and tables[-1]["winners"] == table.match.winners()
            assert all("token" not in str(t) for t in tables)
        assert table.row.hands_played == len(overs)
    finally:
        await manager.close()


async def test_an_absent_person_gets_a_stand_in_after_the_grace_and_loses_it_on_return(store: Store) -> None:
    table, peer = await started_nerts(store, "t1")
    table.row.grace_seconds = 0.05
    try:
        assert table.driven_seats() == {} and table.seats[0].away_timer is None

        async def leave() -> None:
            table.detach(peer)

        await table.submit_call(leave)
        assert table.seats[0].away_timer is not None
        await until(lambda: table.seats[0].standin is not None)
        assert table.driven_seats() == {0: "greedy:medium"} and table.seats[1].standin is None
        assert table.to_dict()["seats"][0]["standin"] == "greedy:medium"
        back = Peer()

        async def come_back() -> list[SeatRow]:
            return table.attach(back, 0)

        assert await table.submit_call(come_back) == []
        assert table.seats[0].standin is None and table.seats[0].away_timer is None
        assert table.driven_seats() == {}
    finally:
        await table.stop()


async def test_the_end_of_a_match_cancels_the_away_timers(store: Store) -> None:
    table, peer = await started_nerts(store, "t1")
    try:

        async def leave() -> None:
            table.detach(peer)

        await table.submit_call(leave)
        timer = table.seats[0].away_timer
        assert timer is not None
        await table.submit_call(table._finish_match)
        assert table.status == "finished" and table.seats[0].away_timer is None and timer.cancelled()
        row = (await store.load_tables(table_id="t1"))[0]
        assert (row.status, row.totals, row.hands_played) == ("finished", table.match.totals, 1)
    finally:
        await table.stop()


async def test_no_stand_in_before_the_start_or_for_bots(store: Store) -> None:
    table = await live_table(store, "t1", seats=[SeatRow(0, "person", "ana", None, "h"), SeatRow(1, "bot", "B", "random")],
                             game="anemone")
    table.row.grace_seconds = 0.01
    peer = Peer()
    table.attach(peer, 0)
    table.detach(peer)
    assert all(seat.away_timer is None for seat in table.seats)
    table.row.status = "playing"
    table._start_away_timer(table.seats[1])
    assert table.seats[1].away_timer is None
    table.attach(peer, 0)
    table._start_away_timer(table.seats[0])  # connected: no timer
    assert table.seats[0].away_timer is None
    table.detach(peer)
    assert table.seats[0].away_timer is not None
    table.seats[0].away_timer.cancel()
    table.seats[0].away_timer = None
    table._start_away_timer(table.seats[0])
    assert table.seats[0].away_timer is not None
    await asyncio.sleep(0.05)
    assert table.driven_seats() == {1: "random"}  # the owner is not running: the stand-in waits in its queue
    assert not table.queue.empty()


async def test_attach_and_detach_keep_presence_and_the_left_mark(store: Store) -> None:
    table = await live_table(store, "t1", seats=[SeatRow(0, "person", "ana", None, "h", left=True),
                                                  SeatRow(1, "open")])
    before = table.last_presence, table.last_person
    watcher = Peer()
    assert table.attach(watcher, None) == [] and watcher.seat is None and table.spectators == {watcher}
    assert table.last_presence > before[0] and table.last_person == before[1]
    peer = Peer()
    assert table.attach(peer, 0) == [table.seats[0].row] and not table.seats[0].row.left
    assert peer.seat == 0 and table.seats[0].peers == {peer} and table.last_person == table.last_presence
    assert table.attach(Peer(), 0) == []  # already cleared
    if table.gate is not None:
        table.gate.observe(peer, 100.0)
        assert peer in table.gate.estimators
    seen = table.last_presence, table.last_person
    table.detach(watcher)
    assert table.spectators == set()
    assert table.last_presence > seen[0] and table.last_person == seen[1]  # a spectator is presence, not a person
    seen = table.last_presence, table.last_person
    table.detach(peer)
    assert len(table.seats[0].peers) == 1
    assert table.last_presence > seen[0] and table.last_person == table.last_presence
    assert table.gate is None or peer not in table.gate.estimators


async def test_a_spectator_snapshot_comes_after_what_spectators_were_sent(store: Store) -> None:
    table, seated = await started_nerts(store, "t1")
    try:
        watcher = Peer()
        table.attach(watcher, None)
        table.broadcast({"type": "warning", "kind": "stall", "in_ms": 5})
        table.send_snapshot(watcher)
        got = messages_of(watcher)
        assert [m["type"] for m in got] == ["warning", "snapshot"] and got[1]["view"]["seat"] is None
        messages_of(seated)
        table.send_snapshot(seated)
        (snapshot,) = messages_of(seated)
        assert snapshot["view"]["seat"] == 0 and snapshot["legal"] == table.legal_for(0) != []
        assert snapshot["table"] == table.to_dict() and got[1]["table"] == table.to_dict()
        assert (snapshot["v"], snapshot["hand"], snapshot["totals"], snapshot["results"]) == (0, 0, [0, 0], [])
    finally:
        await table.stop()


async def test_stall_warnings_only_for_the_clock_still_set(store: Store) -> None:
    table, peer = await started_nerts(store, "t1")
    try:
        messages_of(peer)
        key = table._clock_key
        assert key is not None
        table._warn(key[0] + 1)  # a clock that has moved on: nothing
        table._clock_key = None
        table._warn(key[0])
        assert messages_of(peer) == []
        table._clock_key = key
        table._warn(key[0])
        (warning,) = messages_of(peer)
        assert warning["type"] == "warning" and warning["kind"] == "stall"
        assert 0 < warning["in_ms"] <= key[0]
        table.now_ms = lambda: key[0] - 10_000  # type: ignore[method-assign]
        table._warn(key[0])
        assert messages_of(peer)[0]["in_ms"] == 10_000
        table._clock_key = (0, key[1])
        table._warn(0)  # due already
        assert messages_of(peer)[0]["in_ms"] == 0
    finally:
        await table.stop()


async def test_legal_actions_only_for_a_seat_that_may_act_in_play(store: Store) -> None:
    table = await live_table(store, "t1", game="anemone",
                             seats=[SeatRow(0, "person", "a", None, "h0"), SeatRow(1, "person", "b", None, "h1")])
    assert table.legal_for(0) == [] and table.legal_for(None) == []
    table.row.status = "playing"
    table.state = table.match.start_hand(table.match.deal_cards(hand_seed(1, 0)))
    (turn,) = table.state.to_act()
    assert table.legal_for(turn) == table.state.legal_actions(turn) != []
    assert table.legal_for(1 - turn) == [] and table.legal_for(None) == []
    state = table.state
    while not state.is_over:  # to the end of the hand: nobody acts between hands
        seat = state.to_act()[0]
        state.apply(seat, state.legal_actions(seat)[0], 0)
    assert table.acting() == () and table.legal_for(turn) == []
    table.state = None  # in play, before the first deal
    assert table.acting() == () and table.legal_for(turn) == []
    table.state = state
    table.row.status = "finished"
    assert table.legal_for(turn) == []


async def test_close_stops_the_writer_and_closes_its_connections(url: str) -> None:
    store = await Store.open(url)
    await store.insert_table(table_row("t1"))
    await store.insert_actions("t1", 0, [(0, 0, 10, {"type": "flip"})])
    writer, checkpointer, sync_conn = store._writer, store._checkpointer, store._sync_conn
    conn, auto = store._conn, store._auto
    await store.close()
    assert writer is not None and writer.done()
    if url.startswith("sqlite"):  # its writer's own connection, and the checkpointer's task
        assert checkpointer is not None and checkpointer.done()
        assert sync_conn is not None and sync_conn.closed
    else:  # the writer's connections through the async engine (a batch of actions only: the autocommit one)
        assert checkpointer is None and conn is not None and conn.closed
        assert auto is not None and auto.closed


# -- found by the second mutation run: the fence, the table's shape, coalesced table messages, a broken or
# ended table, UTC times --------------------------------------------------------------------------------------


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


async def test_the_table_shows_each_kind_of_seat_and_the_start_time(store: Store) -> None:
    seats = [SeatRow(0, "open"), SeatRow(1, "bot", "Bo", "greedy:easy"), SeatRow(2, "person", "ana", None, "h2"),
             SeatRow(3, "person", "cy", None, "h3")]
    row = table_row("t1", seats=seats)
    row.options = {"players": 4}
    await store.insert_table(row)
    table = Table(row, get_game("nerts"), store, Settings(hand_pause_s=60))
    table.seats[1].replaceable = True
    table.seats[2].account = ("h2", "ana-account")
    table.seats[3].account = ("old-hash", "someone")  # the seat was left and taken again: nobody's account
    table.seats[3].standin = "greedy:medium"
    table.attach(Peer(), 2)
    table.starts_at = time.time() + 5.0
    shown = table.to_dict()
    assert shown["seats"] == [
        {"seat": 0, "kind": "open"},
        {"seat": 1, "kind": "bot", "bot": "greedy:easy", "name": "Bo", "replaceable": True},
        {"seat": 2, "kind": "person", "name": "ana", "connected": True, "standin": None, "account": "ana-account"},
        {"seat": 3, "kind": "person", "name": "cy", "connected": False, "standin": "greedy:medium", "account": None},
    ]
    assert shown["starts_at"] == int(table.starts_at * 1000) and 4000 < shown["starts_in_ms"] <= 5000
    assert (shown["id"], shown["game"], shown["status"], shown["hand"], shown["totals"], shown["winners"],
            shown["created"]) == ("t1", "nerts", "open", 0, [0, 0, 0, 0], None, "2026-01-01T00:00:00Z")
    assert shown["options"]["players"] == 4 and set(shown["options"]) == {s.name for s in table.info.option_specs}
    table.starts_at = time.time() - 1.0  # due: never a negative wait
    assert table.to_dict()["starts_in_ms"] == 0
    table.row.status = "playing"  # a bot is replaceable only before the start, and the start time is gone
    shown = table.to_dict()
    assert shown["seats"][1]["replaceable"] is False
    assert (shown["starts_at"], shown["starts_in_ms"]) == (None, None)


async def test_table_messages_are_coalesced_and_the_last_change_is_sent(store: Store) -> None:
    table = await live_table(store, "t1", settings=Settings(table_message_interval_s=0.5))
    watcher = Peer()
    table.attach(watcher, None)
    loop = asyncio.get_running_loop()
    got: list[dict[str, Any]] = []

    def seen() -> list[dict[str, Any]]:
        table.flush_spectators()  # spectators get their messages right after the owner's step
        got.extend(messages_of(watcher))
        return got

    first = loop.time()
    table.announce()  # the first: at once
    assert [m["type"] for m in seen()] == ["table"]
    table.seats[0].row = SeatRow(0, "person", "ana", None, "h")
    table.announce()  # within the interval: held back
    table.announce()  # and coalesced with this one
    assert len(seen()) == 1
    await until(lambda: len(seen()) > 1, timeout=10)
    assert loop.time() - first >= 0.45 and len(got) == 2  # not before the interval, and only one
    assert got[1]["type"] == "table" and got[1]["table"]["seats"][0]["name"] == "ana"
    await asyncio.sleep(0.6)
    table.announce()  # the interval has passed: at once again
    assert len(seen()) == 3


def test_times_are_utc_whatever_the_local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import UTC, datetime, timedelta


    monkeypatch.setenv("TZ", "Asia/Seoul")  # UTC+9, no summer time
    time.tzset()
    try:
        stamp = datetime.strptime(now_iso(), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert abs(stamp - datetime.now(UTC)) < timedelta(minutes=5)
    finally:
        monkeypatch.undo()
        time.tzset()


async def test_a_table_whose_write_fails_stops_and_tells_every_connection(store: Store) -> None:
    table, seated = await started_nerts(store, "t1")
    watcher = Peer()
    table.attach(watcher, None)
    try:
        async with store.engine.begin() as conn:  # a real failure of the next write: its table is gone
            await conn.exec_driver_sql("DROP TABLE actions")
        future: asyncio.Future[tuple[bool, Any]] = asyncio.get_running_loop().create_future()
        table.queue.put_nowait(Play(0, {"type": "flip"}, future=future, peer=seated, seq=1))
        await until(lambda: table.broken is not None, timeout=10)
        reason = table.broken
        assert reason is not None and reason.startswith("the table stopped on a server error: ")
        assert table.task is not None
        await asyncio.wait_for(table.task, 10)  # the owner has stopped
        for peer in (seated, watcher):
            got = messages_of(peer)
            assert got[-1] == {"type": "error", "reason": reason, "code": "table.broken", "params": {"detail": reason}}
            assert peer.closed and not any(m["type"] == "ack" for m in got)
    finally:
        await table.stop()


async def test_ending_a_table_early_stores_and_tells_it(store: Store) -> None:
    table = await live_table(store, "t0")
    watcher = Peer()
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
    table.queue.put_nowait(Play(0, {"type": "flip"}, future=future, seq=7))
    return await future


async def test_a_stand_in_only_for_an_absent_person_in_play(store: Store) -> None:
    table = await live_table(store, "t1", game="anemone",
                             seats=[SeatRow(0, "person", "a", None, "h"), SeatRow(1, "bot", "B", "random")])
    try:
        peer = Peer()
        table.attach(peer, 0)
        table.row.status = "playing"
        await table._stand_in(table.seats[0])  # connected
        await table._stand_in(table.seats[1])  # a bot
        assert table.seats[0].standin is None and table.seats[1].standin is None
        table.detach(peer)
        table.row.status = "finished"
        await table._stand_in(table.seats[0])  # over
        assert table.seats[0].standin is None
        table.row.status = "playing"
        await table._stand_in(table.seats[0])
        assert table.seats[0].standin is not None and 0 in table.driven_seats()
    finally:
        await table.stop()


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
        await asyncio.sleep(0.1)
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
    table.queue.put_nowait(Play(0, {"type": "flip"}, future=played))
    table.queue.put_nowait(Play(0, {"type": "flip"}, peer=Peer(), seq=1))  # from a connection: no future
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
    between = await restored(store, "t1", 1, Settings(hand_pause_s=0.05, anemone_bot_delay_ms=60_000))
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
        table.queue.put_nowait(Play(0, {"type": "flip"}, future=first))  # taken together with what follows
        call = table.submit_call(fine)
        table.queue.put_nowait(Play(0, {"type": "flip"}, future=last))
        assert await asyncio.wait_for(asyncio.gather(first, call, last), 10) == [(True, 1), 5, (True, 2)]
    finally:
        await table.stop()


async def test_the_same_seed_deals_the_same_hands(store: Store) -> None:
    tables = [(await started_nerts(store, tid))[0] for tid in ("t1", "t2")]
    other = await live_table(store, "t3", seats=[SeatRow(0, "person", "a", None, "h0"),
                                                 SeatRow(1, "person", "b", None, "h1")])
    other.row.seed = 8
    other.gate = None
    other.start_owner()
    tables.append(other)
    try:

        async def start() -> None:
            other.row.status = "playing"
            await other._start_hand()

        await other.submit_call(start)
        deals = {row.id: row.hands[0].deal for row in await store.load_tables(with_hands=True)}
        assert deals["t1"] == deals["t2"] != deals["t3"]
    finally:
        for table in tables:
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
    await asyncio.sleep(0)
    assert task.cancelled()


# -- from the fourth mutation run ------------------------------------------------------------------------------


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
        table.queue.put_nowait(Play(None, action, due=due))
        table.queue.put_nowait(Play(0, {"type": "flip"}, future=flipped))  # one batch with the clock's play
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
        table.queue.put_nowait(Play(None, rotate, due=due))
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
    table, peer = await started_nerts(store, "t1")
    try:
        assert table.state is not None
        state = table.state
        apply = state.apply

        def engine(seat: int | None, action: dict[str, Any], ms: int) -> Any:
            if action["type"] == "boom":
                raise ValueError(action.get("why", ""))
            return apply(seat, action, ms)

        monkeypatch.setattr(state, "apply", engine)
        messages_of(peer)
        actions = [{"type": "move", "from": "nerts", "to": "work:9"}, {"type": "boom", "why": "a bad shape"},
                   {"type": "boom"}, {"type": "flip"}]
        futures = [asyncio.get_running_loop().create_future() for _ in actions]
        for seq, (action, future) in enumerate(zip(actions, futures, strict=True)):
            table.queue.put_nowait(Play(0, action, future=future, peer=peer, seq=seq))
        answers = await asyncio.wait_for(asyncio.gather(*futures), 10)
        assert [ok for ok, _ in answers] == [False, False, False, True]
        rejects = [m for m in messages_of(peer) if m["type"] == "reject"]
        assert rejects[0] == {"type": "reject", "seq": 0, "reason": answers[0][1], "code": "nerts.no_work_pile",
                              "params": {"pile": {"kind": "work", "number": 10}, "count": 4}}
        assert rejects[1:] == [
            {"type": "reject", "seq": 1, "reason": "a bad shape", "code": "action.illegal", "params": {}},
            {"type": "reject", "seq": 2, "reason": "that action is not allowed now", "code": "action.illegal",
             "params": {}}]
        assert table.n_actions == 1
    finally:
        await table.stop()


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


async def test_people_connected_counts_seated_connections_only(store: Store) -> None:
    table = await live_table(store, "t1", seats=[SeatRow(0, "person", "a", None, "h0"), SeatRow(1, "open")])
    assert not table.people_connected()
    watcher, seated = Peer(), Peer()
    table.attach(watcher, None)
    assert not table.people_connected()
    table.attach(seated, 0)
    assert table.people_connected()
    table.detach(seated)
    assert not table.people_connected()


def test_replay_names_the_deal_in_any_deal_error_and_the_type_of_a_silent_one() -> None:
    """Errors no engine gives today still read well: a deal error whose text does not name the deal, and an action
    that fails with an exception saying nothing."""
    from cardtable.replay import apply_actions, start_hand

    class Match:
        def check_deal(self, deal: dict[str, Any]) -> None:
            raise ValueError("packs are short")

    with pytest.raises(RecordError) as unreadable:
        start_hand(Match(), records.HandRecord(deal={}), 2)  # type: ignore[arg-type]
    assert str(unreadable.value) == "hands[2].deal: packs are short"

    class State:
        is_over = True

        def apply(self, seat: int | None, action: dict[str, Any], ms: int) -> None:
            raise TypeError()

    hand = records.HandRecord(deal={}, actions=[records.ActionRecord(seat=0, ms=5, action={"type": "x"})])
    with pytest.raises(IllegalRecordAction) as illegal:
        apply_actions(State(), hand, 1)  # type: ignore[arg-type]
    assert (illegal.value.hand, illegal.value.index, illegal.value.reason) == (1, 0, "TypeError")


async def test_the_clock_timer_sends_its_action_as_the_clocks_play(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    table, _ = await started_nerts(store, "t1")
    try:
        assert table.state is not None
        due, rotate = table.state.clock_action()
        sent: list[Play] = []
        monkeypatch.setattr(table, "submit_play", sent.append)
        monkeypatch.setattr(table, "now_ms", lambda: due)
        table._clock_key = None
        table._schedule_clock()  # due now: its timer fires at once
        await until(lambda: len(sent) == 1)
        assert (sent[0].seat, sent[0].action, sent[0].due, sent[0].future) == (None, rotate, due, None)
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


async def test_the_checkpointer_truncates_every_so_many_checkpoints_and_only_then(
        sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "CHECKPOINT_EVERY_S", 0.01)
    monkeypatch.setattr(store_module, "TRUNCATE_EVERY", 4)
    store = await Store.open(sqlite_url)
    modes: list[bool] = []

    async def checkpoint(truncate: bool = False) -> tuple[int, int, int]:
        modes.append(truncate)
        return (0, 0, 0)

    monkeypatch.setattr(store, "checkpoint", checkpoint)
    try:
        await until(lambda: len(modes) >= 9, timeout=10)
    finally:
        await store.close()
    assert modes[:9] == [False, False, False, True] * 2 + [False]


async def test_the_owner_applies_at_most_max_batch_plays_before_one_write(store: Store,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from cardtable.server.table import owner as table_module

    table, _ = await started_nerts(store, "t1")
    written: list[int] = []
    insert = store.insert_actions

    def insert_actions(tid: str, hand: int, rows: list[Any]) -> Any:
        written.append(len(rows))
        return insert(tid, hand, rows)

    monkeypatch.setattr(store, "insert_actions", insert_actions)
    try:
        count = table_module.MAX_BATCH + 1
        futures = [asyncio.get_running_loop().create_future() for _ in range(count)]
        for future in futures:  # queued together, before the owner runs
            table.queue.put_nowait(Play(0, {"type": "flip"}, future=future))
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
    await asyncio.sleep(0)
    table._bot_tasks[1] = ("greedy:easy", failed)
    await table.stop()  # no exception
    assert table.task is not None and table.task.done() and failed.done()


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
            store._asyncpg = False
        if path == "portable":
            store._driver_sql = lambda statement: None  # type: ignore[method-assign]
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
        kept = len(store._compiled)
        for idx in range(1, 1000, 2):
            await asyncio.gather(store.insert_actions("t1", 0, [(idx, 0, 10 + idx, {"type": "flip"})]),
                                 store.insert_actions("t1", 0, [(idx + 1, 1, 11 + idx, {"type": "flip"})]))
        assert len(store._compiled) == kept
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
        await asyncio.sleep(1.05)  # quiet for longer than the interval
        before = store.commits
        await asyncio.wait_for(store.insert_actions("t1", 0, [(0, 0, 5, {"type": "flip"})]), 0.9)  # at once
        late = [store.insert_actions("t1", 0, [(1, 1, 6, {"type": "flip"})])]
        for idx in (2, 3):
            await asyncio.sleep(0.05)
            late.append(store.insert_actions("t1", 0, [(idx, 0, 5 + idx, {"type": "flip"})]))
        await asyncio.gather(*late)
        sqlite = url.startswith("sqlite")
        assert store.commits - before == (4 if sqlite else 2)
        # a write waiting for the interval when the store closes is stored first
        waiting = store.insert_actions("t1", 0, [(4, 1, 9, {"type": "flip"})])
        await asyncio.sleep(0)
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


async def test_stores_opened_at_once_on_a_new_database_migrate_one_at_a_time(url: str) -> None:
    """Several processes starting at once on a new database (a rolling deploy, a fresh service): each store
    opens, the schema is created once, and all of them work on it."""
    if url.startswith("sqlite"):
        pytest.skip("one process per SQLite file")
    stores = await asyncio.gather(*(Store.open(url) for _ in range(4)))
    try:
        for i, opened in enumerate(stores):
            await opened.insert_table(table_row(f"t{i}"))
        assert sorted(row.id for row in await stores[0].load_tables()) == ["t0", "t1", "t2", "t3"]
    finally:
        for opened in stores:
            await opened.close()


async def test_a_new_table_races_nerts_plays_by_send_time_only_in_nerts(store: Store) -> None:
    from cardtable.server.table.fairness import FairGate

    nerts = await live_table(store, "t1")
    anemone = await live_table(store, "t2", game="anemone")
    assert isinstance(nerts.gate, FairGate) and anemone.gate is None
    for table in (nerts, anemone):  # not a Play now table, not started by a hello, not stopped, just seen
        assert (table.play_now, table.start_on_hello, table.stopped) == (False, False, False)
        assert 0 <= time.monotonic() - table.last_person < 60 and 0 <= time.monotonic() - table.last_presence < 60


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
