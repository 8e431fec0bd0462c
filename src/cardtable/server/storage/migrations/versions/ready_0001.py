"""A ready step between hands (issue 27): ``tables.ready_seconds``, the seconds the next hand waits for the people
who have not pressed Ready, as the table's creator set it (``NULL``: the server's ``default_ready_s``).

Revision ID: ready_0001
Revises: ownership_0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "ready_0001"
down_revision = "ownership_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tables") as batch:
        batch.add_column(sa.Column("ready_seconds", sa.Float, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tables") as batch:
        batch.drop_column("ready_seconds")
