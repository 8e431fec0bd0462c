"""Which account holds which seat of a table owned here (``docs/protocol.md``, "Accounts and players"): a
signed-in person's seat holds a token derived from the account (``players.accounts.seat_token``), so binding,
unbinding and restoring after a restart are writes of that token and of the ``seat_accounts`` row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection

from cardtable.server.core.errors import TableError
from cardtable.server.core.tokens import hash_token
from cardtable.server.players.account_seats import IN_CHUNK, seat_key, seat_token
from cardtable.server.players.sessions import Account
from cardtable.server.storage import players_schema as ps
from cardtable.server.storage.store import Store

if TYPE_CHECKING:
    from cardtable.server.table.owner import Table


def account_seat(key: bytes, table: Table, account_id: int, but: int | None = None) -> int | None:
    """The seat (other than ``but``) that ``account_id`` holds at the live ``table`` now: a person's seat whose
    token hash is the account's derived token for it (so a seat left and taken by someone else is not the
    account's), else ``None``. ``key``: :func:`seat_key`."""
    for state in table.seats:
        number = state.row.seat
        if number != but and state.row.kind == "person" and state.row.token_hash == hash_token(
                seat_token(key, table.id, number, account_id)):
            return number
    return None


def unbind_seat(store: Store, table: Table, seat: int) -> Any:
    """Untie ``seat`` at ``table`` from its account (on the table's owner: the seat was left before the start):
    forget the mark and delete its ``seat_accounts`` row. Returns the write's future (await it)."""
    table.seats[seat].account = None
    sa = ps.seat_accounts

    def fn(conn: Connection) -> None:
        conn.execute(delete(sa).where(sa.c.table_id == table.id, sa.c.seat == seat))

    return store.write(fn)


async def bind_seat_here(store: Store, table: Table, args: Mapping[str, Any]) -> str:
    """:func:`bind_seat` on the table's owner: ``args`` holds the ``seat``, the ``token`` it was just taken with,
    and the signed-in ``account_id`` and ``account_name``. The seat's name and token hash become the account's
    (stored, with its ``seat_accounts`` row) and a ``table`` message says so. Returns the token that now holds
    the seat: the account's derived token, or ``token`` if the seat no longer holds it (left and taken again).
    ``TableError`` 409 ``seat.account_held`` (nothing changed) when the account holds another seat at the table:
    one account, one seat, so that nobody plays against themself for a rating."""
    seat, token = int(args["seat"]), str(args["token"])
    account = Account(int(args["account_id"]), str(args["account_name"]))
    key = await seat_key(store)
    derived = seat_token(key, table.id, seat, account.id)

    async def go() -> str:
        row = table.seats[seat].row
        if row.kind != "person" or row.token_hash != hash_token(token):
            return token
        other = account_seat(key, table, account.id, but=seat)
        if other is not None:
            raise TableError(409, "seat.account_held", f"you already hold seat {other} at this table",
                             {"seat": other})
        row.name, row.token_hash = account.name, hash_token(derived)
        table.seats[seat].account = (row.token_hash, account.name)
        await store.update_seat(table.id, row)

        def fn(conn: Connection) -> None:
            sa = ps.seat_accounts
            conn.execute(delete(sa).where(sa.c.table_id == table.id, sa.c.seat == seat))
            conn.execute(insert(sa).values(table_id=table.id, seat=seat, account_id=account.id))

        await store.write(fn)
        table.broadcast({"type": "table", "table": table.to_dict()})
        return derived

    held: str = await table.submit_call(go)
    return held


async def restore_seat_accounts(store: Store, tables: Mapping[str, Table]) -> None:
    """After a restart, mark the seats of the live ``tables`` (by id) that are tied to an account, as
    :func:`bind_seat` did, so that ``TABLE`` names their account again. A seat counts only while its token hash is
    still the account's derived token (a seat left and taken by someone else is not marked)."""
    sa, a = ps.seat_accounts, ps.accounts
    ids = list(tables)
    key = await seat_key(store)
    async with store.engine.connect() as conn:
        for start in range(0, len(ids), IN_CHUNK):
            rows = (await conn.execute(
                select(sa.c.table_id, sa.c.seat, sa.c.account_id, a.c.name).join(a, a.c.id == sa.c.account_id)
                .where(sa.c.table_id.in_(ids[start:start + IN_CHUNK]), a.c.deleted == 0))).all()
            for row in rows:
                table = tables[row.table_id]
                if row.seat >= len(table.seats):
                    continue
                state = table.seats[row.seat]
                token_hash = hash_token(seat_token(key, row.table_id, row.seat, row.account_id))
                if state.row.token_hash == token_hash and row.name is not None:
                    state.account = (token_hash, row.name)
