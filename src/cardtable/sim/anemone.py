"""Enemy Anemone simulations: bots play whole games (matches) with seats rotated, and a summary table.

``cardtable simulate anemone --players N --games G --bots ismcts:hard,heuristic --seed S [--jobs J] [--out F]``
calls :func:`run`. The bot list is cycled to fill the seats; game ``g`` shifts the seat list by ``g``, so over
``players`` consecutive games every entry plays every seat. Game ``g``'s hand ``h`` is dealt from the seed
``(seed * 1_000_003 + g) * 16 + h`` (``AnemoneMatch.deal_cards``); records carry the cards, never the seed.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cardtable import records
from cardtable.bots import get_bot, make_bot
from cardtable.games.anemone import AnemoneMatch, AnemoneOptions
from cardtable.sim.runner import open_out, parallel_map


@dataclass(frozen=True, slots=True)
class GameTask:
    """One game to play: the bot spec of each seat, the game's number and the run's seed."""

    specs: tuple[str, ...]
    number: int
    seed: int
    rounds: int = 4


@dataclass(slots=True)
class GameResult:
    """A played game: its record (cards written out), totals, winners, final anemone faces, and the
    milliseconds each seat took per decision that had a choice (more than one legal action)."""

    specs: tuple[str, ...]
    record: dict[str, Any]
    totals: list[int]
    winners: list[int]
    anemones: list[list[int]]
    think_ms: list[list[float]] = field(default_factory=list)


def deal_seed(seed: int, game: int, hand: int) -> int:
    """The seed hand ``hand`` of game ``game`` is dealt from (stable)."""
    return (seed * 1_000_003 + game) * 16 + hand


def play_game(task: GameTask) -> GameResult:
    """Play one whole game between bots (a picklable entry point for a process pool)."""
    players = len(task.specs)
    options = AnemoneOptions(players=players, rounds=task.rounds)
    match = AnemoneMatch(options)
    bots = [
        make_bot("anemone", spec, task.seed * 7919 + task.number * 31 + seat)
        for seat, spec in enumerate(task.specs)
    ]
    record = records.new_record(
        "anemone",
        [records.Seat(name=f"seat {seat}", bot=spec) for seat, spec in enumerate(task.specs)],
        {"players": players, "rounds": task.rounds},
    )
    think: list[list[float]] = [[] for _ in range(players)]
    for hand_number in range(task.rounds):
        deal = match.deal_cards(deal_seed(task.seed, task.number, hand_number))
        state = match.start_hand(deal)
        hand_record = records.HandRecord(deal=deal, actions=[])
        ms = 0
        while not state.is_over:
            seat = state.to_act()[0]
            legal = state.legal_actions(seat)
            start = time.perf_counter()
            action = bots[seat].choose(state.view(seat), legal)
            elapsed = (time.perf_counter() - start) * 1000
            if len(legal) > 1:
                think[seat].append(elapsed)
            if action is None:
                raise RuntimeError(f"bot {task.specs[seat]} passed in Enemy Anemone")
            state.apply(seat, action, ms)
            hand_record.actions.append(records.ActionRecord(seat=seat, ms=ms, action=action))
            ms += 1000
        match.finish_hand()
        record.hands.append(hand_record)
    winners = match.winners() or []
    return GameResult(task.specs, record.to_dict(), match.totals[:], winners, match.anemones, think)


def wilson(wins: float, games: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a win rate (``wins`` may be fractional)."""
    if games == 0:
        return 0.0, 1.0
    p = wins / games
    denominator = 1 + z * z / games
    centre = (p + z * z / (2 * games)) / denominator
    half = z * math.sqrt(p * (1 - p) / games + z * z / (4 * games * games)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(slots=True)
class BotStats:
    """One bot spec's figures over a run: seat-games played, wins (shared wins count 1/k), points, anemones."""

    spec: str
    games: int = 0
    wins: float = 0.0
    points: int = 0
    anemones: int = 0
    think_ms: list[float] = field(default_factory=list)

    @property
    def win_rate(self) -> float:
        """Wins per seat-game."""
        return self.wins / self.games if self.games else 0.0


def tasks_for(players: int, games: int, bots: Sequence[str], seed: int, rounds: int = 4) -> list[GameTask]:
    """The games of a run: ``bots`` cycled over the seats, the seat list rotated by one each game."""
    seats = [bots[i % len(bots)] for i in range(players)]
    return [
        GameTask(tuple(seats[(i + g) % players] for i in range(players)), g, seed, rounds)
        for g in range(games)
    ]


def summarize(results: Sequence[GameResult]) -> dict[str, BotStats]:
    """Figures per bot spec over ``results``."""
    stats: dict[str, BotStats] = {}
    for result in results:
        share = 1 / len(result.winners) if result.winners else 0.0
        for seat, spec in enumerate(result.specs):
            entry = stats.setdefault(spec, BotStats(spec))
            entry.games += 1
            entry.points += result.totals[seat]
            entry.anemones += len(result.anemones[seat])
            if seat in result.winners:
                entry.wins += share
            if result.think_ms:
                entry.think_ms.extend(result.think_ms[seat])
    return stats


def stats_table(stats: dict[str, BotStats], title: str) -> Table:
    """A Rich table per bot: seat-games played, win rate with its 95% Wilson interval, mean points and mean
    anemone cards at the end of a game, and milliseconds per decision (mean/max)."""
    table = Table(title=title)
    for column in ("bot", "seats", "win rate", "95% CI", "points", "anemones", "ms/move"):
        table.add_column(column, justify="left" if column == "bot" else "right")
    for entry in stats.values():
        low, high = wilson(entry.wins, entry.games)
        think = (
            f"{sum(entry.think_ms) / len(entry.think_ms):.0f}/{max(entry.think_ms):.0f}"
            if entry.think_ms
            else "-"
        )
        table.add_row(
            entry.spec,
            str(entry.games),
            f"{entry.win_rate:.1%}",
            f"{low:.1%}-{high:.1%}",
            f"{entry.points / entry.games:.1f}",
            f"{entry.anemones / entry.games:.2f}",
            think,
        )
    return table


def run(
    players: int,
    games: int,
    bots: Sequence[str],
    seed: int,
    jobs: int = 1,
    out: Path | None = None,
    rounds: int = 4,
    console: Console | None = None,
    show: bool = True,
) -> dict[str, BotStats]:
    """Play ``games`` games of ``players`` seats between ``bots`` and print the summary table.

    Writes every game's record as one JSON line to ``out`` when given. Returns the figures per bot spec.
    Raises ``ValueError`` for an unknown bot, no bots, or a bad seat count, round count or job count.
    """
    if not bots:
        raise ValueError("bots: name at least one bot")
    for spec in bots:
        get_bot("anemone", spec)
    AnemoneOptions(players=players, rounds=rounds)
    if games < 1:
        raise ValueError(f"games must be at least 1, not {games}")
    tasks = tasks_for(players, games, [get_bot("anemone", spec).spec for spec in bots], seed, rounds)
    handle = open_out(out)
    results: list[GameResult] = []
    try:
        for result in parallel_map(play_game, tasks, jobs, f"anemone {players} seats", show=show):
            results.append(result)
            if handle is not None:
                handle.write(json.dumps(result.record, ensure_ascii=False) + "\n")
    finally:
        if handle is not None:
            handle.close()
    stats = summarize(results)
    (console or Console()).print(stats_table(stats, f"Enemy Anemone, {players} seats, {games} games"))
    return stats
