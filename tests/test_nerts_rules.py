"""cardtable.games.nerts: one test group per section of shared/rules/nerts.md, each rule legal and illegal."""

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
