"""cardtable.ratings: standings with ties, openskill's Plackett-Luce updates, and the bot level for a rating."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openskill.models import PlackettLuce

from cardtable import ratings


@given(st.lists(st.integers(-20, 20), min_size=2, max_size=6), st.data())
def test_standings_rank_winners_first_then_points_with_shared_ranks(totals: list[int], data: st.DataObject) -> None:
    winners = data.draw(st.one_of(st.none(), st.lists(st.sampled_from(range(len(totals))), min_size=1, unique=True)))
    ranks = ratings.standings(totals, winners)
    won = set(winners or ())
    for a in range(len(totals)):
        for b in range(len(totals)):
            key_a, key_b = (a in won, totals[a]), (b in won, totals[b])
            if key_a == key_b:
                assert ranks[a] == ranks[b]
            elif key_a > key_b:
                assert ranks[a] < ranks[b]
    assert min(ranks) == 1
    # competition ranking: a rank is one more than the number of seats strictly ahead
    for a in range(len(totals)):
        assert ranks[a] == 1 + sum(1 for b in range(len(totals)) if ranks[b] < ranks[a])


@given(st.lists(st.tuples(st.floats(0, 50), st.floats(0.5, 9)), min_size=2, max_size=6), st.data())
def test_rate_is_openskill_plackett_luce(players: list[tuple[float, float]], data: st.DataObject) -> None:
    ranks = data.draw(st.lists(st.integers(1, len(players)), min_size=len(players), max_size=len(players)))
    got = ratings.rate([[ratings.Rating(mu, sigma)] for mu, sigma in players], ranks)
    model = PlackettLuce()
    want = model.rate([[model.rating(mu=mu, sigma=sigma)] for mu, sigma in players], ranks=ranks)
    for g, w in zip(got, want, strict=True):
        assert g[0].mu == pytest.approx(w[0].mu) and g[0].sigma == pytest.approx(w[0].sigma)
        assert g[0].ordinal == pytest.approx(w[0].ordinal())


def test_winner_gains_and_tied_equal_players_stay_equal() -> None:
    new = ratings.Rating()
    first, second, third = ratings.rate([[new], [new], [new]], [1, 2, 2])
    assert first[0].mu > new.mu > second[0].mu
    assert second[0] == third[0]
    assert all(r[0].sigma < new.sigma for r in (first, second, third))


def test_rate_refuses_bad_shapes() -> None:
    new = ratings.Rating()
    with pytest.raises(ValueError, match="at least two"):
        ratings.rate([[new]], [1])
    with pytest.raises(ValueError, match="ranks"):
        ratings.rate([[new], [new]], [1])
    with pytest.raises(ValueError, match="at least one player"):
        ratings.rate([[new], []], [1, 2])


@given(st.floats(-30, 60), st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.floats(-30, 60), min_size=1))
def test_bot_level_is_the_nearest(ordinal: float, ladder: dict[str, float]) -> None:
    chosen = ratings.bot_level_for(ordinal, ladder, "default")
    assert chosen in ladder
    assert all(abs(ladder[chosen] - ordinal) <= abs(v - ordinal) for v in ladder.values())


def test_bot_level_defaults_for_guests_and_empty_ladders() -> None:
    assert ratings.bot_level_for(None, {"a": 1.0}, "medium") == "medium"
    assert ratings.bot_level_for(3.0, {}, "medium") == "medium"


def test_the_examples_in_the_docstrings_run() -> None:
    import doctest

    result = doctest.testmod(ratings)
    assert result.attempted > 0 and result.failed == 0


def test_a_tie_between_two_bots_goes_to_the_stronger() -> None:
    ladder = {"greedy:easy": 0.0, "greedy:hard": 10.0, "greedy:medium": 4.0}
    assert ratings.bot_level_for(7.0, ladder, "greedy:medium") == "greedy:hard"  # 3 from medium and from hard
    assert ratings.bot_level_for(2.0, ladder, "greedy:hard") == "greedy:medium"  # 2 from easy and from medium


@given(st.integers(-30, 60), st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.integers(-30, 60), min_size=1))
def test_among_the_nearest_bots_the_strongest_is_chosen(ordinal: int, ladder: dict[str, int]) -> None:
    # whole numbers, so that equal distances are exactly equal
    chosen = ratings.bot_level_for(float(ordinal), {k: float(v) for k, v in ladder.items()}, "default")
    nearest = min(abs(v - ordinal) for v in ladder.values())
    assert ladder[chosen] == max(v for v in ladder.values() if abs(v - ordinal) == nearest)
