"""Seats tied to accounts: the seat token derived for a signed-in player (HMAC of the server's key, the table, the
seat and the account, so that any browser where the player signs in gets it again), the seats an account holds, the
accounts that hold a table's seats, and the accounts of finished tables' seats for the lobby."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select

from cardtable.server.core.tokens import hash_token
from cardtable.server.storage import players_schema as ps
from cardtable.server.storage import schema
from cardtable.server.storage.keys import server_key
from cardtable.server.storage.store import Store


async def holding_accounts(store: Store, table_id: str, token_hashes: Mapping[int, str | None]) -> dict[int, int]:
    """``{seat: account id}`` of the seats of ``table_id`` an account holds now: its ``seat_accounts`` row names
    an account that is not deleted, and the seat's token hash (``token_hashes``, by seat) is still that account's
    derived token (a seat left and taken by someone else is nobody's account). What a match's results go by."""
    sa, a = ps.seat_accounts, ps.accounts
    async with store.engine.connect() as conn:
        rows = (await conn.execute(select(sa.c.seat, sa.c.account_id).join(a, a.c.id == sa.c.account_id)
                                   .where(sa.c.table_id == table_id, a.c.deleted == 0))).all()
    key = await seat_key(store)
    return {row.seat: row.account_id for row in rows
            if token_hashes.get(row.seat) == hash_token(seat_token(key, table_id, row.seat, row.account_id))}


async def seats_of_account(store: Store, account_id: int, table_ids: list[str] | None = None) -> dict[str, int]:
    """``{table id: seat}`` of the seats tied to ``account_id`` (its ``seat_accounts`` rows) at tables open or in
    play, or only at ``table_ids``. Leaving a seat before the start unbinds it, so these are the seats it holds."""
    sa, t = ps.seat_accounts, schema.tables
    query = (select(sa.c.table_id, sa.c.seat).join(t, t.c.id == sa.c.table_id)
             .where(sa.c.account_id == account_id, t.c.status.in_(("open", "playing"))))
    if table_ids is not None:
        query = query.where(sa.c.table_id.in_(table_ids))
    async with store.engine.connect() as conn:
        return {row.table_id: row.seat for row in (await conn.execute(query)).all()}


IN_CHUNK = 500
"""Table ids per ``IN (...)`` query (well under SQLite's bound-parameter limit)."""


async def mark_finished_accounts(store: Store, tables: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Set ``account`` on the seats of finished ``TABLE`` dicts whose player has an account, from the match
    results: the name the player's page goes by (a person's account, or a bot level's spec); ``None`` for guests
    and deleted players. Tables of other statuses are left as they are. Returns ``tables``."""
    ended = {t["id"]: t for t in tables if t.get("status") in ("finished", "abandoned")}
    if not ended:
        return tables
    m, a = ps.match_seats, ps.accounts
    names: dict[tuple[str, int], str] = {}
    ids = list(ended)
    async with store.engine.connect() as conn:
        for start in range(0, len(ids), IN_CHUNK):
            rows = (await conn.execute(
                select(m.c.table_id, m.c.seat, a.c.name).join(a, a.c.id == m.c.account_id)
                .where(m.c.table_id.in_(ids[start:start + IN_CHUNK]), a.c.deleted == 0))).all()
            names.update({(row.table_id, row.seat): row.name for row in rows if row.name is not None})
    for table_id, table in ended.items():
        for seat in table.get("seats", []):
            if seat.get("kind") in ("person", "bot"):
                seat["account"] = names.get((table_id, seat["seat"]))
    return tables


async def seat_key(store: Store) -> bytes:
    """The server's key for seat tokens of signed-in players (``keys.server_key``'s ``seat``)."""
    return await server_key(store, "seat")


def seat_token(key: bytes, table_id: str, seat: int, account_id: int) -> str:
    """The seat token of ``account_id`` at ``seat`` of ``table_id``: the URL-safe base64 (unpadded) of the HMAC-SHA256
    of ``"table:seat:account"`` under ``key`` (:func:`seat_key`)."""
    digest = hmac.new(key, f"{table_id}:{seat}:{account_id}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")
