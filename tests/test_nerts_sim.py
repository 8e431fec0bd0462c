"""cardtable.sim.nerts: simulated-clock hands, records that replay, and the ``simulate`` summary."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from cardtable import records
from cardtable.bots.nerts import GreedyBot
from cardtable.games.nerts import NertsMatch, NertsOptions
from cardtable.replay import fold
from cardtable.sim.nerts import play_hand, play_item, play_timed_hand, run


def test_a_hand_record_has_packs_and_replays_to_the_same_scores() -> None:
    match = NertsMatch(NertsOptions(players=3))
    record = records.new_record(
        "nerts", [records.Seat(name=f"b{i}", bot="greedy") for i in range(3)], {"players": 3}
    )
    result = play_hand(match, [GreedyBot(i) for i in range(3)], 21, record)
    hand = record.hands[0]
    assert set(hand.deal) == {"packs"} and len(hand.deal["packs"]) == 3
    times = [entry.ms for entry in hand.actions]
    assert times == sorted(times)
    replayed = fold(records.loads(records.dumps(record)))
    assert replayed.hands[0].scores == result.scores
    assert replayed.hands[0].ended == result.ended


def test_each_seat_acts_at_its_own_pace() -> None:
    match = NertsMatch(NertsOptions(players=2))
    record = records.new_record("nerts", [records.Seat(name="a"), records.Seat(name="b")], {"players": 2})
    play_hand(match, [GreedyBot(1), GreedyBot(2)], 5, record, reactions=[1400, 550])
    for seat, pace in ((0, 1400), (1, 550)):
        times = [e.ms for e in record.hands[0].actions if e.seat == seat]
        assert all(b - a >= pace for a, b in pairwise(times))


def test_bots_must_match_the_seats() -> None:
    with pytest.raises(ValueError, match="bots: 1 bots for 2 seats"):
        play_hand(NertsMatch(NertsOptions(players=2)), [GreedyBot(0)], 1)


def test_a_match_is_played_to_its_end() -> None:
    result = play_item((2, 9, True, ("greedy", "greedy"), {"target_score": 10}))
    record = records.from_dict(result["record"])
    assert len(record.hands) == len(result["scores"]) >= 1
    assert result["winners"] is not None
    replayed = fold(record)
    assert replayed.winner == result["winners"]


def test_run_writes_one_record_per_line_and_summarises(tmp_path: Path) -> None:
    out = tmp_path / "sim" / "hands.jsonl"
    summary = run(players=4, hands=6, seed=3, out=out, jobs=1, match_mode=False, bots=None, show=False)
    lines = out.read_text().splitlines()
    assert len(lines) == 6 and summary["hands"] == 6
    for line in lines:
        data = json.loads(line)
        assert data["format"] == "cardtable/1" and "seed" not in data["hands"][0]["deal"]
        fold(records.from_dict(data))
    assert len(summary["mean_scores"]) == 4 and sum(summary["endings"].values()) == 6
    assert summary["mean_actions"] > 0 and summary["hands_per_second"] > 0


def test_run_is_the_same_in_a_process_pool(tmp_path: Path) -> None:
    one = run(
        players=2,
        hands=4,
        seed=8,
        out=tmp_path / "a.jsonl",
        jobs=1,
        bots=["greedy:hard", "greedy"],
        show=False,
    )
    two = run(
        players=2,
        hands=4,
        seed=8,
        out=tmp_path / "b.jsonl",
        jobs=2,
        bots=["greedy:hard", "greedy"],
        show=False,
    )
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text()
    assert one["mean_scores"] == two["mean_scores"]


def test_run_refuses_an_unknown_bot_or_option() -> None:
    with pytest.raises(ValueError, match="unknown nerts bot"):
        run(players=2, hands=1, seed=1, bots=["clever"], show=False)
    with pytest.raises(ValueError, match="flip_count"):
        run(players=2, hands=1, seed=1, options={"flip_count": 2}, show=False)


def test_run_prints_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    run(players=2, hands=2, seed=1, match_mode=True, options={"target_score": 10}, show=True)
    printed = capsys.readouterr().out
    assert "mean score" in printed and "hands ended by" in printed and "matches won" in printed


def test_a_far_seat_is_compensated_through_the_shared_ordering() -> None:
    def hand(cap: int) -> tuple[records.Record, Any]:
        match = NertsMatch(NertsOptions(players=2))
        record = records.new_record("nerts", [records.Seat(name="near"), records.Seat(name="far")], {"players": 2})
        result = play_timed_hand(
            match, [GreedyBot(1), GreedyBot(2)], 7, record, reactions=[550, 550], delays=[0, 140], cap_ms=cap
        )
        return record, result

    plain, plain_result = hand(0)
    fair, fair_result = hand(150)
    for record, result in ((plain, plain_result), (fair, fair_result)):
        assert fold(records.loads(records.dumps(record))).hands[0].scores == result.scores
        times = [entry.ms for entry in record.hands[0].actions]
        assert times == sorted(times)
        assert len(result.extra["races"]) == 2 and len(result.extra["nerts_left"]) == 2
    # the far seat's plays are stamped by their estimated send time: earlier than by arrival
    first_far = next(e.ms for e in plain.hands[0].actions if e.seat == 1)
    first_far_fair = next(e.ms for e in fair.hands[0].actions if e.seat == 1)
    assert first_far_fair == first_far - 140


def test_delays_must_match_the_seats() -> None:
    with pytest.raises(ValueError, match="delays"):
        play_timed_hand(NertsMatch(NertsOptions(players=2)), [GreedyBot(0), GreedyBot(1)], 1, delays=[0])
    with pytest.raises(ValueError, match="delays"):
        run(players=2, hands=1, seed=1, delays=[-3], show=False)
