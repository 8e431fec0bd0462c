"""Table ids and per-seat secret tokens: made here, stored only as hashes (``docs/protocol.md``)."""

from __future__ import annotations

import hashlib
import hmac
import secrets


def new_table_id() -> str:
    """A short, url-safe, unguessable table id (12 characters)."""
    return secrets.token_urlsafe(9)


def new_token() -> str:
    """A secret seat token (43 url-safe characters, 256 bits)."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """The SHA-256 hex digest stored in place of ``token``."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def token_matches(token: str, token_hash: str | None) -> bool:
    """True when ``token`` hashes to ``token_hash`` (constant-time compare); False for a seat without one."""
    if token_hash is None:
        return False
    return hmac.compare_digest(hash_token(token), token_hash)
