"""Nerts' automatic call (``auto_nerts``, docs/rules/nerts.md): the first emptied Nerts pile calls, and a second one
emptied inside the in-flight window does not take the call over (its player's move still counts)."""

from __future__ import annotations

from cardtable.games.nerts import NertsMatch, NertsOptions, layout_pack


def test_a_second_pile_emptied_in_flight_does_not_take_over_the_call() -> None:
    options = NertsOptions(players=2, nerts_pile_size=5, auto_nerts=True)
    packs = [layout_pack(nerts=[f"{r}{suit}" for r in ("A", "2", "3", "4", "5")], nerts_pile_size=5,
                         work_piles=options.work_piles, jokers=options.jokers) for suit in ("S", "H")]
    state = NertsMatch(options).start_hand({"packs": packs})
    state.apply(0, {"type": "move", "from": "nerts", "to": "foundation:new"}, 10)
    state.apply(1, {"type": "move", "from": "nerts", "to": "foundation:new"}, 11)
    for ms in (20, 30, 40):
        state.apply(0, {"type": "move", "from": "nerts", "to": "foundation:0"}, ms)
        state.apply(1, {"type": "move", "from": "nerts", "to": "foundation:1"}, ms + 1)
    called = state.apply(0, {"type": "move", "from": "nerts", "to": "foundation:0"}, 50)
    assert called[-1] == {"type": "nerts", "seat": 0}
    late = state.apply(1, {"type": "move", "from": "nerts", "to": "foundation:1"}, 120)
    assert {"type": "nerts", "seat": 1} not in late
    assert state.called == 0
    assert state.clock_action() == (200, {"type": "end_hand", "reason": "nerts"})
