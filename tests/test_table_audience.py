"""``server/table/audience.py``: what a table's connections are sent. A match as a seat and as a spectator see
it; a spectator's snapshot comes after what spectators were sent; legal actions only for a seat that may
act; the ``TABLE`` each kind of seat shows; coalesced ``table`` messages."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from sqlalchemy import select

from cardtable.games import get_game
from cardtable.server.core.settings import Settings
from cardtable.server.storage.players_schema import match_seats
from cardtable.server.storage.rows import SeatRow
from cardtable.server.storage.store import Store
from cardtable.server.table.connections import Connection
from cardtable.server.table.deals import hand_seed
from cardtable.server.table.owner import Table
from polling import until
from table_helpers import live_table, messages_of, play, started_nerts, table_row


async def test_a_match_as_a_seat_and_a_spectator_see_it(store: Store) -> None:
    from cardtable.server.lobby.manager import Manager

    manager = await Manager.open(store, Settings(hand_pause_s=0.01, default_ready_s=0.01, bot_pace=0.01, anemone_bot_delay_ms=0))
    try:
        table, _, token = await manager.create("anemone", {"players": 2, "rounds": 2},
                                               [{"kind": "open"}, {"kind": "bot", "bot": "random"}], "ana", 3, 60,
                                               autostart=False)
        seat, watcher = Connection(address="a"), Connection(address="b")
        await manager.hello(table, seat, token)
        await manager.hello(table, watcher, None)
        assert seat.seat == 0 and watcher.seat is None and table.spectators == {watcher}
        await manager.start(table.id, token)
        seen: dict[Connection, list[dict[str, Any]]] = {seat: [], watcher: []}

        def pump() -> bool:
            for connection, got in seen.items():
                got.extend(messages_of(connection))
            return table.status == "finished"

        async def played_to_the_end() -> bool:  # seat 0 plays whenever it may, until the match is over
            if pump():
                return True
            legal = table.legal_for(0)
            if legal:
                await play(table, 0, legal[0])
            return False

        await until(played_to_the_end, timeout=60, what="the match to finish", every=0.005)

        def told_finished() -> bool:
            pump()
            return all(any(m["type"] == "table" and m["table"]["status"] == "finished" for m in got)
                       for got in seen.values())

        await until(told_finished)  # table messages are coalesced: the last may come table_message_interval_s later
        async def recorded() -> list[int]:  # the match's results (server/players/results.py), after the last message
            async with store.engine.connect() as conn:
                rows = (await conn.execute(select(match_seats.c.seat).where(match_seats.c.table_id == table.id))).all()
            return sorted(row.seat for row in rows)

        assert await until(recorded, what="the match's results") == [0, 1]
        for connection, view_seat in ((seat, 0), (watcher, None)):
            got = seen[connection]
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


async def test_a_spectator_snapshot_comes_after_what_spectators_were_sent(store: Store) -> None:
    table, seated = await started_nerts(store, "t1")
    try:
        watcher = Connection()
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
    table.attach(Connection(), 2)
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
    watcher = Connection()
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
    # until the interval since the last table message has passed, by the table's own clock
    await until(lambda: loop.time() >= table._announced_at + table.settings.table_message_interval_s)
    table.announce()  # the interval has passed: at once again
    assert len(seen()) == 3
