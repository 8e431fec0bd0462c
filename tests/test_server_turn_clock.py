"""Turn-based tables' clock (issue 29, ``server/table/turn_clock.py``, ``server/lobby/idle_tables.py``): time banks
and deadlines kept in the database, the stand-in's move on a timeout and its keeping the seat after three, tables
let go while they wait and loaded again on a connection or a deadline, across a restart; each action's time in
the record.

Clocks here are seconds (``turn_clock_min_s`` 1) where players would have hours: the absences are real, only
shorter."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient, WebSocketTestSession

from cardtable import records
from cardtable.replay import fold
from cardtable.server.storage import schema
from clients import ORIGIN, MakeClient, ServerClient, as_account, fast_settings, make_table, query, sign_up
from polling import wait_for, wait_status

pytestmark = pytest.mark.usefixtures("cheap_hashes")  # conftest.py: real Argon2id, small parameters

BOTS = [{"kind": "bot", "bot": "heuristic"}] * 2


def turn_settings(**knobs: Any) -> Any:
    """Fast settings with clocks of seconds, sweeps every 0.1 s and tables let go after 0.3 s of quiet."""
    return fast_settings(**{"turn_clock_min_s": 1, "expiry_check_s": 0.1, "turn_idle_s": 0.3, **knobs})


def banks(client: TestClient, table_id: str) -> dict[int, Any]:
    """The stored ``turn_banks`` rows of ``table_id``, by seat."""
    b = schema.turn_banks
    return {r.seat: r for r in query(client, select(b).where(b.c.table_id == table_id))}


def to_move(client: TestClient, table_id: str) -> int | None:
    """The seat whose deadline runs, as stored (``None``: a bot moves, between hands, or over)."""
    return next((seat for seat, r in banks(client, table_id).items() if r.deadline_ms is not None), None)


def live_here(client: TestClient, table_id: str) -> bool:
    """Whether the server holds ``table_id`` in memory."""
    return table_id in client.app.state.manager.tables  # type: ignore[attr-defined]


@contextlib.contextmanager
def at_anas_turn(client: TestClient, clock: dict[str, int], rounds: int = 1
                 ) -> Iterator[tuple[str, WebSocketTestSession]]:
    """A turn-based table of a new account ana and two bots, started, with ana's connection open once it is her
    turn: the table's id and her connection."""
    ana = sign_up(client, "ana")
    table_id, token = make_table(client, ana, clock, [{"kind": "open"}, *BOTS], rounds=rounds)
    with client.websocket_connect(f"/ws/tables/{table_id}") as ws:
        ws.send_json({"type": "hello", "token": token})
        wait_for(lambda: to_move(client, table_id) == 0, what="ana's turn")
        yield table_id, ws


def move_once(client: TestClient, table_id: str, token: str) -> dict[str, Any]:
    """Connect, make the seat's first legal move once it is offered, wait for its ack, disconnect; the last
    ``TABLE`` seen."""
    with client.websocket_connect(f"/ws/tables/{table_id}") as ws:
        ws.send_json({"type": "hello", "token": token})
        return play(ws, moves=1)


def play(ws: WebSocketTestSession, moves: int | None = None) -> dict[str, Any]:
    """Answer every offer of legal moves with the first one, ``moves`` times (``None``: to the end of the match);
    the last ``TABLE`` seen."""
    table: dict[str, Any] = {}
    made = 0
    seq = 0
    while True:
        message = ws.receive_json()
        table = message.get("table") or table
        if table.get("status") == "finished" and moves is None:
            return table
        if message["type"] == "ack" and moves is not None and made >= moves:
            return table
        if message["type"] in ("update", "snapshot") and message.get("legal") and (moves is None or made < moves):
            seq += 1
            made += 1
            ws.send_json({"type": "action", "seq": seq, "action": message["legal"][0]})


def test_a_match_over_absences_a_restart_and_timeouts_finishes_with_a_record_that_replays(
        make_client: MakeClient) -> None:
    settings = turn_settings()
    client: ServerClient = make_client(settings)
    ana, bo = sign_up(client, "ana"), sign_up(client, "bo")
    table_id, ana_token = make_table(client, ana, {"start_s": 5, "per_move_s": 2},
                                     [{"kind": "open"}, {"kind": "open"}, *BOTS], rounds=2)
    as_account(client, bo)
    joined = client.post(f"/api/tables/{table_id}/join", headers=ORIGIN, json={})
    assert joined.status_code == 200, joined.text
    bo_token, tokens = joined.json()["token"], {0: ana_token}
    tokens[joined.json()["seat"]] = bo_token
    as_account(client, ana)
    assert client.post(f"/api/tables/{table_id}/start", headers=ORIGIN, json={"token": ana_token}).status_code == 200

    # Both people come and go between their moves; the table is let go while it waits, and loaded again.
    let_go = 0
    for made in range(6):
        [seat] = wait_for(lambda c=client: [s for s in [to_move(c, table_id)] if s is not None],
                          what="a person's turn")
        if not live_here(client, table_id):
            let_go += 1
        move_once(client, table_id, tokens[seat])
        if made == 2:  # the server stops and starts again in the middle
            client.__exit__(None, None, None)
            client = make_client(settings)
            waiting = to_move(client, table_id) is not None
            assert live_here(client, table_id) is not waiting  # a waiting table is not loaded at the start
        wait_for(lambda c=client: not live_here(c, table_id) or to_move(c, table_id) is None,
                 what="the table let go while it waits")
    assert let_go >= 3
    assert all(r.timeouts == 0 for r in banks(client, table_id).values())

    # Bo stops playing: his stand-in moves for him on each timeout, then keeps the seat after the third.
    bo_seat = next(s for s in tokens if tokens[s] == bo_token)
    with client.websocket_connect(f"/ws/tables/{table_id}") as ws:
        ws.send_json({"type": "hello", "token": ana_token})
        final = play(ws)
    assert final["status"] == "finished"
    assert final["turn"]["kept"][bo_seat] and final["turn"]["timeouts"][bo_seat] == 3
    assert final["turn"]["seat"] is None and final["turn"]["deadline"] is None
    assert not final["turn"]["kept"][0]

    record = records.loads(client.get(f"/api/tables/{table_id}/record").text)
    assert fold(record).match.is_over  # replays to the end
    stamps = [a.at for hand in record.hands for a in hand.actions]
    assert all(stamps) and stamps == sorted(stamps)
    seat_row = query(client, select(schema.seats.c.left).where(schema.seats.c.table_id == table_id,
                                                                schema.seats.c.seat == bo_seat))
    assert seat_row[0].left == 1  # the match counts as a leave for bo


def test_a_move_earns_per_move_time_up_to_the_start(make_client: MakeClient) -> None:
    client = make_client(turn_settings())
    with at_anas_turn(client, {"start_s": 2, "per_move_s": 1}) as (table_id, ws):
        first = banks(client, table_id)[0]
        assert first.bank_ms == 2000
        wait_for(lambda: time.time() * 1000 >= first.deadline_ms - 800, what="most of the bank spent")
        table = play(ws, moves=1)
    stored = wait_for(lambda: banks(client, table_id)[0].bank_ms != 2000 or None, what="the bank after the move")
    assert stored
    bank = banks(client, table_id)[0].bank_ms
    assert 1000 < bank <= 1800  # what was left (at most 0.8 s) plus the 1 s per move
    assert table["pace"] == "turn-based" and table["turn_clock"] == {"start_s": 2, "per_move_s": 1}
    assert banks(client, table_id)[0].timeouts == 0


def test_a_deadline_that_falls_due_while_the_table_is_let_go_is_acted_on_once(make_client: MakeClient) -> None:
    client = make_client(turn_settings())
    with at_anas_turn(client, {"start_s": 2, "per_move_s": 1}) as (table_id, _ws):
        pass
    wait_for(lambda: not live_here(client, table_id), what="the waiting table let go")
    # Nobody connects: the sweep finds the deadline due, loads the table, and the stand-in moves once for ana.
    wait_for(lambda: banks(client, table_id)[0].timeouts >= 1, timeout=15, what="the timeout acted on")
    assert banks(client, table_id)[0].timeouts == 1
    actions = query(client, select(schema.actions.c.seat).where(schema.actions.c.table_id == table_id,
                                                                schema.actions.c.seat == 0))
    assert len(actions) == 1  # one move made for her, not two


def test_a_table_restored_after_its_deadline_passed_moves_at_once(make_client: MakeClient) -> None:
    settings = turn_settings(turn_idle_s=600)
    client = make_client(settings)
    with at_anas_turn(client, {"start_s": 1, "per_move_s": 1}) as (table_id, _ws):
        pass
    client.__exit__(None, None, None)  # the server stops while ana has about a second left
    time.sleep(1.2)  # the deadline passes while no server runs: what this test is about
    client = make_client(settings)
    assert live_here(client, table_id)  # due: loaded at the start
    wait_for(lambda: banks(client, table_id)[0].timeouts == 1, timeout=10, what="the stand-in's move")


def test_a_person_away_is_never_replaced_by_the_grace_timer(make_client: MakeClient) -> None:
    client = make_client(turn_settings(default_grace_s=0.1, abandon_after_s=0.1, turn_idle_s=600))
    with at_anas_turn(client, {"start_s": 60, "per_move_s": 60}) as (table_id, _ws):
        pass
    time.sleep(0.6)  # several grace periods and sweeps: nothing may happen in them
    table = client.get(f"/api/tables/{table_id}").json()
    assert table["status"] == "playing"
    assert table["seats"][0]["standin"] is None
    wait_status(client, table_id, ("playing",))


def test_play_again_after_a_turn_based_match_opens_a_turn_based_table(make_client: MakeClient) -> None:
    client = make_client(turn_settings())
    ana = sign_up(client, "ana")
    clock = {"start_s": 60, "per_move_s": 30}
    table_id, token = make_table(client, ana, clock, [{"kind": "open"}, *BOTS])
    with client.websocket_connect(f"/ws/tables/{table_id}") as ws:
        ws.send_json({"type": "hello", "token": token})
        assert play(ws)["status"] == "finished"
    as_account(client, None)  # a guest may not take a turn-based seat, even through Play again
    refused = client.post(f"/api/tables/{table_id}/again", headers=ORIGIN, json={"token": token})
    assert refused.status_code == 401 and refused.json()["code"] == "account.not_signed_in"
    as_account(client, ana)
    again = client.post(f"/api/tables/{table_id}/again", headers=ORIGIN, json={"token": token})
    assert again.status_code == 200, again.text
    table = again.json()["table"]
    assert table["pace"] == "turn-based" and table["turn_clock"] == clock and table["id"] != table_id


def test_a_seat_its_stand_in_keeps_is_offered_no_move_and_its_moves_are_refused(make_client: MakeClient) -> None:
    client = make_client(turn_settings(turn_idle_s=600))
    ana = sign_up(client, "ana")
    table_id, token = make_table(client, ana, {"start_s": 1, "per_move_s": 1}, [{"kind": "open"}, *BOTS], rounds=3)
    with client.websocket_connect(f"/ws/tables/{table_id}") as ws:
        ws.send_json({"type": "hello", "token": token})
        offered_after_kept: list[Any] = []
        while True:  # ana never moves: three timeouts, then her stand-in keeps the seat
            message = ws.receive_json()
            turn = (message.get("table") or {}).get("turn") or {}
            if turn.get("kept", [False])[0]:
                break
        ws.send_json({"type": "action", "seq": 7, "action": {"type": "play", "card": "1A"}})
        while True:
            message = ws.receive_json()
            if message["type"] in ("update", "snapshot") and message.get("legal"):
                offered_after_kept.append(message["legal"])
            if message["type"] == "reject" and message["seq"] == 7:
                break
    assert message["code"] == "seat.kept"
    assert offered_after_kept == []
    assert banks(client, table_id)[0].timeouts == 3
