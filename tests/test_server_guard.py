"""The HTTP guard of the embedded server (``server/edge/guard.py``, issue 25, "Tests that guard the security and ownership
code"), as a client or an attacker meets it: heads and bodies over their caps (at the byte), bodies sent in
chunks, JSON that is not strict, security headers, the Origin parser, and, on a real uvicorn socket, slow
requests (the second one of a kept-alive connection too), connections per address and trusted proxies.

:class:`BodyGuard` and :class:`SecurityHeaders` are driven through ASGI as a server drives them (:func:`call`), so
that a body can arrive in as many pieces as a socket gives (Starlette's ``TestClient`` joins them into one);
``guarded_h11`` runs in a real uvicorn in a thread of this process (:func:`serving`), with a small app."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.testclient import TestClient

from cardtable.server.core.addresses import own_origin, parse_origin, trusted_networks
from cardtable.server.core.errors import ErrorBody, describe_validation_errors, error_responses
from cardtable.server.core.limits import ConnectionCounts, TokenBuckets
from cardtable.server.core.settings import Settings
from cardtable.server.edge.app import create_app
from cardtable.server.edge.guard import (
    CONTENT_SECURITY_POLICY,
    DOCS_CONTENT_SECURITY_POLICY,
    MAX_JSON_DEPTH,
    SECURITY_HEADERS,
    BodyGuard,
    SecurityHeaders,
    guarded_h11,
)
from polling import wait_for

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

Message = MutableMapping[str, Any]


# -- an ASGI server in miniature -----------------------------------------------------------------------------

@dataclass
class Answer:
    """What the client of a :func:`call` got, and what the app behind the guard saw."""

    status: int | None = None
    headers: dict[bytes, bytes] = field(default_factory=dict)
    body: bytes = b""
    pulled: int = 0  # request messages the guard (or the app) read
    app_got: bytes | None = None  # the body the app behind the guard read, or None if it never ran
    sent: list[Message] = field(default_factory=list)

    def json(self) -> Any:
        return json.loads(self.body)


class Recorder:
    """The app behind the guard: reads the whole body, answers ``200`` with it (``text/plain``), remembers it."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer

    async def __call__(self, scope: Message, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.accept"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        self.answer.app_got = body
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": body})


def http_scope(method: str = "POST", path: bytes = b"/x", query: bytes = b"",
               headers: Sequence[tuple[bytes, bytes]] = (), kind: str = "http") -> Message:
    scope: Message = {"type": kind, "path": path.decode(), "raw_path": path, "query_string": query,
                      "headers": list(headers), "client": ("203.0.113.5", 40000)}
    if kind == "http":
        scope["method"] = method
    return scope


def call(make_app: Any, scope: Message, chunks: Sequence[bytes] = (b"",)) -> Answer:
    """Run ``make_app(Recorder)`` (a guard around the recording app) on one request whose body arrives as
    ``chunks`` (one ``http.request`` message each, as a socket delivers them), as an ASGI server would."""
    answer = Answer()
    app = make_app(Recorder(answer))
    pending: list[Message] = [{"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
                              for i, chunk in enumerate(chunks)]

    async def receive() -> Message:
        if pending:
            answer.pulled += 1
            return pending.pop(0)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        answer.sent.append(message)
        if message["type"] == "http.response.start":
            answer.status = message["status"]
            for name, value in message.get("headers", ()):
                assert name not in answer.headers, f"header {name!r} sent twice"
                answer.headers[name] = value
        elif message["type"] == "http.response.body":
            answer.body += message.get("body", b"")

    asyncio.run(app(scope, receive, send))
    return answer


def guard(max_body_bytes: int = 1000, max_header_bytes: int = 500) -> Any:
    return lambda app: BodyGuard(app, max_body_bytes=max_body_bytes, max_header_bytes=max_header_bytes)


def padded(head_bytes: int, path: bytes = b"/x", query: bytes = b"") -> list[tuple[bytes, bytes]]:
    """Headers that make a request head of exactly ``head_bytes``: its path, its query and each header line
    (``name: value`` and CRLF, 4 bytes besides the name and value)."""
    fixed = len(path) + len(query) + len(b"host") + len(b"t") + 4 + len(b"x-pad") + 4
    assert head_bytes >= fixed
    return [(b"host", b"t"), (b"x-pad", b"a" * (head_bytes - fixed))]


def assert_refused(answer: Answer, status: int, code: str, limit: int | None = None) -> None:
    assert answer.status == status, (answer.status, answer.body[:200])
    assert answer.app_got is None, "the app behind the guard ran"
    body = answer.json()
    assert set(body) == {"detail", "code", "params"} and body["code"] == code
    if limit is not None:
        assert body["params"] == {"limit": limit} and str(limit) in body["detail"]
    assert answer.headers[b"content-type"] == b"application/json"
    assert answer.headers[b"content-length"] == str(len(answer.body)).encode()
    assert answer.headers[b"connection"] == b"close"


# -- the head cap ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_head_of_exactly_the_cap_passes_and_one_byte_more_is_431(method: str) -> None:
    fits = call(guard(max_header_bytes=500), http_scope(method, headers=padded(500)))
    assert fits.status == 200 and fits.app_got == b""
    over = call(guard(max_header_bytes=500), http_scope(method, headers=padded(501)))
    assert_refused(over, 431, "request.head_too_large", 500)


@pytest.mark.parametrize(("path", "query"), [(b"/" + b"p" * 600, b""), (b"/x", b"q=" + b"v" * 600)])
def test_a_long_path_or_query_counts_in_the_head(path: bytes, query: bytes) -> None:
    answer = call(guard(max_header_bytes=500), http_scope("GET", path=path, query=query, headers=[(b"host", b"t")]))
    assert_refused(answer, 431, "request.head_too_large", 500)
    shorter = call(guard(max_header_bytes=500), http_scope("GET", path=path[:400], query=query[:400]))
    assert shorter.status == 200


def test_many_small_headers_count_in_the_head() -> None:
    """Each header line counts its name, its value and 4 bytes (``": "`` and CRLF): 100 lines of 5 bytes are 900."""
    lines = [(b"a", b"b" * 4)] * 100  # 1 + 4 + 4 = 9 bytes a line
    assert call(guard(max_header_bytes=902), http_scope("GET", path=b"/x", headers=lines)).status == 200
    answer = call(guard(max_header_bytes=901), http_scope("GET", path=b"/x", headers=lines))
    assert_refused(answer, 431, "request.head_too_large", 901)


def test_a_websocket_with_a_head_over_the_cap_is_closed_1009() -> None:
    answer = call(guard(max_header_bytes=500), http_scope(headers=padded(501), kind="websocket"))
    assert answer.sent == [{"type": "websocket.close", "code": 1009}]
    fits = call(guard(max_header_bytes=500), http_scope(headers=padded(500), kind="websocket"))
    assert fits.sent == [{"type": "websocket.accept"}]


def test_the_default_head_cap_is_16_kib(tmp_path: Path) -> None:
    """``max_header_bytes`` is 16 KiB by default (``docs/deploy.md``), in the guard and in the server's settings."""
    assert call(lambda app: BodyGuard(app), http_scope("GET", headers=padded(16384))).status == 200
    assert_refused(call(lambda app: BodyGuard(app), http_scope("GET", headers=padded(16385))), 431,
                   "request.head_too_large", 16384)
    with TestClient(create_app(f"sqlite+aiosqlite:///{tmp_path / 'head.db'}", Settings())) as client:
        assert client.get("/api/games", headers={"x-pad": "a" * 15_000}).status_code == 200
        big = client.get("/api/games", headers={"x-pad": "a" * 16_400})
        assert big.status_code == 431 and big.json()["params"] == {"limit": 16384}


# -- the body cap ---------------------------------------------------------------------------------------------

def test_a_body_of_exactly_the_cap_passes_whole_and_one_byte_more_is_413() -> None:
    fits = call(guard(max_body_bytes=1000), http_scope(), [b"a" * 1000])
    assert fits.status == 200 and fits.app_got == b"a" * 1000 and fits.body == b"a" * 1000
    over = call(guard(max_body_bytes=1000), http_scope(), [b"a" * 1001])
    assert_refused(over, 413, "request.too_large", 1000)


def test_a_body_sent_in_chunks_is_capped_and_not_read_to_its_end() -> None:
    """Chunks of 100 bytes, none over the cap of 1000 alone: the 11th goes over, and the guard reads no further."""
    answer = call(guard(max_body_bytes=1000), http_scope(), [b"c" * 100] * 50)
    assert_refused(answer, 413, "request.too_large", 1000)
    assert answer.pulled == 11
    fits = call(guard(max_body_bytes=1000), http_scope(), [b"c" * 100] * 10 + [b""])
    assert fits.status == 200 and fits.app_got == b"c" * 1000  # the app gets the pieces joined, in order
    ordered = call(guard(), http_scope(), [b"ab", b"cd", b"ef"])
    assert ordered.app_got == b"abcdef"


@pytest.mark.parametrize("declared", [b"1001", b"500000000"])
def test_a_declared_length_over_the_cap_is_413_before_any_body_is_read(declared: bytes) -> None:
    answer = call(guard(max_body_bytes=1000), http_scope(headers=[(b"content-length", declared)]), [b"x"])
    assert_refused(answer, 413, "request.too_large", 1000)
    assert answer.pulled == 0


def test_a_declared_length_at_the_cap_is_read() -> None:
    answer = call(guard(max_body_bytes=1000), http_scope(headers=[(b"content-length", b"1000")]), [b"x" * 1000])
    assert answer.status == 200 and answer.app_got == b"x" * 1000


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS"])
def test_requests_without_a_body_go_straight_through(method: str) -> None:
    """A GET (HEAD, OPTIONS) is never read by the guard: the app reads what comes, as it would without it."""
    answer = call(guard(max_body_bytes=10), http_scope(method, headers=[(b"content-length", b"50")]), [b"y" * 50])
    assert answer.status == 200 and answer.app_got == b"y" * 50


def test_the_default_body_cap_is_64_kib() -> None:
    assert call(lambda app: BodyGuard(app), http_scope(), [b"a" * 65536]).status == 200
    assert_refused(call(lambda app: BodyGuard(app), http_scope(), [b"a" * 65537]), 413, "request.too_large", 65536)


def run_raw(app: Any, scope: Message, messages: list[Message]) -> list[Message]:
    """Run ``app`` on ``messages`` exactly as given (ASGI lets a server leave out ``body`` and ``more_body``);
    what it sent."""
    sent: list[Message] = []

    async def receive() -> Message:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def test_messages_without_body_or_more_body_are_read_as_asgi_says() -> None:
    """``body`` defaults to empty and ``more_body`` to false: a last message with neither ends the body."""
    answer = Answer()
    sent = run_raw(BodyGuard(Recorder(answer), max_body_bytes=10), http_scope(),
                   [{"type": "http.request", "body": b"abc", "more_body": True}, {"type": "http.request"}])
    assert sent[0]["status"] == 200 and answer.app_got == b"abc"
    answer = Answer()
    sent = run_raw(BodyGuard(Recorder(answer), max_body_bytes=10), http_scope(),
                   [{"type": "http.request", "body": b"0123456789"}])
    assert sent[0]["status"] == 200 and answer.app_got == b"0123456789"


def test_after_the_body_the_app_hears_the_server_again() -> None:
    """The guard hands the body it read to the app once; the app's next ``receive`` is the server's (here the
    client's leaving, which a streaming response waits for), never the body a second time."""
    heard: list[Message] = []

    async def listener(scope: Message, receive: Any, send: Any) -> None:
        heard.extend([await receive(), await receive()])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    run_raw(BodyGuard(listener), http_scope(), [{"type": "http.request", "body": b"{}", "more_body": False}])
    assert heard == [{"type": "http.request", "body": b"{}", "more_body": False}, {"type": "http.disconnect"}]


def test_security_headers_on_a_response_that_names_no_headers() -> None:
    async def bare(scope: Message, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 204})
        await send({"type": "http.response.body", "body": b""})

    sent = run_raw(SecurityHeaders(bare), http_scope("GET"), [])
    assert sent[0]["status"] == 204 and list(sent[0]["headers"]) == list(SECURITY_HEADERS)


def test_a_client_that_leaves_mid_body_is_not_answered() -> None:
    answer = Answer()
    seen: list[Message] = []

    async def main() -> None:
        messages: list[Message] = [{"type": "http.request", "body": b"abc", "more_body": True},
                                   {"type": "http.disconnect"}]

        async def receive() -> Message:
            return messages.pop(0)

        async def send(message: Message) -> None:
            seen.append(message)

        await BodyGuard(Recorder(answer), max_body_bytes=100)(http_scope(), receive, send)

    asyncio.run(main())
    assert seen == [] and answer.app_got is None


# -- strict JSON ----------------------------------------------------------------------------------------------

JSON = (b"content-type", b"application/json")


@pytest.mark.parametrize("body", [b'{"a": NaN}', b'{"a": Infinity}', b'{"a": 1e400}', b'{"a": "\\ud800"}',
                                  b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1), b'{"a": ', b"\xff"])
@pytest.mark.parametrize("content_type", [b"application/json", b"Application/JSON; charset=utf-8",
                                          b"application/merge-patch+json"])
def test_a_json_body_that_is_not_strict_json_is_422(body: bytes, content_type: bytes) -> None:
    answer = call(guard(), http_scope(headers=[(b"content-type", content_type)]), [body])
    assert_refused(answer, 422, "request.invalid")
    params = answer.json()["params"]
    assert params["field"] == "body" and params["detail"].startswith("the body is not valid JSON: ")
    reason = params["detail"].removeprefix("the body is not valid JSON: ")
    assert len(reason) > 8 and reason != "None"  # the decoder's reason, not the input
    assert answer.json()["detail"] == params["detail"]


@pytest.mark.parametrize("body", [b'{"a": [1, 2.5, "\\u00e9"]}', b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH, b""])
def test_strict_json_and_an_empty_body_pass(body: bytes) -> None:
    answer = call(guard(), http_scope(headers=[JSON]), [body])
    assert answer.status == 200 and answer.app_got == body


@pytest.mark.parametrize("content_type", [b"text/plain", b"application/x-www-form-urlencoded", b""])
def test_a_body_that_is_not_json_is_not_judged_as_json(content_type: bytes) -> None:
    answer = call(guard(), http_scope(headers=[(b"content-type", content_type)] if content_type else []), [b"NaN"])
    assert answer.status == 200 and answer.app_got == b"NaN"


# -- security headers -----------------------------------------------------------------------------------------

def secured(docs_paths: tuple[str, ...] = ()) -> Any:
    return lambda app: SecurityHeaders(app, docs_paths=docs_paths)


def test_every_response_gets_the_security_headers() -> None:
    answer = call(secured(("/docs",)), http_scope("GET", path=b"/page"))
    assert answer.status == 200
    for name, value in SECURITY_HEADERS:
        assert answer.headers[name] == value
    assert answer.headers[b"content-security-policy"] == CONTENT_SECURITY_POLICY.encode()
    assert answer.headers[b"content-type"] == b"text/plain"  # the app's own headers stay


def test_a_header_the_app_set_itself_is_kept() -> None:
    async def framed(scope: Message, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"X-Frame-Options", b"SAMEORIGIN")]})
        await send({"type": "http.response.body", "body": b"ok"})

    answer = call(lambda _app: SecurityHeaders(framed), http_scope("GET"))
    assert answer.headers[b"X-Frame-Options"] == b"SAMEORIGIN" and b"x-frame-options" not in answer.headers
    assert answer.headers[b"x-content-type-options"] == b"nosniff"


def test_only_the_docs_pages_get_the_docs_policy() -> None:
    docs = call(secured(("/docs", "/redoc")), {**http_scope("GET", path=b"/docs")})
    assert docs.headers[b"content-security-policy"] == DOCS_CONTENT_SECURITY_POLICY.encode()
    assert docs.headers[b"x-frame-options"] == b"DENY" and docs.headers[b"referrer-policy"] == b"same-origin"
    page = call(secured(("/docs", "/redoc")), http_scope("GET", path=b"/docs/x"))
    assert page.headers[b"content-security-policy"] == CONTENT_SECURITY_POLICY.encode()


def test_a_websocket_passes_through_untouched() -> None:
    answer = call(secured(), http_scope(kind="websocket"))
    assert answer.sent == [{"type": "websocket.accept"}]


# -- the Origin parser ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "origin"), [
    ("https://Example.com", ("https", "example.com", 443)),
    ("http://example.com", ("http", "example.com", 80)),
    ("HTTP://example.com:8000/", ("http", "example.com", 8000)),
    ("  http://example.com  ", ("http", "example.com", 80)),
    ("http://[::1]:8000", ("http", "::1", 8000)),
    ("https://example.com:80", ("https", "example.com", 80)),
    ("null", None),
    ("", None),
    ("example.com", None),
    ("ftp://example.com", None),
    ("ws://example.com", None),
    ("http://", None),
    ("http://user@example.com", None),
    ("http://user:pw@example.com", None),
    ("http://example.com/path", None),
    ("http://example.com?q=1", None),
    ("http://example.com#f", None),
    ("http://example.com:99999", None),
    ("http://example.com:port", None),
])
def test_parse_origin(text: str, origin: tuple[str, str, int] | None) -> None:
    assert parse_origin(text) == origin


@dataclass
class Reached:
    """A stand-in for a Starlette request: the URL scheme it reached the server with, and its headers."""

    scheme: str
    headers: dict[str, str]

    @property
    def url(self) -> Any:
        return type("URL", (), {"scheme": self.scheme})()


@pytest.mark.parametrize(("scheme", "host", "origin"), [
    ("http", "Example.com", ("http", "example.com", 80)),
    ("https", "example.com", ("https", "example.com", 443)),
    ("ws", "example.com:8000", ("http", "example.com", 8000)),
    ("wss", "example.com", ("https", "example.com", 443)),
    ("http", "", None),
    ("http", "example.com/evil", None),
])
def test_own_origin_is_the_scheme_reached_and_the_host(scheme: str, host: str, origin: Any) -> None:
    assert own_origin(Reached(scheme, {"host": host} if host else {})) == origin


# -- small parts the routes rely on ---------------------------------------------------------------------------

def test_describe_validation_errors_names_at_most_three_and_never_the_input() -> None:
    errors = [{"loc": ("body", "name"), "msg": "too long", "input": "SECRET"},
              {"loc": ("body", "options", "players"), "msg": "too many"},
              {"loc": ("query", "x" * 100), "msg": "m" * 300},
              {"loc": ("body", "z"), "msg": "fourth"}]
    detail, params = describe_validation_errors(errors)
    assert detail == ("name: too long; options.players: too many; query." + "x" * 40 + ": " + "m" * 160
                      + " (and 1 more)")
    assert params == {"field": "name", "detail": detail}
    assert describe_validation_errors([]) == ("the request is not valid", {"field": "", "detail":
                                                                           "the request is not valid"})
    only_body = describe_validation_errors([{"loc": ("body",), "msg": "not an object"}])
    assert only_body[0] == "body: not an object" and "(and" not in only_body[0]
    three = describe_validation_errors([{"loc": ("a",), "msg": "x"}] * 3)
    assert "(and" not in three[0]
    assert describe_validation_errors([{}]) == ("body: invalid", {"field": "", "detail": "body: invalid"})
    deep = describe_validation_errors([{"loc": ("a" * 50, "b" * 50, "c" * 50), "msg": "x"}])[1]["field"]
    assert deep == ("a" * 40 + "." + "b" * 40)[:80] and len(deep) == 80


def test_error_responses_always_include_431() -> None:
    responses = error_responses(403, 429)
    assert sorted(responses) == [403, 429, 431]
    assert all(response["model"] is ErrorBody for response in responses.values())
    assert responses[429]["description"].startswith("Too many requests")


def test_connection_counts_cap_each_address_and_forget_released_ones() -> None:
    counts = ConnectionCounts(2)
    assert [counts.take("a"), counts.take("a"), counts.take("a"), counts.take("b")] == [True, True, False, True]
    counts.release("a")
    assert counts.take("a") is True and counts.take("a") is False
    counts.release("b")
    assert "b" not in counts.counts  # an address with no connection left holds no memory


def test_address_buckets_allow_the_burst_then_say_how_long_to_wait() -> None:
    buckets = TokenBuckets(rate=0.5, burst=2)
    assert [buckets.take("a"), buckets.take("a")] == [0, 0]
    wait = buckets.take("a")
    assert wait == 2  # one request every 2 s
    assert buckets.take("b") == 0
    fast = TokenBuckets(rate=4.0, burst=1)
    assert fast.take("a") == 0 and fast.take("a") == 1  # a quarter of a second: Retry-After 1, never 0
    slow = TokenBuckets(rate=1e-9, burst=1)
    assert slow.take("a") == 0 and slow.take("a") == 86400  # capped at a day


def test_trusted_networks_of_a_single_address_and_a_network() -> None:
    assert [str(n) for n in trusted_networks("10.0.0.0/8")] == ["10.0.0.0/8"]
    assert trusted_networks("   ") == []


# -- guarded_h11 on a real socket -----------------------------------------------------------------------------

async def tiny_app(scope: Message, receive: Any, send: Any) -> None:
    """Answers ``ok`` to any request (after reading its body), accepts any WebSocket; ignores lifespan."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            pass
        return
    if scope["type"] == "websocket":
        await receive()
        await send({"type": "websocket.accept"})
        while (await receive())["type"] != "websocket.disconnect":
            pass
        return
    while (await receive()).get("more_body", False):
        pass
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain"), (b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@contextlib.contextmanager
def serving(max_connections: int = 50, request_timeout_s: float = 0.5, trusted: str = "") -> Iterator[int]:
    """uvicorn with ``guarded_h11`` on a free port of 127.0.0.1 in a thread (keep-alive 60 s, so that only the
    guard's timeout closes a connection); yields the port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    config = uvicorn.Config(tiny_app, log_level="warning", timeout_keep_alive=60, lifespan="off",
                            http=guarded_h11(max_connections, request_timeout_s, trusted_networks(trusted)))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_for(lambda: server.started, 30, "uvicorn to start", every=0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


GET = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def answered(sock: socket.socket) -> bool:
    """Whether ``sock`` gets a whole ``200 ok`` answer to a GET (False if the server closed it instead)."""
    try:
        sock.sendall(GET)
        got = b""
        while not got.endswith(b"\r\n\r\nok"):
            chunk = sock.recv(4096)
            if not chunk:
                return False
            got += chunk
    except (ConnectionResetError, BrokenPipeError):
        return False
    return got.startswith(b"HTTP/1.1 200")


def closed_within(sock: socket.socket, seconds: float) -> bytes:
    """What the server sent before closing ``sock``; AssertionError if it is still open after ``seconds``."""
    sock.settimeout(seconds)
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except TimeoutError:
        raise AssertionError(f"still open after {seconds} s (received {got[:80]!r})") from None
    except ConnectionResetError:
        pass
    return got


def test_a_half_sent_head_or_body_is_closed_after_the_request_timeout() -> None:
    with serving(request_timeout_s=0.5) as port, connect(port) as head, connect(port) as body, \
            connect(port) as idle:
        head.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n")
        body.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{")
        started = time.monotonic()
        for sock in (head, body, idle):
            assert closed_within(sock, 5.0) == b""
        assert time.monotonic() - started < 4.0


def test_a_slow_second_request_on_a_kept_alive_connection_is_closed() -> None:
    with serving(request_timeout_s=0.5) as port, connect(port) as sock:
        assert answered(sock)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n")  # the second request's head, never finished
        assert closed_within(sock, 5.0) == b""


def test_a_trickled_request_has_the_request_timeout_in_all() -> None:
    """A byte every 50 ms keeps arriving, but the request as a whole must arrive within the timeout."""
    with serving(request_timeout_s=0.5) as port, connect(port) as sock:
        started = time.monotonic()
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: ")
        with contextlib.suppress(OSError):
            while time.monotonic() - started < 5.0:
                sock.sendall(b"a")
                time.sleep(0.05)  # the attacker's pace
        assert time.monotonic() - started < 4.0, "a request trickled in byte by byte was never closed"


def test_an_answered_request_leaves_the_connection_to_keep_alive() -> None:
    """Once a request has arrived whole its timer stops: the kept-alive connection is not closed at the request
    timeout after it, and serves the next request."""
    with serving(request_timeout_s=0.3) as port, connect(port) as sock:
        assert answered(sock)
        sock.settimeout(1.0)  # over three request timeouts
        with pytest.raises(TimeoutError):
            sock.recv(1)
        assert answered(sock)


def test_connections_per_address_are_capped_and_released_when_closed() -> None:
    with serving(max_connections=3, request_timeout_s=30) as port:
        held = [connect(port) for _ in range(3)]
        try:
            assert all(answered(sock) for sock in held)
            with connect(port) as extra:
                assert not answered(extra)
            with socket.create_connection(("127.0.0.1", port), timeout=5, source_address=("127.0.0.2", 0)) as other:
                assert answered(other)  # another address has its own count
            held.pop().close()
            deadline = time.monotonic() + 10
            while True:  # the closed connection is forgotten once the server sees it go
                with connect(port) as again:
                    if answered(again):
                        break
                assert time.monotonic() < deadline, "a closed connection was never released"
        finally:
            for sock in held:
                sock.close()


def test_a_trusted_proxy_is_not_capped() -> None:
    with serving(max_connections=2, request_timeout_s=30, trusted="127.0.0.1") as port:
        held = [connect(port) for _ in range(5)]
        try:
            assert all(answered(sock) for sock in held)
        finally:
            for sock in held:
                sock.close()
    with serving(max_connections=2, request_timeout_s=30, trusted="10.0.0.0/8") as port:
        held = [connect(port) for _ in range(3)]
        try:
            assert [answered(sock) for sock in held] == [True, True, False]
        finally:
            for sock in held:
                sock.close()


def test_a_websocket_stops_counting_as_an_http_connection() -> None:
    upgrade = (b"GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    with serving(max_connections=2, request_timeout_s=0.5) as port:
        sockets = [connect(port) for _ in range(2)]
        try:
            for sock in sockets:
                sock.sendall(upgrade)
                got = b""
                while b"\r\n\r\n" not in got:
                    got += sock.recv(4096)
                assert got.startswith(b"HTTP/1.1 101")
            with connect(port) as first, connect(port) as second:  # two WebSockets open, two HTTP connections
                assert answered(first) and answered(second)
            sockets[0].settimeout(1.0)  # a WebSocket is not a slow request: the request timeout leaves it open
            with pytest.raises(TimeoutError):
                sockets[0].recv(1)
        finally:
            for sock in sockets:
                sock.close()
