"""cardtable.cards: codes, colours, packs (docs/records.md, "Cards")."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cardtable.cards import (
    CREATURE_SUITS,
    Card,
    CreatureCard,
    creature_deck,
    parse_cards,
    shuffled,
    standard_pack,
)


def test_every_standard_code_round_trips() -> None:
    pack = standard_pack(jokers=True)
    assert len(pack) == 54
    assert len(set(pack)) == 54
    for card in pack:
        assert Card.parse(card.code) == card


@pytest.mark.parametrize(
    ("code", "written"),
    [("as", "AS"), ("th", "10H"), ("10d", "10D"), (" Qc ", "QC"), ("jk2", "JK2"), ("KS", "KS")],
)
def test_parsing_accepts_lower_case_and_t_for_ten(code: str, written: str) -> None:
    assert Card.parse(code).code == written


@pytest.mark.parametrize("code", ["", "S", "1S", "11H", "AX", "JK3", "JK", "ASS", "0D"])
def test_bad_codes_are_value_errors_naming_the_code(code: str) -> None:
    with pytest.raises(ValueError, match="bad card code"):
        Card.parse(code)


def test_non_string_is_refused() -> None:
    with pytest.raises(ValueError, match="a card code is a string"):
        Card.parse(7)  # type: ignore[arg-type]


def test_colours() -> None:
    assert Card.parse("AH").colour == "red"
    assert Card.parse("AD").colour == "red"
    assert Card.parse("AS").colour == "black"
    assert Card.parse("AC").colour == "black"
    assert Card.parse("JK1").colour is None
    assert Card.parse("JK1").is_joker


def test_pack_order_is_fixed() -> None:
    codes = [card.code for card in standard_pack()]
    assert codes[:3] == ["AS", "2S", "3S"]
    assert codes[12] == "KS"
    assert codes[13] == "AH"
    assert codes[-1] == "KC"


def test_creature_cards() -> None:
    assert CreatureCard.parse("7c") == CreatureCard(7, "C")
    assert CreatureCard.parse("10F").code == "10F"
    for bad in ["0A", "11A", "7G", "A7", "", "10"]:
        with pytest.raises(ValueError, match="bad card code"):
            CreatureCard.parse(bad)


def test_creature_deck_sizes() -> None:
    assert len(creature_deck(6)) == 60
    assert len(creature_deck(4, range(2, 10))) == 32
    assert {c.suit for c in creature_deck(3)} == set(CREATURE_SUITS[:3])
    with pytest.raises(ValueError, match="suits must be"):
        creature_deck(7)


@given(st.integers(min_value=0, max_value=2**32))
def test_seed_shuffle_is_a_stable_permutation(seed: int) -> None:
    pack = standard_pack()
    once = shuffled(pack, seed)
    assert shuffled(pack, seed) == once
    assert sorted(once) == sorted(card.code for card in pack)


def test_parse_cards_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"deal\.packs\[0\]: bad card code 'ZZ'"):
        parse_cards(["AS", "ZZ"], "deal.packs[0]")
