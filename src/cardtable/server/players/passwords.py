"""Passwords: Argon2id hashing and checking (argon2-cffi) off the event loop, a few at a time in a bounded pool of
threads of their own (:class:`PasswordChecks`, sized by ``Settings.argon2_concurrency``)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from fastapi import Request

_hasher = PasswordHasher()
"""Argon2id with argon2-cffi's default (RFC 9106 low-memory) parameters."""


class PasswordChecks:
    """Argon2 work (hashing and checking passwords) off the event loop, at most ``concurrency`` at once in threads
    of its own (``Settings.argon2_concurrency``): each takes about 64 MiB and a core for some 50 ms, so the
    others wait in line instead of filling the default thread pool. ``ValueError`` for ``concurrency`` below 1."""

    def __init__(self, concurrency: int) -> None:
        if concurrency < 1:
            raise ValueError(f"argon2_concurrency must be at least 1, not {concurrency}")
        self.concurrency = concurrency
        self._executor = concurrent.futures.ThreadPoolExecutor(concurrency, thread_name_prefix="cardtable-argon2")

    async def hash(self, password: str) -> str:
        """The Argon2id hash of ``password``."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, _hasher.hash, password)

    async def verify(self, password_hash: str | None, password: str) -> bool:
        """Whether ``password`` matches ``password_hash``; with ``None`` (no such account) a hash made for the
        purpose is checked, so that an unknown name takes as long to refuse as a wrong password."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, _verify, password_hash, password)

    def close(self) -> None:
        """Let the threads go once the checks running end."""
        self._executor.shutdown(wait=False)


def _verify(password_hash: str | None, password: str) -> bool:
    try:
        return bool(_hasher.verify(password_hash or _dummy_hash(), password))
    except (VerificationError, InvalidHashError):
        return False


def password_checks(request: Request) -> PasswordChecks:
    """The app's :class:`PasswordChecks` (made on first use, sized by its settings' ``argon2_concurrency``)."""
    checks: PasswordChecks | None = getattr(request.app.state, "password_checks", None)
    if checks is None:
        settings = getattr(request.app.state, "settings", None)
        concurrency = getattr(settings, "argon2_concurrency", DEFAULT_ARGON2_CONCURRENCY)
        checks = request.app.state.password_checks = PasswordChecks(concurrency)
    return checks


DEFAULT_ARGON2_CONCURRENCY = 2
"""Argon2 checks at once when the app has no settings (``Settings.argon2_concurrency``)."""


@functools.cache
def _dummy_hash() -> str:
    """A hash checked for unknown names, so that they take as long to refuse as a wrong password."""
    return _hasher.hash(secrets.token_urlsafe(16))
