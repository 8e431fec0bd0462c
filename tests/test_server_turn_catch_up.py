"""Coming back to a turn-based Enemy Anemone table (issue 29): the tricks of a record as every seat saw them
(``server/storage/tricks.py``), the ``catch_up`` message a seat gets after its welcome snapshot
(``server/table/catch_up.py``): the tricks others completed since its last move and not its own earlier ones, the
hands that ended since with their scores, the totals, and never a card still in a hand; and ``GET /api/me/seats``'s
``turn``, ``bank_ms``, ``deadline`` and ``last_trick`` (``server/players/seat_turns.py``)."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

import pytest
from starlette.testclient import TestClient

from cardtable import records
from cardtable.games.anemone import CODE, AnemoneMatch, AnemoneOptions
from cardtable.replay import fold
from cardtable.server.storage.rows import SeatRow, TableRow
from cardtable.server.storage.store import Store
from cardtable.server.storage.tricks import fold_tricks
from cardtable.server.table.catch_up import catch_up, catch_up_message
from clients import ORIGIN, MakeClient, fast_settings, sign_up
from polling import wait_for

pytestmark = pytest.mark.usefixtures("cheap_hashes")  # conftest.py: real Argon2id, small parameters


def at_of(n: int) -> str:
    """The ``at`` of the ``n``-th move of a made-up match: one a minute from 10:00 on 27 November 2026."""
    return f"2026-11-27T{10 + n // 60:02d}:{n % 60:02d}:00Z"


@dataclass
class Played:
    """A whole match played by the engine with random legal moves that never add anemones: its deals and its
    actions per hand, as ``(seat, action, at)``."""

    players: int
    rounds: int
    deals: list[dict[str, Any]]
    actions: list[list[tuple[int, dict[str, Any], str]]]

    def record(self, upto: tuple[int, int]) -> records.Record:
        """The record up to (not including) action ``upto = (hand, index)``."""
        record = records.new_record(
            "anemone",
            [records.Seat(name=f"p{s}") for s in range(self.players)],
            {"players": self.players, "rounds": self.rounds},
        )
        for hand in range(upto[0] + 1):
            taken = self.actions[hand] if hand < upto[0] else self.actions[hand][: upto[1]]
            record.hands.append(
                records.HandRecord(
                    deal=self.deals[hand],
                    actions=[
                        records.ActionRecord(seat=seat, ms=0, action=action, at=at)
                        for seat, action, at in taken
                    ],
                )
            )
        return record


def play_match(players: int, rounds: int, seed: int) -> Played:
    rng = random.Random(seed)
    match = AnemoneMatch(AnemoneOptions(players=players, rounds=rounds))
    played = Played(players, rounds, [], [])
    moves = 0
    while not match.is_over:
        deal = match.deal_cards(rng.randrange(1 << 30))
        state = match.start_hand(deal)
        played.deals.append(deal)
        played.actions.append([])
        while not state.is_over:
            seat = state.to_act()[0]
            action = rng.choice([a for a in state.legal_actions(seat) if not a.get("anemones")])
            state.apply(seat, action, 0)
            played.actions[-1].append((seat, action, at_of(moves)))
            moves += 1
        match.finish_hand()
    return played


def coming_back_after_a_hand_end(played: Played) -> tuple[int, tuple[int, int]]:
    """A seat other than the one that ended hand 0, and the point in hand 1 where it is first to move again: its
    last move was in hand 0's last trick, which others completed, ending the hand."""
    seat = (played.actions[0][-1][0] + 1) % played.players
    return seat, (1, next(i for i, (s, _a, _at) in enumerate(played.actions[1]) if s == seat))


def cards_in_hands(record: records.Record) -> set[str]:
    """Every card still in a hand (or the 2-seat deck) at the end of ``record``."""
    last: dict[str, Any] = {}

    def step(_hand: int, _index: int | None, state: Any) -> None:
        last["state"] = state

    fold(record, step)
    state = last["state"]
    return {card for s in range(state.players) for card in state.view(s)["hand"]} | {
        CODE[n] for n in state.deck
    }


CARD = re.compile(r"^(10|[1-9])[A-F]$")


def card_strings(value: Any) -> list[str]:
    """Every string shaped like a card code anywhere in ``value`` (decoded JSON)."""
    if isinstance(value, dict):
        return [card for item in value.values() for card in card_strings(item)]
    if isinstance(value, list):
        return [card for item in value for card in card_strings(item)]
    return [value] if isinstance(value, str) and CARD.match(value) else []


def assert_no_hidden_card(message: dict[str, Any], record: records.Record) -> None:
    """The view-leak check: the only cards in ``message`` are its tricks' cards, each played or discarded face up
    in that hand of ``record``, and none of the current hand's is still in a hand (or the 2-seat deck)."""
    shown = [(t["hand"], p["card"]) for t in message["tricks"] for p in t["plays"] + t["discards"]]
    assert sorted(card_strings(message)) == sorted(card for _hand, card in shown)
    face_up = {
        (number, entry.action["card"]) for number, hand in enumerate(record.hands) for entry in hand.actions
    }
    assert set(shown) <= face_up
    current = len(record.hands) - 1
    hidden = cards_in_hands(record)
    assert hidden and not [card for hand, card in shown if hand == current and card in hidden]


def value_order(plays: list[tuple[int, str]]) -> tuple[int, int]:
    """``(winner, lowest)`` of a trick played without anemones: the highest and lowest rank, ties to the later."""
    ranks = [int(card[:-1]) for _seat, card in plays]
    high = max(range(len(plays)), key=lambda i: (ranks[i], i))
    low = min(range(len(plays)), key=lambda i: (ranks[i], -i))
    return plays[high][0], plays[low][0]


# -- the tricks of a record ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("players", [2, 4, 6])
def test_each_trick_lists_its_cards_in_play_order_its_winner_and_the_lowest_card_s_taker(
    players: int,
) -> None:
    played = play_match(players, 2, seed=players)
    log = fold_tricks(played.record((1, len(played.actions[1]))))
    # a hand's tricks: 32 cards in fours (2 seats), 48 in sixes, else 10 each
    assert len(log.tricks) == 2 * (8 if players in (2, 6) else 10)
    turns = 4 if players == 2 else players
    for hand in range(2):
        tricks = [t for t in log.tricks if t.hand == hand]
        for number, trick in enumerate(tricks):
            block = played.actions[hand][number * turns : (number + 1) * turns]
            assert [(p.seat, p.card, p.at) for p in trick.plays] == [
                (s, a["card"], at) for s, a, at in block if a["type"] == "play"
            ]
            assert [(p.seat, p.card) for p in trick.discards] == [
                (s, a["card"]) for s, a, _at in block if a["type"] == "discard"
            ]
            assert trick.index == (number + 1) * turns - 1
            winner, lowest = value_order([(p.seat, p.card) for p in trick.plays])
            assert trick.winner == winner
            assert (trick.taker, trick.anemones) == (lowest, 1)
    folded = fold(played.record((1, len(played.actions[1]))))
    assert [end.scores for end in log.hands] == [h.scores for h in folded.hands]
    assert log.totals == folded.totals == [sum(h.scores[s] for h in folded.hands) for s in range(players)]
    assert log.last_moves[0].at == max(at for s, _a, at in played.actions[1] if s == 0)


def test_a_record_of_another_game_is_refused() -> None:
    record = records.new_record("nerts", [records.Seat(name="a"), records.Seat(name="b")], {"players": 2})
    with pytest.raises(records.RecordError, match="Enemy Anemone"):
        fold_tricks(record)


# -- the catch_up message ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("players", [2, 4])
def test_catch_up_shows_what_others_did_since_the_seat_s_last_move_and_no_card_in_a_hand(
    players: int,
) -> None:
    played = play_match(players, 3, seed=11 + players)
    viewer, cut = coming_back_after_a_hand_end(played)
    hand = 0
    record = played.record(cut)
    message = catch_up_message(fold_tricks(record), viewer)
    mine = [
        (number, entry.at)
        for number, h in enumerate(record.hands)
        for entry in h.actions
        if entry.seat == viewer
    ]
    assert message["since"] == mine[-1][1] and mine[-1][0] == hand
    # only the last trick of hand 0, which others completed after the viewer's card: its earlier tricks are not there
    turns = 4 if players == 2 else players
    block = played.actions[hand][-turns:]
    assert [t["hand"] for t in message["tricks"]] == [hand]
    assert [(p["seat"], p["card"], p["at"]) for p in message["tricks"][0]["plays"]] == [
        (s, a["card"], at) for s, a, at in block if a["type"] == "play"
    ]
    assert any(p["seat"] != viewer and p["at"] > message["since"] for p in message["tricks"][0]["plays"])
    winner, lowest = value_order([(p["seat"], p["card"]) for p in message["tricks"][0]["plays"]])
    assert (message["tricks"][0]["winner"], message["tricks"][0]["taker"]) == (winner, lowest)
    # the hand that ended since, and the totals of the hands that ended
    folded = fold(played.record((hand, len(played.actions[hand]))))
    assert message["hands"] == [{"hand": hand, "scores": folded.hands[hand].scores, "totals": folded.totals}]
    assert message["totals"] == folded.totals
    # a seat that moved after the hand's end (it leads the next one) has seen it all: nothing for it
    moved_since = {s for s, _a, _at in played.actions[cut[0]][: cut[1]]}
    for seat in moved_since:
        assert catch_up_message(fold_tricks(record), seat)["tricks"] == []
        assert catch_up_message(fold_tricks(record), seat)["hands"] == []
    assert_no_hidden_card(message, record)


def test_a_seat_s_own_earlier_tricks_are_not_shown_again() -> None:
    played = play_match(3, 2, seed=5)
    record = played.record((0, 6))  # two whole tricks
    log = fold_tricks(record)
    assert [t.index for t in log.tricks] == [2, 5]
    first_in_second, last_in_second = played.actions[0][3][0], played.actions[0][5][0]
    # the seat that led the second trick saw the first complete: only the second is new to it
    assert [t["plays"] for t in catch_up_message(log, first_in_second)["tricks"]] == [
        [p.to_dict() for p in log.tricks[1].plays]
    ]
    # the seat whose card completed the second trick has seen both
    assert catch_up_message(log, last_in_second)["tricks"] == []
    assert catch_up_message(log, last_in_second)["since"] == at_of(5)
    fresh = played.record((0, 0))
    assert catch_up_message(fold_tricks(fresh), 0) == {
        "type": "catch_up",
        "since": None,
        "tricks": [],
        "hands": [],
        "totals": [0, 0, 0],
    }
    with pytest.raises(ValueError, match="no seat 3"):
        catch_up_message(fold_tricks(fresh), 3)


async def store_match(store: Store, table_id: str, played: Played, cut: tuple[int, int]) -> None:
    """Store ``played`` up to ``cut`` as a turn-based table in play, its times with its actions."""
    await store.insert_table(
        TableRow(
            id=table_id,
            game="anemone",
            options={"players": played.players, "rounds": played.rounds},
            status="playing",
            seed=7,
            grace_seconds=30.0,
            created="2026-11-27T09:00:00Z",
            pace="turn-based",
            turn_clock={"start_s": 86400, "per_move_s": 3600},
            seats=[SeatRow(s, "person", name=f"p{s}") for s in range(played.players)],
        )
    )
    record = played.record(cut)
    for number, hand in enumerate(record.hands):
        await store.insert_hand(table_id, number, hand.deal)
        for index, entry in enumerate(hand.actions):
            await store.insert_actions(
                table_id, number, [(index, entry.seat, entry.ms, entry.action)], at=entry.at
            )


async def test_catch_up_reads_the_stored_record(store: Store) -> None:
    played = play_match(4, 2, seed=3)
    viewer, cut = coming_back_after_a_hand_end(played)
    await store_match(store, "tb1", played, cut)
    stored = await catch_up(store, "tb1", viewer)
    assert stored == catch_up_message(fold_tricks(played.record(cut)), viewer)
    assert stored is not None and stored["since"] is not None and [t["hand"] for t in stored["tricks"]] == [0]
    assert await catch_up(store, "nowhere", 0) is None


# -- through the server ---------------------------------------------------------------------------------------------


def hello(client: TestClient, table_id: str, token: str) -> list[dict[str, Any]]:
    """The messages a seated hello gets before anything else happens: welcome, snapshot and what follows at once,
    read until the snapshot and one more message (a turn-based table in play sends ``catch_up`` next)."""
    with client.websocket_connect(f"/ws/tables/{table_id}") as ws:
        ws.send_json({"type": "hello", "token": token})
        got = [ws.receive_json()]
        while got[-1]["type"] != "snapshot":
            got.append(ws.receive_json())
        got.append(ws.receive_json())
    return got


def test_coming_back_to_a_turn_based_table(make_client: MakeClient) -> None:
    client = make_client(fast_settings(turn_clock_min_s=1))
    sign_up(client, "ana")
    made = client.post(
        "/api/tables",
        headers=ORIGIN,
        json={
            "game": "anemone",
            "options": {"players": 4, "rounds": 2},
            "pace": "turn-based",
            "seed": 4,
            "turn_clock": {"start_s": 7200, "per_move_s": 3600},
            "seats": [{"kind": "open"}] + [{"kind": "bot", "bot": "heuristic"}] * 3,
        },
    )
    assert made.status_code in (200, 201), made.text
    table_id, token = made.json()["table"]["id"], made.json()["token"]
    seen_tricks: list[list[str]] = []
    last_card = None
    # play through one websocket until seat 0's card goes into a trick that the bots complete after it
    with client.websocket_connect(f"/ws/tables/{table_id}") as ws:
        ws.send_json({"type": "hello", "token": token})
        seq = 0
        while True:
            message = ws.receive_json()
            for event in message.get("events") or []:
                if event["type"] == "trick_won":
                    seen_tricks.append(event["cards"])
            if message["type"] in ("update", "snapshot") and message.get("legal"):
                view = message.get("view") or {}
                if len(seen_tricks) >= 3 and (view.get("trick") or []) and len(view["trick"]) < 3:
                    break  # seat 0 moves now, and at least one bot after it
                seq += 1
                ws.send_json({"type": "action", "seq": seq, "action": message["legal"][0]})
        seq += 1
        last_card = message["legal"][0]
        ws.send_json({"type": "action", "seq": seq, "action": last_card})
        while ws.receive_json()["type"] != "ack":
            pass
    # the bots play on to seat 0's turn: GET /api/me/seats says so
    seats = wait_for(
        lambda: (s := client.get("/api/me/seats").json()) and s[0]["turn"] and s, what="seat 0's turn again"
    )
    got = hello(client, table_id, token)
    assert [m["type"] for m in got[:2]] == ["welcome", "snapshot"] and got[-1]["type"] == "catch_up"
    back, snapshot = got[-1], got[1]
    assert back["since"] is not None
    # the trick holding seat 0's last card is there, completed by the bots; the tricks it saw complete are not
    cards = [[p["card"] for p in t["plays"]] for t in back["tricks"]]
    assert cards and last_card["card"] in cards[0] + [d["card"] for d in back["tricks"][0]["discards"]]
    assert not [c for c in cards if c in seen_tricks]
    view_tricks = snapshot["view"]["tricks"]
    current = [t for t in back["tricks"] if t["hand"] == snapshot["hand"]]
    assert [[p["card"] for p in t["plays"]] for t in current] == [
        [p["card"] for p in t["plays"]] for t in view_tricks[len(view_tricks) - len(current) :]
    ]
    assert [(t["winner"], t["taker"]) for t in current] == [
        (t["winner"], t["lowest"]) for t in view_tricks[len(view_tricks) - len(current) :]
    ]
    assert back["totals"] == snapshot["totals"]
    # no card of seat 0's hand (the only one it may see) appears in it
    shown = [p["card"] for t in back["tricks"] for p in t["plays"] + t["discards"]]
    assert sorted(card_strings(back)) == sorted(shown)
    text = json.dumps(back)
    assert not [card for card in snapshot["view"]["hand"] if f'"{card}"' in text]
    # /api/me/seats: its turn, the time left, its deadline and the last trick
    entry = seats[0]
    assert entry["table"]["id"] == table_id and entry["deadline"] is not None
    assert 0 < entry["bank_ms"] <= 7200 * 1000
    assert entry["last_trick"] == [
        {"seat": p["seat"], "card": p["card"]} for p in back["tricks"][-1]["plays"]
    ]


def test_my_seats_put_the_tables_where_it_is_your_turn_first_even_once_let_go(
    make_client: MakeClient,
) -> None:
    client = make_client(fast_settings(turn_clock_min_s=1, turn_idle_s=0.1, expiry_check_s=0.05))
    sign_up(client, "ana")
    manager = client.app.state.manager  # type: ignore[attr-defined]

    def create(pace: str, seats: list[dict[str, Any]]) -> tuple[str, str]:
        body: dict[str, Any] = {"game": "anemone", "options": {"players": 4}, "seats": seats}
        if pace == "turn-based":
            body.update(pace=pace, turn_clock={"start_s": 7200, "per_move_s": 3600})
        made = client.post("/api/tables", headers=ORIGIN, json=body)
        assert made.status_code in (200, 201), made.text
        return made.json()["table"]["id"], made.json()["token"]

    bots = [{"kind": "bot", "bot": "heuristic"}] * 3
    waiting = [create("turn-based", [{"kind": "open"}, {"kind": "open"}, *bots[:2]])[0] for _ in range(3)]
    real_time = create("real-time", [{"kind": "open"}, {"kind": "open"}, *bots[:2]])[0]
    playing, token = create("turn-based", [{"kind": "open"}, *bots])
    # play until a trick is complete and it is seat 0's turn, then go: the table is let go from memory
    with client.websocket_connect(f"/ws/tables/{playing}") as ws:
        ws.send_json({"type": "hello", "token": token})
        seq, done = 0, 0
        while True:
            message = ws.receive_json()
            done += sum(1 for e in message.get("events") or [] if e["type"] == "trick_won")
            if message["type"] in ("update", "snapshot") and message.get("legal"):
                if done:
                    break
                seq += 1
                ws.send_json({"type": "action", "seq": seq, "action": message["legal"][0]})
    last_trick = [{"seat": p["seat"], "card": p["card"]} for p in message["view"]["tricks"][-1]["plays"]]
    wait_for(lambda: playing not in manager.tables, what="the quiet turn-based table let go")
    seats = client.get("/api/me/seats").json()
    assert [s["table"]["id"] for s in seats] == [playing, *sorted([*waiting, real_time])]
    mine = seats[0]
    assert mine["turn"] is True and mine["last_trick"] == last_trick and mine["deadline"] is not None
    assert 0 < mine["bank_ms"] <= 7200 * 1000
    by_id = {s["table"]["id"]: s for s in seats}
    for table_id in waiting:  # not started: nobody's turn, a whole bank, no trick yet
        assert {k: by_id[table_id][k] for k in ("turn", "bank_ms", "deadline", "last_trick")} == {
            "turn": False,
            "bank_ms": 7200 * 1000,
            "deadline": None,
            "last_trick": None,
        }
    assert {k: by_id[real_time][k] for k in ("turn", "bank_ms", "deadline", "last_trick")} == {
        "turn": False,
        "bank_ms": None,
        "deadline": None,
        "last_trick": None,
    }
