"""``server/table/presence.py``: who sits at a table and who is there. ``admit`` refuses at each limit and not
before; attach and detach keep presence and the left mark; a stand-in only for an absent person in play,
after the grace, lost on return; people connected counts seated connections only."""

from __future__ import annotations

from typing import Any

import pytest

from cardtable.server.core.errors import TableError
from cardtable.server.core.settings import Settings
from cardtable.server.storage.rows import SeatRow
from cardtable.server.storage.store import Store
from cardtable.server.table.connections import Connection
from polling import until
from table_helpers import live_table, started_nerts


async def test_admit_refuses_at_each_limit_and_not_before(store: Store) -> None:
    settings = Settings(max_spectators=1, max_connections_per_token=2, max_connections_per_address_per_table=3)
    table = await live_table(store, "t1", settings=settings)

    def join(connection: Connection, seat: int | None) -> Connection:
        table.admit(connection, seat)
        table.attach(connection, seat)
        return connection

    def refused(connection: Connection, seat: int | None) -> tuple[int, str, dict[str, Any]]:
        with pytest.raises(TableError) as error:
            table.admit(connection, seat)
        return error.value.status, error.value.code, error.value.params

    join(Connection(address="a"), None)
    assert refused(Connection(address="b"), None) == (429, "connection.spectator_limit", {"limit": 1})
    with pytest.raises(TableError, match=r"^too many spectators: this table allows 1$"):
        table.admit(Connection(address="b"), None)
    join(Connection(address="a"), 0)
    join(Connection(address="b"), 0)
    assert refused(Connection(address="c"), 0) == (429, "connection.seat_limit", {"limit": 2})
    with pytest.raises(TableError, match=r"^too many connections for this seat: at most 2$"):
        table.admit(Connection(address="c"), 0)
    last = join(Connection(address="a"), 1)
    assert refused(Connection(address="a"), 1) == (429, "connection.address_limit", {"limit": 3})
    with pytest.raises(TableError, match=r"^too many connections to this table from one address: at most 3$"):
        table.admit(Connection(address="a"), 1)
    table.admit(Connection(address="b"), 1)  # another address: welcome
    table.detach(last)
    table.admit(Connection(address="a"), 1)  # back under the address's limit
    assert len(table.spectators) == 1 and [len(seat.connections) for seat in table.seats] == [2, 0]


async def test_an_absent_person_gets_a_stand_in_after_the_grace_and_loses_it_on_return(store: Store) -> None:
    table, connection = await started_nerts(store, "t1")
    table.row.grace_seconds = 0.05
    try:
        assert table.driven_seats() == {} and table.seats[0].away_timer is None

        async def leave() -> None:
            table.detach(connection)

        await table.submit_call(leave)
        assert table.seats[0].away_timer is not None
        await until(lambda: table.seats[0].standin is not None)
        assert table.driven_seats() == {0: "greedy:medium"} and table.seats[1].standin is None
        assert table.to_dict()["seats"][0]["standin"] == "greedy:medium"
        back = Connection()

        async def come_back() -> list[SeatRow]:
            return table.attach(back, 0)

        assert await table.submit_call(come_back) == []
        assert table.seats[0].standin is None and table.seats[0].away_timer is None
        assert table.driven_seats() == {}
    finally:
        await table.stop()


async def test_no_stand_in_before_the_start_or_for_bots(store: Store) -> None:
    table = await live_table(store, "t1", seats=[SeatRow(0, "person", "ana", None, "h"), SeatRow(1, "bot", "B", "random")],
                             game="anemone")
    table.row.grace_seconds = 0.01
    connection = Connection()
    table.attach(connection, 0)
    table.detach(connection)
    assert all(seat.away_timer is None for seat in table.seats)
    table.row.status = "playing"
    table._start_away_timer(table.seats[1])
    assert table.seats[1].away_timer is None
    table.attach(connection, 0)
    table._start_away_timer(table.seats[0])  # connected: no timer
    assert table.seats[0].away_timer is None
    table.detach(connection)
    assert table.seats[0].away_timer is not None
    table.seats[0].away_timer.cancel()
    table.seats[0].away_timer = None
    table._start_away_timer(table.seats[0])
    assert table.seats[0].away_timer is not None
    await until(lambda: table.seats[0].away_timer is None)  # the grace is over: the timer has fired
    assert table.driven_seats() == {1: "random"}  # the owner is not running: the stand-in waits in its queue
    assert not table.queue.empty()


async def test_attach_and_detach_keep_presence_and_the_left_mark(store: Store) -> None:
    table = await live_table(store, "t1", seats=[SeatRow(0, "person", "ana", None, "h", left=True),
                                                  SeatRow(1, "open")])
    before = table.last_presence, table.last_person
    watcher = Connection()
    assert table.attach(watcher, None) == [] and watcher.seat is None and table.spectators == {watcher}
    assert table.last_presence > before[0] and table.last_person == before[1]
    connection = Connection()
    assert table.attach(connection, 0) == [table.seats[0].row] and not table.seats[0].row.left
    assert connection.seat == 0 and table.seats[0].connections == {connection} and table.last_person == table.last_presence
    assert table.attach(Connection(), 0) == []  # already cleared
    if table.gate is not None:
        table.gate.observe(connection, 100.0)
        assert connection in table.gate.estimators
    seen = table.last_presence, table.last_person
    table.detach(watcher)
    assert table.spectators == set()
    assert table.last_presence > seen[0] and table.last_person == seen[1]  # a spectator is presence, not a person
    seen = table.last_presence, table.last_person
    table.detach(connection)
    assert len(table.seats[0].connections) == 1
    assert table.last_presence > seen[0] and table.last_person == table.last_presence
    assert table.gate is None or connection not in table.gate.estimators


async def test_a_stand_in_only_for_an_absent_person_in_play(store: Store) -> None:
    table = await live_table(store, "t1", game="anemone",
                             seats=[SeatRow(0, "person", "a", None, "h"), SeatRow(1, "bot", "B", "random")])
    try:
        connection = Connection()
        table.attach(connection, 0)
        table.row.status = "playing"
        await table._stand_in(table.seats[0])  # connected
        await table._stand_in(table.seats[1])  # a bot
        assert table.seats[0].standin is None and table.seats[1].standin is None
        table.detach(connection)
        table.row.status = "finished"
        await table._stand_in(table.seats[0])  # over
        assert table.seats[0].standin is None
        table.row.status = "playing"
        await table._stand_in(table.seats[0])
        assert table.seats[0].standin is not None and 0 in table.driven_seats()
    finally:
        await table.stop()


async def test_people_connected_counts_seated_connections_only(store: Store) -> None:
    table = await live_table(store, "t1", seats=[SeatRow(0, "person", "a", None, "h0"), SeatRow(1, "open")])
    assert not table.people_connected()
    watcher, seated = Connection(), Connection()
    table.attach(watcher, None)
    assert not table.people_connected()
    table.attach(seated, 0)
    assert table.people_connected()
    table.detach(seated)
    assert not table.people_connected()
