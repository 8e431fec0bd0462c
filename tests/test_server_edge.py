"""The HTTP edge (``server/edge/guard.py``, issue 25 items 3 and 10): whose address a limit counts, when forwarded
headers are believed, the session cookie's ``Secure`` flag, the Origin check and the security headers.

Forwarded headers are read by uvicorn's ``ProxyHeadersMiddleware``, which only a real ``uvicorn.Config`` adds, so
those tests run a real ``cardtable serve``; the per-address keys are checked in process, the TCP peer being set by
:class:`PeerFromHeader` (a test stand-in for the socket's address, which only ``127.0.0.1`` can be here)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from cardtable.server.core.addresses import address_key, client_address, trusted_networks
from cardtable.server.core.settings import Settings, settings_from_env
from cardtable.server.edge.app import create_app, uvicorn_config
from cardtable.server.edge.guard import SECURITY_HEADERS
from cardtable.server.players import accounts
from cardtable.server.players.accounts import MAX_FAILURES_PER_ADDRESS
from services import start_server

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.usefixtures("cheap_hashes")]

SMALL = {"game": "anemone", "options": {"players": 2}}
PASSWORD = "correct horse battery"


# -- the key of an address ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("host", "key"), [
    ("203.0.113.7", "203.0.113.7"),
    ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"),
    ("2001:DB8:1:2::1", "2001:db8:1:2::/64"),
    ("::ffff:203.0.113.7", "203.0.113.7"),  # an IPv4 client of a dual-stack socket is that IPv4 address
    ("fe80::1%eth0", "fe80::/64"),
    ("testclient", "testclient"),  # not an IP address (a Unix socket, a test client): itself
    (None, "?"),
    ("", "?"),
])
def test_address_key(host: str | None, key: str) -> None:
    assert address_key(host) == key


def test_client_address_of_a_scope_and_a_request() -> None:
    from starlette.requests import Request

    scope: dict[str, Any] = {"type": "http", "client": ("2001:db8::5", 4000), "headers": []}
    assert client_address(scope) == "2001:db8::/64" == client_address(Request(scope))
    assert client_address({"type": "http", "headers": []}) == "?"


def test_trusted_networks_are_addresses_or_networks() -> None:
    assert trusted_networks("") == []
    assert [str(n) for n in trusted_networks(" 127.0.0.1 , ::1,10.0.0.0/8")] == ["127.0.0.1/32", "::1/128", "10.0.0.0/8"]
    for bad in ("*", "localhost", "10.0.0.1/33", "127.0.0.1,,"):
        with pytest.raises(ValueError, match="forwarded_allow_ips"):
            trusted_networks(bad)


def test_forwarded_allow_ips_is_a_string_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().forwarded_allow_ips == ""
    monkeypatch.setenv("CARDTABLE_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
    assert settings_from_env().forwarded_allow_ips == "127.0.0.1,::1"
    assert settings_from_env(forwarded_allow_ips="10.1.2.3").forwarded_allow_ips == "10.1.2.3"


def test_serve_refuses_a_proxy_that_is_not_an_address() -> None:
    from typer.testing import CliRunner

    from cardtable.cli import app

    result = CliRunner().invoke(app, ["serve", "--forwarded-allow-ips", "*", "--db", "sqlite+aiosqlite:///:memory:"])
    assert result.exit_code == 2 and "forwarded_allow_ips: '*'" in result.output


def test_uvicorn_trusts_no_proxy_unless_told() -> None:
    """uvicorn's own default trusts ``X-Forwarded-*`` from 127.0.0.1 (and ``FORWARDED_ALLOW_IPS``)."""
    app = create_app("sqlite+aiosqlite:///:memory:", Settings())
    assert uvicorn_config(app, "127.0.0.1", 0, Settings()).proxy_headers is False
    told = uvicorn_config(app, "127.0.0.1", 0, Settings(forwarded_allow_ips="10.0.0.2, 10.1.0.0/16"))
    assert told.proxy_headers is True and told.forwarded_allow_ips == ["10.0.0.2/32", "10.1.0.0/16"]


# -- every per-address limit groups an IPv6 /64 ------------------------------------------------------------

class PeerFromHeader:
    """ASGI wrapper for tests: the connection's TCP peer is the ``x-test-peer`` header (as the socket would give)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            peer = dict(scope["headers"]).get(b"x-test-peer")
            if peer is not None:
                scope["client"] = (peer.decode(), 50000)
        await self.app(scope, receive, send)


@pytest.fixture
def edge(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(create_burst=2, creates_per_minute=1, lobby_read_burst=3, lobby_reads_per_second=0.01,
                        max_sockets_per_address=2)
    with TestClient(PeerFromHeader(create_app(f"sqlite+aiosqlite:///{tmp_path / 'edge.db'}", settings))) as client:
        yield client


def peer(host: str) -> dict[str, str]:
    return {"x-test-peer": host, "Origin": "http://testserver"}


def test_table_creation_is_limited_per_ipv6_slash_64(edge: TestClient) -> None:
    a, b, other = peer("2001:db8::1"), peer("2001:db8::ffff:2"), peer("2001:db8:0:1::1")
    assert [edge.post("/api/tables", json=SMALL, headers=h).status_code for h in (a, b)] == [201, 201]
    refused = edge.post("/api/tables", json=SMALL, headers=peer("2001:db8::3"))
    assert refused.status_code == 429 and refused.json()["code"] == "table.create_limit"
    assert edge.post("/api/play", json={"game": "anemone"}, headers=a).status_code == 429  # Play now counts too
    assert edge.post("/api/tables", json=SMALL, headers=other).status_code == 201  # the next /64 is another


def test_lobby_reads_are_limited_per_ipv6_slash_64(edge: TestClient) -> None:
    codes = [edge.get("/api/tables", headers=peer(f"2001:db8::{i}")).status_code for i in range(1, 5)]
    assert codes == [200, 200, 200, 429]
    assert edge.get("/api/tables", headers=peer("2001:db8:0:1::1")).status_code == 200


def test_sockets_are_limited_per_ipv6_slash_64(edge: TestClient) -> None:
    tid = edge.post("/api/tables", json=SMALL, headers=peer("198.51.100.1")).json()["table"]["id"]
    with edge.websocket_connect(f"/ws/tables/{tid}", headers=peer("2001:db8::1")), \
            edge.websocket_connect(f"/ws/tables/{tid}", headers=peer("2001:db8::2")):
        with edge.websocket_connect(f"/ws/tables/{tid}", headers=peer("2001:db8::3")) as third:
            message = third.receive_json()
            assert message["type"] == "error" and message["code"] == "connection.server_limit"
            with pytest.raises(WebSocketDisconnect):
                third.receive_json()
        with edge.websocket_connect(f"/ws/tables/{tid}", headers=peer("2001:db8:0:1::1")) as elsewhere:
            elsewhere.send_json({"type": "hello"})
            assert elsewhere.receive_json()["type"] != "error"


def test_failed_sign_ins_are_limited_per_ipv6_slash_64(edge: TestClient) -> None:
    """Each guess from another address of one /64: refused within :data:`MAX_FAILURES_PER_ADDRESS` (or sooner,
    should another per-address sign-in limit come first), while another /64 is still heard."""
    codes = [edge.post("/api/session", json={"name": f"nobody{i}", "password": "guess guess"},
                       headers=peer(f"2001:db8::{i + 1:x}")).status_code for i in range(MAX_FAILURES_PER_ADDRESS + 1)]
    assert codes[0] == 401 and codes[-1] == 429 and set(codes) == {401, 429}
    other = edge.post("/api/session", json={"name": "nobody", "password": "guess"}, headers=peer("2001:db8:0:1::1"))
    assert other.status_code == 401


def test_sign_ups_are_limited_per_ipv6_slash_64(edge: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(accounts, "MAX_SIGN_UPS_PER_ADDRESS", 2)
    made = [edge.post("/api/accounts", json={"name": f"maker{i}", "password": PASSWORD},
                      headers=peer(f"2001:db8::{i + 1}")).status_code for i in range(3)]
    assert made == [201, 201, 429]


# -- the Origin check: scheme, host and port -----------------------------------------------------------------

@pytest.mark.parametrize(("origin", "same"), [
    ("http://testserver", True),
    ("http://testserver:80", True),
    ("HTTP://TestServer", True),
    ("https://testserver", False),  # another scheme is another site
    ("http://testserver:8080", False),
    ("http://testserver.evil.example", False),
    ("http://evil.example/testserver", False),
    ("null", False),
    ("http://user@testserver", False),
    ("testserver", False),
])
def test_origin_compares_scheme_host_and_port(edge: TestClient, origin: str, same: bool) -> None:
    response = edge.post("/api/accounts", json={"name": "olive", "password": PASSWORD},
                         headers={"x-test-peer": "198.51.100.9", "Origin": origin})
    assert response.status_code == (201 if same else 403), response.text
    if not same:
        assert response.json()["code"] == "account.cross_origin"


def test_https_origin_matches_an_https_request(edge: TestClient) -> None:
    response = edge.post("https://testserver/api/accounts", json={"name": "tls", "password": PASSWORD},
                         headers={"Origin": "https://testserver"})
    assert response.status_code == 201
    assert "secure" in [p.strip().lower() for p in response.headers["set-cookie"].split(";")]
    signed_out = edge.delete("https://testserver/api/session", headers={"Origin": "https://testserver"})
    assert "secure" in [p.strip().lower() for p in signed_out.headers["set-cookie"].split(";")]


# -- security headers on every response ----------------------------------------------------------------------

def test_security_headers_on_every_response(edge: TestClient) -> None:
    responses = [edge.get("/"), edge.get("/js/main.js"), edge.get("/api/games"), edge.get("/no/such/page"),
                 edge.get("/api/tables/nope"), edge.post("/api/tables", content=b"{", headers={
                     "content-type": "application/json", "x-test-peer": "198.51.100.2"}),
                 edge.post("/api/tables", content=b"x" * 70_000, headers={"content-type": "application/json"})]
    assert [r.status_code for r in responses] == [200, 200, 200, 404, 404, 422, 413]
    for response in responses:
        for name, value in SECURITY_HEADERS:
            assert response.headers.get(name.decode()) == value.decode(), (response.url, name)
    csp = dict(SECURITY_HEADERS)[b"content-security-policy"].decode()
    assert "script-src 'self';" in csp and "frame-ancestors 'none'" in csp and "unsafe" not in csp
    assert responses[0].headers["x-frame-options"] == "DENY"
    assert responses[0].headers["x-content-type-options"] == "nosniff"


def test_the_api_docs_page_keeps_working(edge: TestClient) -> None:
    """``/docs`` loads Swagger UI from its CDN with an inline script: its own, looser policy, still no framing."""
    page = edge.get("/docs")
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "https://cdn.jsdelivr.net" in csp and "frame-ancestors 'none'" in csp
    assert page.headers["x-frame-options"] == "DENY"


# -- forwarded headers: a real server ------------------------------------------------------------------------

def _secure(response: httpx.Response) -> bool:
    return "secure" in [p.strip().lower() for p in response.headers["set-cookie"].split(";")]


@pytest.mark.slow  # a real server process
def test_forwarded_headers_are_ignored_by_default(tmp_path: Path) -> None:
    """Without ``--forwarded-allow-ips`` a client on 127.0.0.1 cannot pick its address or scheme (uvicorn's own
    default believed both from 127.0.0.1: 25 of 25 creations past the burst)."""
    server = start_server(f"sqlite+aiosqlite:///{tmp_path / 'plain.db'}", options=["--create-burst", "2"],
                          log=tmp_path / "serve.log")
    try:
        with httpx.Client(base_url=server.base, timeout=10) as http:
            codes = [http.post("/api/tables", json=SMALL, headers={"X-Forwarded-For": f"203.0.113.{i}"}).status_code
                     for i in range(3)]
            assert codes == [201, 201, 429]
            made = http.post("/api/accounts", json={"name": "plain", "password": PASSWORD},
                             headers={"X-Forwarded-Proto": "https", "Origin": server.base})
            assert made.status_code == 201 and not _secure(made)
    finally:
        server.stop()


@pytest.mark.slow  # a real server process
def test_forwarded_headers_from_a_trusted_proxy(tmp_path: Path) -> None:
    """With ``--forwarded-allow-ips 127.0.0.1`` the proxy's ``X-Forwarded-For`` is the client's address (an IPv6
    one grouped by /64) and its ``X-Forwarded-Proto: https`` makes the cookie ``Secure`` and the https Origin ours;
    the proxy's own connections are not capped per address (every client comes through them)."""
    server = start_server(f"sqlite+aiosqlite:///{tmp_path / 'proxied.db'}",
                          options=["--forwarded-allow-ips", "127.0.0.1", "--create-burst", "2",
                                   "--max-connections-per-address", "2"], log=tmp_path / "serve.log")
    try:
        with httpx.Client(base_url=server.base, timeout=10) as http:
            def create(client: str) -> int:
                return http.post("/api/tables", json=SMALL, headers={"X-Forwarded-For": client}).status_code

            assert [create("2001:db8::1"), create("2001:db8::2"), create("2001:db8::3")] == [201, 201, 429]
            assert create("203.0.113.9") == 201  # another client behind the same proxy
            tls = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.10", "Origin": "https://" + server.base.split("//")[1]}
            made = http.post("/api/accounts", json={"name": "proxied", "password": PASSWORD}, headers=tls)
            assert made.status_code == 201 and _secure(made)
            plain = http.post("/api/accounts", json={"name": "plainer", "password": PASSWORD},
                              headers={"Origin": "https://" + server.base.split("//")[1]})
            assert plain.status_code == 403  # an https page's request that reached us as http: not ours
        clients = [httpx.Client(base_url=server.base, timeout=10) for _ in range(4)]
        try:
            assert [c.get("/api/games").status_code for c in clients] == [200] * 4  # 4 open connections > 2
        finally:
            for c in clients:
                c.close()
    finally:
        server.stop()
