"""A waiting turn-based table let go costs nothing (issue 29, ``server/lobby/idle_tables.py``): once let go it is
freed at once, without waiting for a garbage collection, which the server's thresholds make rare
(``edge/app.py``, ``GC_THRESHOLDS``): before, every table loaded and let go again stayed in memory, about 30 KB
each (``bench/turn_based.py``)."""

from __future__ import annotations

import gc
import weakref

import pytest

from clients import ORIGIN, MakeClient, fast_settings, make_table, sign_up
from polling import wait_for

pytestmark = pytest.mark.usefixtures("cheap_hashes")  # conftest.py: real Argon2id, small parameters


def test_a_waiting_table_let_go_is_freed_without_a_garbage_collection(make_client: MakeClient) -> None:
    client = make_client(fast_settings(turn_clock_min_s=1, expiry_check_s=0.1, turn_idle_s=0.3))
    ana = sign_up(client, "ana")
    seats = [{"kind": "open"}, *[{"kind": "bot", "bot": "heuristic"}] * 3]
    table_id, token = make_table(client, ana, {"start_s": 3600, "per_move_s": 3600}, seats)
    tables = client.app.state.manager.tables  # type: ignore[attr-defined]
    gc.disable()  # only reference counting frees what is let go from here on
    try:
        table = weakref.ref(tables[table_id])
        started = client.post(f"/api/tables/{table_id}/start", headers=ORIGIN, json={"token": token})
        assert started.status_code == 200, started.text
        wait_for(lambda: table_id not in tables, what="the waiting table let go")  # seat 0 leads: ana's turn
        wait_for(lambda: table() is None, timeout=5, what="the table let go freed")
    finally:
        gc.enable()
