"""RFC 9002 RTT estimation and probe timeout (PTO), as pure functions.

Everything here takes values and returns values: no I/O, no clocks, no logging. Times are
milliseconds. The code follows the pseudocode of RFC 9002 Appendix A, with the rules of
§5 and §6.2:

* An RTT sample is taken only when the largest acknowledged packet of an ACK frame is newly
  acknowledged and at least one newly acknowledged packet is ack-eliciting (§5.1).
* The first sample sets min_rtt = smoothed_rtt = latest_rtt and rttvar = latest_rtt / 2 (§5.3).
* Later samples: min_rtt ignores the ACK delay; the ACK delay may be ignored in the Initial
  space, is capped at the peer's max_ack_delay only once the handshake is confirmed, and is
  subtracted only if latest_rtt >= min_rtt + ack_delay (§5.3).
* rttvar is updated with the *previous* smoothed_rtt, as in Appendix A.7 and RFC 6298. The prose
  of §5.3 lists the smoothed_rtt update first, which, read literally, would feed the new
  smoothed_rtt into rttvar; RFC errata report 7539 points out the inconsistency and the
  Appendix A order is the intended one. ``RttOrder.SECTION_5_3_LITERAL`` computes the literal
  reading so that the difference can be shown, not hidden.
* PTO = smoothed_rtt + max(4 * rttvar, kGranularity), plus the peer's max_ack_delay only for
  the application data space and only once the handshake is confirmed, times 2^pto_count
  (§6.2.1, Appendix A.8). Before any sample, smoothed_rtt = kInitialRtt and rttvar =
  kInitialRtt / 2 (333 ms -> 999 ms default PTO).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import overload

K_INITIAL_RTT_MS = 333.0
K_GRANULARITY_MS = 1.0
DEFAULT_MAX_ACK_DELAY_MS = 25.0  # RFC 9000 §18.2 default of the max_ack_delay transport parameter

PN_SPACES = ("initial", "handshake", "appdata")


class RttOrder(enum.Enum):
    """Which update order to use for rttvar and smoothed_rtt (see the module docstring)."""

    APPENDIX_A = "appendix_a"
    SECTION_5_3_LITERAL = "section_5_3_literal"


@dataclass(frozen=True)
class RecoveryParams:
    initial_rtt_ms: float = K_INITIAL_RTT_MS
    granularity_ms: float = K_GRANULARITY_MS
    peer_max_ack_delay_ms: float = DEFAULT_MAX_ACK_DELAY_MS
    # §5.3: "MAY ignore the acknowledgment delay for Initial packets"; ignoring is what the
    # RFC-following implementations (quic-go, ngtcp2) do.
    ignore_initial_ack_delay: bool = True
    order: RttOrder = RttOrder.APPENDIX_A


@dataclass(frozen=True)
class RttState:
    """RTT estimator state. ``has_sample`` is False until the first sample."""

    latest_rtt_ms: float = 0.0
    min_rtt_ms: float = 0.0
    smoothed_rtt_ms: float = K_INITIAL_RTT_MS
    rttvar_ms: float = K_INITIAL_RTT_MS / 2
    has_sample: bool = False

    @classmethod
    def initial(cls, params: RecoveryParams = RecoveryParams()) -> RttState:
        return cls(smoothed_rtt_ms=params.initial_rtt_ms, rttvar_ms=params.initial_rtt_ms / 2)


@dataclass(frozen=True)
class RttUpdate:
    state: RttState
    ack_delay_used_ms: float
    adjusted_rtt_ms: float


def update_rtt(
    state: RttState,
    latest_rtt_ms: float,
    ack_delay_ms: float,
    *,
    pn_space: str,
    handshake_confirmed: bool,
    params: RecoveryParams = RecoveryParams(),
) -> RttUpdate:
    """Fold one RTT sample into the estimator (RFC 9002 §5.2–5.3, Appendix A.7)."""
    if not state.has_sample:
        # The first sample ignores the ACK delay entirely: subtracting it could push
        # smoothed_rtt below min_rtt.
        new_state = RttState(
            latest_rtt_ms=latest_rtt_ms,
            min_rtt_ms=latest_rtt_ms,
            smoothed_rtt_ms=latest_rtt_ms,
            rttvar_ms=latest_rtt_ms / 2,
            has_sample=True,
        )
        return RttUpdate(new_state, 0.0, latest_rtt_ms)

    min_rtt = min(state.min_rtt_ms, latest_rtt_ms)
    ack_delay = effective_ack_delay_ms(
        ack_delay_ms, pn_space=pn_space, handshake_confirmed=handshake_confirmed, params=params
    )
    adjusted = latest_rtt_ms - ack_delay if latest_rtt_ms >= min_rtt + ack_delay else latest_rtt_ms

    smoothed = 7 / 8 * state.smoothed_rtt_ms + 1 / 8 * adjusted
    reference = state.smoothed_rtt_ms if params.order is RttOrder.APPENDIX_A else smoothed
    rttvar = 3 / 4 * state.rttvar_ms + 1 / 4 * abs(reference - adjusted)
    new_state = RttState(latest_rtt_ms, min_rtt, smoothed, rttvar, True)
    return RttUpdate(new_state, ack_delay, adjusted)


def effective_ack_delay_ms(
    ack_delay_ms: float, *, pn_space: str, handshake_confirmed: bool, params: RecoveryParams = RecoveryParams()
) -> float:
    """The ACK delay that §5.3 allows to subtract from a (non-first) sample."""
    if pn_space == "initial" and params.ignore_initial_ack_delay:
        return 0.0
    if handshake_confirmed:
        return min(ack_delay_ms, params.peer_max_ack_delay_ms)
    return ack_delay_ms


def pto_ms(
    state: RttState,
    *,
    pn_space: str,
    handshake_confirmed: bool,
    pto_count: int = 0,
    params: RecoveryParams = RecoveryParams(),
) -> float:
    """PTO duration for one packet number space (RFC 9002 §6.2.1, Appendix A.8)."""
    duration = state.smoothed_rtt_ms + max(4 * state.rttvar_ms, params.granularity_ms)
    if pn_space == "appdata" and handshake_confirmed:
        duration += params.peer_max_ack_delay_ms
    return duration * 2**pto_count


def default_pto_ms(params: RecoveryParams = RecoveryParams()) -> float:
    """PTO before any RTT sample: 3 × initial RTT (999 ms with the RFC's 333 ms)."""
    return pto_ms(RttState.initial(params), pn_space="initial", handshake_confirmed=False, params=params)


# --- recomputing a connection ---------------------------------------------------------------


@dataclass(frozen=True)
class SentPacket:
    time_ms: float
    pn_space: str
    packet_number: int
    ack_eliciting: bool


@dataclass(frozen=True)
class AckReceived:
    time_ms: float
    pn_space: str
    # Acknowledged ranges as inclusive (low, high) pairs, any order.
    ack_ranges: tuple[tuple[int, int], ...]
    ack_delay_ms: float


@dataclass(frozen=True)
class RttSample:
    sample_index: int
    time_ms: float
    pn_space: str
    largest_acked: int
    latest_rtt_ms: float
    ack_delay_ms: float
    adjusted_rtt_ms: float
    min_rtt_ms: float
    smoothed_rtt_ms: float
    rttvar_ms: float
    pto_ms: float
    handshake_confirmed: bool


@dataclass(frozen=True)
class AckOutcome:
    """What one ACK frame did: how many packets it newly acknowledged and whether it sampled."""

    time_ms: float
    pn_space: str
    newly_acked: int
    newly_acked_ack_eliciting: int
    sample: RttSample | None


def recompute_connection(
    sent: Iterable[SentPacket],
    acks: Iterable[AckReceived],
    *,
    handshake_confirmed_ms: float | None = None,
    params: RecoveryParams = RecoveryParams(),
) -> list[AckOutcome]:
    """Replay one endpoint's ACK processing and return the outcome of every ACK frame.

    ``sent`` are the packets this endpoint sent, ``acks`` the ACK frames it received; both
    may be in any order. An ACK is applied to the packets sent before it arrived. Samples
    are the ``sample`` of each outcome that has one; ``rtt_samples`` returns only those.
    """
    sent_by_space: dict[str, dict[int, SentPacket]] = {space: {} for space in PN_SPACES}
    for packet in sorted(sent, key=lambda p: p.time_ms):
        # A retransmission never reuses a packet number; a duplicate log line must not
        # move the send time of the original.
        sent_by_space.setdefault(packet.pn_space, {}).setdefault(packet.packet_number, packet)

    acked: dict[str, set[int]] = {space: set() for space in sent_by_space}
    state = RttState.initial(params)
    outcomes: list[AckOutcome] = []
    sample_index = 0
    for ack in sorted(acks, key=lambda a: a.time_ms):
        space_sent = sent_by_space.get(ack.pn_space, {})
        space_acked = acked.setdefault(ack.pn_space, set())
        newly = [
            packet
            for low, high in ack.ack_ranges
            for packet in _packets_in_range(space_sent, low, high)
            if packet.packet_number not in space_acked and packet.time_ms <= ack.time_ms
        ]
        largest = max((high for _, high in ack.ack_ranges), default=None)
        eliciting = sum(p.ack_eliciting for p in newly)
        sample = None
        largest_packet = space_sent.get(largest) if largest is not None else None
        largest_is_new = largest_packet is not None and any(p.packet_number == largest for p in newly)
        if largest_packet is not None and largest_is_new and eliciting > 0:
            confirmed = handshake_confirmed_ms is not None and ack.time_ms >= handshake_confirmed_ms
            update = update_rtt(
                state,
                ack.time_ms - largest_packet.time_ms,
                ack.ack_delay_ms,
                pn_space=ack.pn_space,
                handshake_confirmed=confirmed,
                params=params,
            )
            state = update.state
            sample = RttSample(
                sample_index=sample_index,
                time_ms=ack.time_ms,
                pn_space=ack.pn_space,
                largest_acked=largest_packet.packet_number,  # = largest
                latest_rtt_ms=state.latest_rtt_ms,
                ack_delay_ms=update.ack_delay_used_ms,
                adjusted_rtt_ms=update.adjusted_rtt_ms,
                min_rtt_ms=state.min_rtt_ms,
                smoothed_rtt_ms=state.smoothed_rtt_ms,
                rttvar_ms=state.rttvar_ms,
                pto_ms=pto_ms(state, pn_space=ack.pn_space, handshake_confirmed=confirmed, params=params),
                handshake_confirmed=confirmed,
            )
            sample_index += 1
        space_acked.update(p.packet_number for p in newly)
        outcomes.append(AckOutcome(ack.time_ms, ack.pn_space, len(newly), eliciting, sample))
    return outcomes


def rtt_samples(
    sent: Iterable[SentPacket],
    acks: Iterable[AckReceived],
    *,
    handshake_confirmed_ms: float | None = None,
    params: RecoveryParams = RecoveryParams(),
) -> list[RttSample]:
    """Every RTT sample of one endpoint, recomputed per RFC 9002 (see ``recompute_connection``)."""
    outcomes = recompute_connection(sent, acks, handshake_confirmed_ms=handshake_confirmed_ms, params=params)
    return [o.sample for o in outcomes if o.sample is not None]


def _packets_in_range(space_sent: dict[int, SentPacket], low: int, high: int) -> Iterable[SentPacket]:
    # ACK ranges from a peer may be wide (e.g. [0, 1_000_000]); iterate whichever side is smaller.
    if high - low + 1 <= len(space_sent):
        return (space_sent[n] for n in range(low, high + 1) if n in space_sent)
    return (p for n, p in space_sent.items() if low <= n <= high)


# --- static models for the figures -----------------------------------------------------------


def pto_evolution(
    first_sample_ms: float,
    later_sample_ms: float,
    samples: int,
    *,
    params: RecoveryParams = RecoveryParams(),
) -> list[float]:
    """PTO after each of ``samples`` RTT samples when the first one is ``first_sample_ms``
    and all later ones are ``later_sample_ms`` (no ACK delay, handshake space).

    This is imc24 Fig. 2: with wait-for-certificate the first sample is RTT + Δt, with an
    instant ACK it is the RTT. Both start at 3 × their first sample; in a static setting
    rttvar then decays by 3/4 per sample and the PTO approaches RTT + kGranularity, the
    inflated one from above and more slowly.
    """
    state = RttState.initial(params)
    ptos: list[float] = []
    for index in range(samples):
        sample = first_sample_ms if index == 0 else later_sample_ms
        state = update_rtt(state, sample, 0.0, pn_space="handshake", handshake_confirmed=False, params=params).state
        ptos.append(pto_ms(state, pn_space="handshake", handshake_confirmed=False, params=params))
    return ptos


@overload
def first_pto_reduction_ms(rtt_ms: float, cert_delay_ms: float, params: RecoveryParams = ...) -> float: ...
@overload
def first_pto_reduction_ms(
    rtt_ms: float | None, cert_delay_ms: float | None, params: RecoveryParams = ...
) -> float | None: ...
def first_pto_reduction_ms(
    rtt_ms: float | None, cert_delay_ms: float | None, params: RecoveryParams = RecoveryParams()
) -> float | None:
    """First PTO with wait-for-certificate minus first PTO with instant ACK (= 3·Δt when 4·rttvar > kGranularity);
    None when the RTT or Δt is unknown (a run whose run.json does not say its cert_delay_ms)."""
    if rtt_ms is None or cert_delay_ms is None:
        return None
    wfc = pto_evolution(rtt_ms + cert_delay_ms, rtt_ms, 1, params=params)[0]
    iack = pto_evolution(rtt_ms, rtt_ms, 1, params=params)[0]
    return wfc - iack


def instant_ack_is_spurious(rtt_ms: float, cert_delay_ms: float, params: RecoveryParams = RecoveryParams()) -> bool:
    """True when the client's PTO armed by the instant ACK expires before the ServerHello arrives.

    The client receives the instant ACK at RTT and, with nothing ack-eliciting in flight, arms
    the PTO from that moment (RFC 9002 A.8): it expires at RTT + 3·RTT. The ServerHello arrives
    at RTT + Δt. So the probes are spurious when Δt ≥ 3·RTT (imc24 §5)."""
    return cert_delay_ms >= pto_evolution(rtt_ms, rtt_ms, 1, params=params)[0]


def with_max_ack_delay(params: RecoveryParams, peer_max_ack_delay_ms: float | None) -> RecoveryParams:
    return params if peer_max_ack_delay_ms is None else replace(params, peer_max_ack_delay_ms=peer_max_ack_delay_ms)
