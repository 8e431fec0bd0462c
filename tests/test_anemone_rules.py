"""cardtable.games.anemone: one group of tests per section of docs/rules/enemy-anemone.md."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from cardtable.engine import IllegalAction
from cardtable.games import get_game
from cardtable.games.anemone import (
    OPTION_SPECS,
    AnemoneMatch,
    AnemoneOptions,
    AnemoneState,
    card_number,
    take_anemone,
)


def state(
    hands: Sequence[Sequence[str]],
    leader: int = 0,
    anemones: Sequence[Sequence[int]] | None = None,
    deck: Sequence[str] = (),
) -> AnemoneState:
    return AnemoneState.new(
        [[card_number(c) for c in hand] for hand in hands], [card_number(c) for c in deck], leader, anemones
    )


def play(card: str, *faces: int) -> dict[str, Any]:
    return {"type": "play", "card": card, "anemones": list(faces)}


def discard(card: str) -> dict[str, Any]:
    return {"type": "discard", "card": card}


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


# ------------------------------------------------------------------------------------------- Options


def test_options_defaults_and_round_trip() -> None:
    options = AnemoneOptions.from_dict({})
    assert options.to_dict() == {"players": 4, "rounds": 4, "random_first_leader": False, "deals": "fresh"}
    assert AnemoneOptions.from_dict(options.to_dict()) == options
    assert [s.name for s in OPTION_SPECS] == ["players", "rounds", "random_first_leader", "deals"]


@pytest.mark.parametrize(
    ("data", "name"),
    [
        ({"players": 1}, "players"),
        ({"players": 7}, "players"),
        ({"players": "4"}, "players"),
        ({"players": True}, "players"),
        ({"rounds": 0}, "rounds"),
        ({"rounds": 11}, "rounds"),
        ({"random_first_leader": 1}, "random_first_leader"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_options_name_the_option(data: dict[str, Any], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        AnemoneOptions.from_dict(data)


def test_registered_game() -> None:
    info = get_game("anemone")
    assert info.title == "Enemy Anemone"
    match = info.new_match({"players": 5})
    assert match.players == 5 and match.game == "anemone"
    with pytest.raises(ValueError, match="rounds"):
        info.new_match({"rounds": 20})


# ------------------------------------------------------------------------------------------- Set-up


@pytest.mark.parametrize(
    ("players", "size", "suits", "ranks", "deck"),
    [
        (2, 8, "ABCD", range(2, 10), 16),
        (3, 10, "ABC", range(1, 11), 0),
        (4, 10, "ABCD", range(1, 11), 0),
        (5, 10, "ABCDE", range(1, 11), 0),
        (6, 8, "ABCDEF", range(2, 10), 0),
    ],
)
def test_set_up_table(players: int, size: int, suits: str, ranks: range, deck: int) -> None:
    match = AnemoneMatch(AnemoneOptions(players=players))
    deal = match.deal_cards(11)
    assert [len(hand) for hand in deal["hands"]] == [size] * players
    assert len(deal.get("deck", [])) == deck
    assert ("deck" in deal) == (players == 2)
    cards = [c for hand in deal["hands"] for c in hand] + deal.get("deck", [])
    assert sorted(cards) == sorted(f"{r}{s}" for s in suits for r in ranks)
    match.check_deal(deal)


def test_seed_deal_is_stable() -> None:
    deal = AnemoneMatch(AnemoneOptions(players=4)).deal_cards(1)
    assert deal["hands"][0] == ["4C", "3A", "2B", "2A", "8D", "3D", "6A", "10A", "8B", "10C"]
    two = AnemoneMatch(AnemoneOptions(players=2, random_first_leader=True)).deal_cards(5)
    assert two["deck"][:3] == ["7D", "5A", "7A"] and two["leader"] == 0


def test_seed_deal_starts_the_same_hand_as_its_cards() -> None:
    a = AnemoneMatch(AnemoneOptions(players=3))
    b = AnemoneMatch(AnemoneOptions(players=3))
    assert a.start_hand({"seed": 9}).view(None) == b.start_hand(a.deal_cards(9)).view(None)


def three_seat_deal() -> dict[str, Any]:
    return {"hands": [[f"{r}{s}" for r in range(1, 11)] for s in "ABC"]}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["hands"][0].__setitem__(0, "2B"), "appears twice"),
        (lambda d: d["hands"][0].__setitem__(0, "1D"), "not used with 3 seats"),
        (lambda d: d["hands"][0].__setitem__(0, "11A"), r"deal.hands\[0\]\[0\]"),
        (lambda d: d["hands"][0].pop(), r"deal.hands\[0\]: 9 cards"),
        (lambda d: d["hands"].pop(), "2 hands for 3 seats"),
        (lambda d: d.__setitem__("deck", []), "deal.deck"),
        (lambda d: d.__setitem__("leader", 1), "deal.leader"),
        (lambda d: d.__setitem__("shuffle", 1), "deal.shuffle"),
    ],
)
def test_bad_deals_name_the_field(change: Any, message: str) -> None:
    deal = three_seat_deal()
    change(deal)
    match = AnemoneMatch(AnemoneOptions(players=3))
    with pytest.raises(ValueError, match=message):
        match.check_deal(deal)
    with pytest.raises(ValueError, match=message):
        match.start_hand(deal)


def test_two_seat_deal_needs_its_deck() -> None:
    match = AnemoneMatch(AnemoneOptions(players=2))
    deal = match.deal_cards(3)
    del deal["deck"]
    with pytest.raises(ValueError, match=r"deal\.deck"):
        match.check_deal(deal)


def test_first_leader_is_seat_0_unless_random() -> None:
    match = AnemoneMatch(AnemoneOptions(players=3))
    assert match.start_hand(three_seat_deal()).to_act() == [0]
    random_match = AnemoneMatch(AnemoneOptions(players=3, random_first_leader=True))
    with pytest.raises(ValueError, match=r"deal\.leader: required"):
        random_match.check_deal(three_seat_deal())
    deal = {**three_seat_deal(), "leader": 2}
    hand = random_match.start_hand(deal)
    assert hand.to_act() == [2] and hand.view(None)["leader"] == 2
    hand.playout(random.Random(1))
    random_match.finish_hand()
    with pytest.raises(ValueError, match="only in hand 1"):
        random_match.check_deal(deal)
    with pytest.raises(ValueError, match=r"deal\.leader"):
        AnemoneMatch(AnemoneOptions(players=3, random_first_leader=True)).check_deal({**deal, "leader": 3})


# ------------------------------------------------------------------------------------------- A trick


def test_leader_plays_any_card_then_unplayed_suits() -> None:
    s = state([["5A", "2B"], ["7A", "3B"], ["9A", "4C"]])
    assert {a["card"] for a in s.legal_actions(0)} == {"5A", "2B"}
    s.apply(0, play("5A"))
    assert s.legal_actions(1) == [play("3B")]
    with pytest.raises(IllegalAction, match="suit A is already in the trick"):
        s.apply(1, play("7A"))
    s.apply(1, play("3B"))
    assert s.legal_actions(2) == [play("4C")]


def test_forced_discard_goes_to_own_score_pile_not_the_trick() -> None:
    s = state([["5A", "2B"], ["7A", "3C"], ["9A", "4C"]])
    s.apply(0, play("5A"))
    s.apply(1, play("3C"))
    view = s.view(2)
    assert view["must_discard"] is True and view["playable"] == []
    assert sorted(a["card"] for a in s.legal_actions(2)) == ["4C", "9A"]
    assert all(a["type"] == "discard" for a in s.legal_actions(2))
    with pytest.raises(IllegalAction, match="must discard"):
        s.apply(2, play("9A"))
    events = s.apply(2, discard("9A"))
    assert types(events)[:2] == ["discarded", "trick_won"]
    # 9A is in seat 2's pile; the trick (5A, 3C) went to seat 0; 3C was lowest
    assert s.score_piles[2] == [card_number("9A")]
    assert sorted(s.score_piles[0]) == sorted([card_number("5A"), card_number("3C")])
    assert s.points == [4, 0, 1]  # 5A and 3C are worth 2 each
    assert s.anemones[1] == [1]


def test_cannot_discard_while_holding_an_unplayed_suit() -> None:
    s = state([["5A", "2B"], ["7A", "3B"], ["9A", "4C"]])
    s.apply(0, play("5A"))
    with pytest.raises(IllegalAction, match="cannot discard"):
        s.apply(1, discard("7A"))


def test_discard_takes_no_anemones_but_an_empty_list_is_fine() -> None:
    s = state([["5A", "2B"], ["7A", "3A"], ["9A", "4C"]], anemones=[[], [1], []])
    s.apply(0, play("5A"))
    with pytest.raises(IllegalAction, match="takes no anemones"):
        s.apply(1, {"type": "discard", "card": "7A", "anemones": [1]})
    s.apply(1, {"type": "discard", "card": "7A", "anemones": []})


def test_highest_wins_and_tie_goes_to_the_later_card() -> None:
    s = state([["7A", "1A"], ["7B", "1B"], ["2C", "1C"]])
    s.apply(0, play("7A"))
    s.apply(1, play("7B"))
    events = s.apply(2, play("2C"))
    won = next(e for e in events if e["type"] == "trick_won")
    assert won["winner"] == 1 and won["lowest"] == 2
    assert s.to_act() == [1] and s.view(None)["leader"] == 1


def test_lowest_tie_goes_to_the_later_card() -> None:
    s = state([["2A", "1A"], ["9B", "1B"], ["2C", "1C"]])
    s.apply(0, play("2A"))
    s.apply(1, play("9B"))
    events = s.apply(2, play("2C"))
    assert next(e for e in events if e["type"] == "trick_won")["lowest"] == 2
    assert s.anemones == [[], [], [1]]


def test_one_card_trick_wins_and_takes_the_anemone() -> None:
    s = state([["5A", "2A"], ["7A", "3A"], ["9A", "4A"]])
    s.apply(0, play("5A"))
    s.apply(1, discard("7A"))
    events = s.apply(2, discard("9A"))
    won = next(e for e in events if e["type"] == "trick_won")
    assert won == {"type": "trick_won", "winner": 0, "lowest": 0, "cards": ["5A"]}
    assert s.anemones[0] == [1] and s.points == [2, 1, 1]


def test_anemones_add_their_face_and_go_back_to_the_supply_at_once() -> None:
    # every anemone is held: the used +2 returns before the lowest takes one from the supply
    s = state([["2A", "1A"], ["3B", "1B"], ["9C", "1C"]], anemones=[[1, 1, 1], [1, 1, 1], [2, 2, 2]])
    assert s.supply == 0
    events = s.apply(0, play("2A", 1, 1))
    assert events[0]["value"] == 4 and s.supply == 2
    s.apply(1, play("3B"))
    events = s.apply(2, play("9C", 2))
    won = next(e for e in events if e["type"] == "trick_won")
    assert won["winner"] == 2 and won["lowest"] == 1
    # seat 1 holds +1s: it flips one
    assert sorted(s.anemones[1]) == [1, 1, 2] and s.supply == 3
    assert sum(len(f) for f in s.anemones) + s.supply == 9


def test_anemones_must_be_held() -> None:
    s = state([["2A", "1A"], ["3B", "1B"], ["9C", "1C"]], anemones=[[1], [], []])
    with pytest.raises(IllegalAction, match="does not hold the anemones"):
        s.apply(0, play("2A", 2))
    with pytest.raises(IllegalAction, match="does not hold the anemones"):
        s.apply(0, play("2A", 1, 1))
    with pytest.raises(IllegalAction, match="each 1 or 2"):
        s.apply(0, play("2A", 3))


def test_legal_actions_list_every_anemone_sub_multiset() -> None:
    s = state([["2A", "3B"], ["4B"], ["9C"]], anemones=[[2, 1, 1], [], []])
    faces = [a["anemones"] for a in s.legal_actions(0) if a["card"] == "2A"]
    assert sorted(faces) == sorted([[], [1], [1, 1], [2], [1, 2], [1, 1, 2]])
    assert len(s.legal_actions(0)) == 12
    assert s.legal_actions(1) == []


@pytest.mark.parametrize(
    ("seat", "action", "message"),
    [
        (1, play("7B"), "not seat 1's turn"),
        (0, play("9C"), "does not hold 9C"),
        (0, {"type": "pass"}, "unknown action type"),
        (0, {"type": "play"}, "needs a card"),
        (0, {"type": "play", "card": "ZZ"}, "bad card code"),
        (0, {"type": "play", "card": "5A", "anemones": "1"}, "anemones"),
        (0, {"type": "play", "card": "5A", "extra": 1}, "unknown field"),
        (None, play("5A"), "table"),
    ],
)
def test_illegal_actions_leave_the_state_unchanged(
    seat: int | None, action: dict[str, Any], message: str
) -> None:
    s = state([["5A", "2B"], ["7B", "3B"], ["9C", "4C"]])
    before = s.view(None)
    with pytest.raises(IllegalAction, match=message):
        s.apply(seat, action)
    assert s.view(None) == before


def test_time_must_not_go_backwards() -> None:
    s = state([["5A", "2B"], ["7B", "3B"], ["9C", "4C"]])
    s.apply(0, play("5A"), 100)
    with pytest.raises(IllegalAction, match="backwards"):
        s.apply(1, play("7B"), 50)


def test_winner_leads_and_the_hand_ends_when_hands_are_empty() -> None:
    s = state([["5A", "2B"], ["7B", "3A"], ["9C", "4C"]])
    s.apply(0, play("5A"))
    s.apply(1, play("7B"))
    s.apply(2, play("9C"))
    assert s.to_act() == [2]
    s.apply(2, play("4C"))
    s.apply(0, play("2B"))
    events = s.apply(1, play("3A"))
    assert types(events)[-1] == "hand_over" and events[-1]["scores"] == s.scores()
    assert s.is_over and s.ended == "complete" and s.to_act() == []
    assert s.legal_actions(0) == []
    with pytest.raises(IllegalAction, match="over"):
        s.apply(0, play("5A"))
    view = s.view(None)
    assert view["over"] is True and view["turn"] is None and view["hands"] == [[], [], []]
    assert [len(t["plays"]) for t in view["tricks"]] == [3, 3]


# ------------------------------------------------------------------------------------------- The 2-seat variant


def test_two_seat_trick_has_four_turns_and_draws() -> None:
    s = state([["2A", "3B"], ["4C", "5D"]], deck=["6A", "7A", "8B", "9B"])
    assert s.to_act() == [0]
    s.apply(0, play("2A"))
    assert s.to_act() == [1]
    s.apply(1, play("4C"))
    assert s.to_act() == [0]
    s.apply(0, play("3B"))
    assert s.to_act() == [1]
    events = s.apply(1, play("5D"))
    # 5D (seat 1) wins, 2A (seat 0) is lowest; the winner draws the top two, then the other seat
    assert [e for e in events if e["type"] == "drew"] == [
        {"type": "drew", "seat": 1, "count": 2, "cards": ["6A", "7A"]},
        {"type": "drew", "seat": 0, "count": 2, "cards": ["8B", "9B"]},
    ]
    assert s.events_for(events, 0)[-2] == {"type": "drew", "seat": 1, "count": 2}
    assert s.events_for(events, 0)[-1]["cards"] == ["8B", "9B"]
    assert all("cards" not in e for e in s.events_for(events, None) if e["type"] == "drew")
    assert s.view(0)["hand"] == ["8B", "9B"] and s.view(0)["deck_count"] == 0
    assert "hand" not in s.view(None) and s.to_act() == [1]


def test_two_seat_second_turn_must_also_be_a_new_suit() -> None:
    s = state([["2A", "3A", "4B", "5B"], ["4C", "6C", "7C", "8C"]], deck=[])
    s.apply(0, play("2A"))
    s.apply(1, play("4C"))
    assert s.legal_actions(0) == [play("4B"), play("5B")]
    s.apply(0, play("5B"))
    assert s.view(1)["must_discard"] is True
    s.apply(1, discard("8C"))
    assert s.score_piles[1] == [card_number("8C")] and s.points[1] == 2


# ------------------------------------------------------------------------------------------- Taking an anemone


def test_take_flip_supply_given_and_none() -> None:
    anem = [[1], [], [2]]
    supply, event = take_anemone(anem, 6, 0)
    assert event["how"] == "flip" and anem[0] == [2] and supply == 6
    supply, event = take_anemone(anem, supply, 1)
    assert event["how"] == "supply" and anem[1] == [1] and supply == 5
    supply, event = take_anemone(anem, 0, 0)
    # seats 1 and 2 hold one card each: seat 1 is nearest clockwise from seat 0; it gives its +1
    assert event == {"type": "anemone", "seat": 0, "how": "given", "from": 1, "face": 1}
    assert anem == [[2, 1], [], [2]]
    supply, event = take_anemone(anem, 0, 2)
    # seat 0 holds the most (two): it gives its +1 (it has one), arriving +1 up
    assert event["from"] == 0 and anem == [[2], [], [2, 1]]
    _, event = take_anemone([[], [], []], 0, 1)
    assert event["how"] == "none"


def test_given_prefers_most_cards_then_nearest_clockwise_and_a_plus_one() -> None:
    anem = [[], [2, 2], [], [2, 1]]
    _, event = take_anemone(anem, 0, 2)
    assert event["from"] == 3 and anem[3] == [2] and anem[2] == [1]
    anem = [[2, 2], [], [], [2, 2]]
    _, event = take_anemone(anem, 0, 1)
    assert event["from"] == 3 and anem[1] == [1] and anem[3] == [2]


def test_plus_two_comes_new_from_the_supply_without_flipping() -> None:
    anem = [[1], []]
    supply, event = take_anemone(anem, 3, 0, plus_two=True)
    assert sorted(anem[0]) == [1, 2] and supply == 2 and event["face"] == 2
    supply, event = take_anemone([[], [1, 1]], 0, 0, plus_two=True)
    assert event["how"] == "given" and event["face"] == 2


# ------------------------------------------------------------------------------------------- End of a hand


def finished_hand(
    match: AnemoneMatch, points: list[int], anemones: list[list[int]] | None = None
) -> AnemoneState:
    hand = match.start_hand(match.deal_cards(len(match.results) + 1))
    hand.playout(random.Random(0), anemone_chance=0)
    hand.points = list(points)
    if anemones is not None:
        hand.anemones = [list(f) for f in anemones]
        hand.supply = 9 - sum(len(f) for f in anemones)
    return hand


def test_scores_count_cards_and_bonus_ranks() -> None:
    s = state([["3A", "5A", "8A", "9A"], ["2B", "4B", "6B", "7B"], ["1C", "10C", "9C", "6C"]])
    rng = random.Random(2)
    s.playout(rng)
    for seat in range(3):
        assert s.scores()[seat] == len(s.score_piles[seat]) + sum(
            1 for c in s.score_piles[seat] if c % 10 + 1 in (3, 5, 8)
        )


def test_lowest_running_total_takes_an_anemone_and_ties_in_seat_order() -> None:
    match = AnemoneMatch(AnemoneOptions(players=3, rounds=2))
    finished_hand(match, [10, 4, 4], [[], [], []])
    result = match.finish_hand()
    assert match.totals == [10, 4, 4]
    assert [(e["seat"], e["how"]) for e in result.extra["anemone_events"]] == [(1, "supply"), (2, "supply")]
    assert match.anemones == [[], [1], [1]]
    # anemones are kept: the next hand starts with them
    hand = match.start_hand(match.deal_cards(7))
    assert hand.view(None)["anemones"] == [[], [1], [1]] and hand.view(None)["supply"] == 7


def test_no_anemone_after_the_last_hand() -> None:
    match = AnemoneMatch(AnemoneOptions(players=3, rounds=1))
    finished_hand(match, [10, 4, 6], [[], [], []])
    assert match.finish_hand().extra["anemone_events"] == []
    assert match.anemones == [[], [], []]


def test_six_seats_lowest_plus_two_second_lowest_plus_one() -> None:
    match = AnemoneMatch(AnemoneOptions(players=6, rounds=2))
    finished_hand(match, [9, 3, 5, 3, 5, 9], [[1], [1], [], [], [], []])
    events = match.finish_hand().extra["anemone_events"]
    assert [(e["seat"], e["face"], e["how"]) for e in events] == [
        (1, 2, "supply"),
        (3, 2, "supply"),
        (2, 1, "supply"),
        (4, 1, "supply"),
    ]
    assert match.anemones == [[1], [1, 2], [1], [2], [1], []]


def test_next_leader_is_highest_total_tie_clockwise_from_first_leader() -> None:
    match = AnemoneMatch(AnemoneOptions(players=4, rounds=3, random_first_leader=True))
    deal = {**match.deal_cards(1), "leader": 2}
    hand = match.start_hand(deal)
    hand.playout(random.Random(0))
    hand.points = [7, 9, 5, 9]
    match.finish_hand()
    # seats 1 and 3 tie on 9: going clockwise from seat 2 (the first leader), seat 3 comes first
    assert match.start_hand(match.deal_cards(2)).to_act() == [3]
    finished_second = match.hand
    assert finished_second is not None
    finished_second.playout(random.Random(0))
    finished_second.points = [3, 1, 0, 0]
    match.finish_hand()
    assert match.totals == [10, 10, 5, 9]
    # tie 0 and 1 on 10: clockwise from seat 3 (this hand's first leader): 0 before 1
    assert match.start_hand(match.deal_cards(3)).to_act() == [0]


def test_finish_hand_needs_an_ended_hand() -> None:
    match = AnemoneMatch(AnemoneOptions(players=3))
    with pytest.raises(ValueError, match="no hand has ended"):
        match.finish_hand()
    match.start_hand(three_seat_deal())
    with pytest.raises(ValueError, match="no hand has ended"):
        match.finish_hand()
    with pytest.raises(ValueError, match="not finished"):
        match.start_hand(three_seat_deal())


# ------------------------------------------------------------------------------------------- End of the game


def test_winner_by_total_then_anemone_cards_then_shared() -> None:
    match = AnemoneMatch(AnemoneOptions(players=3, rounds=1))
    assert match.winners() is None
    finished_hand(match, [10, 12, 12], [[2], [1, 1], [2, 2]])
    match.finish_hand()
    assert match.is_over and match.winners() == [1, 2]
    with pytest.raises(ValueError, match="over"):
        match.start_hand(three_seat_deal())
    match = AnemoneMatch(AnemoneOptions(players=3, rounds=1))
    finished_hand(match, [10, 12, 12], [[2], [1], [2, 2]])
    match.finish_hand()
    assert match.winners() == [2]
    match = AnemoneMatch(AnemoneOptions(players=3, rounds=1))
    finished_hand(match, [13, 12, 12], [[], [1], [2, 2]])
    match.finish_hand()
    assert match.winners() == [0]


# ------------------------------------------------------------------------------------------- Views


def test_views_hide_other_hands() -> None:
    match = AnemoneMatch(AnemoneOptions(players=4))
    hand = match.start_hand({"seed": 4})
    deal = match.deal_cards(4)
    for seat in range(4):
        view = hand.view(seat)
        assert view["hand"] == sorted(deal["hands"][seat], key=card_number)
        text = repr({k: v for k, v in view.items() if k != "hand"})
        for other in range(4):
            if other != seat:
                assert not any(f"'{c}'" in text for c in deal["hands"][other])
    spectator = hand.view(None)
    assert "hand" not in spectator and spectator["playable"] == [] and spectator["seat"] is None
    assert spectator["hand_counts"] == [10] * 4 and spectator["deck_count"] == 0
    assert hand.view(0)["playable"] == hand.view(0)["hand"] and hand.view(1)["playable"] == []
    assert hand.view(0)["round"] == 1 and hand.view(0)["rounds"] == 4


def test_from_view_rebuilds_the_state() -> None:
    match = AnemoneMatch(AnemoneOptions(players=4))
    hand = match.start_hand({"seed": 8})
    rng = random.Random(3)
    for _ in range(13):
        seat = hand.to_act()[0]
        hand.apply(seat, rng.choice(hand.legal_actions(seat)))
    seat = hand.to_act()[0]
    hands = [[c for c in hand.view(s)["hand"]] for s in range(4)]
    rebuilt = AnemoneState.from_view(hand.view(seat), hands)
    for s in [None, 0, 1, 2, 3]:
        assert rebuilt.view(s) == hand.view(s)

    def key(a: dict[str, Any]) -> str:
        return repr(sorted(a.items()))

    assert sorted(rebuilt.legal_actions(seat), key=key) == sorted(hand.legal_actions(seat), key=key)
    with pytest.raises(ValueError, match="hand_counts"):
        AnemoneState.from_view(hand.view(seat), [[], [], [], []])
