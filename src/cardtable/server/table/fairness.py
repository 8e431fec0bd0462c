"""Latency-fair Nerts at a table (``docs/protocol.md``, "Fairness"): the gate between plays and the owner's queue.

Every play for a Nerts table passes through a :class:`FairGate` on its way to the table's queue. The gate keeps
each connection's :class:`~cardtable.race.DelayEstimator` (fed by the ``rtt`` its pings carry), and hands the plays
to the shared :class:`~cardtable.race.RaceOrderer`: racing plays wait at most the cap for an earlier-sent rival and
go to the queue in send-time order, each with the stamp (``QueuedAction.ms``) the owner gives the engine. The table's clock
actions pass through it as well, so a card sent before the in-flight window closed still counts. Plays that do
not race go straight through. The simulator (:mod:`cardtable.sim.nerts`) orders races with the same module.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Protocol

from cardtable.race import CLOCK_KEYS, DEFAULT_CAP_MS, DelayEstimator, RaceOrderer, race_keys

if TYPE_CHECKING:
    from cardtable.engine import HandState
    from cardtable.server.table.actions import QueuedAction
    from cardtable.server.table.connections import Connection


class RacingTable(Protocol):
    """What the gate needs of its table (``server/table/owner.py``'s ``Table``)."""

    hand_index: int
    """The hand being played (0-based); a new hand resets the gate."""
    state: HandState | None
    """The hand's state (``None`` between hands)."""
    full_options: dict[str, Any]
    """The table's options with their defaults (``partnerships`` shares a layout between two seats)."""

    def now_ms(self) -> int:
        """Milliseconds since the hand began, by the server's monotonic clock."""
        ...

    def enqueue(self, play: QueuedAction) -> None:
        """Put ``play`` on the owner's queue, past the gate."""
        ...

log = logging.getLogger("cardtable.server.table.fairness")

__all__ = ["FairGate"]


class FairGate:
    """Orders one Nerts table's racing plays by estimated send time before the owner applies them.

    ``table`` supplies the hand's clock (``now_ms()``), its state and the owner's queue, where released plays go
    with their stamp in ``QueuedAction.ms``. The table builds one for a Nerts table and calls :meth:`submit` for every play,
    :meth:`reset` when a hand starts and :meth:`forget` when a connection closes; the WebSocket calls
    :meth:`observe` for every round trip a ping reports. ``cap_ms`` bounds the compensation (and the hold-back).
    """

    def __init__(self, table: RacingTable, cap_ms: int = DEFAULT_CAP_MS) -> None:
        self.table = table
        self.cap_ms = cap_ms
        self.orderer: RaceOrderer[QueuedAction] = RaceOrderer(cap_ms)
        self.estimators: dict[Connection, DelayEstimator] = {}
        self._hand = table.hand_index
        self._timer: asyncio.TimerHandle | None = None

    # -- delays -------------------------------------------------------------------------------------------

    def observe(self, connection: Connection, rtt_ms: float) -> bool:
        """Record one round trip (ms) reported by ``connection``; ``False`` (and nothing recorded) for a bad value."""
        estimator = self.estimators.get(connection)
        if estimator is None:
            estimator = self.estimators[connection] = DelayEstimator(cap_ms=self.cap_ms)
        try:
            estimator.add(rtt_ms)
        except ValueError:
            return False
        if connection.seat is not None:
            self._set_seat(connection.seat)
        return True

    def forget(self, connection: Connection) -> None:
        """``connection`` closed: drop its estimate (its seat then counts as near, unless another connection says not)."""
        if self.estimators.pop(connection, None) is not None and connection.seat is not None:
            self._set_seat(connection.seat)

    def delay(self, connection: Connection | None) -> int:
        """The one-way delay estimate of ``connection`` in ms (0 for a bot, the clock or a connection without pings)."""
        estimator = None if connection is None else self.estimators.get(connection)
        return 0 if estimator is None else estimator.estimate()

    def _set_seat(self, seat: int) -> None:
        # a seat's horizon counts its farthest connection: a rival must be waited for from wherever it plays
        estimates = [est.estimate() for p, est in self.estimators.items() if p.seat == seat and not p.closed]
        self.orderer.set_delay(seat, max(estimates, default=0))

    # -- plays --------------------------------------------------------------------------------------------

    def submit(self, play: QueuedAction) -> None:
        """Order ``play`` (from a connection, a bot or the clock) and queue what is due."""
        table = self.table
        state = table.state
        if self._hand != table.hand_index:
            self.reset()
        if play.due is not None:
            self.orderer.submit(play, None, play.due, CLOCK_KEYS)
        elif state is None or state.is_over or play.seat is None or not isinstance(play.action, dict):
            table.enqueue(play)
            return
        else:
            seat = play.seat
            shared = bool(table.full_options.get("partnerships"))
            try:
                keys = race_keys(play.action, shared, state.layout_index(seat))  # type: ignore[attr-defined]
            except (AttributeError, IndexError, TypeError):
                keys = frozenset()
            if play.connection is not None:
                # this connection's own estimate, for this play
                self.orderer.set_delay(seat, self.delay(play.connection))
            self.orderer.submit(play, seat, table.now_ms(), keys)
            if play.connection is not None:
                self._set_seat(seat)
        self.pump()

    def pump(self) -> None:
        """Queue every play whose wait is over, each with its stamp, and set the timer for the next."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._hand != self.table.hand_index:
            self.reset()
            return
        now = self.table.now_ms()
        for play, ms in self.orderer.release(now):
            play.ms = ms
            self.table.enqueue(play)
        due = self.orderer.next_due()
        if due is not None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(max(0.0, (due - now) / 1000.0), self.pump)

    def reset(self) -> None:
        """A new hand: plays still waiting belonged to the last one and are refused; the clock starts again."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._hand = self.table.hand_index
        for play in self.orderer.reset(0):
            reason = "the hand is over"
            if play.connection is not None:
                play.connection.send_message(
                    {"type": "reject", "seq": play.seq, "reason": reason, "code": "hand.over", "params": {}}
                )
            if play.future is not None and not play.future.done():
                play.future.set_result((False, reason))

    def close(self) -> None:
        """Stop the timer (the table is stopping)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
