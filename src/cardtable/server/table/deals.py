"""The seeds of the hands a table deals: one per hand, from the table's seed and, unless its creator chose the
seed, the server's deal key."""

from __future__ import annotations

import hashlib
import hmac

DEAL_KEY = "deal"
"""The name of the server key mixed into the seeds of the hands it deals (``server/storage/keys.py``)."""

def hand_seed(seed: int, hand: int, key: bytes | None = None) -> int:
    """The shuffle seed (0 to 2**62 - 1) of hand ``hand`` (from 0) of a table seeded with ``seed``.

    With the server's ``key`` (``keys.server_key(store, "deal")``, for every table whose seed the server chose) it
    is an HMAC-SHA256 of the seed and the hand, so that knowing a table's seed gives nobody its deals; without
    (a creator's chosen seed, ``TableRow.seed_chosen``: one person and bots, unrated) a plain function of both,
    so that the creator can deal the same hands again."""
    if key is not None:
        digest = hmac.new(key, f"{seed}:{hand}".encode(), hashlib.sha256).digest()
        return int.from_bytes(digest[:8], "big") % (2**62)
    return (seed * 1_000_003 + hand * 7919 + 17) % (2**62)
