"""Client message decoding and limits of cardtable.server.core.messages (docs/protocol.md, "Limits")."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cardtable.refusals import CODES, PARAMS
from cardtable.server.core import limits, messages
from cardtable.server.core.tokens import hash_token, new_token, token_matches


def test_decodes_each_client_message() -> None:
    assert messages.decode('{"type": "hello", "token": null}') == messages.Hello(None)
    assert messages.decode(b'{"type": "hello", "token": "abc"}') == messages.Hello("abc")
    action = messages.decode('{"type": "action", "seq": 7, "action": {"type": "flip"}}')
    assert action == messages.ActionMessage(7, {"type": "flip"})
    assert messages.decode('{"type": "resync"}') == messages.Resync()
    assert messages.decode('{"type": "ping", "t": 12.5}') == messages.Ping(12.5)


@pytest.mark.parametrize(
    ("text", "needle", "code"),
    [
        ("x" * 5000, "too large", "message.too_large"),
        ("not json", "not a JSON", "message.not_json"),
        ('{"type": "shout"}', "bad message", "message.malformed"),
        ('{"type": "action", "seq": 1}', "action", "message.malformed"),
        ('{"type": "action", "seq": 1, "action": {"card": "7C"}}', "action.type", "message.malformed"),
        ('{"type": "action", "seq": 1, "seat": 2, "action": {"type": "flip"}}', "seat", "message.malformed"),
        ('{"type": "ping", "t": "soon"}', "t", "message.malformed"),
    ],
)
def test_refuses_with_a_reason_and_a_code(text: str, needle: str, code: str) -> None:
    with pytest.raises(messages.MessageError, match=needle) as error:
        messages.decode(text)
    assert error.value.code == code and code in CODES
    assert set(error.value.params) == set(PARAMS[code])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200),
                 st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                              lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                           max_size=4),
                              max_leaves=12).map(json.dumps)))
def test_junk_is_a_message_error_or_a_message(data: str | bytes) -> None:
    try:
        decoded = messages.decode(data)
    except messages.MessageError as error:
        assert str(error) and error.code in CODES
    else:
        assert isinstance(decoded, messages.Hello | messages.ActionMessage | messages.Resync | messages.Ping)


def test_rate_limiter_allows_a_burst_then_the_rate() -> None:
    limiter = limits.TokenBucket(rate=0.0, burst=5)
    assert [limiter.allow() for _ in range(7)] == [True] * 5 + [False] * 2


def test_tokens_are_stored_as_hashes() -> None:
    token = new_token()
    assert len(token) >= 40 and hash_token(token) != token
    assert token_matches(token, hash_token(token))
    assert not token_matches(token + "x", hash_token(token)) and not token_matches(token, None)


# -- issue 25, item 1: the depth check before parsing is linear in its input ------------------------------------

def _worst_bodies(size: int) -> list[bytes]:
    """Texts of about ``size`` bytes built to make a string-blanking or bracket scan slow: a string that never
    closes and holds only escaped quotes (with enough brackets before it to skip the quick count), escaped
    backslashes, lone quotes, and tens of thousands of brackets."""
    half = size // 2
    return [
        b'"' + b"[" * 40 + b'" "' + b'\\"' * half,  # the regex of old: 14.6 s at 64 KiB
        b"[" * 40 + b'"' + b'\\"' * half,
        b'{"a":' * 20 + b'"' + b"\\\\" * half,
        b'"' * size,
        b"\\" * size,
        b"[]" * half,
        b'["' * half,
        b'["\\' * (size // 3),
    ]


@pytest.mark.parametrize("size", [4096, 65536])
def test_the_depth_check_takes_milliseconds_on_its_worst_inputs(size: int) -> None:
    import time

    for body in _worst_bodies(size):
        started = time.perf_counter()
        with contextlib.suppress(ValueError):
            messages.check_depth(body)
        elapsed = time.perf_counter() - started
        # about 7 ms at 64 KiB on a 2-core machine; the quadratic scan took 75 ms at 4 KiB and 14.6 s at 64 KiB
        assert elapsed < (0.05 if size <= 4096 else 0.5), (body[:24], elapsed)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab\n'),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text('"\\[{', max_size=3), inner,
                                                                               max_size=3),
                    max_leaves=60))
@settings(max_examples=300, deadline=None)
def test_the_depth_check_measures_real_json_exactly(value: object) -> None:
    text = json.dumps(value).encode()

    def depth(item: object) -> int:
        if isinstance(item, list):
            return 1 + max((depth(x) for x in item), default=0)
        if isinstance(item, dict):
            return 1 + max((depth(x) for x in item.values()), default=0)
        return 0

    deepest = depth(value)
    messages.check_depth(text, max_depth=deepest)
    if deepest > 0:
        with pytest.raises(ValueError, match="deeper"):
            messages.check_depth(text, max_depth=deepest - 1)
