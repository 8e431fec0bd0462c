"""Lobby reads that cost a page, not every table (issue 25, item 7): ``tables.play_now`` (a table made by Play now)
and the indexes the lobby's keyset pages and Play now's choice of table read through.

- ``ix_tables_status_created`` ``(status, created, id)``: open and playing tables, oldest first, after a cursor;
- ``ix_tables_status_finished`` ``(status, finished, id)``: finished and abandoned tables, newest first, before a
  cursor (one index range per status);
- ``ix_tables_play_now`` ``(status, game, play_now, created, id)``: the oldest waiting Play now tables of a game.

Revision ID: cluster_0002
Revises: cluster_0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "cluster_0002"
down_revision = "cluster_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tables") as batch:
        batch.add_column(sa.Column("play_now", sa.Integer, nullable=False, server_default="0"))
    op.create_index("ix_tables_status_created", "tables", ["status", "created", "id"])
    op.create_index("ix_tables_status_finished", "tables", ["status", "finished", "id"])
    op.create_index("ix_tables_play_now", "tables", ["status", "game", "play_now", "created", "id"])


def downgrade() -> None:
    op.drop_index("ix_tables_play_now", "tables")
    op.drop_index("ix_tables_status_finished", "tables")
    op.drop_index("ix_tables_status_created", "tables")
    with op.batch_alter_table("tables") as batch:
        batch.drop_column("play_now")
