"""Latency-fair ordering of racing Nerts plays (``docs/protocol.md``, "Fairness"): pure, no clock, no asyncio.

Nerts is a race: two seats playing the same card rank to the same foundation, the first to arrive wins. A seat far
from the server would lose every close race if plays were ordered by arrival. This module orders them by
*estimated send time* instead, and it is the one piece of code that both the table server and the timed simulator
(:mod:`cardtable.sim.nerts`) use, so both order the same races the same way.

- :class:`DelayEstimator` turns a connection's ping round trips into an estimated one-way delay (milliseconds):
  a low quantile of the last few round trips, halved, and never more than the cap. Jitter only ever makes a round
  trip longer, so a low quantile tracks the path's real delay; a client that slows its answers down on purpose
  can make its estimate grow, but never past the cap.
- :func:`race_keys` says which plays race: a card to a started foundation (``foundation:ID``: the same place, or
  the place right after it, can be wanted by every seat); a Nerts call (it races with the cards in flight); with
  partnerships, every action on a layout two partners share (they want the same cards). Starting a foundation
  (``foundation:new``) races with nobody: every ace gets a foundation of its own.
- :class:`RaceOrderer` takes plays as they arrive and gives them back in the order to apply them, each with the
  ``ms`` to give the engine. A racing play's send time is ``arrived - min(delay, cap)``; it is held until
  ``sent + horizon`` (``horizon``: the largest capped delay of the other seats), so an earlier-sent rival from a
  farther seat has time to arrive; it is therefore held at most the cap. Plays that do not race are never held
  (except behind an earlier held play of the same seat: each seat's plays keep their order). The engine's tie
  window then judges the stamps: two cards for the same place sent within ``tie_window_ms`` of each other both play.

Stamps (the ``ms`` the engine gets and the record keeps) never decrease: ``max(last stamp, stamp)``. A racing play
is stamped with its send time; a play that does not race with ``min(sent, arrived - horizon)``, the latest time by
which every rival's earlier play is sure to have arrived, so that it can never push the clock past a rival's
send time. Both are also kept at or below the send time of any racing play still held.

>>> orderer: RaceOrderer[str] = RaceOrderer(cap_ms=150)
>>> orderer.set_delay(0, 0)
>>> orderer.set_delay(1, 100)          # seat 1 is 100 ms away
>>> orderer.submit("near 5S", 0, 1050, frozenset({"foundation:2"}))   # sent at 1050
>>> orderer.submit("far 5S", 1, 1120, frozenset({"foundation:2"}))    # sent at 1020: earlier
>>> orderer.release(1120)              # the near play is still held, waiting for the far seat
[('far 5S', 1020)]
>>> orderer.release(1150)
[('near 5S', 1050)]
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, Generic, TypeVar

__all__ = [
    "CLOCK_KEYS",
    "DEFAULT_CAP_MS",
    "DelayEstimator",
    "RaceOrderer",
    "race_keys",
]

DEFAULT_CAP_MS = 150
"""The most compensation a connection gets, in ms: a slower link is treated as this slow, no slower."""

CLOCK_KEYS = frozenset({"end"})
"""Race keys of the table's own clock actions (the end of the in-flight window, the stall guard's rotate)."""

T = TypeVar("T")


class DelayEstimator:
    """A connection's one-way delay in ms, estimated from ping round trips (``docs/protocol.md``, "Fairness").

    Keeps the last ``window`` round trips (ms); :meth:`estimate` is their lower ``quantile`` (default: the lower
    quartile) halved, rounded, and at most ``cap_ms``; 0 before the first sample. Round trips are measured by the
    server from its own ping to the client's answer, so a client can only make them longer (never shorter), and
    longer gains it at most ``cap_ms``.

    >>> est = DelayEstimator(window=8)
    >>> for rtt in (90, 250, 90, 91, 400, 92, 90, 95):   # 45 ms each way, with jitter spikes
    ...     est.add(rtt)
    >>> est.estimate()
    45
    >>> for _ in range(8):
    ...     est.add(5000)                                 # a client that answers late on purpose
    >>> est.estimate()
    150
    """

    def __init__(self, cap_ms: int = DEFAULT_CAP_MS, window: int = 16, quantile: float = 0.25) -> None:
        if cap_ms < 0:
            raise ValueError(f"cap_ms must be 0 or more, not {cap_ms}")
        if window < 1:
            raise ValueError(f"window must be at least 1, not {window}")
        if not 0.0 <= quantile <= 1.0:
            raise ValueError(f"quantile must be between 0 and 1, not {quantile}")
        self.cap_ms = cap_ms
        self.quantile = quantile
        self._samples: deque[float] = deque(maxlen=window)
        self._estimate: int | None = (
            None  # kept until the next sample: asked for at every play of the connection
        )

    def add(self, rtt_ms: object) -> None:
        """Record one round trip in ms (an ``int`` or ``float``); ``ValueError`` (and nothing recorded) for a negative
        or non-finite one, or one that is no number (typed ``object``: checked here, not by a compiled build's
        ``TypeError``)."""
        if (
            not isinstance(rtt_ms, int | float)
            or isinstance(rtt_ms, bool)
            or not math.isfinite(rtt_ms)
            or rtt_ms < 0
        ):
            raise ValueError(f"a round trip is a finite number of ms, 0 or more, not {rtt_ms!r}")
        self._samples.append(float(rtt_ms))
        self._estimate = None

    @property
    def samples(self) -> int:
        """How many round trips the window holds."""
        return len(self._samples)

    def estimate(self) -> int:
        """The one-way delay in whole ms, ``0 <= estimate <= cap_ms``."""
        known = self._estimate
        if known is None:
            if not self._samples:
                return 0
            ordered = sorted(self._samples)
            low = ordered[int(self.quantile * (len(ordered) - 1))]
            known = self._estimate = min(self.cap_ms, round(low / 2))
        return known


def race_keys(action: Mapping[str, Any], shared_layout: bool = False, pack: int = 0) -> frozenset[str]:
    """What ``action`` races for: empty when it races with nobody (rules: "Simultaneous play and conflicts").

    ``"foundation:ID"`` for a card to a started foundation; ``"end"`` for a Nerts call and for the table's
    ``rotate``/``end_hand``; ``"layout:P"`` for any action on layout ``pack`` when ``shared_layout`` (partners share
    it). Malformed actions race with nobody (the engine refuses them anyway).

    >>> sorted(race_keys({"type": "move", "from": "waste", "to": "foundation:3"}))
    ['foundation:3']
    >>> race_keys({"type": "move", "from": "nerts", "to": "foundation:new"})
    frozenset()
    >>> sorted(race_keys({"type": "flip"}, shared_layout=True, pack=1))
    ['layout:1']
    """
    keys: set[str] = set()
    kind = action.get("type")
    if kind == "move":
        dst = action.get("to")
        if isinstance(dst, str) and dst.startswith("foundation:") and dst != "foundation:new":
            keys.add(dst)
    elif kind in ("nerts", "rotate", "end_hand"):
        keys.update(CLOCK_KEYS)
    if shared_layout and kind not in ("rotate", "end_hand"):
        keys.add(f"layout:{pack}")
    return frozenset(keys)


class _Held(Generic[T]):
    """A play waiting in :class:`RaceOrderer` (times in ms). A plain class, not a slots dataclass: the module compiles
    with mypyc (``cardtable.build``), which builds its own layout and cannot rebuild a generic slots class."""

    def __init__(
        self,
        item: T,
        seat: int | None,
        arrived: int,
        sent: int,
        ready: int,
        racing: bool,
        order: int,
        horizon: int,
    ) -> None:
        self.item = item
        self.seat = seat
        self.arrived = arrived
        self.sent = sent
        self.ready = ready
        self.racing = racing
        self.order = order
        self.horizon = horizon


class RaceOrderer(Generic[T]):
    """Orders a hand's plays by estimated send time (see the module docstring); pure and deterministic.

    Use: :meth:`set_delay` per seat whenever its estimate changes (the table's clock, ``seat=None``, has none);
    :meth:`submit` each play as it arrives, with :func:`race_keys`; :meth:`release` whenever time passes (at each
    arrival and at :meth:`next_due`), applying what it returns, in order, at the ``ms`` it gives; :meth:`reset` at
    each new hand. Times are ms on one clock (the hand's), and must not go backwards between calls.
    ``cap_ms=0`` turns compensation off: plays go in arrival order, none is held.
    """

    def __init__(self, cap_ms: int = DEFAULT_CAP_MS) -> None:
        if cap_ms < 0:
            raise ValueError(f"cap_ms must be 0 or more, not {cap_ms}")
        self.cap_ms = cap_ms
        self._delays: dict[int, int] = {}
        self._horizons: dict[int | None, int] = {}
        self._held: list[_Held[T]] = []
        self._last = 0
        self._count = 0

    # -- delays -------------------------------------------------------------------------------------------

    def set_delay(self, seat: int, delay_ms: int) -> None:
        """``seat``'s estimated one-way delay in ms (clipped to ``0..cap_ms``); takes effect for later plays."""
        delay = max(0, min(int(delay_ms), self.cap_ms))
        if self._delays.get(seat) != delay:  # the table sets it at every play: most often unchanged
            self._delays[seat] = delay
            self._horizons = {}

    def delay(self, seat: int | None) -> int:
        """The compensation ``seat``'s plays get, in ms (0 for the table and for a seat never set)."""
        return 0 if seat is None else self._delays.get(seat, 0)

    def horizon(self, seat: int | None) -> int:
        """How long after its send time a racing play of ``seat`` waits: the largest delay of any other seat."""
        known = self._horizons.get(seat)
        if known is None:
            known = self._horizons[seat] = max((d for s, d in self._delays.items() if s != seat), default=0)
        return known

    # -- plays --------------------------------------------------------------------------------------------

    @property
    def last_ms(self) -> int:
        """The stamp of the last released play (or where :meth:`reset` put it)."""
        return self._last

    @property
    def held(self) -> int:
        """How many plays are waiting."""
        return len(self._held)

    def held_items(self) -> list[T]:
        """The waiting plays, in arrival order."""
        return [h.item for h in self._held]

    def reset(self, ms: int = 0) -> list[T]:
        """Start a new hand at ``ms``: returns (and forgets) any play still held. Delays are kept."""
        dropped = [h.item for h in self._held]
        self._held = []
        self._last = ms
        return dropped

    def submit(self, item: T, seat: int | None, arrived_ms: int, keys: Iterable[str] = ()) -> None:
        """``item`` (what :meth:`release` gives back) from ``seat`` arrived at ``arrived_ms``; ``keys`` non-empty
        makes it a racing play (:func:`race_keys`). For the table's clock action pass ``seat=None`` and its due
        time as ``arrived_ms``."""
        racing = bool(frozenset(keys))
        sent = arrived_ms - self.delay(seat)
        horizon = self.horizon(seat)
        ready = max(arrived_ms, sent + horizon) if racing else arrived_ms
        self._held.append(_Held(item, seat, arrived_ms, sent, ready, racing, self._count, horizon))
        self._count += 1

    def next_due(self) -> int | None:
        """The earliest time a held play will be released (call :meth:`release` then), or ``None``."""
        if not self._held:
            return None
        return min(h.ready for h in self._heads())

    def _heads(self) -> list[_Held[T]]:
        seen: set[int | None] = set()
        heads = []
        for h in self._held:
            if h.seat not in seen:
                seen.add(h.seat)
                heads.append(h)
        return heads

    def release(self, now_ms: int) -> list[tuple[T, int]]:
        """The plays to apply at ``now_ms``, in order, each with its stamp (``ms`` for the engine).

        A seat's plays keep their arrival order. Among the first waiting play of each seat: every one whose wait is
        over goes, earliest send time first; and once a racing play's wait is over, every racing play sent no later
        than it goes too (whatever was sent before it has had time to arrive).
        """
        out: list[tuple[T, int]] = []
        held = self._held
        if len(held) == 1 and held[0].ready <= now_ms:  # the common case: one play, nothing to wait for
            only = held.pop()
            stamp = only.sent if only.racing else min(only.sent, only.arrived - only.horizon)
            self._last = max(self._last, stamp)
            return [(only.item, self._last)]
        while self._held:
            heads = self._heads()
            ready = [h for h in heads if h.ready <= now_ms]
            if not ready:
                break
            safe = max((h.sent for h in ready if h.racing), default=None)
            choices = [
                h for h in heads if h.ready <= now_ms or (h.racing and safe is not None and h.sent <= safe)
            ]
            chosen = min(choices, key=lambda h: (h.sent, h.order))
            self._held.remove(chosen)
            stamp = chosen.sent if chosen.racing else min(chosen.sent, chosen.arrived - chosen.horizon)
            floor = min((h.sent for h in self._held if h.racing), default=None)
            if floor is not None:
                stamp = min(stamp, floor)
            self._last = max(self._last, stamp)
            out.append((chosen.item, self._last))
        return out
