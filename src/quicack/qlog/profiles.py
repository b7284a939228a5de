"""Per-implementation units and quirks.

The qlog drafts say times and durations are milliseconds, but implementations differ. Everything the reader
must know about an implementation beyond what the header says lives here, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

# How the ACK frame's ack_delay field is logged.
ACK_DELAY_MS = "ms"  # milliseconds, already scaled (qlog 0.3 and later; aioquic, quic-go, ngtcp2, ...)
ACK_DELAY_US = "us"  # microseconds (mvfst: std::chrono::microseconds::count())
ACK_DELAY_ENCODED = "encoded"  # the raw wire field, in units of 2^ack_delay_exponent microseconds (picoquic)
ACK_DELAY_ENCODED_MS = "encoded_ms"  # the raw wire field divided by 1000, not scaled by the exponent (neqo)


@dataclass(frozen=True)
class Profile:
    time_to_ms: float  # factor from the log's event time unit to ms
    rtt_to_ms: float  # factor from the log's RTT metric unit to ms
    ack_delay: str  # ACK_DELAY_*
    # aioquic logs transport:packet_received after it processed the packet's frames, with the time of logging;
    # the socket receive time is that of the preceding transport:datagrams_received event.
    received_time_from_datagram: bool = False
    # quinn logs the size of packets it sends in header.length (also for 1-RTT packets, which have no Length field)
    header_length_is_packet_size: bool = False
    # quinn puts the *current* connection ID in each event's group_id: it changes from the client's initial DCID
    # to the server's CID during the handshake, within one connection. Such a file is one connection per trace.
    group_id_per_event_is_connection: bool = True
    # quic-go omits ack_delay from ACK frames when it is zero (omitempty): absent means 0, not unknown
    missing_ack_delay_is_zero: bool = False


MS = Profile(time_to_ms=1.0, rtt_to_ms=1.0, ack_delay=ACK_DELAY_MS)

# configuration.time_units of qlog draft-00 … -02 ("ms" or "us"; 0.3 and later: always milliseconds), to ms
TIME_UNITS_TO_MS = {"ms": 1.0, "milliseconds": 1.0, "us": 0.001, "µs": 0.001, "μs": 0.001, "microseconds": 0.001}


def time_unit_to_ms(time_units: str | None) -> float | None:
    """The factor of a trace's time_units, None when absent or not a unit qlog defines (then milliseconds, as qlog
    says; the reader reports a unit it does not know)."""
    if not isinstance(time_units, str):
        return None
    return TIME_UNITS_TO_MS.get(time_units.strip().lower())


def profile_for(implementation: str | None, time_units: str | None) -> Profile:
    """Units for ``implementation``; ``time_units`` is the trace's ``configuration.time_units`` if any.

    What the header says wins for event times, and RTT metrics and ACK delays follow it (qlog draft-00 … -02 log
    every duration in time_units): aioquic before 1.0 and picoquic write "us". Only what the header cannot say comes
    from the implementation: quinn's RTTs in seconds, picoquic's and pcap2qlog's ACK Delay as the raw wire field.
    A log whose values contradict its header (quicX's RTTs in µs under "ms") is not rescaled: the plausibility
    checks (quicack.qlog.plausibility) flag it.
    """
    unit = time_unit_to_ms(time_units)
    if implementation == "picoquic":
        # picoquic's qlog converter prints times and RTT metrics in µs (configuration.time_units "us")
        # and the ACK frame's ack_delay as the undecoded wire value (loglib/qlog.c: qlog_ack_frame).
        scale = unit if unit is not None else 0.001
        return Profile(time_to_ms=scale, rtt_to_ms=scale, ack_delay=ACK_DELAY_ENCODED)
    if implementation == "pcap2qlog":
        # pcap2qlog copies tshark's quic.ack.ack_delay: the raw field, in units of 2^ack_delay_exponent µs
        scale = 1.0 if unit is None else unit
        return Profile(time_to_ms=scale, rtt_to_ms=scale, ack_delay=ACK_DELAY_ENCODED)
    if implementation == "quinn":
        # quinn (0.11, qlog feature) writes recovery:metrics_updated RTTs in SECONDS (Duration::as_secs_f32),
        # although qlog says milliseconds: the initial RTT shows as 0.333.
        return Profile(time_to_ms=1.0 if unit is None else unit, rtt_to_ms=1000.0, ack_delay=ACK_DELAY_MS,
                       header_length_is_packet_size=True, group_id_per_event_is_connection=False)
    if implementation == "neqo":
        # neqo (Firefox 153's QUIC) logs an ACK frame's ack_delay as the undecoded wire field / 1000
        # (neqo-transport qlog.rs: `ack_delay as f32 / 1000.0`), so a 19.3 ms delay at exponent 3 reads 2.4: a capture
        # of the same packets shows 8x the logged value.
        return Profile(time_to_ms=1.0 if unit is None else unit, rtt_to_ms=1.0 if unit is None else unit,
                       ack_delay=ACK_DELAY_ENCODED_MS)
    scale = 1.0 if unit is None else unit
    ack_delay = ACK_DELAY_US if scale == 0.001 else ACK_DELAY_MS
    if implementation == "quic-go":
        return Profile(time_to_ms=scale, rtt_to_ms=scale, ack_delay=ack_delay, missing_ack_delay_is_zero=True)
    if implementation == "aioquic":
        # before 1.0 (qlog draft-01, time_units "us") times, RTTs and ACK delays are µs
        return Profile(time_to_ms=scale, rtt_to_ms=scale, ack_delay=ack_delay, received_time_from_datagram=True)
    if scale == 1.0:
        return MS
    return Profile(time_to_ms=scale, rtt_to_ms=scale, ack_delay=ack_delay)
