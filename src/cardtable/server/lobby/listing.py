"""The lobby's lists of one process's live tables (``GET /api/tables?status=open|playing``, one process only).

Each listed status keeps its tables' keys ``(created, id)`` sorted, the order the lobby pages them in (oldest
first), so that a page costs about its own size, not the number of live tables: with 10,000 open tables, sorting
them all for each page took about 20 ms of CPU, and 8 clients repeating the request stalled every other table
(issue 10). Several processes (``--redis``) list from the database instead (``Manager.list_tables``): one range
of the index ``(status, created, id)`` after the cursor, ``LIMIT`` a page and one (``Store.load_tables``).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cardtable.server.table.owner import Table

LISTED = ("open", "playing")
"""The statuses listed from the live tables (finished and abandoned ones are read from the database)."""

Key = tuple[str, str]
"""A table's place in its list: ``(created, id)``, ``created`` an ISO 8601 UTC time (``now_iso``)."""


class LiveLists:
    """The keys of the live tables of each status in :data:`LISTED`, each list sorted.

    :meth:`add` a table when it is made or restored and again when it starts, :meth:`discard` it when it ends
    early; a table that left a status otherwise (finished, or dropped by its process) is taken out of that list
    the next time a page passes it (:meth:`page` checks every table it returns against ``tables``)."""

    def __init__(self) -> None:
        self._keys: dict[str, list[Key]] = {status: [] for status in LISTED}

    def __len__(self) -> int:
        """Keys held over all lists (tables that left a list but no page has passed yet included)."""
        return sum(len(keys) for keys in self._keys.values())

    def add(self, table: Table) -> None:
        """List ``table`` under its status now; nothing for a status that is not listed or a table listed there
        already."""
        keys = self._keys.get(table.status)
        if keys is None:
            return
        key = (table.row.created, table.id)
        i = bisect_left(keys, key)
        if i == len(keys) or keys[i] != key:
            keys.insert(i, key)

    def discard(self, table: Table) -> None:
        """Take ``table`` out of every list (it ended, or left this process)."""
        key = (table.row.created, table.id)
        for keys in self._keys.values():
            i = bisect_left(keys, key)
            if i < len(keys) and keys[i] == key:
                del keys[i]

    def page(self, status: str, after: Key | None, size: int, tables: Mapping[str, Table]) -> list[Table]:
        """Up to ``size`` tables of ``tables`` (live tables by id) with ``status``, oldest first, after the key
        ``after`` (``None``: from the first). ``KeyError`` for a status that is not in :data:`LISTED`."""
        keys = self._keys[status]
        i = 0 if after is None else bisect_right(keys, after)
        out: list[Table] = []
        while i < len(keys) and len(out) < size:
            table = tables.get(keys[i][1])
            if table is None or table.status != status:
                del keys[i]  # it left this list: started, ended, or no longer here
                if table is not None:
                    self.add(table)
                continue
            out.append(table)
            i += 1
        return out
