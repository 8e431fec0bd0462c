"""Web Push (issue 29): ``push_subscriptions``, one row per browser subscribed to an account's "your turn"
notifications (``server/players/push.py``), unique by its push endpoint. The VAPID key pair is a server key
(``server_keys``, name ``vapid``), made the first time it is needed.

Revision ID: push_0001
Revises: daily_0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "push_0001"
down_revision = "daily_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "push_subscriptions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("account_id", sa.Integer, sa.ForeignKey("accounts.id"), nullable=False),
        sa.Column("endpoint", sa.String(1024), nullable=False, unique=True),
        sa.Column("p256dh", sa.String(128), nullable=False),
        sa.Column("auth", sa.String(64), nullable=False),
        sa.Column("lang", sa.String(8), nullable=False),
        sa.Column("created", sa.String(32), nullable=False),
    )
    op.create_index("ix_push_subscriptions_account_id", "push_subscriptions", ["account_id"])


def downgrade() -> None:
    op.drop_index("ix_push_subscriptions_account_id", table_name="push_subscriptions")
    op.drop_table("push_subscriptions")
