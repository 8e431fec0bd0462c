"""The server's secrets: random keys made once and kept in the database (``server_keys``), so that every server
process and every restart uses the same ones.

``deal``: mixed into each hand's shuffle seed (``table.hand_seed``), so that nobody who learns a table's seed can
deal its hands. ``seat``: the seat tokens of signed-in players (``lobby/seating.bind_seat``).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from cardtable.server.storage import players_schema as ps
from cardtable.server.storage.store import Store

KEY_BYTES = 48
"""Random bytes in a new key (stored URL-safe base64, 64 characters)."""


async def server_key(store: Store, name: str, make: Callable[[], str] | None = None) -> bytes:
    """The server's key ``name`` (at most 32 characters): made and stored the first time any process asks, then
    read back (so two processes racing to make it agree on the one stored) and cached on ``store``. ``make`` gives
    a new key's stored text (default: :data:`KEY_BYTES` random bytes, URL-safe base64)."""
    cache: dict[str, bytes] = store.__dict__.setdefault("_server_keys", {})
    if name in cache:
        return cache[name]
    k = ps.server_keys
    fresh = make() if make is not None else secrets.token_urlsafe(KEY_BYTES)

    def fn(conn: Connection) -> None:
        if conn.execute(select(k.c.value).where(k.c.name == name)).first() is None:
            conn.execute(insert(k).values(name=name, value=fresh))

    with contextlib.suppress(IntegrityError):  # another process stored it first: read theirs
        await store.write(fn)
    async with store.engine.connect() as conn:
        value = (await conn.execute(select(k.c.value).where(k.c.name == name))).scalar_one()
    key = str(value).encode()
    cache[name] = key
    return key
