"""One match per account in ``player_stats`` (issue 27, item 5): ``matches`` and ``wins`` counted again from
``match_seats``, one per table, so that a bot level (or an account) that held several seats of one match counts it
once, and won it when any of its seats won. The points, hands, Nerts calls, cards left and anemones were already
summed per seat and stay as they are.

Revision ID: stats_0001
Revises: ready_0001
"""

from __future__ import annotations

from alembic import op

revision = "stats_0001"
down_revision = "ready_0001"
branch_labels = None
depends_on = None

RECOUNT = """
UPDATE player_stats SET
    matches = (SELECT COUNT(DISTINCT m.table_id) FROM match_seats m
               WHERE m.account_id = player_stats.account_id AND m.game = player_stats.game),
    wins = (SELECT COUNT(DISTINCT m.table_id) FROM match_seats m
            WHERE m.account_id = player_stats.account_id AND m.game = player_stats.game AND m.won = 1)
WHERE EXISTS (SELECT 1 FROM match_seats m
              WHERE m.account_id = player_stats.account_id AND m.game = player_stats.game)
"""
"""Both databases' SQL: a correlated count per row of ``player_stats`` (rows with no match stored are left)."""


def upgrade() -> None:
    op.execute(RECOUNT)


def downgrade() -> None:
    """Nothing to undo: the counts per seat were a fault, and the counts per match are right under either schema."""
