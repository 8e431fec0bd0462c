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
  response; :func:`parse_origin` and :func:`own_origin` for the Origin check of ``server/accounts.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import math
import urllib.parse
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
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

IPV6_PREFIX = 64
"""Per-address limits count an IPv6 client by its network of this many bits: one home or host is usually given a
whole /64, so its addresses there are one client."""

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def address_key(host: str | None) -> str:
    """The key under which every per-address limit counts the client ``host`` (an IP address as text): an IPv4
    address as it is, an IPv6 one as its /64 (``"2001:db8:1:2::/64"``), an IPv4-mapped IPv6 address
    (``::ffff:a.b.c.d``) as its IPv4 address; anything else (a Unix socket, a test client) as it is, and no host
    as ``"?"``.

    >>> address_key("203.0.113.7"), address_key("2001:db8:1:2:aaaa::1"), address_key("::ffff:10.0.0.1")
    ('203.0.113.7', '2001:db8:1:2::/64', '10.0.0.1')
    """
    if not host:
        return "?"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((int(ip), IPV6_PREFIX), strict=False))
    return str(ip)


def client_address(connection: Any) -> str:
    """:func:`address_key` of the client of ``connection``: an ASGI scope (its ``client``), or a Starlette
    ``Request`` or ``WebSocket``. Behind a proxy trusted by ``forwarded_allow_ips`` that is the address the proxy
    names (uvicorn's ``ProxyHeadersMiddleware`` has put it in the scope), else the TCP peer."""
    client = connection.get("client") if isinstance(connection, MutableMapping) else connection.client
    return address_key(client[0] if client else None)


def trusted_networks(value: str) -> list[IPNetwork]:
    """The proxies of the setting ``forwarded_allow_ips`` (``"127.0.0.1, ::1, 10.0.0.0/8"``: addresses or networks,
    comma-separated; ``""``: none) as networks. ``ValueError`` naming the setting for any other item (a host name,
    ``*``, an empty item): the forwarded headers of anyone else would be believed."""
    networks: list[IPNetwork] = []
    if not value.strip():
        return networks
    for item in value.split(","):
        try:
            networks.append(ipaddress.ip_network(item.strip()))
        except ValueError:
            raise ValueError(f"forwarded_allow_ips: {item.strip()!r} is not an IP address or network (such as "
                             f"127.0.0.1 or 10.0.0.0/8)") from None
    return networks


DEFAULT_PORTS = {"http": 80, "https": 443}
"""The port of an origin that names none."""

Origin = tuple[str, str, int]
"""A web origin: scheme (``http`` or ``https``), host in lower case (an IPv6 address without brackets), port."""


def parse_origin(text: str) -> Origin | None:
    """The origin an ``Origin`` header names (``"https://Example.com"`` -> ``("https", "example.com", 443)``), or
    ``None`` for ``null`` and for anything that is not ``http(s)://host[:port]`` (a path, a user, another scheme).

    >>> parse_origin("http://[::1]:8000"), parse_origin("null")
    (('http', '::1', 8000), None)
    """
    try:
        parts = urllib.parse.urlsplit(text.strip())
        port = parts.port
    except ValueError:  # a port that is not a number, or out of range
        return None
    scheme = parts.scheme.lower()
    if (scheme not in DEFAULT_PORTS or not parts.hostname or "@" in parts.netloc or parts.path not in ("", "/")
            or parts.query or parts.fragment):
        return None
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def own_origin(connection: Any) -> Origin | None:
    """The origin a Starlette ``Request`` or ``WebSocket`` was sent to: its scheme (``https`` when TLS reached the
    server, or a proxy of ``forwarded_allow_ips`` said so; ``ws``/``wss`` count as ``http``/``https``) with its
    ``Host`` header. ``None`` without a usable ``Host``."""
    scheme = {"ws": "http", "wss": "https"}.get(connection.url.scheme, connection.url.scheme)
    return parse_origin(f"{scheme}://{connection.headers.get('host', '')}")


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


def guarded_h11(max_connections_per_address: int, request_timeout_s: float,
                trusted: Sequence[IPNetwork] = ()) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol class with a per-address connection cap and a whole-request timeout (pass it as
    ``uvicorn.run(..., http=...)``). Addresses are counted by :func:`address_key` (an IPv6 /64 as one); the proxies
    in ``trusted`` (``forwarded_allow_ips``) are not capped, since every client behind them comes through their
    connections (the proxy caps those: ``docs/deploy.md``). A WebSocket upgrade stops counting as an HTTP
    connection (the WebSocket caps are the table's, ``docs/protocol.md``, "Limits")."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

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
