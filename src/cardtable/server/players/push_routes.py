"""The Web Push routes (``docs/protocol.md``, "Notifications"): the server's VAPID public key, and a signed-in
player's subscriptions, made and withdrawn (switching notifications off). What is kept and sent is
``server/players/push.py``.

Like the account routes, a request that changes state must come from the page's own origin
(``sessions.check_origin``) and be signed in; refusals are ``4xx {"detail", "code", "params"}``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from cardtable.server.core.errors import error_responses
from cardtable.server.players.account_errors import AccountError
from cardtable.server.players.push import (
    SubscriptionRefused,
    check_endpoint,
    check_keys,
    lang_of,
    public_key,
    subscribe,
    unsubscribe,
    vapid_key,
)
from cardtable.server.players.sessions import app_store, check_origin, require_account

router = APIRouter(prefix="/api", tags=["push"])


class SubscriptionKeys(BaseModel):
    """The browser's keys of a push subscription, base64url: ``p256dh`` (its P-256 public key) and ``auth``."""

    model_config = ConfigDict(extra="forbid")
    p256dh: str = Field(max_length=256)
    auth: str = Field(max_length=256)


class SubscriptionBody(BaseModel):
    """``POST /api/me/push``: ``PushSubscription.toJSON()`` (``endpoint``, ``expirationTime``, ``keys``) and the
    ``lang`` the notifications are worded in (``en``, ``ko``, ``ja``; any other is English)."""

    model_config = ConfigDict(extra="forbid")
    endpoint: str = Field(max_length=8192)
    expirationTime: float | None = None
    keys: SubscriptionKeys
    lang: str = Field(default="en", max_length=35)


def _refused(error: SubscriptionRefused) -> AccountError:
    return AccountError(422, error.code, error.detail, **error.params)


@router.get("/push/key", responses=error_responses())
async def push_key(request: Request) -> dict[str, str]:
    """The server's VAPID public key ``{"key": base64url}``, for ``PushManager.subscribe``'s
    ``applicationServerKey`` (the uncompressed P-256 point, 65 bytes). The same from every process, always."""
    return {"key": public_key(await vapid_key(app_store(request)))}


@router.post("/me/push", status_code=201, responses=error_responses(401, 403, 413, 422))
async def add_subscription(body: SubscriptionBody, request: Request) -> dict[str, Any]:
    """Subscribe this browser to the signed-in player's "your turn" notifications: ``{"endpoint", "lang"}``. A
    subscription already kept for the endpoint is replaced. Refusals: 401 ``account.not_signed_in``, 403
    ``account.cross_origin``, 422 ``push.endpoint_invalid`` (not an https URL of a push service, or longer than
    ``max`` characters), ``push.endpoint_insecure`` (http; allowed to this machine only with
    ``push_allow_insecure``), ``push.keys_invalid`` (``field``: ``p256dh`` is not a P-256 public key or ``auth``
    not 16 bytes), ``request.invalid``."""
    check_origin(request, always=True)
    account = await require_account(request)
    settings = request.app.state.settings
    try:
        endpoint = check_endpoint(
            body.endpoint, allow_insecure=bool(getattr(settings, "push_allow_insecure", 0))
        )
        check_keys(body.keys.p256dh, body.keys.auth)
    except SubscriptionRefused as error:
        raise _refused(error) from None
    await subscribe(app_store(request), account.id, endpoint, body.keys.p256dh, body.keys.auth, body.lang)
    return {"endpoint": endpoint, "lang": lang_of(body.lang)}


@router.delete("/me/push", responses=error_responses(401, 403))
async def remove_subscriptions(request: Request, endpoint: str | None = None) -> dict[str, int]:
    """Switch notifications off: the signed-in player's subscriptions are deleted, all of them or only
    ``?endpoint=URL``'s (this browser's): ``{"deleted": N}``. 401 ``account.not_signed_in``, 403
    ``account.cross_origin``."""
    check_origin(request, always=True)
    account = await require_account(request)
    return {"deleted": await unsubscribe(app_store(request), account.id, endpoint)}
