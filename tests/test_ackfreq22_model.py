"""ackfreq22's Eq. (1)–(5): the model's arithmetic and the paper's own example numbers (formulas only: no data)."""

from __future__ import annotations

import pytest

from quicack.models import ackfreq22_equations as model
from quicack.models.ack_overhead import quic_ack

MEGABYTE = 1_000_000
QUIC_PAYLOAD = 1_350  # bytes of stream data per full 1-RTT packet of a 1 MB download (an assumption of this test)


def test_a_timer_ack_adds_the_uncovered_part_of_an_ack() -> None:
    assert model.acks_in_sequence(100, 10) == 10
    # 4 timer ACKs, each covering half of AR: 2 ACKs' worth more than the ratio alone
    assert model.acks_in_sequence(100, 10, timer_acks=4, alpha=0.5) == 12
    assert model.acks_in_sequence(100, 10, timer_acks=4, alpha=1.0) == 10  # a timer ACK covering AR costs nothing extra


def test_two_phase_policy_is_chromes() -> None:
    # Chrome: AR 2 for 100 packets then AR 10; with 1,000 packets that is 50 + 90 ACKs
    assert model.acks_in_sequence_two_phase(1_000, 2, 10) == 140
    # shorter than the first phase: all at the first ratio
    assert model.acks_in_sequence_two_phase(60, 2, 10) == 30
    # "Chromium has an extra 40 ACK packets overhead compared to Quicly [AR 10] because it uses an AR of 2 for the
    # first 100 packets" (ackfreq22 §5.5): 100/2 - 100/10 = 40
    assert model.acks_in_sequence_two_phase(1_000, 2, 10) - model.acks_in_sequence(1_000, 10) == 40


def test_ar2_costs_about_three_percent_of_a_megabyte() -> None:
    """ackfreq22 §5.5: 'AR 2 ≈ 3 % of server bytes' for 1 MB downloads with quicly's 67 B ACKs."""
    server_packets = MEGABYTE / QUIC_PAYLOAD
    acks = model.acks_in_sequence(server_packets, 2)
    share = model.client_bytes(acks, 0, 67, handshake_bytes=1_500) / MEGABYTE
    assert share == pytest.approx(0.03, abs=0.005)
    # the same with the smallest possible ACK (51 B) stays above 2 %: the ratio, not the ACK size, decides
    smallest = model.client_bytes(acks, 0, quic_ack().size, handshake_bytes=1_500) / MEGABYTE
    assert 0.02 < smallest < share


def test_loss_acks_and_alpha() -> None:
    assert model.acks_after_loss(loss_clusters=7, packets_acked_immediately=3) == 21  # 3A: k = 3
    assert model.fit_alpha([5, 10, 15], ack_ratio=20) == pytest.approx(0.5)
    assert model.fit_alpha([], ack_ratio=20) is None
