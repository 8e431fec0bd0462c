"""cardtable.games.nerts plays exactly as it did: golden fingerprints of whole seeded hands.

Each case plays one hand through the simulator (:func:`cardtable.sim.nerts.play_timed_hand`: bots, the clock, the
race ordering) and replays its record step by step, hashing every applied action, the events each one gave, every
seat's and a spectator's view and legal actions at regular steps, what the engine says to malformed, misplaced and
late actions there (``IllegalAction`` reason, code and params), and the final snapshot, scores and card places.
The fingerprints below were computed from the engine before it was optimised (issue 28), so any change to what
the rules do, to what a seat sees, or to the shape of an action, event or view, fails here.

When a rule is changed on purpose, print the new fingerprints with
``.venv/bin/python tests/test_nerts_equivalence.py`` and paste them below, saying why in the commit.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest

from cardtable import records
from cardtable.bots import get_bot
from cardtable.engine import IllegalAction
from cardtable.games.nerts import NertsMatch, NertsOptions, NertsState
from cardtable.sim.nerts import play_timed_hand

# name: (seat bot specs, options, deal seed, one-way delays per seat in ms or None, cap_ms)
CASES: dict[str, tuple[tuple[str, ...], dict[str, Any], int, tuple[int, ...] | None, int]] = {
    "solo-greedy": (("greedy",), {}, 3, None, 60),
    "two-greedy": (("greedy", "greedy"), {}, 1, None, 60),
    "two-greedy-b": (("greedy", "greedy"), {}, 2, None, 60),
    "four-greedy": (("greedy",) * 4, {}, 1, None, 60),
    "four-greedy-b": (("greedy",) * 4, {}, 7, None, 60),
    "four-greedy-levels": (("greedy:easy", "greedy:medium", "greedy:hard", "greedy"), {}, 4, None, 60),
    "six-greedy-jokers": (("greedy",) * 6, {"jokers": True}, 5, None, 60),
    "six-greedy-flip-one": (("greedy",) * 6, {"flip_count": 1, "work_piles": 5}, 6, None, 60),
    "two-jokers-small": (
        ("greedy", "greedy:hard"),
        {"jokers": True, "nerts_pile_size": 5, "work_piles": 6, "flip_count": 1},
        8,
        None,
        60,
    ),
    "four-expert": (("expert:hard",) * 4, {}, 9, None, 60),
    "four-expert-mixed": (
        ("expert:easy", "expert:medium", "greedy", "expert:hard"),
        {"work_piles": 3},
        10,
        None,
        60,
    ),
    "six-expert-jokers": (("expert:hard", "greedy") * 3, {"jokers": True, "tie_window_ms": 0}, 11, None, 60),
    "four-partners": (
        ("greedy", "expert:hard", "greedy", "expert:hard"),
        {"partnerships": True, "auto_nerts": True, "nerts_bonus": 10, "nerts_penalty": 1},
        12,
        None,
        60,
    ),
    "four-delays-races": (
        ("greedy",) * 4,
        {"in_flight_ms": 0, "tie_window_ms": 500},
        13,
        (0, 40, 90, 150),
        120,
    ),
    "three-delays-no-cap": (
        ("greedy:hard", "expert:hard", "greedy"),
        {"stall_seconds": 10},
        14,
        (0, 30, 60),
        0,
    ),
    "eight-greedy": (("greedy",) * 8, {"nerts_pile_size": 20}, 15, None, 60),
}

# computed from the engine before issue 28's optimisation: (applied actions, sha256 of everything above)
GOLDEN: dict[str, tuple[int, str]] = {
    "solo-greedy": (105, "56f051f0c8747bc0f4121a238a1eab7626f0fe61fdf6562b0b47d261c1d37b57"),
    "two-greedy": (139, "8d90236ba7dac85a21e7b5888549922330766c72bd5de86f061a69393a5420a6"),
    "two-greedy-b": (141, "c5b7583c38ec3a595ca19c72cb2041b30ee2ee3a1ce04b21c2ef0630959c01dd"),
    "four-greedy": (126, "a6d6a33b2c75c734503409fb136b68051ba3e73f56b4fb902b83f7994a10cafc"),
    "four-greedy-b": (199, "b5a0ac848393dc76a5b30dfaac613c3d376095875850b3959b103763099e2d82"),
    "four-greedy-levels": (154, "22c7dce26a3c1be7bf090e2466f1e1654bceda425580bd6681cfb4eb34fe3ed1"),
    "six-greedy-jokers": (184, "c857748d8c74d14a2ad17f786a74cde7fd3333fe8ace9d252729e499c0309708"),
    "six-greedy-flip-one": (171, "5e68a3e157e9d539dd936f2f0ad6a358ca7e3a1c001cf5eec840f06a0121d610"),
    "two-jokers-small": (45, "17bf6d05ef56786f2b5d6df85b0abadfcbd1aee27a547c2a91c51a84d7e90e0f"),
    "four-expert": (180, "812516224e023385000d413fe00652e2a9a7e502c1881a7c8d192d0c2742613b"),
    "four-expert-mixed": (667, "213943c55209f94b4f8f3b4898f7b9f2abba336e30ee7bde98da8d7359f4e00e"),
    "six-expert-jokers": (212, "2f5d7a9bdca627a61b81a497983bd04388458aeca7c2240a32abfd26d57d6db0"),
    "four-partners": (1537, "255dadae1f9771380775fc60cf02eaeb874d069abe9915d38c03c1e2509f86f6"),
    "four-delays-races": (165, "22e9ee3e53f2074c0f2d5878b6b67d11faa9f1089fc8a110a3766e0b80cf4081"),
    "three-delays-no-cap": (149, "69b6302897a34547b71df4f0e09097617e366a8830a504bda13eeb33d8edb46d"),
    "eight-greedy": (378, "ec94c68836b488491279a9dc366765c7bd7fb6119baa6a9f0c4bc4c32c036590"),
}

EVERY = 5  # views, legal actions and probes at every fifth applied action (and at the start and end)


def _feed(digest: Any, label: str, value: Any) -> None:
    digest.update(label.encode())
    digest.update(json.dumps(value, separators=(",", ":"), default=repr).encode())


def _refusal(state: NertsState, seat: int | None, action: Any, ms: Any) -> Any:
    """What ``apply`` does with ``action`` on a copy of ``state``: its events and the snapshot after, or the
    refusal's reason, code and params (and then the state must be unchanged)."""
    trial = copy.deepcopy(state)
    before = trial.snapshot()
    try:
        events = trial.apply(seat, action, ms)
    except IllegalAction as error:
        assert trial.snapshot() == before, f"a refused {action!r} changed the state"
        return ["refused", str(error), error.code, error.params]
    return ["applied", events, trial.snapshot()]


def _probes(state: NertsState, players: int) -> list[Any]:
    """Actions a client might send now: malformed ones, a seat's legal actions sent for another seat, and late ones."""
    ms = state.ms
    out: list[Any] = []
    bad: list[Any] = [
        {"type": "move", "from": "work:9", "to": "work:0"},
        {"type": "move", "from": "nerts", "to": "foundation:99"},
        {"type": "move", "from": "waste", "to": "foundation:new"},
        {"type": "move", "from": "work:0", "to": "work:1", "count": 0},
        {"type": "move", "from": "work:0", "to": "work:1", "count": 3},
        {"type": "move", "from": "nerts", "to": "work:0", "as": "7H"},
        {"type": "under", "from": "nerts", "to": "work:1"},
        {"type": "under", "from": "work:1", "to": "work:1"},
        {"type": "flip", "extra": 1},
        {"type": "cycle"},
        {"type": "stuck"},
        {"type": "nerts"},
        {"type": "rotate"},
        {"type": "dance"},
        ["not", "a", "dict"],
    ]
    for action in bad:
        out.append(_refusal(state, 0, action, ms))
    out.append(_refusal(state, None, {"type": "flip"}, ms))
    out.append(_refusal(state, None, {"type": "end_hand", "reason": "nerts"}, ms))
    out.append(_refusal(state, players, {"type": "flip"}, ms))
    out.append(_refusal(state, 0, {"type": "flip"}, ms - 1 if ms else -1))
    for seat in range(players):
        other = (seat + 1) % players
        for action in state.legal_actions(other, ms)[:6]:
            out.append(_refusal(state, seat, action, ms + 30))
        for action in state.legal_actions(seat, ms)[-3:]:
            out.append(_refusal(state, seat, action, ms + 400))  # later: the tie and in-flight windows
    return out


def _look(digest: Any, state: NertsState, players: int, label: str, probe: bool) -> None:
    for seat in range(players):
        _feed(digest, f"{label}:view{seat}", state.view(seat))
        _feed(digest, f"{label}:legal{seat}", state.legal_actions(seat))
        _feed(digest, f"{label}:legal{seat}+90", state.legal_actions(seat, state.ms + 90))
    _feed(digest, f"{label}:spectator", state.view(None))
    _feed(digest, f"{label}:scores", state.scores())
    _feed(digest, f"{label}:clock", state.clock_action())
    if probe:
        _feed(digest, f"{label}:probes", _probes(state, players))


def fingerprint(name: str) -> tuple[int, str]:
    """``(applied actions, sha256)`` of case ``name`` played by the engine as it is now."""
    specs, extra, seed, delays, cap_ms = CASES[name]
    players = len(specs)
    options = {**extra, "players": players}
    infos = [get_bot("nerts", spec) for spec in specs]
    match = NertsMatch(NertsOptions.from_dict(options))
    record = records.new_record(
        "nerts", [records.Seat(name=f"b{i}", bot=s) for i, s in enumerate(specs)], options
    )
    bots = [info.make(seed * 100 + i) for i, info in enumerate(infos)]
    result = play_timed_hand(
        match, bots, seed, record, reactions=[i.reaction_ms for i in infos], delays=delays, cap_ms=cap_ms
    )
    digest = hashlib.sha256()
    _feed(digest, "result", [result.scores, result.ended, result.extra, match.totals])
    hand = record.hands[0]
    _feed(digest, "deal", hand.deal)
    state = NertsMatch(NertsOptions.from_dict(options)).start_hand(hand.deal)
    _look(digest, state, players, "start", True)
    for step, entry in enumerate(hand.actions):
        _feed(digest, f"{step}:action", [entry.seat, entry.ms, entry.action])
        if entry.seat is not None:
            assert entry.action in state.legal_actions(entry.seat, entry.ms), (
                f"{name}: step {step} not listed"
            )
        _feed(digest, f"{step}:events", state.apply(entry.seat, entry.action, entry.ms))
        if step % EVERY == 0:
            _look(digest, state, players, str(step), step % (EVERY * 4) == 0)
    assert state.is_over
    _look(digest, state, players, "end", True)
    _feed(digest, "snapshot", state.snapshot())
    _feed(digest, "places", state.card_places())
    _feed(digest, "ended", [state.ended, state.called, state.last_progress_ms, state.to_act()])
    return len(hand.actions), digest.hexdigest()


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_seeded_hand_plays_exactly_as_before(name: str) -> None:
    assert fingerprint(name) == GOLDEN[name]


if __name__ == "__main__":
    for case in CASES:
        print(f"    {case!r}: {fingerprint(case)!r},")
