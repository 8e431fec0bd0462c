"""Nerts engine speed: four-seat greedy hands from deal to end, on one core.

Run: ``.venv/bin/python bench/nerts_engine.py [--hands 100] [--seed 1] [--passes 3]``

Prints the headline, greedy four-seat hands per second on one core (CPU time, the best of ``--passes`` passes, so
other work on the machine disturbs it least; goal, issue 28: at least 1,000), microseconds per ``legal_actions`` /
``apply`` / ``view`` call measured inside those hands, the engine's share of one table update (after each applied
action, every seat's ``legal_actions`` and ``view`` and a spectator's ``view``, as ``server/table/owner.py`` sends
them), and, measured in the same run as a baseline, the cost of dealing a hand (``start_hand`` from explicit
packs) and of ``copy.deepcopy`` of a mid-hand state, with the ratios: the headline as a multiple of those
baselines is the figure to compare between machines and runs.

To compare with another version of the engine, run this same file with ``PYTHONPATH`` pointing at that version's
``src`` (the bench uses only the public API), e.g. a copy of the engine before a change.
The first line names the build of the engines measured (``cardtable.build.engines()``: the editable install is pure
Python; for the compiled build, as ``scripts/serve`` installs it: ``scripts/setup --compiled-copy build/compiled``,
then run with ``PYTHONPATH=build/compiled``; docs/architecture.md, "Builds").
"""

from __future__ import annotations

import argparse
import copy
import time
from typing import Any

from cardtable.bots.nerts import GreedyBot
from cardtable.build import engines
from cardtable.games.nerts import NertsMatch, NertsOptions, NertsState
from cardtable.sim.nerts import play_hand


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hands", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--passes", type=int, default=3, help="headline passes; the best one is reported")
    args = parser.parse_args()
    options = NertsOptions(players=4)
    print(f"engines: {engines()} (cardtable.build; docs/architecture.md, 'Builds')")

    # 1. headline: whole hands, deal to end, through the simulator (bots, views, legal actions, apply), in CPU
    # seconds of this process (one core), the best of a few passes
    elapsed = wall = 0.0
    actions = 0
    for _ in range(max(1, args.passes)):
        started, cpu = time.perf_counter(), time.process_time()
        actions = 0
        for i in range(args.hands):
            match = NertsMatch(options)
            bots = [GreedyBot(args.seed * 1000 + i * 10 + s) for s in range(4)]
            play_hand(match, bots, args.seed + i)
            hand = match.hand
            assert hand is not None and hand.is_over
            actions += hand.snapshot()["actions"]
        spent = time.process_time() - cpu
        if not elapsed or spent < elapsed:
            elapsed, wall = spent, time.perf_counter() - started
    per_second = args.hands / elapsed
    print(
        f"hands: {args.hands} four-seat greedy hands in {elapsed:.3f} CPU s ({wall:.3f} s wall) "
        f"= {per_second:.1f} hands/s on one core ({engines()})"
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
    print(
        f"one table update (4 seats' legal_actions and views, a spectator's view): "
        f"{update_t / updates * 1e6:.1f} us per applied action"
    )

    # 3. baseline in the same run, in CPU time like the headline, the best of three passes: dealing a hand (a
    # fresh match each time, so no scoring bookkeeping) and deep-copying a mid-hand state
    match = NertsMatch(options)
    deal = match.deal_cards(args.seed)
    sample = mid_states[0] if mid_states else match.start_hand(deal)
    reps = 300
    deal_us = copy_us = 0.0
    for _ in range(3):
        t0 = time.process_time()
        for _ in range(reps):
            NertsMatch(options).start_hand(deal)
        spent = (time.process_time() - t0) / reps * 1e6
        deal_us = spent if not deal_us else min(deal_us, spent)
        t0 = time.process_time()
        for _ in range(reps):
            copy.deepcopy(sample)
        spent = (time.process_time() - t0) / reps * 1e6
        copy_us = spent if not copy_us else min(copy_us, spent)
    print(
        f"baseline: a fresh match's start_hand from packs {deal_us:.1f} us; copy.deepcopy of a state {copy_us:.1f} us"
    )
    hand_us = 1e6 / per_second
    print(
        f"ratios: legal_actions = {legal_us / copy_us:.2f} x deepcopy, {legal_us / deal_us:.2f} x a deal; "
        f"one whole hand = {hand_us / copy_us:.1f} x deepcopy = {hand_us / deal_us:.1f} x a deal"
    )
    goal = 1000.0
    verdict = "met" if per_second >= goal else f"NOT met ({goal / per_second:.1f}x short)"
    print(
        f"goal (issue 28): >= {goal:,.0f} hands/s per core: {per_second:.1f} hands/s ({engines()}), {verdict}; "
        f"at this machine's speed the goal is one hand in {1e6 / goal / copy_us:.1f} x deepcopy"
    )


if __name__ == "__main__":
    main()
