"""Play again (``docs/protocol.md``, "Play again"): at a finished table, a person who held a seat opens the next
table, with the same game, options and seats, the bots (same kinds and levels) in the same seats; the old table
remembers it (``Table.successor``) and invites its connections (an ``again`` message), and whoever of the others
presses Play again next takes their own seat there instead of opening another.

Everything about the old table runs on its owner (:meth:`~cardtable.server.lobby.routing.Routing.route`: here, or
at the process that owns it), so two presses at once open one table; the new table is made at that process too.

:class:`Again` is a part of :class:`~cardtable.server.lobby.manager.Manager`; it declares the attributes it reads.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from cardtable.server.cluster.calls import RemoteTable
from cardtable.server.core.errors import TableError
from cardtable.server.core.settings import Settings
from cardtable.server.lobby.routing import on_owner, seated
from cardtable.server.table.owner import Table

T = TypeVar("T")


def next_seats(table: Table) -> list[dict[str, Any]]:
    """The seat specs of the table after ``table``: each bot seat the same bot (``{"kind": "bot", "bot": spec}``),
    every person's seat (a stand-in's too) open (``{"kind": "open"}``)."""
    return [
        {"kind": "bot", "bot": s.row.bot} if s.row.kind == "bot" else {"kind": "open"} for s in table.seats
    ]


class Again:
    """The table after a finished one, and following the others there."""

    settings: Settings

    if TYPE_CHECKING:

        async def route(
            self,
            table_id: str,
            method: str,
            args: dict[str, Any],
            here: Callable[[Table], Awaitable[T]],
            there: Callable[[dict[str, Any]], T],
        ) -> T: ...

        async def create(
            self,
            game: str,
            options: dict[str, Any],
            seats: list[dict[str, Any]] | None,
            name: str,
            seed: int | None,
            grace_seconds: float | None,
            autostart: bool = True,
            ready_seconds: float | None = None,
            creator_seat: int | None = None,
            daily: str | None = None,
            pace: str = "real-time",
            turn_clock: dict[str, int] | None = None,
        ) -> tuple[Table, int, str]: ...

        def arm_autostart(self, table: Table, delay_s: float, *, on_hello: bool) -> None: ...

    async def again(self, table_id: str, token: str) -> tuple[Table | RemoteTable, int, str]:
        """Play again from the finished table ``table_id`` with the ``token`` of a seat a person held there: the
        first press opens the next table (:func:`next_seats`, the same options, pace and turn clock, grace and ready
        countdown, a seed
        the server draws, so a rated match stays rated) and seats the presser at their own seat number; the old
        table's connections get ``{"type": "again", "table": NEW_ID, "seat": N, "name": NAME}``. A later press by
        another seat takes that seat number at the new table (else any open seat there). Returns the new table,
        the seat and its token, as :meth:`join` does.

        A new table of one person and bots starts when the presser connects (``Manager.create``); one of several
        people starts ``solo_start_s`` after its last open seat is taken this way (until then it is an open table,
        which anyone may join from the lobby: there are no reserved seats).

        ``TableError``: 403 ``token.bad`` (not a seat's token), 409 ``again.not_over`` before the end,
        ``again.followed`` (``table``: the new table) when this seat already took its seat there, ``table.started``
        or ``table.full`` when the new table started or filled, 404 when ``table_id`` is not live (a finished table
        is let go ``finished_table_keep_s`` after its end)."""
        return await self.route(
            table_id, "again", {"token": token}, lambda old: self._again_here(old, token), seated
        )

    async def _again_here(self, old: Table, token: str) -> tuple[Table | RemoteTable, int, str]:
        async def go() -> tuple[Table | str, int, str]:
            seat = old.seat_of(token)
            if old.status != "finished":
                raise TableError(
                    409, "again.not_over", "the game is not over: Play again opens the next table at its end"
                )
            if seat in old.followed:
                raise TableError(
                    409,
                    "again.followed",
                    "you already took your seat at the next table",
                    {"table": old.successor},
                )
            name = old.seats[seat].row.name or "player"
            if old.successor is not None:
                old.followed.add(seat)
                return old.successor, seat, name
            made, taken, new_token = await self.create(
                old.game,
                dict(old.row.options),
                next_seats(old),
                name,
                None,
                old.row.grace_seconds,
                ready_seconds=old.row.ready_seconds,
                creator_seat=seat,
                pace=old.row.pace,
                turn_clock=old.row.turn_clock,
            )
            old.successor = made.id
            old.followed.add(seat)
            old.broadcast({"type": "again", "table": made.id, "seat": seat, "name": name})
            return made, taken, new_token

        made, seat, text = await on_owner(old, go)
        if isinstance(made, Table):
            return made, seat, text
        try:
            return await self.route(
                made,
                "again_join",
                {"name": text, "seat": seat},
                lambda table: self.again_join_here(table, text, seat),
                seated,
            )
        except TableError:

            async def undo() -> None:  # no seat taken: this seat may try again
                old.followed.discard(seat)

            with contextlib.suppress(TableError):
                await on_owner(old, undo)
            raise

    async def again_join_here(self, table: Table, name: str, seat: int) -> tuple[Table, int, str]:
        """Seat ``name``, who followed Play again, at the new ``table`` played here: at ``seat`` if it is open,
        else at the first open seat; once no seat is open the table starts after ``solo_start_s``. Returns the
        table, the seat and its token; ``TableError`` 409 ``table.started`` or ``table.full``."""

        async def take() -> tuple[int, str]:
            wanted = seat if 0 <= seat < len(table.seats) and table.seats[seat].row.kind == "open" else None
            taken = await table.take_seat(name, wanted)
            if table.autostart is None and not any(s.row.kind == "open" for s in table.seats):
                self.arm_autostart(table, self.settings.solo_start_s, on_hello=False)
            table.announce()
            return taken

        taken_seat, token = await on_owner(table, take)
        return table, taken_seat, token
