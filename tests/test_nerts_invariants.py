"""Invariants of cardtable.games.nerts over random action sequences (Hypothesis).

- every card is in exactly one place and keeps its pack;
- replaying the applied actions on a fresh deal gives the same state and views;
- no view shows a face-down Nerts card or a stock card (of any seat, the viewer's own included), and no event
  names one;
- an illegal action leaves the state exactly as before.
"""

from __future__ import annotations

import copy
import json
import os
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cardtable.engine import IllegalAction
from cardtable.games.nerts import NertsMatch, NertsOptions, NertsState

EXAMPLES = int(os.environ.get("NERTS_EXAMPLES", "40"))  # raise it for a longer search
IN_PLAY_KEYS = {"pack", "seats", "nerts", "work", "stock", "waste", "stuck"}


@st.composite
def options(draw: st.DrawFn) -> NertsOptions:
    players = draw(st.sampled_from([1, 2, 2, 3, 4, 4, 6, 8]))
    return NertsOptions(
        players=players,
        partnerships=players >= 4 and draw(st.booleans()),
        jokers=draw(st.booleans()),
        flip_count=draw(st.sampled_from([1, 3])),
        nerts_pile_size=draw(st.integers(5, 13)),
        work_piles=draw(st.integers(3, 6)),
        auto_nerts=draw(st.booleans()),
        tie_window_ms=draw(st.sampled_from([0, 100, 500])),
    )


def code(entry: str) -> str:
    return entry.split("/")[0]


def public(state: NertsState) -> dict[str, Any]:
    """What a view must show in play, derived from the full snapshot."""
    snap = state.snapshot()
    layouts = []
    for p, lay in enumerate(snap["layouts"]):
        layouts.append(
            {
                "pack": p,
                "nerts": {
                    "count": len(lay["nerts"]),
                    "top": code(lay["nerts"][-1]) if lay["nerts"] else None,
                },
                "work": [[code(c) for c in pile] for pile in lay["work"]],
                "stock": {"count": len(lay["stock"])},
                "waste": {
                    "count": len(lay["waste"]),
                    "top": code(lay["waste"][-1]) if lay["waste"] else None,
                },
                "stuck": lay["stuck"],
            }
        )
    return {"layouts": layouts, "foundations": [[c for c in f["cards"]] for f in snap["foundations"]]}


def check_view(state: NertsState, seat: int | None) -> None:
    view = state.view(seat)
    json.dumps(view)
    expected = public(state)
    assert view["seat"] == seat and view["game"] == "nerts"
    for got, want in zip(view["layouts"], expected["layouts"], strict=True):
        if state.is_over:
            assert set(got) == IN_PLAY_KEYS | {"nerts_cards", "stock_cards", "waste_cards"}
        else:
            assert set(got) == IN_PLAY_KEYS  # nothing face down, no stock order
        assert {k: got[k] for k in want} == want
    shown = [[f"{c['card']}/{c['pack']}" for c in f["cards"]] for f in view["foundations"]]
    assert shown == expected["foundations"]


def check_events(state: NertsState, events: list[dict[str, Any]]) -> None:
    view = state.view(None)
    visible: set[str] = set()
    for lay in view["layouts"]:
        visible.update(c for pile in lay["work"] for c in pile)
        visible.update(x for x in (lay["nerts"]["top"], lay["waste"]["top"]) if x)
    visible.update(c["card"] for f in view["foundations"] for c in f["cards"])
    for event in state.events_for(events, 0):
        assert isinstance(event["type"], str)
        named = [*event.get("cards", []), event.get("card"), event.get("waste_top")]
        for card in named:
            assert card is None or card in visible, (event, visible)


def places(state: NertsState) -> Counter[tuple[str, int]]:
    return Counter(state.card_places())


def drive(
    opts: NertsOptions, seed: int, steps: list[tuple[int, int, int]]
) -> tuple[NertsState, dict[str, Any], list[tuple[int | None, dict[str, Any], int]]]:
    match = NertsMatch(opts)
    deal = match.deal_cards(seed)
    state = match.start_hand(deal)
    start = places(state)
    log: list[tuple[int | None, dict[str, Any], int]] = []
    ms = 0
    for seat_pick, pick, dt in steps:
        if state.is_over:
            break
        ms += dt
        due = state.clock_action()
        if due is not None and due[0] <= ms:
            at = max(due[0], state.ms)
            events = state.apply(None, due[1], at)
            log.append((None, due[1], at))
            ms = at
        else:
            seat = seat_pick % opts.players
            legal = state.legal_actions(seat, ms)
            if not legal:
                continue
            # prefer moves: they are what changes the layout
            moves = [a for a in legal if a["type"] in ("move", "under")]
            pool = moves if moves and pick % 3 else legal
            action = pool[pick % len(pool)]
            events = state.apply(seat, action, ms)
            log.append((seat, action, ms))
        assert places(state) == start
        check_events(state, events)
        for viewer in (None, *range(opts.players)):
            check_view(state, viewer)
    return state, deal, log


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    opts=options(),
    seed=st.integers(0, 2**32),
    steps=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 10**6), st.integers(0, 120)), max_size=120),
)
def test_cards_stay_put_views_hide_and_replay_is_exact(
    opts: NertsOptions, seed: int, steps: list[tuple[int, int, int]]
) -> None:
    state, deal, log = drive(opts, seed, steps)
    again = NertsMatch(opts).start_hand(deal)
    for seat, action, ms in log:
        again.apply(seat, action, ms)
    assert again.snapshot() == state.snapshot()
    for viewer in (None, *range(opts.players)):
        assert again.view(viewer) == state.view(viewer)
    assert again.scores() == state.scores()


PILES = ["nerts", "waste", "stock", "work:0", "work:1", "work:3", "work:5", "work:6", "work:x", 3, None]
TARGETS = [
    "work:0",
    "work:2",
    "work:5",
    "foundation:new",
    "foundation:0",
    "foundation:1",
    "foundation:9",
    "x",
]

garbage = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["move", "under", "flip", "stuck", "cycle", "nerts", "rotate", "end_hand", "x"]
        )
    },
    optional={
        "from": st.sampled_from(PILES),
        "to": st.sampled_from(TARGETS),
        "count": st.sampled_from([0, 1, 2, 3, 14, -1, "1", True, None]),
        "as": st.sampled_from(["AS", "2H", "JK1", "zz", "KC", 7]),
        "reason": st.sampled_from(["nerts", "stalled", "stuck", None]),
        "extra": st.just(1),
    },
)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    opts=options(),
    seed=st.integers(0, 2**32),
    steps=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 10**6), st.integers(0, 120)), max_size=60),
    tries=st.lists(
        st.tuples(st.sampled_from([None, 0, 1, 2, 3, 4, -1]), garbage, st.integers(-50, 200)), max_size=30
    ),
)
def test_an_illegal_action_changes_nothing(
    opts: NertsOptions,
    seed: int,
    steps: list[tuple[int, int, int]],
    tries: list[tuple[int | None, dict[str, Any], int]],
) -> None:
    state, _, _ = drive(opts, seed, steps)
    for seat, action, dt in tries:
        before = state.snapshot()
        views = [state.view(v) for v in (None, *range(opts.players))]
        start = places(state)
        try:
            events = state.apply(seat, action, max(0, state.ms + dt))
        except IllegalAction as error:
            assert str(error)
            assert state.snapshot() == before
            assert [state.view(v) for v in (None, *range(opts.players))] == views
        else:
            assert places(state) == start
            check_events(state, events)
            for viewer in (None, *range(opts.players)):
                check_view(state, viewer)


def test_legal_actions_are_all_accepted() -> None:
    """Every listed action applies, from many positions of seeded games."""
    for seed in range(12):
        opts = NertsOptions(players=2, jokers=seed % 2 == 0, flip_count=1 if seed % 3 else 3)
        state, _, _ = drive(opts, seed, [(i, i * 7919, 40) for i in range(80)])
        for seat in range(opts.players):
            for action in state.legal_actions(seat):
                snapshot = state.snapshot()
                trial = _clone(state)
                trial.apply(seat, action, state.ms)
                assert state.snapshot() == snapshot


def _clone(state: NertsState) -> NertsState:
    return copy.deepcopy(state)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    opts=options(),
    seed=st.integers(0, 2**32),
    steps=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 10**6), st.integers(0, 120)), max_size=50),
    later=st.lists(st.integers(0, 700), min_size=1, max_size=3),
)
def test_what_is_kept_between_calls_matches_a_fresh_replay(
    opts: NertsOptions, seed: int, steps: list[tuple[int, int, int]], later: list[int]
) -> None:
    """Legal actions and views are kept between calls (per layout until it changes, the shared view until the next
    action): asked after every action, for every seat and at later times (the tie and in-flight windows), they
    equal, in order, what a fresh replay of the same actions computes from nothing."""
    _, deal, log = drive(opts, seed, steps)
    state = NertsMatch(opts).start_hand(deal)
    for i, (seat, action, ms) in enumerate(log):
        state.apply(seat, action, ms)
        fresh = NertsMatch(opts).start_hand(deal)
        for step in log[: i + 1]:
            fresh.apply(*step)
        for viewer in range(opts.players):
            for t in (None, *(ms + dt for dt in later)):
                assert state.legal_actions(viewer, t) == fresh.legal_actions(viewer, t)
        for viewer in (None, *range(opts.players)):
            assert state.view(viewer) == fresh.view(viewer)
