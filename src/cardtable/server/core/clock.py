"""The server's wall-clock stamps (UTC, to the second), as stored in the database and sent to clients."""

from __future__ import annotations

from datetime import UTC, datetime


def now_iso() -> str:
    """The current UTC time as ``2026-11-22T21:00:00Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
