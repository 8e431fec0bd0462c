"""The ASGI scope extension that ``cardtable serve``'s WebSocket protocol (``server/edge/ws_protocol.py``) offers
each connection: a burst send (several texts in one write) and the connection's message budget, which its control
frames take from too. Other servers offer neither; the readers here then answer ``None``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from cardtable.server.core.limits import TokenBucket

EXTENSION = "cardtable.send_texts"
"""The ASGI scope extension's name: ``{"send_texts": coroutine function (texts) -> None, "write_texts_now":
function (texts) -> bool, "budget": TokenBucket}``."""


SendTexts = Callable[[Sequence[str]], Awaitable[None]]

WriteTextsNow = Callable[[Sequence[str]], bool]
"""Write texts at once if the connection can take them now (``True``), else write nothing (``False``)."""


def _offer(websocket: Any, name: str) -> Any:
    scope = getattr(websocket, "scope", None)
    if not isinstance(scope, dict):
        return None
    offer = (scope.get("extensions") or {}).get(EXTENSION)
    return None if offer is None else offer.get(name)


def burst_sender(websocket: Any) -> SendTexts | None:
    """The connection's :meth:`BurstWebSockets.send_texts` when its server offers it (``websocket`` is
    Starlette's ``WebSocket``), else ``None`` (another protocol, a relayed connection without a scope)."""
    sender: SendTexts | None = _offer(websocket, "send_texts")
    return sender


def direct_writer(websocket: Any) -> WriteTextsNow | None:
    """The connection's :meth:`BurstWebSockets.write_texts_now` when its server offers it, else ``None``."""
    writer: WriteTextsNow | None = _offer(websocket, "write_texts_now")
    return writer


def connection_budget(websocket: Any) -> TokenBucket | None:
    """The connection's message budget, which its control frames take from too, when its server offers it
    (``websocket`` is Starlette's ``WebSocket``), else ``None`` (another protocol, a relayed connection)."""
    budget = _offer(websocket, "budget")
    return budget if isinstance(budget, TokenBucket) else None
