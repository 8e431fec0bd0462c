"""Web Push (``docs/protocol.md``, "Notifications"): the server's VAPID key pair, the players' push subscriptions
and the "your turn" notification a turn-based table sends a player who is away.

The standard Push API (RFC 8030) with VAPID (RFC 8292) and encrypted payloads (RFC 8291, ``aes128gcm``), sent by
``pywebpush``. The VAPID key is an EC P-256 key pair made once and kept in the database (the server key
:data:`VAPID_KEY`), so every process and every restart signs with the same one and a browser's subscription, made
with its public key, stays good. A subscription is what the browser's ``PushSubscription.toJSON()`` gives: the
push service's ``endpoint`` URL (a capability: whoever knows it can send to that browser, so it is never shown or
logged in full) and the browser's keys ``p256dh`` (its P-256 public key, 65 bytes) and ``auth`` (16 bytes), both
base64url; with the language the player reads (``en``, ``ko``, ``ja``), kept in ``push_subscriptions``.

:func:`notify_turn` sends the notification to each of an account's subscriptions, each in a thread (``requests``
blocks), and drops a subscription its push service says is gone (404, 410). The routes that subscribe and switch
notifications off are ``server/players/push_routes.py``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import json
import logging
import weakref
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from pywebpush import Vapid, WebPushException, webpush
from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection

from cardtable.server.core.clock import now_iso
from cardtable.server.core.settings import Settings
from cardtable.server.storage import players_schema as ps
from cardtable.server.storage.keys import server_key
from cardtable.server.storage.store import Store

log = logging.getLogger("cardtable.server.players.push")

VAPID_KEY = "vapid"
"""The name of the VAPID private key among the server keys (``server_keys``): its 32-byte scalar, base64url."""

ENDPOINT_MAX = 1024
"""Longest push endpoint URL accepted, in characters (the push services' own are about 200 to 500)."""

MAX_SUBSCRIPTIONS = 10
"""Subscriptions one account keeps (one per browser or device); a new one beyond drops the oldest."""

TURN_TTL_S = 86_400
"""Seconds a push service keeps a "your turn" message for a browser that is offline (RFC 8030 ``TTL``): after a
day the turn is likely played or timed out, and the player sees their games in the lobby anyway."""

TURN_URGENCY = "normal"
"""The message's RFC 8030 ``Urgency``: a turn lasts hours, so it need not wake a phone on low battery ("high" is
for calls and alarms), but it is more than "low"."""

SEND_TIMEOUT_S = 10.0
"""Seconds one request to a push service may take before it counts as a failure."""

LANGS = ("en", "ko", "ja")
"""The languages a notification is worded in; any other is English."""

GAME_NAMES = {
    "en": {"nerts": "Nerts", "anemone": "Enemy Anemone"},
    "ko": {"nerts": "너츠", "anemone": "에너미 아네모네"},
    "ja": {"nerts": "ナーツ", "anemone": "エネミー・アネモネ"},
}
"""Each game's name as the web client's catalogues (``static/i18n/{en,ko,ja}.json``, ``game.*``) word it."""

TURN_WORDS = {
    "en": ("Your turn at table {table}", "{game}: open the table to play."),
    "ko": ("{table} 테이블에서 내 차례입니다", "{game}: 테이블을 열어 플레이하세요."),
    "ja": ("テーブル {table} であなたの番です", "{game}: テーブルを開いてプレイしましょう。"),
}
"""The "your turn" notification's title and body, by language."""


@dataclass(frozen=True, slots=True)
class Subscription:
    """One browser's push subscription of an account."""

    id: int
    """Its row id in ``push_subscriptions``."""
    account_id: int
    """The account it notifies."""
    endpoint: str
    """The push service's URL for this browser (https)."""
    p256dh: str
    """The browser's P-256 public key (65 bytes, uncompressed point), base64url without padding."""
    auth: str
    """The browser's authentication secret (16 bytes), base64url without padding."""
    lang: str
    """The language its notifications are worded in: ``en``, ``ko`` or ``ja``."""


class SubscriptionRefused(ValueError):
    """A subscription the server will not keep: ``code`` (``push.endpoint_invalid``, ``push.endpoint_insecure``,
    ``push.keys_invalid``) and its ``params``."""

    def __init__(self, code: str, detail: str, **params: Any) -> None:
        super().__init__(detail)
        self.code, self.detail, self.params = code, detail, params


# -- keys ---------------------------------------------------------------------------------------------------


def b64url(data: bytes) -> str:
    """``data`` as base64url without padding (how the Push API writes keys)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    """The bytes of base64url ``text`` (padding optional); ``ValueError`` for anything else."""
    if not text or len(text) > 256 or not all(c.isalnum() or c in "-_=" for c in text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


_vapid_cache: weakref.WeakKeyDictionary[Store, Any] = weakref.WeakKeyDictionary()


def _new_vapid_scalar() -> str:
    """A new P-256 private key's scalar, base64url: what the server key ``vapid`` stores."""
    fresh = ec.generate_private_key(ec.SECP256R1())
    return b64url(fresh.private_numbers().private_value.to_bytes(32, "big"))


async def vapid_key(store: Store) -> Any:
    """The server's VAPID key pair (a ``py_vapid.Vapid02``): the server key ``vapid`` (``storage/keys.py``, made
    and stored the first time any process asks, the same for every process), cached for ``store``."""
    cached = _vapid_cache.get(store)
    if cached is None:
        cached = _vapid_cache[store] = Vapid.from_raw(await server_key(store, VAPID_KEY, _new_vapid_scalar))
    return cached


def public_key(vapid: Any) -> str:
    """The VAPID public key as ``PushManager.subscribe`` takes it (``applicationServerKey``): the uncompressed
    P-256 point (65 bytes), base64url without padding."""
    raw: bytes = vapid.public_key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    return b64url(raw)


# -- subscriptions --------------------------------------------------------------------------------------------


def check_endpoint(endpoint: str, *, allow_insecure: bool) -> str:
    """``endpoint`` if the server may send to it: an https URL of at most :data:`ENDPOINT_MAX` characters whose
    host is a name or a public address (a push service; never this machine or its private network). With
    ``allow_insecure`` (the ``push_allow_insecure`` setting, for tests), also ``http://127.0.0.1``,
    ``http://localhost`` and ``http://[::1]`` with any port and path, and https to those hosts.
    :class:`SubscriptionRefused` ``push.endpoint_invalid`` (``max``) or ``push.endpoint_insecure`` otherwise."""
    try:
        parts = urlsplit(endpoint)
        host = parts.hostname or ""
        parts.port  # noqa: B018 (a bad port raises ValueError)
    except ValueError:
        parts, host = None, ""
    if (
        parts is None
        or len(endpoint) > ENDPOINT_MAX
        or not host
        or parts.username
        or parts.password
        or any(c.isspace() or not c.isprintable() for c in endpoint)
    ):
        raise SubscriptionRefused(
            "push.endpoint_invalid",
            f"a push endpoint is an https URL of at most {ENDPOINT_MAX} characters",
            max=ENDPOINT_MAX,
        )
    local = host in ("localhost", "127.0.0.1", "::1")
    if allow_insecure and local and parts.scheme in ("http", "https"):
        return endpoint
    if parts.scheme != "https":
        raise SubscriptionRefused("push.endpoint_insecure", "a push endpoint must be an https URL")
    with contextlib.suppress(ValueError):
        if not ipaddress.ip_address(host).is_global:
            local = True
    if local:
        raise SubscriptionRefused(
            "push.endpoint_invalid", "a push endpoint must be a push service's URL", max=ENDPOINT_MAX
        )
    return endpoint


def check_keys(p256dh: str, auth: str) -> None:
    """:class:`SubscriptionRefused` ``push.keys_invalid`` (``field``: ``p256dh`` or ``auth``) unless ``p256dh`` is
    a P-256 public key (65-byte uncompressed point on the curve) and ``auth`` 16 bytes, both base64url."""
    try:
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64url_decode(p256dh))
    except ValueError:
        raise SubscriptionRefused(
            "push.keys_invalid", "keys.p256dh must be a P-256 public key, base64url", field="p256dh"
        ) from None
    try:
        secret = b64url_decode(auth)
    except ValueError:
        secret = b""
    if len(secret) != 16:
        raise SubscriptionRefused("push.keys_invalid", "keys.auth must be 16 bytes, base64url", field="auth")


def lang_of(lang: str | None) -> str:
    """The notification language for a browser's ``lang`` (``"ko-KR"`` is ``"ko"``): one of :data:`LANGS`,
    English for any other."""
    short = (lang or "").split("-")[0].lower()
    return short if short in LANGS else "en"


async def subscribe(store: Store, account_id: int, endpoint: str, p256dh: str, auth: str, lang: str) -> None:
    """Keep a subscription for ``account_id`` (checked by the caller: :func:`check_endpoint`, :func:`check_keys`).
    An endpoint is unique: one already kept (this browser subscribed before, maybe for another account signed in
    there) is replaced. Beyond :data:`MAX_SUBSCRIPTIONS` for the account the oldest go."""
    s = ps.push_subscriptions
    values = {
        "account_id": account_id,
        "endpoint": endpoint,
        "p256dh": p256dh,
        "auth": auth,
        "lang": lang_of(lang),
        "created": now_iso(),
    }

    def fn(conn: Connection) -> None:
        conn.execute(delete(s).where(s.c.endpoint == endpoint))
        conn.execute(insert(s).values(**values))
        kept = (
            conn.execute(
                select(s.c.id)
                .where(s.c.account_id == account_id)
                .order_by(s.c.id.desc())
                .offset(MAX_SUBSCRIPTIONS)
            )
            .scalars()
            .all()
        )
        if kept:
            conn.execute(delete(s).where(s.c.id.in_(kept)))

    await store.write(fn)


async def unsubscribe(store: Store, account_id: int, endpoint: str | None = None) -> int:
    """Switch notifications off: delete the account's subscriptions (only ``endpoint``'s when given); how many
    were deleted."""
    s = ps.push_subscriptions
    gone: list[int] = []

    def fn(conn: Connection) -> None:
        query = delete(s).where(s.c.account_id == account_id)
        if endpoint is not None:
            query = query.where(s.c.endpoint == endpoint)
        gone.append(conn.execute(query).rowcount)

    await store.write(fn)
    return gone[0]


async def subscriptions_of(store: Store, account_id: int) -> list[Subscription]:
    """The account's subscriptions, oldest first (none for a deleted account)."""
    s, a = ps.push_subscriptions, ps.accounts
    async with store.engine.connect() as conn:
        rows = (
            await conn.execute(
                select(s.c.id, s.c.account_id, s.c.endpoint, s.c.p256dh, s.c.auth, s.c.lang)
                .join(a, a.c.id == s.c.account_id)
                .where(s.c.account_id == account_id, a.c.deleted == 0)
                .order_by(s.c.id)
            )
        ).all()
    return [Subscription(r.id, r.account_id, r.endpoint, r.p256dh, r.auth, r.lang) for r in rows]


# -- sending --------------------------------------------------------------------------------------------------


def turn_message(lang: str, table_id: str, game: str) -> dict[str, str]:
    """The "your turn" payload the service worker (``static/sw.js``) shows: ``{"title", "body", "url", "tag"}``,
    worded in ``lang`` (:func:`lang_of`); ``url`` is the table's page ``/?table=ID``, ``tag`` makes a newer
    notification of the same table replace the older one."""
    lang = lang_of(lang)
    title, body = TURN_WORDS[lang]
    name = GAME_NAMES[lang].get(game, game)
    return {
        "title": title.format(table=table_id),
        "body": body.format(game=name),
        "url": f"/?table={table_id}",
        "tag": f"turn-{table_id}",
    }


def _send(vapid: Any, contact: str, sub: Subscription, data: str, topic: str) -> str:
    """Send ``data`` to ``sub`` (blocking): ``"sent"``, ``"gone"`` (404 or 410: the subscription expired or was
    withdrawn) or ``"failed"`` (logged). Redirects are not followed (a push service answers, it never redirects), so
    an endpoint cannot send the server's request on to an address :func:`check_endpoint` would refuse."""
    host = urlsplit(sub.endpoint).hostname
    session = requests.Session()
    session.max_redirects = 0
    try:
        webpush(
            {"endpoint": sub.endpoint, "keys": {"p256dh": sub.p256dh, "auth": sub.auth}},
            data=data,
            vapid_private_key=vapid,
            vapid_claims={"sub": contact},
            ttl=TURN_TTL_S,
            timeout=SEND_TIMEOUT_S,
            headers={"Urgency": TURN_URGENCY, "Topic": topic},
            requests_session=session,
        )
    except WebPushException as error:
        status = getattr(error.response, "status_code", None)
        if status in (404, 410):
            return "gone"
        log.warning("push to %s for account %s failed: %s", host, sub.account_id, status or error.message)
        return "failed"
    except Exception as error:
        log.warning("push to %s for account %s failed: %r", host, sub.account_id, error)
        return "failed"
    finally:
        session.close()
    return "sent"


async def notify_turn(store: Store, settings: Settings, account_id: int, table_id: str, game: str) -> int:
    """Tell ``account_id`` on each of its subscriptions that it is their turn at ``table_id`` (a game name,
    ``"anemone"``): :func:`turn_message` in the subscription's language, encrypted for that browser (RFC 8291)
    and signed with the server's VAPID key and ``settings.push_contact`` as its subject, with :data:`TURN_TTL_S`
    and :data:`TURN_URGENCY`. Each request runs in a thread, all at once. A subscription the push service
    answers 404 or 410 is dropped; any other failure is logged, never raised. How many were sent."""
    subs = await subscriptions_of(store, account_id)
    if not subs:
        return 0
    vapid = await vapid_key(store)
    topic = b64url(table_id.encode())[:32]  # RFC 8030 Topic: at most 32 base64url characters
    outcomes = await asyncio.gather(
        *(
            asyncio.to_thread(
                _send,
                vapid,
                settings.push_contact,
                sub,
                json.dumps(turn_message(sub.lang, table_id, game), ensure_ascii=False),
                topic,
            )
            for sub in subs
        )
    )
    gone = [sub.id for sub, outcome in zip(subs, outcomes, strict=True) if outcome == "gone"]
    if gone:
        s = ps.push_subscriptions

        def fn(conn: Connection) -> None:
            conn.execute(delete(s).where(s.c.id.in_(gone)))

        await store.write(fn)
    return sum(outcome == "sent" for outcome in outcomes)
