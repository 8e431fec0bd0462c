"""Bot-only Nerts on a simulated clock: one hand (:func:`play_timed_hand`) or many (:func:`run`, ``cardtable simulate``).

The clock, as at a table with people:

- each seat *looks* (its view and legal actions at that moment), its bot chooses, and the play is *sent* one
  reaction time later (the bot's ``reaction_ms``, ``min_step_ms`` for instant bots, plus a seeded jitter of up to
  a quarter of it); a seat ``delay`` ms away (0 unless simulating a far player) sees the table that much late and
  its play *arrives* that much after it was sent. Meanwhile the others play on, so a card seen free may be gone:
  that is a race, won or lost as at a table;
- arrivals go through :class:`cardtable.race.RaceOrderer`, the same ordering the server uses (send-time order for
  racing plays, compensation capped at ``cap_ms``; ``cap_ms=0``: arrival order), and the engine's tie window
  judges the stamps it gives;
- the table's clock actions (:meth:`NertsState.clock_action`: the end of the in-flight window after a Nerts call,
  the stall guard's rotate) go through the same ordering when they fall due;
- a seat looks again as soon as its play has been applied or refused; a bot that waits (``None``) looks again one
  reaction later. Every hand ends: after ``max_stall_rotates`` stall-guard rotates with no progress between them,
  or after ``max_actions`` actions, the table ends it (``end_hand`` reason ``stalled``).

Races are tallied per seat: a *race* is a foundation place (a foundation and a rank) that two or more seats sent a
card for; each entrant won it, tied (the tie window let both cards play) or lost (refused).

>>> from cardtable.games.nerts import NertsMatch, NertsOptions
>>> from cardtable.bots.nerts import GreedyBot
>>> match = NertsMatch(NertsOptions(players=2))
>>> result = play_hand(match, [GreedyBot(1), GreedyBot(2)], seed=5)
>>> result.ended in ("nerts", "stuck", "stalled")
True
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from rich.console import Console
from rich.table import Table

from cardtable import records
from cardtable.bots import Bot, get_bot
from cardtable.bots.nerts import GreedyBot, own_layout
from cardtable.cards import RANK_CODES, SUITS
from cardtable.engine import Action, HandResult, IllegalAction, View
from cardtable.games.nerts import NertsMatch, NertsOptions, NertsState
from cardtable.race import CLOCK_KEYS, DEFAULT_CAP_MS, RaceOrderer, race_keys
from cardtable.sim.anemone import wilson
from cardtable.sim.runner import open_out, parallel_map

__all__ = ["BotTally", "mean_interval", "play_hand", "play_item", "play_timed_hand", "run", "wilson"]


class _Play:
    """A play on its way to the table: ``place`` is the (foundation id, rank) of a card to a started foundation,
    ``due`` a clock action's due time, ``stamp`` the ms the table applies it at once released (a plain class, not
    a dataclass: compiled with mypyc, a native one)."""

    __slots__ = ("action", "due", "place", "seat", "sent", "stamp")

    def __init__(
        self,
        seat: int | None,
        action: dict[str, Any],
        sent: int,
        place: tuple[int, int] | None = None,
        due: int | None = None,
    ) -> None:
        self.seat = seat
        self.action = action
        self.sent = sent
        self.place = place
        self.due = due
        self.stamp = 0


_NEVER: Final = 1 << 60  # later than any time (a short int, as mypyc keeps unboxed: below 2 ** 62)


class _Seat:
    """One seat's clock in :func:`play_timed_hand`: its bot, reaction ``step`` and one-way ``lag`` (ms), when it
    ``look``s next, and its play on the way (``flying``), which ``arrives`` at that ms, sent as the ``order``-th
    play (ties). Fields rather than parallel lists: compiled with mypyc, a native class keeps its ints unboxed."""

    __slots__ = ("arrives", "choose", "flying", "greedy", "lag", "look", "order", "step")

    def __init__(self, bot: Bot, step: int, lag: int, look: int) -> None:
        # the greedy bot called directly (a native call once compiled), any other through its bound method
        self.greedy: GreedyBot | None = bot if isinstance(bot, GreedyBot) else None
        self.choose: Callable[[View, Sequence[Action]], Action | None] = bot.choose
        self.step = step
        self.lag = lag
        self.look = look
        self.arrives = _NEVER
        self.order = 0
        self.flying: _Play | None = None


_RANK: Final = {code: i + 1 for i, code in enumerate(RANK_CODES)}
# what _place reads from an action, looked up rather than parsed: the usual foundation ids, and the rank of each
# standard card code (none for a joker)
_FOUNDATION_IDS: Final = {f"foundation:{fid}": fid for fid in range(64)}
_CODE_RANK: Final = {rank + suit: i + 1 for i, rank in enumerate(RANK_CODES) for suit in SUITS}


def _below(getrandbits: Callable[[int], int], n: int) -> int:
    """``rng.randrange(n)`` for ``n >= 1`` given ``rng.getrandbits``, drawn the same way (``random.Random``'s
    ``getrandbits`` rejection: the same numbers from the same state), without its Python-level layers: the
    simulator draws once per look."""
    bits = n.bit_length()
    r = getrandbits(bits)
    while r >= n:
        r = getrandbits(bits)
    return r


def _place(view: View, seat: int, action: Action) -> tuple[int, int] | None:
    """The foundation place a move to ``foundation:ID`` aims at, read from the seat's own view."""
    # "to" first: most actions are flips (none) or moves to work piles; typed locals, read natively when compiled
    dst = action.get("to")
    if not isinstance(dst, str) or not dst.startswith("foundation:") or dst == "foundation:new":
        return None
    kind = action.get("type")
    if not isinstance(kind, str) or kind != "move":
        return None
    if "as" in action:
        shown: str = action["as"]
        rank = _RANK[shown[:-1]]
    else:
        layout = own_layout(view, seat)
        src: str = action["from"]
        code: str | None
        if src == "nerts" or src == "waste":
            pile: dict[str, Any] = layout[src]
            code = pile["top"]
        else:
            work: list[list[str]] = layout["work"]
            code = work[int(src[5:])][-1]
        rank = _CODE_RANK.get(code, 0) if code is not None else 0
    fid = _FOUNDATION_IDS.get(dst)
    return (fid if fid is not None else int(dst[11:]), rank)


def play_timed_hand(
    match: NertsMatch,
    bots: Sequence[Bot],
    seed: int,
    record: records.Record | None = None,
    *,
    reactions: Sequence[int] | None = None,
    delays: Sequence[int] | None = None,
    cap_ms: int = DEFAULT_CAP_MS,
    min_step_ms: int = 100,
    max_stall_rotates: int = 3,
    max_actions: int = 20000,
) -> HandResult:
    """Deal the next hand of ``match`` from ``seed``, let ``bots`` (one per seat) play it on the clock, score it.

    ``reactions`` are the seats' reaction times in ms (default ``min_step_ms``); ``delays`` their one-way network
    delays in ms (default 0), which the ordering compensates up to ``cap_ms`` (0: no compensation). When
    ``record`` is given the hand (its deal written out as packs) and every applied action, with the ``ms`` the
    rules used, are appended to it. Returns the :class:`~cardtable.engine.HandResult` that
    :meth:`NertsMatch.finish_hand` scored, with ``extra``: ``called`` (seat or ``None``), ``nerts_left`` (cards
    per seat), ``races`` (per seat ``[entered, won, tied, lost]``), ``earlier_won`` (``[races decided, won by the
    earlier sender]``), ``actions`` and ``refused`` (plays the engine refused). ``ValueError`` when the bots,
    reactions or delays do not match the seats.
    """
    players = match.players
    if len(bots) != players:
        raise ValueError(f"bots: {len(bots)} bots for {players} seats")
    if reactions is not None and len(reactions) != players:
        raise ValueError(f"reactions: {len(reactions)} for {players} seats")
    if delays is not None and (len(delays) != players or any(d < 0 for d in delays)):
        raise ValueError(f"delays: one per seat, 0 or more ms (got {list(delays)})")
    steps = [max(r, min_step_ms) for r in (reactions or [0] * players)]
    lags = list(delays or [0] * players)
    deal = match.deal_cards(seed)
    state: NertsState = match.start_hand(deal)
    log: list[records.ActionRecord] | None = None
    if record is not None:
        hand = records.HandRecord(deal=deal, actions=[])
        record.hands.append(hand)
        log = hand.actions
    rng = random.Random(seed ^ 0x5EED)
    compensated = bool(cap_ms) and any(lags)
    # the ordering: ``race`` when delays are compensated; else (``None``) what RaceOrderer does then, at a fraction
    # of the cost: each play goes as soon as it has arrived, in arrival order, stamped with its arrival time, never
    # earlier than the last stamp (``last_stamp``)
    race: RaceOrderer[_Play] | None = RaceOrderer(cap_ms) if compensated else None
    last_stamp = 0
    if race is not None:
        for seat, lag in enumerate(lags):
            race.set_delay(seat, lag)
    shared = match.options.partnerships
    never = _NEVER
    # the plays on their way, one per seat at most (a seat looks again only once its play is applied or refused);
    # they reach the table in (arrival, order) order
    seats = [_Seat(bots[s], steps[s], lags[s], rng.randint(0, steps[s] // 4)) for s in range(players)]
    first_arrival = never  # the earliest of the seats' arrives
    count = 0
    clock: tuple[int, dict[str, Any]] | None = None
    clock_sent: tuple[int, str] | None = None
    clock_id: tuple[int, str] | None = None  # clock's (due, type)
    stall_rotates = 0
    progress = state.last_progress_ms
    actions = refused = 0
    table_actions = 0
    attempts: dict[tuple[int, int], list[tuple[int, int, str]]] = {}  # place -> (seat, sent, outcome)
    filled: set[tuple[int, int]] = set()
    getrandbits = rng.getrandbits
    # the clock action changes only with the last progress, a call, and a rotate (the stall guard's base): after a
    # table action or a seat's "stuck" (all stuck rotates), ``clock_stale`` asks for it again
    clock_stale = True
    key_progress = -1
    key_uncalled = True
    clock_due = never  # when the clock action not yet sent falls due (never: none)
    while not state.is_over:
        if clock_stale or state.last_progress_ms != key_progress or (state.called is None) != key_uncalled:
            clock_stale = False
            key_progress, key_uncalled = state.last_progress_ms, state.called is None
            clock = state.clock_action()
            clock_id = (clock[0], clock[1]["type"]) if clock is not None else None
            clock_due = clock[0] if clock is not None and clock_id != clock_sent else never
        now = never
        for one in seats:
            if one.look < now:
                now = one.look
        if first_arrival < now:
            now = first_arrival
        if race is not None and race.held:
            due = race.next_due()
            if due is not None and due < now:
                now = due
        if clock_due < now:
            now = clock_due
        if now < state.ms:
            now = state.ms
        # stamped with ``now`` without compensation (never earlier than the last stamp); with it, race.release's
        released: list[_Play] = []  # what reaches the table now, in order, each with its stamp
        stamp = now if now > last_stamp else last_stamp
        if clock is not None and clock_due <= now and clock_due != never:
            clock_sent = clock_id
            clock_due = never
            clock_play = _Play(None, dict(clock[1]), clock[0], due=clock[0])
            if race is not None:
                race.submit(clock_play, None, now, CLOCK_KEYS)
            else:
                clock_play.stamp = stamp
                released.append(clock_play)
        while first_arrival <= now:
            seat = -1
            for s in range(players):
                one = seats[s]
                if one.arrives == first_arrival and (seat < 0 or one.order < seats[seat].order):
                    seat = s
            one = seats[seat]
            play = one.flying
            assert play is not None
            one.flying = None
            one.arrives = never
            first_arrival = never
            for other in seats:
                if other.arrives < first_arrival:
                    first_arrival = other.arrives
            if race is not None:
                race.submit(play, seat, now, race_keys(play.action, shared, state.layout_index(seat)))
            else:
                play.stamp = stamp
                released.append(play)
        if race is not None:
            if race.held:
                for play, ms in race.release(now):
                    play.stamp = ms
                    released.append(play)
        elif released:
            last_stamp = stamp
        for play in released:
            if state.is_over:
                break
            ms = play.stamp
            if play.seat is None:
                if state.clock_action() != (play.due, play.action):
                    continue  # the clock moved on (progress, or a call) before this fell due
                table_action = play.action
                if table_action["type"] == "rotate":
                    if state.last_progress_ms != progress:
                        progress = state.last_progress_ms
                        stall_rotates = 0
                    stall_rotates += 1
                    if stall_rotates > max_stall_rotates:
                        table_action = {"type": "end_hand", "reason": "stalled"}
                _apply(state, None, table_action, ms, log)
                table_actions += 1
                clock_stale = True
                continue
            seat = play.seat
            seats[seat].look = now
            try:
                _apply(state, seat, play.action, ms, log)
            except IllegalAction:
                refused += 1
                outcome = "lost"
            else:
                actions += 1
                kind = play.action.get("type")
                if isinstance(kind, str) and kind == "stuck":  # a str compare a compiled build makes natively
                    clock_stale = True
                outcome = "tied" if play.place is not None and play.place in filled else "won"
                if play.place is not None:
                    filled.add(play.place)
            if play.place is not None:
                attempts.setdefault(play.place, []).append((seat, play.sent, outcome))
        if state.is_over:
            break
        if actions >= max_actions:
            _apply(
                state,
                None,
                {"type": "end_hand", "reason": "stalled"},
                max(now, race.last_ms if race is not None else last_stamp),
                log,
            )
            table_actions += 1
            break
        for seat in range(players):
            one = seats[seat]
            if one.look != now:
                continue
            step = one.step + _below(getrandbits, one.step // 4 + 1)  # randint(0, N) draws the same
            view = state.view(seat)
            legal = state.legal_actions(seat, now)
            greedy = one.greedy
            action = greedy.choose(view, legal) if greedy is not None else one.choose(view, legal)
            if action is None:
                one.look = now + step
                continue
            one.look = never
            # the seat saw the table as of ``now`` only ``lag`` ms later (updates travel too), then reacted
            sent = now + one.lag + step
            play = _Play(seat, action, sent, _place(view, seat, action))  # actions are read-only: no copy
            one.arrives = sent + one.lag
            one.order = count
            one.flying = play
            if one.arrives < first_arrival:
                first_arrival = one.arrives
            count += 1
    result = match.finish_hand()
    tally = [[0, 0, 0, 0] for _ in range(players)]
    decided = earlier = 0
    for entries in attempts.values():
        if len({seat for seat, _, _ in entries}) < 2:
            continue
        for seat, _, outcome in entries:
            row = tally[seat]
            row[0] += 1
            row[{"won": 1, "tied": 2, "lost": 3}[outcome]] += 1
        if not any(outcome == "tied" for _, _, outcome in entries):
            first = min(entries, key=lambda e: e[1])
            if sum(1 for e in entries if e[1] == first[1]) == 1:
                decided += 1
                earlier += first[2] == "won"
    view = state.view(None)
    result.extra.update(
        called=state.called,
        nerts_left=[view["layouts"][state.layout_index(s)]["nerts"]["count"] for s in range(players)],
        races=tally,
        earlier_won=[decided, earlier],
        actions=actions,
        applied=actions + table_actions,
        refused=refused,
    )
    return result


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
    """:func:`play_timed_hand` with every seat near the server (no network delay)."""
    return play_timed_hand(
        match,
        bots,
        seed,
        record,
        reactions=reactions,
        min_step_ms=min_step_ms,
        max_stall_rotates=max_stall_rotates,
        max_actions=max_actions,
    )


def _apply(
    state: NertsState,
    seat: int | None,
    action: dict[str, Any],
    ms: int,
    log: list[records.ActionRecord] | None,
) -> None:
    state.play(seat, action, ms)  # the simulator reads no events
    if log is not None:
        log.append(records.ActionRecord(seat=seat, ms=ms, action=dict(action)))


def mean_interval(values: Sequence[float], z: float = 1.96) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean and its 95% normal interval (``z`` standard errors); zeros when empty."""
    n = len(values)
    if n == 0:
        return 0.0, 0.0, 0.0
    mean = sum(values) / n
    if n == 1:
        return mean, mean, mean
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = z * math.sqrt(var / n)
    return mean, mean - half, mean + half


Item = tuple[int, int, bool, tuple[str, ...], dict[str, Any], tuple[int, ...], int, bool]


def play_item(item: tuple[Any, ...]) -> dict[str, Any]:
    """One simulation unit, picklable for a process pool: a hand, or a whole match when ``match_mode``.

    ``item`` is ``(players, seed, match_mode, bot_specs, options[, delays, cap_ms, keep_record])``: one spec (and
    one delay in ms) per seat. Returns ``{"record": record dict (``None`` unless ``keep_record``, default true),
    "specs": [per seat], "scores": [per hand per seat], "ended": [per hand], "actions": [per hand: applied actions,
    the table's included], "hands": [per hand: HandResult.extra], "winners": [...] or None, "delays": [per seat],
    "seconds": float, "cpu_seconds": float}``.
    """
    players, seed, match_mode, specs, extra = item[:5]
    delays: tuple[int, ...] = item[5] if len(item) > 5 else (0,) * players
    cap_ms: int = item[6] if len(item) > 6 else DEFAULT_CAP_MS
    keep: bool = item[7] if len(item) > 7 else True
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
    cpu = time.process_time()
    scores: list[list[int]] = []
    endings: list[str | None] = []
    counts: list[int] = []
    details: list[dict[str, Any]] = []
    for _ in range(200 if match_mode else 1):
        bots = [info.make(rng.randrange(2**31)) for info in infos]
        result = play_timed_hand(
            match,
            bots,
            rng.randrange(2**31),
            record if keep else None,
            reactions=[i.reaction_ms for i in infos],
            delays=delays,
            cap_ms=cap_ms,
        )
        scores.append(result.scores)
        endings.append(result.ended)
        counts.append(result.extra["applied"])
        details.append(result.extra)
        if match.is_over:
            break
    return {
        "record": record.to_dict() if keep else None,
        "specs": list(specs),
        "scores": scores,
        "ended": endings,
        "actions": counts,
        "hands": details,
        "winners": match.winners(),
        "delays": list(delays),
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu,
    }


@dataclass(slots=True)
class BotTally:
    """One bot spec's figures over a run, one entry per seat-hand: ``points``, ``won`` (1, 1/k when k seats tie
    for the hand's best score, else 0), ``called`` (1 if it called Nerts), ``left`` (cards left in its Nerts pile),
    ``diff`` (its points minus the mean of the other seats'); per seat-match ``matches`` (1, 1/k shared, 0);
    ``races`` summed ``[entered, won, tied, lost]``."""

    spec: str
    points: list[float] = field(default_factory=list)
    won: list[float] = field(default_factory=list)
    called: list[float] = field(default_factory=list)
    left: list[float] = field(default_factory=list)
    diff: list[float] = field(default_factory=list)
    matches: list[float] = field(default_factory=list)
    races: list[int] = field(default_factory=lambda: [0, 0, 0, 0])

    def add(self, result: Mapping[str, Any], seat: int) -> None:
        """Add seat ``seat`` of one :func:`play_item` result."""
        for scores, extra in zip(result["scores"], result["hands"], strict=True):
            best = max(scores)
            self.points.append(scores[seat])
            self.won.append(1.0 / scores.count(best) if scores[seat] == best else 0.0)
            self.called.append(1.0 if extra["called"] == seat else 0.0)
            self.left.append(extra["nerts_left"][seat])
            others = [s for i, s in enumerate(scores) if i != seat]
            self.diff.append(scores[seat] - (sum(others) / len(others) if others else 0.0))
            self.races = [a + b for a, b in zip(self.races, extra["races"][seat], strict=True)]
        winners = result["winners"]
        if winners is not None:
            self.matches.append(1.0 / len(winners) if seat in winners else 0.0)

    def summary(self) -> dict[str, Any]:
        """Means with 95% intervals: ``hands``, ``win_rate`` (Wilson), ``points``, ``diff``, ``nerts_rate``
        (Wilson), ``left``, ``match_rate`` (Wilson, over ``matches``) and ``races``."""
        hands = len(self.won)
        wins, calls = sum(self.won), sum(self.called)
        return {
            "hands": hands,
            "win_rate": (wins / hands if hands else 0.0, *wilson(wins, hands)),
            "points": mean_interval(self.points),
            "diff": mean_interval(self.diff),
            "nerts_rate": (calls / hands if hands else 0.0, *wilson(calls, hands)),
            "left": mean_interval(self.left),
            "matches": len(self.matches),
            "match_rate": (
                sum(self.matches) / len(self.matches) if self.matches else 0.0,
                *wilson(sum(self.matches), len(self.matches)),
            ),
            "races": list(self.races),
        }


def items_for(
    players: int,
    count: int,
    seed: int,
    specs: Sequence[str],
    match_mode: bool = False,
    options: Mapping[str, Any] | None = None,
    delays: Sequence[int] | None = None,
    cap_ms: int = DEFAULT_CAP_MS,
    rotate: bool = True,
    keep_record: bool = True,
) -> list[Item]:
    """The items of a run: ``specs`` (and ``delays``, which travel with their bot) cycled over the seats.

    With ``rotate``, item ``i`` replays deal ``seed + i // players`` with the seat list turned by ``i % players``:
    each group of ``players`` items is one deal played from every seat, so the luck of the deal cancels (paired
    deals). Without it, item ``i`` uses seed ``seed + i`` and no turning.
    """
    seat_specs = [specs[i % len(specs)] for i in range(players)]
    seat_delays = [(list(delays) if delays else [0])[i % len(delays or [0])] for i in range(players)]
    extra = dict(options or {})
    items: list[Item] = []
    for i in range(count):
        turn = i % players if rotate else 0
        deal_seed = seed + (i // players if rotate else i)
        items.append(
            (
                players,
                deal_seed,
                match_mode,
                tuple(seat_specs[(s - turn) % players] for s in range(players)),
                extra,
                tuple(seat_delays[(s - turn) % players] for s in range(players)),
                cap_ms,
                keep_record,
            )
        )
    return items


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
    delays: Sequence[int] | None = None,
    cap_ms: int = DEFAULT_CAP_MS,
    rotate: bool = True,
) -> dict[str, Any]:
    """``cardtable simulate nerts``: ``hands`` hands (``match_mode``: whole matches) by bots on the clock, summarised.

    ``bots`` are specs cycled over the seats (default ``greedy``), ``delays`` the one-way delays (ms) that go with
    them, ``cap_ms`` the ordering's compensation cap; seats are rotated over paired deals (:func:`items_for`).
    Prints a Rich progress bar and summary tables (unless ``show`` is false), writes each record as one JSON line to
    ``out``, and returns the summary: ``mean_scores`` (per seat), ``endings``, ``mean_actions``,
    ``hands_per_second`` (wall clock), ``hands_per_cpu_second`` (the simulator's own CPU time: hands/s/core
    whatever else the machine runs), ``hands``, ``bots`` (per spec, ``"SPEC +D ms"`` for a bot ``D`` ms away:
    :meth:`BotTally.summary`), ``earlier_won`` and, in match
    mode, ``wins`` (per seat). ``ValueError`` for a bad bot spec, delay or option.
    """
    specs = tuple(bots or ("greedy",))
    for spec in specs:
        get_bot("nerts", spec)
    if delays is not None and (not delays or any(d < 0 for d in delays)):
        raise ValueError(f"delays: 0 or more ms each (got {list(delays)})")
    if cap_ms < 0:
        raise ValueError(f"cap_ms must be 0 or more, not {cap_ms}")
    extra = dict(options or {})
    NertsOptions.from_dict({**extra, "players": players})
    items = items_for(players, hands, seed, specs, match_mode, extra, delays, cap_ms, rotate, out is not None)
    started = time.perf_counter()
    totals = [0] * players
    endings: Counter[str] = Counter()
    hand_count = 0
    action_count = 0
    wins = [0] * players
    tallies: dict[str, BotTally] = {}
    earlier = [0, 0]
    cpu = 0.0
    handle = open_out(out)
    try:
        what = "matches" if match_mode else "hands"
        for result in parallel_map(play_item, items, jobs, f"nerts {what}", show=show):
            for scores in result["scores"]:
                totals = [t + s for t, s in zip(totals, scores, strict=True)]
            endings.update(str(e) for e in result["ended"])
            hand_count += len(result["scores"])
            cpu += result["cpu_seconds"]
            action_count += sum(result["actions"])
            for w in result["winners"] or []:
                wins[w] += 1
            for seat, spec in enumerate(result["specs"]):
                lag = result["delays"][seat]
                name = f"{spec} +{lag} ms" if lag else spec
                tallies.setdefault(name, BotTally(name)).add(result, seat)
            for extra_hand in result["hands"]:
                earlier = [a + b for a, b in zip(earlier, extra_hand["earlier_won"], strict=True)]
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
        "hands_per_cpu_second": hand_count / cpu if cpu else 0.0,
        "bots": {spec: tally.summary() for spec, tally in tallies.items()},
        "earlier_won": earlier,
    }
    if match_mode:
        summary["wins"] = wins
    if show:
        print_summary(summary, players, match_mode, jobs)
    return summary


def _fmt(triple: Sequence[float], pct: bool = False) -> str:
    mean, low, high = triple
    if pct:
        return f"{mean:.1%} [{low:.1%}, {high:.1%}]"
    return f"{mean:.2f} [{low:.2f}, {high:.2f}]"


def print_summary(
    summary: Mapping[str, Any], players: int, match_mode: bool, jobs: int, title: str = ""
) -> None:
    """Print a :func:`run` summary: per seat, per bot (with 95% intervals), endings and speed."""
    console = Console()
    if not console.is_terminal:
        console.width = 160  # a file or a pipe: do not wrap the figures
    table = Table(title=f"Nerts: {summary['hands']} hands, {players} seats")
    table.add_column("seat")
    table.add_column("mean score", justify="right")
    if match_mode:
        table.add_column("matches won", justify="right")
    for s in range(players):
        row = [str(s), f"{summary['mean_scores'][s]:.2f}"]
        if match_mode:
            row.append(str(summary["wins"][s]))
        table.add_row(*row)
    console.print(table)
    bots = Table(title=title or "Per bot, seats rotated (95% intervals)")
    bots.add_column("bot", no_wrap=True)
    for name in ("seat-hands", "hands won", "points", "vs field", "Nerts calls", "cards left", "races won"):
        bots.add_column(name, justify="right")
    if match_mode:
        bots.add_column("matches won", justify="right")
    for spec, entry in summary["bots"].items():
        entered, won, tied, _lost = entry["races"]
        row = [
            spec,
            str(entry["hands"]),
            _fmt(entry["win_rate"], pct=True),
            _fmt(entry["points"]),
            _fmt(entry["diff"]),
            _fmt(entry["nerts_rate"], pct=True),
            _fmt(entry["left"]),
            f"{won}+{tied} tied / {entered}" if entered else "-",
        ]
        if match_mode:
            row.append(_fmt(entry["match_rate"], pct=True))
        bots.add_row(*row)
    console.print(bots)
    ends = ", ".join(f"{k}: {v}" for k, v in sorted(summary["endings"].items()))
    console.print(f"hands ended by {ends}")
    decided, earlier = summary["earlier_won"]
    if decided:
        console.print(
            f"races decided without a tie: {decided}, won by the earlier sender: {earlier / decided:.1%}"
        )
    console.print(
        f"mean actions per hand {summary['mean_actions']:.1f}; "
        f"{summary['hands_per_second']:.1f} hands/s over {jobs} process(es), "
        f"{summary['hands_per_cpu_second']:.1f} hands per CPU second (per core)"
    )
