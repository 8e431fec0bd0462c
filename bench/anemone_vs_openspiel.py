"""Our Enemy Anemone search against OpenSpiel's ISMCTS at equal simulations per move, and our search's speed.

Usage: ``python bench/anemone_vs_openspiel.py [--games 200] [--budgets 500,2500] [--settings pairs,solo]
[--jobs 1] [--seed 1] [--out FILE] [--speed-positions 12] [--openspiel-positions 8]`` (needs the ``ai``
extra);
``python bench/anemone_vs_openspiel.py --summary --out FILE`` prints the figures of the games in ``FILE`` only
(those numbered below ``--games``); ``--from-game N`` plays and counts only games numbered ``N`` and up.

- Strength: four seats, one hand per game (``--rounds`` for more). ``pairs``: two of ours (``ismcts:hard``'s
  search with the simulation budget given and no time cap) against two of OpenSpiel's
  ``open_spiel.python.algorithms.ismcts.ISMCTSBot``, seats alternating and swapped every other game; ``solo``:
  one of ours against three of theirs, our seat rotating. OpenSpiel's bot gets its standard parts: a
  ``RandomRolloutEvaluator`` with its default single rollout (``--rollouts``), UCT child selection, the most
  visited move, no limit on world samples; its ``uct_c`` is in points, the scale of the game's returns
  (``--uct-c``, default 10: a hand deals out about 52 points among four seats). A game is won by the highest
  score; a shared win counts 1/k to each side in it. Win rates with 95% Wilson intervals against par (1/2 for
  pairs, 1/4 for solo), and milliseconds per move of each bot (moves with a choice only; wall clock, on a busy
  machine both bots slow down alike).
- Incremental: every finished game is appended to ``--out`` as one JSON line (setting, budget, game number,
  seed, our seats, returns, time per move); a run skips the games already in the file, so an interrupted run
  resumes where it stopped, and partial runs count. Games run interleaved (by simulations spent: five games of each
  500-simulation setting per game of each 2,500-simulation one), so a run stopped early has figures for every
  setting.
- Speed: our search from four-seat positions (first moves of hands, and positions later in hands), a fixed number
  of simulations each: simulations per CPU second (and per wall-clock second), and the ratio to the baseline
  measured in the same run: the search as first written (:func:`baseline_search`: the same tree search on the
  engine's ``AnemoneState.moves``/``copy``/``playout``, and a card-by-card deal); then the rate at each position
  and issue 28's goal line (>= 30,000 simulations per CPU second at every position, first moves of a hand
  included). To compare two versions of the search in the same conditions, run ``--games 0`` twice in a row with
  ``PYTHONPATH`` pointing at each version's ``src``. The speed lines name the build of the engines measured
  (``cardtable.build.engines()``; compiled: ``scripts/setup --compiled-copy build/compiled``, then
  ``PYTHONPATH=build/compiled``; docs/architecture.md, "Builds").
- OpenSpiel's bot alone (``--openspiel-positions``): CPU milliseconds per move on our game and on
  :class:`PlainGame` (the game without its shortcuts and caches) from the same positions, the ratio, and whether
  both chose the same moves with the same root visit counts (a digest, to compare versions of the game too).
- The shape of OpenSpiel's tree (``--openspiel-tree N``): from the positions every fourth move of ``N`` random
  hands, how many of the tree's nodes other than the root were reached more than once. The bot keys a node by the
  information state of the seat to move in the sampled world, which holds that seat's own hand, dealt anew for
  every simulation; so until the hands are small almost every node below the root is new, is scored by its one
  rollout and never reached again: the search is flat UCT over the root moves.

OpenSpiel's bot draws its world samples from its seed (:func:`cardtable.openspiel.ismcts_bot`), so a game is
the same from run to run as long as our bot plays the same.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import random
import statistics
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyspiel

import cardtable.openspiel as cos
from cardtable.bots.ismcts import LEVELS, Budget, Determinizer, IsmctsBot, Move, _Node, search
from cardtable.build import engines
from cardtable.engine import View
from cardtable.envs.anemone_encoding import action_index
from cardtable.games.anemone import CODE, AnemoneMatch, AnemoneOptions, AnemoneState
from cardtable.sim.anemone import wilson


@dataclass(frozen=True)
class Task:
    setting: str
    simulations: int
    game: int
    seed: int
    rounds: int
    uct_c: float = 10.0
    rollouts: int = 1
    ours_options: str = ""


@dataclass
class Outcome:
    task: Task
    ours: list[int]
    returns: list[float]
    ms: dict[str, list[float]] = field(default_factory=dict)


def our_seats(setting: str, game: int) -> list[int]:
    """Seats our bot plays in game ``game`` of ``setting``."""
    if setting == "pairs":
        return [0, 2] if game % 2 == 0 else [1, 3]
    return [game % 4]


def play(task: Task) -> Outcome:
    """One game (a picklable entry point for the process pool)."""
    game = pyspiel.load_game(cos.GAME_NAME, {"players": 4, "rounds": task.rounds})
    ours = our_seats(task.setting, task.game)
    base = task.seed * 100_003 + task.game * 17
    hard = LEVELS["hard"]
    bots: list[pyspiel.Bot] = []
    for seat in range(4):
        if seat in ours:
            budget = replace(
                hard, simulations=task.simulations, seconds=3600.0, **budget_options(task.ours_options)
            )
            bots.append(cos.CardtableBot(seat, IsmctsBot(base + seat, budget)))
        else:
            bots.append(
                cos.ismcts_bot(
                    game, task.simulations, uct_c=task.uct_c, seed=base + seat, rollouts=task.rollouts
                )
            )
    rng = np.random.RandomState(base)
    state = game.new_initial_state()
    ms: dict[str, list[float]] = {"ours": [], "theirs": [], "ours_cpu": [], "theirs_cpu": []}
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(outcomes, p=probs)))
            continue
        seat = state.current_player()
        choices = len(state.legal_actions())
        start = time.perf_counter()
        cpu = time.process_time()
        action = bots[seat].step(state)
        elapsed = (time.perf_counter() - start) * 1000
        if choices > 1:
            side = "ours" if seat in ours else "theirs"
            ms[side].append(elapsed)
            ms[f"{side}_cpu"].append((time.process_time() - cpu) * 1000)
        state.apply_action(int(action))
    return Outcome(task, ours, list(state.returns()), ms)


def budget_options(text: str) -> dict[str, Any]:
    """``--ours-options`` (``"own_win=1,own_vs_best=1"``) as :class:`Budget` fields; a bad name is a
    ``ValueError``."""
    fields = Budget.__dataclass_fields__
    out: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = item.partition("=")
        if name not in fields or name in ("simulations", "seconds"):
            raise ValueError(f"--ours-options: no such search option {name!r}")
        kind = fields[name].type
        out[name] = (
            bool(int(value))
            if kind in ("bool", bool)
            else int(value)
            if kind in ("int", int)
            else float(value)
        )
    return out


def our_share(outcome: Outcome) -> float:
    """Our share of the game's win (1/k per seat among k tied top seats)."""
    best = max(outcome.returns)
    top = [s for s, r in enumerate(outcome.returns) if r == best]
    return sum(1 for s in top if s in outcome.ours) / len(top)


def baseline_rewards(state: AnemoneState, anemone_weight: float) -> list[float]:
    points = state.points
    total = sum(points)
    n = state.players
    out = []
    if anemone_weight:
        held = [sum(faces) for faces in state.anemones]
        all_held = sum(held)
    for s in range(n):
        margin = points[s] - (total - points[s]) / (n - 1)
        if anemone_weight:
            margin += anemone_weight * (held[s] - (all_held - held[s]) / (n - 1))
        out.append(margin / 10.0)
    return out


def baseline_search(view: View, budget: Budget, rng: random.Random) -> tuple[Move, dict[Move, int]]:
    """The baseline: our search as it was first written (the same SO-ISMCTS, with the engine's
    ``AnemoneState.moves``/``copy``/``playout`` and a card-by-card deal of each determinization)."""
    started = time.perf_counter()
    seat = int(view["seat"])
    det = Determinizer(view)
    hands, deck = det.sample(rng)
    base = AnemoneState.from_view(view, [[CODE[c] for c in h] for h in hands], [CODE[c] for c in deck])
    last_hand = view.get("round") is not None and view.get("round") == view.get("rounds")
    anemone_weight = 0.1 if last_hand else 0.5
    root = _Node(None, None, seat)
    c = budget.exploration
    deadline = started + budget.seconds
    sims = 0
    log = math.log
    sqrt = math.sqrt
    while sims < budget.simulations:
        if sims and sims % 8 == 0 and time.perf_counter() > deadline:
            break
        sims += 1
        state = base.copy()
        if sims > 1:
            hands, deck = det.sample_card_by_card(rng)
            state.hands = hands
            state.deck = deck
        node = root
        # selection and expansion
        while not state.over:
            moves = state.moves()
            untried = [m for m in moves if m not in node.children]
            if untried:
                move = untried[int(rng.random() * len(untried))]
                child = _Node(node, move, state.turn)
                node.children[move] = child
                for m in moves:
                    if m in node.children:
                        node.children[m].avail += 1
                state.step(*move)
                node = child
                break
            best: _Node | None = None
            best_score = -1e18
            for m in moves:
                ch = node.children[m]
                ch.avail += 1
                score = ch.reward / ch.visits + c * sqrt(log(ch.avail) / ch.visits)
                if score > best_score:
                    best_score = score
                    best = ch
            assert best is not None and best.move is not None
            state.step(*best.move)
            node = best
        state.playout(rng)
        rewards = baseline_rewards(state, anemone_weight)
        walk: _Node | None = node
        while walk is not None:
            walk.visits += 1
            walk.reward += rewards[walk.seat]
            walk = walk.parent
    visits = {m: ch.visits for m, ch in root.children.items()}
    best_move = max(root.children.values(), key=lambda ch: (ch.visits, ch.reward)).move
    assert best_move is not None
    return best_move, visits


SPEED_GOAL = 30_000
"""Issue 28's goal: our search's simulations per CPU second, at every position of :func:`speed`."""


def speed(positions: int, seed: int, simulations: int = 4000) -> None:
    """Simulations per second of our search and of the baseline (the search as first written).

    Each search runs a fixed number of simulations; the rate is given per second of this process's CPU time
    (what the search gets on an idle core; the wall-clock rate is printed too, lower on a busy machine), with the
    garbage collector off as :meth:`IsmctsBot.choose` runs it. Then a
    search per position with a 1 s cap and no simulation limit: the simulations it reached in that second, and
    the share of a core the process had meanwhile.
    """
    rng = random.Random(seed)
    hard = LEVELS["hard"]  # its options (playout policy, rewards) with the simulations and time given here
    rates: dict[str, list[float]] = {
        "fast": [],
        "engine": [],
        "first": [],
        "wall": [],
        "second": [],
        "share": [],
    }
    gc.disable()  # as IsmctsBot.choose runs its search (both searches alike)
    for i in range(positions):
        match = AnemoneMatch(AnemoneOptions(players=4))
        state = match.start_hand({"seed": seed * 1000 + i})
        if i % 2:
            for _ in range(rng.randrange(1, 30)):
                seat = state.to_act()[0]
                state.apply(seat, rng.choice(state.legal_actions(seat)))
        seat = state.to_act()[0]
        view = state.view(seat)
        for engine in (False, True):
            cpu = time.process_time()
            wall = time.perf_counter()
            run = baseline_search if engine else search
            _, visits = run(view, replace(hard, simulations=simulations, seconds=3600.0), random.Random(i))
            done = sum(visits.values())
            rate = done / max(1e-9, time.process_time() - cpu)
            rates["engine" if engine else "fast"].append(rate)
            if not engine:
                rates["wall"].append(done / (time.perf_counter() - wall))
                if i % 2 == 0:
                    rates["first"].append(rate)
        cpu = time.process_time()
        wall = time.perf_counter()
        _, visits = search(view, replace(hard, simulations=10**9, seconds=1.0), random.Random(i))
        rates["second"].append(sum(visits.values()))
        rates["share"].append((time.process_time() - cpu) / (time.perf_counter() - wall))
    gc.enable()
    fast, engine = statistics.mean(rates["fast"]), statistics.mean(rates["engine"])
    print(f"engines: {engines()} (cardtable.build; docs/architecture.md, 'Builds')", flush=True)
    print(
        f"speed, {positions} four-seat positions, {simulations} simulations each: {fast:,.0f} simulations per "
        f"CPU second (min {min(rates['fast']):,.0f}; first move of a hand {statistics.mean(rates['first']):,.0f}); "
        f"baseline (as first written) {engine:,.0f}; ratio {fast / engine:.2f}x; wall clock {statistics.mean(rates['wall']):,.0f}/s",
        flush=True,
    )
    print(
        f"speed, 1 s per move: {statistics.mean(rates['second']):,.0f} simulations on average "
        f"(min {min(rates['second']):,.0f}), with {statistics.mean(rates['share']):.0%} of a core",
        flush=True,
    )
    worst = min(rates["fast"])
    print(
        f"speed by position (simulations per CPU second; even positions are first moves of a hand): "
        f"{', '.join(f'{r:,.0f}' for r in rates['fast'])}",
        flush=True,
    )
    verdict = "met" if worst >= SPEED_GOAL else "NOT met"
    print(
        f"goal: >= {SPEED_GOAL:,} simulations per CPU second at every position: {verdict} "
        f"(worst {worst:,.0f}, {worst / SPEED_GOAL:.2f} x the goal; mean {fast / SPEED_GOAL:.2f} x; {engines()})",
        flush=True,
    )


class PlainState(cos.EnemyAnemoneState):
    """The OpenSpiel game without its shortcuts and caches, the baseline of :func:`openspiel_speed`: legal actions
    asked through OpenSpiel's C++ side and listed from the engine's own ``legal_actions`` (and listed again for
    every action applied), information state strings built from the whole history each time, the resampling's
    preparation redone for every world sample. Answers are the same: a test of the shortcuts too."""

    def legal_actions(self, player: int | None = None) -> list[int]:
        if player is None:
            return list(pyspiel.State.legal_actions(self))
        return list(pyspiel.State.legal_actions(self, player))

    def _legal_actions(self, player: int) -> list[int]:
        hand = self._hand()
        if hand is None or player != hand.turn:
            return []
        return sorted(action_index(action) for action in hand.legal_actions(player))

    def _apply_action(self, action: int) -> None:
        self.core.actions = None
        super()._apply_action(action)

    def information_state_string(self, player: int | None = None) -> str:
        return cos.information_state_from_scratch(self, self.current_player() if player is None else player)

    def resample_from_infostate(
        self, player_id: int, probability_sampler: Any = None
    ) -> cos.EnemyAnemoneState:
        self.core.resampling = None
        return super().resample_from_infostate(player_id, probability_sampler)


class PlainGame(cos.EnemyAnemoneGame):
    """The game whose states are :class:`PlainState` (not registered: made directly)."""

    def new_initial_state(self) -> PlainState:
        return PlainState(self)


def openspiel_speed(positions: int, seed: int, budgets: list[int]) -> None:
    """Milliseconds of CPU per move of OpenSpiel's ``ISMCTSBot`` (the settings of the strength test) on our
    game, from ``positions`` four-seat positions (dealt and played into at random from ``seed``), per budget.

    Almost all of it is the game's Python methods (``clone``, ``apply_action``, ``legal_actions``,
    ``information_state_string``, ``resample_from_infostate``) and NumPy's ``choice`` in the bot's random
    rollouts, so this is the figure to watch when changing ``cardtable.openspiel``: the bot's algorithm and
    settings never change. The same searches run on :class:`PlainGame` (the game without its shortcuts and
    caches) give the ratio, and must choose the same moves with the same root visit counts; the line ends with a
    digest of those, to compare between versions too (the same ``--seed``).
    """
    params = {"players": 4, "rounds": 1}
    games = {"ours": pyspiel.load_game(cos.GAME_NAME, params), "plain": PlainGame(params)}
    rng = random.Random(seed)
    paths = []
    for _ in range(positions):
        state = games["ours"].new_initial_state()
        path = []
        while state.is_chance_node():
            path.append(rng.choice([a for a, _ in state.chance_outcomes()]))
            state.apply_action(path[-1])
        for _ in range(rng.randrange(0, 30)):
            path.append(rng.choice(state.legal_actions()))
            state.apply_action(path[-1])
        while len(state.legal_actions()) < 2:
            path.append(state.legal_actions()[0])
            state.apply_action(path[-1])
        paths.append(path)
    for simulations in budgets:
        cpu_ms: dict[str, list[float]] = {"ours": [], "plain": []}
        digests: dict[str, str] = {}
        for name, game in games.items():
            digest = hashlib.sha256()
            for i, path in enumerate(paths):
                state = game.new_initial_state()
                for action in path:
                    state.apply_action(action)
                bot = cos.ismcts_bot(game, simulations, seed=seed + i)
                cpu = time.process_time()
                action = bot.step(state)
                cpu_ms[name].append((time.process_time() - cpu) * 1000)
                visits = sorted((int(a), child.visits) for a, child in bot._root_node.child_info.items())
                digest.update(repr((int(action), visits)).encode())
            digests[name] = digest.hexdigest()[:12]
        ours, plain = statistics.mean(cpu_ms["ours"]), statistics.mean(cpu_ms["plain"])
        same = "the same" if digests["ours"] == digests["plain"] else "DIFFERENT"
        print(
            f"OpenSpiel ISMCTSBot speed, {positions} four-seat positions, {simulations} simulations: "
            f"{ours:,.0f} ms CPU per move (min {min(cpu_ms['ours']):,.0f}, max {max(cpu_ms['ours']):,.0f}); "
            f"on the plain game {plain:,.0f}; ratio {plain / ours:.2f}x; moves and root visits {same} "
            f"(digest {digests['ours']})",
            flush=True,
        )


def openspiel_tree(hands: int, seed: int, simulations: int) -> None:
    """Print the shape of OpenSpiel's ``ISMCTSBot`` tree on our game (four seats, ``simulations`` per search):
    for the positions after 0, 4, 8, ... moves of ``hands`` hands played at random from ``seed``, the tree's
    node count and how many nodes other than the root were reached more than once (a node is scored by one
    rollout when first reached, and only grows children when reached again), summed over the hands."""
    game = pyspiel.load_game(cos.GAME_NAME, {"players": 4, "rounds": 1})
    rng = random.Random(seed)
    totals: dict[int, list[int]] = {}
    for hand in range(hands):
        state = game.new_initial_state()
        moves = 0
        while not state.is_terminal():
            if state.is_chance_node():
                state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()]))
                continue
            legal = state.legal_actions()
            if moves % 4 == 0 and len(legal) > 1:
                bot = cos.ismcts_bot(game, simulations, seed=seed + hand)
                bot.run_search(state.clone())
                again = sum(
                    1 for node in bot._nodes.values() if node is not bot._root_node and node.total_visits > 0
                )
                row = totals.setdefault(moves, [0, 0, 0])
                row[0] += 1
                row[1] += len(bot._nodes)
                row[2] += again
            state.apply_action(rng.choice(legal))
            moves += 1
    print(f"OpenSpiel ISMCTSBot tree, {simulations} simulations, {hands} hands (sums over the searches):")
    for moves, (searches, nodes, again) in sorted(totals.items()):
        print(
            f"  after {moves:2d} moves: {searches} searches, {nodes:,} nodes, "
            f"{again:,} below the root reached more than once ({again / max(1, nodes - searches):.1%})"
        )


def _key(task: Task) -> tuple[str, int, int, int, int, float, int, str]:
    return (
        task.setting,
        task.simulations,
        task.game,
        task.seed,
        task.rounds,
        task.uct_c,
        task.rollouts,
        task.ours_options,
    )


def load(path: Path | None) -> list[Outcome]:
    """The games already in ``path`` (none when it does not exist)."""
    if path is None or not path.exists():
        return []
    outcomes = []
    for line in path.read_text().splitlines():
        if line.strip():
            data = json.loads(line)
            outcomes.append(Outcome(Task(**data["task"]), data["ours"], data["returns"], data["ms"]))
    return outcomes


def summary(outcomes: list[Outcome]) -> None:
    """Print the figures of each setting and budget found in ``outcomes``."""
    groups: dict[tuple[int, str, float, int, str], list[Outcome]] = {}
    for outcome in outcomes:
        task = outcome.task
        key = (task.simulations, task.setting, task.uct_c, task.rollouts, task.ours_options)
        groups.setdefault(key, []).append(outcome)
    for (simulations, setting, uct_c, rollouts, options), group in sorted(groups.items()):
        wins = sum(our_share(o) for o in group)
        low, high = wilson(wins, len(group))
        par = 0.5 if setting == "pairs" else 0.25
        per_move = {
            side: statistics.mean([m for o in group for m in o.ms.get(side, [])] or [0.0])
            for side in ("ours", "theirs", "ours_cpu", "theirs_cpu")
        }
        margin = statistics.mean(
            statistics.mean(o.returns[s] for s in o.ours)
            - statistics.mean(o.returns[s] for s in range(4) if s not in o.ours)
            for o in group
        )
        verdict = "ahead" if low > par else ("behind" if high < par else "not clear of par")
        print(
            f"{setting:5} {simulations:>5} sims (OpenSpiel uct_c {uct_c:g}, {rollouts} rollout"
            f"{'; ours ' + options if options else ''}): ours won "
            f"{wins / len(group):.1%} of {len(group)} games (95% {low:.1%}-{high:.1%}, par {par:.0%}: {verdict}); "
            f"points per seat ours-theirs {margin:+.2f}; ms/move (wall; CPU) ours {per_move['ours']:.0f}; "
            f"{per_move['ours_cpu']:.0f}, OpenSpiel {per_move['theirs']:.0f}; {per_move['theirs_cpu']:.0f}",
            flush=True,
        )


def interleave(groups: list[list[Task]]) -> list[Task]:
    """The tasks of every group in one order, each group's games spread evenly by simulations spent: a game at
    2,500 simulations comes after five at 500 (ties: the groups' order)."""
    keyed = [
        ((task.game + 1) * task.simulations, i, task) for i, group in enumerate(groups) for task in group
    ]
    return [task for _, _, task in sorted(keyed, key=lambda item: (item[0], item[1]))]


def main() -> None:
    """Run the settings and budgets asked for (skipping games already in ``--out``) and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--games",
        type=int,
        default=200,
        help="games per setting and budget, numbered from 0 (--summary counts those numbered below it too)",
    )
    parser.add_argument(
        "--from-game",
        type=int,
        default=0,
        help="play and count only games numbered this and up (--from-game 100 leaves out games 0-99, on which "
        "ismcts:hard's options were chosen at 500 simulations)",
    )
    parser.add_argument("--budgets", default="500,2500", help="simulations per move, comma-separated")
    parser.add_argument("--settings", default="pairs,solo", help="pairs, solo or both")
    parser.add_argument("--rounds", type=int, default=1, help="hands per game")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--uct-c", type=float, default=10.0, help="OpenSpiel's UCT constant, in points")
    parser.add_argument("--rollouts", type=int, default=1, help="OpenSpiel's random rollouts per evaluation")
    parser.add_argument(
        "--ours-options",
        default="",
        help="search options of ours changed from ismcts:hard's, as Budget fields (own_win=1,own_vs_best=1)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="JSON lines file of finished games (resumable)"
    )
    parser.add_argument("--summary", action="store_true", help="only print the figures of the games in --out")
    parser.add_argument("--speed-positions", type=int, default=12, help="0 to skip the speed test")
    parser.add_argument(
        "--openspiel-positions",
        type=int,
        default=0,
        help="time OpenSpiel's bot alone from this many positions at each budget (CPU ms per move)",
    )
    parser.add_argument(
        "--openspiel-tree",
        type=int,
        default=0,
        help="print the shape of OpenSpiel's tree from positions in this many random hands (smallest budget)",
    )
    parser.add_argument("--progress", action="store_true", help="print every game as it ends")
    args = parser.parse_args()
    done = [o for o in load(args.out) if args.from_game <= o.task.game < args.games]
    if args.summary:
        summary(done)
        return
    if args.speed_positions:
        speed(args.speed_positions, args.seed)
    budgets = sorted(int(b) for b in args.budgets.split(","))
    if args.openspiel_positions:
        openspiel_speed(args.openspiel_positions, args.seed, budgets)
    if args.openspiel_tree:
        openspiel_tree(args.openspiel_tree, args.seed, budgets[0])
    print(
        f"OpenSpiel's ISMCTSBot: RandomRolloutEvaluator({args.rollouts}), UCT c {args.uct_c:g} (points), "
        "most visited move; ours: ismcts:hard's search at the same simulations, no time cap",
        flush=True,
    )
    seen = {_key(o.task) for o in done}
    groups = [
        [
            task
            for g in range(args.from_game, args.games)
            if _key(
                task := Task(
                    setting,
                    simulations,
                    g,
                    args.seed,
                    args.rounds,
                    args.uct_c,
                    args.rollouts,
                    args.ours_options,
                )
            )
            not in seen
        ]
        for simulations in budgets
        for setting in args.settings.split(",")
    ]
    tasks = interleave(groups)
    print(f"{len(done)} games already in {args.out}; {len(tasks)} to play", flush=True)
    start = time.perf_counter()
    outcomes = list(done)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
    handle = args.out.open("a") if args.out is not None else None
    try:
        with ProcessPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(play, task) for task in tasks]
            for future in as_completed(futures):
                outcome = future.result()
                outcomes.append(outcome)
                if handle is not None:
                    record = {"task": asdict(outcome.task), "ours": outcome.ours, "returns": outcome.returns}
                    handle.write(json.dumps({**record, "ms": outcome.ms}) + "\n")
                    handle.flush()
                if args.progress:
                    task = outcome.task
                    print(
                        f"  {task.setting} {task.simulations} game {task.game}: ours in seats {outcome.ours}, "
                        f"returns {outcome.returns}, our share of the win {our_share(outcome):.2f} "
                        f"({time.perf_counter() - start:.0f} s)",
                        flush=True,
                    )
    finally:
        if handle is not None:
            handle.close()
    summary(outcomes)


if __name__ == "__main__":
    main()
