"""The review of a seat's hands (``cardtable.review``; issue 30): Enemy Anemone decisions searched from the seat's
own view, Nerts missed plays read from the record."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from cardtable import records
from cardtable.bots.ismcts import Budget, action_to_move, root_statistics
from cardtable.cli import app
from cardtable.games import get_game
from cardtable.review import anemone, nerts, review_record

RECORDS = Path(__file__).parent / "records"

SMALL = Budget(300, math.inf, greedy=0.5, prune_spends=True, halving=True, paired=True)
"""A budget small enough for a test that runs many searches (the server's is ``REVIEW_BUDGET``)."""


def test_anemone_review_has_one_entry_per_decision_never_below_zero_and_suggests_only_own_cards() -> None:
    record = records.load(RECORDS / "anemone" / "3p-one-hand.ok.json")
    seat = 1
    found = anemone.decisions(record, seat)
    played = [(i, a) for i, a in enumerate(record.hands[0].actions) if a.seat == seat]
    assert [(d.hand, d.index) for d in found] == [(0, i) for i, _ in played]
    review = anemone.review(record, seat, seed=3, budget=SMALL)
    entries = review["decisions"]
    assert len(entries) == len(played) == review["summary"]["decisions"]
    for decision, entry in zip(found, entries, strict=True):
        assert entry["played"] == decision.played["card"]
        assert entry["loss"] >= 0
        assert entry["marked"] == (entry["loss"] >= anemone.MARK_LOSS)
        # the suggested card is one the seat held then: never a card it could not see
        assert entry["best"] in decision.view["hand"]
        if entry["loss"] == 0:
            assert entry["best"] == entry["played"]
        if not anemone.needs_search(decision.legal):
            assert entry["loss"] == 0
    assert review["summary"]["average_loss"] == round(sum(e["loss"] for e in entries) / len(entries), 3)
    largest = review["summary"]["largest"]
    assert len(largest) <= 3 and all(e["loss"] > 0 for e in largest)
    assert [e["loss"] for e in largest] == sorted(
        (e["loss"] for e in entries if e["loss"] > 0), reverse=True
    )[:3]


def test_a_card_played_badly_is_marked_with_a_better_card() -> None:
    """Seat 1 of the 4-seat record (random bots) gave points away: some decision loses 0.5 points or more."""
    record = records.load(RECORDS / "anemone" / "4p-full-match-random-leader.ok.json")
    review = anemone.review(record, 1, seed=5, budget=SMALL, limit=12)
    marked = [e for e in review["decisions"] if e["marked"]]
    assert marked and all(e["best"] != e["played"] or e["loss"] > 0 for e in marked)


def _first_plays(seed: int) -> tuple[dict[str, Any], list[str]]:
    """A 4-seat deal and the card seat 0 leads (its first legal one)."""
    match = get_game("anemone").new_match({"players": 4, "rounds": 1})
    deal = match.deal_cards(seed)
    state = match.start_hand(deal)
    lead = state.legal_actions(0)[0]
    return deal, [lead["card"]]


def _record(deal: dict[str, Any], lead: str, reply: str) -> records.Record:
    record = records.new_record("anemone", [records.Seat(n) for n in "abcd"], {"players": 4, "rounds": 1})
    record.hands = [
        records.HandRecord(
            deal=deal,
            actions=[
                records.ActionRecord(seat=0, ms=0, action={"type": "play", "card": lead, "anemones": []}),
                records.ActionRecord(seat=1, ms=0, action={"type": "play", "card": reply, "anemones": []}),
            ],
        )
    ]
    return record


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), shuffle=st.randoms(use_true_random=False))
def test_deals_differing_only_in_cards_the_seat_could_not_see_give_the_same_review(
    seed: int, shuffle: Any
) -> None:
    """Seat 1's first decision (after seat 0's lead): the other seats' cards, but the one led, dealt differently."""
    deal, (lead,) = _first_plays(seed)
    hands = [list(h) for h in deal["hands"]]
    unseen = [c for s in (0, 2, 3) for c in hands[s] if c != lead]
    shuffle.shuffle(unseen)
    unseen = unseen[9:] + unseen[:9]  # seat 0's other cards always go elsewhere
    other = [[lead, *unseen[:9]], hands[1], unseen[9:19], unseen[19:29]]
    assert sorted(c for h in other for c in h) == sorted(c for h in hands for c in h)
    assert set(other[0]) != set(hands[0])
    match = get_game("anemone").new_match({"players": 4, "rounds": 1})
    state = match.start_hand(deal)
    state.apply(0, {"type": "play", "card": lead, "anemones": []}, 0)
    reply = state.legal_actions(1)[0]["card"]
    budget = Budget(200, math.inf, greedy=0.5, prune_spends=True, halving=True, paired=True)
    first = anemone.review(_record(deal, lead, reply), 1, seed=11, budget=budget, limit=1)
    second = anemone.review(_record({"hands": other}, lead, reply), 1, seed=11, budget=budget, limit=1)
    assert first == second
    assert len(first["decisions"]) == 1


def _nerts_record(wait_ms: int) -> records.Record:
    """Seed 9, 2 seats: seat 0 starts with the aces AD (``work:0``) and AH (``work:3``) playable; seat 1 flips
    half-way; seat 0 plays both aces ``wait_ms`` after the start."""
    record = records.new_record("nerts", [records.Seat("a"), records.Seat("b")], {"players": 2})
    deal = get_game("nerts").new_match({"players": 2}).deal_cards(9)
    record.hands = [
        records.HandRecord(
            deal=deal,
            actions=[
                records.ActionRecord(seat=1, ms=wait_ms // 2, action={"type": "flip"}),
                records.ActionRecord(
                    seat=0, ms=wait_ms, action={"type": "move", "from": "work:0", "to": "foundation:new"}
                ),
                records.ActionRecord(
                    seat=0, ms=wait_ms, action={"type": "move", "from": "work:3", "to": "foundation:new"}
                ),
            ],
        )
    ]
    return record


def test_nerts_review_lists_a_card_left_playable_for_3_s_and_not_one_for_1_s() -> None:
    slow = nerts.review(_nerts_record(3000), 0)
    assert {"hand": 0, "index": 0, "ms": 0, "card": "AD", "kind": "foundation", "waited_ms": 3000} in slow[
        "missed"
    ]
    assert {"hand": 0, "index": 0, "ms": 0, "card": "AH", "kind": "foundation", "waited_ms": 3000} in slow[
        "missed"
    ]
    assert slow["summary"]["missed"] == len(slow["missed"]) == 2
    assert slow["summary"]["cards_left"] == 13
    quick = nerts.review(_nerts_record(1000), 0)
    assert quick["missed"] == [] and quick["summary"]["missed"] == 0
    # seat 1 had its own chances; none of seat 0's cards is listed for it
    assert all(m["card"] not in ("AD", "AH") for m in nerts.review(_nerts_record(3000), 1)["missed"])


def test_review_record_refuses_a_seat_the_record_does_not_have() -> None:
    with pytest.raises(ValueError, match="seat 2"):
        review_record(_nerts_record(1000), 2)


def test_cardtable_review_prints_a_nerts_review_as_json_and_refuses_a_missing_seat(tmp_path: Path) -> None:
    path = tmp_path / "nerts.json"
    path.write_text(records.dumps(_nerts_record(3000)))
    done = CliRunner().invoke(app, ["review", str(path), "--seat", "0", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == nerts.review(_nerts_record(3000), 0)
    missing = CliRunner().invoke(app, ["review", str(path), "--seat", "3"])
    assert missing.exit_code == 1 and "seat 3" in missing.output


def test_root_statistics_cover_every_root_move_and_the_move_included() -> None:
    """``root_statistics`` (``cardtable.bots.ismcts``): each root move's visits and the seat's mean points; a move the
    pruned search would not offer (a needless anemone spend) is searched when included, as the review includes the
    move played."""
    record = records.load(RECORDS / "anemone" / "4p-full-match-random-leader.ok.json")
    budget = Budget(120, math.inf, prune_spends=True, halving=True)
    for decision in anemone.decisions(record, 1):
        for action in decision.legal:
            move = action_to_move(action)
            best, stats = root_statistics(decision.view, budget, random.Random(1))
            if move in {s.move for s in stats}:
                continue
            assert sum(s.visits for s in stats) == 120 and best in {s.move for s in stats}
            assert all(0 <= s.mean_points <= 60 for s in stats)
            chosen, included = root_statistics(decision.view, budget, random.Random(1), include=move)
            assert next(s.visits for s in included if s.move == move) >= 1
            # no clock: the same view, budget and seed give the same statistics
            assert root_statistics(decision.view, budget, random.Random(1), include=move) == (
                chosen,
                included,
            )
            return
    raise AssertionError("no decision of seat 1 had a move the pruned search leaves out")


def test_nerts_review_lists_a_nerts_card_that_could_have_gone_to_an_empty_work_pile() -> None:
    """Seed 9: once AD leaves ``work:0``, the Nerts pile's top (8H) could fill it for 2.5 s: a ``free_nerts`` miss."""
    record = records.new_record("nerts", [records.Seat("a"), records.Seat("b")], {"players": 2})
    deal = get_game("nerts").new_match({"players": 2}).deal_cards(9)
    move = {"type": "move", "from": "work:0", "to": "foundation:new"}
    record.hands = [
        records.HandRecord(
            deal=deal,
            actions=[
                records.ActionRecord(seat=0, ms=0, action=move),
                records.ActionRecord(seat=1, ms=2500, action={"type": "flip"}),
            ],
        )
    ]
    missed = nerts.review(record, 0)["missed"]
    assert {"hand": 0, "index": 1, "ms": 0, "card": "8H", "kind": "free_nerts", "waited_ms": 2500} in missed
    assert {"hand": 0, "index": 0, "ms": 0, "card": "AH", "kind": "foundation", "waited_ms": 2500} in missed
