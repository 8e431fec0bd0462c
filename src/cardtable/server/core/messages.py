"""WebSocket messages (``docs/protocol.md``, "WebSocket"): decoding, size limits and the rate the message budget
(``server/core/limits.py``'s ``TokenBucket``) allows, encoding.

Client messages are decoded with msgspec into tagged structs; anything else is a :class:`MessageError` whose
text is sent back in an ``error`` message. Server messages are plain dicts encoded once per recipient group.
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Annotated, Any

import msgspec

MAX_MESSAGE_BYTES = 4096
"""Largest client message accepted, in bytes of UTF-8."""

RATE_PER_SECOND = 30.0
"""Sustained client messages per second per connection."""

RATE_BURST = 60.0
"""Client messages a connection may send at once before the rate applies."""

HELLO_TIMEOUT_S = 10.0
"""Seconds a connection has to send ``hello`` before it is closed."""

MAX_REACTION_CHARS = 32
"""Longest reaction id a ``react`` message may carry, in characters (every real one is shorter)."""

MAX_DEPTH = 32
"""Deepest nesting of arrays and objects accepted in a client message (the deepest real action is 2 levels)."""

_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"?', re.DOTALL)
"""A JSON string, escapes taken whole, possessively, and a string that never closes runs to the end of the text:
nothing is ever tried twice, so removing every string is one pass (a closing quote required, as before, made each
escaped quote of an unclosed string start a new scan to the end: quadratic)."""

_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_BRACKET_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
"""Brackets as signed bytes: an opening one +1, a closing one -1 (0xff)."""


class MessageError(ValueError):
    """A client message that is malformed, oversized or too frequent; ``str()`` is the reason sent back.

    ``code`` (``message.too_large``, ``message.malformed``, ``message.not_json``) and ``params`` name it
    (:data:`cardtable.refusals.CODES`).
    """

    def __init__(self, reason: str, code: str = "message.malformed", params: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.code = code
        self.params: dict[str, Any] = params or {}


class Hello(msgspec.Struct, tag_field="type", tag="hello", forbid_unknown_fields=True):
    """``{"type": "hello", "token": "..." | null}``: identify as a seat, or as a spectator."""

    token: str | None = None


class ActionMessage(msgspec.Struct, tag_field="type", tag="action", forbid_unknown_fields=True):
    """``{"type": "action", "seq": 7, "action": {...}}``: an action for the token's seat."""

    seq: int
    action: dict[str, Any]


class Resync(msgspec.Struct, tag_field="type", tag="resync", forbid_unknown_fields=True):
    """``{"type": "resync"}``: ask for a fresh snapshot."""


class Ready(msgspec.Struct, tag_field="type", tag="ready", forbid_unknown_fields=True):
    """``{"type": "ready"}``: the token's seat is ready for the next hand (``docs/protocol.md``, "Between hands")."""


class React(msgspec.Struct, tag_field="type", tag="react", forbid_unknown_fields=True):
    """``{"type": "react", "reaction": "nice"}``: the token's seat shows a preset reaction to the table
    (``docs/protocol.md``, "Reactions"; the ids are ``server/table/reactions.py``'s, checked there)."""

    reaction: Annotated[str, msgspec.Meta(max_length=MAX_REACTION_CHARS)]


class Ping(msgspec.Struct, tag_field="type", tag="ping", forbid_unknown_fields=True):
    """``{"type": "ping", "t": 123.4, "rtt": 84.0}``: ``t`` is the client's clock in ms, echoed in the ``pong``;
    ``rtt`` (optional) the round trip in ms the client measured from its previous ``pong`` (``docs/protocol.md``,
    "Fairness")."""

    t: float = 0.0
    rtt: float | None = None


ClientMessage = Hello | ActionMessage | Resync | Ready | React | Ping

_decoder = msgspec.json.Decoder(ClientMessage)
_encoder = msgspec.json.Encoder()


def decode(data: str | bytes) -> ClientMessage:
    """Decode one client message; :class:`MessageError` says what was wrong (size, depth, JSON, type or field).

    msgspec's JSON is strict: ``NaN``, ``Infinity``, numbers out of range (``1e400``) and lone surrogates
    (``"\\ud800"``) are malformed JSON."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if len(raw) > MAX_MESSAGE_BYTES:
        raise MessageError(f"message too large: {len(raw)} bytes (at most {MAX_MESSAGE_BYTES})",
                           code="message.too_large", params={"size": len(raw), "limit": MAX_MESSAGE_BYTES})
    try:
        check_depth(raw)
    except ValueError as error:
        raise MessageError(f"bad message: {error}", code="message.malformed", params={"detail": str(error)}) from None
    try:
        message: ClientMessage = _decoder.decode(raw)
    except msgspec.ValidationError as error:
        raise MessageError(f"bad message: {error}", code="message.malformed", params={"detail": str(error)}) from None
    except msgspec.DecodeError as error:
        raise MessageError(f"not a JSON message: {error}", code="message.not_json", params={"detail": str(error)}) from None
    if isinstance(message, ActionMessage) and not isinstance(message.action.get("type"), str):
        raise MessageError("bad message: action.type must be a string", code="message.malformed",
                           params={"detail": "action.type must be a string"})
    return message


def check_depth(raw: bytes, max_depth: int = MAX_DEPTH) -> None:
    """``ValueError`` if arrays and objects nest deeper than ``max_depth`` (msgspec's decoder has no
    depth limit and recurses: 1,000 levels raise ``RecursionError``). Brackets inside strings do not count.

    Linear in the text's size whatever the text (a string that never closes, thousands of escaped quotes, tens of
    thousands of brackets), so it may run on client text before any rate limit: one pass removes the strings
    (:data:`_STRING`), then the deepest point of the running sum of +1 per opening and -1 per closing bracket is
    found in C (``itertools.accumulate``). Text that is not JSON may be measured loosely (a backslash outside a
    string), but the decoder refuses it at its first bad byte, before it nests any deeper."""
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return
    steps = _STRING.sub(b"", raw).translate(_BRACKET_STEPS, _NOT_BRACKETS)
    if max(accumulate(memoryview(steps).cast("b")), default=0) > max_depth:
        raise ValueError(f"nested deeper than {max_depth} levels")


def encode(message: dict[str, Any]) -> str:
    """A server message as JSON text."""
    return _encoder.encode(message).decode()

