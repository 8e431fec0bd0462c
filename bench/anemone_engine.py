"""Engine speed for Enemy Anemone: random playouts of whole 4-seat hands per second on one core.

Three figures, each measured in this run:

- baseline: a bare loop that shuffles the 40 cards and deals four hands (``random.shuffle`` and slicing);
- playouts: copy a freshly dealt hand state and play it to the end at random (``AnemoneState.playout``, the
  path searching bots use; target >= 2,000 per second), and the ratio to the baseline;
- public API: a whole hand through ``legal_actions``/``apply`` with dict actions and events, as the server runs.

Usage: ``python bench/anemone_engine.py [--seconds 3]``.
"""

from __future__ import annotations

import argparse
import random
import time

from cardtable.games.anemone import AnemoneMatch, AnemoneOptions, game_cards


def rate(body: object, seconds: float) -> float:
    """Calls of ``body()`` per second over about ``seconds``."""
    assert callable(body)
    count = 0
    start = time.perf_counter()
    end = start + seconds
    while True:
        for _ in range(50):
            body()
        count += 50
        now = time.perf_counter()
        if now >= end:
            return count / (now - start)


def main() -> None:
    """Measure and print the three figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
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

    base = rate(baseline, args.seconds)
    fast = rate(playout, args.seconds)
    api = rate(public, args.seconds)
    print(f"baseline (shuffle and deal 4x10): {base:,.0f} per second")
    print(
        f"random playouts of 4-seat hands:  {fast:,.0f} per second (target >= 2,000; {fast / base:.3f} x baseline)"
    )
    print(f"public API hands (legal_actions/apply): {api:,.0f} per second ({api / base:.3f} x baseline)")


if __name__ == "__main__":
    main()
