"""The tables the derive stage computes per run group from the ingest tables: RTT samples, connections, handshakes,
the estimators' agreement, the bytes of each direction by component and the per-download ACK metrics."""

from __future__ import annotations

from .contract import DERIVE, DIRECTION, PN_SPACE, RUN_ID, SOURCE, B, Column, F, I, S, Table

RTT_SAMPLES = Table(
    "rtt_samples",
    "One row per RTT sample recomputed per RFC 9002 §5 from an endpoint's sent packets and the ACK frames it received.",
    (
        RUN_ID,
        Column("vantage", S, "Endpoint whose estimator is recomputed: 'client' or 'server'."),
        SOURCE,
        Column("sample_index", I, "0-based index of the sample in the connection."),
        Column("time_ms", F, "Time the acknowledging ACK was received."),
        PN_SPACE,
        Column("largest_acked", I, "Largest acknowledged packet number of the ACK that produced the sample."),
        Column("latest_rtt_ms", F, "latest_rtt: ACK receive time minus send time of the largest acknowledged packet."),
        Column(
            "ack_delay_ms",
            F,
            "ACK delay used in the adjustment (0 in the Initial space, capped at max_ack_delay once the handshake is "
            "confirmed).",
        ),
        Column(
            "adjusted_rtt_ms", F, "latest_rtt minus ack_delay when latest_rtt >= min_rtt + ack_delay, else latest_rtt."
        ),
        Column("min_rtt_ms", F, "min_rtt after this sample."),
        Column("smoothed_rtt_ms", F, "smoothed_rtt after this sample."),
        Column("rttvar_ms", F, "rttvar after this sample."),
        Column(
            "pto_ms",
            F,
            "PTO duration for this packet number space after this sample, without backoff: smoothed_rtt + "
            "max(4*rttvar, 1 ms) (+ max_ack_delay for appdata once confirmed).",
        ),
        Column(
            "handshake_confirmed",
            B,
            "Whether the handshake was confirmed at this sample (decides the max_ack_delay terms).",
        ),
    ),
    written_by=(DERIVE,),
)

CONNECTIONS = Table(
    "connections",
    "One row per connection and vantage: derived handshake and recovery metrics (an endpoint's row needs its qlog, "
    "except a client without one, e.g. Chromium: its row holds what the client-side capture shows, the TTFB).",
    (
        RUN_ID,
        Column("vantage", S, "Endpoint: 'client' or 'server'."),
        Column(
            "ttfb_ms",
            F,
            "Client row: time from the first client Initial to the first byte of the response body on the request "
            "stream (stream 0; for HTTP/3 the first byte after HEADERS and the DATA frame header, at offset final_size "
            "- file_bytes), client qlog. Null for the server row and for qlogs without frames (quinn).",
        ),
        Column(
            "ttfb_capture_ms",
            F,
            "Client row: the same TTFB measured at the client-side capture (sim_left), relative to the first client "
            "Initial there.",
        ),
        Column(
            "ttfb_qlog_minus_capture_ms",
            F,
            "ttfb_ms - ttfb_capture_ms: the client's receive-path delay plus clock offset (typically < 1 ms).",
        ),
        Column("first_rtt_ms", F, "First RTT sample recomputed per RFC 9002."),
        Column(
            "first_pto_ms",
            F,
            "PTO after the first RTT sample, recomputed per RFC 9002 (smoothed + max(4*rttvar, 1 ms)).",
        ),
        Column(
            "first_pto_logged_ms",
            F,
            "PTO after the first logged metrics update carrying smoothed RTT (and rttvar), as the implementation "
            "logged it.",
        ),
        Column(
            "first_pto_delta_ms",
            F,
            "first_pto_logged_ms - first_pto_ms: how far the implementation deviates from RFC 9002 on its first "
            "sample.",
        ),
        Column(
            "rtt_samples", I, "RTT samples recomputed per RFC 9002 (newly acknowledging ACKs of ack-eliciting packets)."
        ),
        Column(
            "rtt_samples_logged",
            I,
            "Distinct logged (smoothed_rtt, rtt_variance) updates after removing consecutive duplicates.",
        ),
        Column(
            "no_rtt_sample_reason",
            S,
            "When the endpoint received ACK frames but rtt_samples is 0: why, from what its log holds (no sent packet "
            "logged, no packet numbers, ACKs without ranges, sent packets with empty frames lists so none is known to "
            "be ack-eliciting, no ACK whose largest is a logged sent packet, ...); null otherwise.",
        ),
        Column("iack", B, "True if the first server Initial carries an ACK but no CRYPTO (an instant ACK)."),
        Column("iack_to_sh_ms", F, "Time from the instant ACK to the ServerHello at this vantage point."),
        Column(
            "handshake_ms", F, "Time from the first client Initial to HANDSHAKE_DONE (client) / handshake confirmation."
        ),
        Column(
            "pto_expiries",
            I,
            "PTO expiries of this endpoint inferred from the captures (handshake_runs.client_/server_pto_expiries); "
            "null without captures. The qlog reader does not extract timer events.",
        ),
        Column(
            "spurious_retransmissions",
            I,
            "Packets of this endpoint resending bytes whose first transmission had been delivered "
            "(handshake_runs.*_spurious_retransmissions); null without captures.",
        ),
    ),
    written_by=(DERIVE,),
)

HANDSHAKE_RUNS = Table(
    "handshake_runs",
    "One row per run: handshake timing, first PTO, default-PTO probe, retransmissions (imc24 §4, Appendices E-F). "
    "Capture times are at the client side of the link (sim_left), ms since the first client Initial there.",
    (
        RUN_ID,
        Column("client_impl", S, "Client implementation (runs.client_impl)."),
        Column("server_impl", S, "Server implementation (runs.server_impl)."),
        Column("mode", S, "'iack' or 'wfc' (runs.mode)."),
        Column("scenario", S, "Test case (runs.scenario)."),
        Column("rtt_ms", F, "Configured RTT (runs.rtt_ms)."),
        Column("repetition", I, "Repetition index (runs.repetition)."),
        Column("status", S, "'ok' or 'failed' (runs.status); aggregates count failed runs instead of using them."),
        Column(
            "calibrated_second_client_flight",
            S,
            "c2s datagram indices of the second client flight in the calibration baseline (imc24 Table 4).",
        ),
        Column(
            "implementation_conditions",
            S,
            "'paper' when client and server were set as the paper's runs had them (runs.implementation_conditions): "
            "what the figures' footnotes say of the implementations.",
        ),
        Column(
            "iack",
            B,
            "The first server Initial captured at the client side carried an ACK and no CRYPTO (instant ACK).",
        ),
        Column("server_ack_ms", F, "First server Initial ACK at the client-side capture."),
        Column("server_hello_ms", F, "First CRYPTO frame with the ServerHello at the client-side capture."),
        Column(
            "ack_to_server_hello_ms",
            F,
            "server_hello_ms - server_ack_ms: in IACK the server stack delay between instant ACK and ServerHello (plus "
            "Δt); 0 in WFC (coalesced).",
        ),
        Column("first_server_datagram_ms", F, "First server datagram at the client-side capture."),
        Column(
            "default_pto_ms",
            F,
            "Client's default PTO, inferred: first client datagram after its first-flight burst, minus the end of that "
            "burst, when it left before any server datagram arrived (no RTT sample possible); else null.",
        ),
        Column(
            "default_pto_lower_bound_ms",
            F,
            "When the server answered before any client probe: first server datagram minus end of the client's first "
            "flight, a lower bound of its default PTO.",
        ),
        Column("ttfb_ms", F, "TTFB of the response body from the client qlog (connections.ttfb_ms)."),
        Column(
            "ttfb_capture_ms", F, "TTFB of the response body at the client-side capture (connections.ttfb_capture_ms)."
        ),
        Column("first_rtt_ms", F, "Client's first RTT sample recomputed per RFC 9002 from its qlog."),
        Column(
            "first_pto_ms",
            F,
            "Client's PTO after its first RTT sample, recomputed per RFC 9002 (no backoff, no max_ack_delay).",
        ),
        Column(
            "first_pto_logged_ms", F, "Client's PTO from its first logged smoothed RTT / rttvar (imc24 Fig. 16 input)."
        ),
        Column(
            "rtt_samples",
            I,
            "Client RTT samples recomputed per RFC 9002 (newly acknowledging ACKs of ack-eliciting packets).",
        ),
        Column(
            "rtt_samples_logged",
            I,
            "Client RTT samples exposed in its qlog (distinct smoothed RTT / rttvar, consecutive duplicates removed).",
        ),
        Column(
            "client_retransmitted_packets",
            I,
            "Client packets resending CRYPTO/STREAM bytes it had sent before (client-side capture).",
        ),
        Column(
            "client_spurious_retransmissions",
            I,
            "Of those, packets whose resent bytes had all been delivered already (seen at the server-side capture).",
        ),
        Column(
            "client_pto_expiries",
            I,
            "Client PTO expiries inferred from the capture: bursts of ack-eliciting packets without new data sent >= 2 "
            "ms after the last server datagram arrived and after the client's previous datagram.",
        ),
        Column(
            "client_pto_expiries_logged",
            I,
            "Increments of the pto_count the client logged (qlog recovery:metrics_updated), where logged (ngtcp2, "
            "quinn, quic-go); quic-go logs pto_count only occasionally, so this undercounts for it.",
        ),
        Column(
            "client_pto_expiries_qlog",
            I,
            "Client PTO expiries inferred by the capture's rule from the client's own qlog (its logged sent and "
            "received packets for the client-side capture), for runs that keep the qlog alone; null where the qlog "
            "logs no sent frame (quinn).",
        ),
        Column("client_first_probe_ms", F, "Client-side capture time of the client's first such probe packet."),
        Column(
            "server_retransmitted_packets", I, "Server packets resending CRYPTO/STREAM bytes (server-side capture)."
        ),
        Column(
            "server_spurious_retransmissions",
            I,
            "Of those, packets whose resent bytes had all reached the client-side capture already.",
        ),
        Column(
            "server_pto_expiries", I, "Server PTO expiries inferred from the server-side capture, as for the client."
        ),
        Column(
            "server_first_probe_ms",
            F,
            "Server-side capture time (ms since the first client Initial there) of the server's first probe packet.",
        ),
    ),
    written_by=(DERIVE,),
)

ACK_BREAKDOWN = Table(
    "ack_breakdown",
    "Bytes of each direction of a capture by component (ackfreq22 Fig. 3, rethink Fig. 2): per run, capture point, "
    "direction and phase; the components of a (run, vantage, direction, after_first_rtt) add up exactly to its IP "
    "bytes (direction_bytes).",
    (
        RUN_ID,
        Column("vantage", S, "Capture point (sim_left = client side of the emulated link, sim_right = server side)."),
        Column("protocol", S, "'quic' (rows from datagrams/packets/frames) or 'tcp' (rows from tcp_segments)."),
        DIRECTION,
        Column(
            "after_first_rtt",
            B,
            "False for datagrams (TCP: segments) before the end of the first round trip at this capture point (the "
            "first c2s datagram/segment after the first s2c one), true from there on (rethink counts the return path "
            "after the first RTT).",
        ),
        Column(
            "component",
            S,
            "QUIC: ip_header, udp_header, quic_header, aead_tag, frame:<frame_type> (frame:ack, frame:stream, "
            "frame:padding, ...), datagram_padding (zeros after a datagram's last packet) or undecrypted (whole "
            "packets that could not be read). TCP: ip_header, tcp_header (the 20-byte fixed part), "
            "tcp_timestamp_option, tcp_sack_option, tcp_other_options (each with its NOP padding, tcp_segments) and "
            "tcp_payload.",
        ),
        Column("bytes", I, "Bytes of this component."),
        Column(
            "packets",
            I,
            "Datagrams (IP/UDP headers) or QUIC packets that carried this component; TCP: segments that carried it "
            "(bytes > 0).",
        ),
        Column(
            "direction_bytes",
            I,
            "IP bytes of this run, vantage, direction and phase: the sum of its components' bytes.",
        ),
    ),
    written_by=(DERIVE,),
)

ACK_RUNS = Table(
    "ack_runs",
    "One row per download of the ACK-ratio study (ackfreq22, rethink, tcpquic; the client is the receiver), read at "
    "one capture point: what the receiver sent back, why it sent its ACKs and how long the download took "
    "(quicack.metrics.ack_runs; TCP rows from tcp_segments by quicack.metrics.tcp_ack_runs).",
    (
        RUN_ID,
        Column(
            "vantage",
            S,
            "Capture point the row is read at: the client side of the emulated link (sim_left) where captured, else "
            "the first other. TCP runs captured at both sides: their return path at the server side (after the "
            "router's ACK thinning), on the client side's clock (quicack.metrics.return_path.tcp_link_segments).",
        ),
        Column("protocol", S, "'quic' or 'tcp'."),
        Column("forward_ip_bytes", I, "IP bytes the server sent (s2c), whole connection."),
        Column("return_ip_bytes", I, "IP bytes the client sent (c2s), whole connection."),
        Column(
            "return_percent_of_forward",
            F,
            "100 · return_ip_bytes / forward_ip_bytes (ackfreq22 Fig. 4's client bytes as % of server bytes).",
        ),
        Column(
            "return_ip_bytes_after_first_rtt",
            I,
            "c2s IP bytes from the end of the first round trip on (as ack_breakdown.after_first_rtt): rethink's return "
            "path without the handshake.",
        ),
        Column(
            "forward_data_packets",
            I,
            "s2c packets carrying data: QUIC server datagrams after the first round trip up to the end of the download "
            "(the server's 1-RTT packets are cut to a snap length, so frames are not read), TCP segments with payload.",
        ),
        Column(
            "ack_packets",
            I,
            "c2s packets that carry an ACK and nothing ack-eliciting (QUIC, every packet number space) / TCP pure "
            "ACKs.",
        ),
        Column(
            "ack_packet_bytes_median",
            F,
            "Median IP size of those ACK packets (QUIC: of the datagrams holding one alone).",
        ),
        Column(
            "measured_ack_ratio_median",
            F,
            "Median over the client's ACKs of the forward packets each newly acknowledged: how far its largest "
            "acknowledged packet number moved (QUIC application data; exact while nothing is lost), over ACKs that "
            "moved it. TCP: the forward data segments each ACK newly covered.",
        ),
        Column("measured_ack_ratio_p25", F, "25th percentile of the same (lower value)."),
        Column("measured_ack_ratio_p75", F, "75th percentile of the same (higher value)."),
        Column("acks_by_packet_threshold", I, "ACKs sent because ack_ratio ack-eliciting packets had arrived."),
        Column(
            "acks_by_delay_timer",
            I,
            "ACKs sent because the ACK-delay timer fired first (ackfreq22 Table 5, Eq. 3's A_del).",
        ),
        Column(
            "acks_by_reordering",
            I,
            "ACKs sent at once on an out-of-order packet (policies D, 3A); null when inferred (a capture cannot tell).",
        ),
        Column(
            "acks_by_other",
            I,
            "Other ACKs: the handshake's (Initial/Handshake) and ACKs the implementation scheduled itself; inferred: "
            "ACKs that newly acknowledged nothing.",
        ),
        Column(
            "ack_trigger_source",
            S,
            "'qlog' (the receiver logged why: frames.ack_reason) or 'inferred' (from the capture: an ACK whose advance "
            "reached the configured ratio, 2 by default, is the packet threshold's, a smaller advance the timer's); "
            "null for TCP, whose ACKs do not say why (the acks_by_* columns are null then too).",
        ),
        Column(
            "download_time_ms",
            F,
            "From the client's first datagram (SYN) to the last forward data packet at the capture point (QUIC: the "
            "last server datagram before the client's CONNECTION_CLOSE).",
        ),
        Column(
            "forward_data_packets_per_s",
            F,
            "forward_data_packets over the time from the first to the last of them (mean rate of the transfer).",
        ),
        Column(
            "loss_clusters",
            I,
            "Runs of consecutive lost forward packets (Eq. 5's L): the distinct gaps the client reported in its ACK "
            "ranges (aioquic servers, which never skip packet numbers); for servers that skip packet numbers (quic-go, "
            "quiche) the runs of consecutive datagrams the impairment program dropped at random "
            "(runs.s2c_random_loss_clusters: bottleneck queue overflows not counted); null when neither is known.",
        ),
        Column(
            "loss_clusters_source", S, "'client_acks' or 'impairment': where loss_clusters comes from; null with it."
        ),
        Column(
            "forward_mbit_second_half",
            F,
            "Forward IP rate (Mbit/s) once the download was under way: the server's IP bits from the datagram that "
            "completed half of the download's forward IP bytes to its last datagram, over that time (the rate the "
            "sender kept the path at; a 1 MB download over a long path is still in slow start).",
        ),
    ),
    written_by=(DERIVE,),
)

ESTIMATOR_AGREEMENT = Table(
    "estimator_agreement",
    "One row per recomputed RTT sample beside what the implementation logged right after it: how far it deviates from "
    "RFC 9002.",
    (
        RUN_ID,
        Column("vantage", S, "'client' or 'server'."),
        Column("implementation", S, "Implementation that wrote the qlog."),
        Column("sample_index", I, "Index of the recomputed sample (rtt_samples.sample_index)."),
        Column("time_ms", F, "Time of the sample."),
        Column("smoothed_rtt_ms", F, "smoothed_rtt recomputed per RFC 9002."),
        Column(
            "smoothed_rtt_logged_ms",
            F,
            "smoothed_rtt the implementation logged at or after the sample (carried forward).",
        ),
        Column("rttvar_ms", F, "rttvar recomputed per RFC 9002."),
        Column(
            "rttvar_logged_ms",
            F,
            "rtt_variance the implementation logged at or after the sample (null if it never logs it).",
        ),
        Column("latest_rtt_ms", F, "latest_rtt of the recomputed sample: from the qlog's packet event timestamps."),
        Column(
            "latest_rtt_logged_ms",
            F,
            "latest_rtt the implementation logged in the paired update (null if that update omits it): beside "
            "latest_rtt_ms it shows how far the implementation's own send/receive times differ from its qlog's event "
            "times.",
        ),
        Column("smoothed_delta_ms", F, "smoothed_rtt_logged_ms - smoothed_rtt_ms."),
        Column("rttvar_delta_ms", F, "rttvar_logged_ms - rttvar_ms."),
        Column(
            "pto_delta_ms",
            F,
            "Logged-state PTO minus recomputed PTO (smoothed + max(4*rttvar, 1 ms), no max_ack_delay).",
        ),
    ),
    written_by=(DERIVE,),
)
