"""Bot-only Nerts on a simulated clock: one hand (:func:`play_hand`) or many (:func:`run`, ``cardtable simulate``).

The clock: each seat acts every ``reaction_ms`` of its bot (``min_step_ms``, default 100, for bots that play
instantly such as ``greedy``), plus a seeded jitter of up to a quarter of that, so no seat always goes first.
The seat due soonest acts next (ties: lowest seat); the table's clock action (:meth:`NertsState.clock_action`:
the end of the in-flight window or the stall guard's rotate) happens when it falls due before that. A bot may
wait (``None``). Every hand ends: after ``max_stall_rotates`` stall-guard rotates with no progress between
them, or after ``max_actions`` actions, the table ends it (``end_hand`` reason ``stalled``).

>>> from cardtable.games.nerts import NertsMatch, NertsOptions
>>> from cardtable.bots.nerts import GreedyBot
>>> match = NertsMatch(NertsOptions(players=2))
>>> result = play_hand(match, [GreedyBot(1), GreedyBot(2)], seed=5)
>>> result.ended in ("nerts", "stuck", "stalled")
True
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cardtable import records
from cardtable.bots import Bot, get_bot
from cardtable.engine import HandResult
from cardtable.games.nerts import NertsMatch, NertsOptions, NertsState
from cardtable.sim.runner import open_out, parallel_map

__all__ = ["play_hand", "play_item", "run"]


def play_hand(
    match: NertsMatch,
    bots: Sequence[Bot],
    seed: int,
    record: records.Record | None = None,
    *,
    reactions: Sequence[int] | None = None,
    min_step_ms: int = 100,
    max_stall_rotates: int = 3,
    max_actions: int = 20000,
) -> HandResult:
    """Deal the next hand of ``match`` from ``seed``, let ``bots`` (one per seat) play it out, score it.

    ``reactions`` are the seats' paces in ms (default: ``min_step_ms`` each). When ``record`` is given the hand
    (its deal written out as packs, never a seed) and every applied action are appended to it. Returns the
    :class:`~cardtable.engine.HandResult` that :meth:`NertsMatch.finish_hand` scored.
    """
    players = match.players
    if len(bots) != players:
        raise ValueError(f"bots: {len(bots)} bots for {players} seats")
    steps = [max(r, min_step_ms) if reactions else min_step_ms for r in (reactions or [0] * players)]
    deal = match.deal_cards(seed)
    state: NertsState = match.start_hand(deal)
    log: list[records.ActionRecord] | None = None
    if record is not None:
        hand = records.HandRecord(deal=deal, actions=[])
        record.hands.append(hand)
        log = hand.actions
    rng = random.Random(seed ^ 0x5EED)
    next_ms = [step + rng.randint(0, step // 4) for step in steps]
    stall_rotates = 0
    progress = state.last_progress_ms
    actions = 0
    while not state.is_over:
        seat = min(range(players), key=next_ms.__getitem__)
        now = next_ms[seat]
        due = state.clock_action()
        if due is not None and due[0] <= now:
            at = max(due[0], state.ms)
            table_action = due[1]
            if table_action["type"] == "rotate":
                if state.last_progress_ms != progress:
                    progress = state.last_progress_ms
                    stall_rotates = 0
                stall_rotates += 1
                if stall_rotates > max_stall_rotates:
                    table_action = {"type": "end_hand", "reason": "stalled"}
            _apply(state, None, table_action, at, log)
            continue
        if actions >= max_actions:
            _apply(state, None, {"type": "end_hand", "reason": "stalled"}, max(now, state.ms), log)
            break
        action = bots[seat].choose(state.view(seat), state.legal_actions(seat, now))
        if action is not None:
            _apply(state, seat, action, now, log)
            actions += 1
        next_ms[seat] = now + steps[seat] + rng.randint(0, steps[seat] // 4)
    return match.finish_hand()


def _apply(
    state: NertsState,
    seat: int | None,
    action: dict[str, Any],
    ms: int,
    log: list[records.ActionRecord] | None,
) -> None:
    state.apply(seat, action, ms)
    if log is not None:
        log.append(records.ActionRecord(seat=seat, ms=ms, action=dict(action)))


def play_item(item: tuple[int, int, bool, tuple[str, ...], dict[str, Any]]) -> dict[str, Any]:
    """One simulation unit, picklable for a process pool: a hand, or a whole match when ``match_mode``.

    ``item`` is ``(players, seed, match_mode, bot_specs, options)``. Returns ``{"record": record dict,
    "scores": [per hand per seat], "ended": [per hand], "actions": [per hand], "seconds": float}``.
    """
    players, seed, match_mode, specs, extra = item
    options = NertsOptions.from_dict({**extra, "players": players})
    match = NertsMatch(options)
    infos = [get_bot("nerts", spec) for spec in specs]
    record = records.new_record(
        "nerts",
        [records.Seat(name=f"bot-{i}", bot=info.spec) for i, info in enumerate(infos)],
        options={**extra, "players": players},
    )
    rng = random.Random(seed)
    started = time.perf_counter()
    scores: list[list[int]] = []
    endings: list[str | None] = []
    counts: list[int] = []
    for _ in range(200 if match_mode else 1):
        bots = [info.make(rng.randrange(2**31)) for info in infos]
        result = play_hand(
            match, bots, rng.randrange(2**31), record, reactions=[i.reaction_ms for i in infos]
        )
        scores.append(result.scores)
        endings.append(result.ended)
        counts.append(len(record.hands[-1].actions))
        if match.is_over:
            break
    return {
        "record": record.to_dict(),
        "scores": scores,
        "ended": endings,
        "actions": counts,
        "winners": match.winners(),
        "seconds": time.perf_counter() - started,
    }


def run(
    players: int,
    hands: int,
    seed: int,
    out: Path | None = None,
    jobs: int = 1,
    match_mode: bool = False,
    bots: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    show: bool = True,
) -> dict[str, Any]:
    """``cardtable simulate nerts``: ``hands`` hands (``match_mode``: whole matches) by bots, summarised.

    ``bots`` are specs cycled over the seats (default ``greedy``). Item ``i`` uses seed ``seed + i``. Prints a
    Rich progress bar and summary table (unless ``show`` is false), writes each record as one JSON line to
    ``out``, and returns the summary: ``mean_scores`` (per seat), ``endings``, ``mean_actions``,
    ``hands_per_second``, ``hands``. ``ValueError`` for a bad bot spec or option.
    """
    specs = tuple(bots or ("greedy",))
    for spec in specs:
        get_bot("nerts", spec)
    seat_specs = tuple(specs[i % len(specs)] for i in range(players))
    extra = dict(options or {})
    NertsOptions.from_dict({**extra, "players": players})
    items = [(players, seed + i, match_mode, seat_specs, extra) for i in range(hands)]
    started = time.perf_counter()
    totals = [0] * players
    endings: Counter[str] = Counter()
    hand_count = 0
    action_count = 0
    wins = [0] * players
    handle = open_out(out)
    try:
        what = "matches" if match_mode else "hands"
        for result in parallel_map(play_item, items, jobs, f"nerts {what}", show=show):
            for scores in result["scores"]:
                totals = [t + s for t, s in zip(totals, scores, strict=True)]
            endings.update(str(e) for e in result["ended"])
            hand_count += len(result["scores"])
            action_count += sum(result["actions"])
            for w in result["winners"] or []:
                wins[w] += 1
            if handle is not None:
                handle.write(records.dumps(records.from_dict(result["record"])) + "\n")
    finally:
        if handle is not None:
            handle.close()
    elapsed = time.perf_counter() - started
    summary: dict[str, Any] = {
        "hands": hand_count,
        "mean_scores": [t / max(hand_count, 1) for t in totals],
        "endings": dict(endings),
        "mean_actions": action_count / max(hand_count, 1),
        "hands_per_second": hand_count / elapsed if elapsed else 0.0,
    }
    if match_mode:
        summary["wins"] = wins
    if show:
        console = Console()
        table = Table(title=f"Nerts: {hand_count} hands, {players} seats")
        table.add_column("seat")
        table.add_column("bot")
        table.add_column("mean score", justify="right")
        if match_mode:
            table.add_column("matches won", justify="right")
        for s in range(players):
            row = [str(s), seat_specs[s], f"{summary['mean_scores'][s]:.2f}"]
            if match_mode:
                row.append(str(wins[s]))
            table.add_row(*row)
        console.print(table)
        ends = ", ".join(f"{k}: {v}" for k, v in sorted(endings.items()))
        console.print(f"hands ended by {ends}")
        console.print(
            f"mean actions per hand {summary['mean_actions']:.1f}; "
            f"{summary['hands_per_second']:.1f} hands/s over {jobs} process(es)"
        )
    return summary
