"""Accounts and sessions (cardtable.server.accounts), on SQLite and PostgreSQL: sign up, in, out, delete, the
sign-in limit, names in case and width variants, cookie flags, cross-origin refusals, and no password or hash in
any answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from argon2 import PasswordHasher
from starlette.testclient import TestClient

from cardtable.server import accounts
from cardtable.server.accounts import (
    COOKIE,
    MAX_FAILURES_PER_ADDRESS,
    MAX_FAILURES_PER_NAME,
    MAX_SIGN_UPS_PER_ADDRESS,
)
from cardtable.server.app import create_app
from cardtable.server.table import Settings

ORIGIN = {"Origin": "http://testserver"}
PASSWORD = "correct horse battery"


@pytest.fixture(autouse=True)
def cheap_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real Argon2id, with small parameters so that the suite stays fast on a 2-core machine."""
    monkeypatch.setattr(accounts, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))


@pytest.fixture
def client(db_url: str) -> Iterator[TestClient]:
    """A server on SQLite, then on PostgreSQL."""
    settings = Settings(hand_pause_s=0.05, bot_pace=0.05, anemone_bot_delay_ms=0)
    with TestClient(create_app(db_url, settings)) as c:
        yield c


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[TestClient]:
    """A server on SQLite only, for the many name cases (the database plays no part in them)."""
    with TestClient(create_app(f"sqlite+aiosqlite:///{tmp_path / 'names.db'}")) as c:
        yield c


def sign_up(client: TestClient, name: str, password: str = PASSWORD) -> Any:
    return client.post("/api/accounts", json={"name": name, "password": password}, headers=ORIGIN)


def sign_in(client: TestClient, name: str, password: str = PASSWORD) -> Any:
    return client.post("/api/session", json={"name": name, "password": password}, headers=ORIGIN)


def assert_no_secret(response: Any, password: str = PASSWORD) -> None:
    text = response.text
    assert password not in text and "argon2" not in text and "password" not in text.lower()


def test_sign_up_in_out_and_me(client: TestClient) -> None:
    made = sign_up(client, "Ana")
    assert made.status_code == 201 and made.json()["name"] == "Ana"
    assert_no_secret(made)
    me = client.get("/api/me")
    assert me.status_code == 200 and me.json() == made.json()
    assert client.get("/api/session").json() == {"account": made.json()}
    assert_no_secret(me)
    out = client.delete("/api/session", headers=ORIGIN)
    assert out.status_code == 204
    assert client.get("/api/me").status_code == 401
    assert client.get("/api/session").json() == {"account": None}
    again = sign_in(client, "ana")
    assert again.status_code == 200 and again.json() == made.json()
    assert_no_secret(again)
    assert client.get("/api/me").json()["name"] == "Ana"


def test_old_session_is_dead_after_sign_out(client: TestClient) -> None:
    sign_up(client, "bo")
    cookie = client.cookies[COOKIE]
    client.delete("/api/session", headers=ORIGIN)
    client.cookies.set(COOKIE, cookie)
    assert client.get("/api/me").json()["code"] == "account.not_signed_in"


def test_wrong_password_and_unknown_name_get_the_same_answer(client: TestClient) -> None:
    sign_up(client, "cy")
    client.delete("/api/session", headers=ORIGIN)
    wrong = sign_in(client, "cy", "not the password")
    unknown = sign_in(client, "nobody-here", "not the password")
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json() == unknown.json() == {"detail": "wrong name or password", "code": "account.bad_credentials",
                                              "params": {}}
    assert COOKIE not in client.cookies
    assert client.get("/api/me").status_code == 401


def test_sign_in_attempts_are_limited_per_name(client: TestClient) -> None:
    sign_up(client, "dee")
    client.delete("/api/session", headers=ORIGIN)
    for _ in range(MAX_FAILURES_PER_NAME):
        assert sign_in(client, "dee", "guess guess").status_code == 401
    limited = sign_in(client, "DEE")  # even the right password waits
    assert limited.status_code == 429 and limited.json()["code"] == "account.rate_limited"
    assert int(limited.headers["Retry-After"]) == limited.json()["params"]["retry_after_s"] > 0
    assert client.get("/api/me").status_code == 401


def test_sign_in_attempts_are_limited_per_address(client: TestClient) -> None:
    sign_up(client, "eve")
    client.delete("/api/session", headers=ORIGIN)
    for i in range(MAX_FAILURES_PER_ADDRESS):
        assert sign_in(client, f"someone{i}", "guess guess").status_code == 401
    assert sign_in(client, "eve").status_code == 429


def test_sign_ups_are_limited_per_address(lite: TestClient) -> None:
    for i in range(MAX_SIGN_UPS_PER_ADDRESS):
        assert sign_up(lite, f"maker{i}").status_code == 201
    limited = sign_up(lite, "one-more")
    assert limited.status_code == 429 and limited.json()["code"] == "account.rate_limited"
    assert sign_in(lite, "maker0").status_code == 200  # signing in is not limited by it


@pytest.mark.parametrize("variant", ["ANA", "ａｎａ", "Ａna", " ana "])
def test_names_are_unique_across_case_and_width(client: TestClient, variant: str) -> None:
    assert sign_up(client, "ana").status_code == 201
    taken = sign_up(client, variant)
    assert taken.status_code == 409 and taken.json()["code"] == "account.name_taken"
    client.delete("/api/session", headers=ORIGIN)
    assert sign_in(client, variant).json()["name"] == "ana"


@pytest.mark.parametrize("name", ["김민준", "さくら", "Ünïcödé", "a", "x" * 24, "mary-jane o'neil"])
def test_names_people_use_are_welcome(lite: TestClient, name: str) -> None:
    made = sign_up(lite, name)
    assert made.status_code == 201 and made.json()["name"] == name
    assert lite.get(f"/api/players/{name}").json()["name"] == name


@pytest.mark.parametrize("name", ["", "   ", "x" * 25, "a/b", "<b>", "tab\there", "two  spaces", "greedy:hard",
                                  "Heuristic"])
def test_bad_or_reserved_names_are_refused(lite: TestClient, name: str) -> None:
    response = sign_up(lite, name)
    assert response.status_code in (409, 422)
    if response.status_code == 409:
        assert response.json()["code"] == "account.name_taken"
    assert lite.get("/api/me").status_code == 401


def test_short_password_is_refused(client: TestClient) -> None:
    response = sign_up(client, "fay", "short")
    assert response.status_code == 422 and response.json()["code"] == "account.password_invalid"


def test_cookie_flags(client: TestClient) -> None:
    response = sign_up(client, "gus")
    header = response.headers["set-cookie"]
    parts = [p.strip().lower() for p in header.split(";")]
    assert parts[0].startswith(f"{COOKIE}=")
    assert "httponly" in parts and "samesite=lax" in parts and "path=/" in parts
    assert "secure" not in parts  # plain HTTP here
    client.cookies.clear()
    https = client.post("https://testserver/api/accounts", json={"name": "hal", "password": PASSWORD},
                        headers={"Origin": "https://testserver"})
    assert https.status_code == 201
    assert "secure" in [p.strip().lower() for p in https.headers["set-cookie"].split(";")]


def test_cross_origin_requests_with_the_cookie_are_refused(client: TestClient) -> None:
    sign_up(client, "ivy")
    evil = {"Origin": "http://evil.example"}
    for response in (client.delete("/api/me", headers=evil), client.delete("/api/session", headers=evil),
                     client.post("/api/session", json={"name": "ivy", "password": PASSWORD}, headers=evil),
                     client.delete("/api/me", headers={"Sec-Fetch-Site": "cross-site"})):
        assert response.status_code == 403, response.text
        assert response.json()["code"] == "account.cross_origin"
    assert client.get("/api/me").json()["name"] == "ivy"  # still signed in, still there
    # a table made from another site is a guest's: the cookie is not honoured there
    made = client.post("/api/tables", json={"game": "anemone", "options": {"players": 2}, "name": "x"}, headers=evil)
    assert made.status_code == 201 and made.json()["table"]["seats"][0]["name"] == "x"
    assert client.get("/api/me/seats").json() == []


def test_delete_account_frees_the_name(client: TestClient) -> None:
    sign_up(client, "jo")
    assert client.delete("/api/me", headers=ORIGIN).status_code == 204
    assert client.get("/api/me").status_code == 401
    assert sign_in(client, "jo").status_code == 401
    assert client.get("/api/players/jo").status_code == 404
    assert sign_up(client, "JO").status_code == 201


def test_signed_in_seat_comes_back_in_another_browser(client: TestClient) -> None:
    sign_up(client, "kim")
    made = client.post("/api/tables", json={"game": "anemone", "options": {"players": 2}, "name": "whatever"},
                       headers=ORIGIN).json()
    assert made["table"]["seats"][0]["name"] == "kim"
    client.cookies.clear()  # another browser: no cookie, no seat token
    assert client.get("/api/me/seats").status_code == 401
    sign_in(client, "kim")
    seats = client.get("/api/me/seats").json()
    assert [(s["table"]["id"], s["seat"], s["token"]) for s in seats] == [(made["table"]["id"], 0, made["token"])]
    kim = dict(client.cookies)
    client.cookies.clear()  # a guest takes the other seat
    started = client.post(f"/api/tables/{made['table']['id']}/join", json={"name": "guest"})
    assert started.status_code == 200
    assert started.json()["token"] != made["token"]
    client.cookies.update(kim)
    go = client.post(f"/api/tables/{made['table']['id']}/start", json={"token": seats[0]["token"]})
    assert go.status_code == 200, go.text
    # the guest's seat is theirs alone: never listed for the account
    assert [s["seat"] for s in client.get("/api/me/seats").json()] == [0]
