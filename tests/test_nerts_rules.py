"""cardtable.games.nerts: one test group per section of docs/rules/nerts.md, each rule legal and illegal."""

from __future__ import annotations

from typing import Any

import pytest

from cardtable.engine import IllegalAction
from cardtable.games.nerts import NertsMatch, NertsOptions, NertsState, layout_pack


def deal(*layouts: dict[str, Any], players: int | None = None, **opts: Any) -> NertsState:
    """A hand whose packs put the chosen cards in place (``layout_pack`` arguments, one dict per pack)."""
    options = NertsOptions(players=players or len(layouts), **opts)
    packs = [
        layout_pack(
            **lay,
            nerts_pile_size=options.nerts_pile_size,
            work_piles=options.work_piles,
            jokers=options.jokers,
        )
        for lay in layouts
    ]
    return NertsMatch(options).start_hand({"packs": packs})


def illegal(state: NertsState, seat: int | None, action: dict[str, Any], ms: int, reason: str) -> None:
    """The action is refused with ``reason`` in its message and the state is exactly as before."""
    before = state.snapshot()
    view = state.view(seat)
    with pytest.raises(IllegalAction, match=reason):
        state.apply(seat, action, ms)
    assert state.snapshot() == before
    assert state.view(seat) == view


def layout(state: NertsState, pack: int = 0) -> dict[str, Any]:
    result: dict[str, Any] = state.view(None)["layouts"][pack]
    return result


def move(src: str, dst: str, **extra: Any) -> dict[str, Any]:
    return {"type": "move", "from": src, "to": dst, **extra}


def legal_has(state: NertsState, seat: int, action: dict[str, Any]) -> bool:
    return action in state.legal_actions(seat)


# --- Players and packs ------------------------------------------------------------------------------------


class TestPlayersAndPacks:
    def test_two_to_eight_seats_and_solo_practice(self) -> None:
        for n in (1, 2, 8):
            assert NertsOptions(players=n).players == n
        for n in (0, 9):
            with pytest.raises(ValueError, match="players"):
                NertsOptions(players=n)

    def test_solo_practice_plays(self) -> None:
        state = deal({"nerts": ["AS"]})
        events = state.apply(0, move("nerts", "foundation:new"), 10)
        assert events[0]["to"] == "foundation:0"
        assert state.view(0)["players"] == 1

    def test_every_seat_its_own_pack_and_cards_remember_it(self) -> None:
        state = deal({"nerts": ["AS"]}, {"nerts": ["2S"]})
        state.apply(0, move("nerts", "foundation:new"), 10)
        state.apply(1, move("nerts", "foundation:0"), 20)
        cards = state.view(1)["foundations"][0]["cards"]
        assert cards == [{"card": "AS", "pack": 0}, {"card": "2S", "pack": 1}]

    def test_partners_share_a_layout_and_either_may_act(self) -> None:
        state = deal({"nerts": ["AS", "2S"]}, {"nerts": ["AH"]}, players=4, partnerships=True)
        view = state.view(2)
        assert [lay["seats"] for lay in view["layouts"]] == [[0, 2], [1, 3]]
        state.apply(2, move("nerts", "foundation:new"), 10)  # seat 2 plays seat 0's (team 0's) pack
        state.apply(0, move("nerts", "foundation:0"), 20)
        scores = state.scores()
        assert scores[0] == scores[2] and scores[1] == scores[3]
        assert scores[0] == 2 - 2 * 11

    def test_partnerships_need_an_even_number_of_seats_four_or_more(self) -> None:
        for n in (2, 3, 5):
            with pytest.raises(ValueError, match="partnerships"):
                NertsOptions(players=n, partnerships=True)
        assert NertsOptions(players=6, partnerships=True).layouts == 3

    def test_partnership_deal_has_one_pack_per_team(self) -> None:
        match = NertsMatch(NertsOptions(players=4, partnerships=True))
        assert len(match.deal_cards(3)["packs"]) == 2
        with pytest.raises(ValueError, match=r"deal\.packs: 4 packs, expected 2"):
            match.check_deal({"packs": match.deal_cards(3)["packs"] * 2})


# --- The layout ---------------------------------------------------------------------------------------------


class TestLayout:
    def test_dealt_in_order(self) -> None:
        match = NertsMatch(NertsOptions(players=1))
        pack = match.deal_cards(11)["packs"][0]
        state = match.start_hand({"packs": [pack]})
        lay = layout(state)
        assert lay["nerts"] == {"count": 13, "top": pack[12]}
        assert lay["work"] == [[pack[13]], [pack[14]], [pack[15]], [pack[16]]]
        assert lay["stock"] == {"count": 35}
        assert lay["waste"] == {"count": 0, "top": None}
        state.apply(0, {"type": "flip"}, 5)
        assert layout(state)["waste"] == {"count": 3, "top": pack[19]}

    def test_sizes_follow_the_options(self) -> None:
        state = deal({}, nerts_pile_size=5, work_piles=6)
        lay = layout(state)
        assert lay["nerts"]["count"] == 5 and len(lay["work"]) == 6 and lay["stock"]["count"] == 41


# --- The common area: foundations --------------------------------------------------------------------------


class TestFoundations:
    def test_an_ace_starts_a_foundation_with_the_next_id(self) -> None:
        state = deal({"nerts": ["AS"], "work": ["AH"]})
        assert legal_has(state, 0, move("nerts", "foundation:new"))
        assert state.apply(0, move("nerts", "foundation:new"), 1)[0]["to"] == "foundation:0"
        assert state.apply(0, move("work:0", "foundation:new"), 2)[0]["to"] == "foundation:1"
        assert [f["id"] for f in state.view(0)["foundations"]] == [0, 1]
        assert [f["suit"] for f in state.view(0)["foundations"]] == ["S", "H"]

    def test_only_an_ace_starts_one(self) -> None:
        state = deal({"nerts": ["2S"]})
        assert not legal_has(state, 0, move("nerts", "foundation:new"))
        illegal(state, 0, move("nerts", "foundation:new"), 1, "only an ace starts a foundation")

    def test_built_up_in_suit_by_anyone(self) -> None:
        state = deal({"nerts": ["AS", "3S"], "work": ["2H"]}, {"nerts": ["2S"]})
        state.apply(0, move("nerts", "foundation:new"), 1)
        illegal(state, 0, move("nerts", "foundation:0"), 2, "needs 2S next")
        illegal(state, 0, move("work:0", "foundation:0"), 2, "does not go on foundation:0 \\(spades\\)")
        assert legal_has(state, 1, move("nerts", "foundation:0"))
        state.apply(1, move("nerts", "foundation:0"), 3)
        state.apply(0, move("nerts", "foundation:0"), 4)
        assert [c["card"] for c in state.view(0)["foundations"][0]["cards"]] == ["AS", "2S", "3S"]

    def test_a_foundation_never_started_is_illegal(self) -> None:
        state = deal({"nerts": ["AS"]})
        illegal(state, 0, move("nerts", "foundation:0"), 1, "foundation:0 has not been started")
        state.apply(0, move("nerts", "foundation:new"), 1)
        illegal(state, 0, move("nerts", "foundation:7"), 2, "foundation:7 has not been started")
        illegal(state, 0, move("nerts", "foundation:x"), 2, "unknown pile")

    def test_finished_foundation_is_set_aside_keeps_its_id_and_scores(self) -> None:
        spades = ["AS", "2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S", "10S", "JS", "QS", "KS"]
        state = deal({"nerts": spades, "work": ["AH", "KD", "QC", "JH"]})
        state.apply(0, move("nerts", "foundation:new"), 1)
        for ms, _ in enumerate(spades[1:], start=2):
            events = state.apply(0, move("nerts", "foundation:0"), ms)
        assert events[1] == {"type": "finished", "foundation": 0}
        found = state.view(0)["foundations"][0]
        assert found["finished"] is True and len(found["cards"]) == 13
        assert state.scores() == [13]
        # the id is not reused: the next ace starts foundation 1
        assert state.apply(0, move("work:0", "foundation:new"), 100)[0]["to"] == "foundation:1"
        assert not any(a["to"] == "foundation:0" for a in state.legal_actions(0) if a["type"] == "move")

    def test_playable_cards_are_the_tops_only(self) -> None:
        state = deal({"nerts": ["KD"], "work": ["KS", "2D", "3D", "4D"], "stock": ["5D", "6D", "AS"]})
        state.apply(0, {"type": "flip"}, 1)  # waste top AS
        assert legal_has(state, 0, move("waste", "foundation:new"))
        illegal(state, 0, move("stock", "foundation:new"), 2, "unknown pile 'stock'")
        state.apply(0, move("waste", "foundation:new"), 2)
        # the waste's next card (6D) is not an ace; a deeper work card cannot be addressed
        illegal(state, 0, move("waste", "foundation:new"), 3, "only an ace")
        illegal(state, 0, move("work:0", "foundation:0", count=2), 3, "only one card at a time|only 1 card")


# --- Work piles ----------------------------------------------------------------------------------------------


class TestWorkPiles:
    def test_down_in_alternating_colours(self) -> None:
        state = deal({"nerts": ["9H", "9C"], "work": ["10S", "10H", "8C", "KD"]})
        illegal(state, 0, move("nerts", "work:1"), 1, "9H does not go on 10H")
        illegal(state, 0, move("nerts", "work:2"), 1, "9H does not go on 8C")
        assert legal_has(state, 0, move("nerts", "work:0"))
        state.apply(0, move("nerts", "work:0"), 1)
        state.apply(0, move("nerts", "work:1"), 2)
        assert layout(state)["work"][:2] == [["10S", "9H"], ["10H", "9C"]]

    def test_a_run_of_any_length_moves(self) -> None:
        state = deal({"nerts": ["QH", "JC"], "work": ["KS", "KC", "2D", "3D"]})
        state.apply(0, move("nerts", "work:0"), 1)
        state.apply(0, move("nerts", "work:0"), 2)  # work:0 = KS QH JC
        assert legal_has(state, 0, move("work:0", "work:1", count=2))
        illegal(state, 0, move("work:0", "work:1"), 3, "JC does not go on KC")
        illegal(state, 0, move("work:0", "work:1", count=3), 3, "KS does not go on KC")
        illegal(state, 0, move("work:0", "work:1", count=4), 3, "only 3 cards")
        state.apply(0, move("work:0", "work:1", count=2), 3)
        assert layout(state)["work"][:2] == [["KS"], ["KC", "QH", "JC"]]

    @pytest.mark.parametrize("count", [0, -1, "2", True, 1.5, None])
    def test_a_bad_count_is_malformed(self, count: Any) -> None:
        state = deal({"nerts": ["JC", "QH"], "work": ["KS", "KC", "2D", "3D"]})
        illegal(state, 0, move("work:0", "work:1", count=count), 1, "count must be")

    def test_count_only_from_a_work_pile(self) -> None:
        state = deal({"nerts": ["9H"], "work": ["10S", "10H", "8C", "KD"]})
        illegal(state, 0, move("nerts", "work:0", count=2), 1, "count is only for a run")
        state.apply(0, move("nerts", "work:0", count=1), 1)

    def test_an_empty_work_pile_takes_nerts_waste_or_a_run(self) -> None:
        state = deal({"nerts": ["5C", "6D"], "work": ["7S", "6H", "KD", "QC"], "stock": ["2S", "3S", "9D"]})
        state.apply(0, move("work:1", "work:0"), 1)  # work:1 empty
        assert layout(state)["work"][1] == []
        assert legal_has(state, 0, move("nerts", "work:1"))
        state.apply(0, move("nerts", "work:1"), 2)  # 5C fills it
        state.apply(0, move("work:1", "work:0"), 3)  # 7S 6H 5C, work:1 empty again
        assert legal_has(state, 0, move("work:0", "work:1", count=2))
        state.apply(0, move("work:0", "work:1", count=2), 4)  # a run into an empty pile
        assert layout(state)["work"][:2] == [["7S"], ["6H", "5C"]]
        state.apply(0, move("work:3", "work:2"), 5)  # QC on KD: work:3 empty
        # a whole pile into an empty pile changes nothing: not listed, but legal
        assert not legal_has(state, 0, move("work:2", "work:3", count=2))
        state.apply(0, move("work:2", "work:3", count=2), 6)
        state.apply(0, move("work:3", "work:2", count=2), 7)
        state.apply(0, {"type": "flip"}, 8)  # waste top 9D
        assert legal_has(state, 0, move("waste", "work:3"))
        state.apply(0, move("waste", "work:3"), 9)
        assert layout(state)["work"] == [["7S"], ["6H", "5C"], ["KD", "QC"], ["9D"]]

    def test_a_pile_cannot_move_onto_itself(self) -> None:
        state = deal({"work": ["7S", "6H", "KD", "QC"]})
        illegal(state, 0, move("work:1", "work:1"), 1, "already there")
        illegal(state, 0, move("work:1", "work:4"), 1, "no pile work:4")
        illegal(state, 0, move("work:9", "work:0"), 1, "no pile work:9")
        illegal(state, 0, move("pile", "work:0"), 1, "unknown pile 'pile'")
        illegal(state, 0, move(3, "work:0"), 1, "must be a pile name")
        illegal(state, 0, move("work:1", None), 1, "must be a pile name")

    def test_slide_under_needs_an_empty_work_pile(self) -> None:
        state = deal({"nerts": ["10D", "10H"], "work": ["9S", "8H", "KD", "QC"]})
        illegal(
            state, 0, {"type": "under", "from": "nerts", "to": "work:0"}, 1, "only while you have an empty"
        )
        state.apply(0, move("work:1", "work:0"), 1)  # work:0 = 9S 8H, work:1 empty
        assert legal_has(state, 0, {"type": "under", "from": "nerts", "to": "work:0"})
        events = state.apply(0, {"type": "under", "from": "nerts", "to": "work:0"}, 2)
        assert events[0]["type"] == "slid_under" and events[0]["card"] == "10D"
        assert layout(state)["work"][0] == ["10D", "9S", "8H"]
        illegal(state, 0, {"type": "under", "from": "nerts", "to": "work:0"}, 3, "10H does not go under 10D")
        illegal(state, 0, {"type": "under", "from": "nerts", "to": "work:1"}, 3, "work:1 is empty")
        illegal(state, 0, {"type": "under", "from": "work:0", "to": "work:0"}, 3, "its own pile")
        illegal(
            state, 0, {"type": "under", "from": "nerts", "to": "work:0", "count": 1}, 3, "unexpected field"
        )

    def test_slide_under_from_waste_and_from_a_work_top(self) -> None:
        state = deal({"nerts": ["2C"], "work": ["9S", "8H", "JC", "QD"], "stock": ["3S", "4S", "10H"]})
        state.apply(0, move("work:1", "work:0"), 1)
        state.apply(0, {"type": "flip"}, 2)  # waste top 10H
        state.apply(0, {"type": "under", "from": "waste", "to": "work:0"}, 3)
        assert layout(state)["work"][0] == ["10H", "9S", "8H"]
        state.apply(0, {"type": "under", "from": "work:2", "to": "work:0"}, 4)  # JC under 10H
        assert layout(state)["work"][0] == ["JC", "10H", "9S", "8H"]
        state.apply(0, {"type": "under", "from": "work:3", "to": "work:0"}, 5)  # QD under JC
        assert layout(state)["work"] == [["QD", "JC", "10H", "9S", "8H"], [], [], []]

    def test_the_top_of_a_work_pile_goes_to_a_foundation(self) -> None:
        state = deal({"work": ["AD", "2D", "3C", "4C"]})
        state.apply(0, move("work:0", "foundation:new"), 1)
        state.apply(0, move("work:1", "foundation:0"), 2)
        assert layout(state)["work"] == [[], [], ["3C"], ["4C"]]

    def test_you_never_act_on_another_layout(self) -> None:
        state = deal({"nerts": ["9H"], "work": ["10S"]}, {"nerts": ["9D"], "work": ["10C"]})
        before = layout(state, 1)
        state.apply(0, move("nerts", "work:0"), 1)
        assert layout(state, 1) == before
        assert layout(state, 0)["work"][0] == ["10S", "9H"]
        illegal(state, 0, move("nerts", "work:0"), 2, "does not go on 9H")


# --- Nerts pile ---------------------------------------------------------------------------------------------


class TestNertsPile:
    def test_only_the_top_plays_and_the_next_turns_up(self) -> None:
        state = deal({"nerts": ["AS", "7D"]})
        illegal(state, 0, move("nerts", "foundation:new", count=2), 1, "count is only for a run")
        events = state.apply(0, move("nerts", "foundation:new"), 1)
        assert events[1] == {"type": "revealed", "pack": 0, "card": "7D"}
        assert layout(state)["nerts"] == {"count": 12, "top": "7D"}

    def test_nerts_pile_top_to_a_work_pile_and_an_empty_one(self) -> None:
        state = deal({"nerts": ["9H", "QS"], "work": ["10S", "KD", "AC", "2C"]})
        state.apply(0, move("nerts", "work:0"), 1)
        state.apply(0, move("work:2", "foundation:new"), 2)
        state.apply(0, move("nerts", "work:2"), 3)
        assert layout(state)["work"][:3] == [["10S", "9H"], ["KD"], ["QS"]]


# --- Stock and waste ------------------------------------------------------------------------------------------


class TestStockAndWaste:
    def test_flip_three_puts_the_third_on_top(self) -> None:
        state = deal({"stock": ["2H", "5C", "3H", "4D", "9C"]})
        events = state.apply(0, {"type": "flip"}, 1)
        assert events == [
            {
                "type": "flipped",
                "seat": 0,
                "pack": 0,
                "waste_top": "3H",
                "stock_count": 32,
                "turned_over": False,
            }
        ]
        assert layout(state)["waste"] == {"count": 3, "top": "3H"}

    def test_flip_one(self) -> None:
        state = deal({"stock": ["2H", "5C"]}, flip_count=1)
        state.apply(0, {"type": "flip"}, 1)
        assert layout(state)["waste"] == {"count": 1, "top": "2H"}
        state.apply(0, {"type": "flip"}, 2)
        assert layout(state)["waste"] == {"count": 2, "top": "5C"}

    def test_fewer_left_turns_what_is_left_and_then_the_waste_turns_over(self) -> None:
        state = deal({"nerts": [], "stock": ["2H", "5C", "3H", "4D"]}, nerts_pile_size=13, work_piles=4)
        pack = layout(state)
        assert pack["stock"]["count"] == 35
        tops = []
        for ms in range(1, 13):
            tops.append(state.apply(0, {"type": "flip"}, ms)[0]["waste_top"])
        assert layout(state)["stock"]["count"] == 0 and layout(state)["waste"]["count"] == 35
        events = state.apply(0, {"type": "flip"}, 20)
        assert events[0]["turned_over"] is True and events[0]["waste_top"] is None
        assert layout(state)["stock"]["count"] == 35
        again = [state.apply(0, {"type": "flip"}, 21 + i)[0]["waste_top"] for i in range(12)]
        assert again == tops  # the same order comes round again

    def test_flip_with_nothing_left_is_illegal(self) -> None:
        suits = [
            r + s for s in "SH" for r in ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
        ]
        state = deal({"stock": suits}, nerts_pile_size=20, work_piles=6, flip_count=1)
        ms = 0
        for i, card in enumerate(suits):
            ms += 1
            assert state.apply(0, {"type": "flip"}, ms)[0]["waste_top"] == card
            ms += 1
            state.apply(0, move("waste", "foundation:new" if i % 13 == 0 else f"foundation:{i // 13}"), ms)
        assert layout(state)["stock"]["count"] == 0 and layout(state)["waste"]["count"] == 0
        assert {"type": "flip"} not in state.legal_actions(0)
        illegal(state, 0, {"type": "flip"}, ms, "nothing to flip")
        illegal(state, 0, move("waste", "work:0"), ms, "waste is empty")

    def test_only_the_waste_top_plays(self) -> None:
        state = deal({"stock": ["2H", "5C", "AH"]})
        state.apply(0, {"type": "flip"}, 1)
        illegal(state, 0, move("waste", "foundation:new", count=2), 2, "count is only for a run")
        state.apply(0, move("waste", "foundation:new"), 2)
        assert layout(state)["waste"] == {"count": 2, "top": "5C"}


# --- Nobody is forced to play -------------------------------------------------------------------------------


class TestNobodyIsForced:
    def test_holding_back_and_declaring_stuck_with_moves_left_are_allowed(self) -> None:
        state = deal({"nerts": ["AS"]})
        legal = state.legal_actions(0)
        assert move("nerts", "foundation:new") in legal and {"type": "flip"} in legal
        state.apply(0, {"type": "flip"}, 1)
        state.apply(0, {"type": "stuck"}, 2)  # a rotate follows: the only seat is stuck
        assert layout(state)["nerts"]["top"] == "AS"


# --- Simultaneous play and conflicts -------------------------------------------------------------------------


class TestSimultaneousPlay:
    def race(self, **opts: Any) -> NertsState:
        state = deal({"nerts": ["AS", "2S", "3S"]}, {"nerts": ["2S", "3S"]}, **opts)
        state.apply(0, move("nerts", "foundation:new"), 10)
        state.apply(0, move("nerts", "foundation:0"), 100)
        return state

    def test_the_first_to_arrive_plays_the_other_is_rejected(self) -> None:
        state = self.race()
        assert move("nerts", "foundation:0") not in state.legal_actions(1, 201)
        illegal(state, 1, move("nerts", "foundation:0"), 201, "that foundation has moved on")

    def test_a_tie_within_the_window_inclusive_plays_and_both_score(self) -> None:
        state = self.race()
        assert move("nerts", "foundation:0") in state.legal_actions(1, 200)
        assert move("nerts", "foundation:0") not in state.legal_actions(1, 201)
        state.apply(1, move("nerts", "foundation:0"), 200)
        cards = state.view(0)["foundations"][0]["cards"]
        assert cards[1:] == [{"card": "2S", "pack": 0}, {"card": "2S", "pack": 1}]
        # both count, and the foundation goes on from the tied rank
        assert state.scores() == [2 - 2 * 11, 1 - 2 * 12]
        state.apply(0, move("nerts", "foundation:0"), 300)
        assert state.view(0)["foundations"][0]["cards"][-1] == {"card": "3S", "pack": 0}

    def test_the_window_can_be_turned_off(self) -> None:
        state = self.race(tie_window_ms=0)
        assert move("nerts", "foundation:0") not in state.legal_actions(1, 100)
        illegal(state, 1, move("nerts", "foundation:0"), 100, "that foundation has moved on")

    def test_a_tie_needs_a_different_pack(self) -> None:
        state = deal({"nerts": ["AS", "2S", "JK1"]}, jokers=True)
        state.apply(0, move("nerts", "foundation:new"), 10)
        state.apply(0, move("nerts", "foundation:0"), 20)
        assert {"type": "move", "from": "nerts", "to": "foundation:0", "as": "2S"} not in state.legal_actions(
            0
        )
        illegal(state, 0, move("nerts", "foundation:0", **{"as": "2S"}), 30, "that foundation has moved on")


# --- Calling Nerts, and the end of a hand --------------------------------------------------------------------


def emptied(**opts: Any) -> NertsState:
    """Seat 0 has played its whole five-card Nerts pile (AS to 5S) by 50 ms; seat 1 has not started."""
    state = deal(
        {"nerts": ["AS", "2S", "3S", "4S", "5S"]},
        {"nerts": ["AH"], "stock": ["2C", "3C", "4C"]},
        nerts_pile_size=5,
        **opts,
    )
    state.apply(0, move("nerts", "foundation:new"), 10)
    for ms in (20, 30, 40, 50):
        state.apply(0, move("nerts", "foundation:0"), ms)
    return state


class TestCallingNerts:
    def test_only_with_an_empty_nerts_pile(self) -> None:
        state = deal({"nerts": ["AS"]}, {}, nerts_pile_size=5)
        assert {"type": "nerts"} not in state.legal_actions(0)
        illegal(state, 0, {"type": "nerts"}, 1, "your Nerts pile still has 5 cards")

    def test_not_obliged_to_call(self) -> None:
        state = emptied()
        legal = state.legal_actions(0)
        assert {"type": "nerts"} in legal and {"type": "flip"} in legal
        state.apply(0, {"type": "flip"}, 60)
        assert state.called is None and not state.is_over

    def test_a_call_then_the_in_flight_window_then_end_hand(self) -> None:
        state = emptied(nerts_bonus=10)
        assert state.apply(0, {"type": "nerts"}, 1000) == [{"type": "nerts", "seat": 0}]
        assert state.view(1)["called"] == 0
        assert state.clock_action() == (1150, {"type": "end_hand", "reason": "nerts"})
        assert state.scores() == [5, -10]  # no bonus before the hand is over
        illegal(state, 1, {"type": "nerts"}, 1100, "already been called")
        state.apply(1, move("nerts", "foundation:new"), 1150)  # in flight: still applied
        assert state.legal_actions(1, 1151) == []
        illegal(state, 1, {"type": "flip"}, 1151, "the hand is over")
        events = state.apply(None, {"type": "end_hand", "reason": "nerts"}, 1150)
        assert events == [{"type": "hand_over", "reason": "nerts", "scores": [15, 1 - 8]}]
        assert state.is_over and state.ended == "nerts" and state.to_act() == []
        assert state.clock_action() is None
        assert state.legal_actions(0) == []
        illegal(state, 1, {"type": "flip"}, 1150, "the hand is over")
        illegal(state, None, {"type": "end_hand", "reason": "stalled"}, 1200, "the hand is over")

    def test_auto_nerts_calls_when_the_pile_empties(self) -> None:
        state = deal({"nerts": ["AS", "2S", "3S", "4S", "5S"]}, {}, nerts_pile_size=5, auto_nerts=True)
        state.apply(0, move("nerts", "foundation:new"), 10)
        for ms in (20, 30, 40):
            state.apply(0, move("nerts", "foundation:0"), ms)
        events = state.apply(0, move("nerts", "foundation:0"), 50)
        assert events[-1] == {"type": "nerts", "seat": 0}
        assert state.called == 0 and state.clock_action() == (200, {"type": "end_hand", "reason": "nerts"})

    def test_the_finished_view_reveals_everything(self) -> None:
        state = emptied()
        state.apply(0, {"type": "nerts"}, 60)
        in_play = state.view(1)["layouts"][1]
        assert set(in_play) == {"pack", "seats", "nerts", "work", "stock", "waste", "stuck"}
        state.apply(None, {"type": "end_hand", "reason": "nerts"}, 210)
        lay = state.view(1)["layouts"][1]
        pack = layout_pack(nerts=["AH"], stock=["2C", "3C", "4C"], nerts_pile_size=5)
        assert lay["nerts_cards"] == pack[:5]
        assert lay["stock_cards"] == pack[9:]
        assert lay["waste_cards"] == []

    def test_table_actions_are_the_tables_only(self) -> None:
        state = deal({}, {})
        illegal(state, None, {"type": "end_hand", "reason": "nerts"}, 1, "nobody has called Nerts")
        illegal(state, None, {"type": "end_hand", "reason": "stuck"}, 1, "reason must be")
        illegal(state, None, {"type": "end_hand"}, 1, "reason must be")
        illegal(state, None, {"type": "flip"}, 1, "the table \\(seat null\\) may only")
        illegal(state, 0, {"type": "rotate"}, 1, "only the table")
        illegal(state, 0, {"type": "end_hand", "reason": "stalled"}, 1, "only the table")
        illegal(state, 2, {"type": "flip"}, 1, "no seat 2")
        illegal(state, -1, {"type": "flip"}, 1, "no seat -1")
        illegal(state, 0, {"type": "dance"}, 1, "unknown action type 'dance'")
        illegal(state, 0, {"kind": "flip"}, 1, "unknown action type None")
        illegal(state, 0, {"type": "flip", "count": 3}, 1, "unexpected field 'count'")
        illegal(state, 0, ["flip"], 1, "an action is an object")  # type: ignore[arg-type]
        state.apply(0, {"type": "flip"}, 100)
        illegal(state, 0, {"type": "flip"}, 99, "time went backwards")
        illegal(state, 0, {"type": "flip"}, "100", "ms must be")  # type: ignore[arg-type]
        state.apply(None, {"type": "end_hand", "reason": "stalled"}, 100)
        assert state.ended == "stalled"


class TestStuck:
    def test_stuck_is_cleared_by_a_move_not_by_a_flip_or_cycle(self) -> None:
        state = deal({"nerts": ["AS"]}, {})
        state.apply(0, {"type": "stuck"}, 1)
        assert layout(state)["stuck"] is True
        illegal(state, 0, {"type": "stuck"}, 2, "already declared")
        assert {"type": "cycle"} in state.legal_actions(0) and {"type": "stuck"} not in state.legal_actions(0)
        state.apply(0, {"type": "flip"}, 2)
        state.apply(0, {"type": "cycle"}, 3)
        assert layout(state)["stuck"] is True
        state.apply(0, move("nerts", "foundation:new"), 4)
        assert layout(state)["stuck"] is False

    def test_cycle_only_while_stuck_moves_the_stock_top_to_the_bottom(self) -> None:
        state = deal({"stock": ["2H", "5C", "9D"]}, {}, flip_count=1)
        illegal(state, 0, {"type": "cycle"}, 1, "only while stuck")
        state.apply(0, {"type": "stuck"}, 1)
        assert state.apply(0, {"type": "cycle"}, 2) == [{"type": "cycled", "seat": 0, "pack": 0}]
        assert state.apply(0, {"type": "flip"}, 3)[0]["waste_top"] == "5C"
        assert state.apply(0, {"type": "flip"}, 4)[0]["waste_top"] == "9D"
        for ms in range(5, 38):
            state.apply(0, {"type": "flip"}, ms)
        assert layout(state)["waste"]["top"] == "2H"  # 2H came round last
        illegal(state, 0, {"type": "cycle"}, 40, "stock is empty")

    def test_all_stuck_rotates_in_the_exact_order(self) -> None:
        state = deal({"stock": ["2H", "5C", "9D", "4S"]}, {}, flip_count=1)
        for ms in (1, 2, 3):
            state.apply(0, {"type": "flip"}, ms)  # waste 2H 5C 9D, stock 4S ...
        state.apply(0, {"type": "stuck"}, 4)
        events = state.apply(1, {"type": "stuck"}, 5)
        assert events == [{"type": "stuck", "seat": 1, "pack": 1}, {"type": "rotated", "by": "stuck"}]
        lay = layout(state)
        assert lay["stuck"] is False and lay["waste"] == {"count": 0, "top": None}
        assert lay["stock"]["count"] == 35
        # new stock: 2H 5C 9D 4S ... then its top (2H) to the bottom
        tops = [state.apply(0, {"type": "flip"}, 10 + i)[0]["waste_top"] for i in range(35)]
        assert tops[:3] == ["5C", "9D", "4S"] and tops[-1] == "2H"

    def test_stuck_again_with_no_move_ends_the_hand(self) -> None:
        state = deal({"nerts": ["AS"]}, {})
        state.apply(0, {"type": "stuck"}, 1)
        state.apply(1, {"type": "stuck"}, 2)  # rotate
        state.apply(0, {"type": "stuck"}, 3)
        events = state.apply(1, {"type": "stuck"}, 4)
        assert events[-1]["type"] == "hand_over" and events[-1]["reason"] == "stuck"
        assert state.ended == "stuck"

    def test_a_move_since_the_rotate_means_another_rotate(self) -> None:
        state = deal({"nerts": ["AS"]}, {})
        state.apply(0, {"type": "stuck"}, 1)
        state.apply(1, {"type": "stuck"}, 2)  # rotate
        state.apply(0, move("nerts", "foundation:new"), 3)
        state.apply(0, {"type": "stuck"}, 4)
        assert state.apply(1, {"type": "stuck"}, 5)[-1] == {"type": "rotated", "by": "stuck"}
        assert not state.is_over

    def test_the_stall_guard_rotate_counts_as_the_last_rotate(self) -> None:
        state = deal({}, {})
        assert state.clock_action() == (70000, {"type": "rotate"})
        assert state.apply(None, {"type": "rotate"}, 70000) == [{"type": "rotated", "by": "stall"}]
        assert state.clock_action() == (140000, {"type": "rotate"})
        state.apply(0, {"type": "stuck"}, 70001)
        assert state.apply(1, {"type": "stuck"}, 70002)[-1]["reason"] == "stuck"
        illegal(state, None, {"type": "rotate"}, 80000, "the hand is over")
        illegal(state, None, {"type": "rotate", "by": "me"}, 80000, "the hand is over")

    def test_the_stall_guard_counts_from_the_last_progress(self) -> None:
        state = deal({"nerts": ["AS", "2D"], "work": ["AH"]}, stall_seconds=10)
        assert state.clock_action() == (20000, {"type": "rotate"})
        state.apply(0, move("work:0", "foundation:new"), 500)  # a card to a foundation
        assert state.clock_action() == (20500, {"type": "rotate"})
        state.apply(0, move("nerts", "work:0"), 900)  # a card off the Nerts pile
        assert state.clock_action() == (20900, {"type": "rotate"})
        state.apply(0, {"type": "flip"}, 1000)  # not progress
        assert state.clock_action() == (20900, {"type": "rotate"})


# --- Scoring ---------------------------------------------------------------------------------------------------


class TestScoring:
    def test_own_cards_in_foundations_less_the_nerts_penalty(self) -> None:
        state = deal({"nerts": ["AS", "2S"]}, {"nerts": ["3S"]})
        state.apply(0, move("nerts", "foundation:new"), 1)
        state.apply(0, move("nerts", "foundation:0"), 2)
        state.apply(1, move("nerts", "foundation:0"), 3)
        assert state.scores() == [2 - 2 * 11, 1 - 2 * 12]

    @pytest.mark.parametrize(("penalty", "bonus"), [(0, 0), (5, 20)])
    def test_penalty_and_bonus_follow_the_options(self, penalty: int, bonus: int) -> None:
        state = emptied(nerts_penalty=penalty, nerts_bonus=bonus)
        state.apply(0, {"type": "nerts"}, 60)
        state.apply(None, {"type": "end_hand", "reason": "nerts"}, 210)
        assert state.scores() == [5 + bonus, -5 * penalty]

    def test_a_stalled_hand_has_no_bonus(self) -> None:
        state = emptied(nerts_bonus=10)
        state.apply(None, {"type": "end_hand", "reason": "stalled"}, 60)
        assert state.scores() == [5, -10]


class TestMatch:
    def solo_hand(self, match: NertsMatch, cards: list[str]) -> None:
        state = match.start_hand({"packs": [layout_pack(nerts=cards)] * match.options.layouts})
        state.apply(0, move("nerts", "foundation:new"), 1)
        for ms in range(2, len(cards) + 1):
            state.apply(0, move("nerts", "foundation:0"), ms)
        state.apply(None, {"type": "end_hand", "reason": "stalled"}, 100)

    def tied_hand(self, match: NertsMatch) -> None:
        """A hand of two seats that each play an ace and a two of their own suit to a foundation, then stall: 2
        points each."""
        state = match.start_hand(
            {"packs": [layout_pack(nerts=["AS", "2S"]), layout_pack(nerts=["AH", "2H"])]}
        )
        for seat in (0, 1):
            state.apply(seat, move("nerts", "foundation:new"), seat * 10 + 1)
            state.apply(seat, move("nerts", f"foundation:{seat}"), seat * 10 + 2)
        state.apply(None, {"type": "end_hand", "reason": "stalled"}, 30)

    def test_hands_until_the_target_with_a_unique_top(self) -> None:
        match = NertsMatch(NertsOptions(players=2, target_score=10, nerts_penalty=0))
        spades = ["AS", "2S", "3S", "4S", "5S", "6S"]
        with pytest.raises(ValueError, match="no hand has ended"):
            match.finish_hand()
        self.solo_hand(match, spades)
        with pytest.raises(ValueError, match="not been finished"):
            match.start_hand(match.deal_cards(1))
        assert match.finish_hand().scores == [6, 0]
        with pytest.raises(ValueError, match="already been scored"):
            match.finish_hand()
        assert not match.is_over and match.winners() is None
        self.solo_hand(match, spades)
        match.finish_hand()
        assert match.totals == [12, 0] and match.is_over and match.winners() == [0]
        with pytest.raises(ValueError, match="the match is over"):
            match.start_hand(match.deal_cards(2))

    def test_a_tie_at_the_top_plays_another_hand(self) -> None:
        match = NertsMatch(NertsOptions(players=2, target_score=10, nerts_penalty=0))
        self.tied_hand(match)
        match.totals = [8, 8]  # as if earlier hands had been played
        match.finish_hand()
        assert match.totals == [10, 10] and not match.is_over and match.winners() is None

    def test_a_hands_limit_ends_the_match_below_the_target(self) -> None:
        """Rules, "Scoring": with ``hands`` 1 the match is over after one hand, won by the highest total even far
        below ``target_score``; without the limit the same hand leaves the match going on."""
        for hands, over in ((0, False), (1, True)):
            match = NertsMatch(NertsOptions(players=2, target_score=100, nerts_penalty=0, hands=hands))
            self.solo_hand(match, ["AS", "2S", "3S"])
            match.finish_hand()
            assert match.totals == [3, 0] and match.is_over is over
            assert match.winners() == ([0] if over else None)
        with pytest.raises(ValueError, match="the match is over"):
            match.start_hand(match.deal_cards(2))

    def test_a_tie_at_the_hands_limit_is_a_shared_win(self) -> None:
        """Rules, "Scoring": a tie at the top when the ``hands`` limit ends the match is shared, not played on."""
        match = NertsMatch(NertsOptions(players=2, target_score=10, nerts_penalty=0, hands=2))
        for totals, over in (([2, 2], False), ([4, 4], True)):
            self.tied_hand(match)
            match.finish_hand()
            assert match.totals == totals and match.is_over is over
        assert match.winners() == [0, 1]

    def test_partners_win_together(self) -> None:
        match = NertsMatch(NertsOptions(players=4, partnerships=True, target_score=10, nerts_penalty=0))
        self.solo_hand(match, ["AS", "2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S", "10S"])
        result = match.finish_hand()
        assert result.scores == [10, 0, 10, 0]
        assert match.totals == [10, 0, 10, 0] and match.winners() == [0, 2]


# --- Jokers ------------------------------------------------------------------------------------------------------


class TestJokers:
    def test_two_per_pack(self) -> None:
        match = NertsMatch(NertsOptions(players=2, jokers=True))
        packs = match.deal_cards(4)["packs"]
        assert all(len(p) == 54 and "JK1" in p and "JK2" in p for p in packs)

    def test_a_joker_on_a_work_pile_is_fixed_by_its_neighbours(self) -> None:
        state = deal({"nerts": ["JK1", "7H", "7C"], "work": ["9S", "AD", "9H", "9C"]}, jokers=True)
        state.apply(0, move("nerts", "work:0"), 1)  # JK1 stands for a red 8
        assert layout(state)["work"][0] == ["9S", "JK1"]
        illegal(state, 0, move("nerts", "work:0"), 2, "7H does not go on JK1")
        state.apply(0, move("work:1", "foundation:new"), 2)
        state.apply(0, move("nerts", "work:1"), 3)  # 7H into the empty pile
        state.apply(0, move("nerts", "work:0"), 4)  # 7C on the red-8 joker
        assert layout(state)["work"][0] == ["9S", "JK1", "7C"]
        # the run JK1 7C is a red 8 then a black 7: it goes on a black 9, not a red one
        illegal(state, 0, move("work:0", "work:2", count=2), 5, "JK1 does not go on 9H")
        assert legal_has(state, 0, move("work:0", "work:3", count=2))
        state.apply(0, move("work:0", "work:3", count=2), 5)
        assert layout(state)["work"][3] == ["9C", "JK1", "7C"]

    def test_a_joker_cannot_go_below_an_ace_or_above_a_king(self) -> None:
        state = deal({"nerts": ["JK1", "KS"], "work": ["AS", "2D", "3C", "4H"]}, jokers=True)
        illegal(state, 0, move("nerts", "work:0"), 1, "JK1 does not go on AS")
        state.apply(0, move("work:0", "foundation:new"), 1)
        state.apply(0, move("nerts", "work:0"), 2)  # a lone joker
        illegal(state, 0, move("nerts", "work:0"), 3, "KS does not go on JK1")

    def test_a_joker_slides_under(self) -> None:
        state = deal({"nerts": ["JK2"], "work": ["AS", "9D", "3C", "4H"]}, jokers=True)
        state.apply(0, move("work:0", "foundation:new"), 1)
        state.apply(0, {"type": "under", "from": "nerts", "to": "work:1"}, 2)
        assert layout(state)["work"][1] == ["JK2", "9D"]

    def test_on_a_foundation_a_joker_is_declared(self) -> None:
        state = deal({"nerts": ["JK1", "AS", "JK2"], "work": ["3S", "2S", "KD", "QC"]}, jokers=True)
        illegal(state, 0, move("nerts", "foundation:new"), 1, "say what it stands for")
        illegal(state, 0, move("nerts", "foundation:new", **{"as": "2S"}), 1, "only an ace starts")
        illegal(state, 0, move("nerts", "foundation:new", **{"as": "JK2"}), 1, "must name a standard card")
        illegal(state, 0, move("nerts", "foundation:new", **{"as": "ZZ"}), 1, "'as': bad card code")
        new = [a for a in state.legal_actions(0) if a["type"] == "move" and a["to"] == "foundation:new"]
        assert [a["as"] for a in new] == ["AS", "AH", "AD", "AC"]
        events = state.apply(0, move("nerts", "foundation:new", **{"as": "AH"}), 1)
        assert events[0]["as"] == "AH" and events[0]["cards"] == ["JK1"]
        assert state.view(0)["foundations"][0] == {
            "id": 0,
            "suit": "H",
            "cards": [{"card": "JK1", "as": "AH", "pack": 0}],
            "finished": False,
        }
        state.apply(0, move("nerts", "foundation:new"), 2)  # AS
        legal = state.legal_actions(0)
        assert move("nerts", "foundation:0", **{"as": "2H"}) in legal
        assert move("nerts", "foundation:1", **{"as": "2S"}) in legal
        illegal(state, 0, move("nerts", "foundation:1", **{"as": "3S"}), 3, "needs 2S next")
        state.apply(0, move("nerts", "foundation:1", **{"as": "2S"}), 3)
        state.apply(0, move("work:0", "foundation:1"), 4)  # 3S follows the declared 2S
        illegal(state, 0, move("work:1", "foundation:1"), 5, "that foundation has moved on")
        illegal(state, 0, move("work:2", "foundation:1", **{"as": "4S"}), 5, "'as' is only for a joker")
        illegal(state, 0, move("work:2", "work:3", **{"as": "4S"}), 5, "'as' is only for a joker")
        # jokers count like any card: four of pack 0 in foundations, ten cards left in its Nerts pile
        assert state.scores() == [4 - 2 * 10]

    def test_a_joker_left_in_the_nerts_pile_is_a_penalty_card(self) -> None:
        state = deal({"nerts": ["AS", "JK1"]}, nerts_pile_size=5, jokers=True)
        state.apply(0, move("nerts", "foundation:new"), 1)
        assert layout(state)["nerts"] == {"count": 4, "top": "JK1"}
        assert state.scores() == [1 - 2 * 4]


def test_the_state_and_match_follow_the_engine_protocols() -> None:
    from cardtable.engine import HandState

    match = NertsMatch(NertsOptions(players=2))
    state = match.start_hand({"seed": 1})
    assert isinstance(state, HandState)
    assert match.hand is state and state.players == 2
    assert state.to_act() == [0, 1]
    assert state.legal_actions(5) == [] and state.legal_actions(None) == []  # type: ignore[arg-type]
    assert state.events_for([{"type": "stuck", "seat": 0, "pack": 0}], 1) == [
        {"type": "stuck", "seat": 0, "pack": 0}
    ]


@pytest.mark.parametrize(
    "options",
    [
        {"players": 4},
        {"players": 2, "jokers": True, "auto_nerts": True, "nerts_pile_size": 5, "flip_count": 1},
    ],
)
def test_play_changes_the_hand_as_apply_does_and_refuses_the_same(options: dict[str, Any]) -> None:
    """``play`` (what the simulator calls: no events) makes the changes ``apply`` makes and refuses what it refuses,
    with the same code, changing nothing then."""
    from cardtable import records
    from cardtable.bots.nerts import GreedyBot
    from cardtable.sim.nerts import play_hand

    match = NertsMatch(NertsOptions.from_dict(options))
    record = records.new_record("nerts", [records.Seat(name=str(s)) for s in range(match.players)], options)
    play_hand(match, [GreedyBot(s) for s in range(match.players)], 4, record)
    hand = record.hands[0]
    applied, played = (NertsMatch(match.options).start_hand(hand.deal) for _ in range(2))
    refusals = 0
    for entry in hand.actions:
        for wrong in (
            {"type": "move", "from": "work:0", "to": "work:0"},
            {"type": "move", "from": "nerts", "to": "foundation:63"},
        ):
            if entry.seat is None:
                break
            codes = []
            for state in (applied, played):
                before = state.snapshot()
                with pytest.raises(IllegalAction) as refused:
                    (state.apply if state is applied else state.play)(entry.seat, wrong, entry.ms)
                assert state.snapshot() == before
                codes.append(refused.value.code)
            assert codes[0] == codes[1]
            refusals += 1
        events = applied.apply(entry.seat, entry.action, entry.ms)
        assert played.play(entry.seat, entry.action, entry.ms) is None
        assert events
        assert played.snapshot() == applied.snapshot()
        assert played.view(0) == applied.view(0)
        assert played.legal_actions(0, entry.ms) == applied.legal_actions(0, entry.ms)
    assert applied.is_over and played.scores() == applied.scores() and refusals > 20


class TestDecisions:
    """The points docs/views-nerts.md decides where the rules are silent."""

    def test_ties_chain_from_the_current_top(self) -> None:
        state = deal({"nerts": ["AS", "2S"]}, {"nerts": ["2S"]}, {"nerts": ["2S"]})
        state.apply(0, move("nerts", "foundation:new"), 10)
        state.apply(0, move("nerts", "foundation:0"), 100)
        state.apply(1, move("nerts", "foundation:0"), 190)
        state.apply(2, move("nerts", "foundation:0"), 290)  # within the window of pack 1's 2S
        assert [c["pack"] for c in state.view(None)["foundations"][0]["cards"]] == [0, 0, 1, 2]

    def test_two_kings_at_once_both_play_on_a_finished_foundation(self) -> None:
        spades = ["AS", "2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S", "10S", "JS", "QS", "KS"]
        state = deal({"nerts": spades}, {"work": ["KS"]})
        for i in range(13):
            state.apply(0, move("nerts", "foundation:new" if i == 0 else "foundation:0"), 10 * (i + 1))
        assert state.view(None)["foundations"][0]["finished"] is True
        assert move("work:0", "foundation:0") in state.legal_actions(1, 230)
        state.apply(1, move("work:0", "foundation:0"), 230)
        assert state.scores()[1] == 1 - 2 * 13
        assert state.view(None)["foundations"][0]["finished"] is True

    def test_partners_share_the_stuck_mark(self) -> None:
        state = deal({}, {}, players=4, partnerships=True)
        state.apply(0, {"type": "stuck"}, 1)
        illegal(state, 2, {"type": "stuck"}, 2, "already declared")
        assert state.apply(2, {"type": "cycle"}, 2)[0]["seat"] == 2
        assert state.apply(1, {"type": "stuck"}, 3)[-1] == {"type": "rotated", "by": "stuck"}

    def test_a_rotate_restarts_the_stall_timer(self) -> None:
        state = deal({}, {})
        state.apply(0, {"type": "stuck"}, 5000)
        state.apply(1, {"type": "stuck"}, 6000)
        assert state.clock_action() == (76000, {"type": "rotate"})

    def test_earlier_views_do_not_change(self) -> None:
        import copy

        state = deal({"nerts": ["AS", "2S"]}, {})
        before = state.view(0)
        frozen = copy.deepcopy(before)
        state.apply(0, move("nerts", "foundation:new"), 1)
        state.apply(0, move("nerts", "foundation:0"), 2)
        state.apply(0, {"type": "flip"}, 3)
        state.apply(None, {"type": "end_hand", "reason": "stalled"}, 4)
        assert before == frozen
        assert state.view(0) != frozen
