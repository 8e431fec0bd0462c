"""Seating a signed-in person (``docs/protocol.md``, "Accounts and players"): a seat just taken at a table, here
or at another process's table, is tied to the account of the request's session cookie."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, cast

from fastapi import Request

from cardtable.server.cluster.calls import RemoteTable
from cardtable.server.core.errors import TableError
from cardtable.server.players.sessions import COOKIE, current_account, same_origin
from cardtable.server.table.seat_accounts import bind_seat_here

if TYPE_CHECKING:
    from cardtable.server.table.owner import Table

log = logging.getLogger("cardtable.server.lobby.seating")


async def bind_seat(request: Request, table: Table | RemoteTable, seat: int,
                    token: str) -> tuple[Table | RemoteTable, str]:
    """Tie ``seat`` at ``table``, just taken with ``token``, to the signed-in account (if any): the seat takes
    the account's name and a token derived from the account. Returns the table (a table owned by another server
    process as its owner now shows it) and the token that holds the seat (a guest's ``token`` comes back
    unchanged). A cookie sent from another site is not honoured: that seat stays a guest's. With several server
    processes the owner of the table binds it (``Manager.operate``); should the owner not answer, the seat stays
    a guest's and keeps ``token``. ``TableError`` 409 ``seat.account_held`` when the account already holds another
    seat at the table (the caller gives ``seat`` up again: ``edge/routes.py``)."""
    if COOKIE not in request.cookies or not same_origin(request):
        return table, token
    account = await current_account(request)
    if account is None:
        return table, token
    args = {"seat": seat, "token": token, "account_id": account.id, "account_name": account.name}
    if not getattr(table, "remote", False):
        return table, await bind_seat_here(request.app.state.store, cast("Table", table), args)
    try:
        done = await request.app.state.manager.operate("bind", table.id, args)
    except TableError as error:
        if error.code == "seat.account_held":
            raise
        log.warning("table %s: seat %d not tied to account %d: %s", table.id, seat, account.id, error)
        return table, token
    return RemoteTable(done["table"]), str(done["token"])
