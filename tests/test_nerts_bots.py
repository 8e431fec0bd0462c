"""cardtable.bots.nerts: the greedy bots play legal, purposeful, deterministic Nerts and every hand ends."""

from __future__ import annotations

from typing import Any

import pytest

from cardtable import records
from cardtable.bots import bot_infos, get_bot, make_bot, run_bot
from cardtable.bots.nerts import GreedyBot
from cardtable.games.nerts import NertsMatch, NertsOptions, NertsState, layout_pack
from cardtable.sim.nerts import play_hand


def state_for(*layouts: dict[str, Any], **opts: Any) -> NertsState:
    options = NertsOptions(players=len(layouts), **opts)

    packs = [layout_pack(**lay, nerts_pile_size=options.nerts_pile_size) for lay in layouts]
    return NertsMatch(options).start_hand({"packs": packs})


def choose(bot: GreedyBot, state: NertsState, seat: int = 0) -> dict[str, Any] | None:
    return bot.choose(state.view(seat), state.legal_actions(seat))


def test_registered_specs_and_paces() -> None:
    infos = {info.spec: info for info in bot_infos("nerts")}
    assert {spec: info.reaction_ms for spec, info in infos.items()} == {
        "greedy:easy": 1400,
        "greedy:medium": 900,
        "greedy:hard": 550,
        "greedy": 0,
        "expert:easy": 1500,
        "expert:medium": 900,
        "expert:hard": 550,
    }
    assert get_bot("nerts", "greedy").spec == "greedy"
    assert isinstance(make_bot("nerts", "greedy:hard", 3), GreedyBot)
    state = state_for({"nerts": ["AS"]})
    assert run_bot("nerts", "greedy", 1, state.view(0), state.legal_actions(0)) == {
        "type": "move",
        "from": "nerts",
        "to": "foundation:new",
    }


def test_foundations_first_nerts_pile_before_waste_and_work() -> None:
    state = state_for({"nerts": ["AS"], "work": ["AH"], "stock": ["2C", "3C", "AD"]})
    state.apply(0, {"type": "flip"}, 1)  # waste top AD
    bot = GreedyBot(0)
    assert choose(bot, state) == {"type": "move", "from": "nerts", "to": "foundation:new"}
    state.apply(0, {"type": "move", "from": "nerts", "to": "foundation:new"}, 2)
    assert choose(bot, state)["from"] == "waste"  # type: ignore[index]


def test_frees_the_nerts_pile_onto_work_piles() -> None:
    state = state_for({"nerts": ["9H"], "work": ["10S", "KD", "QC", "JH"]})
    assert choose(GreedyBot(0), state) == {"type": "move", "from": "nerts", "to": "work:0"}


def test_makes_room_for_the_nerts_pile() -> None:
    # nothing takes 5C; moving 8H onto 9S empties a pile for it
    state = state_for({"nerts": ["5C"], "work": ["9S", "8H", "KD", "QD"], "stock": ["2D", "3D", "4D"]})
    assert choose(GreedyBot(0), state) == {"type": "move", "from": "work:1", "to": "work:0", "count": 1}


def test_flips_then_declares_stuck_after_a_full_pass_then_cycles() -> None:
    # nothing in this layout can move: the aces and every card that fits a work pile are deep in the Nerts pile
    hidden = ["KH", "AS", "AH", "AD", "AC", "QH", "QD", "JH", "JD", "10H", "10D"]
    state = state_for({"nerts": hidden, "work": ["KS", "KC", "QC", "JC"]}, {}, nerts_pile_size=20)
    bot = GreedyBot(0)
    kinds = []
    for ms in range(1, 80):
        action = choose(bot, state)
        if action is None:
            break
        kinds.append(action["type"])
        state.apply(0, action, ms)
        if action["type"] == "stuck":
            break
    # 28 stock cards, 3 at a time: 10 flips, the turn-over, and the next flip would repeat: stuck
    assert kinds == ["flip"] * 11 + ["stuck"]
    assert choose(bot, state) == {"type": "cycle"}


def test_calls_nerts_when_ahead() -> None:
    state = state_for({"nerts": ["AS", "2S", "3S", "4S", "5S"]}, {}, nerts_pile_size=5)
    bot = GreedyBot(0)
    for ms in range(1, 6):
        action = choose(bot, state)
        assert action is not None and action["to"].startswith("foundation")
        state.apply(0, action, ms)
    assert choose(bot, state) == {"type": "nerts"}


def test_deterministic_for_a_seed() -> None:
    def one(seed: int) -> str:
        record = records.new_record("nerts", [records.Seat(name=f"b{i}") for i in range(4)], {"players": 4})
        bots = [get_bot("nerts", "greedy:medium").make(seed * 10 + i) for i in range(4)]
        play_hand(NertsMatch(NertsOptions(players=4)), bots, seed, record, reactions=[900] * 4)
        return records.dumps(record)

    assert one(3) == one(3)
    assert one(3) != one(4)


def test_easier_levels_overlook_plays() -> None:
    overlooked = 0
    for seed in range(40):
        state = state_for({"nerts": ["AS"]})
        action = get_bot("nerts", "greedy:easy").make(seed).choose(state.view(0), state.legal_actions(0))
        overlooked += action == {"type": "flip"}
    assert 3 <= overlooked <= 25


def test_no_ping_pong_between_work_piles() -> None:
    for seed in range(20):
        record = records.new_record("nerts", [records.Seat(name=f"b{i}") for i in range(4)], {"players": 4})
        bots = [GreedyBot(seed * 10 + i) for i in range(4)]
        play_hand(NertsMatch(NertsOptions(players=4)), bots, seed, record)
        last: dict[int, dict[str, Any]] = {}
        for entry in record.hands[0].actions:
            action = entry.action
            if entry.seat is None:
                continue
            previous = last.get(entry.seat)
            if (
                previous
                and previous["type"] == action["type"] == "move"
                and action["from"].startswith("work")
            ):
                assert not (previous["from"] == action["to"] and previous["to"] == action["from"]), entry
            last[entry.seat] = action


@pytest.mark.slow  # two hundred four-seat hands: the longest test of the engine
def test_two_hundred_four_seat_greedy_hands_all_end() -> None:
    endings: dict[str | None, int] = {}
    for seed in range(200):
        match = NertsMatch(NertsOptions(players=4))
        bots = [GreedyBot(seed * 10 + i) for i in range(4)]
        result = play_hand(match, bots, seed)
        assert match.hand is not None and match.hand.is_over
        endings[result.ended] = endings.get(result.ended, 0) + 1
    assert sum(endings.values()) == 200
    assert endings.get("nerts", 0) >= 150  # greedy bots nearly always get a Nerts pile out
