"""Sessions: who a request is signed in as, and the cookie that says so.

A session is a random id in an HttpOnly, SameSite=Lax cookie (``Secure`` over HTTPS) whose SHA-256 is stored, for
:data:`SESSION_DAYS`. Every request that changes state with the cookie must come from the page's own origin
(``Origin``, else ``Sec-Fetch-Site``), so another site cannot act for a signed-in player (:func:`check_origin`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from fastapi import Request, Response
from sqlalchemy import insert, select
from sqlalchemy.engine import Connection

from cardtable.server.core.addresses import own_origin, parse_origin
from cardtable.server.core.clock import now_iso
from cardtable.server.core.tokens import hash_token
from cardtable.server.players.account_errors import AccountError
from cardtable.server.storage import players_schema as ps
from cardtable.server.storage.store import Store

COOKIE = "ct_session"
"""The session cookie's name."""

SESSION_DAYS = 30
"""A session lasts this many days."""


def app_store(request: Request) -> Store:
    """The app's :class:`Store` (``app.state.store``)."""
    store: Store = request.app.state.store
    return store


def same_origin(request: Request) -> bool:
    """True unless the request says it comes from another site: an ``Origin`` whose scheme, host and port are not
    this request's own (``guard.own_origin``: its scheme, https behind a trusted proxy that says so, and ``Host``),
    or, without ``Origin``, ``Sec-Fetch-Site: cross-site``. Clients that are not browsers send neither."""
    origin = request.headers.get("origin")
    if origin is not None:
        theirs = parse_origin(origin)
        return theirs is not None and theirs == own_origin(request)
    return request.headers.get("sec-fetch-site", "same-origin") != "cross-site"


def check_origin(request: Request, *, always: bool = False) -> None:
    """:class:`AccountError` 403 ``account.cross_origin`` for a request from another site that carries the session cookie
    (with ``always``: any request from another site, as for signing up and in)."""
    if (always or COOKIE in request.cookies) and not same_origin(request):
        raise AccountError(403, "account.cross_origin", "requests that change state must come from this site")


def set_cookie(request: Request, response: Response, session_id: str) -> None:
    """Set the session cookie to ``session_id`` on ``response``, for :data:`SESSION_DAYS` (``Secure`` over HTTPS)."""
    response.set_cookie(
        COOKIE, session_id, max_age=SESSION_DAYS * 86400, path="/", httponly=True, samesite="lax",
        secure=request.url.scheme == "https",
    )


def clear_cookie(request: Request, response: Response) -> None:
    """Clear the session cookie on ``response``, with the flags it was set with."""
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="lax", secure=request.url.scheme == "https")


@dataclass(slots=True)
class Account:
    """A signed-in person: account ``id`` and ``name``."""

    id: int
    name: str


async def current_account(request: Request) -> Account | None:
    """The account of the request's session cookie, or ``None`` (no cookie, unknown or expired session)."""
    session_id = request.cookies.get(COOKIE)
    if not session_id or len(session_id) > 200:
        return None
    a, s = ps.accounts, ps.sessions
    query = (select(a.c.id, a.c.name).select_from(s.join(a, a.c.id == s.c.account_id))
             .where(s.c.id_hash == hash_token(session_id), s.c.expires > now_iso(), a.c.deleted == 0))
    async with app_store(request).engine.connect() as conn:
        row = (await conn.execute(query)).first()
    return None if row is None else Account(id=row.id, name=row.name)


async def require_account(request: Request) -> Account:
    """:func:`current_account`, or :class:`AccountError` 401 ``account.not_signed_in``."""
    account = await current_account(request)
    if account is None:
        raise AccountError(401, "account.not_signed_in", "you are not signed in")
    return account


async def new_session(store: Store, account_id: int) -> str:
    """Start a session of :data:`SESSION_DAYS` for ``account_id``: its id for the cookie (only its hash is stored)."""
    session_id = secrets.token_urlsafe(32)
    created = datetime.now(UTC)
    values = {"id_hash": hash_token(session_id), "account_id": account_id,
              "created": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
              "expires": (created + timedelta(days=SESSION_DAYS)).strftime("%Y-%m-%dT%H:%M:%SZ")}

    def fn(conn: Connection) -> None:
        conn.execute(insert(ps.sessions).values(**values))

    await store.write(fn)
    return session_id


def signed_in(request: Request) -> bool:
    """Whether the request may act for a session's account at all: it carries the cookie and is not from another
    site (:func:`bind_seat` honours no other)."""
    return COOKIE in request.cookies and same_origin(request)
