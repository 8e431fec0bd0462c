"""The ASGI scope extension that ``cardtable serve``'s WebSocket protocol (``server/edge/ws_protocol.py``) offers
each connection: a burst send (several texts in one write) and the connection's message budget, which its control
frames take from too. Other servers offer neither; the readers here then answer ``None``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from cardtable.server.core.limits import TokenBucket

EXTENSION = "cardtable.send_texts"
"""The ASGI scope extension's name: ``{"send_texts": coroutine function (texts) -> None, "budget": TokenBucket}``."""


SendTexts = Callable[[Sequence[str]], Awaitable[None]]


def burst_sender(websocket: Any) -> SendTexts | None:
    """The connection's :meth:`BurstWebSockets.send_texts` when its server offers it (``websocket`` is
    Starlette's ``WebSocket``), else ``None`` (another protocol, a relayed connection without a scope)."""
    scope = getattr(websocket, "scope", None)
    if not isinstance(scope, dict):
        return None
    offer = (scope.get("extensions") or {}).get(EXTENSION)
    return None if offer is None else offer.get("send_texts")


def connection_budget(websocket: Any) -> TokenBucket | None:
    """The connection's message budget, which its control frames take from too, when its server offers it
    (``websocket`` is Starlette's ``WebSocket``), else ``None`` (another protocol, a relayed connection)."""
    scope = getattr(websocket, "scope", None)
    if not isinstance(scope, dict):
        return None
    offer = (scope.get("extensions") or {}).get(EXTENSION)
    budget = None if offer is None else offer.get("budget")
    return budget if isinstance(budget, TokenBucket) else None
