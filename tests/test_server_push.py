"""Web Push (cardtable.server.players.push and push_routes): a browser subscribes through the API, ``notify_turn``
sends "your turn" to a push service the test runs itself (a local HTTP server that records what it receives), and
the test reads it as the browser would: it decrypts the body with the subscription's private key (RFC 8291,
aes128gcm) and verifies the VAPID signature (RFC 8292) against the key the server serves. Expired subscriptions
(404, 410) are dropped, others kept; insecure endpoints and bad keys are refused; switching off deletes."""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import http_ece
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from sqlalchemy import select
from starlette.testclient import TestClient

from cardtable.server.players.push import ENDPOINT_MAX, notify_turn
from cardtable.server.storage import players_schema as ps
from clients import MakeClient, as_account, fast_settings, make_table, query
from polling import wait_for
from test_server_turn_clock import move_once, play, to_move, turn_settings

ORIGIN = {"Origin": "http://testserver"}
CONTACT = "mailto:ops@cardtable.example"

pytestmark = pytest.mark.usefixtures("cheap_hashes")  # conftest.py: real Argon2id, small parameters


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# -- the push service ---------------------------------------------------------------------------------------


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class PushService:
    """A local HTTP server playing a push service: records every POST and answers ``answers[path]`` (201 when
    not named)."""

    server: ThreadingHTTPServer
    received: list[Received] = field(default_factory=list)
    answers: dict[str, int] = field(default_factory=dict)

    def endpoint(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"


@pytest.fixture
def push_service() -> Iterator[PushService]:
    service: PushService

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            service.received.append(
                Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            status = service.answers.get(self.path, 201)
            self.send_response(status)
            if 300 <= status < 400:
                self.send_header("Location", "/redirected")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    service = PushService(ThreadingHTTPServer(("127.0.0.1", 0), Handler))
    thread = threading.Thread(target=service.server.serve_forever, daemon=True)
    thread.start()
    yield service
    service.server.shutdown()
    service.server.server_close()
    thread.join()


# -- a browser ----------------------------------------------------------------------------------------------


@dataclass
class Browser:
    """What a browser keeps of its push subscription: its P-256 key pair and 16-byte auth secret."""

    endpoint: str
    private_key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    auth: bytes = field(default_factory=lambda: os.urandom(16))

    def to_json(self, lang: str = "en") -> dict[str, Any]:
        """``PushSubscription.toJSON()`` with ``lang``."""
        p256dh = self.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {
            "endpoint": self.endpoint,
            "expirationTime": None,
            "keys": {"p256dh": b64url(p256dh), "auth": b64url(self.auth)},
            "lang": lang,
        }

    def read(self, received: Received) -> dict[str, Any]:
        """Decrypt a push message's body (RFC 8291, aes128gcm) and parse its JSON."""
        plain = http_ece.decrypt(
            received.body, private_key=self.private_key, auth_secret=self.auth, version="aes128gcm"
        )
        message: dict[str, Any] = json.loads(plain)
        return message


# -- helpers ------------------------------------------------------------------------------------------------


@pytest.fixture
def client(make_client: MakeClient) -> TestClient:
    return make_client(fast_settings(push_allow_insecure=1, push_contact=CONTACT))


def sign_up(client: TestClient, name: str) -> int:
    made = client.post(
        "/api/accounts", json={"name": name, "password": "correct horse battery"}, headers=ORIGIN
    )
    assert made.status_code == 201, made.text
    return int(made.json()["id"])


def notify(client: TestClient, account_id: int, table_id: str = "T42", game: str = "anemone") -> int:
    app: Any = client.app
    sent: int = client.portal.call(
        notify_turn,
        app.state.store,
        app.state.settings,  # type: ignore[union-attr]
        account_id,
        table_id,
        game,
    )
    return sent


def endpoints_of(client: TestClient, account_id: int) -> list[str]:
    s = ps.push_subscriptions
    return sorted(r.endpoint for r in query(client, select(s.c.endpoint).where(s.c.account_id == account_id)))


def verify_vapid(authorization: str, served_key: str) -> dict[str, Any]:
    """Check ``vapid t=JWT,k=KEY`` (RFC 8292): ``k`` is the served key and the JWT's ES256 signature verifies
    against it; its claims."""
    scheme, _, rest = authorization.partition(" ")
    assert scheme == "vapid"
    parts = dict(item.split("=", 1) for item in rest.split(","))
    assert parts["k"] == served_key
    signed, _, signature = parts["t"].rpartition(".")
    raw = unb64url(signature)
    assert len(raw) == 64
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(served_key))
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    public.verify(der, signed.encode(), ec.ECDSA(hashes.SHA256()))  # raises InvalidSignature
    header = json.loads(unb64url(signed.split(".")[0]))
    assert header["alg"] == "ES256"
    claims: dict[str, Any] = json.loads(unb64url(signed.split(".")[1]))
    return claims


# -- tests ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lang", "words", "game_name"),
    [
        ("en", "Your turn at table T42", "Enemy Anemone"),
        ("ko-KR", "T42 테이블에서 내 차례입니다", "에너미 아네모네"),
        ("ja", "テーブル T42 であなたの番です", "エネミー・アネモネ"),
    ],
)
def test_your_turn_arrives_encrypted_for_the_browser_in_its_language(
    client: TestClient, push_service: PushService, lang: str, words: str, game_name: str
) -> None:
    account = sign_up(client, "ana")
    browser = Browser(push_service.endpoint("/push/ana-phone"))
    made = client.post("/api/me/push", json=browser.to_json(lang), headers=ORIGIN)
    assert made.status_code == 201, made.text
    assert made.json()["lang"] == lang[:2]

    assert notify(client, account) == 1
    [received] = push_service.received
    assert received.path == "/push/ana-phone"
    assert received.headers["content-encoding"] == "aes128gcm"
    assert received.headers["ttl"] == "86400"
    assert received.headers["urgency"] == "normal"
    message = browser.read(received)
    assert message["title"] == words
    assert game_name in message["body"]
    assert message["url"] == "/?table=T42"

    key = client.get("/api/push/key").json()["key"]
    claims = verify_vapid(received.headers["authorization"], key)
    assert claims["aud"] == push_service.endpoint("")
    assert claims["sub"] == CONTACT


def test_another_browser_cannot_read_the_message(client: TestClient, push_service: PushService) -> None:
    account = sign_up(client, "bo")
    browser = Browser(push_service.endpoint("/push/bo"))
    assert client.post("/api/me/push", json=browser.to_json(), headers=ORIGIN).status_code == 201
    assert notify(client, account) == 1
    stranger = Browser(browser.endpoint, auth=browser.auth)  # the same auth secret, another key pair
    with pytest.raises(Exception):  # noqa: B017 (http_ece raises cryptography's InvalidTag)
        stranger.read(push_service.received[0])


def test_the_vapid_key_is_made_once_and_kept(make_client: MakeClient) -> None:
    first = make_client(fast_settings())
    key = first.get("/api/push/key").json()["key"]
    assert len(unb64url(key)) == 65 and unb64url(key)[0] == 4
    assert first.get("/api/push/key").json()["key"] == key
    first.__exit__(None, None, None)
    again = make_client(fast_settings())  # the same database: a restart
    assert again.get("/api/push/key").json()["key"] == key


def test_gone_subscriptions_are_dropped_and_failing_ones_kept(
    make_client: MakeClient, db_url: str, push_service: PushService
) -> None:
    client = make_client(fast_settings(push_allow_insecure=1), db_url)
    account = sign_up(client, "cy")
    paths = {"/gone": 410, "/unknown": 404, "/broken": 500, "/fine": 201}
    push_service.answers.update(paths)
    for path in paths:
        made = client.post(
            "/api/me/push", json=Browser(push_service.endpoint(path)).to_json(), headers=ORIGIN
        )
        assert made.status_code == 201, made.text

    assert notify(client, account) == 1
    assert sorted(r.path for r in push_service.received) == sorted(paths)
    assert endpoints_of(client, account) == sorted(push_service.endpoint(p) for p in ("/broken", "/fine"))


def test_a_redirect_is_not_followed(client: TestClient, push_service: PushService) -> None:
    account = sign_up(client, "lou")
    browser = Browser(push_service.endpoint("/moved"))
    push_service.answers["/moved"] = 307
    assert client.post("/api/me/push", json=browser.to_json(), headers=ORIGIN).status_code == 201
    assert notify(client, account) == 0
    assert [r.path for r in push_service.received] == ["/moved"]
    assert endpoints_of(client, account) == [browser.endpoint]


def test_an_unreachable_push_service_is_logged_not_raised(
    client: TestClient, push_service: PushService, caplog: pytest.LogCaptureFixture
) -> None:
    account = sign_up(client, "dee")
    port = push_service.server.server_address[1]
    push_service.server.shutdown()
    push_service.server.server_close()  # nothing listens on the endpoint's port any more
    browser = Browser(f"http://127.0.0.1:{port}/push/dee")
    assert client.post("/api/me/push", json=browser.to_json(), headers=ORIGIN).status_code == 201
    assert notify(client, account) == 0
    assert "push to 127.0.0.1" in caplog.text
    assert endpoints_of(client, account) == [browser.endpoint]


@pytest.mark.parametrize(
    ("endpoint", "code"),
    [
        ("http://127.0.0.1:9/push", "push.endpoint_insecure"),
        ("http://push.example.com/x", "push.endpoint_insecure"),
        ("https://127.0.0.1/push", "push.endpoint_invalid"),
        ("https://10.1.2.3/push", "push.endpoint_invalid"),
        ("https://localhost/push", "push.endpoint_invalid"),
        ("ftp://push.example.com/x", "push.endpoint_insecure"),
        ("not a url", "push.endpoint_invalid"),
        ("https://push.example.com/" + "x" * ENDPOINT_MAX, "push.endpoint_invalid"),
    ],
)
def test_endpoints_off_https_push_services_are_refused(
    make_client: MakeClient, endpoint: str, code: str
) -> None:
    client = make_client(fast_settings())  # push_allow_insecure off, the default
    account = sign_up(client, "eve")
    refused = client.post("/api/me/push", json=Browser(endpoint).to_json(), headers=ORIGIN)
    assert refused.status_code == 422
    assert refused.json()["code"] == code
    assert endpoints_of(client, account) == []


def test_https_push_service_is_accepted_and_bad_keys_refused(make_client: MakeClient) -> None:
    client = make_client(fast_settings())
    account = sign_up(client, "fay")
    good = Browser("https://fcm.googleapis.com/fcm/send/abc:def")
    bad_point = good.to_json()
    bad_point["keys"]["p256dh"] = b64url(b"\x04" + bytes(64))  # not on the curve
    short_auth = good.to_json()
    short_auth["keys"]["auth"] = b64url(os.urandom(8))
    for body, field_name in ((bad_point, "p256dh"), (short_auth, "auth")):
        refused = client.post("/api/me/push", json=body, headers=ORIGIN)
        assert refused.status_code == 422
        assert refused.json()["code"] == "push.keys_invalid"
        assert refused.json()["params"] == {"field": field_name}
    assert endpoints_of(client, account) == []
    assert client.post("/api/me/push", json=good.to_json(), headers=ORIGIN).status_code == 201
    assert endpoints_of(client, account) == [good.endpoint]


def test_subscribing_needs_a_signed_in_player_on_this_site(
    client: TestClient, push_service: PushService
) -> None:
    body = Browser(push_service.endpoint("/p")).to_json()
    assert client.post("/api/me/push", json=body, headers=ORIGIN).json()["code"] == "account.not_signed_in"
    sign_up(client, "gus")
    crossed = client.post("/api/me/push", json=body, headers={"Origin": "https://evil.example"})
    assert crossed.status_code == 403
    assert crossed.json()["code"] == "account.cross_origin"
    assert client.delete("/api/me/push", headers={"Origin": "https://evil.example"}).status_code == 403


def test_switching_off_deletes_subscriptions(client: TestClient, push_service: PushService) -> None:
    account = sign_up(client, "hal")
    phone, laptop = Browser(push_service.endpoint("/phone")), Browser(push_service.endpoint("/laptop"))
    for browser in (phone, laptop):
        assert client.post("/api/me/push", json=browser.to_json(), headers=ORIGIN).status_code == 201

    off = client.delete("/api/me/push", params={"endpoint": phone.endpoint}, headers=ORIGIN)
    assert off.json() == {"deleted": 1}
    assert notify(client, account) == 1
    assert [r.path for r in push_service.received] == ["/laptop"]

    assert client.delete("/api/me/push", headers=ORIGIN).json() == {"deleted": 1}
    assert notify(client, account) == 0
    assert len(push_service.received) == 1


def test_an_endpoint_belongs_to_the_last_account_that_subscribed_it(
    client: TestClient, push_service: PushService
) -> None:
    shared = Browser(push_service.endpoint("/shared-laptop"))
    first = sign_up(client, "ida")
    assert client.post("/api/me/push", json=shared.to_json(), headers=ORIGIN).status_code == 201
    client.cookies.clear()
    second = sign_up(client, "jo")
    assert client.post("/api/me/push", json=shared.to_json("ja"), headers=ORIGIN).status_code == 201
    assert endpoints_of(client, first) == []
    assert notify(client, first) == 0
    assert notify(client, second) == 1
    assert shared.read(push_service.received[0])["url"] == "/?table=T42"


def test_deleting_the_account_deletes_its_subscriptions(
    client: TestClient, push_service: PushService
) -> None:
    account = sign_up(client, "kim")
    assert (
        client.post(
            "/api/me/push", json=Browser(push_service.endpoint("/k")).to_json(), headers=ORIGIN
        ).status_code
        == 201
    )
    assert client.delete("/api/me", headers=ORIGIN).status_code == 204
    assert endpoints_of(client, account) == []
    assert notify(client, account) == 0


def test_your_turn_is_pushed_when_the_other_player_moved_and_never_while_you_are_there(
    make_client: MakeClient, push_service: PushService
) -> None:
    """The end to end path: ana moves over a WebSocket, the bots play, and bo (subscribed, not connected) gets a
    "your turn" message he can decrypt; once bo is connected when his turn comes, nothing is pushed to him."""
    client = make_client(turn_settings(push_allow_insecure=1, push_contact=CONTACT))
    ana_browser = Browser(push_service.endpoint("/push/ana"))
    bo_browser = Browser(push_service.endpoint("/push/bo"))
    sign_up(client, "ana")
    ana = str(client.cookies.get("ct_session"))
    assert client.post("/api/me/push", json=ana_browser.to_json(), headers=ORIGIN).status_code == 201
    client.cookies.clear()
    sign_up(client, "bo")
    bo = str(client.cookies.get("ct_session"))
    assert client.post("/api/me/push", json=bo_browser.to_json(), headers=ORIGIN).status_code == 201
    bots = [{"kind": "bot", "bot": "heuristic"}] * 2
    table_id, ana_token = make_table(
        client, ana, {"start_s": 600, "per_move_s": 300}, [{"kind": "open"}, *bots, {"kind": "open"}]
    )
    as_account(client, bo)
    joined = client.post(f"/api/tables/{table_id}/join", headers=ORIGIN, json={})
    assert joined.status_code == 200, joined.text
    bo_seat, bo_token = joined.json()["seat"], joined.json()["token"]
    assert bo_seat == 3  # ana leads (seat 0), the two bots play, then bo
    as_account(client, ana)
    started = client.post(f"/api/tables/{table_id}/start", headers=ORIGIN, json={"token": ana_token})
    assert started.status_code == 200, started.text

    def pushed(path: str) -> list[Received]:
        return [r for r in list(push_service.received) if r.path == path]

    # Ana's turn (she is away: told so); nothing for bo before ana has moved.
    wait_for(lambda: to_move(client, table_id) == 0, what="ana's turn")
    wait_for(lambda: pushed("/push/ana"), what="ana told of her turn")
    assert pushed("/push/bo") == []
    move_once(client, table_id, ana_token)
    wait_for(lambda: to_move(client, table_id) == bo_seat, what="bo's turn after the bots")
    [received] = wait_for(lambda: pushed("/push/bo"), what="bo told of his turn")
    message = bo_browser.read(received)
    assert message["title"] == f"Your turn at table {table_id}"
    assert "Enemy Anemone" in message["body"]
    assert message["url"] == f"/?table={table_id}"
    assert received.headers["content-encoding"] == "aes128gcm"

    # Bo comes and stays: when his turn comes again he is there, and nothing is pushed to him. Ana, away, is
    # told of each of her turns: the one after bo's next turn shows that bo's turn was not pushed.
    ana_turns = 1
    bo_turns_while_there = 0
    with client.websocket_connect(f"/ws/tables/{table_id}") as ws:
        ws.send_json({"type": "hello", "token": bo_token})
        play(ws, moves=1)  # the turn he was told of
        while True:
            [seat] = wait_for(
                lambda: [s for s in [to_move(client, table_id)] if s is not None], what="a person's turn"
            )
            if seat == bo_seat:
                bo_turns_while_there += 1
                play(ws, moves=1)
                continue
            ana_turns += 1
            wait_for(
                lambda n=ana_turns: len(pushed("/push/ana")) == n, what=f"ana told of her turn {ana_turns}"
            )
            if bo_turns_while_there:
                break
            move_once(client, table_id, ana_token)
    assert pushed("/push/bo") == [received]
    assert ana_browser.read(pushed("/push/ana")[-1])["url"] == f"/?table={table_id}"
