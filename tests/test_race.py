"""cardtable.race: delay estimates, which plays race, and the order and stamps racing plays get."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cardtable.race import DEFAULT_CAP_MS, DelayEstimator, RaceOrderer, race_keys

FOUNDATION = frozenset({"foundation:0"})


# -- the delay estimate ------------------------------------------------------------------------------------


def test_no_samples_means_no_compensation() -> None:
    assert DelayEstimator().estimate() == 0


def test_the_estimate_ignores_jitter_spikes() -> None:
    est = DelayEstimator(window=16)
    for i in range(16):
        est.add(120 if i % 3 else 700)  # every third round trip is a 700 ms spike
    assert est.estimate() == 60


def test_the_window_slides() -> None:
    est = DelayEstimator(window=4)
    for _ in range(4):
        est.add(200)
    for _ in range(4):
        est.add(20)
    assert est.estimate() == 10 and est.samples == 4


@pytest.mark.parametrize("bad", [-1, math.nan, math.inf, "10", True])
def test_a_bad_round_trip_is_refused_and_changes_nothing(bad: object) -> None:
    est = DelayEstimator()
    est.add(40)
    with pytest.raises(ValueError, match="round trip"):
        est.add(bad)  # type: ignore[arg-type]
    assert est.samples == 1 and est.estimate() == 20


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="cap_ms"):
        DelayEstimator(cap_ms=-1)
    with pytest.raises(ValueError, match="window"):
        DelayEstimator(window=0)
    with pytest.raises(ValueError, match="quantile"):
        DelayEstimator(quantile=1.5)
    with pytest.raises(ValueError, match="cap_ms"):
        RaceOrderer(cap_ms=-5)


@given(st.lists(st.floats(min_value=0, max_value=1e6), min_size=1, max_size=40), st.integers(0, 400))
def test_the_estimate_is_never_past_the_cap(rtts: list[float], cap: int) -> None:
    est = DelayEstimator(cap_ms=cap)
    for rtt in rtts:
        est.add(rtt)
    assert 0 <= est.estimate() <= cap


@given(st.lists(st.floats(min_value=0, max_value=2000), min_size=1, max_size=16), st.floats(0, 5000))
def test_answering_late_never_lowers_the_estimate(rtts: list[float], extra: float) -> None:
    honest, liar = DelayEstimator(), DelayEstimator()
    for rtt in rtts:
        honest.add(rtt)
        liar.add(rtt + extra)
    assert honest.estimate() <= liar.estimate() <= DEFAULT_CAP_MS


# -- which plays race --------------------------------------------------------------------------------------


def test_race_keys() -> None:
    assert race_keys({"type": "move", "from": "work:1", "to": "foundation:4"}) == {"foundation:4"}
    assert race_keys({"type": "move", "from": "nerts", "to": "foundation:new"}) == frozenset()
    assert race_keys({"type": "move", "from": "nerts", "to": "work:0"}) == frozenset()
    assert race_keys({"type": "flip"}) == frozenset()
    assert race_keys({"type": "nerts"}) == {"end"}
    assert race_keys({"type": "end_hand", "reason": "nerts"}) == {"end"}
    assert race_keys({"type": "move", "from": "waste", "to": "work:2"}, shared_layout=True, pack=1) == {"layout:1"}
    assert race_keys({"type": "move", "from": "waste", "to": 7}) == frozenset()


# -- ordering ----------------------------------------------------------------------------------------------


def test_without_delays_plays_go_in_arrival_order_at_once() -> None:
    orderer: RaceOrderer[str] = RaceOrderer()
    orderer.submit("a", 0, 10, FOUNDATION)
    orderer.submit("b", 1, 10, FOUNDATION)
    orderer.submit("c", 0, 12)
    assert orderer.release(12) == [("a", 10), ("b", 10), ("c", 12)]
    assert orderer.held == 0 and orderer.next_due() is None


def test_an_earlier_sent_far_play_goes_first_and_the_near_one_waits_at_most_the_far_delay() -> None:
    orderer: RaceOrderer[str] = RaceOrderer()
    orderer.set_delay(0, 0)
    orderer.set_delay(1, 120)
    orderer.submit("near", 0, 1000, FOUNDATION)
    assert orderer.release(1000) == [] and orderer.next_due() == 1120
    orderer.submit("far", 1, 1110, FOUNDATION)  # sent at 990
    assert orderer.release(1110) == [("far", 990)]
    assert orderer.release(1119) == []
    assert orderer.release(1120) == [("near", 1000)]


def test_a_changed_delay_changes_how_long_the_next_racing_play_waits() -> None:
    # the same delay set again (the table does it at every play) changes nothing; a new one counts at once
    orderer: RaceOrderer[str] = RaceOrderer()
    orderer.set_delay(0, 0)
    orderer.set_delay(1, 40)
    orderer.submit("near", 0, 1000, FOUNDATION)
    assert orderer.next_due() == 1040
    assert orderer.release(1040) == [("near", 1000)]
    orderer.set_delay(1, 40)
    orderer.submit("near again", 0, 2000, FOUNDATION)
    assert orderer.next_due() == 2040
    assert orderer.release(2040) == [("near again", 2000)]
    orderer.set_delay(1, 130)  # seat 1 is farther now
    orderer.submit("near last", 0, 3000, FOUNDATION)
    assert orderer.next_due() == 3130
    orderer.set_delay(1, 0)
    orderer.set_delay(2, 70)
    assert orderer.horizon(0) == 70 and orderer.horizon(2) == 0


def test_the_estimate_follows_each_new_round_trip() -> None:
    est = DelayEstimator(window=4)
    assert est.estimate() == 0
    est.add(100)
    assert est.estimate() == 50
    est.add(20)
    assert est.estimate() == 10  # the lower quartile of (100, 20)


def test_a_play_that_does_not_race_is_not_held_but_keeps_its_seats_order() -> None:
    orderer: RaceOrderer[str] = RaceOrderer()
    orderer.set_delay(0, 0)
    orderer.set_delay(1, 100)
    orderer.submit("near 5S", 0, 500, FOUNDATION)
    orderer.submit("near flip", 0, 520)
    orderer.submit("far flip", 1, 530)
    assert orderer.release(530) == [("far flip", 430)]
    assert orderer.release(600) == [("near 5S", 500), ("near flip", 500)]


def test_stamps_of_plays_that_do_not_race_stay_below_a_rivals_send_time() -> None:
    # near plays a card, then flips while the far seat's tie card for the same place is in flight
    orderer: RaceOrderer[str] = RaceOrderer()
    orderer.set_delay(0, 0)
    orderer.set_delay(1, 100)
    orderer.submit("near 5S", 0, 1000, FOUNDATION)
    assert orderer.release(1100) == [("near 5S", 1000)]
    orderer.submit("near flip", 0, 1150)
    assert orderer.release(1150) == [("near flip", 1050)]
    orderer.submit("far 5S", 1, 1190, FOUNDATION)  # sent at 1090: 90 ms after the near card, a tie
    assert orderer.release(1190) == [("far 5S", 1090)]


def test_compensation_is_capped() -> None:
    orderer: RaceOrderer[str] = RaceOrderer(cap_ms=150)
    orderer.set_delay(1, 10_000)
    assert orderer.delay(1) == 150 and orderer.horizon(0) == 150 and orderer.horizon(1) == 0
    orderer.submit("liar", 1, 2000, FOUNDATION)
    assert orderer.release(2000) == [("liar", 1850)]


def test_cap_zero_is_arrival_order() -> None:
    orderer: RaceOrderer[str] = RaceOrderer(cap_ms=0)
    orderer.set_delay(1, 100)
    orderer.submit("near", 0, 100, FOUNDATION)
    orderer.submit("far", 1, 150, FOUNDATION)
    assert orderer.release(150) == [("near", 100), ("far", 150)]


def test_the_clock_waits_for_plays_sent_before_it_fell_due() -> None:
    orderer: RaceOrderer[str] = RaceOrderer()
    orderer.set_delay(1, 80)
    orderer.submit("end_hand", None, 5000, race_keys({"type": "end_hand", "reason": "nerts"}))
    assert orderer.next_due() == 5080
    orderer.submit("far last card", 1, 5060, FOUNDATION)  # sent at 4980
    assert orderer.release(5080) == [("far last card", 4980), ("end_hand", 5000)]


def test_reset_drops_what_is_held() -> None:
    orderer: RaceOrderer[str] = RaceOrderer()
    orderer.set_delay(1, 50)
    orderer.submit("x", 0, 100, FOUNDATION)
    assert orderer.reset(0) == ["x"] and orderer.held == 0 and orderer.last_ms == 0
    assert orderer.delay(1) == 50


plays = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 2000), st.booleans()),  # seat, send time, racing
    min_size=1,
    max_size=30,
)


@given(plays, st.lists(st.integers(0, 200), min_size=4, max_size=4), st.integers(0, 200))
def test_ordering_invariants(items: list[tuple[int, int, bool]], delays: list[int], cap: int) -> None:
    """Delivered in send order per seat over a FIFO link with an honest, uncapped-or-capped estimate:
    every play is released once, stamps never decrease and never pass arrival, each seat's order is kept,
    nothing waits longer than the cap, and racing plays from different seats go in send-time order whenever
    both links are within the cap."""
    orderer: RaceOrderer[int] = RaceOrderer(cap_ms=cap)
    for seat, delay in enumerate(delays):
        orderer.set_delay(seat, delay)
    # each seat sends in time order; arrival = send + true delay
    by_seat: dict[int, list[int]] = {}
    arrivals = []
    for seat, sent, _ in items:
        by_seat.setdefault(seat, []).append(sent)
    counters = {s: sorted(v) for s, v in by_seat.items()}
    sends: dict[int, tuple[int, int, bool, int]] = {}
    for index, (seat, _, racing) in enumerate(items):
        sent = counters[seat].pop(0)
        arrivals.append((sent + delays[seat], index, seat, sent, racing))
        sends[index] = (seat, sent, racing, sent + delays[seat])
    arrivals.sort()
    released: list[tuple[int, int, int]] = []  # index, stamp, release time

    def run_until(t: int) -> None:
        while True:
            due = orderer.next_due()
            if due is None or due > t:
                break
            for item, stamp in orderer.release(due):
                released.append((item, stamp, due))
        for item, stamp in orderer.release(t):
            released.append((item, stamp, t))

    for arrived, index, seat, _sent, racing in arrivals:
        run_until(arrived)
        orderer.submit(index, seat, arrived, FOUNDATION if racing else ())
        for item, stamp in orderer.release(arrived):
            released.append((item, stamp, arrived))
    run_until(10_000)
    assert sorted(i for i, _, _ in released) == list(range(len(items)))
    stamps = [stamp for _, stamp, _ in released]
    assert stamps == sorted(stamps)
    position = {index: n for n, (index, _, _) in enumerate(released)}
    for index, stamp, at in released:
        seat, sent, racing, arrived = sends[index]
        assert stamp <= arrived
        assert at - arrived <= cap
    for seat in by_seat:
        mine = [i for i, _, _ in released if sends[i][0] == seat]
        assert [sends[i][1] for i in mine] == sorted(sends[i][1] for i in mine)
    for a, (seat_a, sent_a, racing_a, _) in sends.items():
        for b, (seat_b, sent_b, racing_b, _) in sends.items():
            if (
                racing_a
                and racing_b
                and seat_a != seat_b
                and sent_a < sent_b
                and delays[seat_a] <= cap
                and delays[seat_b] <= cap
            ):
                assert position[a] < position[b], (a, b)


# -- the estimate's settings, exactly as documented -----------------------------------------------------------


def test_the_default_window_is_the_last_16_round_trips() -> None:
    # docs/protocol.md: "the lower quartile of the last 16 round trips" (the server builds its estimators so)
    est = DelayEstimator(quantile=0.0)  # the lowest round trip of the window
    est.add(0)
    for _ in range(16):
        est.add(100)
    assert est.samples == 16 and est.estimate() == 50  # the 0 ms round trip has left the window


def test_the_window_and_quantile_bounds_are_accepted() -> None:
    one = DelayEstimator(window=1)  # the smallest window: the latest round trip alone
    one.add(300)
    one.add(40)
    assert one.samples == 1 and one.estimate() == 20
    lowest, highest = DelayEstimator(quantile=0.0), DelayEstimator(quantile=1.0)
    for rtt in (60, 20, 100, 40):
        lowest.add(rtt)
        highest.add(rtt)
    assert lowest.estimate() == 10 and highest.estimate() == 50
    with pytest.raises(ValueError, match="quantile"):
        DelayEstimator(quantile=-0.01)


@given(
    st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]),
    st.integers(0, 4).map(lambda k: 4 * k + 1),  # 4k + 1 samples: every quartile is one of them
    st.data(),
)
def test_the_estimate_is_the_quantile_of_the_window_halved(quantile: float, n: int, data: st.DataObject) -> None:
    rtts = data.draw(st.lists(st.integers(0, 290), min_size=n, max_size=n))
    est = DelayEstimator(window=n, quantile=quantile)
    for rtt in rtts:
        est.add(rtt)
    # with 4k + 1 samples the usual (inclusive) quartiles are samples themselves: no interpolation to argue about
    quartiles = statistics.quantiles(rtts, n=4, method="inclusive") if n > 1 else [rtts[0]] * 3
    exact = {0.0: min(rtts), 0.25: quartiles[0], 0.5: quartiles[1], 0.75: quartiles[2], 1.0: max(rtts)}[quantile]
    assert est.estimate() == round(exact / 2)


# -- which plays race: the table's clock actions -----------------------------------------------------------


def test_the_tables_clock_actions_race_for_the_end_and_never_for_a_layout() -> None:
    assert race_keys({"type": "rotate"}) == {"end"}
    for kind in ("rotate", "end_hand"):
        assert race_keys({"type": kind}, shared_layout=True, pack=1) == {"end"}
    assert race_keys({"type": "nerts"}, shared_layout=True, pack=1) == {"end", "layout:1"}
    assert race_keys({"type": "flip"}, shared_layout=True) == {"layout:0"}  # the first pack unless told


# -- ordering when delays change between plays (the server sets them at every ping) --------------------------


def test_a_far_seat_waits_for_nobody_even_after_the_clock_asked_its_horizon() -> None:
    orderer: RaceOrderer[str] = RaceOrderer()
    orderer.set_delay(0, 30)
    orderer.set_delay(1, 100)
    orderer.submit("end", None, 5000, race_keys({"type": "end_hand", "reason": "nerts"}))
    assert orderer.horizon(None) == 100  # the clock waits for the farthest seat
    assert orderer.horizon(1) == 30 and orderer.horizon(0) == 100  # a seat waits only for the others


def test_a_later_sent_play_never_overtakes_a_held_one_when_its_seat_got_nearer() -> None:
    orderer: RaceOrderer[str] = RaceOrderer()
    orderer.set_delay(0, 0)
    orderer.set_delay(1, 100)
    orderer.submit("near 5S", 0, 1000, FOUNDATION)  # sent 1000, waits for seat 1 until 1100
    orderer.set_delay(1, 0)  # seat 1's link got better
    orderer.submit("other 5S", 1, 1050, FOUNDATION)  # sent 1050: nothing to wait for, but sent later
    assert orderer.release(1050) == [("near 5S", 1000), ("other 5S", 1050)]
    assert orderer.held == 0


def test_racing_plays_sent_at_the_same_time_go_in_arrival_order() -> None:
    orderer: RaceOrderer[str] = RaceOrderer()
    orderer.set_delay(0, 0)
    orderer.set_delay(1, 100)
    orderer.submit("first", 0, 1000, FOUNDATION)  # sent 1000, waits until 1100
    orderer.set_delay(1, 0)
    orderer.submit("second", 1, 1000, FOUNDATION)  # sent 1000 too, nothing to wait for
    assert orderer.release(1000) == [("first", 1000), ("second", 1000)]


def test_a_play_that_does_not_race_never_releases_a_racing_play_still_waiting() -> None:
    orderer: RaceOrderer[str] = RaceOrderer()
    orderer.set_delay(0, 0)
    orderer.set_delay(1, 100)
    orderer.set_delay(2, 0)
    orderer.submit("near 5S", 0, 1000, FOUNDATION)  # waits until 1100 for seat 1
    orderer.submit("flip", 2, 1050)  # seat 2's own business
    assert orderer.release(1050) == [("flip", 950)]
    assert orderer.release(1099) == []
    assert orderer.release(1100) == [("near 5S", 1000)]


def test_a_play_that_does_not_race_is_stamped_no_later_than_a_held_racing_play_after_delays_change() -> None:
    orderer: RaceOrderer[str] = RaceOrderer()
    orderer.set_delay(0, 0)
    orderer.set_delay(1, 100)
    orderer.submit("near 5S", 0, 1000, FOUNDATION)  # sent 1000, held until 1100
    orderer.set_delay(1, 0)  # nobody is far now: a flip is stamped at its arrival...
    orderer.submit("flip", 2, 1050)
    assert orderer.release(1050) == [("flip", 1000)]  # ...but never past the held card's send time
    assert orderer.release(1100) == [("near 5S", 1000)]  # which keeps its own stamp for the tie window


def test_reset_without_a_time_starts_the_hand_at_zero() -> None:
    orderer: RaceOrderer[str] = RaceOrderer()
    orderer.submit("a", 0, 700)
    assert orderer.release(700) == [("a", 700)]
    assert orderer.reset() == [] and orderer.last_ms == 0
    orderer.submit("b", 0, 5)
    assert orderer.release(5) == [("b", 5)]
