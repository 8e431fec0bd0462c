"""``server/core/errors.py`` (and the small helpers beside it: ``core/clock.now_iso``, ``table/deals.hand_seed``):
refusal messages and ``TableError``'s shape."""

from __future__ import annotations

import re

from cardtable.server.core.clock import now_iso
from cardtable.server.core.errors import TableError, refusal_message
from cardtable.server.table.deals import hand_seed


def test_small_helpers() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", now_iso())
    assert refusal_message("error", "why", "a.code") == {"type": "error", "reason": "why", "code": "a.code",
                                                          "params": {}}
    assert refusal_message("error", "why", "a.code", {"n": 1})["params"] == {"n": 1}
    error = TableError(409, "seat.taken", "taken", {"seat": 1})
    assert (error.status, str(error), error.to_dict()) == (409, "taken", {"detail": "taken", "code": "seat.taken",
                                                                           "params": {"seat": 1}})
    assert TableError(404, "x", "y").to_dict()["params"] == {}
    seeds = {hand_seed(s, h) for s in (0, 1, 2, 2**61 + 3, 2**62 - 1) for h in range(50)}
    assert len(seeds) == 250 and all(isinstance(s, int) and 0 <= s < 2**62 for s in seeds)
