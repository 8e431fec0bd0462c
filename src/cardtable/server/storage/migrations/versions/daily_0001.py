"""The daily deal (issue 30): ``daily_results``, one attempt per account, game and day (UTC), with the table it
was played at and, once its match ended, the score of the player's seat (``server/lobby/daily.py``); and
``tables.daily``, the day (ISO date) of a daily deal's table, which stays private while that day lasts
(``server/lobby/daily_private.py``), ``NULL`` for every other table.

Revision ID: daily_0001
Revises: review_0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "daily_0001"
down_revision = "review_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "daily_results",
        sa.Column("game", sa.String(32), primary_key=True),
        sa.Column("day", sa.String(10), primary_key=True),
        sa.Column("account_id", sa.Integer, sa.ForeignKey("accounts.id"), primary_key=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("table_id", sa.String(32), nullable=True, unique=True),
        sa.Column("started", sa.String(32), nullable=False),
        sa.Column("finished", sa.String(32), nullable=True),
        sa.Column("score", sa.Integer, nullable=True),
    )
    op.create_index("ix_daily_results_account_game_day", "daily_results", ["account_id", "game", "day"])
    with op.batch_alter_table("tables") as batch:
        batch.add_column(sa.Column("daily", sa.String(10), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tables") as batch:
        batch.drop_column("daily")
    op.drop_index("ix_daily_results_account_game_day", table_name="daily_results")
    op.drop_table("daily_results")
