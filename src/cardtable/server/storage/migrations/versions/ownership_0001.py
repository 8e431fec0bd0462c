"""A creator's seed (issue 25, item 4): ``tables.seed_chosen``, 1 when the creator chose the table's seed. Such a
table's deals follow from the seed alone (the creator may know them), so it is never rated; the server's own seeds
are mixed with a server key before they deal.

Revision ID: ownership_0001
Revises: names_0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "ownership_0001"
down_revision = "names_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tables") as batch:
        batch.add_column(sa.Column("seed_chosen", sa.Integer, nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("tables") as batch:
        batch.drop_column("seed_chosen")
