"""The account routes (``docs/protocol.md``, "Accounts and players"): sign up, sign in, sign out, who am I,
delete, and the seats a signed-in player holds; the limits on signing up and in; what a name may be for an account.

Accounts are optional: guests play exactly as before. A password is stored only as an Argon2 hash, checked a few at
a time (``server/players/passwords.py``); a session is a random id in a cookie (``server/players/sessions.py``, which
also holds the rule that every request that changes state with the cookie must come from the page's own origin).
Failed sign-ins are limited per name and address pair (nobody else's failures lock an account) and per address,
successful ones per address (``server/core/limits.py``'s moving windows). What a name may be is
``server/players/names.py``: names are unique after NFKC normalisation and case folding, and by their UTS #39
confusable skeleton.

A signed-in player's seat is tied to the account: its token is derived from a server key, the table, the seat and
the account (HMAC, ``server/players/account_seats.py``), so ``GET /api/me/seats`` gives it again in any browser
where the player signs in.

Refusals are ``4xx {"detail": reason, "code": code, "params": {...}}`` (``server/players/account_errors.py``).
"""
from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import delete, insert, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from cardtable import bots
from cardtable.games import game_names
from cardtable.server.core.addresses import client_address
from cardtable.server.core.clock import now_iso
from cardtable.server.core.errors import error_responses
from cardtable.server.core.limits import MovingWindows, SharedMovingWindows
from cardtable.server.core.tokens import hash_token
from cardtable.server.players.account_errors import AccountError
from cardtable.server.players.account_seats import seat_key, seat_token, seats_of_account
from cardtable.server.players.names import NameRefused, check_name, has_control, name_key, name_skeleton
from cardtable.server.players.passwords import password_checks
from cardtable.server.players.seat_turns import with_turns
from cardtable.server.players.sessions import (
    COOKIE,
    Account,
    app_store,
    check_origin,
    clear_cookie,
    current_account,
    new_session,
    require_account,
    set_cookie,
)
from cardtable.server.storage import players_schema as ps
from cardtable.server.storage import schema

router = APIRouter(prefix="/api", tags=["accounts"])
log = logging.getLogger("cardtable.server.players.accounts")


PASSWORD_MIN, PASSWORD_MAX = 8, 200
"""Password length bounds, in characters."""

MAX_FAILURES_PER_NAME = 5
MAX_FAILURES_PER_ADDRESS = 20
"""Failed sign-ins allowed within the window (``server/core/limits.py``'s ``FAILURE_WINDOW_S``, seconds) before
``429``: for one name from one address (so that nobody's failures from elsewhere lock an account), and from one
address over all names."""

MAX_SIGN_UPS_PER_ADDRESS = 20
"""Accounts one address may make within the same window (each costs an Argon2 hash)."""


DEFAULT_SIGN_INS_PER_ADDRESS = 30
"""Successful sign-ins per address within the same window when the app has no settings
(``Settings.sign_ins_per_address``)."""


# -- names --------------------------------------------------------------------------------------------------

def reserved_names() -> set[str]:
    """Name keys of the bots' own accounts (every bot spec and bot family): bots are players on the leaderboards.
    Which names people may not take is :func:`cardtable.server.players.names.reserved`; this is kept for callers that
    want the bots' keys."""
    out = {"bot", "guest", "deleted"}
    for game in game_names():
        for info in bots.bot_infos(game):
            out.add(name_key(info.spec))
            out.add(name_key(info.spec.split(":")[0]))
    return out


def clean_name(raw: str, *, guest: bool = False) -> str:
    """The name as stored (NFKC, trimmed) by the one rule for names (:func:`cardtable.server.players.names.check_name`:
    ``guest`` for a guest's seat name); :class:`AccountError` 422 with its code (``account.name_invalid``,
    ``name.invisible``, ``name.reserved``) and params for a name it refuses."""
    try:
        return check_name(raw, guest=guest)
    except NameRefused as error:
        raise AccountError(422, error.code, error.detail, **error.params) from None


# -- request bodies -----------------------------------------------------------------------------------------

class Credentials(BaseModel):
    """``POST /api/accounts`` and ``POST /api/session`` bodies."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=100)
    password: str = Field(min_length=1, max_length=PASSWORD_MAX)


# -- plumbing -------------------------------------------------------------------------------------------------


def _limiter(request: Request) -> MovingWindows | SharedMovingWindows:
    limiter: MovingWindows | SharedMovingWindows | None = getattr(request.app.state, "sign_in_limiter", None)
    if limiter is None:
        limiter = request.app.state.sign_in_limiter = MovingWindows()
    return limiter


def _me(account: Account) -> dict[str, Any]:
    return {"id": account.id, "name": account.name}


# -- routes -------------------------------------------------------------------------------------------------

@router.post("/accounts", status_code=201, responses=error_responses(403, 409, 413, 422, 429))
async def sign_up(body: Credentials, request: Request, response: Response) -> dict[str, Any]:
    """Make an account and sign in: ``{"id", "name"}`` and the session cookie. Refusals: 429 ``account.rate_limited``
    (too many accounts from one address), 422 ``account.name_invalid``, ``name.invisible``, ``name.reserved``
    (``server/players/names.py``), ``account.password_invalid``; 409 ``account.name_taken`` (the name, or one that looks
    like it: the same UTS #39 skeleton, unique in the database); 403 ``account.cross_origin``."""
    check_origin(request, always=True)
    address = "signup:" + client_address(request)
    limiter = _limiter(request)
    wait = await limiter.check(address, MAX_SIGN_UPS_PER_ADDRESS)
    if wait:
        raise AccountError(429, "account.rate_limited", f"too many new accounts: try again in {wait} s",
                           retry_after_s=wait)
    name = clean_name(body.name)
    key, skeleton = name_key(name), name_skeleton(name)
    if key in reserved_names():
        raise AccountError(409, "account.name_taken", f"the name {name!r} is taken", name=name)
    if not PASSWORD_MIN <= len(body.password) <= PASSWORD_MAX:
        raise AccountError(422, "account.password_invalid", f"a password has {PASSWORD_MIN} to {PASSWORD_MAX} characters",
                           min=PASSWORD_MIN, max=PASSWORD_MAX)
    await limiter.note_failure(address, MAX_SIGN_UPS_PER_ADDRESS)
    password_hash = await password_checks(request).hash(body.password)
    made: list[int] = []

    def fn(conn: Connection) -> None:
        a = ps.accounts
        if conn.execute(select(a.c.id).where(or_(a.c.name_key == key, a.c.name_skeleton == skeleton))).first():
            return
        result = conn.execute(insert(a).values(kind="person", name=name, name_key=key, name_skeleton=skeleton,
                                               password_hash=password_hash, created=now_iso(), deleted=0))
        made.append(int(result.inserted_primary_key[0]))  # type: ignore[index]

    store = app_store(request)
    try:
        await store.write(fn)
    except IntegrityError:  # the same name or a look-alike, taken meanwhile through another server process
        made.clear()
    if not made:
        raise AccountError(409, "account.name_taken", f"the name {name!r} is taken", name=name)
    set_cookie(request, response, await new_session(store, made[0]))
    return _me(Account(made[0], name))


@router.post("/session", responses=error_responses(401, 403, 413, 422, 429))
async def sign_in(body: Credentials, request: Request, response: Response) -> dict[str, Any]:
    """Sign in: ``{"id", "name"}`` and the session cookie. Refusals: 401 ``account.bad_credentials`` (unknown name or
    wrong password, the same answer for both), 429 ``account.rate_limited`` (``retry_after_s``), 403 ``account.cross_origin``.

    Limits, each within :data:`FAILURE_WINDOW_S` and checked before any password: :data:`MAX_FAILURES_PER_NAME`
    failures for one name from one address (failures from other addresses never lock the account),
    :data:`MAX_FAILURES_PER_ADDRESS` failures from one address, and ``Settings.sign_ins_per_address`` successful
    sign-ins from one address. Passwords are checked by :class:`PasswordChecks`, a few at a time. 422
    ``name.invisible`` for a name with a control character (no account's name holds one)."""
    check_origin(request, always=True)
    if has_control(body.name):  # checked before the database: PostgreSQL answers a NUL in text with an error
        raise AccountError(422, "name.invisible", "a name may not contain a control character", char=None)
    limiter = _limiter(request)
    key = name_key(body.name.strip())[:200]
    address = client_address(request)
    pair = f"pair:{address}|{key}"
    settings = getattr(request.app.state, "settings", None)
    max_sign_ins = getattr(settings, "sign_ins_per_address", DEFAULT_SIGN_INS_PER_ADDRESS)
    wait = max(await limiter.check(pair, MAX_FAILURES_PER_NAME),
               await limiter.check("addr:" + address, MAX_FAILURES_PER_ADDRESS))
    if wait:
        raise AccountError(429, "account.rate_limited", f"too many failed sign-ins: try again in {wait} s",
                           retry_after_s=wait)
    wait = await limiter.check("signin:" + address, max_sign_ins)
    if wait:
        raise AccountError(429, "account.rate_limited", f"too many sign-ins from your address: try again in {wait} s",
                           retry_after_s=wait)
    a = ps.accounts
    store = app_store(request)
    async with store.engine.connect() as conn:
        row = (await conn.execute(select(a.c.id, a.c.name, a.c.password_hash)
                                  .where(a.c.name_key == key, a.c.kind == "person", a.c.deleted == 0))).first()
    ok = await password_checks(request).verify(row.password_hash if row else None, body.password)
    if row is None or not ok:
        await limiter.note_failure(pair, MAX_FAILURES_PER_NAME)
        await limiter.note_failure("addr:" + address, MAX_FAILURES_PER_ADDRESS)
        raise AccountError(401, "account.bad_credentials", "wrong name or password")
    await limiter.note_failure("signin:" + address, max_sign_ins)  # counts a success
    await limiter.forget(pair, MAX_FAILURES_PER_NAME)
    set_cookie(request, response, await new_session(store, row.id))
    return _me(Account(row.id, row.name))


@router.delete("/session", status_code=204, responses=error_responses(403))
async def sign_out(request: Request) -> Response:
    """Sign out: the session ends and the cookie is cleared (also when there was none)."""
    check_origin(request)
    session_id = request.cookies.get(COOKIE)
    if session_id:
        digest = hash_token(session_id)

        def fn(conn: Connection) -> None:
            conn.execute(delete(ps.sessions).where(ps.sessions.c.id_hash == digest))

        await app_store(request).write(fn)
    response = Response(status_code=204)
    clear_cookie(request, response)
    return response


@router.get("/session", responses=error_responses())
async def session(request: Request) -> dict[str, Any]:
    """Who is signed in, for pages that show it: ``{"account": {"id", "name"}}`` or ``{"account": null}`` (never
    a refusal, so that a guest's page logs no error)."""
    account = await current_account(request)
    return {"account": None if account is None else _me(account)}


@router.get("/me", responses=error_responses(401))
async def me(request: Request) -> dict[str, Any]:
    """The signed-in account ``{"id", "name"}``; 401 ``account.not_signed_in``."""
    return _me(await require_account(request))


@router.delete("/me", status_code=204, responses=error_responses(401, 403))
async def delete_me(request: Request) -> Response:
    """Delete the signed-in account: its name is freed, its password, sessions and ratings go; its matches stay,
    shown as a deleted player. Its seats at tables open or in play are untied from it (their tokens still hold
    them, as a guest's: a match it was playing is never rated for it). 401 ``account.not_signed_in``, 403
    ``account.cross_origin``."""
    check_origin(request)
    account = await require_account(request)
    store = app_store(request)
    held = await seats_of_account(store, account.id)

    def fn(conn: Connection) -> None:
        conn.execute(delete(ps.seat_accounts).where(ps.seat_accounts.c.account_id == account.id))
        conn.execute(delete(ps.sessions).where(ps.sessions.c.account_id == account.id))
        conn.execute(delete(ps.push_subscriptions).where(ps.push_subscriptions.c.account_id == account.id))
        conn.execute(delete(ps.ratings).where(ps.ratings.c.account_id == account.id))
        conn.execute(delete(ps.rating_history).where(ps.rating_history.c.account_id == account.id))
        conn.execute(delete(ps.player_stats).where(ps.player_stats.c.account_id == account.id))
        conn.execute(update(ps.match_seats).where(ps.match_seats.c.account_id == account.id).values(name=None))
        conn.execute(update(ps.accounts).where(ps.accounts.c.id == account.id)
                     .values(name=None, name_key=None, name_skeleton=None, password_hash=None, deleted=1))

    await store.write(fn)
    live = getattr(request.app.state.manager, "tables", {})
    for table_id, seat in held.items():  # the marks of the seats played here (others go with their owner's restart)
        table = live.get(table_id)
        if table is not None and seat < len(table.seats):
            table.seats[seat].account = None
            table.announce()
    response = Response(status_code=204)
    clear_cookie(request, response)
    return response


# -- seats tied to accounts -----------------------------------------------------------------------------------


@router.get("/me/seats", responses=error_responses(401))
async def my_seats(request: Request) -> list[dict[str, Any]]:
    """The seats the signed-in player holds at open tables and tables in play, each with its token (the same in
    every browser): ``[{"table": TABLE, "seat", "token", "turn", "bank_ms", "deadline", "last_trick"}]``, the seats
    to move first (``players/seat_turns.py``: turn-based tables). 401 ``account.not_signed_in``. Read from the
    database, so that every server process gives the same list (a table owned by another process as its owner
    last published it)."""
    account = await require_account(request)
    store = app_store(request)
    sa, t = ps.seat_accounts, schema.tables
    async with store.engine.connect() as conn:  # one query for every seat, whatever their number
        rows = (await conn.execute(
            select(sa.c.table_id, sa.c.seat).join(t, t.c.id == sa.c.table_id)
            .where(sa.c.account_id == account.id, t.c.status.in_(("open", "playing")))
            .order_by(sa.c.table_id, sa.c.seat))).all()
    key = await seat_key(store)
    manager = request.app.state.manager
    elsewhere = sorted({row.table_id for row in rows if row.table_id not in manager.tables})
    stored = {r.id: r for r in await store.load_tables(table_ids=elsewhere, statuses=("open", "playing"))} \
        if elsewhere else {}
    shown = await manager.stored_dicts(list(stored.values()))
    out = []
    for row in rows:
        token = seat_token(key, row.table_id, row.seat, account.id)
        table = manager.tables.get(row.table_id)
        if table is not None:  # played here: its seats as they are now
            if table.status not in ("open", "playing") or table.seats[row.seat].row.token_hash != hash_token(token):
                continue
            out.append({"table": table.to_dict(), "seat": row.seat, "token": token})
            continue
        found = stored.get(row.table_id)
        if found is None or row.seat >= len(found.seats) or found.seats[row.seat].token_hash != hash_token(token):
            continue  # over, or the seat was left and taken by someone else
        out.append({"table": shown[row.table_id], "seat": row.seat, "token": token})
    return await with_turns(store, out, manager.tables, stored)


