"""Refusal codes (docs/protocol.md, "Refusal codes"): every code raised is registered, its params keep the
contract, and every catalogue words every code with the English template's placeholders."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cardtable.cards import Card, CreatureCard
from cardtable.engine import IllegalAction
from cardtable.games.anemone import AnemoneMatch, AnemoneOptions
from cardtable.games.nerts import NertsMatch, NertsState, layout_pack
from cardtable.refusals import CODES, PARAMS, placeholders, render

SRC = Path(__file__).resolve().parent.parent / "src" / "cardtable"
CATALOGUES = SRC / "web" / "static" / "i18n" / "codes"
PILE_KINDS = {"nerts", "waste", "stock", "work", "foundation"}

# A code appears in the source as code="x.y", TableError(status, "x.y", ...), AccountError(status, "x.y", ...) or
# refusal_message(kind, reason, "x.y").
_CODE_LITERAL = re.compile(r'code="([a-z_]+\.[a-z_]+)"|"([a-z]+\.[a-z_]+)"')


def source_codes() -> dict[str, list[str]]:
    """Every registered-looking code literal in the source, by file (refusals.py itself left out)."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "refusals.py":
            continue
        text = path.read_text()
        for match in re.finditer(r'code="([a-z_]+\.[a-z_]+)"', text):
            found.setdefault(match.group(1), []).append(path.name)
        for match in re.finditer(r'(?:TableError|AccountError)\(\s*\d+,\s*"([a-z_]+\.[a-z_]+)"', text):
            found.setdefault(match.group(1), []).append(path.name)
        for match in re.finditer(r'refusal(?:_message)?\(\s*(?:"[a-z]+",\s*)?(?:f?"[^"]*"|[a-z_.()]+),\s*"([a-z_]+\.[a-z_]+)"',
                                 text):
            found.setdefault(match.group(1), []).append(path.name)
    return found


def test_every_code_in_the_source_is_registered_and_every_registered_code_is_used() -> None:
    found = source_codes()
    assert found, "the scan found no codes at all"
    unregistered = sorted(set(found) - set(CODES))
    assert not unregistered, f"codes raised but not in cardtable.refusals.CODES: {unregistered}"
    sources = "\n".join(p.read_text() for p in SRC.rglob("*.py") if p.name != "refusals.py")
    unused = sorted(code for code in CODES if f'"{code}"' not in sources)
    assert not unused, f"codes registered but never raised: {unused}"


def test_every_raise_of_an_illegal_action_names_a_code() -> None:
    for name in ("nerts.py", "anemone.py"):
        text = (SRC / "games" / name).read_text()
        for match in re.finditer(r"raise IllegalAction\(", text):
            # the call's text up to its closing parenthesis at depth 0
            depth, i = 1, match.end()
            while depth:
                depth += {"(": 1, ")": -1}.get(text[i], 0)
                i += 1
            assert "code=" in text[match.start():i], f"{name}: {text[match.start():i]}"


def check_params(code: str, params: dict[str, Any], game: str) -> None:
    """The params contract: placeholders present, cards as codes, piles as kinds and numbers, no pile ids."""
    assert code in CODES, code
    assert set(params) == set(PARAMS[code]), (code, params)
    for key, value in params.items():
        if key.endswith("card"):
            assert isinstance(value, str)
            parsed = Card.parse(value).code if game == "nerts" else CreatureCard.parse(value).code
            assert parsed == value, (code, key, value)
        elif key.endswith("pile"):
            assert isinstance(value, dict) and set(value) == {"kind", "number"}, (code, value)
            assert value["kind"] in PILE_KINDS, (code, value)
            if value["kind"] == "work":
                assert isinstance(value["number"], int) and value["number"] >= 1, (code, value)
            else:
                assert value["number"] is None, (code, value)
        elif key.endswith("suit"):
            assert value in ("S", "H", "D", "C", "A", "B", "C", "D", "E", "F"), (code, value)
        else:
            assert isinstance(value, (int, str)) and not isinstance(value, bool), (code, key, value)
        assert "foundation:" not in json.dumps(value), (code, key, value)
    render(code, params)


_PILES = ["nerts", "waste", "stock", "work:0", "work:1", "work:2", "work:3", "work:5", "work:9", "bogus", 3, None]
_TARGETS = ["work:0", "work:1", "work:3", "work:4", "foundation:new", "foundation:0", "foundation:1", "foundation:2",
            "foundation:7", "foundation:x", "waste", 7, None]


def junk_nerts_action(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(["move", "move", "move", "under", "flip", "stuck", "cycle", "nerts", "rotate", "bogus", 5])
    action: dict[str, Any] = {"type": kind}
    if kind in ("move", "under"):
        action["from"] = rng.choice(_PILES)
        action["to"] = rng.choice(_TARGETS)
        if rng.random() < 0.3:
            action["count"] = rng.choice([0, 1, 2, 3, 20, "x", True])
        if rng.random() < 0.15:
            action["as"] = rng.choice(["7H", "AS", "JK1", "zz", 3])
    elif rng.random() < 0.1:
        action["extra"] = 1
    return action


def drive_nerts(seed: int, options: dict[str, Any], steps: int = 400) -> set[str]:
    """A Nerts hand where seats mix legal moves and junk; returns the codes seen, checking each refusal."""
    rng = random.Random(seed)
    match = NertsMatch(options)
    hand = match.start_hand({"seed": seed})
    assert isinstance(hand, NertsState)
    seen: set[str] = set()
    ms = 0
    for _ in range(steps):
        if hand.is_over:
            break
        seat: Any = rng.randrange(hand.players)
        if rng.random() < 0.05:
            seat = rng.choice([None, 9, -1, "0"])
        legal = hand.legal_actions(seat) if isinstance(seat, int) and 0 <= seat < hand.players else []
        action: Any = rng.choice(legal) if legal and rng.random() < 0.55 else junk_nerts_action(rng)
        if rng.random() < 0.02:
            action = rng.choice([[], "move", {"no": "type"}])
        ms += rng.choice([0, 10, 200])
        when: Any = ms if rng.random() > 0.02 else rng.choice([-5, "x", 1.5])
        before = json.dumps(hand.snapshot())
        try:
            hand.apply(seat, action, when)
        except IllegalAction as error:
            assert json.dumps(hand.snapshot()) == before
            assert str(error) == error.reason and isinstance(error, ValueError)
            check_params(error.code, error.params, "nerts")
            seen.add(error.code)
    return seen


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), jokers=st.booleans(), players=st.integers(1, 4))
def test_nerts_refusals_keep_the_params_contract(seed: int, jokers: bool, players: int) -> None:
    drive_nerts(seed, {"players": players, "jokers": jokers, "tie_window_ms": 100})


def test_nerts_refusals_cover_the_common_codes() -> None:
    seen: set[str] = set()
    for seed in range(12):
        seen |= drive_nerts(seed, {"players": 2, "jokers": seed % 2 == 1})
    expected = {"nerts.work_pile_order", "nerts.foundation_needs_ace", "nerts.pile_empty", "action.bad_pile",
                "nerts.no_work_pile", "action.unknown_type", "nerts.pile_not_empty",
                "action.bad_count", "nerts.no_foundation", "nerts.as_not_joker"}
    assert expected <= seen, expected - seen


def test_nerts_foundation_refusals_name_cards_not_ids() -> None:
    packs = [layout_pack(nerts=["2S"], work=["AS", "KD", "5D", "3S"], stock=["AH"]),
             layout_pack(nerts=["2H"], work=["AS"])]
    match = NertsMatch({"players": 2, "tie_window_ms": 0})
    hand = match.start_hand({"packs": packs})
    hand.apply(0, {"type": "move", "from": "work:0", "to": "foundation:new"}, 10)
    hand.apply(0, {"type": "move", "from": "nerts", "to": "foundation:0"}, 20)
    with pytest.raises(IllegalAction) as late:
        hand.apply(1, {"type": "move", "from": "work:0", "to": "foundation:0"}, 30)
    assert late.value.code == "nerts.foundation_moved_on"
    assert late.value.params == {"card": "AS", "top_card": "2S", "pile": {"kind": "foundation", "number": None}}
    with pytest.raises(IllegalAction) as order:
        hand.apply(0, {"type": "move", "from": "work:1", "to": "work:2"}, 40)
    assert order.value.code == "nerts.work_pile_order" and "(work piles go down" in str(order.value)
    assert order.value.params == {"card": "KD", "onto_card": "5D", "pile": {"kind": "work", "number": 3}}
    with pytest.raises(IllegalAction) as suit:
        hand.apply(1, {"type": "move", "from": "nerts", "to": "foundation:0"}, 50)
    assert suit.value.code == "nerts.foundation_suit" and suit.value.params["top_card"] == "2S"
    assert suit.value.params["suit"] == "S"
    with pytest.raises(IllegalAction) as under:
        hand.apply(0, {"type": "under", "from": "work:3", "to": "work:1"}, 60)
    assert under.value.code == "nerts.under_order"
    assert under.value.params == {"card": "3S", "under_card": "KD", "pile": {"kind": "work", "number": 2}}


def drive_anemone(seed: int, players: int) -> set[str]:
    rng = random.Random(seed)
    match = AnemoneMatch(AnemoneOptions.from_dict({"players": players, "rounds": 1}))
    hand = match.start_hand(match.deal_cards(seed))
    seen: set[str] = set()
    ms = 0
    codes = ["1A", "10F", "5C", "11A", "JK1", "zz", 4]
    while not hand.is_over:
        seat: Any = rng.randrange(players) if rng.random() < 0.9 else rng.choice([None, 7, True])
        legal = hand.legal_actions(seat) if isinstance(seat, int) and not isinstance(seat, bool) else []
        view = hand.view(seat if isinstance(seat, int) and not isinstance(seat, bool) and seat < players else None)
        held = list(view.get("hand") or [])
        if legal and rng.random() < 0.4:
            action: Any = rng.choice(legal)
        else:
            action = {"type": rng.choice(["play", "play", "discard", "pass", 3])}
            action["card"] = rng.choice(held + codes) if held else rng.choice(codes)
            if rng.random() < 0.3:
                action["anemones"] = rng.choice([[1], [2], [1, 2], [3], "x", [True]])
            if rng.random() < 0.05:
                action["extra"] = 0
        if rng.random() < 0.02:
            action = rng.choice([[], {"no": "type"}])
        ms += 10
        when: Any = ms if rng.random() > 0.02 else rng.choice([-5, "x"])
        try:
            hand.apply(seat, action, when)
        except IllegalAction as error:
            assert str(error) == error.reason
            check_params(error.code, error.params, "anemone")
            seen.add(error.code)
    with pytest.raises(IllegalAction) as over:
        hand.apply(0, {"type": "play", "card": "1A"}, ms + 1)
    assert over.value.code == "hand.over"
    return seen


def test_anemone_refusals_keep_the_params_contract_and_cover_the_common_codes() -> None:
    seen: set[str] = set()
    for seed in range(6):
        seen |= drive_anemone(seed, 2 + seed % 5)
    expected = {"anemone.not_your_turn", "anemone.card_not_held", "anemone.suit_in_trick", "action.unknown_type",
                "action.bad_card", "anemone.bad_anemones", "anemone.discard_can_play", "action.no_seat",
                "anemone.anemones_not_held"}
    assert expected <= seen, expected - seen


# -- catalogues --------------------------------------------------------------------------------------------


def load(lang: str) -> dict[str, str]:
    data: dict[str, str] = json.loads((CATALOGUES / f"{lang}.json").read_text(encoding="utf-8"))
    return data


def test_the_english_catalogue_is_the_registry() -> None:
    assert load("en") == CODES


def test_every_code_declares_its_params_and_its_template_uses_only_those() -> None:
    assert set(PARAMS) == set(CODES)
    for code, template in CODES.items():
        assert placeholders(template) <= set(PARAMS[code]), code


def test_the_protocol_document_lists_every_code_with_its_params() -> None:
    text = (SRC.parent.parent / "docs" / "protocol.md").read_text()
    for code, names in PARAMS.items():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{code}` |")), None)
        assert row is not None, f"docs/protocol.md does not list {code}"
        listed = set(re.findall(r"`([a-z_]+)`", row.split("|")[2]))
        assert listed == set(names), (code, listed, names)


@pytest.mark.parametrize("lang", ["en", "ko", "ja"])
def test_every_code_has_wording_with_the_same_placeholders(lang: str) -> None:
    catalogue = load(lang)
    assert sorted(set(CODES) - set(catalogue)) == [], f"{lang}: codes without wording"
    assert sorted(set(catalogue) - set(CODES)) == [], f"{lang}: wording for unknown codes"
    for code, template in CODES.items():
        assert catalogue[code].strip(), (lang, code)
        assert placeholders(catalogue[code]) == placeholders(template), (lang, code)


@pytest.mark.parametrize("lang", ["ko", "ja"])
def test_korean_and_japanese_wording_has_no_latin_letters(lang: str) -> None:
    for code, text in load(lang).items():
        bare = re.sub(r"\{[a-z_]+\}", "", text)
        assert not re.search(r"[A-Za-z]", bare), (lang, code, text)


# -- the account and player refusals of the HTTP API ----------------------------------------------------------


def test_account_and_player_refusals_carry_their_registered_params(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from argon2 import PasswordHasher
    from starlette.testclient import TestClient

    from cardtable.server.edge.app import create_app
    from cardtable.server.players import passwords

    monkeypatch.setattr(passwords, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
    origin = {"Origin": "http://testserver"}
    seen: dict[str, int] = {}
    with TestClient(create_app(f"sqlite+aiosqlite:///{tmp_path / 'codes.db'}")) as client:
        def refused(response: Any) -> None:
            body = response.json()
            assert response.status_code >= 400 and set(body) == {"detail", "code", "params"}, body
            assert body["code"] in CODES and set(body["params"]) == set(PARAMS[body["code"]]), body
            render(body["code"], body["params"])  # the English template fills from what is sent
            seen[body["code"]] = seen.get(body["code"], 0) + 1

        def sign_up(name: str, password: str = "long enough", headers: dict[str, str] = origin) -> Any:
            return client.post("/api/accounts", json={"name": name, "password": password}, headers=headers)

        assert sign_up("Mina").status_code == 201
        for bad in ("", "x" * 40, "a  b", "a<b"):
            refused(sign_up(bad))
        refused(sign_up("MINA"))
        refused(sign_up("Other", "short"))
        refused(sign_up("Other", headers={"Origin": "http://elsewhere.example"}))
        refused(client.post("/api/session", json={"name": "Mina", "password": "wrong password"}, headers=origin))
        client.cookies.clear()
        refused(client.get("/api/me"))
        refused(client.get("/api/players/nobody-here"))
        refused(client.get("/api/players/Mina/matches?before=garbage"))
        for _ in range(6):
            client.post("/api/session", json={"name": "Mina", "password": "wrong again!"}, headers=origin)
        refused(client.post("/api/session", json={"name": "Mina", "password": "wrong again!"}, headers=origin))
    assert {code for code in CODES if code.startswith(("account.", "player."))} <= set(seen), seen
