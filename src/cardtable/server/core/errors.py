"""Refusals and close codes shared by the whole server: :class:`TableError` (an HTTP status, a stable ``code`` and
``params``, ``cardtable/refusals.py``), the JSON error body every 4xx shares and its OpenAPI entries, the ``error``
and ``reject`` messages of the WebSocket protocol, and the close code that asks a client to connect again."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


def _refusal(reason: str, code: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The refusal fields of a ``reject`` or ``error`` message: ``reason`` (English), ``code``, ``params``."""
    return {"reason": reason, "code": code, "params": params or {}}


def refusal_message(kind: str, reason: str, code: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """An ``error`` (``kind="error"``) message: ``{"type": kind, "reason", "code", "params"}``."""
    return {"type": kind, **_refusal(reason, code, params)}


class TableError(ValueError):
    """A lobby request the table refuses; ``status`` is the HTTP status (403, 404, 409, 422).

    ``code`` and ``params`` name the refusal (:data:`cardtable.refusals.CODES`); ``str()`` is the English reason.
    """

    def __init__(self, status: int, code: str, reason: str, params: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.code = code
        self.params: dict[str, Any] = params or {}

    def to_dict(self) -> dict[str, Any]:
        """The HTTP answer's body: ``{"detail": reason, "code": code, "params": {...}}``."""
        return {"detail": str(self), "code": self.code, "params": self.params}


RECONNECT_CODE = 1012
"""WebSocket close code (RFC 6455 "Service Restart") for a connection closed because its table moved to another
process, this process stops, or the relay through Redis broke: connect again (any process) and say ``hello``; a
``snapshot`` follows."""


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
