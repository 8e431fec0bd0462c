"""Names unique by how they look (issue 25, item 9): ``accounts.name_skeleton``, the UTS #39 confusable skeleton of
the name (``server/players/names.py``), under the unique index ``ux_accounts_name_skeleton``.

Existing accounts get theirs here, oldest first: when two existing names look alike (``ana`` and ``аna``), the
older account keeps the skeleton and the newer one is left without (``NULL``): it keeps its name and can still
sign in, and nobody else can take a third look-alike, since the older one holds the skeleton. Bots and deleted
accounts have none.

Revision ID: names_0001
Revises: cluster_0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from cardtable.server.players.names import name_skeleton

revision = "names_0001"
down_revision = "cluster_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("accounts") as batch:
        batch.add_column(sa.Column("name_skeleton", sa.String(256), nullable=True))
    accounts = sa.table("accounts", sa.column("id", sa.Integer), sa.column("kind", sa.String),
                        sa.column("name", sa.String), sa.column("deleted", sa.Integer),
                        sa.column("name_skeleton", sa.String))
    conn = op.get_bind()
    rows = conn.execute(sa.select(accounts.c.id, accounts.c.name)
                        .where(accounts.c.kind == "person", accounts.c.deleted == 0, accounts.c.name.is_not(None))
                        .order_by(accounts.c.id)).all()
    held: set[str] = set()
    for row in rows:
        skeleton = name_skeleton(row.name)
        if skeleton in held:
            continue
        held.add(skeleton)
        conn.execute(sa.update(accounts).where(accounts.c.id == row.id).values(name_skeleton=skeleton))
    op.create_index("ux_accounts_name_skeleton", "accounts", ["name_skeleton"], unique=True)


def downgrade() -> None:
    op.drop_index("ux_accounts_name_skeleton", "accounts")
    with op.batch_alter_table("accounts") as batch:
        batch.drop_column("name_skeleton")
