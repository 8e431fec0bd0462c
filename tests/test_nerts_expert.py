"""cardtable.bots.nerts_expert: the planning bot remembers its stock, plays only legal moves, ends every hand."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from cardtable import records
from cardtable.bots import get_bot, make_bot
from cardtable.bots.nerts import GreedyBot
from cardtable.bots.nerts_expert import ExpertBot, StockMemory
from cardtable.engine import Action, View
from cardtable.games.nerts import NertsMatch, NertsOptions, NertsState, layout_pack
from cardtable.replay import fold
from cardtable.sim.nerts import play_timed_hand


def state_for(*layouts: dict[str, Any], **opts: Any) -> NertsState:
    options = NertsOptions(players=len(layouts), **opts)
    packs = [layout_pack(**lay, nerts_pile_size=options.nerts_pile_size) for lay in layouts]
    return NertsMatch(options).start_hand({"packs": packs})


class Checked:
    """Wraps a bot: every choice must be one of the legal actions it was given."""

    def __init__(self, bot: Any) -> None:
        self.bot = bot
        self.choices = 0

    def choose(self, view: View, legal: Sequence[Action]) -> Action | None:
        action = self.bot.choose(view, legal)
        assert action is None or action in legal, (action, legal)
        self.choices += 1
        return action


def test_levels_are_registered_with_their_paces_and_descriptions() -> None:
    paces = [get_bot("nerts", f"expert:{level}").reaction_ms for level in ("easy", "medium", "hard")]
    assert paces == [1500, 900, 550]
    assert get_bot("nerts", "expert").spec == "expert:medium"
    assert all(get_bot("nerts", f"expert:{lv}").description for lv in ("easy", "medium", "hard"))
    assert isinstance(make_bot("nerts", "expert:hard", 1), ExpertBot)


def test_memory_follows_flips_turn_over_and_plays_from_the_waste() -> None:
    state = state_for({"nerts": ["KH"], "work": ["KS", "KC", "QC", "JC"]}, nerts_pile_size=20)
    memory = StockMemory()
    pending: dict[str, Any] | None = None
    seen = []
    for ms in range(1, 12):
        lay = state.view(0)["layouts"][0]
        memory.sync(lay["stock"]["count"], lay["waste"]["count"], lay["waste"]["top"], pending)
        if lay["waste"]["top"]:
            seen.append(lay["waste"]["top"])
        pending = {"type": "flip"}
        state.apply(0, pending, ms)
    lay = state.view(0)["layouts"][0]
    memory.sync(lay["stock"]["count"], lay["waste"]["count"], lay["waste"]["top"], pending)
    # 28 cards, 3 at a time: ten flips and the turn-over; the next pass brings the same tops in the same order
    assert lay["stock"]["count"] == 28 and lay["waste"]["count"] == 0
    assert memory.upcoming() == seen + seen  # this pass, then the next
    hidden = state.snapshot()["layouts"][0]["stock"]
    assert [e for e in memory.stock if e is not None] == [c.split("/")[0] for c in hidden if c.split("/")[0] in seen]


def test_memory_follows_a_rotate_and_forgets_what_no_longer_fits() -> None:
    memory = StockMemory()
    memory.sync(6, 0, None, None)
    memory.sync(3, 3, "5H", {"type": "flip"})
    memory.sync(6, 0, None, {"type": "stuck"})  # the table rotated: waste back under, top card to the bottom
    assert memory.stock[0] is None and memory.stock.count("5H") == 1
    memory.sync(2, 1, "9C", {"type": "flip"})  # nothing explains this: start again, unknown
    assert memory.stock == [None, None] and memory.waste == ["9C"]


def test_memory_learns_a_flip_count_of_one() -> None:
    memory = StockMemory()
    memory.sync(5, 0, None, None)
    memory.sync(4, 1, "2D", {"type": "flip"})
    assert memory.flip_count == 1
    memory.sync(3, 2, "3D", {"type": "flip"})
    assert memory.waste == ["2D", "3D"]


def test_declares_stuck_at_once_when_memory_says_the_next_pass_brings_nothing() -> None:
    hidden = ["KH", "AS", "AH", "AD", "AC", "QH", "QD", "JH", "JD", "10H", "10D"]
    state = state_for({"nerts": hidden, "work": ["KS", "KC", "QC", "JC"]}, nerts_pile_size=20, flip_count=1)
    bot = ExpertBot(0)
    kinds = []
    for ms in range(1, 60):
        action = bot.choose(state.view(0), state.legal_actions(0))
        assert action is not None
        kinds.append(action["type"])
        state.apply(0, action, ms)
        if action["type"] == "stuck":
            break
    # the first pass is unknown, so it flips through it; once the stock is empty it knows the next pass brings
    # nothing (the greedy bot turns the waste over and flips round once more first)
    assert kinds == ["flip"] * 28 + ["stuck"]
    # a solo seat stuck: the table rotated; every card has been seen and none plays, so: stuck at once, no flip
    assert state.view(0)["layouts"][0]["waste"]["count"] == 0 and not state.is_over
    action = bot.choose(state.view(0), state.legal_actions(0))
    assert action == {"type": "stuck"}
    state.apply(0, action, 100)
    assert state.ended == "stuck"


def test_the_nerts_top_goes_onto_a_work_pile_before_that_pile_top_is_played_away() -> None:
    # AH..5H go up from the Nerts pile; then 5C is on top and 6H (work:0) could go up too: 5C onto 6H first
    state = state_for({"nerts": ["AH", "2H", "3H", "4H", "5H", "5C"], "work": ["6H", "KC", "KD", "KS"]})
    state.apply(0, {"type": "move", "from": "nerts", "to": "foundation:new"}, 1)
    for ms in range(2, 6):
        state.apply(0, {"type": "move", "from": "nerts", "to": "foundation:0"}, ms)
    legal = state.legal_actions(0)
    assert {"type": "move", "from": "work:0", "to": "foundation:0"} in legal
    assert ExpertBot(0).choose(state.view(0), legal) == {"type": "move", "from": "nerts", "to": "work:0"}
    assert GreedyBot(0).choose(state.view(0), legal) == {"type": "move", "from": "work:0", "to": "foundation:0"}


def test_contested_foundation_places_go_first() -> None:
    # both 2H (work:0) and 2S (work:1) can go up; seat 1 shows a 2S too, so ours goes first
    state = state_for(
        {"nerts": ["AS", "9C"], "work": ["2H", "2S", "KD", "KC"], "stock": ["5D", "6D", "AH"]},
        {"nerts": ["2S"], "work": ["KS", "KH", "QD", "QC"]},
    )
    state.apply(0, {"type": "move", "from": "nerts", "to": "foundation:new"}, 1)
    state.apply(0, {"type": "flip"}, 2)
    state.apply(0, {"type": "move", "from": "waste", "to": "foundation:new"}, 3)
    action = ExpertBot(0).choose(state.view(0), state.legal_actions(0))
    assert action == {"type": "move", "from": "work:1", "to": "foundation:0"}


@pytest.mark.parametrize("level", ["easy", "medium", "hard"])
def test_only_legal_moves_every_hand_ends_and_records_replay(level: str) -> None:
    for seed in range(6):
        match = NertsMatch(NertsOptions(players=4))
        specs = [f"expert:{level}", "greedy:hard", f"expert:{level}", "greedy:medium"]
        bots = [Checked(get_bot("nerts", spec).make(seed * 10 + i)) for i, spec in enumerate(specs)]
        record = records.new_record("nerts", [records.Seat(name=f"b{i}", bot=s) for i, s in enumerate(specs)], {"players": 4})
        result = play_timed_hand(
            match, bots, seed, record, reactions=[get_bot("nerts", s).reaction_ms for s in specs], max_actions=3000
        )
        assert result.ended in ("nerts", "stuck", "stalled")
        assert result.extra["actions"] < 3000
        replayed = fold(records.loads(records.dumps(record)))
        assert replayed.hands[0].scores == result.scores
        assert all(bot.choices > 0 for bot in bots)


def test_partnerships_jokers_and_one_card_flips() -> None:
    options = {"players": 4, "partnerships": True, "jokers": True, "flip_count": 1}
    for seed in range(3):
        match = NertsMatch(NertsOptions(**options))
        bots = [Checked(ExpertBot(seed * 10 + i)) for i in range(4)]
        record = records.new_record("nerts", [records.Seat(name=f"b{i}") for i in range(4)], options)
        result = play_timed_hand(match, bots, seed, record, reactions=[550] * 4, max_actions=3000)
        assert result.ended in ("nerts", "stuck", "stalled")
        assert fold(records.loads(records.dumps(record))).hands[0].scores == result.scores


def test_deterministic_for_a_seed() -> None:
    def one(seed: int) -> str:
        record = records.new_record("nerts", [records.Seat(name=f"b{i}") for i in range(3)], {"players": 3})
        bots = [ExpertBot(seed), GreedyBot(seed + 1), ExpertBot(seed + 2, miss_rate=0.2)]
        play_timed_hand(NertsMatch(NertsOptions(players=3)), bots, seed, record, reactions=[550, 550, 900])
        return records.dumps(record)

    assert one(5) == one(5)
    assert one(5) != one(6)
