"""Rotated deals (the ``deals: "rotated"`` option of both games, ``docs/rules/*.md``, "Rotated deals"): each deal is
played once from every seat (team) in turn; ``Match.deal_cards`` deals the rotation, ``Match.check_deal`` refuses
anything else, and ``cardtable replay`` (``cardtable.replay``) checks it (exit 1, like any bad deal) and groups the
hands by deal."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from cardtable import records
from cardtable.cli import app
from cardtable.games.anemone import AnemoneMatch, AnemoneOptions
from cardtable.games.nerts import NertsMatch
from cardtable.replay import fold

runner = CliRunner()


def play_anemone(match: AnemoneMatch, deal: dict[str, Any], rng: random.Random) -> list[records.ActionRecord]:
    """Start a hand from ``deal`` and play random legal actions to its end; the actions, as a record has them."""
    state = match.start_hand(deal)
    actions = []
    while not state.is_over:
        seat = state.to_act()[0]
        action = rng.choice(state.legal_actions(seat))
        state.apply(seat, action, 0)
        actions.append(records.ActionRecord(seat=seat, ms=0, action=action))
    match.finish_hand()
    return actions


def end_nerts(match: NertsMatch, deal: dict[str, Any]) -> list[records.ActionRecord]:
    """Start a Nerts hand from ``deal`` and have the table end it at once (``end_hand``, stalled)."""
    action = {"type": "end_hand", "reason": "stalled"}
    match.start_hand(deal).apply(None, action, 0)
    match.finish_hand()
    return [records.ActionRecord(seat=None, ms=0, action=action)]


def sorted_hands(deal: dict[str, Any]) -> list[list[str]]:
    return [sorted(hand) for hand in deal["hands"]]


def test_anemone_rotated_hands_are_the_first_deal_moved_one_and_two_seats_on() -> None:
    match = AnemoneMatch(AnemoneOptions(players=3, rounds=4, deals="rotated"))
    rng = random.Random(3)
    deals = []
    for seed in (11, 12, 13, 14):
        deals.append(match.deal_cards(seed))
        play_anemone(match, deals[-1], rng)
    first = deals[0]["hands"]
    assert deals[1]["hands"] == [first[2], first[0], first[1]]  # seat s's cards go to seat s + 1
    assert deals[2]["hands"] == [first[1], first[2], first[0]]  # ... and to seat s + 2
    assert sorted_hands(deals[3]) != sorted_hands(deals[0])  # hand 3 starts a new cycle: a fresh deal
    assert [match.deal_cycle(h) for h in range(4)] == [0, 0, 0, 1]


def test_anemone_fresh_deals_are_not_rotated() -> None:
    match = AnemoneMatch(AnemoneOptions(players=3, rounds=2))
    first = match.deal_cards(11)
    play_anemone(match, first, random.Random(1))
    second = match.deal_cards(12)
    assert sorted_hands(second) != [sorted(first["hands"][s]) for s in (2, 0, 1)]
    assert match.deal_cycle(1) is None


def test_anemone_two_seat_rotation_keeps_the_deck() -> None:
    match = AnemoneMatch(AnemoneOptions(players=2, rounds=2, deals="rotated"))
    first = match.deal_cards(5)
    play_anemone(match, first, random.Random(2))
    second = match.deal_cards(99)
    assert second == {"hands": first["hands"][::-1], "deck": first["deck"]}
    with pytest.raises(ValueError, match=r"deal\.deck"):
        match.check_deal({"hands": second["hands"], "deck": second["deck"][::-1]})


def test_anemone_a_hand_that_is_not_the_rotation_is_refused() -> None:
    match = AnemoneMatch(AnemoneOptions(players=3, rounds=3, deals="rotated"))
    first = match.deal_cards(11)
    play_anemone(match, first, random.Random(4))
    with pytest.raises(
        ValueError, match=r"deal\.hands\[0\]: hand 2 of rotated deals must give seat 0 the cards seat 2"
    ):
        match.check_deal(first)  # the same deal, not moved on
    with pytest.raises(ValueError, match=r"deal\.hands\[0\]"):
        match.check_deal(match.deal_cards(11) | {"hands": match.deal_cards(11)["hands"][::-1]})
    match.check_deal({"hands": [list(reversed(first["hands"][2])), first["hands"][0], first["hands"][1]]})
    match.check_deal({"seed": 5})  # a seed stands for the rotation


def test_nerts_rotated_hands_are_the_first_packs_moved_one_and_two_seats_on() -> None:
    match = NertsMatch({"players": 3, "deals": "rotated"})
    deals = []
    for seed in (1, 2, 3, 4):
        deals.append(match.deal_cards(seed))
        end_nerts(match, deals[-1])
    first = deals[0]["packs"]
    assert deals[1]["packs"] == [first[2], first[0], first[1]]
    assert deals[2]["packs"] == [first[1], first[2], first[0]]
    assert deals[3]["packs"] not in ([first[0], first[1], first[2]], deals[1]["packs"], deals[2]["packs"])
    with pytest.raises(
        ValueError, match=r"deal\.packs\[0\]: hand 5 of rotated deals must repeat pack 2 of hand 4"
    ):
        match.check_deal(deals[3])


def test_nerts_partnerships_rotate_by_team() -> None:
    match = NertsMatch({"players": 4, "partnerships": True, "deals": "rotated"})
    first = match.deal_cards(8)
    end_nerts(match, first)
    assert match.deal_cards(9) == {"packs": first["packs"][::-1]}
    assert match.deal_cycle(2) == 1


def test_a_bad_deals_value_is_refused_by_both_games() -> None:
    assert NertsMatch({"deals": "rotated"}).options.to_dict()["deals"] == "rotated"
    assert AnemoneOptions.from_dict({}).to_dict()["deals"] == "fresh"
    with pytest.raises(ValueError, match="deals: must be 'fresh' or 'rotated', not 'shuffled'"):
        NertsMatch({"deals": "shuffled"})
    with pytest.raises(ValueError, match="option 'deals': must be 'fresh' or 'rotated', not True"):
        AnemoneOptions.from_dict({"deals": True})


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**40), players=st.integers(2, 6))
def test_anemone_over_a_cycle_every_seat_holds_every_hand_once(seed: int, players: int) -> None:
    match = AnemoneMatch(AnemoneOptions(players=players, rounds=players, deals="rotated"))
    rng = random.Random(seed)
    held: list[list[tuple[str, ...]]] = [[] for _ in range(players)]
    decks = set()
    for hand in range(players):
        deal = match.deal_cards(seed + hand)
        for s, cards in enumerate(deal["hands"]):
            held[s].append(tuple(sorted(cards)))
        decks.add(tuple(deal.get("deck", ())))
        match.start_hand(deal).playout(rng)
        match.finish_hand()
    hands = set(held[0])
    assert len(hands) == players and all(set(h) == hands and len(h) == players for h in held)
    assert len(decks) == 1


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**40), players=st.integers(1, 8), partnerships=st.booleans())
def test_nerts_over_a_cycle_every_seat_holds_every_pack_once(
    seed: int, players: int, partnerships: bool
) -> None:
    partnerships = partnerships and players >= 4 and players % 2 == 0
    match = NertsMatch({"players": players, "partnerships": partnerships, "deals": "rotated"})
    layouts = players // 2 if partnerships else players
    held: list[list[tuple[str, ...]]] = [[] for _ in range(players)]
    for hand in range(layouts):
        deal = match.deal_cards(seed + hand)
        for s in range(players):
            held[s].append(tuple(deal["packs"][s % layouts]))
        end_nerts(match, deal)
    packs = set(held[0])
    assert len(packs) == layouts and all(set(h) == packs and len(h) == layouts for h in held)


def rotated_anemone_record(seed: int, players: int = 3) -> tuple[records.Record, AnemoneMatch]:
    """A 3-seat, 4-round rotated Enemy Anemone match played by random legal actions, and the match as it ended."""
    match = AnemoneMatch(AnemoneOptions(players=players, rounds=4, deals="rotated"))
    record = records.new_record(
        "anemone", [records.Seat(name=f"p{s}") for s in range(players)], match.options.to_dict()
    )
    rng = random.Random(seed)
    for hand in range(4):
        deal = match.deal_cards(seed * 10 + hand)
        record.hands.append(records.HandRecord(deal=deal, actions=play_anemone(match, deal, rng)))
    return record, match


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**30))
def test_replaying_a_rotated_record_gives_the_same_match(seed: int) -> None:
    record, match = rotated_anemone_record(seed)
    result = fold(records.loads(records.dumps(record)))
    assert result.totals == match.totals and result.winner == match.winners()
    assert result.anemones == match.anemones
    replayed = result.match.hand
    assert replayed is not None and match.hand is not None and replayed.view(None) == match.hand.view(None)
    assert [h["deal"] for h in result.to_dict()["hands"]] == [0, 0, 0, 1]


def test_cardtable_replay_accepts_a_rotated_record_and_groups_its_hands(tmp_path: Path) -> None:
    record, match = rotated_anemone_record(7)
    path = tmp_path / "rotated.json"
    path.write_text(records.dumps(record))
    done = runner.invoke(app, ["replay", str(path), "--json"])
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert [hand["deal"] for hand in summary["hands"]] == [0, 0, 0, 1] and summary["totals"] == match.totals
    table = runner.invoke(app, ["replay", str(path)])
    assert table.exit_code == 0 and "deal" in table.stdout


def test_cardtable_replay_refuses_a_rotated_hand_that_is_not_the_rotation(tmp_path: Path) -> None:
    record, _ = rotated_anemone_record(7)
    hand = record.hands[2]
    hands = hand.deal["hands"]
    hand.deal = {"hands": [hands[1], hands[0], hands[2]]}  # the same cards, two seats swapped
    path = tmp_path / "wrong.json"
    path.write_text(records.dumps(record))
    done = runner.invoke(app, ["replay", str(path)])
    assert done.exit_code == 1  # a bad deal: the record cannot be read as a whole (docs/records.md)
    assert "hands[2].deal.hands[0]: hand 3 of rotated deals" in done.output


def test_a_nerts_record_with_seed_deals_replays_as_its_rotation() -> None:
    seats = [records.Seat(name=f"p{s}") for s in range(3)]
    options = {"players": 3, "deals": "rotated"}
    stalled = [records.ActionRecord(seat=None, ms=0, action={"type": "end_hand", "reason": "stalled"})]
    by_seed = records.new_record("nerts", seats, options)
    by_seed.hands = [records.HandRecord(deal={"seed": s}, actions=stalled) for s in (4, 5, 6)]
    match = NertsMatch(options)
    spelled = records.new_record("nerts", seats, options)
    for s in (4, 5, 6):
        deal = match.deal_cards(s)
        spelled.hands.append(records.HandRecord(deal=deal, actions=end_nerts(match, deal)))
    assert fold(by_seed).to_dict() == fold(spelled).to_dict()
    assert fold(spelled).to_dict()["hands"][2]["deal"] == 0
