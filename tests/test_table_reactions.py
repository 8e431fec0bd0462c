"""``server/table/reactions.py``: preset reactions over the WebSocket (``docs/protocol.md``, "Reactions"). A seated
person's ``react`` reaches every connection of the table as a ``reaction`` on that seat, spectators included; an
unknown id, a spectator's reaction and one over the seat's budget get a coded ``error`` and reach nobody else; the
connection lives on. Reactions are never stored: not in the record, not in the database. With two server processes
(PostgreSQL and Redis), a reaction sent through the process that does not own the table reaches a person connected
to the owner, and back."""

from __future__ import annotations

import doctest
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cardtable.refusals import PARAMS
from cardtable.server.table import reactions
from cardtable.server.table.reactions import REACTION_BURST, REACTION_EVERY_S, REACTIONS
from clients import MakeClient, fast_settings
from polling import wait_for
from services import Postgres, new_database
from test_server_cluster_paths import ORIGIN, RELAY_SETTINGS, listening_apps, tables_of

Message = dict[str, Any]


@pytest.fixture
def client(make_client: MakeClient) -> TestClient:
    return make_client(fast_settings(default_grace_s=60))


@pytest.fixture
def postgres_db(postgres: Postgres) -> str:
    """A fresh database in the test process's PostgreSQL cluster."""
    return new_database(postgres)


def two_people(client: TestClient, *, headers: dict[str, str] | None = None) -> tuple[str, str, str]:
    """An open two-seat Enemy Anemone table of one round with ana (seat 0) and bo (seat 1): its id and their tokens."""
    made = client.post(
        "/api/tables",
        json={
            "game": "anemone",
            "options": {"players": 2, "rounds": 1},
            "seats": [{"kind": "open"}, {"kind": "open"}],
            "name": "ana",
        },
        headers=headers,
    )
    assert made.status_code == 201, made.text
    tid = made.json()["table"]["id"]
    joined = client.post(f"/api/tables/{tid}/join", json={"name": "bo"}, headers=headers)
    assert joined.status_code == 200, joined.text
    return tid, made.json()["token"], joined.json()["token"]


def hello(ws: Any, token: str | None) -> Message:
    """Say hello; the snapshot that follows the welcome."""
    ws.send_json({"type": "hello", "token": token})
    while (message := ws.receive_json())["type"] != "snapshot":
        pass
    return message  # type: ignore[no-any-return]


def next_message(ws: Any) -> Message:
    """The next message other than a ``table`` announcement (coalesced, those may come at any time)."""
    while (message := ws.receive_json())["type"] == "table":
        pass
    return message  # type: ignore[no-any-return]


def react(ws: Any, reaction: str) -> None:
    ws.send_json({"type": "react", "reaction": reaction})


def test_the_preset_reactions_and_the_budget() -> None:
    assert REACTIONS == ("hello", "nice", "wow", "oops", "thinking", "ready", "well_played", "laugh")
    assert (REACTION_BURST, REACTION_EVERY_S) == (3, 2.0)
    # the module's example: 3 at once, per seat
    result = doctest.testmod(reactions, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_a_reaction_reaches_every_connection_of_the_table_on_the_senders_seat(client: TestClient) -> None:
    tid, ana, bo = two_people(client)
    with (
        client.websocket_connect(f"/ws/tables/{tid}") as from_ana,
        client.websocket_connect(f"/ws/tables/{tid}") as from_bo,
        client.websocket_connect(f"/ws/tables/{tid}") as watching,
    ):
        hello(from_ana, ana)
        hello(from_bo, bo)
        hello(watching, None)
        react(from_bo, "nice")
        for ws in (from_ana, from_bo, watching):  # the sender sees its own too: one truth, from the server
            assert next_message(ws) == {"type": "reaction", "seat": 1, "reaction": "nice"}
        react(from_ana, "hello")
        for ws in (from_ana, from_bo, watching):
            assert next_message(ws) == {"type": "reaction", "seat": 0, "reaction": "hello"}
        table = client.app.state.manager.tables[tid]  # type: ignore[attr-defined]
        assert (table.version, table.status) == (0, "open")  # not an action: nothing changed at the table


def test_refused_reactions_get_a_coded_error_reach_nobody_and_the_connection_lives(
    client: TestClient,
) -> None:
    tid, ana, bo = two_people(client)
    with (
        client.websocket_connect(f"/ws/tables/{tid}") as from_ana,
        client.websocket_connect(f"/ws/tables/{tid}") as from_bo,
        client.websocket_connect(f"/ws/tables/{tid}") as watching,
    ):
        hello(from_ana, ana)
        hello(from_bo, bo)
        hello(watching, None)
        react(from_ana, "boo!")
        unknown = next_message(from_ana)
        assert (unknown["type"], unknown["code"]) == ("error", "reaction.unknown"), unknown
        assert unknown["params"] == {"reaction": "boo!", "reactions": list(REACTIONS)}
        react(from_ana, "x" * 33)  # longer than any id: refused by the message's shape
        assert next_message(from_ana)["code"] == "message.malformed"
        from_ana.send_json({"type": "react", "reaction": "nice", "text": "free text"})
        assert next_message(from_ana)["code"] == "message.malformed"
        react(watching, "nice")
        spectator = next_message(watching)
        assert (spectator["type"], spectator["code"], spectator["params"]) == (
            "error",
            "reaction.spectator",
            {},
        )
        from_ana.send_json({"type": "ping", "t": 1.0})
        assert next_message(from_ana)["type"] == "pong"  # the connection lives on
        # nothing of the above reached anyone else: bo's and the watcher's next message is the next real reaction
        react(from_ana, "wow")
        for ws in (from_bo, watching, from_ana):
            assert next_message(ws) == {"type": "reaction", "seat": 0, "reaction": "wow"}


@pytest.mark.slow  # waits the two seconds a spent budget takes to give back one reaction
def test_each_seat_may_send_three_at_once_then_one_every_two_seconds(client: TestClient) -> None:
    tid, ana, bo = two_people(client)
    with (
        client.websocket_connect(f"/ws/tables/{tid}") as from_ana,
        client.websocket_connect(f"/ws/tables/{tid}") as again_ana,  # a second connection of the same seat
        client.websocket_connect(f"/ws/tables/{tid}") as from_bo,
    ):
        hello(from_ana, ana)
        hello(again_ana, ana)
        hello(from_bo, bo)
        for reaction in ("nice", "wow", "oops"):
            react(from_ana, reaction)
        react(again_ana, "laugh")  # the budget is the seat's, whatever connection it comes through
        refused = next_message(again_ana)
        while refused["type"] == "reaction":
            refused = next_message(again_ana)
        assert (refused["type"], refused["code"]) == ("error", "reaction.rate_limited"), refused
        assert set(refused["params"]) == set(PARAMS["reaction.rate_limited"])
        assert (refused["params"]["burst"], refused["params"]["every_s"]) == (3, 2.0)
        assert 1000 < refused["params"]["retry_ms"] <= 2000
        assert [next_message(from_bo)["reaction"] for _ in range(3)] == ["nice", "wow", "oops"]
        react(from_bo, "hello")  # another seat's budget is its own
        assert next_message(from_bo) == {"type": "reaction", "seat": 1, "reaction": "hello"}
        refused_at = time.monotonic()

        def one_more_goes_through() -> bool:
            react(again_ana, "ready")
            reply = next_message(again_ana)
            while reply["type"] == "reaction" and reply["reaction"] != "ready":  # the earlier ones, echoed
                reply = next_message(again_ana)
            return reply["type"] == "reaction"

        wait_for(one_more_goes_through, timeout=10, what="the budget to give back one reaction", every=0.25)
        assert time.monotonic() - refused_at > 0.9  # not before its time
        # the refused ones were never sent: the next bo hears is the one let through
        assert next_message(from_bo) == {"type": "reaction", "seat": 0, "reaction": "ready"}


class Person(threading.Thread):
    """A person on one connection: hello, a reaction (``react``) once the hand began (everyone is there), the first
    legal action whenever it may act, until the match is over; at the end ``farewell``, waiting for it to come back."""

    def __init__(
        self, client: TestClient, tid: str, token: str, react: str | None = None, farewell: str | None = None
    ) -> None:
        super().__init__(daemon=True)
        self.client, self.tid, self.token, self.react, self.farewell = client, tid, token, react, farewell
        self.log: list[Message] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.client.websocket_connect(f"/ws/tables/{self.tid}") as ws:
                ws.send_json({"type": "hello", "token": self.token})
                seq, pending = 0, False
                while True:
                    message: Message = ws.receive_json()
                    self.log.append(message)
                    kind = message["type"]
                    assert kind != "error", message
                    if kind == "snapshot" and message["view"] is not None and self.react is not None:
                        ws.send_json({"type": "react", "reaction": self.react})
                        self.react = None
                    if kind == "hand_over" and message["winners"]:
                        break
                    if kind in ("ack", "reject"):
                        pending = False
                    if kind in ("snapshot", "update") and message["legal"] and not pending:
                        seq += 1
                        ws.send_json({"type": "action", "seq": seq, "action": message["legal"][0]})
                        pending = True
                if self.farewell is not None:
                    ws.send_json({"type": "react", "reaction": self.farewell})
                    while not (
                        (m := ws.receive_json())["type"] == "reaction" and m["reaction"] == self.farewell
                    ):
                        self.log.append(m)
                    self.log.append(m)
        except BaseException as error:  # reported by the test
            self.error = error

    def reactions(self) -> list[tuple[int, str]]:
        return [(m["seat"], m["reaction"]) for m in list(self.log) if m["type"] == "reaction"]


def play_out(client: TestClient, tid: str, people: list[Person]) -> None:
    """Start ``people`` (each says its reaction once connected), start the table, and wait for the match's end."""
    for person in people:
        person.start()
    wait_for(
        lambda: all(any(m["type"] == "snapshot" for m in list(p.log)) for p in people), 30, "every snapshot"
    )
    started = client.post(f"/api/tables/{tid}/start", json={"token": people[0].token}, headers=ORIGIN)
    assert started.status_code == 200, started.text
    for person in people:
        person.join(120)
        assert not person.is_alive() and person.error is None, repr(person.error)


def never_stored(record: Message, updates: list[Message]) -> None:
    """The record holds the actions only, and the versions count them: no reaction took one."""
    text = json.dumps(record)
    assert "reaction" not in text and "well_played" not in text and "thinking" not in text
    actions = record["hands"][0]["actions"]
    assert [m["v"] for m in updates] == list(range(1, len(actions) + 1))


def test_a_match_with_reactions_keeps_none_in_its_record_or_database(
    client: TestClient, tmp_path: Path
) -> None:
    tid, ana, bo = two_people(client)
    people = [Person(client, tid, ana, react="thinking", farewell="well_played"), Person(client, tid, bo)]
    play_out(client, tid, people)
    assert (0, "thinking") in people[1].reactions()
    assert people[0].reactions()[-1] == (0, "well_played")
    record = client.get(f"/api/tables/{tid}/record")
    assert record.status_code == 200, record.text
    never_stored(record.json(), [m for m in people[0].log if m["type"] == "update"])
    dump = "\n".join(sqlite3.connect(tmp_path / "server.db").iterdump())  # every row of every table
    assert tid in dump and "well_played" not in dump and "thinking" not in dump


def test_a_reaction_through_a_process_that_does_not_own_the_table_reaches_the_owners_players(
    postgres_db: str, redis_url: str
) -> None:
    """Two processes on one PostgreSQL and one Redis: ana's connection comes through b and is relayed to a, the
    table's owner, where bo is connected; each sees the other's reaction on the right seat, and neither is
    stored."""
    with listening_apps(postgres_db, redis_url, RELAY_SETTINGS, 2) as (a, b):
        tid, ana, bo = two_people(a, headers=ORIGIN)
        assert tid in tables_of(a) and tid not in tables_of(b)
        people = [Person(b, tid, ana, react="nice", farewell="well_played"), Person(a, tid, bo, react="wow")]
        play_out(a, tid, people)
        assert tid not in tables_of(b)  # ana was relayed all along
        for person in people:
            assert (0, "nice") in person.reactions() and (1, "wow") in person.reactions()
        assert people[0].reactions()[-1] == (0, "well_played")
        record = a.get(f"/api/tables/{tid}/record")
        assert record.status_code == 200, record.text
        never_stored(record.json(), [m for m in people[0].log if m["type"] == "update"])
