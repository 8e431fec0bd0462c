"""Turn-based tables in the lobby (issue 29; ``docs/protocol.md``, "Turn-based tables"): what a new table's
``pace`` and ``turn_clock`` may be, that a person seat of a turn-based table needs a signed-in player (a seat must
outlive a browser), and how many such seats one account may hold (``turn_based_tables_max``).

The clock itself (banks, deadlines, stand-ins) is the table's (``server/table/turn_clock.py``); this module only
decides what a table may be made with and who may sit at one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import func, select

from cardtable.server.core.errors import TableError
from cardtable.server.core.settings import Settings
from cardtable.server.storage import players_schema as ps
from cardtable.server.storage import schema
from cardtable.server.storage.store import Store

PACES = ("real-time", "turn-based")
"""A table's ``pace``: ``real-time`` (the default), or ``turn-based``: each seat moves when it can, against its time
bank."""

TURN_BASED_GAMES = ("anemone",)
"""Games a table may play turn-based: Enemy Anemone takes turns; Nerts is a race and stays real-time."""

DEFAULT_TURN_CLOCK: dict[str, int] = {"start_s": 259_200, "per_move_s": 86_400}
"""The clock of a turn-based table that asks for none: 3 days in the bank at the start, 1 day more per move."""

MAX_START_S = 30 * 86_400
"""The most seconds a turn-based table's bank may start with (30 days: 2,592,000 s)."""

CLOCK_FIELDS = ("start_s", "per_move_s")
"""The fields of a ``turn_clock``, in seconds."""


def turn_clock_for(
    game: str, pace: str, turn_clock: Mapping[str, int] | None, settings: Settings
) -> dict[str, int] | None:
    """The ``turn_clock`` to store for a new table of ``game`` at ``pace``: ``None`` for a real-time table, the
    given clock (``{"start_s", "per_move_s"}``, whole seconds) or :data:`DEFAULT_TURN_CLOCK` for a turn-based one.

    ``TableError`` 422 ``request.invalid`` for a pace not in :data:`PACES`; 422 ``pace.unsupported`` (``game``) for
    turn-based play of a game not in :data:`TURN_BASED_GAMES`; 422 ``turn_clock.invalid`` (``detail``) for a clock
    given with real-time pace, a clock without exactly its two fields as whole numbers, ``per_move_s`` above
    ``start_s`` or ``start_s`` above :data:`MAX_START_S`; 422 ``turn_clock.too_short`` (``field``, ``min_s``) for a
    field below ``Settings.turn_clock_min_s``.

    >>> turn_clock_for("anemone", "turn-based", None, Settings())
    {'start_s': 259200, 'per_move_s': 86400}
    >>> turn_clock_for("nerts", "real-time", None, Settings()) is None
    True
    """
    if pace not in PACES:
        raise TableError(
            422,
            "request.invalid",
            f"pace: {pace!r} is neither real-time nor turn-based",
            {"field": "pace", "detail": "neither real-time nor turn-based"},
        )
    if pace == "real-time":
        if turn_clock is not None:
            raise TableError(
                422,
                "turn_clock.invalid",
                "turn_clock: only a turn-based table has a turn clock",
                {"detail": "only a turn-based table has a turn clock"},
            )
        return None
    if game not in TURN_BASED_GAMES:
        raise TableError(422, "pace.unsupported", f"pace: {game} is played in real time only", {"game": game})
    if turn_clock is None:
        return dict(DEFAULT_TURN_CLOCK)
    clock = _whole_seconds(turn_clock)
    min_s = settings.turn_clock_min_s
    for name in CLOCK_FIELDS:
        if clock[name] < min_s:
            raise TableError(
                422,
                "turn_clock.too_short",
                f"turn_clock.{name}: at least {min_s:g} seconds",
                {"field": name, "min_s": _number(min_s)},
            )
    if clock["per_move_s"] > clock["start_s"]:
        raise TableError(
            422,
            "turn_clock.invalid",
            "turn_clock: per_move_s may not be more than start_s",
            {"detail": "per_move_s is more than start_s"},
        )
    if clock["start_s"] > MAX_START_S:
        raise TableError(
            422,
            "turn_clock.invalid",
            f"turn_clock.start_s: at most {MAX_START_S} seconds (30 days)",
            {"detail": f"start_s is more than {MAX_START_S} seconds (30 days)"},
        )
    return clock


def _whole_seconds(turn_clock: Mapping[str, int]) -> dict[str, int]:
    """``turn_clock`` as ``{"start_s", "per_move_s"}`` of ints; ``TableError`` 422 ``turn_clock.invalid`` for
    another field, a missing one or one that is not a whole number (a bool is not a number here)."""
    if set(turn_clock) != set(CLOCK_FIELDS):
        raise TableError(
            422,
            "turn_clock.invalid",
            "turn_clock: give exactly start_s and per_move_s",
            {"detail": "give exactly start_s and per_move_s"},
        )
    clock: dict[str, int] = {}
    for name in CLOCK_FIELDS:
        value = turn_clock[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise TableError(
                422,
                "turn_clock.invalid",
                f"turn_clock.{name}: a whole number of seconds",
                {"detail": f"{name} is not a whole number of seconds"},
            )
        clock[name] = value
    return clock


def _number(value: float) -> int | float:
    """``value`` as an int when it is whole (``3600.0`` reads ``3600`` in a refusal's params)."""
    return int(value) if float(value).is_integer() else value


@dataclass(frozen=True, slots=True)
class Joiner:
    """Who asks for a seat through a request (the HTTP edge): ``account_id`` of the signed-in player, ``None`` for
    a guest. A join the server makes itself (Play now, a join forwarded by the process that checked it) has
    none."""

    account_id: int | None


async def turn_based_seats(store: Store, account_id: int) -> int:
    """How many seats ``account_id`` holds (``seat_accounts`` rows) at turn-based tables open or in play."""
    sa, t = ps.seat_accounts, schema.tables
    query = (
        select(func.count())
        .select_from(sa.join(t, t.c.id == sa.c.table_id))
        .where(sa.c.account_id == account_id, t.c.pace == "turn-based", t.c.status.in_(("open", "playing")))
    )
    async with store.engine.connect() as conn:
        return int((await conn.execute(query)).scalar_one())


async def check_person_seat(store: Store, settings: Settings, account_id: int | None) -> None:
    """May a person take a seat at a turn-based table (``account_id``: the signed-in player's, ``None`` for a
    guest)? ``TableError`` 401 ``account.not_signed_in`` for a guest; 409 ``turn_based.too_many`` (``limit``) when
    the account already holds ``Settings.turn_based_tables_max`` seats at turn-based tables open or in play
    (:func:`turn_based_seats`). Two requests at once may each pass before either seat is counted."""
    if account_id is None:
        raise TableError(
            401,
            "account.not_signed_in",
            "a seat at a turn-based table needs a signed-in player: sign in first",
        )
    limit = settings.turn_based_tables_max
    if await turn_based_seats(store, account_id) >= limit:
        raise TableError(
            409,
            "turn_based.too_many",
            f"you already hold {limit} seats at turn-based tables in progress: finish or leave one first",
            {"limit": limit},
        )


async def table_pace(store: Store, table_id: str) -> str | None:
    """The stored ``pace`` of table ``table_id``; ``None`` when there is no such table."""
    t = schema.tables
    async with store.engine.connect() as conn:
        pace = (await conn.execute(select(t.c.pace).where(t.c.id == table_id))).scalar_one_or_none()
    return None if pace is None else str(pace)
