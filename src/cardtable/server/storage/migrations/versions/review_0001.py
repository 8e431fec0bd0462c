"""The review of every hand (issue 30): ``reviews``, one row per finished table and reviewed seat, made
``pending`` by the process that computes it (inserted if absent: only one process computes) and ``ready`` with its
JSON ``body`` once computed (``server/table/reviews.py``).

Revision ID: review_0001
Revises: stats_0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "review_0001"
down_revision = "stats_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reviews",
        sa.Column("table_id", sa.String(32), sa.ForeignKey("tables.id"), primary_key=True),
        sa.Column("seat", sa.Integer, primary_key=True),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("claimed", sa.String(32), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="1"),
        sa.Column("finished", sa.String(32), nullable=True),
        sa.Column("body", sa.JSON, nullable=True),
    )


def downgrade() -> None:
    op.drop_table("reviews")
