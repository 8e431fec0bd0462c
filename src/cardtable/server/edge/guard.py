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
- :func:`client_address`: the key every per-address limit counts a client under (an IPv6 client by its /64); the
  client is the TCP peer, or the address a proxy of ``forwarded_allow_ips`` names (:func:`trusted_networks`).
- :class:`SecurityHeaders`, an ASGI middleware: a Content-Security-Policy and the other security headers on every
  response; :func:`parse_origin` and :func:`own_origin` for the Origin check of ``server/players/accounts.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

import h11
import msgspec
from uvicorn.protocols.http.h11_impl import H11Protocol

from cardtable.server.core.addresses import IPNetwork, address_key
from cardtable.server.core.errors import error_body
from cardtable.server.core.limits import ConnectionCounts
from cardtable.server.core.messages import check_depth

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_JSON_DEPTH = 32
"""Deepest nesting of arrays and objects accepted in a JSON request body."""


CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
"""The page's scripts, styles, images, requests and sockets come only from this site (images also as ``data:``
URLs: the page's icon); no inline script, no framing by another site."""

DOCS_CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
    "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net https://fonts.googleapis.com; "
    "font-src 'self' https://fonts.gstatic.com; img-src 'self' data: https://fastapi.tiangolo.com https://cdn.redoc.ly; "
    "worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
"""The API's documentation pages (FastAPI's ``/docs`` and ``/redoc``) load Swagger UI or ReDoc from their CDN and
start it with an inline script; they show no player's data."""

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)
"""Headers added to every HTTP response (:class:`SecurityHeaders`)."""


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


class SecurityHeaders:
    """ASGI middleware: every HTTP response gets :data:`SECURITY_HEADERS` (a header the app set itself is kept);
    the paths in ``docs_paths`` get :data:`DOCS_CONTENT_SECURITY_POLICY` instead of the page's policy."""

    def __init__(self, app: ASGIApp, docs_paths: tuple[str, ...] = ()) -> None:
        self.app = app
        self.docs_paths = frozenset(docs_paths)
        self.docs_headers = tuple((name, DOCS_CONTENT_SECURITY_POLICY.encode()) if name == b"content-security-policy"
                                  else (name, value) for name, value in SECURITY_HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = self.docs_headers if scope.get("path") in self.docs_paths else SECURITY_HEADERS

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in extra if name not in present]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def strict_json_problem(body: bytes) -> str | None:
    """``None`` if ``body`` is strict JSON (RFC 8259: no ``NaN``/``Infinity``, numbers that fit a double, valid
    UTF-8 without lone surrogates, at most :data:`MAX_JSON_DEPTH` levels), else a short reason (never the input)."""
    try:
        check_depth(body, MAX_JSON_DEPTH)
        msgspec.json.decode(body)
    except ValueError as error:  # msgspec.DecodeError is a ValueError
        return str(error)[:120]
    return None


def guarded_h11(max_connections_per_address: int, request_timeout_s: float,
                trusted: Sequence[IPNetwork] = ()) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol class with a per-address connection cap and a whole-request timeout (pass it as
    ``uvicorn.run(..., http=...)``). Addresses are counted by :func:`address_key` (an IPv6 /64 as one); the proxies
    in ``trusted`` (``forwarded_allow_ips``) are not capped, since every client behind them comes through their
    connections (the proxy caps those: ``docs/deploy.md``). A WebSocket upgrade stops counting as an HTTP
    connection (the WebSocket caps are the table's, ``docs/protocol.md``, "Limits")."""
    counts = ConnectionCounts(max_connections_per_address)

    def is_trusted(host: str | None) -> bool:
        try:
            ip = ipaddress.ip_address(host or "")
        except ValueError:
            return False
        return any(ip in network for network in trusted)

    class GuardedH11Protocol(H11Protocol):
        _address: str | None = None
        _timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            host = self.client[0] if self.client else None
            if is_trusted(host):
                self._arm()
                return
            address = address_key(host)
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


