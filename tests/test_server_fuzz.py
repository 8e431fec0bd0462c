"""A Hypothesis fuzzer over the play WebSocket (docs/protocol.md, "WebSocket"): every message type and both engines'
action shapes, with deep nesting, non-finite numbers, lone surrogates and odd Unicode. Every message gets an
``error`` or a ``reject``, the connection stays open, and the table's state and record do not change."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from cardtable.server.core import limits
from clients import MakeClient, fast_settings

ODD_TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", "\u202e", "\u200b", "\x00", "🂡", "é", "ｆｌｉｐ", "flip\n", "10H", "JK1", "3A", "work:-1",
                     "foundation:99999999999999999999", "nerts", "waste", "stock", "work:0", "foundation:new"]),
)
NUMBERS = st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from([0, -1, 1, 2**63, 1e300]))
JSON_VALUES = st.recursive(st.none() | st.booleans() | NUMBERS | ODD_TEXT,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ODD_TEXT, inner, max_size=3),
                           max_leaves=8)
ACTION_KEYS = ["type", "card", "anemones", "from", "to", "count", "as", "reason", "seat", "ms"]
ACTION_TYPES = ["play", "discard", "move", "under", "flip", "cycle", "stuck", "nerts", "rotate", "end_hand", "Play"]

actions = st.dictionaries(st.sampled_from(ACTION_KEYS), JSON_VALUES, max_size=5).flatmap(
    lambda extra: st.sampled_from(ACTION_TYPES).map(lambda kind: {**extra, "type": kind}))
shaped = st.one_of(
    st.builds(lambda seq, action: {"type": "action", "seq": seq, "action": action}, st.integers(0, 10**6), actions),
    st.builds(lambda token: {"type": "hello", "token": token}, ODD_TEXT | st.none()),
    st.builds(lambda extra: {"type": "resync", **extra},
              st.dictionaries(st.sampled_from(["x", "seq", "token"]), JSON_VALUES, min_size=1, max_size=2)),
    st.builds(lambda t: {"type": "ping", "t": t}, st.one_of(ODD_TEXT, st.lists(NUMBERS, max_size=2), st.none())),
    st.builds(lambda kind, extra: {"type": kind, **extra}, ODD_TEXT.filter(
        lambda k: k not in ("hello", "action", "resync", "ping")), st.dictionaries(ODD_TEXT, JSON_VALUES, max_size=3)),
    JSON_VALUES.filter(lambda v: not isinstance(v, dict)),
).map(lambda message: json.dumps(message, ensure_ascii=False))


def _wrap(depth: int, kind: str) -> str:
    inner = "[" * depth + "]" * depth if kind == "list" else '{"a":' * depth + "1" + "}" * depth
    return '{"type":"action","seq":1,"action":{"type":"play","card":' + inner + "}}"


raw = st.one_of(
    st.builds(_wrap, st.integers(33, 1500), st.sampled_from(["list", "dict"])),
    st.sampled_from([
        '{"type":"ping","t":NaN}', '{"type":"ping","t":Infinity}', '{"type":"ping","t":-Infinity}',
        '{"type":"ping","t":1e400}', '{"type":"action","seq":1e400,"action":{"type":"flip"}}',
        '{"type":"hello","token":"\\ud800"}', '{"type":"action","seq":1,"action":{"type":"\\udfff"}}',
        '{"type":"action","seq":1,"action":{"type":"play","card":"\\ud83c"}}', '{"type":"hello"', "",
        '{"type":"action","seq":1,"action":{"type":"flip"},"type":"ping"}', "\ufeff{}",
    ]),
    st.binary(max_size=40),
)


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch, make_client: MakeClient) -> TestClient:
    monkeypatch.setattr(limits, "TokenBucket", functools.partial(limits.TokenBucket, rate=1e9, burst=1e9))
    return make_client(fast_settings())


def reply_to(ws: Any, message: str | bytes) -> dict[str, Any]:
    if isinstance(message, bytes):
        ws.send_bytes(message)
    else:
        ws.send_text(message)
    while True:
        answer: dict[str, Any] = ws.receive_json()
        if answer["type"] != "table":  # coalesced seat updates may come at any time
            return answer


@pytest.mark.parametrize("game", ["anemone", "nerts"])
def test_fuzzed_messages_get_error_or_reject_and_change_nothing(client: TestClient, game: str) -> None:
    options = {"players": 2, "rounds": 1} if game == "anemone" else {"players": 2}
    made = client.post("/api/tables", json={"game": game, "options": options}).json()
    tid = made["table"]["id"]
    other = client.post(f"/api/tables/{tid}/join", json={"name": "bo"}).json()["token"]
    table = client.app.state.manager.tables[tid]  # type: ignore[attr-defined]
    if game == "anemone":  # in play; the fuzzing seat waits for its turn, so every action is refused
        assert client.post(f"/api/tables/{tid}/start", json={"token": other}).status_code == 200
        idle = 1 - table.state.to_act()[0]
        token = made["token"] if idle == 0 else other
    else:  # Nerts lets every seat act at once: fuzz it before the start, where every action is refused
        token = made["token"]

    def fingerprint() -> tuple[Any, ...]:
        store = client.app.state.store  # type: ignore[attr-defined]
        assert client.portal is not None
        rows = client.portal.call(functools.partial(store.load_tables, table_id=tid, with_hands=True))
        stored = [(len(h.actions), json.dumps(h.deal, sort_keys=True)) for h in rows[0].hands]
        view = None if table.state is None else json.dumps(table.state.view(None), sort_keys=True)
        return table.version, table.status, view, stored, [s.row.kind for s in table.seats]

    before = fingerprint()
    with client.websocket_connect(f"/ws/tables/{tid}") as ws:
        ws.send_json({"type": "hello", "token": token})
        assert ws.receive_json()["type"] == "welcome"
        assert ws.receive_json()["type"] == "snapshot"

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(st.one_of(shaped, raw))
        def fuzz(message: str | bytes) -> None:
            answer = reply_to(ws, message)
            assert answer["type"] in ("error", "reject"), (message, answer)
            assert isinstance(answer["reason"], str) and answer["reason"]
            assert reply_to(ws, '{"type":"ping","t":7}') == {"type": "pong", "t": 7.0,
                                                            "server_ms": pytest.approx(0, abs=1e13)}

        fuzz()
    assert fingerprint() == before
