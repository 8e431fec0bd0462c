"""The HTTP lobby (``docs/protocol.md``, "HTTP lobby"): games, tables, join, leave, start, records, replays.

Bodies are validated by pydantic; refusals (a ``TableError``, turned into a reply by the app's exception handler)
are ``4xx {"detail": reason, "code": ..., "params": {...}}`` (404 unknown table, 422 bad game, options, seats or
body, 409 full, taken or not startable, 403 bad token, 413 body too large, 429 too many tables or lobby reads from
one address). Each route's OpenAPI entry lists the refusals it can answer.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from cardtable import bots
from cardtable.games import game_names, get_game
from cardtable.server.core.addresses import client_address
from cardtable.server.core.errors import TableError
from cardtable.server.core.errors import error_responses as _errors
from cardtable.server.core.limits import TokenBuckets
from cardtable.server.lobby.daily_private import check_readable
from cardtable.server.lobby.manager import Manager
from cardtable.server.lobby.play_now import PLAY_NOW_BOTS, visitor_key
from cardtable.server.lobby.seating import bind_seat
from cardtable.server.lobby.turn_based import Joiner, check_person_seat, turn_clock_for
from cardtable.server.players.account_seats import mark_finished_accounts, seats_of_account
from cardtable.server.players.leaderboards import play_now_bot
from cardtable.server.players.names import NameRefused, check_name, has_control
from cardtable.server.players.sessions import current_account, signed_in
from cardtable.server.table.handover import MAX_READY_SECONDS
from cardtable.server.table.owner import Table

if TYPE_CHECKING:
    from cardtable.server.cluster.calls import RemoteTable


def check_table_id(request: Request) -> None:
    """Every route's dependency: ``TableError`` 404 ``table.not_found`` for a ``table_id`` in the path with a
    control character (NUL, C0, C1), which no table's id holds, before it reaches the database (PostgreSQL
    answers a NUL in text with an error)."""
    table_id = request.path_params.get("table_id")
    if isinstance(table_id, str) and has_control(table_id):
        raise TableError(404, "table.not_found", "no such table", {"table": table_id.encode("unicode_escape").decode()})


router = APIRouter(prefix="/api", dependencies=[Depends(check_table_id)])

class SeatSpec(BaseModel):
    """A seat of a new table: ``open`` for a person, or ``bot`` with its spec (``"greedy:medium"``)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["open", "bot"]
    bot: str | None = Field(default=None, max_length=40)


class TurnClock(BaseModel):
    """A turn-based table's clock (``POST /api/tables``' ``turn_clock``), in seconds: each seat's bank starts at
    ``start_s`` and gains ``per_move_s`` after each of its moves, never above ``start_s``."""

    model_config = ConfigDict(extra="forbid")
    start_s: int
    per_move_s: int


class CreateTable(BaseModel):
    """``POST /api/tables`` body. ``grace_seconds``: how long a disconnected person keeps their seat before a bot
    plays it (default: the server's, 60 s). ``autostart`` (default true): a table whose other seats are all bots
    starts by itself, without a Start click. ``ready_seconds``: how long the next hand waits for the people who
    have not pressed Ready (default: the server's, 15 s; ``docs/protocol.md``, "Between hands"). ``pace``:
    ``real-time`` (default) or ``turn-based`` (Enemy Anemone only), with its ``turn_clock`` (default 3 days, and 1
    day per move; ``lobby/turn_based.py``)."""

    model_config = ConfigDict(extra="forbid")
    game: Literal["nerts", "anemone"]
    options: dict[str, Any] = Field(default_factory=dict)
    seats: list[SeatSpec] | None = Field(default=None, max_length=16)
    name: str = Field(default="player", min_length=1, max_length=40)
    seed: int | None = Field(default=None, ge=0, lt=2**62)
    grace_seconds: float | None = Field(default=None, ge=0, le=86400)
    autostart: bool = True
    ready_seconds: float | None = Field(default=None, ge=0, le=MAX_READY_SECONDS)
    pace: Literal["real-time", "turn-based"] = "real-time"
    turn_clock: TurnClock | None = None


class PlayNow(BaseModel):
    """``POST /api/play`` body: the game and the player's name."""

    model_config = ConfigDict(extra="forbid")
    game: str = Field(max_length=40)
    name: str = Field(default="player", min_length=1, max_length=40)


class JoinTable(BaseModel):
    """``POST /api/tables/{id}/join`` body."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(default="player", min_length=1, max_length=40)
    seat: int | None = None


class TokenBody(BaseModel):
    """``leave``, ``start`` and ``again`` bodies: the seat's token."""

    model_config = ConfigDict(extra="forbid")
    token: str = Field(max_length=200)


def guest_name(raw: str) -> str:
    """A guest's seat name as stored, by the one rule for names (``server/players/names.py``: the rules of an account's
    name, and the client's word for a guest allowed); ``TableError`` 422 ``account.name_invalid``,
    ``name.invisible`` or ``name.reserved`` with its params."""
    try:
        return check_name(raw, guest=True)
    except NameRefused as error:
        raise TableError(422, error.code, error.detail, error.params) from None


def _manager(request: Request) -> Manager:
    manager: Manager = request.app.state.manager
    return manager


async def count_read(request: Request) -> None:
    """Count one lobby read from the client's address (``app.state.lobby_reads``); ``TableError`` 429
    ``lobby.read_limit`` beyond ``lobby_reads_per_second`` (burst ``lobby_read_burst``), its ``retry_after_s`` also
    sent as ``Retry-After``. A page of the lobby costs the server far more than the client (``docs/deploy.md``)."""
    buckets: TokenBuckets = request.app.state.lobby_reads
    wait = buckets.take(client_address(request))
    if wait:
        rate = f"{buckets.rate:g}"
        raise TableError(429, "lobby.read_limit", f"too many lobby requests from your address: at most {rate} a "
                                                  f"second; try again in {wait} s", {"rate": rate, "retry_after_s": wait})


READ = [Depends(count_read)]
"""The dependencies of the lobby's costly reads: the table lists, a record and a replay (one table is as cheap as
``/api/games``)."""


def _seated(table_id: str, table: dict[str, Any], seat: int, token: str) -> dict[str, Any]:
    return {"table": table, "seat": seat, "token": token, "invite": f"/?table={table_id}"}


BOT_LEVELS = {
    "random": "random", "heuristic": "simple", "greedy": "instant",
    "easy": "beginner", "medium": "intermediate", "hard": "strong",
}
"""A bot's level as a stable word the client translates: by its spec's level (``greedy:easy`` is ``beginner``)
or, for a bot without levels, by its name."""


def bot_level(spec: str) -> str:
    """The level word of bot ``spec``: ``random``, ``simple``, ``beginner``, ``intermediate``, ``strong`` or
    ``instant`` (full skill with no human pace, for simulations)."""
    name, _, level = spec.partition(":")
    return BOT_LEVELS.get(level or name, "intermediate")


@router.get("/games", responses=_errors())
async def list_games() -> list[dict[str, Any]]:
    """Every game with its option specs, its bots (``spec``, ``description``, ``level``) and the bot Play now
    seats (``play_now_bot``)."""
    out = []
    for name in game_names():
        info = get_game(name)
        out.append({
            "game": info.name, "title": info.title, "options": [spec.to_dict() for spec in info.option_specs],
            "bots": [{"spec": b.spec, "description": b.description, "level": bot_level(b.spec)}
                     for b in bots.bot_infos(name)],
            "play_now_bot": PLAY_NOW_BOTS.get(name),
        })
    return out


@router.post("/play", responses=_errors(409, 413, 422, 429))
async def play_now(body: PlayNow, request: Request) -> dict[str, Any]:
    """Play now: a seat at the oldest waiting Play now table of the game with a free seat, else a new 4-seat table against
    three medium bots that starts by itself: after a short wait (``TABLE.starts_at``) while another client (another
    address or browser, ``X-Visitor``) asked for the lobby's tables or pressed Play now of the game in the last ``LOBBY_PRESENCE_S`` (10 s),
    else as soon as the player connects (``Manager.in_lobby``, ``docs/protocol.md``). A signed-in player rated in
    the game gets bots of the level nearest their rating instead (``docs/protocol.md``, "Accounts and players").
    Counted like a new table against the address's ``creates_per_minute`` (``429`` beyond); ``409 table.seat_limit``
    when the address already holds ``max_seats_per_address`` seats. The name is a guest's (:func:`guest_name`)."""
    name = guest_name(body.name)
    manager = _manager(request)
    address = client_address(request)
    await manager.check_create(address)
    manager.check_seats(address)
    bot = await play_now_bot(request, body.game, PLAY_NOW_BOTS.get(body.game, ""))
    account_id = await _account_id(request)
    avoid = () if account_id is None else set(await seats_of_account(request.app.state.store, account_id))
    countdown = await manager.in_lobby(_visitor(request), body.game)  # another person could still join: wait
    table, seat, token = await manager.play_now(body.game, name, bot or None, avoid, countdown)
    _mark_creator(table, address)
    table, token = await _bind(request, table, seat, token)
    manager.hold_seat(address, table, seat, token)
    return _seated(table.id, table.to_dict(), seat, token)


@router.post("/tables", status_code=201, responses=_errors(401, 409, 413, 422, 429))
async def create_table(body: CreateTable, request: Request) -> dict[str, Any]:
    """Open a new table; the creator takes the first open seat and gets its token. Each client address may open
    ``creates_per_minute`` tables a minute (burst ``create_burst``), beyond that ``429``. The creator's name is a
    guest's (:func:`guest_name`). A turn-based table (``pace``): ``422 pace.unsupported``, ``turn_clock.too_short``
    or ``turn_clock.invalid`` for a pace or clock it may not have; its creator must be signed in (``401
    account.not_signed_in``) and hold fewer than ``turn_based_tables_max`` turn-based seats in progress (``409
    turn_based.too_many``); nothing is made then."""
    name = guest_name(body.name)
    seats = None if body.seats is None else [s.model_dump() for s in body.seats]
    manager = _manager(request)
    clock = None if body.turn_clock is None else body.turn_clock.model_dump()
    turn_based = turn_clock_for(body.game, body.pace, clock, manager.settings) is not None
    address = client_address(request)
    await manager.check_create(address)
    if turn_based:
        await check_person_seat(manager.store, manager.settings, await _account_id(request))
    made, seat, token = await manager.create(
        body.game, body.options, seats, name, body.seed, body.grace_seconds, body.autostart, body.ready_seconds,
        pace=body.pace, turn_clock=clock,
    )
    _mark_creator(made, address)
    table, token = await bind_seat(request, made, seat, token)
    manager.hold_seat(address, table, seat, token)
    return _seated(table.id, table.to_dict(), seat, token)


async def _account_id(request: Request) -> int | None:
    """The id of the account a seat taken by ``request`` would be tied to (``lobby/seating.bind_seat``), or ``None``."""
    if not signed_in(request):
        return None
    account = await current_account(request)
    return None if account is None else account.id


async def _bind(request: Request, table: Table | RemoteTable, seat: int,
                token: str) -> tuple[Table | RemoteTable, str]:
    """``lobby/seating.bind_seat``; when the account turns out to hold another seat at the table (two requests at
    once), the seat just taken is given up again (``Manager.leave``) and the ``409 seat.account_held`` raised."""
    try:
        return await bind_seat(request, table, seat, token)
    except TableError as error:
        if error.code == "seat.account_held":
            with contextlib.suppress(TableError):
                await _manager(request).leave(table.id, token)
        raise


def _visitor(request: Request) -> str:
    """Who this lobby request is from (``play_now.visitor_key``): the address, with the browser's ``X-Visitor``."""
    return visitor_key(client_address(request), request.headers.get("x-visitor"))


def _mark_creator(table: object, address: str) -> None:
    """Note the address a table played here was made from (its bots' share of the bot pool, ``server/table/bots.py``)."""
    if isinstance(table, Table) and table.creator is None:
        table.creator = address


Limit = Annotated[int | None, Query(ge=1, le=1000, description="Most tables in the page (default: the server's "
                                      "page_size, 50; at most its max_page_size, 200).")]
Cursor = Annotated[str | None, Query(max_length=100, description="The X-Next-Cursor header of the previous page.")]


@router.get("/tables", responses=_errors(422, 429), dependencies=READ)
async def list_tables(
    request: Request, response: Response,
    status: Annotated[Literal["open", "playing", "finished"], Query()] = "open",
    limit: Limit = None, cursor: Cursor = None,
) -> list[dict[str, Any]]:
    """Tables with ``status`` (default ``open``), one page: open and playing ones oldest first, finished (and
    abandoned) ones newest first. When more follow, the ``X-Next-Cursor`` header holds the next page's ``cursor``.
    A lobby read: ``429 lobby.read_limit`` with ``Retry-After`` beyond the address's ``lobby_reads_per_second``.
    The reader counts as in the lobby (``Manager.in_lobby``: a new Play now table waits for them)."""
    manager = _manager(request)
    await manager.in_lobby(_visitor(request))
    tables, after = await manager.list_tables(status, limit, cursor)
    if after is not None:
        response.headers["X-Next-Cursor"] = after
    return await mark_finished_accounts(request.app.state.store, tables)


@router.get("/tables/{table_id}", responses=_errors(404))
async def table_info(table_id: str, request: Request) -> dict[str, Any]:
    """One table."""
    return (await mark_finished_accounts(request.app.state.store, [await _manager(request).table_dict(table_id)]))[0]


@router.post("/tables/{table_id}/join", responses=_errors(401, 404, 409, 413, 422, 429))
async def join_table(table_id: str, body: JoinTable, request: Request) -> dict[str, Any]:
    """Take a seat (the given one or the first open one). Each client address may join ``joins_per_minute`` times a
    minute (burst ``join_burst``), beyond that ``429 table.join_limit``, and hold at most ``max_seats_per_address``
    seats at tables open or in play, beyond that ``409 table.seat_limit``. A signed-in player who holds a seat at
    the table already: ``409 seat.account_held`` (one account, one seat). At a turn-based table only a signed-in
    player may join (``401 account.not_signed_in``), with fewer than ``turn_based_tables_max`` turn-based seats in
    progress (``409 turn_based.too_many``). The name is a guest's (:func:`guest_name`)."""
    name = guest_name(body.name)
    manager = _manager(request)
    address = client_address(request)
    await manager.check_join(address)
    account_id = await _account_id(request)
    if account_id is not None:
        held = await seats_of_account(request.app.state.store, account_id, [table_id])
        if table_id in held:
            raise TableError(409, "seat.account_held", f"you already hold seat {held[table_id]} at this table",
                             {"seat": held[table_id]})
    table, seat, token = await manager.join(table_id, name, body.seat, Joiner(account_id))
    table, token = await _bind(request, table, seat, token)
    manager.hold_seat(address, table, seat, token)
    return _seated(table.id, table.to_dict(), seat, token)


@router.post("/tables/{table_id}/again", responses=_errors(401, 403, 404, 409, 413, 422, 429))
async def again_table(table_id: str, body: TokenBody, request: Request) -> dict[str, Any]:
    """Play again at the finished table ``table_id`` with the token of a seat held there: the first press opens
    the next table (same options, the bots in the same seats, the presser at their own seat number) and invites
    the old table's connections (an ``again`` message); a later press takes the presser's seat at that same table
    (``Manager.again``). Answered as ``join``; counted as a join per address (``429``, ``409 table.seat_limit``);
    a signed-in seat is tied to the account as at ``join``. ``409 again.not_over`` before the end, ``409
    again.followed`` for a second press from the same seat, ``403 token.bad`` for a token that held no seat. After a
    turn-based match, as at ``join``: ``401 account.not_signed_in``, ``409 turn_based.too_many``."""
    manager = _manager(request)
    address = client_address(request)
    await manager.check_join(address)
    if await manager.is_turn_based(table_id):
        await check_person_seat(manager.store, manager.settings, await _account_id(request))
    table, seat, token = await manager.again(table_id, body.token)
    _mark_creator(table, address)
    table, token = await _bind(request, table, seat, token)
    manager.hold_seat(address, table, seat, token)
    return _seated(table.id, table.to_dict(), seat, token)


@router.post("/tables/{table_id}/leave", responses=_errors(403, 404, 413, 422))
async def leave_table(table_id: str, body: TokenBody, request: Request) -> dict[str, Any]:
    """Leave the token's seat."""
    return (await _manager(request).leave(table_id, body.token)).to_dict()


@router.post("/tables/{table_id}/start", responses=_errors(403, 404, 409, 413, 422))
async def start_table(table_id: str, body: TokenBody, request: Request) -> dict[str, Any]:
    """Start the game once every seat is taken."""
    return (await _manager(request).start(table_id, body.token)).to_dict()


@router.get("/tables/{table_id}/record", responses=_errors(403, 404, 409, 429), dependencies=READ)
async def table_record(table_id: str, request: Request) -> dict[str, Any]:
    """The ``cardtable/1`` record of a finished table (a lobby read, limited per address as ``/api/tables``). A
    daily deal's table while its day lasts: ``403 daily.private`` (``lobby/daily_private.check_readable``)."""
    await check_readable(request, _manager(request).store, table_id)
    return (await _manager(request).record(table_id)).to_dict()


@router.get("/tables/{table_id}/replay", responses=_errors(403, 404, 409, 429), dependencies=READ)
async def table_replay(table_id: str, request: Request) -> dict[str, Any]:
    """A finished table's record and its steps, each with the public view (a lobby read, limited per address as
    ``/api/tables``). A daily deal's table while its day lasts: ``403 daily.private`` as for the record."""
    await check_readable(request, _manager(request).store, table_id)
    return await _manager(request).replay(table_id)


@router.get("/finished", responses=_errors(422, 429), dependencies=READ)
async def finished_tables(request: Request, response: Response, limit: Limit = None,
                          cursor: Cursor = None) -> list[dict[str, Any]]:
    """Finished (and abandoned) games, newest first, one page (``X-Next-Cursor`` and the read limit as for
    ``/api/tables``)."""
    tables, after = await _manager(request).list_tables("finished", limit, cursor)
    if after is not None:
        response.headers["X-Next-Cursor"] = after
    return await mark_finished_accounts(request.app.state.store, tables)
