"""Engine speed for Enemy Anemone: random playouts of whole 4-seat hands per CPU second on one core.

Three figures, each measured in this run, interleaved in short rounds so that a busy machine slows them alike
(each is timed in CPU seconds of this process; each ratio is the median of the rounds' ratios):

- baseline: a bare loop that shuffles the 40 cards and deals four hands (``random.shuffle`` and slicing);
- playouts: copy a freshly dealt hand state and play it to the end at random (``AnemoneState.playout``, the
  path searching bots use), and the ratio to the baseline (issue 28's goal: >= 0.5x);
- public API: a whole hand through ``legal_actions``/``apply`` with dict actions and events, as the server runs.

Usage: ``python bench/anemone_engine.py [--seconds 3] [--rounds 6]``. To compare two versions of the engine
in the same conditions, run it twice in a row with ``PYTHONPATH`` pointing at each version's ``src``.
The first line names the build of the engines measured (``cardtable.build.engines()``: the editable install is pure
Python; for the compiled build, as ``scripts/serve`` installs it: ``scripts/setup --compiled-copy build/compiled``,
then run with ``PYTHONPATH=build/compiled``; docs/architecture.md, "Builds").
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from cardtable.build import engines
from cardtable.games.anemone import AnemoneMatch, AnemoneOptions, game_cards

GOAL = 0.5
"""Issue 28's goal: random playouts at least this many times the shuffle-and-deal baseline."""


def rate(body: Callable[[], None], seconds: float) -> float:
    """Calls of ``body()`` per CPU second over about ``seconds`` of CPU time."""
    count = 0
    start = time.process_time()
    end = start + seconds
    while True:
        for _ in range(50):
            body()
        count += 50
        now = time.process_time()
        if now >= end:
            return count / (now - start)


def main() -> None:
    """Measure and print the three figures, the ratios and the goal line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="CPU seconds per figure, over all rounds")
    parser.add_argument("--rounds", type=int, default=6, help="rounds the figures are interleaved in")
    args = parser.parse_args()
    rng = random.Random(1)
    cards = game_cards(4)

    def baseline() -> None:
        deck = cards[:]
        rng.shuffle(deck)
        [deck[i * 10 : (i + 1) * 10] for i in range(4)]

    match = AnemoneMatch(AnemoneOptions(players=4))
    start_state = match.start_hand({"seed": 1})

    def playout() -> None:
        state = start_state.copy()
        state.playout(rng)

    def public() -> None:
        state = start_state.copy()
        while not state.is_over:
            seat = state.to_act()[0]
            legal = state.legal_actions(seat)
            state.apply(seat, legal[int(rng.random() * len(legal))], 0)

    slice_seconds = args.seconds / args.rounds
    bases: list[float] = []
    fasts: list[float] = []
    apis: list[float] = []
    for _ in range(args.rounds):
        bases.append(rate(baseline, slice_seconds))
        fasts.append(rate(playout, slice_seconds))
        apis.append(rate(public, slice_seconds))
    base = statistics.median(bases)
    fast = statistics.median(fasts)
    api = statistics.median(apis)
    fast_ratio = statistics.median(f / b for f, b in zip(fasts, bases, strict=True))
    api_ratio = statistics.median(a / b for a, b in zip(apis, bases, strict=True))
    print(f"engines: {engines()} (cardtable.build; docs/architecture.md, 'Builds')")
    print(f"baseline (shuffle and deal 4x10): {base:,.0f} per CPU second")
    print(f"random playouts of 4-seat hands:  {fast:,.0f} per CPU second ({fast_ratio:.3f} x baseline)")
    print(f"public API hands (legal_actions/apply): {api:,.0f} per CPU second ({api_ratio:.3f} x baseline)")
    verdict = "met" if fast_ratio >= GOAL else "NOT met"
    print(f"goal: random playouts >= {GOAL} x baseline: {verdict} ({fast_ratio:.3f} x; {engines()})")


if __name__ == "__main__":
    main()
