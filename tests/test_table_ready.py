"""``server/table/handover.py``: the ready step between hands (``docs/protocol.md``, "Between hands"). The next hand
waits until every connected person has pressed Ready (bots are always ready), or until the table's countdown runs
out; a person who is not connected holds nobody up; with nobody to wait for, the server's short pause. Countdowns
are set per test (60 s where a test shows the table waiting, a fraction of a second where it shows the countdown
ending), so nothing sleeps."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from cardtable.server.core.settings import Settings
from cardtable.server.lobby.manager import Manager
from cardtable.server.storage.store import Store
from cardtable.server.table.connections import Connection
from cardtable.server.table.owner import Table
from clients import MakeClient, fast_settings
from polling import until, wait_for
from table_helpers import messages_of, play

SLOW = 60.0
"""A countdown no test waits for: while it runs, only Ready (or people going away) can start the next hand."""


@pytest.fixture
async def manager(store: Store) -> AsyncIterator[Manager]:
    """A lobby on ``store`` with quick bots, a 50 ms pause for tables nobody is waited at, and the slow countdown
    for tables that set none."""
    opened = await Manager.open(
        store, Settings(hand_pause_s=0.05, default_ready_s=SLOW, bot_pace=0.01, anemone_bot_delay_ms=0)
    )
    yield opened
    await opened.close()


async def two_people_and_a_bot(
    manager: Manager, ready_seconds: float | None = None
) -> tuple[Table, list[Connection], Connection, list[str]]:
    """A started two-round Enemy Anemone table: two people (seats 0 and 1, each with a connection) and a random bot
    (seat 2), plus a spectator's connection; also the two people's tokens."""
    table, _, first = await manager.create(
        "anemone",
        {"players": 3, "rounds": 2},
        [{"kind": "open"}, {"kind": "open"}, {"kind": "bot", "bot": "random"}],
        "ana",
        None,
        60,
        autostart=False,
        ready_seconds=ready_seconds,
    )
    _, _, second = await manager.join(table.id, "bo", None)
    people = [Connection(address="a"), Connection(address="b")]
    watcher = Connection(address="c")
    for connection, token in zip(people, (first, second), strict=True):
        await manager.hello(table, connection, token)
    await manager.hello(table, watcher, None)
    await manager.start(table.id, first)
    return table, people, watcher, [first, second]


async def play_the_hand(table: Table, seen: dict[Connection, list[dict[str, Any]]]) -> None:
    """Both people play their first legal card whenever they may, until the hand is over (the bot plays itself)."""
    hand = table.hand_index

    async def over() -> bool:
        pump(seen)
        if table.hand_index == hand and table.state is not None and table.state.is_over:
            return True
        for seat in (0, 1):
            legal = table.legal_for(seat)
            if legal:
                await play(table, seat, legal[0])
        return False

    await until(over, timeout=60, what="the hand to end", every=0.005)


def pump(seen: dict[Connection, list[dict[str, Any]]]) -> None:
    for connection, got in seen.items():
        got.extend(messages_of(connection))


def heard(
    seen: dict[Connection, list[dict[str, Any]]], connection: Connection, kind: str, hand: int | None = None
) -> bool:
    """Whether ``connection`` has been sent a ``kind`` message (about ``hand``, if given), after taking what came."""
    pump(seen)
    return any(m["type"] == kind and (hand is None or m["hand"] == hand) for m in seen[connection])


async def press(table: Table, seat: int) -> None:
    """``seat``'s person presses Ready (on the owner, as the WebSocket's ``ready`` does)."""

    async def go() -> None:
        table.press_ready(seat)

    await table.submit_call(go)


def last_next_hand(got: list[dict[str, Any]]) -> dict[str, Any]:
    return [m for m in got if m["type"] == "next_hand"][-1]


async def test_the_next_hand_waits_until_every_connected_person_pressed_ready(manager: Manager) -> None:
    table, people, watcher, _tokens = await two_people_and_a_bot(manager)
    seen: dict[Connection, list[dict[str, Any]]] = {c: [] for c in (*people, watcher)}
    await play_the_hand(table, seen)
    await until(lambda: heard(seen, watcher, "next_hand"), what="the ready step to open")
    # everyone, spectators too, is told after the scores who is waited for, and until when
    for got in seen.values():
        kinds = [m["type"] for m in got]
        assert kinds.index("hand_over") < kinds.index("next_hand")
        step = last_next_hand(got)
        assert (step["hand"], step["ready"], step["waiting"]) == (1, [2], [0, 1])  # the bot is ready
        assert SLOW * 1000 - 5000 < step["starts_in_ms"] <= SLOW * 1000
        assert abs(step["starts_at"] - (time.time() * 1000 + step["starts_in_ms"])) < 5000

    await press(table, 0)
    await press(table, 0)  # twice: the same
    pump(seen)
    # seat 1 holds the next hand
    assert table.hand_index == 0 and table.state is not None and table.state.is_over
    step = last_next_hand(seen[people[1]])
    assert (step["ready"], step["waiting"]) == ([0, 2], [1])
    # no message for the second press
    assert len([m for m in seen[people[1]] if m["type"] == "next_hand"]) == 2

    await press(table, 1)
    await until(
        lambda: table.hand_index == 1 and table.state is not None and not table.state.is_over,
        what="the next hand to start once both pressed Ready",
    )
    await until(lambda: heard(seen, people[0], "snapshot", 1))
    assert last_next_hand(seen[people[0]])["waiting"] == []
    assert not table.between_hands() and table.ready == set()
    await press(table, 0)  # a press that crosses the start changes nothing
    assert not table.between_hands() and table.hand_index == 1

    # the last hand: the match ends, and no ready step opens
    await play_the_hand(table, seen)
    await until(lambda: table.status == "finished", what="the match to end")
    pump(seen)
    kinds = [m["type"] for m in seen[people[0]]]
    assert (
        kinds.count("hand_over") == 2
        and kinds[kinds.index("hand_over", kinds.index("hand_over") + 1) :].count("next_hand") == 0
    )
    assert not table.between_hands()


async def test_the_countdown_starts_the_next_hand_for_people_who_did_not_press(manager: Manager) -> None:
    countdown = 0.3
    table, people, _, _ = await two_people_and_a_bot(manager, ready_seconds=countdown)
    seen: dict[Connection, list[dict[str, Any]]] = {c: [] for c in people}
    await play_the_hand(table, seen)
    ended = time.monotonic()
    await press(table, 1)  # one of the two: the other is still waited for, until the countdown runs out
    await until(lambda: table.hand_index == 1, what="the countdown to start the next hand")
    # not before the countdown (the server's clock is monotonic)
    assert time.monotonic() - ended >= countdown - 0.05
    pump(seen)
    step = next(m for m in seen[people[0]] if m["type"] == "next_hand")
    assert step["waiting"] == [0, 1] and 0 < step["starts_in_ms"] <= countdown * 1000


async def test_a_person_who_goes_away_does_not_hold_the_table(manager: Manager) -> None:
    table, people, watcher, _tokens = await two_people_and_a_bot(manager)
    seen: dict[Connection, list[dict[str, Any]]] = {c: [] for c in (*people, watcher)}
    await play_the_hand(table, seen)
    await press(table, 0)
    assert table.between_hands() and table.waiting_seats() == [1]
    await manager.goodbye(table, people[1])  # seat 1 closes the page: nobody else is waited for
    await until(
        lambda: table.hand_index == 1, what="the next hand to start without the person gone (50 ms pause)"
    )
    pump(seen)
    assert last_next_hand(seen[watcher])["waiting"] == []


async def test_a_person_who_reloads_between_hands_is_waited_for_again(store: Store) -> None:
    manager = await Manager.open(
        store, Settings(hand_pause_s=SLOW / 2, default_ready_s=SLOW, bot_pace=0.01, anemone_bot_delay_ms=0)
    )
    try:
        table, people, _, tokens = await two_people_and_a_bot(manager)
        await play_the_hand(table, {})
        await press(table, 0)
        full = table.countdown_due
        assert full is not None and table.next_hand_due == full
        await manager.goodbye(table, people[1])  # the page reloads: a moment (hand_pause_s) to come back
        due = table.next_hand_due
        assert due is not None and due < full
        await manager.hello(table, Connection(address="b"), tokens[1])  # back in time
        await until(lambda: table.next_hand_due == full, what="the countdown as it was")
        assert table.hand_index == 0 and table.waiting_seats() == [1]
        await press(table, 1)
        await until(lambda: table.hand_index == 1)
    finally:
        await manager.close()


async def test_a_person_who_connects_between_hands_is_waited_for_and_told(manager: Manager) -> None:
    table, people, watcher, tokens = await two_people_and_a_bot(manager)
    seen: dict[Connection, list[dict[str, Any]]] = {c: [] for c in (*people, watcher)}
    await manager.goodbye(table, people[1])
    seen.pop(people[1])
    await play_the_hand(table, seen)
    assert table.waiting_seats() == [0]  # seat 1 is away: not waited for
    back = Connection(address="b")
    seen[back] = []
    await manager.hello(table, back, tokens[1])  # seat 1 comes back between hands
    await until(lambda: heard(seen, back, "next_hand"), what="the returning person to be told who is ready")
    assert last_next_hand(seen[back])["waiting"] == [0, 1]
    await press(table, 0)
    assert table.hand_index == 0 and table.waiting_seats() == [1]
    await press(table, 1)
    await until(lambda: table.hand_index == 1)


async def test_with_nobody_to_wait_for_the_next_hand_comes_after_the_short_pause(manager: Manager) -> None:
    table, people, watcher, _tokens = await two_people_and_a_bot(manager)
    seen: dict[Connection, list[dict[str, Any]]] = {watcher: []}
    for connection in people:
        # both away (their stand-ins come after the grace): nobody to wait for
        await manager.goodbye(table, connection)
    await play_the_hand(table, seen)
    await until(
        lambda: table.hand_index == 1, timeout=10, what="the next hand after hand_pause_s, not the countdown"
    )
    step = last_next_hand(seen[watcher])
    assert step["waiting"] == [] and step["starts_in_ms"] <= 50


def until_message(ws: Any, done: Any) -> dict[str, Any]:
    """The next message on ``ws`` that ``done`` accepts (those before it are passed over)."""
    while True:
        message: dict[str, Any] = ws.receive_json()
        if done(message):
            return message


def test_ready_over_the_websocket_and_the_table_option(make_client: MakeClient) -> None:
    client: TestClient = make_client(fast_settings(default_ready_s=SLOW))
    bad = client.post("/api/tables", json={"game": "nerts", "ready_seconds": -1})
    assert bad.status_code == 422 and bad.json()["code"] == "request.invalid"
    assert bad.json()["params"]["field"] == "ready_seconds"
    assert client.post("/api/tables", json={"game": "nerts", "ready_seconds": 601}).status_code == 422

    made = client.post(
        "/api/tables",
        json={
            "game": "nerts",
            "options": {"players": 2, "nerts_pile_size": 5},
            "name": "Ula",
            "autostart": False,
            "ready_seconds": 45,
            "seats": [{"kind": "open"}, {"kind": "open"}],
        },
    ).json()
    tid, first = made["table"]["id"], made["token"]
    second = client.post(f"/api/tables/{tid}/join", json={"name": "Vic"}).json()["token"]
    manager: Manager = client.app.state.manager  # type: ignore[attr-defined]
    table = manager.tables[tid]
    assert table.row.ready_seconds == 45 and table.ready_seconds == 45
    with (
        client.websocket_connect(f"/ws/tables/{tid}") as ws1,
        client.websocket_connect(f"/ws/tables/{tid}") as ws2,
        client.websocket_connect(f"/ws/tables/{tid}") as watcher,
    ):
        watcher.send_json({"type": "ready"})
        assert watcher.receive_json()["code"] == "hello.missing"
        watcher.send_json({"type": "hello", "token": None})
        assert watcher.receive_json()["type"] == "welcome"
        watcher.send_json({"type": "ready", "now": 1})
        assert until_message(watcher, lambda m: m["type"] == "error")["code"] == "message.malformed"
        for ws, token in ((ws1, first), (ws2, second)):
            ws.send_json({"type": "hello", "token": token})
            assert ws.receive_json()["type"] == "welcome"
        assert client.post(f"/api/tables/{tid}/start", json={"token": first}).status_code == 200

        def event(kind: str) -> Any:
            return lambda m: m["type"] == "update" and any(e["type"] == kind for e in m["events"])

        until_message(ws1, lambda m: m["type"] == "snapshot" and m["view"] is not None)
        ws1.send_json({"type": "ready"})  # in play: changes nothing, and is no error
        for seq in (1, 2):  # stuck, the piles rotate, stuck again with no move between: the hand ends
            ws1.send_json({"type": "action", "seq": seq, "action": {"type": "stuck"}})
            until_message(ws1, event("stuck"))
            ws2.send_json({"type": "action", "seq": seq, "action": {"type": "stuck"}})
            until_message(ws1, event("rotated") if seq == 1 else (lambda m: m["type"] == "hand_over"))
        step = until_message(ws1, lambda m: m["type"] in ("next_hand", "error"))
        assert (
            step["type"] == "next_hand"
            and step["waiting"] == [0, 1]
            and 40_000 < step["starts_in_ms"] <= 45_000
        )
        watcher.send_json({"type": "ready"})  # a spectator may not
        refused = until_message(watcher, lambda m: m["type"] == "error")
        assert refused["code"] == "action.spectator"
        ws1.send_json({"type": "ready"})
        assert until_message(ws2, lambda m: m["type"] == "next_hand")["waiting"] == [0, 1]  # the step opened
        assert until_message(ws2, lambda m: m["type"] == "next_hand")["waiting"] == [1]  # then seat 0 pressed
        assert table.hand_index == 0
        ws2.send_json({"type": "ready"})
        assert until_message(ws2, lambda m: m["type"] == "next_hand")["waiting"] == []
        assert until_message(ws2, lambda m: m["type"] == "snapshot")["hand"] == 1
        wait_for(lambda: table.hand_index == 1)
    rows = client.portal.call(lambda: manager.store.load_tables(table_id=tid))  # type: ignore[union-attr]
    assert rows[0].ready_seconds == 45  # stored: a table rebuilt elsewhere keeps its countdown


async def test_a_table_rebuilt_between_hands_gives_its_people_the_whole_countdown(store: Store) -> None:
    settings = Settings(hand_pause_s=0.05, default_ready_s=SLOW, bot_pace=0.01, anemone_bot_delay_ms=0)
    first = await Manager.open(store, settings)
    try:
        table, _, _, tokens = await two_people_and_a_bot(first)
        await play_the_hand(table, {})
        await press(table, 0)
    finally:
        await first.close()  # the server stops between hands (who was ready is not stored)
    second = await Manager.open(store, settings)
    try:
        rebuilt = second.tables[table.id]
        loop_now = asyncio.get_running_loop().time()
        assert rebuilt.between_hands() and rebuilt.hand_index == 0 and rebuilt.ready == set()
        assert (
            rebuilt.next_hand_due is not None and rebuilt.next_hand_due - loop_now > SLOW - 5
        )  # not hand_pause_s
        people = [Connection(address="a"), Connection(address="b")]
        for connection, token in zip(people, tokens, strict=True):
            await second.hello(rebuilt, connection, token)
        seen: dict[Connection, list[dict[str, Any]]] = {people[1]: []}
        await until(lambda: heard(seen, people[1], "next_hand"), what="the returning person to be told")
        assert last_next_hand(seen[people[1]])["waiting"] == [0, 1]
        await press(rebuilt, 0)
        assert rebuilt.hand_index == 0 and rebuilt.waiting_seats() == [1]
        await press(rebuilt, 1)
        await until(lambda: rebuilt.hand_index == 1, what="the next hand once both are ready again")
    finally:
        await second.close()
