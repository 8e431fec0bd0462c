"""Turn-based tables (issue 29): ``tables.pace`` (``real-time`` or ``turn-based``) and ``tables.turn_clock`` (the
clock a turn-based table was made with, ``{"start_s", "per_move_s"}``); ``turn_banks``, each seat's time bank of a
turn-based table and, for the seat whose turn it is, its deadline (Unix milliseconds; the deadline sweep finds the
due ones through ``ix_turn_banks_deadline``) and its timeouts this match (``server/table/turn_clock.py``);
``actions.at``, when a turn-based table's action was made (ISO 8601 UTC, ``NULL`` elsewhere); and the counts of
matches a player left and lost to timeouts, ``player_stats.left`` and ``player_stats.timed_out``.

Revision ID: turn_0001
Revises: push_0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "turn_0001"
down_revision = "push_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tables") as batch:
        batch.add_column(sa.Column("pace", sa.String(16), nullable=False, server_default="real-time"))
        batch.add_column(sa.Column("turn_clock", sa.JSON, nullable=True))
    with op.batch_alter_table("actions") as batch:
        batch.add_column(sa.Column("at", sa.String(32), nullable=True))
    with op.batch_alter_table("player_stats") as batch:
        batch.add_column(sa.Column("left", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("timed_out", sa.Integer, nullable=False, server_default="0"))
    op.create_table(
        "turn_banks",
        sa.Column("table_id", sa.String(32), sa.ForeignKey("tables.id"), primary_key=True),
        sa.Column("seat", sa.Integer, primary_key=True),
        sa.Column("bank_ms", sa.BigInteger, nullable=False),
        sa.Column("deadline_ms", sa.BigInteger, nullable=True),
        sa.Column("timeouts", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_index("ix_turn_banks_deadline", "turn_banks", ["deadline_ms"])


def downgrade() -> None:
    op.drop_index("ix_turn_banks_deadline", table_name="turn_banks")
    op.drop_table("turn_banks")
    with op.batch_alter_table("player_stats") as batch:
        batch.drop_column("timed_out")
        batch.drop_column("left")
    with op.batch_alter_table("actions") as batch:
        batch.drop_column("at")
    with op.batch_alter_table("tables") as batch:
        batch.drop_column("turn_clock")
        batch.drop_column("pace")
