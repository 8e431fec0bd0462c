"""The database schema: tables, seats (token hashes), hands (deals with the cards) and actions.

``tables.epoch`` is the epoch of the table's current owner when several processes serve (``server/cluster/lease.py``):
an owner's writes are refused once a newer owner has raised it; ``actions.epoch`` records which owner stored each
action (``NULL`` for a single process). ``tables.play_now`` is 1 for a table made by Play now (its bot seats a
person may take until the start): Play now looks for its next table through ``ix_tables_play_now``.
``tables.seed_chosen`` is 1 when the creator chose the seed (its deals follow from it alone; never rated).
``tables.ready_seconds`` is the countdown between hands the creator set (``NULL``: the server's default).
``tables.daily`` is the day (ISO date, UTC) of a daily deal's table (``server/lobby/daily.py``), private while that
day lasts; ``NULL`` for every other table.
``tables.pace`` is ``turn-based`` for a table whose seats move when they can, each against its time bank, and
``tables.turn_clock`` its clock (``{"start_s", "per_move_s"}``); ``turn_banks`` holds each seat's bank and the
deadline of the seat whose turn it is (Unix milliseconds), ``actions.at`` when a turn-based table's action was made
(``server/table/turn_clock.py``; issue 29).
``reviews`` holds the review of a finished table's seat (issue 30), ``pending`` while one process computes it.

Kept in step with ``migrations/versions`` (Alembic), which is what creates it.
"""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, Column, Float, ForeignKey, Index, Integer, MetaData, String, Table

metadata = MetaData()

tables = Table(
    "tables",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("game", String(32), nullable=False),
    Column("options", JSON, nullable=False),
    Column("status", String(16), nullable=False, index=True),
    Column("seed", BigInteger, nullable=False),
    Column("grace_seconds", Float, nullable=False),
    Column("created", String(32), nullable=False),
    Column("finished", String(32), nullable=True),
    Column("hands", Integer, nullable=True),
    Column("totals", JSON, nullable=True),
    Column("winners", JSON, nullable=True),
    Column("epoch", BigInteger, nullable=False, default=0, server_default="0"),
    Column("play_now", Integer, nullable=False, default=0, server_default="0"),
    Column("seed_chosen", Integer, nullable=False, default=0, server_default="0"),
    Column("ready_seconds", Float, nullable=True),
    Column("daily", String(10), nullable=True),
    Column("pace", String(16), nullable=False, default="real-time", server_default="real-time"),
    Column("turn_clock", JSON, nullable=True),
    Index("ix_tables_status_created", "status", "created", "id"),
    Index("ix_tables_status_finished", "status", "finished", "id"),
    Index("ix_tables_play_now", "status", "game", "play_now", "created", "id"),
)

seats = Table(
    "seats",
    metadata,
    Column("table_id", String(32), ForeignKey("tables.id"), primary_key=True),
    Column("seat", Integer, primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("name", String(64), nullable=True),
    Column("bot", String(32), nullable=True),
    Column("token_hash", String(64), nullable=True),
    Column("left", Integer, nullable=False, default=0),
)

hands = Table(
    "hands",
    metadata,
    Column("table_id", String(32), ForeignKey("tables.id"), primary_key=True),
    Column("hand", Integer, primary_key=True),
    Column("deal", JSON, nullable=False),
)

actions = Table(
    "actions",
    metadata,
    Column("table_id", String(32), ForeignKey("tables.id"), primary_key=True),
    Column("hand", Integer, primary_key=True),
    Column("idx", Integer, primary_key=True),
    Column("seat", Integer, nullable=True),
    Column("ms", BigInteger, nullable=False),
    Column("action", JSON, nullable=False),
    Column("epoch", BigInteger, nullable=True),
    Column("at", String(32), nullable=True),  # turn-based tables: when it was made (ISO 8601 UTC)
)

turn_banks = Table(  # turn-based tables' time banks (turn_0001; server/table/turn_clock.py)
    "turn_banks",
    metadata,
    Column("table_id", String(32), ForeignKey("tables.id"), primary_key=True),
    Column("seat", Integer, primary_key=True),
    Column("bank_ms", BigInteger, nullable=False),  # what the seat's bank held when its last turn began
    Column("deadline_ms", BigInteger, nullable=True),  # Unix ms when its bank runs out: only the seat to move
    Column("timeouts", Integer, nullable=False, default=0, server_default="0"),  # this match
    Index("ix_turn_banks_deadline", "deadline_ms"),
)

reviews = Table(  # the review of a finished table's seat (review_0001; server/table/reviews.py)
    "reviews",
    metadata,
    Column("table_id", String(32), ForeignKey("tables.id"), primary_key=True),
    Column("seat", Integer, primary_key=True),
    Column("status", String(8), nullable=False),  # pending | ready
    Column("claimed", String(32), nullable=False),  # when the process computing it took it (ISO 8601 UTC)
    Column("attempts", Integer, nullable=False, default=1, server_default="1"),  # computations begun
    Column("finished", String(32), nullable=True),  # when it became ready
    Column("body", JSON, nullable=True),  # the review (GET /api/tables/{id}/review), once ready
)
