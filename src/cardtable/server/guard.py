"""HTTP limits of the embedded server (``docs/deploy.md``): request bodies, request heads, slow requests, connections
per address, and the error body every refusal shares.

The server is meant to be safe without a reverse proxy in front, so these limits live in the server itself:

- :class:`BodyGuard`, an ASGI middleware: a request head (path, query and headers) larger than ``max_header_bytes``
  is answered ``431`` (h11 already refuses a longer one that arrives in pieces, with ``400``); a request body larger than ``max_body_bytes`` is answered ``413`` without
  reading it all; a JSON body that is not strict JSON (``NaN``, ``Infinity``, a number out of range such as
  ``1e400``, a lone surrogate such as ``"\\ud800"``, or nesting deeper than 32 levels) is answered ``422`` before
  the route sees it.
- :func:`guarded_h11`, uvicorn's h11 protocol with two more rules: at most ``max_connections_per_address`` open
  HTTP connections per client address (more are closed at once), and a request's head and body must arrive within
  ``request_timeout_s`` (a half-sent request is closed then). Header size is h11's ``max_incomplete_event_size``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import h11
import msgspec
from pydantic import BaseModel, Field

from cardtable.server.messages import RateLimiter, check_depth

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_JSON_DEPTH = 32
"""Deepest nesting of arrays and objects accepted in a JSON request body."""


class ErrorBody(BaseModel):
    """Every refusal, HTTP 4xx: ``{"detail": "English reason", "code": "table.full", "params": {...}}``.

    ``code`` names the refusal for programs and translations; ``params`` fill the translated text's blanks.
    """

    detail: str = Field(description="The reason, in English, for people.")
    code: str = Field(description="A stable name of the refusal (cardtable.refusals.CODES), such as request.invalid.")
    params: dict[str, Any] = Field(default_factory=dict, description="Values the reason's text refers to.")


def error_body(detail: str, code: str, params: dict[str, Any]) -> dict[str, Any]:
    """The JSON of an :class:`ErrorBody`."""
    return {"detail": detail, "code": code, "params": params}


def describe_validation_errors(errors: list[Any]) -> tuple[str, dict[str, Any]]:
    """A short description of pydantic's errors that never repeats the input (it may be huge, or hold values that
    cannot be written back as JSON): ``("grace_seconds: Input should be ...", {"field": "grace_seconds",
    "detail": ...})``; locations leave out ``body`` and are cut to 40 characters a part, at most three errors are named."""

    def where(error: Any) -> str:
        return ".".join(str(part)[:40] for part in error.get("loc", ()) if part != "body")[:80]

    parts = [f"{where(e) or 'body'}: {str(e.get('msg', 'invalid'))[:160]}" for e in errors[:3]]
    detail = "; ".join(parts) or "the request is not valid"
    if len(errors) > 3:
        detail += f" (and {len(errors) - 3} more)"
    return detail, {"field": where(errors[0]) if errors else "", "detail": detail}


async def _answer(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = msgspec.json.encode(body)
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
        (b"connection", b"close"),
    ]})
    await send({"type": "http.response.body", "body": payload})


class BodyGuard:
    """ASGI middleware: heads over ``max_header_bytes`` get ``431``, bodies over ``max_body_bytes`` get ``413``; JSON bodies that are not strict JSON get ``422``
    (both with an :class:`ErrorBody`); anything else goes on to ``app`` with the body already read."""

    def __init__(self, app: ASGIApp, max_body_bytes: int = 65536, max_header_bytes: int = 16384) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_header_bytes = max_header_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            head = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
            head += sum(len(name) + len(value) + 4 for name, value in scope["headers"])
            if head > self.max_header_bytes:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1009})
                else:
                    limit = self.max_header_bytes
                    await _answer(send, 431, error_body(f"the request head is larger than {limit} bytes",
                                                        "request.head_too_large", {"limit": limit}))
                return
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        limit = self.max_body_bytes
        too_large = error_body(f"the request body is larger than {limit} bytes", "request.too_large", {"limit": limit})
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _answer(send, 413, too_large)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _answer(send, 413, too_large)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        content_type = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
        if body and content_type.endswith(b"json"):
            problem = strict_json_problem(body)
            if problem is not None:
                detail = f"the body is not valid JSON: {problem}"
                await _answer(send, 422, error_body(detail, "request.invalid", {"field": "body", "detail": detail}))
                return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def strict_json_problem(body: bytes) -> str | None:
    """``None`` if ``body`` is strict JSON (RFC 8259: no ``NaN``/``Infinity``, numbers that fit a double, valid
    UTF-8 without lone surrogates, at most :data:`MAX_JSON_DEPTH` levels), else a short reason (never the input)."""
    try:
        check_depth(body, MAX_JSON_DEPTH)
        msgspec.json.decode(body)
    except ValueError as error:  # msgspec.DecodeError is a ValueError
        return str(error)[:120]
    return None


class ConnectionCounts:
    """Open HTTP connections per client address, shared by every connection of one server."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.counts: Counter[str] = Counter()

    def take(self, address: str) -> bool:
        """Count a new connection from ``address``; False (and not counted) if it already has ``limit``."""
        if self.counts[address] >= self.limit:
            return False
        self.counts[address] += 1
        return True

    def release(self, address: str) -> None:
        """Forget one connection from ``address``."""
        self.counts[address] -= 1
        if self.counts[address] <= 0:
            del self.counts[address]


class AddressBuckets:
    """A token bucket per client address (``rate`` requests a second, ``burst`` at once), for requests that cost the
    server far more than the client, such as lobby reads: :meth:`take` counts one and says how long to wait when
    the address has none left. Counted in this process only. Buckets that have refilled are forgotten whenever the
    number held doubles (at least :data:`FORGET_AT`), so memory follows the addresses seen lately."""

    FORGET_AT = 1024

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self.buckets: dict[str, RateLimiter] = {}
        self._forget_at = self.FORGET_AT

    def take(self, address: str) -> int:
        """Count one request from ``address``: 0 if allowed, else whole seconds until one is (at least 1; for
        ``Retry-After``); a refused request takes nothing."""
        bucket = self.buckets.get(address)
        if bucket is None:
            if len(self.buckets) >= self._forget_at:
                self.buckets = {a: b for a, b in self.buckets.items() if not b.full()}
                self._forget_at = max(self.FORGET_AT, 2 * len(self.buckets))
            bucket = self.buckets[address] = RateLimiter(self.rate, self.burst)
        if bucket.allow():
            return 0
        wait = bucket.wait_s()
        return max(1, math.ceil(min(wait, 86400.0)))


def guarded_h11(max_connections_per_address: int, request_timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol class with a per-address connection cap and a whole-request timeout (pass it as
    ``uvicorn.run(..., http=...)``). A WebSocket upgrade stops counting as an HTTP connection (the WebSocket caps
    are the table's, ``docs/protocol.md``, "Limits")."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    counts = ConnectionCounts(max_connections_per_address)

    class GuardedH11Protocol(H11Protocol):
        _address: str | None = None
        _timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            address = self.client[0] if self.client else "?"
            if not counts.take(address):
                transport.abort()
                return
            self._address = address
            self._arm()

        def _release(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._address is not None:
                counts.release(self._address)
                self._address = None

        def connection_lost(self, exc: Exception | None) -> None:
            self._release()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._timer is None:
                self._timer = self.loop.call_later(request_timeout_s, self._too_slow)

        def _too_slow(self) -> None:
            self._timer = None
            if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
                with contextlib.suppress(Exception):
                    self.transport.close()

        def data_received(self, data: bytes) -> None:
            self._arm()  # a new request started (or goes on): it has request_timeout_s in all
            super().data_received(data)

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY) and self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def handle_websocket_upgrade(self, event: h11.Request) -> None:
            self._release()
            super().handle_websocket_upgrade(event)

    return GuardedH11Protocol


_REASONS = {
    400: "The request cannot be read.",
    401: "Not signed in, or the name or password is wrong.",
    403: "The token holds no seat at this table, or the request came from another site.",
    404: "No such table or player.",
    409: "The table's state does not allow it (full, seat taken, started, not finished), or the name is taken.",
    413: "The request body is too large.",
    422: "The request is not valid (body, query or options); `detail` says what, never repeating the input.",
    429: "Too many requests from this address; try again later.",
    431: "The request head (path, query and headers) is too large.",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` (``{status: {"model": ErrorBody, ...}}``) for the refusals a route can answer (and 431, which any route can), each an
    ``ErrorBody``."""
    return {status: {"model": ErrorBody, "description": _REASONS[status]} for status in (*statuses, 431)}
