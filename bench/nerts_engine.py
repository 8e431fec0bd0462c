"""Nerts engine speed: four-seat greedy hands from deal to end, on one core.

Run: ``.venv/bin/python bench/nerts_engine.py [--hands 100] [--seed 1]``

Prints hands per second (goal: at least 20), microseconds per ``legal_actions`` / ``apply`` / ``view`` call
measured inside those hands, the engine's share of one table update (after each applied action, every seat's
``legal_actions`` and ``view`` and a spectator's ``view``, as ``server/table/owner.py`` sends them), and, measured in the
same run as a baseline, the cost of dealing a hand (``start_hand`` from explicit packs) and of ``copy.deepcopy``
of a mid-hand state, with the ratios.
"""

from __future__ import annotations

import argparse
import copy
import time
from typing import Any

from cardtable.bots.nerts import GreedyBot
from cardtable.games.nerts import NertsMatch, NertsOptions, NertsState
from cardtable.sim.nerts import play_hand


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hands", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    options = NertsOptions(players=4)

    # 1. headline: whole hands, deal to end, through the simulator (bots, views, legal actions, apply)
    started = time.perf_counter()
    actions = 0
    for i in range(args.hands):
        match = NertsMatch(options)
        bots = [GreedyBot(args.seed * 1000 + i * 10 + s) for s in range(4)]
        play_hand(match, bots, args.seed + i)
        hand = match.hand
        assert hand is not None and hand.is_over
        actions += hand.snapshot()["actions"]
    elapsed = time.perf_counter() - started
    per_second = args.hands / elapsed
    print(
        f"hands: {args.hands} four-seat greedy hands in {elapsed:.2f} s = {per_second:.1f} hands/s (goal >= 20)"
    )
    print(f"actions: {actions / args.hands:.0f} per hand, {actions / elapsed:.0f} applied per second")

    # 2. per call, replaying the same kind of hands step by step
    legal_t = apply_t = view_t = update_t = 0.0
    legal_n = apply_n = view_n = 0
    mid_states: list[NertsState] = []
    hands: list[tuple[dict[str, Any], list[tuple[int | None, dict[str, Any], int]]]] = []
    for i in range(min(args.hands, 30)):
        match = NertsMatch(options)
        deal = match.deal_cards(args.seed + i)
        state = match.start_hand(deal)
        played: list[tuple[int | None, dict[str, Any], int]] = []
        hands.append((deal, played))
        bots = [GreedyBot(i * 10 + s) for s in range(4)]
        ms = 0
        idle = 0
        while not state.is_over and idle < 8:
            ms += 25
            seat = (ms // 25) % 4
            due = state.clock_action()
            if due is not None and due[0] <= ms:
                state.apply(None, due[1], max(due[0], state.ms))
                played.append((None, due[1], max(due[0], state.ms)))
                continue
            t0 = time.perf_counter()
            legal = state.legal_actions(seat, ms)
            t1 = time.perf_counter()
            view = state.view(seat)
            t2 = time.perf_counter()
            legal_t += t1 - t0
            view_t += t2 - t1
            legal_n += 1
            view_n += 1
            action = bots[seat].choose(view, legal)
            if action is None:
                idle += 1
                continue
            idle = 0
            t3 = time.perf_counter()
            state.apply(seat, action, ms)
            apply_t += time.perf_counter() - t3
            apply_n += 1
            played.append((seat, action, ms))
            if apply_n % 97 == 0 and len(mid_states) < 20:
                mid_states.append(copy.deepcopy(state))
    legal_us = legal_t / legal_n * 1e6
    print(f"legal_actions: {legal_us:.1f} us per call ({legal_n} calls)")
    print(f"apply: {apply_t / apply_n * 1e6:.1f} us per call; view: {view_t / view_n * 1e6:.1f} us per call")
    # the same hands again: after each applied action, what the table server asks for (docs/protocol.md, "update");
    # the best of three passes, as the figure least disturbed by other work on the machine
    for _ in range(3):
        spent, updates = 0.0, 0
        for deal, played in hands:
            state = NertsMatch(options).start_hand(deal)
            for seat, action, ms in played:
                state.apply(seat, action, ms)
                t0 = time.perf_counter()
                for viewer in range(4):
                    state.legal_actions(viewer)
                    state.view(viewer)
                state.view(None)
                spent += time.perf_counter() - t0
                updates += 1
        update_t = spent if not update_t else min(update_t, spent)
    print(f"one table update (4 seats' legal_actions and views, a spectator's view): "
          f"{update_t / updates * 1e6:.1f} us per applied action")

    # 3. baseline in the same run: dealing, and deep-copying a mid-hand state
    match = NertsMatch(options)
    deal = match.deal_cards(args.seed)
    reps = 300
    t0 = time.perf_counter()
    for _ in range(reps):
        match._hand = None  # a fresh hand each time (bypasses the scoring bookkeeping on purpose)
        match._hands_started = 0
        match.start_hand(deal)
    deal_us = (time.perf_counter() - t0) / reps * 1e6
    sample = mid_states[0] if mid_states else match.start_hand(deal)
    t0 = time.perf_counter()
    for _ in range(reps):
        copy.deepcopy(sample)
    copy_us = (time.perf_counter() - t0) / reps * 1e6
    print(f"baseline: start_hand from packs {deal_us:.1f} us; copy.deepcopy of a state {copy_us:.1f} us")
    print(
        f"ratios: legal_actions = {legal_us / copy_us:.2f} x deepcopy, {legal_us / deal_us:.2f} x a deal; "
        f"one whole hand = {1e6 / per_second / copy_us:.0f} x deepcopy"
    )


if __name__ == "__main__":
    main()
