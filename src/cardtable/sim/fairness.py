"""Races between a near and a far seat for the same foundation place, through the real engine and the shared
ordering (:mod:`cardtable.race`): the fairness figures of ``docs/protocol.md`` ("Fairness").

One race: seat 0 (near) and seat 1 (far) each hold a 2S while the spades foundation shows its ace; they send their
2S ``gap`` ms apart (``gap > 0``: the far seat sent later); the cards arrive after each seat's one-way delay (plus
optional jitter); the orderer (delays estimated from pings, or given) orders them and stamps them; the engine
decides: one card plays and the other is refused, or both play (the tie window). A fair outcome is a tie when
``|gap| <= tie_window_ms`` and otherwise a win for the earlier sender.

>>> race(gap_ms=-120, far_delay_ms=150, cap_ms=0).winner   # sent 120 ms earlier, arrived 30 ms later: a tie
'tie'
>>> race(gap_ms=-120, far_delay_ms=150, cap_ms=150).winner  # compensated: the earlier sender wins
'far'
>>> race(gap_ms=-20, far_delay_ms=150, cap_ms=0).winner     # a tie by send times, lost on arrival
'near'
>>> race(gap_ms=-20, far_delay_ms=150, cap_ms=150).winner   # compensated: both cards play
'tie'
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from cardtable.engine import IllegalAction
from cardtable.games.nerts import NertsMatch, NertsOptions, NertsState, layout_pack
from cardtable.race import DEFAULT_CAP_MS, DelayEstimator, RaceOrderer, race_keys

__all__ = ["RaceOutcome", "race", "race_many"]

_MOVE = {"type": "move", "from": "nerts", "to": "foundation:0"}
_START_MS = 1000


@dataclass(frozen=True, slots=True)
class RaceOutcome:
    """One race: ``winner`` is ``"near"``, ``"far"`` or ``"tie"``; ``fair`` is what it should have been (by send
    times and the tie window); ``held_ms`` the longest either card waited in the orderer."""

    gap_ms: int
    winner: str
    fair: str
    held_ms: int


def _state(tie_window_ms: int) -> NertsState:
    options = NertsOptions(players=2, tie_window_ms=tie_window_ms)
    packs = [layout_pack(nerts=["AS", "2S"]), layout_pack(nerts=["2S"])]
    state = NertsMatch(options).start_hand({"packs": packs})
    state.apply(0, {"type": "move", "from": "nerts", "to": "foundation:new"}, 0)
    return state


def race(
    gap_ms: int,
    far_delay_ms: int,
    cap_ms: int = DEFAULT_CAP_MS,
    *,
    near_delay_ms: int = 0,
    tie_window_ms: int = 100,
    far_estimate_ms: int | None = None,
    near_estimate_ms: int | None = None,
    jitter: tuple[int, int] = (0, 0),
) -> RaceOutcome:
    """Run one race (see the module docstring). ``far_estimate_ms``/``near_estimate_ms`` are the delays the server
    believes (default: the true ones; a lying client's can be anything), ``jitter`` extra ms on the (near, far)
    arrivals. Times in ms."""
    state = _state(tie_window_ms)
    orderer: RaceOrderer[int] = RaceOrderer(cap_ms)
    orderer.set_delay(0, near_delay_ms if near_estimate_ms is None else near_estimate_ms)
    orderer.set_delay(1, far_delay_ms if far_estimate_ms is None else far_estimate_ms)
    near_sent = _START_MS + max(0, -gap_ms)
    far_sent = near_sent + gap_ms
    arrivals = sorted(
        [(near_sent + near_delay_ms + jitter[0], 0), (far_sent + far_delay_ms + jitter[1], 1)]
    )
    keys = race_keys(_MOVE)
    applied = {0: False, 1: False}
    held = 0
    arrived: dict[int, int] = {}

    def release(now: int) -> None:
        nonlocal held
        for seat, ms in orderer.release(now):
            held = max(held, now - arrived[seat])
            try:
                state.apply(seat, _MOVE, ms)
            except IllegalAction:
                continue
            applied[seat] = True

    for at, seat in arrivals:
        due = orderer.next_due()
        while due is not None and due < at:
            release(due)
            due = orderer.next_due()
        arrived[seat] = at
        orderer.submit(seat, seat, at, keys)
        release(at)
    due = orderer.next_due()
    while due is not None:
        release(due)
        due = orderer.next_due()
    winner = "tie" if applied[0] and applied[1] else "near" if applied[0] else "far"
    fair = "tie" if tie_window_ms and abs(gap_ms) <= tie_window_ms else "far" if gap_ms < 0 else "near"
    return RaceOutcome(gap_ms, winner, fair, held)


def race_many(
    far_delay_ms: int,
    cap_ms: int,
    races: int = 400,
    seed: int = 1,
    *,
    spread_ms: int = 250,
    jitter_ms: int = 20,
    pings: int = 16,
    lie_ms: int = 0,
    tie_window_ms: int = 100,
) -> dict[str, float]:
    """``races`` races with send gaps uniform in ``[-spread_ms, spread_ms]``; each seat's delay is estimated from
    ``pings`` round trips with up to ``jitter_ms`` of jitter each way (:class:`~cardtable.race.DelayEstimator`),
    and arrivals get the same jitter. ``lie_ms``: the far client answers pings that much later on purpose.

    Returns shares of all races: ``far`` (far won, ties counting a half), ``fair`` (outcome as it should be),
    ``ties``, ``far_when_due`` (of the races the far seat sent first by more than the tie window, the share it
    won), ``tie_when_due`` (of the races sent within the tie window, the share that ended as ties), ``close_far`` (the far share among races sent within ``far_delay_ms`` of each other, the ones
    arrival order gets wrong), ``max_held_ms`` and ``far_estimate_ms``.
    """
    rng = random.Random(seed)
    near_est, far_est = DelayEstimator(cap_ms=max(cap_ms, 0)), DelayEstimator(cap_ms=max(cap_ms, 0))
    for _ in range(pings):
        near_est.add(rng.uniform(0, 2 * jitter_ms))
        far_est.add(2 * far_delay_ms + rng.uniform(0, 2 * jitter_ms) + lie_ms)
    outcomes: list[RaceOutcome] = []
    for _ in range(races):
        gap = rng.randint(-spread_ms, spread_ms)
        outcomes.append(
            race(
                gap,
                far_delay_ms,
                cap_ms,
                tie_window_ms=tie_window_ms,
                near_estimate_ms=near_est.estimate(),
                far_estimate_ms=far_est.estimate(),
                jitter=(rng.randint(0, jitter_ms), rng.randint(0, jitter_ms)),
            )
        )
    return summarize(outcomes, far_delay_ms) | {"far_estimate_ms": float(far_est.estimate())}


def summarize(outcomes: Sequence[RaceOutcome], far_delay_ms: int) -> dict[str, float]:
    """The shares :func:`race_many` returns, from a list of outcomes."""
    n = max(len(outcomes), 1)

    def far_share(items: Sequence[RaceOutcome]) -> float:
        if not items:
            return 0.0
        return sum(1.0 if o.winner == "far" else 0.5 if o.winner == "tie" else 0.0 for o in items) / len(items)

    close = [o for o in outcomes if abs(o.gap_ms) <= far_delay_ms]
    far_due = [o for o in outcomes if o.fair == "far"]
    tie_due = [o for o in outcomes if o.fair == "tie"]
    return {
        "far_when_due": sum(o.winner == "far" for o in far_due) / max(len(far_due), 1),
        "tie_when_due": sum(o.winner == "tie" for o in tie_due) / max(len(tie_due), 1),
        "races": float(len(outcomes)),
        "far": far_share(outcomes),
        "fair": sum(o.winner == o.fair for o in outcomes) / n,
        "ties": sum(o.winner == "tie" for o in outcomes) / n,
        "close_far": far_share(close),
        "max_held_ms": float(max((o.held_ms for o in outcomes), default=0)),
    }
