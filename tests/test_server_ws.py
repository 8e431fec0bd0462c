"""The play WebSocket of cardtable.server (docs/protocol.md, "WebSocket"): whole games with bots, reconnects,
refusals that leave the table unchanged, and no hidden card in any message a seat receives."""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from cardtable.games import get_game
from cardtable.refusals import CODES, PARAMS
from cardtable.server.storage.rows import TableRow
from clients import MakeClient, fast_settings
from polling import wait_for

Message = dict[str, Any]


@pytest.fixture
def client(make_client: MakeClient) -> TestClient:
    return make_client(fast_settings(default_grace_s=60))


def create(client: TestClient, game: str, options: dict[str, Any], seats: list[dict[str, Any]],
           **extra: Any) -> dict[str, Any]:
    response = client.post("/api/tables", json={"game": game, "options": options, "seats": seats, **extra})
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()
    return data


def join(client: TestClient, tid: str, name: str) -> str:
    response = client.post(f"/api/tables/{tid}/join", json={"name": name})
    assert response.status_code == 200, response.text
    token: str = response.json()["token"]
    return token


Policy = Callable[[list[Message], Message], Message | None]


class Player(threading.Thread):
    """A scripted person: one connection, one action in flight at a time, chosen by ``policy`` from ``legal``."""

    def __init__(self, client: TestClient, tid: str, token: str | None, policy: Policy,
                 stop: Callable[[Message], bool], pace: float = 0.0) -> None:
        super().__init__(daemon=True)
        self.client, self.tid, self.token, self.policy, self.stop, self.pace = client, tid, token, policy, stop, pace
        self.log: list[Message] = []
        self.acks = 0
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
                    if self.stop(message):
                        return
                    if kind in ("ack", "reject"):
                        pending = False
                        self.acks += kind == "ack"
                    if kind in ("snapshot", "update") and message["legal"] and not pending:
                        action = self.policy(message["legal"], message["view"])
                        if action is not None:
                            if self.pace:
                                time.sleep(self.pace)  # not a wait: a person's pace
                            seq += 1
                            ws.send_json({"type": "action", "seq": seq, "action": action})
                            pending = True
        except BaseException as error:  # reported by the test
            self.error = error


def connected(*players: Player) -> None:
    """Wait until each player's connection has had its snapshot: it is in the table's audience."""
    wait_for(lambda: all(any(m["type"] == "snapshot" for m in list(p.log)) for p in players), 30,
             "every connection's snapshot")


def first_legal(legal: list[Message], _view: Message) -> Message | None:
    return legal[0]


def nerts_policy(legal: list[Message], _view: Message) -> Message | None:
    def rank(action: Message) -> int:
        kind, src, dst = action["type"], action.get("from", ""), action.get("to", "")
        if kind == "nerts":
            return 0
        if kind == "move" and dst.startswith("foundation"):
            return 1
        if kind in ("move", "under") and src == "nerts":
            return 2
        if kind == "flip":
            return 3
        if kind in ("stuck", "cycle"):
            return 4
        return 9

    best = min(legal, key=rank)
    return best if rank(best) < 9 else None


def finished(message: Message) -> bool:
    return bool(message["type"] == "table" and message["table"]["status"] == "finished")


def hand_over(message: Message) -> bool:
    return bool(message["type"] == "hand_over")


def load_row(client: TestClient, tid: str) -> TableRow:
    store = client.app.state.store  # type: ignore[attr-defined]
    assert client.portal is not None
    rows: list[TableRow] = client.portal.call(functools.partial(store.load_tables, table_id=tid, with_hands=True))
    return rows[0]


def run_players(players: list[Player], timeout: float = 120.0) -> None:
    for player in players:
        player.start()
    for player in players:
        player.join(timeout)
        assert not player.is_alive(), "a player did not see the end"
        assert player.error is None, repr(player.error)


def hidden_by_version(row: TableRow, hidden: Callable[[Any, int], dict[int, set[str]]],
                      seats: int) -> dict[tuple[int, int, int], dict[int, set[str]]]:
    """``(hand, v, seat) -> {pack or seat: hidden codes}`` after each version, folded from the stored record."""
    match = get_game(row.game).new_match(row.options)
    out: dict[tuple[int, int, int], dict[int, set[str]]] = {}
    v = 0
    for h, hand in enumerate(row.hands):
        state = match.start_hand(hand.deal)
        for seat in range(seats):
            out[(h, v, seat)] = hidden(state, seat)
        for actor, ms, action in hand.actions:
            state.apply(actor, action, ms)
            v += 1
            for seat in range(seats):
                out[(h, v, seat)] = hidden(state, seat)
        if state.is_over:
            match.finish_hand()
    return out


def quoted(codes: set[str], text: str) -> set[str]:
    return {code for code in codes if f'"{code}"' in text}


def anemone_hidden(state: Any, seat: int) -> dict[int, set[str]]:
    codes: set[str] = set()
    for other in range(state.players):
        if other != seat:
            codes.update(state.view(other).get("hand", []))
    from cardtable.games.anemone import CODE

    codes.update(CODE[c] for c in state.deck)
    return {0: codes}


def nerts_hidden(state: Any, _seat: int) -> dict[int, set[str]]:
    if state.is_over:
        return {}
    out: dict[int, set[str]] = {}
    for p, layout in enumerate(state.snapshot()["layouts"]):
        cards = layout["stock"] + layout["nerts"][:-1]
        out[p] = {card.split("/")[0] for card in cards}
    return out


def check_no_hidden_cards(player: Player, seat: int, hidden: dict[tuple[int, int, int], dict[int, set[str]]],
                          game: str) -> int:
    """Every message with a view is checked against what was hidden from ``seat`` at its version."""
    hand, checked = 0, 0
    for message in player.log:
        if message["type"] == "snapshot":
            hand = message["hand"]
        if message["type"] not in ("snapshot", "update") or message["view"] is None:
            continue
        secret = hidden[(hand, message["v"], seat)]
        if game == "anemone":
            assert not quoted(secret[0], json.dumps(message)), message
        else:
            for p, layout in enumerate(message["view"]["layouts"]):
                assert not quoted(secret.get(p, set()), json.dumps(layout)), (p, layout)
            for event in message.get("events", []):
                if isinstance(event.get("seat"), int):
                    assert not quoted(secret.get(event["seat"], set()), json.dumps(event)), event
        checked += 1
    return checked


def test_two_people_and_two_bots_play_enemy_anemone_to_the_end(client: TestClient) -> None:
    seats = [{"kind": "open"}, {"kind": "bot", "bot": "heuristic"}, {"kind": "open"}, {"kind": "bot", "bot": "random"}]
    made = create(client, "anemone", {"players": 4, "rounds": 1}, seats, name="ana")
    tid = made["table"]["id"]
    token_b = join(client, tid, "bo")
    a = Player(client, tid, made["token"], first_legal, finished)
    b = Player(client, tid, token_b, first_legal, finished)
    watcher = Player(client, tid, None, first_legal, finished)
    for p in (a, b, watcher):
        p.start()
    connected(a, b, watcher)
    assert client.post(f"/api/tables/{tid}/start", json={"token": made["token"]}).status_code == 200
    for p in (a, b, watcher):
        p.join(120)
        assert not p.is_alive() and p.error is None, repr(p.error)
    assert a.acks > 3 and b.acks > 3
    over = [m for m in a.log if m["type"] == "hand_over"]
    assert len(over) == 1 and over[0]["winners"]
    record = client.get(f"/api/tables/{tid}/record").json()
    acted = {entry["seat"] for entry in record["hands"][0]["actions"]}
    assert acted == {0, 1, 2, 3}
    updates = [m for m in a.log if m["type"] == "update"]
    assert [m["v"] for m in updates] == list(range(1, len(record["hands"][0]["actions"]) + 1))
    assert all(m["legal"] == [] for m in watcher.log if m["type"] in ("update", "snapshot"))
    assert all("hand" not in m["view"] for m in watcher.log if m["type"] == "update")
    hidden = hidden_by_version(load_row(client, tid), anemone_hidden, 4)
    assert check_no_hidden_cards(a, 0, hidden, "anemone") > 10
    assert check_no_hidden_cards(b, 2, hidden, "anemone") > 10


def test_two_seat_anemone_draws_stay_hidden(client: TestClient) -> None:
    made = create(client, "anemone", {"players": 2, "rounds": 2}, [{"kind": "open"}, {"kind": "open"}])
    tid = made["table"]["id"]
    token_b = join(client, tid, "bo")
    a = Player(client, tid, made["token"], first_legal, finished)
    b = Player(client, tid, token_b, first_legal, finished)
    a.start()
    b.start()
    connected(a, b)
    assert client.post(f"/api/tables/{tid}/start", json={"token": token_b}).status_code == 200
    for p in (a, b):
        p.join(120)
        assert not p.is_alive() and p.error is None, repr(p.error)
    assert len([m for m in a.log if m["type"] == "hand_over"]) == 2
    hidden = hidden_by_version(load_row(client, tid), anemone_hidden, 2)
    assert check_no_hidden_cards(a, 0, hidden, "anemone") > 10
    assert check_no_hidden_cards(b, 1, hidden, "anemone") > 10
    assert any(e["type"] == "drew" and "cards" not in e for m in a.log if m["type"] == "update" for e in m["events"])


def test_one_person_and_three_bots_play_a_nerts_hand(client: TestClient) -> None:
    seats = [{"kind": "open"}] + [{"kind": "bot", "bot": "greedy:hard"}] * 3
    made = create(client, "nerts", {"players": 4, "nerts_pile_size": 5}, seats, autostart=False)
    tid = made["table"]["id"]
    person = Player(client, tid, made["token"], nerts_policy, hand_over, pace=0.04)
    person.start()
    connected(person)
    assert client.post(f"/api/tables/{tid}/start", json={"token": made["token"]}).status_code == 200
    person.join(120)
    assert not person.is_alive() and person.error is None, repr(person.error)
    assert person.acks >= 1
    end = next(m for m in person.log if m["type"] == "hand_over")
    assert end["ended"] in ("nerts", "stuck", "stalled") and len(end["scores"]) == 4
    row = load_row(client, tid)
    actions = row.hands[0].actions
    assert {seat for seat, _, _ in actions} >= {0, 1, 2, 3}
    assert [ms for _, ms, _ in actions] == sorted(ms for _, ms, _ in actions)
    hidden = hidden_by_version(row, nerts_hidden, 4)
    assert check_no_hidden_cards(person, 0, hidden, "nerts") > 10


def test_reconnect_gets_the_snapshot_it_lost(client: TestClient) -> None:
    made = create(client, "anemone", {"players": 2, "rounds": 1}, [{"kind": "open"}, {"kind": "bot", "bot": "random"}],
                  autostart=False)
    tid, token = made["table"]["id"], made["token"]
    with client.websocket_connect(f"/ws/tables/{tid}") as ws:
        ws.send_json({"type": "hello", "token": token})
        assert ws.receive_json()["type"] == "welcome"
        ws.receive_json()
        client.post(f"/api/tables/{tid}/start", json={"token": token})
        seq = 0
        while seq < 3:
            message = ws.receive_json()
            if message["type"] in ("update", "snapshot") and message["legal"]:
                seq += 1
                ws.send_json({"type": "action", "seq": seq, "action": message["legal"][-1]})
        while True:  # wait until it is this seat's turn again: nothing moves until it acts
            message = ws.receive_json()
            if message["type"] in ("update", "snapshot") and message["legal"]:
                break
        ws.send_json({"type": "resync"})
        lost = ws.receive_json()
        assert lost["type"] == "snapshot" and lost["v"] == message["v"] and lost["legal"] == message["legal"]
    with client.websocket_connect(f"/ws/tables/{tid}") as ws:
        ws.send_json({"type": "hello", "token": token})
        welcome = ws.receive_json()
        assert welcome["type"] == "welcome" and welcome["seat"] == 0
        again = ws.receive_json()
        assert again == lost


def test_away_person_is_played_by_a_bot_until_they_return(client: TestClient) -> None:
    made = create(client, "anemone", {"players": 2, "rounds": 1}, [{"kind": "open"}, {"kind": "open"}],
                  grace_seconds=0.2)
    tid = made["table"]["id"]
    token_b = join(client, tid, "bo")
    with client.websocket_connect(f"/ws/tables/{tid}") as ws:
        ws.send_json({"type": "hello", "token": token_b})
        ws.receive_json()
        ws.receive_json()
        client.post(f"/api/tables/{tid}/start", json={"token": token_b})
        seen_standin = False
        acted_by_zero = 0
        while acted_by_zero < 2 or not seen_standin:  # the `table` message may come later (coalesced)
            message = ws.receive_json()
            if message["type"] == "table" and message["table"]["seats"][0].get("standin") == "heuristic":
                seen_standin = True
            if message["type"] == "update":
                acted_by_zero += any(e.get("seat") == 0 for e in message["events"])
                if message["legal"]:
                    ws.send_json({"type": "action", "seq": 1, "action": message["legal"][0]})
            if message["type"] == "snapshot" and message["legal"]:
                ws.send_json({"type": "action", "seq": 1, "action": message["legal"][0]})
        assert seen_standin
        with client.websocket_connect(f"/ws/tables/{tid}") as back:
            back.send_json({"type": "hello", "token": made["token"]})
            assert back.receive_json()["table"]["seats"][0]["standin"] is None
    assert client.get(f"/api/tables/{tid}").json()["seats"][0]["connected"] is False


def test_refusals_keep_the_connection_and_the_table(client: TestClient) -> None:
    made = create(client, "anemone", {"players": 2, "rounds": 1}, [{"kind": "open"}, {"kind": "open"}])
    tid = made["table"]["id"]
    token_b = join(client, tid, "bo")
    client.post(f"/api/tables/{tid}/start", json={"token": token_b})
    table = client.app.state.manager.tables[tid]  # type: ignore[attr-defined]
    before = (table.version, json.dumps(table.state.view(None)))
    turn = table.state.to_act()[0]
    idle_token = token_b if turn == 0 else made["token"]
    mover_hand = table.state.view(turn)["hand"]

    def ask(ws: Any, message: Any) -> Message:
        if isinstance(message, (bytes, str)):
            ws.send_bytes(message) if isinstance(message, bytes) else ws.send_text(message)
        else:
            ws.send_json(message)
        reply: Message = ws.receive_json()
        while reply["type"] == "table":  # `table` messages are coalesced: one may come at any time
            reply = ws.receive_json()
        return reply

    with client.websocket_connect(f"/ws/tables/{tid}") as ws:
        assert ask(ws, {"type": "action", "seq": 1, "action": {"type": "play", "card": mover_hand[0]}})["type"] == "error"
        bad = ask(ws, {"type": "hello", "token": "not-a-token"})
        assert bad["type"] == "error" and "token" in bad["reason"] and bad["code"] == "hello.bad_token"
        assert ask(ws, {"type": "ping", "t": 5.0})["type"] == "pong"
        assert ask(ws, {"type": "hello", "token": idle_token})["type"] == "welcome"
        assert ws.receive_json()["type"] == "snapshot"
        out_of_turn = ask(ws, {"type": "action", "seq": 2, "action": {"type": "play", "card": mover_hand[0]}})
        assert out_of_turn == {"type": "reject", "seq": 2, "reason": out_of_turn["reason"], "code": "anemone.not_your_turn",
                               "params": {"seat": 1 - turn, "to_act": turn}} and out_of_turn["reason"]
        other_seat = ask(ws, {"type": "action", "seq": 3, "seat": turn, "action": {"type": "play", "card": mover_hand[0]}})
        assert other_seat["type"] == "error" and "seat" in other_seat["reason"] and other_seat["code"] == "message.malformed"
        big = ask(ws, "x" * 5000)
        assert big["type"] == "error" and "too large" in big["reason"] and big["code"] == "message.too_large"
        assert big["params"] == {"size": 5000, "limit": 4096}
        assert ask(ws, b"\xff\xfe")["type"] == "error"
        assert ask(ws, "[1, 2]")["type"] == "error"
        assert ask(ws, {"type": "action", "seq": "x", "action": {}})["type"] == "error"
        assert ask(ws, {"type": "hello", "token": idle_token})["type"] == "error"

        junk = st.one_of(
            st.text(max_size=60),
            st.binary(max_size=60),
            st.dictionaries(st.sampled_from(["type", "seq", "action", "token", "t", "x"]),
                            st.one_of(st.none(), st.integers(), st.text(max_size=8),
                                      st.sampled_from(["action", "hello", "ping", "resyncx"])), max_size=4),
            st.fixed_dictionaries({
                "type": st.just("action"), "seq": st.integers(0, 99),
                "action": st.dictionaries(st.sampled_from(["type", "card", "anemones", "from", "to", "count"]),
                                          st.one_of(st.sampled_from(["play", "discard", *mover_hand]),
                                                    st.integers(-2, 12), st.lists(st.integers(0, 9), max_size=3)),
                                          max_size=4),
            }),
        )

        @settings(max_examples=40, deadline=None)
        @given(message=junk)
        def junk_is_refused(message: Any) -> None:
            time.sleep(0.04)  # stay under the rate limit
            reply = ask(ws, message)
            assert reply["type"] in ("error", "reject", "pong"), reply
            if reply["type"] != "pong":
                assert reply["code"] in CODES and set(reply["params"]) == set(PARAMS[reply["code"]]), reply

        junk_is_refused()
        time.sleep(0.1)  # not a wait: time for the rate limit to let one more message through
        assert ask(ws, {"type": "ping", "t": 1.0})["type"] == "pong"
    assert (table.version, json.dumps(table.state.view(None))) == before


def test_flooding_is_refused_but_the_connection_lives(client: TestClient) -> None:
    made = create(client, "anemone", {"players": 2, "rounds": 1}, [{"kind": "open"}, {"kind": "open"}])
    tid = made["table"]["id"]
    with client.websocket_connect(f"/ws/tables/{tid}") as ws:
        for i in range(100):
            ws.send_json({"type": "ping", "t": float(i)})
        replies = [ws.receive_json() for _ in range(100)]
        errors = [r for r in replies if r["type"] == "error"]
        assert 20 <= len(errors) <= 45 and "too many" in errors[0]["reason"]
        time.sleep(1.0)  # not a wait: the time the rate limit takes to refill, part of the behaviour under test
        ws.send_json({"type": "ping", "t": 1.0})
        assert ws.receive_json()["type"] == "pong"


def test_unknown_table_socket_says_so(client: TestClient) -> None:
    with client.websocket_connect("/ws/tables/nope") as ws:
        message = ws.receive_json()
        assert message["type"] == "error" and "nope" in message["reason"]


def test_a_searching_bot_plays_from_the_process_pool(client: TestClient) -> None:
    made = create(client, "anemone", {"players": 2, "rounds": 1},
                  [{"kind": "open"}, {"kind": "bot", "bot": "ismcts:easy"}], autostart=False)
    tid = made["table"]["id"]
    person = Player(client, tid, made["token"], first_legal, finished)
    person.start()
    connected(person)
    assert client.post(f"/api/tables/{tid}/start", json={"token": made["token"]}).status_code == 200
    person.join(120)
    assert not person.is_alive() and person.error is None, repr(person.error)
    record = client.get(f"/api/tables/{tid}/record").json()
    assert record["seats"][1]["bot"] == "ismcts:easy"
    assert sum(1 for a in record["hands"][0]["actions"] if a["seat"] == 1) >= 5


def test_nerts_rejects_carry_a_code_and_piles_as_a_player_counts_them(client: TestClient) -> None:
    made = create(client, "nerts", {"players": 2}, [{"kind": "open"}, {"kind": "open"}])
    tid = made["table"]["id"]
    token_b = join(client, tid, "bo")
    assert client.post(f"/api/tables/{tid}/start", json={"token": token_b}).status_code == 200
    with client.websocket_connect(f"/ws/tables/{tid}") as ws:
        ws.send_json({"type": "hello", "token": made["token"]})
        assert ws.receive_json()["type"] == "welcome"
        snapshot = ws.receive_json()
        assert snapshot["type"] == "snapshot"
        work = snapshot["view"]["layouts"][0]["work"]
        ws.send_json({"type": "action", "seq": 1, "action": {"type": "move", "from": "work:9", "to": "work:0"}})
        reject = ws.receive_json()
        assert reject["type"] == "reject" and reject["seq"] == 1 and "work:9" in reject["reason"]
        assert reject["code"] == "nerts.no_work_pile"
        assert reject["params"] == {"pile": {"kind": "work", "number": 10}, "count": 4}
        ws.send_json({"type": "action", "seq": 2, "action": {"type": "move", "from": "work:0", "to": "foundation:3"}})
        reject = ws.receive_json()
        assert reject["code"] == "nerts.no_foundation" and reject["params"] == {} and "foundation:3" in reject["reason"]
        # a move between two work piles that does not fit names both cards
        fits = [(a["from"], a["to"]) for a in snapshot["legal"] if a["type"] == "move"]
        bad = next((i, j) for i in range(4) for j in range(4) if i != j and (f"work:{i}", f"work:{j}") not in fits)
        ws.send_json({"type": "action", "seq": 3, "action": {"type": "move", "from": f"work:{bad[0]}",
                                                            "to": f"work:{bad[1]}"}})
        reject = ws.receive_json()
        assert reject["code"] == "nerts.work_pile_order"
        assert reject["params"] == {"card": work[bad[0]][-1], "onto_card": work[bad[1]][-1],
                                    "pile": {"kind": "work", "number": bad[1] + 1}}
