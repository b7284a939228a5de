"""RFC 9002 RTT estimator and PTO against hand-worked examples.

Every expected number below is worked out by hand from the RFC text in the comment beside it.
"""

from __future__ import annotations

import pytest

from quicack.models.recovery import (
    AckReceived,
    RecoveryParams,
    RttOrder,
    RttState,
    SentPacket,
    default_pto_ms,
    first_pto_reduction_ms,
    instant_ack_is_spurious,
    pto_evolution,
    pto_ms,
    recompute_connection,
    rtt_samples,
    update_rtt,
)


def first(latest: float) -> RttState:
    return update_rtt(RttState(), latest, 0.0, pn_space="handshake", handshake_confirmed=False).state


def test_first_sample_sets_smoothed_and_half_rttvar_and_ignores_ack_delay():
    update = update_rtt(RttState(), 100.0, 30.0, pn_space="handshake", handshake_confirmed=False)
    assert update.state.smoothed_rtt_ms == 100.0
    assert update.state.rttvar_ms == 50.0
    assert update.state.min_rtt_ms == 100.0
    assert update.ack_delay_used_ms == 0.0
    # PTO = 100 + max(4 * 50, 1) = 300: "3 × first RTT" of the imc24 slides.
    assert pto_ms(update.state, pn_space="handshake", handshake_confirmed=False) == 300.0


def test_second_sample_appendix_a_order_uses_previous_smoothed_rtt():
    # min_rtt = 100, ack_delay 10 -> 120 >= 110 so adjusted = 110.
    # rttvar = 3/4*50 + 1/4*|100 - 110| = 40; smoothed = 7/8*100 + 1/8*110 = 101.25
    update = update_rtt(first(100.0), 120.0, 10.0, pn_space="handshake", handshake_confirmed=False)
    assert update.adjusted_rtt_ms == 110.0
    assert update.state.rttvar_ms == pytest.approx(40.0)
    assert update.state.smoothed_rtt_ms == pytest.approx(101.25)
    assert pto_ms(update.state, pn_space="handshake", handshake_confirmed=False) == pytest.approx(261.25)


def test_section_5_3_literal_order_differs_as_erratum_7539_describes():
    # Literal §5.3: rttvar uses the new smoothed_rtt: 3/4*50 + 1/4*|101.25 - 110| = 39.6875
    params = RecoveryParams(order=RttOrder.SECTION_5_3_LITERAL)
    update = update_rtt(first(100.0), 120.0, 10.0, pn_space="handshake", handshake_confirmed=False, params=params)
    assert update.state.rttvar_ms == pytest.approx(39.6875)
    assert update.state.smoothed_rtt_ms == pytest.approx(101.25)


def test_ack_delay_not_subtracted_below_min_rtt():
    # 104 < min_rtt 100 + ack_delay 10 -> the sample is used unadjusted.
    update = update_rtt(first(100.0), 104.0, 10.0, pn_space="handshake", handshake_confirmed=False)
    assert update.adjusted_rtt_ms == 104.0


def test_ack_delay_ignored_in_initial_space_by_default_and_used_when_asked():
    ignored = update_rtt(first(100.0), 120.0, 10.0, pn_space="initial", handshake_confirmed=False)
    assert ignored.ack_delay_used_ms == 0.0 and ignored.adjusted_rtt_ms == 120.0
    used = update_rtt(
        first(100.0), 120.0, 10.0, pn_space="initial", handshake_confirmed=False,
        params=RecoveryParams(ignore_initial_ack_delay=False),
    )
    assert used.adjusted_rtt_ms == 110.0


def test_ack_delay_capped_at_max_ack_delay_only_after_confirmation():
    params = RecoveryParams(peer_max_ack_delay_ms=25.0)
    before = update_rtt(first(100.0), 200.0, 40.0, pn_space="appdata", handshake_confirmed=False, params=params)
    after = update_rtt(first(100.0), 200.0, 40.0, pn_space="appdata", handshake_confirmed=True, params=params)
    assert before.ack_delay_used_ms == 40.0 and before.adjusted_rtt_ms == 160.0
    assert after.ack_delay_used_ms == 25.0 and after.adjusted_rtt_ms == 175.0


def test_pto_adds_max_ack_delay_only_for_confirmed_appdata_and_backs_off():
    state = first(10.0)  # smoothed 10, rttvar 5 -> 30
    params = RecoveryParams(peer_max_ack_delay_ms=25.0)
    assert pto_ms(state, pn_space="appdata", handshake_confirmed=False, params=params) == 30.0
    assert pto_ms(state, pn_space="handshake", handshake_confirmed=True, params=params) == 30.0
    assert pto_ms(state, pn_space="appdata", handshake_confirmed=True, params=params) == 55.0
    assert pto_ms(state, pn_space="appdata", handshake_confirmed=True, pto_count=2, params=params) == 220.0


def test_granularity_floor():
    state = RttState(latest_rtt_ms=1, min_rtt_ms=1, smoothed_rtt_ms=1.0, rttvar_ms=0.1, has_sample=True)
    assert pto_ms(state, pn_space="initial", handshake_confirmed=False) == 2.0


def test_default_pto_is_three_initial_rtts():
    assert default_pto_ms() == pytest.approx(999.0)
    assert default_pto_ms(RecoveryParams(initial_rtt_ms=100.0)) == pytest.approx(300.0)


def sent(t, space, pn, eliciting=True):
    return SentPacket(time_ms=t, pn_space=space, packet_number=pn, ack_eliciting=eliciting)


def ack(t, space, ranges, delay=0.0):
    return AckReceived(time_ms=t, pn_space=space, ack_ranges=tuple(ranges), ack_delay_ms=delay)


def test_sample_only_when_largest_newly_acked_and_ack_eliciting():
    packets = [
        sent(0, "initial", 0),
        sent(1, "appdata", 0, eliciting=False),  # ACK-only packet
        sent(2, "appdata", 1),
        sent(3, "appdata", 2),
    ]
    acks = [
        ack(20, "initial", [(0, 0)]),  # sample 1: 20 ms
        ack(21, "appdata", [(0, 0)]),  # only a non-eliciting packet newly acked: no sample
        ack(25, "appdata", [(0, 1)]),  # largest 1 newly acked, eliciting: sample 23 ms
        ack(26, "appdata", [(0, 1)]),  # duplicate ACK: nothing new, no sample
        ack(30, "appdata", [(2, 2)]),  # sample 27 ms
        ack(31, "appdata", [(0, 5)]),  # largest 5 was never sent: no sample
    ]
    outcomes = recompute_connection(packets, acks)
    assert [o.newly_acked for o in outcomes] == [1, 1, 1, 0, 1, 0]
    samples = [o.sample for o in outcomes if o.sample]
    assert [s.latest_rtt_ms for s in samples] == [20, 23, 27]
    assert [s.sample_index for s in samples] == [0, 1, 2]


def test_largest_acked_not_new_gives_no_sample_even_if_lower_packets_are_new():
    packets = [sent(0, "appdata", 0), sent(1, "appdata", 1), sent(2, "appdata", 2)]
    acks = [ack(10, "appdata", [(2, 2)]), ack(11, "appdata", [(0, 2)])]
    samples = rtt_samples(packets, acks)
    assert len(samples) == 1 and samples[0].largest_acked == 2


def test_handshake_confirmation_time_switches_ack_delay_cap_and_pto():
    packets = [sent(0, "appdata", 0), sent(100, "appdata", 1)]
    acks = [ack(50, "appdata", [(0, 0)], delay=5.0), ack(200, "appdata", [(0, 1)], delay=40.0)]
    samples = rtt_samples(
        packets, acks, handshake_confirmed_ms=150.0, params=RecoveryParams(peer_max_ack_delay_ms=25.0)
    )
    assert [s.handshake_confirmed for s in samples] == [False, True]
    assert samples[1].ack_delay_ms == 25.0
    # smoothed = 7/8*50 + 1/8*75 = 53.125 ; rttvar = 3/4*25 + 1/4*|50-75| = 25 -> PTO 53.125+100+25
    assert samples[1].pto_ms == pytest.approx(178.125)


def test_fig2_wfc_pto_starts_higher_and_converges_towards_instant_ack():
    rtt, delta = 20.0, 100.0
    wfc = pto_evolution(rtt + delta, rtt, 60)
    iack = pto_evolution(rtt, rtt, 60)
    assert wfc[0] == 3 * (rtt + delta) and iack[0] == 3 * rtt
    assert all(w >= i for w, i in zip(wfc, iack, strict=True))
    # The inflated estimate first grows (rttvar absorbs |smoothed - sample|) before it decays.
    assert max(wfc) > wfc[0]
    assert wfc[-1] - iack[-1] < 1.0
    assert iack[-1] == pytest.approx(rtt + 1.0, abs=0.01)  # RTT + kGranularity
    within_10_percent = [next(i for i, p in enumerate(curve) if p <= 1.1 * (rtt + 1)) for curve in (wfc, iack)]
    assert within_10_percent[0] > 3 * within_10_percent[1]


def test_fig4_reduction_is_three_delta_and_spurious_beyond_three_rtt():
    assert first_pto_reduction_ms(9.0, 10.0) == pytest.approx(30.0)
    assert not instant_ack_is_spurious(9.0, 26.9)
    assert instant_ack_is_spurious(9.0, 27.0)
