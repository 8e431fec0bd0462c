"""cardtable.games.nerts options, deals and registration (rules: "Options (defaults)", "Players and packs")."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from cardtable.games import get_game
from cardtable.games.nerts import OPTION_SPECS, NertsMatch, NertsOptions, layout_pack, seed_packs


def test_defaults_match_the_rules_table() -> None:
    assert NertsOptions.from_dict({}).to_dict() == {
        "players": 4,
        "partnerships": False,
        "nerts_pile_size": 13,
        "work_piles": 4,
        "flip_count": 3,
        "nerts_penalty": 2,
        "nerts_bonus": 0,
        "target_score": 100,
        "hands": 0,
        "jokers": False,
        "auto_nerts": False,
        "tie_window_ms": 100,
        "in_flight_ms": 150,
        "stall_seconds": 60,
        "deals": "fresh",
    }


def test_option_specs_cover_every_option_with_its_default() -> None:
    defaults = NertsOptions().to_dict()
    assert [spec.name for spec in OPTION_SPECS] == [f.name for f in fields(NertsOptions)]
    for spec in OPTION_SPECS:
        assert spec.default == defaults[spec.name]
        assert spec.to_dict()["name"] == spec.name


def test_round_trip() -> None:
    options = NertsOptions.from_dict({"players": 6, "partnerships": True, "flip_count": 1, "jokers": True})
    assert NertsOptions.from_dict(options.to_dict()) == options
    assert options.layouts == 3


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"colour": 1}, "colour: unknown Nerts option"),
        ({"players": 9}, "players: must be 1 to 8, not 9"),
        ({"players": 0}, "players: must be 1 to 8"),
        ({"players": "4"}, "players: must be a whole number"),
        ({"players": True}, "players: must be a whole number"),
        ({"players": 4.0}, "players: must be a whole number"),
        ({"nerts_pile_size": 4}, "nerts_pile_size: must be 5 to 20"),
        ({"nerts_pile_size": 21}, "nerts_pile_size"),
        ({"work_piles": 2}, "work_piles: must be 3 to 6"),
        ({"work_piles": 7}, "work_piles"),
        ({"flip_count": 2}, "flip_count: must be 1 or 3, not 2"),
        ({"nerts_penalty": 6}, "nerts_penalty: must be 0 to 5"),
        ({"nerts_penalty": -1}, "nerts_penalty"),
        ({"nerts_bonus": 21}, "nerts_bonus: must be 0 to 20"),
        ({"target_score": 9}, "target_score: must be 10 to 1000"),
        ({"target_score": 1001}, "target_score"),
        ({"jokers": 1}, "jokers: must be true or false"),
        ({"auto_nerts": "yes"}, "auto_nerts: must be true or false"),
        ({"partnerships": 0}, "partnerships: must be true or false"),
        ({"tie_window_ms": 501}, "tie_window_ms: must be 0 to 500"),
        ({"in_flight_ms": 1001}, "in_flight_ms: must be 0 to 1000"),
        ({"stall_seconds": 9}, "stall_seconds: must be 10 to 600"),
        ({"players": 2, "partnerships": True}, "partnerships: needs an even number"),
        ({"players": 5, "partnerships": True}, "partnerships: needs an even number"),
    ],
)
def test_bad_options_name_the_option(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        NertsOptions.from_dict(data)


def test_options_must_be_a_mapping() -> None:
    with pytest.raises(ValueError, match="options: must be an object"):
        NertsOptions.from_dict([])  # type: ignore[arg-type]


def test_registered_game() -> None:
    info = get_game("nerts")
    assert info.title == "Nerts" and info.option_specs is OPTION_SPECS
    match = info.new_match({"players": 2})
    assert match.players == 2 and match.totals == [0, 0]
    with pytest.raises(ValueError, match="flip_count"):
        info.new_match({"flip_count": 5})


# --- deals ---------------------------------------------------------------------------------------------------


def test_a_seed_becomes_packs_stably() -> None:
    packs = seed_packs(1, 2)
    # pinned: one random.Random(1) shuffles pack 0, then pack 1, from standard_pack() order
    assert packs[0][:6] == ["JC", "10S", "QD", "10H", "3S", "KD"]
    assert packs[1][:6] == ["AC", "JH", "10S", "9S", "JS", "2S"]
    match = NertsMatch(NertsOptions(players=2))
    assert match.deal_cards(1) == {"packs": packs}
    by_seed = match.start_hand({"seed": 1}).view(None)
    match2 = NertsMatch(NertsOptions(players=2))
    by_packs = match2.start_hand({"packs": packs}).view(None)
    assert by_seed == by_packs


def test_jokers_are_shuffled_in() -> None:
    packs = seed_packs(3, 1, jokers=True)
    assert len(packs[0]) == 54 and sorted(packs[0]) == sorted(layout_pack(jokers=True))


@pytest.mark.parametrize(
    ("deal", "message"),
    [
        ({"seed": True}, "deal.seed: must be a whole number"),
        ({"seed": "1"}, "deal.seed: must be a whole number"),
        ({}, "deal: needs either 'seed' or 'packs'"),
        ({"seed": 1, "packs": []}, "deal: needs either"),
        ({"cards": []}, "deal.cards: unknown field"),
        ({"packs": "AS"}, "deal.packs: must be a list"),
        ({"packs": [[]]}, "deal.packs: 1 packs, expected 2"),
    ],
)
def test_bad_deal_shapes(deal: dict[str, Any], message: str) -> None:
    match = NertsMatch(NertsOptions(players=2))
    with pytest.raises(ValueError, match=message):
        match.check_deal(deal)


def test_bad_packs_name_the_field() -> None:
    match = NertsMatch(NertsOptions(players=2))
    good = layout_pack()
    missing = [c for c in good if c != "7H"]
    with pytest.raises(ValueError, match=r"deal\.packs\[1\]: missing 7H"):
        match.check_deal({"packs": [good, missing]})
    with pytest.raises(ValueError, match=r"deal\.packs\[0\]: 7H twice"):
        match.check_deal({"packs": [[*missing, "7H", "7H"], good]})
    with pytest.raises(ValueError, match=r"deal\.packs\[1\]\[3\]: bad card code 'XX'"):
        match.check_deal({"packs": [good, [*good[:3], "XX", *good[4:]]]})
    with pytest.raises(ValueError, match=r"deal\.packs\[0\]\[52\]: JK1 but jokers are off"):
        match.check_deal({"packs": [[*good, "JK1"], good]})
    with pytest.raises(ValueError, match=r"deal\.packs\[0\]: must be a list"):
        match.check_deal({"packs": ["AS", good]})
    with pytest.raises(ValueError, match=r"deal\.packs\[1\]: missing JK1, JK2"):
        NertsMatch(NertsOptions(players=2, jokers=True)).check_deal(
            {"packs": [layout_pack(jokers=True), good]}
        )
    # lower case and T for ten are read; the deal is otherwise the same
    lower = [c.lower().replace("10", "T") for c in good]
    match.check_deal({"packs": [lower, good]})


def test_layout_pack_refuses_a_card_twice() -> None:
    with pytest.raises(ValueError, match="twice"):
        layout_pack(nerts=["AS"], work=["AS"])
