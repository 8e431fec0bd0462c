"""cardtable.bots.anemone and cardtable.bots.ismcts: legal, deterministic choices; determinizations that respect
what a seat knows; and the simulator (cardtable.sim.anemone) writing records that replay."""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from cardtable import records
from cardtable.bots import bot_infos, get_bot, make_bot
from cardtable.bots.ismcts import (
    Budget,
    Determinizer,
    IsmctsBot,
    Move,
    fast_moves,
    playout,
    playout_rewards,
    search,
    sensible_moves,
)
from cardtable.build import COMPILED, engines
from cardtable.games.anemone import (
    CODE,
    SUIT_OF,
    AnemoneMatch,
    AnemoneOptions,
    AnemoneState,
    card_number,
    game_cards,
)
from cardtable.replay import fold
from cardtable.sim import anemone as sim

TINY = Budget(12, 5.0)


def position(players: int, seed: int, steps: int) -> AnemoneState:
    """A hand of ``players`` seats after ``steps`` random legal actions (stopping before its end)."""
    state = AnemoneMatch(AnemoneOptions(players=players)).start_hand({"seed": seed})
    rng = random.Random(seed)
    for _ in range(steps):
        seat = state.to_act()[0]
        action = rng.choice(state.legal_actions(seat))
        trial = state.copy()
        trial.apply(seat, action)
        if trial.is_over:
            break
        state = trial
    return state


def test_registered_specs() -> None:
    specs = [info.spec for info in bot_infos("anemone")]
    assert specs == ["random", "heuristic", "ismcts:easy", "ismcts:medium", "ismcts:hard"]
    assert [get_bot("anemone", s).pooled for s in specs] == [False, False, True, True, True]
    assert get_bot("anemone", "ismcts").spec == "ismcts:medium"


# These tests count the search's deals by patching the engine's methods: a build compiled with mypyc calls them
# directly, past any patch. They check the pure-Python build (scripts/test runs the engine tests on both builds;
# tests/test_anemone_equivalence.py holds the compiled search to the same moves and visit counts).
PATCHES_THE_ENGINE = pytest.mark.skipif(
    engines() == COMPILED, reason="patches engine methods, which the compiled build calls directly"
)


@PATCHES_THE_ENGINE
def test_paired_halving_deals_one_determinization_per_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``paired``, the root moves of one pass are played out on the same hidden cards: the search deals one
    determinization per pass over the surviving moves (passes of 10, 5, 3 and 2 moves over the four rounds, then
    the survivor alone), not one per simulation, and gives every simulation of a pass the same hands."""
    state = position(4, 3, 0)
    view = state.view(state.to_act()[0])
    dealt: list[tuple[tuple[int, ...], ...]] = []
    sample = Determinizer.sample

    def counting(self: Determinizer, rng: random.Random) -> tuple[list[list[int]], list[int]]:
        hands, deck = sample(self, rng)
        dealt.append(tuple(tuple(h) for h in hands))
        return hands, deck

    seen: list[tuple[tuple[int, ...], ...]] = []
    with_hidden = AnemoneState.with_hidden

    def recording(self: AnemoneState, hands: list[list[int]], deck: list[int]) -> AnemoneState:
        seen.append(tuple(tuple(h) for h in hands))
        return with_hidden(self, hands, deck)

    monkeypatch.setattr(Determinizer, "sample", counting)
    monkeypatch.setattr(AnemoneState, "with_hidden", recording)
    _, visits = search(view, Budget(500, 60.0, halving=True, paired=True), random.Random(1))
    assert sum(visits.values()) == 500
    # passes per round: 500 // (10 * 4), 380 // (5 * 3), 255 // (3 * 2), 129 // 2, then the one simulation left
    rounds = ((10, 12), (5, 25), (3, 42), (2, 64), (1, 1))
    passes = sum(count for _, count in rounds)
    assert len(dealt) == passes  # the deal the search starts from is the first pass's
    assert len(seen) == 500
    starts = [0]
    for size, count in rounds:
        starts += [starts[-1] + size * (i + 1) for i in range(count)]
    for begin, end in itertools.pairwise(starts):
        assert len(set(seen[begin:end])) == 1  # one deal per pass
    assert len(set(seen)) > passes // 2  # and new deals from pass to pass

    dealt.clear()
    seen.clear()
    search(view, Budget(500, 60.0, halving=True), random.Random(1))
    assert len(dealt) == 500  # unpaired: a new deal for every simulation


@settings(max_examples=40, deadline=None)
@given(
    players=st.integers(2, 6),
    seed=st.integers(0, 10_000),
    steps=st.integers(0, 40),
    bot_seed=st.integers(0, 99),
)
def test_bots_choose_only_legal_actions(players: int, seed: int, steps: int, bot_seed: int) -> None:
    state = position(players, seed, steps)
    seat = state.to_act()[0]
    view = state.view(seat)
    legal = state.legal_actions(seat)
    bots: list[Any] = [make_bot("anemone", "random", bot_seed), make_bot("anemone", "heuristic", bot_seed)]
    bots.append(IsmctsBot(bot_seed, TINY))
    for bot in bots:
        choice = bot.choose(view, legal)
        assert choice in legal
        assert bot.choose(view, legal) == choice, "same seed and view, same choice"
        copy = state.copy()
        copy.apply(seat, choice)


def test_registered_ismcts_levels_choose_legal_actions() -> None:
    state = position(4, 5, 9)
    seat = state.to_act()[0]
    legal = state.legal_actions(seat)
    choice = make_bot("anemone", "ismcts:easy", 1).choose(state.view(seat), legal)
    assert choice in legal


def test_single_legal_action_is_taken_at_once() -> None:
    state = AnemoneState.new([[0], [15], [22]])
    legal = state.legal_actions(0)
    assert IsmctsBot(1, "hard").choose(state.view(0), legal) == legal[0]


def test_heuristic_wins_a_valuable_trick_as_last_player() -> None:
    # seat 2 is last; the trick holds 5A and 3B (4 points); 9C wins it, 2C would not
    state = AnemoneState.new(
        [[card_number("5A"), 0], [card_number("3B"), 11], [card_number("9C"), card_number("2C")]]
    )
    state.apply(0, {"type": "play", "card": "5A"})
    state.apply(1, {"type": "play", "card": "3B"})
    choice = make_bot("anemone", "heuristic", 0).choose(state.view(2), state.legal_actions(2))
    assert choice == {"type": "play", "card": "9C", "anemones": []}


def test_heuristic_discards_a_bonus_card() -> None:
    state = AnemoneState.new([[card_number("9A"), 1], [card_number("3A"), card_number("7A")], [22, 23]])
    state.apply(0, {"type": "play", "card": "9A"})
    choice = make_bot("anemone", "heuristic", 0).choose(state.view(1), state.legal_actions(1))
    assert choice == {"type": "discard", "card": "3A"}


@pytest.mark.parametrize(
    "budget",
    [
        Budget(400, 10.0),
        Budget(400, 10.0, greedy=0.5, own_vs_best=True, prune_spends=True, smart=0.5, halving=True),
        Budget(400, 10.0, smart=1.0, max_depth=1),
        Budget(400, 10.0, others_exploration=0.2),
        Budget(400, 10.0, greedy=0.5, own_vs_best=True, prune_spends=True, halving=True, mast=0.5),
        Budget(400, 10.0, greedy=0.5, own_vs_best=True, prune_spends=True, halving=True, paired=True),
        Budget(400, 10.0, greedy=0.5, own_vs_best=True, prune_spends=True, halving=True, self_determinize=0.3),
    ],
)
def test_ismcts_search_wins_a_valuable_trick_when_last(budget: Budget) -> None:
    # seat 2 (all of suit C) is last to play; 5A and 8B are in the trick: 8C (a tie goes to the later card),
    # 9C or 10C wins 4 points or more
    hands = [
        ["5A", "1A", "2A", "3A", "4A", "6A", "7A", "8A", "9A", "1B"],
        ["8B", "2B", "3B", "4B", "5B", "6B", "7B", "9B", "10B", "10A"],
        [f"{rank}C" for rank in range(1, 11)],
    ]
    match = AnemoneMatch(AnemoneOptions(players=3))
    state = match.start_hand({"hands": hands})
    state.apply(0, {"type": "play", "card": "5A"})
    state.apply(1, {"type": "play", "card": "8B"})
    move, visits = search(state.view(2), budget, random.Random(0))
    assert move in [(True, card_number(c), ()) for c in ("8C", "9C", "10C")]
    # every simulation visits a root move, but those dealt as the others imagine it (below 400 then)
    assert sum(visits.values()) == 400 if not budget.self_determinize else 200 < sum(visits.values()) < 400


def test_sequential_halving_spends_the_budget_and_keeps_the_best_half() -> None:
    """With halving, every root move is tried equally in the first round and the budget is spent; the move
    played is the one that survived every round, with the most visits (ties aside)."""
    state = position(4, 3, 0)
    view = state.view(state.to_act()[0])
    budget = Budget(500, 60.0, halving=True)
    move, visits = search(view, budget, random.Random(1))
    assert sum(visits.values()) == 500
    assert len(visits) == len(state.moves())  # ten cards led, each tried
    rounds = 4  # ceil(log2(10))
    assert min(visits.values()) == 500 // (10 * rounds)
    assert visits[move] == max(visits.values())


@settings(max_examples=40, deadline=None)
@given(
    players=st.integers(2, 6), seed=st.integers(0, 10_000), steps=st.integers(0, 45), hide_own=st.booleans()
)
def test_determinizations_respect_counts_and_voids(players: int, seed: int, steps: int, hide_own: bool) -> None:
    """Every card is somewhere exactly once, hand sizes and the deck's are the view's, and no seat gets a suit
    its discards show it lacks; the seat's own hand is its true one, or (``hide_own``) dealt like the others."""
    state = position(players, seed, steps)
    seat = state.to_act()[0]
    view = state.view(seat)
    det = Determinizer(view, hide_own=hide_own)
    hands, deck = det.sample(random.Random(seed))
    assert [len(h) for h in hands] == view["hand_counts"] and len(deck) == view["deck_count"]
    if not hide_own:
        assert sorted(hands[seat]) == sorted(state.hands[seat])
    seen = Counter(c for h in hands for c in h) + Counter(deck)
    seen += Counter(c for pile in state.score_piles for c in pile) + Counter(p[1] for p in state.trick)
    assert seen == Counter(game_cards(players))
    # the true deal is consistent with every void the view reveals, so a sample must respect them too
    for other, hand in enumerate(hands):
        for card in hand:
            if other != seat or hide_own:
                assert card in det.eligible and other in det.eligible[card]
    # voids: a seat that discarded held no card of a suit missing from that trick (3+ seats)
    if players > 2:
        for trick in [*view["tricks"], {"plays": view["trick"], "discards": view["trick_discards"]}]:
            for d in trick["discards"]:
                if d["seat"] == seat and not hide_own:
                    continue
                before = {SUIT_OF[card_number(p["card"])] for p in trick["plays"] if p["order"] < d["order"]}
                assert all(SUIT_OF[c] in before for c in hands[d["seat"]])
    codes = [[CODE[c] for c in hand] for hand in hands]
    rebuilt = AnemoneState.from_view(view, codes, [CODE[c] for c in deck])
    assert rebuilt.to_act() == [seat]
    if not hide_own:
        assert sorted(map(str, rebuilt.legal_actions(seat))) == sorted(map(str, state.legal_actions(seat)))


@pytest.mark.parametrize("share", [-0.1, 1.0, 1.5])
def test_a_self_determinize_share_outside_0_to_1_is_refused(share: float) -> None:
    with pytest.raises(ValueError, match="self_determinize"):
        Budget(100, 1.0, self_determinize=share)


@PATCHES_THE_ENGINE
def test_imagined_deals_update_only_the_other_seats_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``self_determinize``, some simulations deal the searching seat's own hand at random too; they walk
    the tree without touching the seat's own nodes, so the root moves' visits count only the other
    simulations, and the move played is still one of the seat's legal moves."""
    state = position(4, 3, 4)
    seat = state.to_act()[0]
    view = state.view(seat)
    imagined: list[list[int]] = []
    sample = Determinizer.sample

    def counting(self: Determinizer, rng: random.Random) -> tuple[list[list[int]], list[int]]:
        hands, deck = sample(self, rng)
        if self.own_seat != seat:
            imagined.append(hands[seat])
        return hands, deck

    monkeypatch.setattr(Determinizer, "sample", counting)
    budget = Budget(600, 60.0, greedy=0.5, own_vs_best=True, prune_spends=True, halving=True, self_determinize=0.4)
    move, visits = search(view, budget, random.Random(2))
    assert 150 < len(imagined) < 350  # about 40% of 600
    assert sum(visits.values()) == 600 - len(imagined)
    assert any(sorted(hand) != sorted(state.hands[seat]) for hand in imagined)
    assert move in state.moves()


def test_simulate_writes_records_that_replay(tmp_path: Path) -> None:
    out = tmp_path / "games.jsonl"
    stats = sim.run(
        3,
        3,
        ["heuristic", "random"],
        seed=4,
        jobs=1,
        out=out,
        rounds=2,
        console=Console(file=None, quiet=True),
        show=False,
    )
    assert set(stats) == {"heuristic", "random"}
    assert stats["heuristic"].games + stats["random"].games == 9
    assert abs(sum(s.wins for s in stats.values()) - 3) < 1e-9
    lines = out.read_text().splitlines()
    assert len(lines) == 3
    for line in lines:
        data = json.loads(line)
        assert all("seed" not in hand["deal"] for hand in data["hands"])
        result = fold(records.from_dict(data))
        assert result.winner is not None and len(result.hands) == 2


def test_seats_rotate_so_every_bot_plays_every_seat() -> None:
    tasks = sim.tasks_for(4, 4, ["ismcts:hard", "heuristic", "heuristic", "heuristic"], seed=1)
    assert {t.specs.index("ismcts:hard") for t in tasks} == {0, 1, 2, 3}
    assert sim.tasks_for(3, 1, ["a", "b"], seed=1)[0].specs == ("a", "b", "a")


def test_wilson_interval() -> None:
    low, high = sim.wilson(40, 100)
    assert 0.30 < low < 0.31 and 0.49 < high < 0.50
    assert sim.wilson(0, 0) == (0.0, 1.0)


@settings(max_examples=30, deadline=None)
@given(
    players=st.integers(2, 6),
    seed=st.integers(0, 10_000),
    steps=st.integers(0, 30),
    greedy=st.sampled_from([0.0, 0.5, 1.0]),
    smart=st.sampled_from([0.0, 0.5, 1.0]),
    mast=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_fast_playout_follows_the_engine(
    players: int, seed: int, steps: int, greedy: float, smart: float, mast: float
) -> None:
    """The search's playout (random, partly greedy, partly smart, partly by MAST values) makes only moves the
    engine allows and ends where the engine ends; ``played`` lists its plays (not its discards), with their seats."""
    start = position(players, seed, steps)
    fast = start.copy()
    trace: list[Move] = []
    values = [random.Random(seed + card).random() for card in range(64)]
    played: list[int] = []
    playout(
        fast,
        random.Random(seed),
        anemone_chance=0.5,
        trace=trace,
        greedy=greedy,
        smart=smart,
        mast=mast,
        mast_value=values,
        played=played,
    )
    assert [key & 63 for key in played] == [card for is_play, card, _ in trace if is_play]
    engine = start.copy()
    play_seats = []
    for is_play, card, faces in trace:
        seat = engine.to_act()[0]
        if is_play:
            play_seats.append(seat)
        action: dict[str, Any] = (
            {"type": "play", "card": CODE[card], "anemones": list(faces)}
            if is_play
            else {"type": "discard", "card": CODE[card]}
        )
        legal = engine.legal_actions(seat)
        assert action in legal
        if is_play and mast == 1.0 and not greedy and not smart:
            # every play is the playable card with the best value
            playable = {card_number(a["card"]) for a in legal if a["type"] == "play"}
            assert values[card] == max(values[c] for c in playable)
        engine.apply(seat, action)
    assert engine.is_over and fast.over
    assert [key >> 6 for key in played] == play_seats
    assert engine.points == fast.points
    assert [sorted(f) for f in engine.anemones] == [sorted(f) for f in fast.anemones]
    assert engine.supply == fast.supply


@settings(max_examples=60, deadline=None)
@given(players=st.integers(2, 6), seed=st.integers(0, 10_000), steps=st.integers(0, 40))
def test_search_moves_are_the_engines(players: int, seed: int, steps: int) -> None:
    """The search's own move generation gives the engine's moves, in the engine's order."""
    state = position(players, seed, steps)
    if not state.over:
        assert fast_moves(state) == state.moves()


@settings(max_examples=80, deadline=None)
@given(players=st.integers(2, 6), seed=st.integers(0, 10_000), steps=st.integers(0, 40))
def test_sensible_moves_drop_only_spends_that_cannot_matter(players: int, seed: int, steps: int) -> None:
    """The pruned moves are engine moves: every card the engine offers, with no anemones, and at most one spend
    per total value, each making the card reach the trick's highest value (a tie goes to the later card) and
    none above the least that beats the most any seat still to act could play (10 plus its anemones)."""
    state = position(players, seed, steps)
    if state.over:
        return
    moves = sensible_moves(state)
    engine = state.moves()
    assert set(moves) <= set(engine)
    assert {(is_play, card) for is_play, card, _ in moves} == {(is_play, card) for is_play, card, _ in engine}
    assert all((is_play, card, ()) in moves for is_play, card, _ in engine)
    totals = [(card, sum(faces)) for _, card, faces in moves]
    assert len(totals) == len(set(totals))
    high = max((play[3] for play in state.trick), default=-1)
    later = [
        sum(state.anemones[(state.leader + j) % players])
        for j in range(state.turns_taken + 1, state.turns_per_trick)
    ]
    need = max(high, 11 + max(later)) if later else high
    for _, card, faces in moves:
        if faces:
            value = card % 10 + 1 + sum(faces)
            assert high <= value <= need


def test_sensible_moves_spend_to_win_the_trick_only() -> None:
    """Last to act holding +1, +1, +2, facing a 6: the 4 is offered plain and with +2 (one +2, keeping the +1s),
    the least that wins (a tie goes to the later card), not with +1 (still loses) nor more (not needed); the 7
    wins plain. Second to act, the 4 is offered with every total up to +4 (a later 10 could still beat it)."""
    four, seven = card_number("4A"), card_number("7B")
    last = AnemoneState.new(
        [[four, seven], [card_number("6C")], [card_number("2D")], [card_number("9C")]],
        anemones=[[1, 1, 2], [], [], []],
        leader=1,
    )
    last.step(True, card_number("6C"))
    last.step(True, card_number("2D"))
    last.step(False, card_number("9C"))  # no suit left for seat 3: a discard
    assert last.turn == 0
    assert sensible_moves(last) == [(True, four, ()), (True, four, (2,)), (True, seven, ())]
    second = AnemoneState.new(
        [[four, seven], [], [], [card_number("6C")]], anemones=[[1, 1, 2], [], [], []], leader=3
    )
    second.step(True, card_number("6C"))
    assert [faces for _, card, faces in sensible_moves(second) if card == four] == [
        (),
        (2,),
        (1, 2),
        (1, 1, 2),
    ]


def test_playout_rewards_margin_best_other_and_win_share() -> None:
    """Each seat's reward is its point margin over the others' mean (/10); the searching seat's can instead be
    its margin over the best other seat, plus its share of the win (1/k for a k-way tie at the top)."""
    points = [10, 12, 0, 4]
    plain = playout_rewards(points, [[], [], [], []], 0, 0.0)
    assert plain == pytest.approx([(10 - 16 / 3) / 10, (12 - 14 / 3) / 10, (0 - 26 / 3) / 10, (4 - 22 / 3) / 10])
    best = playout_rewards(points, [[], [], [], []], 0, 0.0, own_vs_best=True)
    assert best[0] == pytest.approx((10 - 12) / 10)
    assert best[1:] == plain[1:]
    assert playout_rewards(points, [[], [], [], []], 0, 0.0, own_win=1.0) == plain  # seat 0 did not win
    won = playout_rewards(points, [[], [], [], []], 1, 0.0, own_win=1.0, own_vs_best=True)
    assert won[1] == pytest.approx((12 - 10) / 10 + 1.0)
    tied = playout_rewards([12, 12, 0, 4], [[], [], [], []], 0, 0.0, own_win=1.0, own_vs_best=True)
    assert tied[0] == pytest.approx(0.0 + 0.5)
    # anemones held count a little; win_weight adds a share of the win to every seat
    held = playout_rewards(points, [[1, 2], [], [], []], 0, 0.5)
    assert held[0] == pytest.approx(plain[0] + 0.5 * (3 - 0) / 10)
    assert held[1] == pytest.approx(plain[1] + 0.5 * (0 - 1) / 10)
    shared = playout_rewards([12, 12, 0, 4], [[], [], [], []], 3, 0.0, win_weight=1.0)
    assert shared[0] - playout_rewards([12, 12, 0, 4], [[], [], [], []], 3, 0.0)[0] == pytest.approx(0.5)
