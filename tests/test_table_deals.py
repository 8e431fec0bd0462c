"""``server/table/deals.py``: the same seed deals the same hands."""

from __future__ import annotations

from cardtable.server.storage.rows import SeatRow
from cardtable.server.storage.store import Store
from table_helpers import live_table, started_nerts


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
