"""Reactions (``docs/protocol.md``, "Reactions"): a seated person sends one of a few preset reactions ("nice!",
"ready?") and the table's owner shows it to every connection of the table, spectators included.

A reaction is a message, nothing more: it is not an action, not part of the record (``docs/records.md``)
and never stored in the database. Each seat has its own budget (a :class:`~cardtable.server.core.limits.TokenBucket`:
:data:`REACTION_BURST` at once, then one every :data:`REACTION_EVERY_S` seconds), shared by every connection of
that seat; a reaction over it is refused with a coded ``error`` and sent to nobody. With several server processes
the connection is served on the table's owner (a relayed connection runs the same code there,
``server/cluster/relay.py``), so one budget holds per seat whatever process each connection came through.

>>> sent = []
>>> reactions = Reactions(sent.append)
>>> [reactions.allow(0) for _ in range(4)]
[True, True, True, False]
>>> reactions.allow(1)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from cardtable.server.core.errors import refusal_message
from cardtable.server.core.limits import TokenBucket
from cardtable.server.table.connections import Connection

REACTIONS: tuple[str, ...] = ("hello", "nice", "wow", "oops", "thinking", "ready", "well_played", "laugh")
"""The preset reactions' ids, in the order the web client shows them (each worded in its catalogues,
``reaction.<id>``). No free text: nothing else is ever broadcast."""

REACTION_BURST = 3
"""Reactions a seat may send at once before its rate applies."""

REACTION_EVERY_S = 2.0
"""Seconds for a seat's budget to win back one reaction once its burst is spent."""


def _nowhere(_message: dict[str, Any]) -> None:
    """Where a stopped table's reactions go: nowhere (:meth:`Reactions.close`)."""


class Reactions:
    """The reactions of one live table: each seat's budget, and the ``reaction`` broadcast.

    ``broadcast`` sends one message to every connection of the table (``Audience.broadcast``)."""

    def __init__(
        self,
        broadcast: Callable[[dict[str, Any]], None],
        burst: int = REACTION_BURST,
        every_s: float = REACTION_EVERY_S,
    ) -> None:
        self.broadcast = broadcast
        self.burst = burst
        """Reactions a seat may send at once."""
        self.every_s = every_s
        """Seconds per reaction won back once the burst is spent."""
        self._buckets: dict[int, TokenBucket] = {}

    def close(self) -> None:
        """Broadcast nothing from now on (the table stopped). ``broadcast`` is a bound method of the table: dropping
        it breaks the cycle table -> reactions -> table, so reference counting frees a table let go at once, where
        a cycle would wait for a full garbage collection, which the server's thresholds make rare (``edge/app.py``,
        ``GC_THRESHOLDS``; ``bench/turn_based.py`` measured about 30 KB kept per table let go)."""
        self.broadcast = _nowhere

    def allow(self, seat: int) -> bool:
        """Take one reaction from ``seat``'s budget: False (and nothing taken) when it is spent."""
        bucket = self._buckets.get(seat)
        if bucket is None:
            bucket = self._buckets[seat] = TokenBucket(rate=1.0 / self.every_s, burst=float(self.burst))
        return bucket.allow()

    def wait_ms(self, seat: int) -> int:
        """Milliseconds until ``seat`` may send a reaction again (0 when it may now)."""
        bucket = self._buckets.get(seat)
        return 0 if bucket is None else math.ceil(bucket.wait_s() * 1000)

    def react(self, connection: Connection, reaction: str) -> bool:
        """``connection`` sends ``reaction``: every connection of the table gets ``{"type": "reaction", "seat": N,
        "reaction": ID}`` (the sender too), and True is returned. Refused with an ``error`` to ``connection`` alone,
        nothing sent to anyone else and False returned: ``reaction.unknown`` (not one of :data:`REACTIONS`),
        ``reaction.spectator`` (a spectator may see reactions, not send them), ``reaction.rate_limited`` (the
        seat's budget is spent: ``retry_ms`` until the next one)."""
        seat = connection.seat
        if reaction not in REACTIONS:
            connection.send_message(
                refusal_message(
                    "error",
                    f"no such reaction: {reaction!r}",
                    "reaction.unknown",
                    {"reaction": reaction, "reactions": list(REACTIONS)},
                )
            )
            return False
        if seat is None:
            connection.send_message(
                refusal_message(
                    "error", "a spectator cannot send reactions: join a seat first", "reaction.spectator"
                )
            )
            return False
        if not self.allow(seat):
            connection.send_message(
                refusal_message(
                    "error",
                    f"too many reactions: {self.burst} at once, then one every {self.every_s:g} s",
                    "reaction.rate_limited",
                    {"burst": self.burst, "every_s": self.every_s, "retry_ms": self.wait_ms(seat)},
                )
            )
            return False
        self.broadcast({"type": "reaction", "seat": seat, "reaction": reaction})
        return True
