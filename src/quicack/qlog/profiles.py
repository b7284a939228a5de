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


def profile_for(implementation: str | None, time_units: str | None) -> Profile:
    """Units for ``implementation``; ``time_units`` is the trace's ``configuration.time_units`` if any."""
    us = (time_units or "").lower() in ("us", "µs", "microseconds")
    if implementation == "picoquic":
        # picoquic's qlog converter prints times and RTT metrics in µs (configuration.time_units "us")
        # and the ACK frame's ack_delay as the undecoded wire value (loglib/qlog.c: qlog_ack_frame).
        return Profile(time_to_ms=0.001, rtt_to_ms=0.001, ack_delay=ACK_DELAY_ENCODED)
    if implementation == "mvfst" and us:
        # mvfst's draft-00 logger: time_units "us", metric_update RTTs and ACK delays are chrono microseconds.
        return Profile(time_to_ms=0.001, rtt_to_ms=0.001, ack_delay=ACK_DELAY_US)
    if implementation == "quinn":
        # quinn (0.11, qlog feature) writes recovery:metrics_updated RTTs in SECONDS (Duration::as_secs_f32),
        # although qlog says milliseconds: the initial RTT shows as 0.333.
        return Profile(time_to_ms=1.0, rtt_to_ms=1000.0, ack_delay=ACK_DELAY_MS, header_length_is_packet_size=True,
                       group_id_per_event_is_connection=False)
    if implementation == "neqo":
        # neqo (Firefox 153's QUIC) logs an ACK frame's ack_delay as the undecoded wire field / 1000
        # (neqo-transport qlog.rs: `ack_delay as f32 / 1000.0`), so a 19.3 ms delay at exponent 3 reads 2.4: a capture
        # of the same packets shows 8x the logged value.
        return Profile(time_to_ms=1.0, rtt_to_ms=1.0, ack_delay=ACK_DELAY_ENCODED_MS)
    if implementation == "quic-go":
        return Profile(time_to_ms=1.0, rtt_to_ms=1.0, ack_delay=ACK_DELAY_MS, missing_ack_delay_is_zero=True)
    if implementation == "aioquic":
        return Profile(time_to_ms=1.0, rtt_to_ms=1.0, ack_delay=ACK_DELAY_MS, received_time_from_datagram=True)
    if us:
        return Profile(time_to_ms=0.001, rtt_to_ms=0.001, ack_delay=ACK_DELAY_US)
    return MS
