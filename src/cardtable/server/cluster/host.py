"""What the cluster needs of this process's lobby, as a seam the lobby implements (``lobby.manager.Manager``), so
that the cluster sits below the lobby: the live tables of this process, rebuilding a taken table, letting go of
one, and running a lobby operation another process forwarded."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from starlette.websockets import WebSocket

    from cardtable.server.core.settings import Settings
    from cardtable.server.storage.rows import TableRow
    from cardtable.server.table.owner import Table

ServeRelayed = Callable[["Table", "WebSocket", str], Awaitable[None]]
"""Serve one connection relayed here from another process (``table``, its socket, the client's address) until it
closes: ``edge.ws.serve_connection`` with this process's lobby, set by the app (``Relays.serve``)."""


class TableHost(Protocol):
    """The lobby of this process as the cluster sees it."""

    tables: dict[str, Table]
    """The tables owned here, by id."""

    settings: Settings
    """The server's settings (``max_outbox`` for relayed connections)."""

    def restore(self, row: TableRow) -> Table | None:
        """Rebuild the stored table ``row`` (loaded with its hands) and start its owner here; ``None`` when its
        record does not replay."""
        ...

    def disarm(self, table: Table) -> None:
        """Cancel ``table``'s autostart timer (the table is let go)."""
        ...

    async def run_local(self, method: str, table_id: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run a lobby operation another process forwarded for a table owned here (``Cluster.call``)."""
        ...
