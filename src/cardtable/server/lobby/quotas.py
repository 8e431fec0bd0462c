"""What one client address may take of this process's lobby: seats held (``max_seats_per_address``), joins a
minute (``joins_per_minute``) and new tables a minute (``creates_per_minute``), the last two counted over every
process with a cluster.

:class:`Quotas` is a part of :class:`~cardtable.server.lobby.manager.Manager`; it declares the attributes it
reads.
"""

from __future__ import annotations

import math

from cardtable.server.cluster.calls import RemoteTable
from cardtable.server.cluster.member import Cluster
from cardtable.server.core.errors import TableError
from cardtable.server.core.limits import TokenBucket, TokenBuckets
from cardtable.server.core.settings import Settings
from cardtable.server.core.tokens import hash_token
from cardtable.server.table.owner import Table


class Quotas:
    """Per-address limits of the lobby."""

    settings: Settings
    tables: dict[str, Table]
    cluster: Cluster | None
    creates: dict[str, TokenBucket]
    joins: TokenBuckets
    held: dict[str, dict[tuple[str, int], str]]

    def seats_held(self, address: str) -> int:
        """Seats ``address`` holds at tables open or in play here (see :attr:`held`)."""
        seats = self.held.get(address)
        if not seats:
            self.held.pop(address, None)
            return 0
        for (table_id, seat), token_hash in list(seats.items()):
            table = self.tables.get(table_id)
            if (table is None or table.status not in ("open", "playing") or seat >= len(table.seats)
                    or table.seats[seat].row.token_hash != token_hash):
                del seats[(table_id, seat)]
        if not seats:
            del self.held[address]
        return len(seats)

    def hold_seat(self, address: str, table: Table | RemoteTable, seat: int, token: str) -> None:
        """Count ``seat`` at ``table``, just taken with ``token``, as held by ``address`` (a table played by another
        process is counted there, not here)."""
        if isinstance(table, Table) and self.tables.get(table.id) is table:
            self.held.setdefault(address, {})[(table.id, seat)] = hash_token(token)

    def check_seats(self, address: str) -> None:
        """``TableError`` 409 ``table.seat_limit`` when ``address`` already holds ``max_seats_per_address`` seats."""
        limit = self.settings.max_seats_per_address
        if self.seats_held(address) >= limit:
            raise TableError(409, "table.seat_limit", f"your address already holds {limit} seats: leave one first",
                             {"limit": limit})

    async def check_join(self, address: str) -> None:
        """Count one join from ``address``: ``TableError`` 429 ``table.join_limit`` (``retry_after_s``) beyond
        ``joins_per_minute`` (burst ``join_burst``; over every process with a cluster), then 409
        ``table.seat_limit`` past ``max_seats_per_address`` (:meth:`check_seats`)."""
        settings = self.settings
        rate = f"{settings.joins_per_minute:g}"
        if self.cluster is not None:
            allowed = await self.cluster.limits.allow_create(f"join:{address}", settings.joins_per_minute / 60.0,
                                                             settings.join_burst)
            wait = 0 if allowed else max(1, math.ceil(60.0 / max(settings.joins_per_minute, 1e-9)))
        else:
            wait = self.joins.take(address)
        if wait:
            raise TableError(429, "table.join_limit", f"too many joins from your address: at most {rate} a minute; "
                                                      f"try again in {wait} s", {"rate": rate, "retry_after_s": wait})
        self.check_seats(address)

    def allow_create(self, address: str) -> None:
        """Count one table creation from ``address``; ``TableError`` 429 beyond ``creates_per_minute`` (burst
        ``create_burst``)."""
        bucket = self.creates.get(address)
        if bucket is None:
            bucket = self.creates[address] = TokenBucket(self.settings.creates_per_minute / 60.0,
                                                         self.settings.create_burst)
        if not bucket.allow():
            rate = f"{self.settings.creates_per_minute:g}"
            raise TableError(429, "table.create_limit", f"too many new tables from your address: at most {rate} a "
                                                        "minute", {"rate": rate})

    async def check_create(self, address: str) -> None:
        """:meth:`allow_create`, counted over every process with a cluster (a token bucket in Redis)."""
        if self.cluster is None:
            self.allow_create(address)
            return
        settings = self.settings
        if not await self.cluster.limits.allow_create(address, settings.creates_per_minute / 60.0,
                                                       settings.create_burst):
            rate = f"{settings.creates_per_minute:g}"
            raise TableError(429, "table.create_limit", f"too many new tables from your address: at most {rate} a "
                                                        "minute", {"rate": rate})
