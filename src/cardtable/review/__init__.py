"""The review of every hand of a finished match, for one seat (issue 30): what the server shows in the replay page
(``GET /api/tables/{id}/review?seat=N``) and ``cardtable review FILE --seat N`` prints.

- Enemy Anemone (:mod:`cardtable.review.anemone`): each decision of the seat searched again from that seat's view
  at the time (never the hidden cards) by the search bot at :data:`~cardtable.review.anemone.REVIEW_BUDGET`; the
  expected points of the card played and of the card the search prefers, and the loss between them.
- Nerts (:mod:`cardtable.review.nerts`): missed plays, time with no move, cards left, read from the record.

:func:`review_record` reviews a whole record in this process (the server instead sends each Enemy Anemone search to
its process pool, :func:`cardtable.review.anemone.review_decision`).
"""

from __future__ import annotations

from typing import Any

from cardtable.records import Record
from cardtable.review import anemone, nerts


def review_record(record: Record, seat: int, seed: int = 0) -> dict[str, Any]:
    """The review of ``seat`` in ``record`` (the route's ``ready`` shape, ``docs/protocol.md``); ``seed`` seeds the
    Enemy Anemone searches. ``ValueError`` for a seat the record does not have or a game without reviews; what
    :func:`cardtable.replay.fold` raises for a record that cannot be replayed."""
    if not 0 <= seat < len(record.seats):
        raise ValueError(f"seat {seat}: the record has seats 0 to {len(record.seats) - 1}")
    if record.game == "anemone":
        return anemone.review(record, seat, seed)
    if record.game == "nerts":
        return nerts.review(record, seat)
    raise ValueError(f"no review for game {record.game!r}")
