"""The database tables of accounts and ratings: accounts (people and bot levels), sessions, ratings, rating
history, running totals per player and game, the account holding each seat, per-seat match results, Web Push
subscriptions and the server's keys.

Defined on :data:`cardtable.server.storage.schema.metadata`; kept in step with the ``accounts_0001`` Alembic migration,
which is what creates them (and ``names_0001``, which adds ``accounts.name_skeleton``). Times are ISO 8601 UTC strings like ``schema.tables.created``.
"""

from __future__ import annotations

from sqlalchemy import JSON, Column, Float, ForeignKey, Index, Integer, String, Table

from cardtable.server.storage.schema import metadata

accounts = Table(
    "accounts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(8), nullable=False),  # person | bot
    Column("name", String(64), nullable=True),  # NULL once deleted
    Column("name_key", String(128), nullable=True, unique=True),  # NFKC + casefold; NULL for bots and deleted
    # the UTS #39 skeleton of name_key (server/players/names.py): unique, so no two accounts look alike; NULL for bots,
    # deleted accounts and the newer of two look-alikes that existed before the names_0001 migration
    Column("name_skeleton", String(256), nullable=True),
    Index("ux_accounts_name_skeleton", "name_skeleton", unique=True),
    Column("password_hash", String(256), nullable=True),
    Column("created", String(32), nullable=False),
    Column("deleted", Integer, nullable=False, default=0),
)

sessions = Table(
    "sessions",
    metadata,
    Column("id_hash", String(64), primary_key=True),
    Column("account_id", Integer, ForeignKey("accounts.id"), nullable=False, index=True),
    Column("created", String(32), nullable=False),
    Column("expires", String(32), nullable=False),
)

ratings = Table(
    "ratings",
    metadata,
    Column("account_id", Integer, ForeignKey("accounts.id"), primary_key=True),
    Column("game", String(32), primary_key=True),
    Column("mu", Float, nullable=False),
    Column("sigma", Float, nullable=False),
    Column("ordinal", Float, nullable=False),
    Column("matches", Integer, nullable=False),
    Column("wins", Integer, nullable=False),
    Column("updated", String(32), nullable=False),
    Index("ix_ratings_game_ordinal", "game", "ordinal", "account_id"),
)

rating_history = Table(
    "rating_history",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("account_id", Integer, ForeignKey("accounts.id"), nullable=False),
    Column("game", String(32), nullable=False),
    Column("table_id", String(32), nullable=False),
    Column("at", String(32), nullable=False),
    Column("mu", Float, nullable=False),
    Column("sigma", Float, nullable=False),
    Column("ordinal", Float, nullable=False),
    Index("ix_rating_history_account_game", "account_id", "game", "id"),
)

player_stats = Table(
    "player_stats",
    metadata,
    Column("account_id", Integer, ForeignKey("accounts.id"), primary_key=True),
    Column("game", String(32), primary_key=True),
    Column("matches", Integer, nullable=False),
    Column("wins", Integer, nullable=False),
    Column("points", Integer, nullable=False),
    Column("hands", Integer, nullable=False),
    Column("nerts_calls", Integer, nullable=False),
    Column("cards_left", Integer, nullable=False),
    Column("anemones", Integer, nullable=False),
    Column("left", Integer, nullable=False, default=0, server_default="0"),  # matches it was gone from at the end
    Column("timed_out", Integer, nullable=False, default=0, server_default="0"),  # of those, lost to timeouts
)

seat_accounts = Table(
    "seat_accounts",
    metadata,
    Column("table_id", String(32), primary_key=True),
    Column("seat", Integer, primary_key=True),
    Column("account_id", Integer, ForeignKey("accounts.id"), nullable=False, index=True),
)

match_seats = Table(
    "match_seats",
    metadata,
    Column("table_id", String(32), primary_key=True),
    Column("seat", Integer, primary_key=True),
    Column("game", String(32), nullable=False),
    Column("account_id", Integer, ForeignKey("accounts.id"), nullable=True),  # NULL: a guest
    Column("name", String(64), nullable=True),
    Column("finished", String(32), nullable=False),
    Column("players", Integer, nullable=False),
    Column("rank", Integer, nullable=False),
    Column("won", Integer, nullable=False),
    Column("points", Integer, nullable=False),
    Column("hands", Integer, nullable=False),
    Column("stats", JSON, nullable=False),  # nerts_calls, cards_left (total over hands), anemones
    Column("ordinal_before", Float, nullable=True),
    Column("ordinal_after", Float, nullable=True),
    Index("ix_match_seats_account_game_finished", "account_id", "game", "finished"),
    Index("ix_match_seats_account_finished", "account_id", "finished"),
)

daily_results = Table(  # the daily deal's attempts (daily_0001; server/lobby/daily.py): one per account, game and day
    "daily_results",
    metadata,
    Column("game", String(32), primary_key=True),
    Column("day", String(10), primary_key=True),  # 2026-11-27 (UTC)
    Column("account_id", Integer, ForeignKey("accounts.id"), primary_key=True),
    Column("name", String(64), nullable=False),
    Column("table_id", String(32), nullable=True, unique=True),  # NULL while the table is being made
    Column("started", String(32), nullable=False),
    Column("finished", String(32), nullable=True),  # NULL until the table's match ends
    Column("score", Integer, nullable=True),  # NULL until it ends, and for a player gone at the end
    Index("ix_daily_results_account_game_day", "account_id", "game", "day"),
)

push_subscriptions = Table(  # Web Push subscriptions (push_0001; server/players/push.py): one per browser
    "push_subscriptions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("account_id", Integer, ForeignKey("accounts.id"), nullable=False, index=True),
    Column("endpoint", String(1024), nullable=False, unique=True),  # the push service's URL for the browser
    Column("p256dh", String(128), nullable=False),  # the browser's P-256 public key, base64url
    Column("auth", String(64), nullable=False),  # its 16-byte authentication secret, base64url
    Column("lang", String(8), nullable=False),  # en | ko | ja: the notifications' language
    Column("created", String(32), nullable=False),
)

server_keys = Table(
    "server_keys",
    metadata,
    Column("name", String(32), primary_key=True),
    Column("value", String(128), nullable=False),
)
