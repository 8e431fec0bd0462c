"""Accounts and sessions (cardtable.server.players.accounts), on SQLite and PostgreSQL: sign up, in, out, delete, the
sign-in limit, names in case and width variants, cookie flags, cross-origin refusals, and no password or hash in
any answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cardtable.server.core import limits
from cardtable.server.core.settings import Settings
from cardtable.server.edge.app import create_app
from cardtable.server.players import accounts, passwords, sessions
from cardtable.server.players.accounts import (
    MAX_FAILURES_PER_ADDRESS,
    MAX_FAILURES_PER_NAME,
    MAX_SIGN_UPS_PER_ADDRESS,
)
from cardtable.server.players.sessions import COOKIE
from clients import MakeClient

ORIGIN = {"Origin": "http://testserver"}
PASSWORD = "correct horse battery"

pytestmark = pytest.mark.usefixtures("cheap_hashes")  # conftest.py: real Argon2id, small parameters


@pytest.fixture
def client(db_client: TestClient) -> TestClient:
    """A server on SQLite, then on PostgreSQL (conftest.py)."""
    return db_client


@pytest.fixture
def lite(make_client: MakeClient) -> TestClient:
    """A server on SQLite only, for the many name cases (the database plays no part in them)."""
    return make_client()


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


# -- guards of the security code (issue 25): each test fails on a one-line bug planted in accounts.py ----------

class Clock:
    """A monotonic clock the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(lite: TestClient) -> Clock:
    """``lite``'s sign-in limiter, reading this clock."""
    clock = Clock()
    lite.app.state.sign_in_limiter = limits.MovingWindows(clock=clock)  # type: ignore[attr-defined]
    return clock


OTHER_SITES = [{"Origin": "http://evil.example"}, {"Origin": "http://testserver.evil.example"},
               {"Origin": "http://testserver:8080"}, {"Origin": "https://testserver"},
               {"Origin": "http://testserverx"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}]


@pytest.mark.parametrize("headers", OTHER_SITES, ids=lambda h: next(iter(h.values())))
def test_sign_up_and_sign_in_from_another_site_are_refused_even_without_a_cookie(lite: TestClient,
                                                                                 headers: dict[str, str]) -> None:
    """Login CSRF: another site must not sign a visitor (who has no cookie yet) in to the attacker's account."""
    assert sign_up(lite, "mia").status_code == 201
    lite.cookies.clear()
    for path, name in (("/api/accounts", "nia"), ("/api/session", "mia")):
        response = lite.post(path, json={"name": name, "password": PASSWORD}, headers=headers)
        assert response.status_code == 403, (path, response.text)
        assert response.json()["code"] == "account.cross_origin"
        assert "set-cookie" not in response.headers and COOKIE not in lite.cookies
    assert sign_in(lite, "nia").status_code == 401  # never made


@pytest.mark.parametrize("headers", [{}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"},
                                     {"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"}],
                         ids=["no-header", "same-origin", "typed", "origin"])
def test_sign_up_and_in_from_this_site_or_a_program_are_welcome(lite: TestClient, headers: dict[str, str]) -> None:
    made = lite.post("/api/accounts", json={"name": "ola", "password": PASSWORD}, headers=headers)
    assert made.status_code == 201, made.text
    lite.cookies.clear()
    again = lite.post("/api/session", json={"name": "ola", "password": PASSWORD}, headers=headers)
    assert again.status_code == 200 and COOKIE in lite.cookies
    assert lite.delete("/api/session", headers=headers).status_code == 204


def test_without_the_cookie_another_site_may_only_sign_nobody_out(lite: TestClient) -> None:
    """Sign-out and delete check the origin of requests that carry the cookie: without one there is nothing to
    protect, and sign-out answers 204 (delete 401)."""
    evil = {"Origin": "http://evil.example"}
    assert lite.delete("/api/session", headers=evil).status_code == 204
    assert lite.delete("/api/me", headers=evil).json()["code"] == "account.not_signed_in"


def test_a_session_lasts_30_days(lite: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import UTC, datetime, timedelta

    made = sign_up(lite, "pia")
    max_age = [p.strip() for p in made.headers["set-cookie"].split(";") if p.strip().lower().startswith("max-age")]
    assert max_age == [f"Max-Age={sessions.SESSION_DAYS * 86400}"] and sessions.SESSION_DAYS == 30

    def days_later(days: float) -> None:
        later = datetime.now(UTC) + timedelta(days=days)
        monkeypatch.setattr(sessions, "now_iso", lambda: later.strftime("%Y-%m-%dT%H:%M:%SZ"))

    days_later(29.9)
    assert lite.get("/api/me").json()["name"] == "pia"
    days_later(30.1)
    expired = lite.get("/api/me")
    assert expired.status_code == 401 and expired.json()["code"] == "account.not_signed_in"
    assert lite.get("/api/session").json() == {"account": None}
    assert lite.post("/api/tables", json={"game": "anemone", "options": {"players": 2}, "name": "guest"},
                     headers=ORIGIN).json()["table"]["seats"][0]["name"] == "guest"  # an expired seat is a guest's
    days_later(0.0)
    assert sign_in(lite, "pia").status_code == 200  # a new sign-in starts a new session
    days_later(29.9)
    assert lite.get("/api/me").json()["name"] == "pia"


def test_a_name_locked_from_an_address_waits_15_minutes(lite: TestClient, clock: Clock) -> None:
    sign_up(lite, "quinn")
    lite.cookies.clear()
    for _ in range(MAX_FAILURES_PER_NAME):
        assert sign_in(lite, "quinn", "guess guess").status_code == 401
        clock.now += 10.0  # the first failure was at 1000 s, the last at 1040 s
    locked = sign_in(lite, "quinn")
    assert locked.status_code == 429 and locked.json()["params"]["retry_after_s"] == 15 * 60 - 50
    clock.now = 1000.0 + 15 * 60 - 0.5  # 15 minutes less half a second after the first failure
    locked = sign_in(lite, "quinn")
    assert locked.status_code == 429 and locked.headers["Retry-After"] == "1"
    clock.now = 1000.0 + 15 * 60
    assert sign_in(lite, "quinn").status_code == 200  # the first failure has left the window


def test_an_address_locked_for_failures_over_many_names_waits_15_minutes(lite: TestClient, clock: Clock) -> None:
    sign_up(lite, "ruth")
    lite.cookies.clear()
    for i in range(MAX_FAILURES_PER_ADDRESS):
        assert sign_in(lite, f"nobody{i}", "guess guess").status_code == 401
    locked = sign_in(lite, "ruth")
    assert locked.status_code == 429 and locked.json()["params"]["retry_after_s"] == 15 * 60
    clock.now += 15 * 60 - 1
    assert sign_in(lite, "ruth").status_code == 429
    clock.now += 1
    assert sign_in(lite, "ruth").status_code == 200


def test_a_success_clears_that_names_failures_and_not_the_addresss(lite: TestClient, clock: Clock) -> None:
    sign_up(lite, "sam")
    lite.cookies.clear()
    for _ in range(MAX_FAILURES_PER_NAME - 1):
        assert sign_in(lite, "sam", "guess guess").status_code == 401
    assert sign_in(lite, "sam").status_code == 200  # clears sam's failures from this address
    for _ in range(MAX_FAILURES_PER_NAME - 1):
        assert sign_in(lite, "sam", "guess guess").status_code == 401
    assert sign_in(lite, "SAM").status_code == 200  # 8 failures in all, never 5 since the last success
    # an attacker's own account does not clear the address's failures over other names
    guesses = MAX_FAILURES_PER_ADDRESS - 2 * (MAX_FAILURES_PER_NAME - 1)
    for i in range(guesses):
        assert sign_in(lite, f"victim{i}", "guess guess").status_code == 401
    assert sign_in(lite, "sam").status_code == 429  # 20 failures from the address: even sam waits
    clock.now += 15 * 60
    assert sign_in(lite, "sam").status_code == 200


def test_failures_for_one_name_do_not_lock_another(lite: TestClient, clock: Clock) -> None:
    sign_up(lite, "tia")
    sign_up(lite, "uma")
    lite.cookies.clear()
    for _ in range(MAX_FAILURES_PER_NAME):
        assert sign_in(lite, "tia", "guess guess").status_code == 401
    assert sign_in(lite, "tia").status_code == 429
    assert sign_in(lite, "uma").status_code == 200


def test_successful_sign_ins_per_address_wait_out_the_window(tmp_path: Path) -> None:
    clock = Clock()
    with TestClient(create_app(f"sqlite+aiosqlite:///{tmp_path / 'ok.db'}", Settings(sign_ins_per_address=3))) as c:
        c.app.state.sign_in_limiter = limits.MovingWindows(clock=clock)  # type: ignore[attr-defined]
        sign_up(c, "vic")
        for _ in range(3):
            assert sign_in(c, "vic").status_code == 200
            clock.now += 100.0
        limited = sign_in(c, "vic")
        assert limited.status_code == 429 and limited.json()["params"]["retry_after_s"] == 15 * 60 - 300
        assert limited.headers["Retry-After"] == "600"
        assert sign_in(c, "vic", "guess guess").status_code == 429  # nor is a password checked meanwhile
        clock.now = 1000.0 + 15 * 60
        assert sign_in(c, "vic").status_code == 200


def test_sign_ups_per_address_wait_out_the_window(lite: TestClient, clock: Clock) -> None:
    for i in range(MAX_SIGN_UPS_PER_ADDRESS):
        assert sign_up(lite, f"maker{i}").status_code == 201
    limited = sign_up(lite, "late")
    assert limited.status_code == 429 and limited.json()["params"]["retry_after_s"] == 15 * 60
    assert limited.headers["Retry-After"] == "900"
    clock.now += 15 * 60
    assert sign_up(lite, "late").status_code == 201
    assert sign_in(lite, "maker3").status_code == 200  # sign-ups are not sign-in failures


def test_a_refused_sign_up_changes_nothing(lite: TestClient) -> None:
    assert sign_up(lite, "wes", "short").json()["code"] == "account.password_invalid"
    assert sign_up(lite, "wes", "x" * (accounts.PASSWORD_MAX + 1)).status_code == 422
    assert sign_up(lite, "wes", "x" * accounts.PASSWORD_MIN).status_code == 201
    assert COOKIE in lite.cookies
    lite.cookies.clear()
    assert sign_in(lite, "wes", "x" * accounts.PASSWORD_MIN).status_code == 200


def test_signing_out_clears_the_cookie_with_the_same_flags(lite: TestClient) -> None:
    sign_up(lite, "xan")
    out = lite.delete("/api/session", headers=ORIGIN)
    parts = [p.strip().lower() for p in out.headers["set-cookie"].split(";")]
    assert parts[0] in (f"{COOKIE}=", f'{COOKIE}=""') and "max-age=0" in parts
    assert "httponly" in parts and "samesite=lax" in parts and "path=/" in parts and "secure" not in parts
    assert COOKIE not in lite.cookies
    sign_up(lite, "yul")
    gone = lite.delete("/api/me", headers=ORIGIN)
    parts = [p.strip().lower() for p in gone.headers["set-cookie"].split(";")]
    assert "max-age=0" in parts and "httponly" in parts and "samesite=lax" in parts and "path=/" in parts


def test_argon2_concurrency_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="argon2_concurrency must be at least 1, not 0"):
        passwords.PasswordChecks(0)
    checks = passwords.PasswordChecks(1)
    checks.close()


def test_the_failure_limiter_forgets_what_left_its_window_and_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Failures under ever new keys (names, addresses) never grow the limiter past its bound: keys whose failures all
    left the window are forgotten, and within one window the keys seen first go (issue 25, found by H1's review)."""
    monkeypatch.setattr(limits, "MAX_FAILURE_KEYS", 100)
    now = [0.0]
    limiter = limits.MovingWindows(900.0, clock=lambda: now[0])
    for i in range(150):
        limiter.fail(f"old{i}")
    assert len(limiter._failures) <= 100
    now[0] += 901.0  # every failure so far has left the window
    for i in range(60):
        limiter.fail(f"new{i}")
    assert len(limiter._failures) <= 100
    assert all(key.startswith("new") for key in limiter._failures)
    for i in range(60, 400):
        limiter.fail(f"new{i}")  # a flood within one window
    assert len(limiter._failures) <= 100
    assert limiter.wait_s("new399", 1) > 0  # the latest are still counted


def test_the_failure_limiter_forgets_exactly_the_keys_out_of_the_window_then_the_first_seen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Which keys go when the limiter passes its bound: first every key whose failures are all out of the window
    (a failure exactly ``window_s`` old is out, as :meth:`Limiter.wait_s` counts it), then, should more than half
    the bound be left, the keys seen first, down to half."""
    monkeypatch.setattr(limits, "MAX_FAILURE_KEYS", 100)
    now = [0.0]
    limiter = limits.MovingWindows(900.0, clock=lambda: now[0])
    for i in range(60):
        limiter.fail(f"old{i}")
    now[0] = 900.0  # the old failures are exactly one window old: out of it
    for i in range(41):
        limiter.fail(f"new{i}")  # the 101st key: the old ones go, the 41 new stay
    assert list(limiter._failures) == [f"new{i}" for i in range(41)]
    for i in range(41, 101):
        limiter.fail(f"new{i}")  # 101 keys in the window: the first 51 go
    assert list(limiter._failures) == [f"new{i}" for i in range(51, 101)]
    # 50 keys out of the window and 51 in: one more than half the bound is left, so the first of them goes too
    limiter = limits.MovingWindows(900.0, clock=lambda: now[0])
    for i in range(50):
        limiter.fail(f"a{i}")
    now[0] += 900.0
    for i in range(51):
        limiter.fail(f"b{i}")
    assert list(limiter._failures) == [f"b{i}" for i in range(1, 51)]


def test_not_signed_in_is_a_coded_refusal_with_its_reason(client: TestClient) -> None:
    for response in (client.get("/api/me"), client.get("/api/me/seats"), client.delete("/api/me", headers=ORIGIN)):
        assert response.status_code == 401, response.text
        assert response.json() == {"detail": "you are not signed in", "code": "account.not_signed_in",
                                   "params": {}}


def test_a_refusal_says_its_reason_when_logged() -> None:
    with pytest.raises(accounts.AccountError) as refused:
        accounts.clean_name("a\u202eb")
    assert refused.value.detail and str(refused.value) == refused.value.detail


def test_an_account_is_shown_by_its_id_and_name(client: TestClient) -> None:
    made = sign_up(client, "Nia")
    assert made.status_code == 201, made.text
    shown = made.json()
    assert set(shown) == {"id", "name"} and shown["name"] == "Nia" and isinstance(shown["id"], int)
    assert client.get("/api/me").json() == shown
    assert client.get("/api/session").json() == {"account": shown}
    assert sign_in(client, "Nia").json() == shown


def test_password_hashes_and_checks_run_in_the_argon2_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hashing (sign-up) as well as checking (sign-in) waits its turn among ``argon2_concurrency`` threads, never
    the event loop's default pool."""
    import asyncio
    import threading

    real, threads = passwords._hasher, []

    class NotingHasher:  # the real hasher, noting the thread each call runs in
        def hash(self, password: str) -> str:
            threads.append(threading.current_thread().name)
            return str(real.hash(password))

        def verify(self, password_hash: str, password: str) -> bool:
            threads.append(threading.current_thread().name)
            return bool(real.verify(password_hash, password))

    monkeypatch.setattr(passwords, "_hasher", NotingHasher())
    checks = passwords.PasswordChecks(1)
    try:
        hashed = asyncio.run(checks.hash(PASSWORD))
        assert asyncio.run(checks.verify(hashed, PASSWORD)) is True
    finally:
        checks.close()
    assert len(threads) == 2 and all(name.startswith("cardtable-argon2") for name in threads), threads


def test_the_argon2_threads_are_as_many_as_the_setting_says(tmp_path: Path) -> None:
    settings = Settings(hand_pause_s=0.05, default_ready_s=0.05, bot_pace=0.05, argon2_concurrency=3)
    with TestClient(create_app(f"sqlite+aiosqlite:///{tmp_path / 'a.db'}", settings)) as client:
        assert sign_up(client, "Oto").status_code == 201
        checks: Any = client.app.state.password_checks  # type: ignore[attr-defined]
        assert checks.concurrency == 3 and checks._executor._max_workers == 3
