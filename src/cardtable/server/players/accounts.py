"""Accounts and sessions (``docs/protocol.md``, "Accounts and players"): sign up, sign in, sign out, who am I,
delete, and the seats a signed-in player holds.

Accounts are optional: guests play exactly as before. A password is stored only as an Argon2 hash (argon2-cffi);
a session is a random id in an HttpOnly, SameSite=Lax cookie (``Secure`` over HTTPS) whose SHA-256 is stored.
Failed sign-ins are limited per name and address pair (nobody else's failures lock an account) and per address,
successful ones per address; Argon2 runs a few checks at a time (:class:`PasswordChecks`). What a name may be is ``server/players/names.py``:
names are unique after NFKC normalisation and case folding, and by their UTS #39 confusable skeleton. Every request that changes state with the cookie must come from the page's own
origin (``Origin``, else ``Sec-Fetch-Site``), so another site cannot act for a signed-in player.

A signed-in player's seat is tied to the account: its token is derived from a server key, the table, the seat and
the account (HMAC), so ``GET /api/me/seats`` gives it again in any browser where the player signs in.

Refusals are ``4xx {"detail": reason, "code": code, "params": {...}}``.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import functools
import hashlib
import hmac
import itertools
import logging
import secrets
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import delete, insert, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from cardtable import bots
from cardtable.games import game_names
from cardtable.server.core.addresses import client_address, own_origin, parse_origin
from cardtable.server.core.clock import now_iso
from cardtable.server.core.errors import error_responses
from cardtable.server.core.tokens import hash_token
from cardtable.server.players.names import NameRefused, check_name, has_control, name_key, name_skeleton
from cardtable.server.storage import players_schema as ps
from cardtable.server.storage import schema
from cardtable.server.storage.keys import server_key
from cardtable.server.storage.store import Store

if TYPE_CHECKING:
    from cardtable.server.core.counters import SharedLimiter

router = APIRouter(prefix="/api", tags=["accounts"])
log = logging.getLogger("cardtable.server.players.accounts")

COOKIE = "ct_session"
"""The session cookie's name."""

SESSION_DAYS = 30
"""A session lasts this many days."""

PASSWORD_MIN, PASSWORD_MAX = 8, 200
"""Password length bounds, in characters."""

MAX_FAILURES_PER_NAME = 5
MAX_FAILURES_PER_ADDRESS = 20
FAILURE_WINDOW_S = 15 * 60.0
"""Failed sign-ins allowed within the window (seconds) before ``429``: for one name from one address (so that
nobody's failures from elsewhere lock an account), and from one address over all names."""

MAX_SIGN_UPS_PER_ADDRESS = 20
"""Accounts one address may make within the same window (each costs an Argon2 hash)."""

_hasher = PasswordHasher()
"""Argon2id with argon2-cffi's default (RFC 9106 low-memory) parameters."""


class PasswordChecks:
    """Argon2 work (hashing and checking passwords) off the event loop, at most ``concurrency`` at once in threads
    of its own (``Settings.argon2_concurrency``): each takes about 64 MiB and a core for some 50 ms, so the
    others wait in line instead of filling the default thread pool. ``ValueError`` for ``concurrency`` below 1."""

    def __init__(self, concurrency: int) -> None:
        if concurrency < 1:
            raise ValueError(f"argon2_concurrency must be at least 1, not {concurrency}")
        self.concurrency = concurrency
        self._executor = concurrent.futures.ThreadPoolExecutor(concurrency, thread_name_prefix="cardtable-argon2")

    async def hash(self, password: str) -> str:
        """The Argon2id hash of ``password``."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, _hasher.hash, password)

    async def verify(self, password_hash: str | None, password: str) -> bool:
        """Whether ``password`` matches ``password_hash``; with ``None`` (no such account) a hash made for the
        purpose is checked, so that an unknown name takes as long to refuse as a wrong password."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, _verify, password_hash, password)

    def close(self) -> None:
        """Let the threads go once the checks running end."""
        self._executor.shutdown(wait=False)


def _verify(password_hash: str | None, password: str) -> bool:
    try:
        return bool(_hasher.verify(password_hash or _dummy_hash(), password))
    except (VerificationError, InvalidHashError):
        return False


def password_checks(request: Request) -> PasswordChecks:
    """The app's :class:`PasswordChecks` (made on first use, sized by its settings' ``argon2_concurrency``)."""
    checks: PasswordChecks | None = getattr(request.app.state, "password_checks", None)
    if checks is None:
        settings = getattr(request.app.state, "settings", None)
        concurrency = getattr(settings, "argon2_concurrency", DEFAULT_ARGON2_CONCURRENCY)
        checks = request.app.state.password_checks = PasswordChecks(concurrency)
    return checks


DEFAULT_ARGON2_CONCURRENCY = 2
"""Argon2 checks at once when the app has no settings (``Settings.argon2_concurrency``)."""

DEFAULT_SIGN_INS_PER_ADDRESS = 30
"""Successful sign-ins per address within :data:`FAILURE_WINDOW_S` when the app has no settings
(``Settings.sign_ins_per_address``)."""


@functools.cache
def _dummy_hash() -> str:
    """A hash checked for unknown names, so that they take as long to refuse as a wrong password."""
    return _hasher.hash(secrets.token_urlsafe(16))


class AccountError(Exception):
    """A refused accounts request: HTTP ``status``, a stable ``code``, a reason and its ``params``."""

    def __init__(self, status: int, code: str, detail: str, **params: Any) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.params = status, code, detail, params


async def account_error(_request: Request, error: Exception) -> JSONResponse:
    """The app's handler for :class:`AccountError`: ``{"detail", "code", "params"}`` with its status."""
    assert isinstance(error, AccountError)
    headers = {"Retry-After": str(error.params["retry_after_s"])} if "retry_after_s" in error.params else None
    return JSONResponse({"detail": error.detail, "code": error.code, "params": error.params},
                        status_code=error.status, headers=headers)


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


# -- the sign-in limiter --------------------------------------------------------------------------------------

MAX_FAILURE_KEYS = 100_000
"""Most keys a :class:`Limiter` remembers failures of (memory is bounded whatever names and addresses are tried)."""


class Limiter:
    """Failed sign-ins per key (a name key, an address) in a sliding window of ``window_s`` seconds, read from
    ``clock`` (seconds, monotonic; tests pass their own)."""

    def __init__(self, window_s: float = FAILURE_WINDOW_S, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s = window_s
        self.clock = clock
        self._failures: dict[str, deque[float]] = {}

    def _recent(self, key: str, now: float) -> deque[float]:
        times = self._failures.setdefault(key, deque())
        while times and times[0] <= now - self.window_s:
            times.popleft()
        return times

    def wait_s(self, key: str, limit: int) -> int:
        """Seconds until ``key`` may try again (0: now)."""
        now = self.clock()
        times = self._recent(key, now)
        if len(times) < limit:
            if not times:
                self._failures.pop(key, None)
            return 0
        return max(1, int(times[-limit] + self.window_s - now + 0.999))

    def fail(self, key: str) -> None:
        """Count one failure for ``key``."""
        now = self.clock()
        self._recent(key, now).append(now)
        if len(self._failures) > MAX_FAILURE_KEYS:  # bounded memory
            self._forget_some(now)

    def _forget_some(self, now: float) -> None:
        """Forget the keys whose failures have all left the window; if that is not half of them (a flood of new
        names or addresses within one window), forget the keys seen first until half are left."""
        self._failures = {k: v for k, v in self._failures.items() if v and v[-1] > now - self.window_s}
        extra = len(self._failures) - MAX_FAILURE_KEYS // 2
        if extra > 0:
            for old in list(itertools.islice(self._failures, extra)):
                del self._failures[old]

    def clear(self, key: str) -> None:
        """Forget ``key``'s failures (after a successful sign-in)."""
        self._failures.pop(key, None)

    # The routes call these; with several processes a ``counters.SharedLimiter`` answers them from Redis instead.
    async def check(self, key: str, limit: int) -> int:
        """:meth:`wait_s`, awaited."""
        return self.wait_s(key, limit)

    async def note_failure(self, key: str) -> None:
        """:meth:`fail`, awaited."""
        self.fail(key)

    async def forget(self, key: str) -> None:
        """:meth:`clear`, awaited."""
        self.clear(key)


# -- request bodies -----------------------------------------------------------------------------------------

class Credentials(BaseModel):
    """``POST /api/accounts`` and ``POST /api/session`` bodies."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=100)
    password: str = Field(min_length=1, max_length=PASSWORD_MAX)


# -- plumbing -------------------------------------------------------------------------------------------------

def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def _limiter(request: Request) -> Limiter | SharedLimiter:
    limiter: Limiter | SharedLimiter | None = getattr(request.app.state, "sign_in_limiter", None)
    if limiter is None:
        limiter = request.app.state.sign_in_limiter = Limiter()
    return limiter


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


def _set_cookie(request: Request, response: Response, session_id: str) -> None:
    response.set_cookie(
        COOKIE, session_id, max_age=SESSION_DAYS * 86400, path="/", httponly=True, samesite="lax",
        secure=request.url.scheme == "https",
    )


def _clear_cookie(request: Request, response: Response) -> None:
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
    async with _store(request).engine.connect() as conn:
        row = (await conn.execute(query)).first()
    return None if row is None else Account(id=row.id, name=row.name)


async def require_account(request: Request) -> Account:
    """:func:`current_account`, or :class:`AccountError` 401 ``account.not_signed_in``."""
    account = await current_account(request)
    if account is None:
        raise AccountError(401, "account.not_signed_in", "you are not signed in")
    return account


async def _new_session(store: Store, account_id: int) -> str:
    session_id = secrets.token_urlsafe(32)
    created = datetime.now(UTC)
    values = {"id_hash": hash_token(session_id), "account_id": account_id,
              "created": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
              "expires": (created + timedelta(days=SESSION_DAYS)).strftime("%Y-%m-%dT%H:%M:%SZ")}

    def fn(conn: Connection) -> None:
        conn.execute(insert(ps.sessions).values(**values))

    await store.write(fn)
    return session_id


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
    await limiter.note_failure(address)
    password_hash = await password_checks(request).hash(body.password)
    made: list[int] = []

    def fn(conn: Connection) -> None:
        a = ps.accounts
        if conn.execute(select(a.c.id).where(or_(a.c.name_key == key, a.c.name_skeleton == skeleton))).first():
            return
        result = conn.execute(insert(a).values(kind="person", name=name, name_key=key, name_skeleton=skeleton,
                                               password_hash=password_hash, created=now_iso(), deleted=0))
        made.append(int(result.inserted_primary_key[0]))  # type: ignore[index]

    store = _store(request)
    try:
        await store.write(fn)
    except IntegrityError:  # the same name or a look-alike, taken meanwhile through another server process
        made.clear()
    if not made:
        raise AccountError(409, "account.name_taken", f"the name {name!r} is taken", name=name)
    _set_cookie(request, response, await _new_session(store, made[0]))
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
    store = _store(request)
    async with store.engine.connect() as conn:
        row = (await conn.execute(select(a.c.id, a.c.name, a.c.password_hash)
                                  .where(a.c.name_key == key, a.c.kind == "person", a.c.deleted == 0))).first()
    ok = await password_checks(request).verify(row.password_hash if row else None, body.password)
    if row is None or not ok:
        await limiter.note_failure(pair)
        await limiter.note_failure("addr:" + address)
        raise AccountError(401, "account.bad_credentials", "wrong name or password")
    await limiter.note_failure("signin:" + address)  # counts a success
    await limiter.forget(pair)
    _set_cookie(request, response, await _new_session(store, row.id))
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

        await _store(request).write(fn)
    response = Response(status_code=204)
    _clear_cookie(request, response)
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
    store = _store(request)
    held = await seats_of_account(store, account.id)

    def fn(conn: Connection) -> None:
        conn.execute(delete(ps.seat_accounts).where(ps.seat_accounts.c.account_id == account.id))
        conn.execute(delete(ps.sessions).where(ps.sessions.c.account_id == account.id))
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
    _clear_cookie(request, response)
    return response


# -- seats tied to accounts -----------------------------------------------------------------------------------


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


def signed_in(request: Request) -> bool:
    """Whether the request may act for a session's account at all: it carries the cookie and is not from another
    site (:func:`bind_seat` honours no other)."""
    return COOKIE in request.cookies and same_origin(request)


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


@router.get("/me/seats", responses=error_responses(401))
async def my_seats(request: Request) -> list[dict[str, Any]]:
    """The seats the signed-in player holds at open tables and tables in play, each with its token (the same in
    every browser): ``[{"table": TABLE, "seat", "token"}]``. 401 ``account.not_signed_in``. Read from the
    database, so that every server process gives the same list (a table owned by another process as its owner
    last published it)."""
    account = await require_account(request)
    store = _store(request)
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
    return out


async def seat_key(store: Store) -> bytes:
    """The server's key for seat tokens of signed-in players (``keys.server_key``'s ``seat``)."""
    return await server_key(store, "seat")


def seat_token(key: bytes, table_id: str, seat: int, account_id: int) -> str:
    digest = hmac.new(key, f"{table_id}:{seat}:{account_id}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")
