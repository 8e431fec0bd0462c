"""What a table's owner is asked to apply and whom it answers: :class:`QueuedAction` (an action from a connection, a bot or
the clock) and :class:`Connection` (one WebSocket connection as the table sees it).

Both the table owner (``server/table/owner.py``) and the bot drivers (``server/table/bots.py``) import this module; neither
imports the other's, so the layers read top-down: play, then bots, then table.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from cardtable.engine import Action
from cardtable.server.table.connections import Connection


@dataclass(slots=True)
class QueuedAction:
    """An action to apply: from a seat's connection (``connection``, ``seq``), a bot (``future``) or the clock (``due``,
    the hand's ``ms`` it is due at).

    ``future``, when given, gets ``(True, version)`` or ``(False, reason)``.
    """

    seat: int | None
    action: Action
    connection: Connection | None = None
    seq: int | None = None
    future: asyncio.Future[tuple[bool, Any]] | None = None
    due: int | None = None
    ms: int | None = None
    """The stamp the Nerts fairness gate gave it (``server/table/fairness.py``): applied at that time, not at arrival."""
