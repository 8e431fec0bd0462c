"""``cardtable/replay.py`` (beside ``tests/test_replay.py``, which runs it through the command): the summary a
fold gives, and the errors it raises, naming the hand, the action and the deal."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from cardtable import records
from cardtable.records import RecordError
from cardtable.replay import IllegalRecordAction, fold, new_match
from table_helpers import RECORDS


def test_replay_summaries_and_errors() -> None:
    anemone = records.load(RECORDS / "anemone" / "2p-full-match.ok.json")
    result = fold(anemone)
    out = result.to_dict()
    assert set(out) == {"hands", "totals", "winner", "anemones"} and len(out["anemones"]) == 2
    assert out["totals"] == result.match.totals and out["winner"] == result.match.winners()
    nerts = records.load(RECORDS / "common" / "nerts-flips-in-progress.ok.json")
    summary = fold(nerts).to_dict()
    assert "anemones" not in summary and summary["winner"] is None and summary["hands"][-1]["ended"] is None
    steps: list[tuple[int, int | None, int]] = []
    fold(nerts, lambda hand, index, state: steps.append((hand, index, state.view(None)["ms"])))
    assert steps[0] == (0, None, 0)
    assert steps[1:] == [(0, i, entry.ms) for i, entry in enumerate(nerts.hands[0].actions)]
    error = IllegalRecordAction(2, 5, "no")
    assert (error.hand, error.index, error.reason, str(error)) == (2, 5, "no", "hand 2, action 5: no")
    for deal, message in (({}, "hands[0].deal: needs either 'seed' or 'packs' (one of them)"),
                          ({"packs": "x"}, "hands[0].deal.packs: must be a list of packs")):
        bad_deal = msgspec.structs.replace(nerts, hands=[msgspec.structs.replace(nerts.hands[0], deal=deal)])
        with pytest.raises(RecordError) as unreadable:
            fold(bad_deal)
        assert str(unreadable.value) == message
    with pytest.raises(IllegalRecordAction) as illegal:
        fold(records.load(RECORDS / "anemone" / "card-not-held.illegal.json"))
    assert (illegal.value.hand, illegal.value.index, illegal.value.reason) == (0, 15, "seat 0 does not hold 3A")
    one_more = msgspec.structs.replace(anemone, hands=[*anemone.hands, anemone.hands[0]])
    with pytest.raises(IllegalRecordAction) as illegal:
        fold(one_more)
    assert (illegal.value.hand, illegal.value.index, illegal.value.reason) == (
        len(anemone.hands), 0, "the match was already over before this hand")
    unfinished = msgspec.structs.replace(nerts, hands=[nerts.hands[0], nerts.hands[0]])
    with pytest.raises(IllegalRecordAction) as illegal:
        fold(unfinished)
    assert (illegal.value.hand, illegal.value.index, illegal.value.reason) == (
        0, len(nerts.hands[0].actions), "the hand had not ended when the next hand began")
    bad_seats = msgspec.structs.replace(anemone, seats=anemone.seats[:1])
    with pytest.raises(RecordError, match=r"^seats: the record has 1 seats but options.players is 2$"):
        new_match(bad_seats)


def test_replay_names_the_deal_in_any_deal_error_and_the_type_of_a_silent_one() -> None:
    """Errors no engine gives today still read well: a deal error whose text does not name the deal, and an action
    that fails with an exception saying nothing."""
    from cardtable.replay import apply_actions, start_hand

    class Match:
        def check_deal(self, deal: dict[str, Any]) -> None:
            raise ValueError("packs are short")

    with pytest.raises(RecordError) as unreadable:
        start_hand(Match(), records.HandRecord(deal={}), 2)  # type: ignore[arg-type]
    assert str(unreadable.value) == "hands[2].deal: packs are short"

    class State:
        is_over = True

        def apply(self, seat: int | None, action: dict[str, Any], ms: int) -> None:
            raise TypeError()

    hand = records.HandRecord(deal={}, actions=[records.ActionRecord(seat=0, ms=5, action={"type": "x"})])
    with pytest.raises(IllegalRecordAction) as illegal:
        apply_actions(State(), hand, 1)  # type: ignore[arg-type]
    assert (illegal.value.hand, illegal.value.index, illegal.value.reason) == (1, 0, "TypeError")
