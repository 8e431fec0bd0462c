"""Coming back to a turn-based table (issue 29; ``docs/protocol.md``): the ``catch_up`` message
sent to a seated connection right after its welcome snapshot, telling what happened since that seat's last move:
the tricks completed since (their cards, who won each, who took an anemone for its lowest card), the hands that
ended since with their scores, and the totals now (``docs/rules/enemy-anemone.md``, "A trick", "End of a hand").

Only what every seat saw comes out (``storage/tricks.py``): never a card still in a hand.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from cardtable.server.storage.tricks import TrickLog, fold_tricks

if TYPE_CHECKING:
    from cardtable.server.storage.store import Store
    from cardtable.server.table.connections import Connection

log = logging.getLogger("cardtable.server.table.catch_up")


def catch_up_message(log: TrickLog, seat: int) -> dict[str, Any]:
    """The ``catch_up`` message for ``seat`` from a folded record's :class:`~cardtable.server.storage.tricks.TrickLog`:

    ``{"type": "catch_up", "since": ISO | None, "tricks": [TRICK], "hands": [{"hand", "scores", "totals"}],
    "totals": [points per seat]}``, where ``since`` is when ``seat`` last moved (its last action's ``at``;
    ``None`` when it never moved or the record has no time), ``tricks`` the tricks completed after that move
    (``Trick.to_dict``: ``{"hand", "plays": [{"seat", "card", "at"}], "taker", "anemones", "winner",
    "discards"}``; a trick that ``seat``'s own move completed is not among them: it saw it), ``hands`` the hands
    that ended after it, and ``totals`` each seat's points over the hands that ended. A seat that never moved gets
    everything from the start.

    ``ValueError`` for a seat the table does not have.
    """
    if not 0 <= seat < log.players:
        raise ValueError(f"seat: no seat {seat} (the table has {log.players})")
    last = log.last_moves.get(seat)
    after = (-1, -1) if last is None else (last.hand, last.index)
    return {
        "type": "catch_up",
        "since": None if last is None else last.at,
        "tricks": [trick.to_dict() for trick in log.tricks if (trick.hand, trick.index) > after],
        "hands": [end.to_dict() for end in log.hands if (end.hand, end.index) > after],
        "totals": list(log.totals),
    }


async def catch_up(store: Store, table_id: str, seat: int) -> dict[str, Any] | None:
    """The ``catch_up`` message (:func:`catch_up_message`) for ``seat`` of the Enemy Anemone table ``table_id``,
    read from its stored record (``Store.load_tables(table_id=..., with_hands=True)``); ``None`` when no such table
    is stored. Raises what :func:`~cardtable.server.storage.tricks.fold_tricks` raises for a record that does not
    fold, and ``ValueError`` for a seat the table does not have."""
    rows = await store.load_tables(table_id=table_id, with_hands=True)
    if not rows:
        return None
    return catch_up_message(fold_tricks(rows[0]), seat)


async def send_catch_up(store: Store, table_id: str, seat: int, connection: Connection) -> None:
    """Send ``connection`` (seated at ``seat``) its :func:`catch_up` message; a record that cannot be read is logged
    and nothing is sent (coming back must not fail for want of a summary)."""
    try:
        message = await catch_up(store, table_id, seat)
    except Exception:
        log.exception("table %s: the catch_up of seat %s could not be built", table_id, seat)
        return
    if message is not None:
        connection.send_message(message)
