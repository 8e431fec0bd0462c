"""Owner epochs for several server processes: ``tables.epoch`` (the fence) and ``actions.epoch`` (who stored it).

Revision ID: cluster_0001
Revises: accounts_0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "cluster_0001"
down_revision = "accounts_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tables") as batch:
        batch.add_column(sa.Column("epoch", sa.BigInteger, nullable=False, server_default="0"))
    with op.batch_alter_table("actions") as batch:
        batch.add_column(sa.Column("epoch", sa.BigInteger, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("actions") as batch:
        batch.drop_column("epoch")
    with op.batch_alter_table("tables") as batch:
        batch.drop_column("epoch")
