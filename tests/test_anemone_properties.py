"""cardtable.games.anemone: invariants over random legal games of every seat count (Hypothesis)."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cardtable.engine import IllegalAction
from cardtable.games.anemone import CODE, POINTS_OF, AnemoneMatch, AnemoneOptions, AnemoneState, game_cards


def check_invariants(state: AnemoneState) -> None:
    cards = Counter(
        [c for hand in state.hands for c in hand]
        + [p[1] for p in state.trick]
        + [c for pile in state.score_piles for c in pile]
        + state.deck
    )
    assert cards == Counter(game_cards(state.players)), "every card in exactly one place"
    assert state.supply + sum(len(f) for f in state.anemones) == 9
    assert state.supply >= 0 and all(f in (1, 2) for faces in state.anemones for f in faces)
    for seat in range(state.players):
        bonus = sum(1 for c in state.score_piles[seat] if POINTS_OF[c] == 2)
        assert state.scores()[seat] == len(state.score_piles[seat]) + bonus
    for seat in [None, *range(state.players)]:
        view = state.view(seat)
        text = json.dumps({k: v for k, v in view.items() if k != "hand"})
        for other in range(state.players):
            if other != seat:
                for card in state.hands[other]:
                    assert f'"{CODE[card]}"' not in text, "a view shows another seat's hand"
        if seat is not None:
            assert view["hand"] == [CODE[c] for c in sorted(state.hands[seat])]
        else:
            assert "hand" not in view
        assert view["hand_counts"] == [len(h) for h in state.hands]
    if not state.over:
        to_act = state.to_act()[0]
        playable = state.view(to_act)["playable"]
        assert state.view(to_act)["must_discard"] == (not playable)
        assert {a["card"] for a in state.legal_actions(to_act) if a["type"] == "play"} == set(playable)


def illegal_candidates(state: AnemoneState, rng: random.Random) -> list[tuple[int | None, dict[str, Any]]]:
    seat = state.to_act()[0]
    others = [s for s in range(state.players) if s != seat]
    hand = state.hands[seat]
    not_held = [c for c in game_cards(state.players) if c not in hand]
    out: list[tuple[int | None, dict[str, Any]]] = [
        (
            rng.choice(others),
            {"type": "play", "card": CODE[rng.choice(state.hands[rng.choice(others)] or [0])]},
        ),
        (seat, {"type": "play", "card": CODE[rng.choice(not_held)]}),
        (seat, {"type": "play", "card": CODE[hand[0]], "anemones": [1] * (len(state.anemones[seat]) + 1)}),
        (seat, {"type": "fold"}),
        (None, {"type": "play", "card": CODE[hand[0]]}),
    ]
    playable = state.playable_cards()
    blocked = [c for c in hand if c not in playable]
    if playable:
        out.append((seat, {"type": "discard", "card": CODE[hand[0]]}))
        if blocked:
            out.append((seat, {"type": "play", "card": CODE[blocked[0]]}))
    else:
        out.append((seat, {"type": "play", "card": CODE[hand[0]]}))
    if state.anemones[seat] and not playable:
        out.append((seat, {"type": "discard", "card": CODE[hand[0]], "anemones": [state.anemones[seat][0]]}))
    return out


@pytest.mark.slow  # forty whole matches of up to six seats, each replayed
@settings(max_examples=40, deadline=None)
@given(players=st.integers(2, 6), seed=st.integers(0, 2**32), choices=st.integers(0, 2**32))
def test_random_match_invariants_and_replay(players: int, seed: int, choices: int) -> None:
    rng = random.Random(choices)
    options = AnemoneOptions(players=players, rounds=2, random_first_leader=bool(seed % 2))
    match = AnemoneMatch(options)
    hands_record: list[tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]] = []
    for number in range(options.rounds):
        deal = match.deal_cards(seed + number)
        state = match.start_hand(deal)
        # anemones carried from the last hand are in the new hand
        assert state.view(None)["anemones"] == match.anemones
        actions: list[tuple[int, dict[str, Any]]] = []
        ms = 0
        while not state.is_over:
            check_invariants(state)
            seat = state.to_act()[0]
            if rng.random() < 0.2:
                before = [state.view(s) for s in [None, *range(players)]]
                for bad_seat, bad in illegal_candidates(state, rng):
                    with pytest.raises(IllegalAction):
                        state.apply(bad_seat, bad, ms)
                assert [state.view(s) for s in [None, *range(players)]] == before
            action = rng.choice(state.legal_actions(seat))
            events = state.apply(seat, action, ms)
            for other in range(players):
                for event in state.events_for(events, other):
                    if event["type"] == "drew" and event["seat"] != other:
                        assert "cards" not in event
            actions.append((seat, action))
            ms += rng.randrange(0, 3000)
        check_invariants(state)
        assert sum(len(h) for h in state.hands) == 0 and state.deck == []
        result = match.finish_hand()
        assert result.ended == "complete"
        assert sum(len(f) for f in match.anemones) <= 9
        hands_record.append((deal, actions))
    assert match.is_over
    winners = match.winners()
    assert winners and max(match.totals) == match.totals[winners[0]]
    # replaying the same deals and actions gives the same result
    again = AnemoneMatch(options)
    for deal, actions in hands_record:
        state = again.start_hand(deal)
        for seat, action in actions:
            state.apply(seat, action, 0)
        again.finish_hand()
    assert again.totals == match.totals
    assert again.anemones == match.anemones
    assert again.winners() == winners


@settings(max_examples=30, deadline=None)
@given(players=st.integers(2, 6), seed=st.integers(0, 2**32), steps=st.integers(0, 60))
def test_copy_is_independent(players: int, seed: int, steps: int) -> None:
    match = AnemoneMatch(AnemoneOptions(players=players))
    state = match.start_hand({"seed": seed})
    rng = random.Random(seed)
    for _ in range(steps):
        if state.is_over:
            break
        seat = state.to_act()[0]
        state.apply(seat, rng.choice(state.legal_actions(seat)))
    before = state.view(None)
    clone = state.copy()
    clone.playout(rng, anemone_chance=0.5)
    check_invariants(clone)
    assert clone.is_over and state.view(None) == before
