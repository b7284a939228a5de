"""The data contract: every table users query, its columns, types and descriptions.

One source of truth for three consumers: the writers (Parquet files get exactly these
columns in this order), the DuckDB builder (``COMMENT ON`` text), and the README.
Times are float64 milliseconds relative to the connection's first client Initial at
that vantage point; sizes are bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import polars as pl


@dataclass(frozen=True)
class Column:
    name: str
    dtype: pl.DataType | type[pl.DataType]
    comment: str


@dataclass(frozen=True)
class Table:
    name: str
    comment: str
    columns: tuple[Column, ...]
    derived: bool = False

    @property
    def schema(self) -> dict[str, pl.DataType | type[pl.DataType]]:
        return {c.name: c.dtype for c in self.columns}

    def empty(self) -> pl.DataFrame:
        return pl.DataFrame(schema=self.schema)

    @cached_property
    def polars_schema(self) -> pl.Schema:
        return pl.Schema(self.schema)

    def conform(self, frame: pl.DataFrame) -> pl.DataFrame:
        """Return ``frame`` with exactly this table's columns, in order and cast.

        Missing columns become nulls, so a reader that cannot know a value says so
        with a null instead of inventing one. Extra columns are an error: the
        contract grows here first. A frame that conforms already is returned as it is
        (the capture decoder's batches are conformed once more by the writer).
        """
        if frame.schema == self.polars_schema:
            return frame
        extra = set(frame.columns) - set(self.schema)
        if extra:
            raise ValueError(f"{self.name}: columns not in the data contract: {sorted(extra)}")
        return frame.select(
            [
                (pl.col(c.name) if c.name in frame.columns else pl.lit(None)).cast(c.dtype).alias(c.name)
                for c in self.columns
            ]
        )


S = pl.Utf8
F = pl.Float64
I = pl.Int64  # noqa: E741 - short alias keeps the table definitions readable
B = pl.Boolean

# frames.ack_ranges: every acknowledged range of an ACK frame, highest first, as SQL can unnest it.
ACK_RANGE = pl.Struct({"low": I, "high": I})
ACK_RANGES = pl.List(ACK_RANGE)


def ack_ranges_from_json(column: str) -> pl.Expr:
    """The producers' text form of ACK ranges, JSON ``[[low, high], ...]``, as the contract's ACK_RANGES.

    Both readers (captures and qlogs) build the text per frame, which costs far less in Python than
    building structs; polars turns it into lists of structs for a whole batch at once.
    """
    pairs = pl.col(column).str.json_decode(pl.List(pl.List(I)))
    return pairs.list.eval(pl.struct(low=pl.element().list.get(0), high=pl.element().list.get(1))).alias(column)


RUN_ID = Column("run_id", S, "Identifier of the measured connection: <server>_<client>/<testcase>/<repetition> within the dataset.")
SOURCE = Column("source", S, "Where the row comes from: 'pcap' (packet capture) or 'qlog' (implementation log).")
VANTAGE_PKT = Column(
    "vantage",
    S,
    "Observation point: 'client' or 'server' for qlogs; the capture point for captures ('sim_left' = client side of "
    "the emulated link, 'sim_right' = server side, else the capture file's stem).",
)
DIRECTION = Column("direction", S, "'c2s' (client to server) or 's2c' (server to client).")
CONNECTION_ODCID = Column(
    "connection_odcid",
    S,
    "pcap: the connection the row belongs to, named by the Destination Connection ID of its first client Initial "
    "(hex; the first long header's DCID when the capture missed that Initial); tells apart connections of one capture, "
    "which share packet numbers. qlog: null (the trace is the connection).",
)
TIME_MS = Column("time_ms", F, "Milliseconds since the first client Initial of this connection at this vantage point.")
PN_SPACE = Column("pn_space", S, "Packet number space: 'initial', 'handshake' or 'appdata' (0-RTT and 1-RTT).")
PACKET_NUMBER = Column("packet_number", I, "QUIC packet number (full, decoded).")

RUNS = Table(
    "runs",
    "One row per measured (or attempted) connection, with the parameters of the run.",
    (
        RUN_ID,
        Column("dataset", S, "Dataset name (folder under data/)."),
        Column("client_impl", S, "Client implementation (aioquic, quic-go, go-x-net, ngtcp2, quinn, ...)."),
        Column("server_impl", S, "Server implementation."),
        Column("mode", S, "Server handshake mode: 'iack' (instant ACK), 'wfc' (wait for certificate) or null."),
        Column("scenario", S, "Test case: noloss, amplification, drop_server_flight, drop_client_flight, transfer, ..."),
        Column("rtt_ms", F, "Configured round-trip time of the emulated path (twice the one-way delay)."),
        Column("cert_delay_ms", F, "Emulated certificate-store delay Δt before the server processes the ClientHello / sends its ServerHello."),
        Column("server_hello_hold_ms", F, "Emulated server stack delay: the IACK/WFC server's first flight (ServerHello) left no earlier than this after its TLS stack got the ClientHello (cert_delay_ms after the client's first Initial arrived; in IACK right after the instant ACK left) (the *_paper_stack scenarios: 2.9 ms, imc24 §4.1's smallest client-reported stack delay); 0 = the server's own processing; null = not recorded (a server without handshake modes, or runs recorded before)."),
        Column("client_key_share", S, "Key share the client was set to offer: 'x25519' = X25519 alone, a one-datagram ClientHello like the paper's 2024 clients (quic-go, go-x-net, quiche; run.json client_key_share); null = the client's default (Go >= 1.24 and quiche 0.30 add X25519MLKEM768, a two-datagram ClientHello)."),
        Column("cert_bytes", I, "Size of the server certificate chain in bytes."),
        Column("file_bytes", I, "Size of the requested file in bytes."),
        Column("app_protocol", S, "'h3' (HTTP/3), 'hq' (hq-interop, HTTP/0.9) or 'tcp' (a plain TCP byte stream: the linux-tcp runs)."),
        Column("transport", S, "'quic', or 'tcp' for the Linux TCP runs of the ACK-ratio study (client/server linux-tcp: no keylog, no qlog; their captures fill tcp_segments). From run.json; 'quic' when it does not say (every run recorded before TCP)."),
        Column("ack_ratio", I, "Configured ACK ratio of the receiver (the client): an ACK after this many ack-eliciting packets (null = implementation default). TCP runs: 1 = quickack route, 2 = the kernel's delayed ACKs, N > 2 = the kernel's ACKs thinned by the router to every (N/2)-th pure ACK (run.json receiver_ack_policy.mechanism)."),
        Column("ack_delay_ms", F, "Configured ACK delay of the receiver: an ACK this long after the first unacknowledged ack-eliciting packet when fewer than ack_ratio arrive (null = implementation default — also when only ack_ratio was set, as for ngtcp2, whose delay is its own min(25 ms, smoothed RTT / 8), and for TCP — or set as ack_delay_rtt_fraction). With ack_policy_control 'sender_ack_frequency' it is the Request Max Ack Delay, which quinn clamps to at most max(RTT, 25 ms)."),
        Column("ack_delay_rtt_fraction", F, "Configured ACK delay as a fraction of the receiver's smoothed RTT (e.g. 0.25 = RTT/4; null = not set so)."),
        Column("ack_reordering", S, "Configured reaction of the receiver to reordering (ackfreq22 §5.6): 'D' (an ACK at once, RFC 9000), 'NR' (none), '3A' (AR 1 for the next 3 packets); null = implementation default."),
        Column("ack_policy_control", S, "Who applied the configured ACK policy (quicack.testbed.receiver_ack_control): 'receiver' (the aioquic client itself), 'receiver_ack_threshold' (ngtcp2 --ack-thresh: the ratio only), 'sender_ack_frequency' (the quinn server's ACK_FREQUENCY frames to the quinn client: Ack-Eliciting Threshold ack_ratio − 1, Reordering Threshold 1 = D / 0 = NR), 'linux_tcp_kernel_or_router' (Linux TCP: quickack route, the kernel's delayed ACKs, or router ACK thinning); null = no policy set."),
        Column("congestion_control", S, "The server's congestion controller as it reports it ('reno', 'cubic'; the aioquic server, configured by server_congestion_control); null = not recorded (other servers run their own default)."),
        Column("pacing", B, "Whether the server paced its packets (the aioquic server; server_pacing: false switches aioquic's pacer off); null = not recorded."),
        Column("path_profile", S, "Named path profile (data/reference/path_profiles.csv) or null."),
        Column("bandwidth_c2s_mbit", F, "Configured bottleneck rate client to server (the return path of a download), Mbit/s (tbf at the router); null = unlimited or unknown."),
        Column("bandwidth_s2c_mbit", F, "Configured bottleneck rate server to client (the forward path of a download), Mbit/s."),
        Column("loss_c2s", F, "Configured random loss probability per client-to-server packet (0.01 = 1 %; seeded per run), beyond drop_to_server."),
        Column("loss_s2c", F, "Configured random loss probability per server-to-client packet."),
        Column("queue_s2c_bytes", I, "Bottleneck queue of the server-to-client direction in bytes (tbf limit; a path profile's ≈ 1 BDP); null = the testbed's default of 100 full-size packets."),
        Column("queue_c2s_packets", I, "Bottleneck queue of the client-to-server direction in packets (a packet-limited child queue under tbf, so that small ACKs cannot pile up for seconds); null = the default of 100 full-size packets in bytes."),
        Column("repetition", I, "Repetition index of this configuration."),
        Column("status", S, "'ok' when the transfer completed and the bytes matched, else 'failed'."),
        Column("failure_reason", S, "Why the run failed (null when status = 'ok')."),
        Column("series", S, "The folder above <server>_<client> when a dataset keeps one QIR run per folder (the imc24 artifact's all-interop-servers/<day>/): repetition numbers these folders in name order. Null otherwise."),
        Column("status_source", S, "Where status comes from: 'run.json' (the recorder said so) or 'inferred from capture' (a run without run.json: 'ok' when the client-side capture shows the server's HANDSHAKE_DONE, else 'failed'); null when unknown."),
        Column("raw_path", S, "Folder of the raw run, relative to the dataset's raw folder."),
        Column("drop_to_client", S, "1-based s2c datagram indices the emulator dropped, in the QIR droplist notation '2_3' (run.json drop_to_client; '' = none, null = unknown)."),
        Column("drop_to_server", S, "1-based c2s datagram indices the emulator dropped, as '3_4_5' (run.json drop_to_server)."),
        Column(
            "drop_to_server_rule", S,
            "How the c2s drops were chosen when not by a fixed index list: 'finished_flight:N' = the client's first datagram with a 1-RTT packet and the N − 1 after it (the testbed's *_large / *_xlarge client-flight scenarios; run.json drop_to_server_rule); null = the fixed list drop_to_server.",
        ),
        Column(
            "calibrated_first_server_flight",
            S,
            "s2c datagram indices ('1_2') of the first server flight in the no-loss calibration baseline of this client, mode and RTT (run.json drop_calibration).",
        ),
        Column(
            "calibrated_second_client_flight",
            S,
            "c2s datagram indices ('2_3_4') of the second client flight in the calibration baseline (imc24 Table 4 'second flight datagram(s)').",
        ),
    ),
)

DATAGRAMS = Table(
    "datagrams",
    "One row per UDP datagram seen in a capture.",
    (
        RUN_ID,
        VANTAGE_PKT,
        CONNECTION_ODCID,
        DIRECTION,
        Column("datagram_index", I, "1-based index of the datagram per direction in this capture, as the QUIC Interop Runner droplist counts."),
        TIME_MS,
        Column("time_abs_ns", I, "Capture timestamp, Unix epoch nanoseconds."),
        Column("ip_header_bytes", I, "IP header bytes (20 for IPv4 without options, 40 for IPv6)."),
        Column("udp_header_bytes", I, "UDP header bytes (8)."),
        Column("udp_payload_bytes", I, "UDP payload bytes."),
        Column("quic_packets", I, "Number of (coalesced) QUIC packets in the datagram."),
    ),
)

TCP_SEGMENTS = Table(
    "tcp_segments",
    "One row per TCP segment seen in a capture (the Linux TCP runs of the ACK-ratio study: client linux-tcp). Byte identity "
    "(tested on every TCP capture): ip_header_bytes + tcp_header_bytes + timestamp_option_bytes + sack_option_bytes + "
    "other_option_bytes + payload_bytes = ip_bytes. Sizes come from the IP total length and the TCP data offset, so a "
    "capture cut by its snap length still gives them.",
    (
        RUN_ID,
        VANTAGE_PKT,
        Column("connection", S, "The TCP connection: '<client address>:<client port>' (the side that sent the SYN; without a SYN in the capture, the side with the higher port)."),
        DIRECTION,
        Column("segment_index", I, "1-based index of the segment per direction and connection in this capture (as datagrams.datagram_index counts)."),
        Column("time_ms", F, "Milliseconds since the connection's first segment (its SYN) at this vantage point."),
        Column("time_abs_ns", I, "Capture timestamp, Unix epoch nanoseconds."),
        Column("ip_bytes", I, "IP packet bytes on the wire (IPv4 total length; IPv6 40 + payload length)."),
        Column("ip_header_bytes", I, "IP header bytes (20 for IPv4 without options, 40 for IPv6 plus extension headers)."),
        Column("tcp_header_bytes", I, "Fixed part of the TCP header: 20 bytes (options are in the three *_option_bytes columns)."),
        Column(
            "timestamp_option_bytes", I,
            "TCP Timestamps option (RFC 7323, kind 8, 10 bytes) with the NOP/EOL bytes that pad it: every NOP (kind 1) is "
            "counted with the option after it, trailing NOP/EOL bytes after the last option with that last option. Linux sends "
            "NOP NOP TS = 12 bytes; 0 when absent.",
        ),
        Column("sack_option_bytes", I, "SACK option (RFC 2018, kind 5: 2 + 8 × blocks) with its NOP padding, by the same rule (Linux: NOP NOP SACK = 4 + 8 × blocks); 0 when absent."),
        Column("other_option_bytes", I, "Every other TCP option (MSS, window scale, SACK-permitted, ...) with its padding, by the same rule."),
        Column("payload_bytes", I, "TCP payload bytes (IP bytes minus IP and TCP headers: the wire size even if the capture cut the record)."),
        Column("seq", I, "Sequence number (raw, not relative)."),
        Column("ack", I, "Acknowledgment number (raw; meaningful when the ACK flag is set)."),
        Column("flags", I, "TCP flag bits of header byte 13: FIN 1, SYN 2, RST 4, PSH 8, ACK 16, URG 32, ECE 64, CWR 128 (SQL: flags & 16 <> 0)."),
        Column("pure_ack", B, "ACK flag set, no payload, no SYN/FIN/RST: an acknowledgement only (what the ACK ratio counts)."),
        Column("sack_blocks", I, "SACK blocks in the segment's SACK option (0 without one)."),
        Column("window", I, "Window field as sent (not scaled by the window scale option)."),
    ),
)

PACKETS = Table(
    "packets",
    "One row per QUIC packet, from a capture or from a qlog.",
    (
        RUN_ID,
        SOURCE,
        VANTAGE_PKT,
        CONNECTION_ODCID,
        DIRECTION,
        Column("event", S, "'sent' or 'received' (qlog), 'captured' (pcap)."),
        TIME_MS,
        Column("time_abs_ns", I, "Absolute time, Unix epoch nanoseconds, where known."),
        Column("datagram_index", I, "Index of the carrying datagram (pcap: per direction, 1-based; qlog: null unless logged)."),
        Column(
            "packet_type",
            S,
            "initial, handshake, 0rtt, 1rtt, retry, version_negotiation, stateless_reset, datagram_padding "
            "(zero bytes after the last packet of a datagram) or unknown.",
        ),
        PN_SPACE,
        PACKET_NUMBER,
        Column("packet_bytes", I, "Size of the QUIC packet on the wire (header + payload + AEAD tag)."),
        Column("header_bytes", I, "QUIC header bytes (including the packet number)."),
        Column("aead_tag_bytes", I, "AEAD authentication tag bytes (16 for QUIC v1/v2 AEADs)."),
        Column("ack_eliciting", B, "True if the packet carries a frame other than ACK, PADDING or CONNECTION_CLOSE."),
        Column("decrypted", B, "True if the payload was decrypted (pcap) or its frames were logged (qlog); null for datagram_padding rows (nothing to decrypt)."),
        Column("frames_logged", B, "False when the source logs packet headers without frames (e.g. quinn): ack_eliciting is then unknown."),
        Column("frames_complete", B, "pcap: False when frame decoding stopped at an unknown frame type (the rest of the packet is one 'unknown' frame)."),
    ),
)

FRAMES = Table(
    "frames",
    "One row per QUIC frame inside a packet.",
    (
        RUN_ID,
        SOURCE,
        VANTAGE_PKT,
        CONNECTION_ODCID,
        DIRECTION,
        Column("event", S, "'sent', 'received' or 'captured', as for the carrying packet."),
        TIME_MS,
        Column("datagram_index", I, "Index of the carrying datagram, as packets.datagram_index (pcap: per direction, 1-based; qlog: null)."),
        PN_SPACE,
        PACKET_NUMBER,
        Column("frame_index", I, "0-based position of the frame in its packet."),
        Column("frame_type", S, "RFC 9000 / extension frame name in lower snake case (ack, crypto, stream, padding, ping, ack_frequency, immediate_ack, ..., unknown)."),
        Column("frame_bytes", I, "Encoded frame size in bytes, where known."),
        Column("ack_delay_ms", F, "ACK frames: ACK Delay field in milliseconds (already scaled by the ack_delay_exponent)."),
        Column("largest_acked", I, "ACK frames: largest acknowledged packet number."),
        Column("first_ack_range", I, "ACK frames: length of the first ACK range (packets below largest_acked)."),
        Column("ack_ranges", ACK_RANGES, "ACK frames: all acknowledged ranges, highest first, as a list of {low, high} (packet numbers, inclusive): unnest(ack_ranges) gives one row per range."),
        Column("ecn_ect0", I, "ACK_ECN frames: ECT(0) count (null for ACK frames without ECN counts)."),
        Column("ecn_ect1", I, "ACK_ECN frames: ECT(1) count."),
        Column("ecn_ce", I, "ACK_ECN frames: ECN-CE count."),
        Column("stream_id", I, "STREAM / RESET_STREAM / ... frames: stream id."),
        Column("offset", I, "STREAM / CRYPTO frames: byte offset."),
        Column("length", I, "STREAM / CRYPTO / DATAGRAM frames: payload length in bytes."),
        Column("fin", B, "STREAM frames: FIN bit."),
        Column("tls_messages", pl.List(S), "CRYPTO frames: the TLS handshake messages starting inside, in order (client_hello, server_hello, ...): list_contains(tls_messages, 'server_hello')."),
        Column("ack_frequency_sequence", I, "ACK_FREQUENCY frames (draft-ietf-quic-ack-frequency): Sequence Number."),
        Column("ack_eliciting_threshold", I, "ACK_FREQUENCY frames: Ack-Eliciting Threshold (ack-eliciting packets the peer may receive without acknowledging; 1 = ACK every other one)."),
        Column("request_max_ack_delay_ms", F, "ACK_FREQUENCY frames: Request Max Ack Delay, in ms (the frame carries µs)."),
        Column("reordering_threshold", I, "ACK_FREQUENCY frames: Reordering Threshold (0 = no immediate ACK on reordering). IMMEDIATE_ACK has no fields: frame_type 'immediate_ack'."),
        Column("ack_reason", S, "ACK frames a receiver sent, where its qlog says why (quicack's ACK-policy receiver, event quicack:ack_sent): 'packet_threshold' (ack_ratio packets arrived), 'delay_timer' (the ACK delay expired first), 'reordering' (an out-of-order packet, policy D or 3A) or 'other' (Initial/Handshake ACKs; an ACK the implementation scheduled itself). Null elsewhere."),
        Column("ack_eliciting_since_previous_ack", I, "ACK frames with ack_reason: ack-eliciting packets of that packet number space the receiver counted since its previous ACK (what its ACK ratio counts; null for Initial/Handshake ACKs)."),
    ),
)

METRICS_LOGGED = Table(
    "metrics_logged",
    "One row per recovery metrics update as the implementation logged it (qlog recovery:metrics_updated), normalized to ms.",
    (
        RUN_ID,
        Column("vantage", S, "'client' or 'server'."),
        TIME_MS,
        Column("smoothed_rtt_ms", F, "Smoothed RTT as logged (null if not in this update)."),
        Column("rtt_variance_ms", F, "RTT variance as logged (null if not in this update)."),
        Column("latest_rtt_ms", F, "Latest RTT sample as logged."),
        Column("min_rtt_ms", F, "Minimum RTT as logged."),
        Column("pto_count", I, "PTO count as logged."),
        Column("cwnd_bytes", I, "Congestion window in bytes."),
        Column("bytes_in_flight", I, "Bytes in flight."),
    ),
)

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
        Column("ack_delay_ms", F, "ACK delay used in the adjustment (0 in the Initial space, capped at max_ack_delay once the handshake is confirmed)."),
        Column("adjusted_rtt_ms", F, "latest_rtt minus ack_delay when latest_rtt >= min_rtt + ack_delay, else latest_rtt."),
        Column("min_rtt_ms", F, "min_rtt after this sample."),
        Column("smoothed_rtt_ms", F, "smoothed_rtt after this sample."),
        Column("rttvar_ms", F, "rttvar after this sample."),
        Column("pto_ms", F, "PTO duration for this packet number space after this sample, without backoff: smoothed_rtt + max(4*rttvar, 1 ms) (+ max_ack_delay for appdata once confirmed)."),
        Column("handshake_confirmed", B, "Whether the handshake was confirmed at this sample (decides the max_ack_delay terms)."),
    ),
    derived=True,
)

CONNECTIONS = Table(
    "connections",
    "One row per connection and vantage: derived handshake and recovery metrics.",
    (
        RUN_ID,
        Column("vantage", S, "Endpoint: 'client' or 'server'."),
        Column(
            "ttfb_ms",
            F,
            "Client row: time from the first client Initial to the first byte of the response body on the request stream "
            "(stream 0; for HTTP/3 the first byte after HEADERS and the DATA frame header, at offset final_size - file_bytes), client qlog. "
            "Null for the server row and for qlogs without frames (quinn).",
        ),
        Column("ttfb_capture_ms", F, "Client row: the same TTFB measured at the client-side capture (sim_left), relative to the first client Initial there."),
        Column("ttfb_qlog_minus_capture_ms", F, "ttfb_ms - ttfb_capture_ms: the client's receive-path delay plus clock offset (typically < 1 ms)."),
        Column("first_rtt_ms", F, "First RTT sample recomputed per RFC 9002."),
        Column("first_pto_ms", F, "PTO after the first RTT sample, recomputed per RFC 9002 (smoothed + max(4*rttvar, 1 ms))."),
        Column("first_pto_logged_ms", F, "PTO after the first logged metrics update carrying smoothed RTT (and rttvar), as the implementation logged it."),
        Column("first_pto_delta_ms", F, "first_pto_logged_ms - first_pto_ms: how far the implementation deviates from RFC 9002 on its first sample."),
        Column("rtt_samples", I, "RTT samples recomputed per RFC 9002 (newly acknowledging ACKs of ack-eliciting packets)."),
        Column("rtt_samples_logged", I, "Distinct logged (smoothed_rtt, rtt_variance) updates after removing consecutive duplicates."),
        Column("iack", B, "True if the first server Initial carries an ACK but no CRYPTO (an instant ACK)."),
        Column("iack_to_sh_ms", F, "Time from the instant ACK to the ServerHello at this vantage point."),
        Column("handshake_ms", F, "Time from the first client Initial to HANDSHAKE_DONE (client) / handshake confirmation."),
        Column(
            "pto_expiries",
            I,
            "PTO expiries of this endpoint inferred from the captures (handshake_runs.client_/server_pto_expiries); null without captures. "
            "The qlog reader does not extract timer events.",
        ),
        Column(
            "spurious_retransmissions",
            I,
            "Packets of this endpoint resending bytes whose first transmission had been delivered (handshake_runs.*_spurious_retransmissions); null without captures.",
        ),
    ),
    derived=True,
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
        Column("calibrated_second_client_flight", S, "c2s datagram indices of the second client flight in the calibration baseline (imc24 Table 4)."),
        Column("iack", B, "The first server Initial captured at the client side carried an ACK and no CRYPTO (instant ACK)."),
        Column("server_ack_ms", F, "First server Initial ACK at the client-side capture."),
        Column("server_hello_ms", F, "First CRYPTO frame with the ServerHello at the client-side capture."),
        Column(
            "ack_to_server_hello_ms",
            F,
            "server_hello_ms - server_ack_ms: in IACK the server stack delay between instant ACK and ServerHello (plus Δt); 0 in WFC (coalesced).",
        ),
        Column("first_server_datagram_ms", F, "First server datagram at the client-side capture."),
        Column(
            "default_pto_ms",
            F,
            "Client's default PTO, inferred: first client datagram after its first-flight burst, minus the end of that burst, when it left "
            "before any server datagram arrived (no RTT sample possible); else null.",
        ),
        Column(
            "default_pto_lower_bound_ms",
            F,
            "When the server answered before any client probe: first server datagram minus end of the client's first flight, a lower bound of its default PTO.",
        ),
        Column("ttfb_ms", F, "TTFB of the response body from the client qlog (connections.ttfb_ms)."),
        Column("ttfb_capture_ms", F, "TTFB of the response body at the client-side capture (connections.ttfb_capture_ms)."),
        Column("first_rtt_ms", F, "Client's first RTT sample recomputed per RFC 9002 from its qlog."),
        Column("first_pto_ms", F, "Client's PTO after its first RTT sample, recomputed per RFC 9002 (no backoff, no max_ack_delay)."),
        Column("first_pto_logged_ms", F, "Client's PTO from its first logged smoothed RTT / rttvar (imc24 Fig. 16 input)."),
        Column("rtt_samples", I, "Client RTT samples recomputed per RFC 9002 (newly acknowledging ACKs of ack-eliciting packets)."),
        Column("rtt_samples_logged", I, "Client RTT samples exposed in its qlog (distinct smoothed RTT / rttvar, consecutive duplicates removed)."),
        Column("client_retransmitted_packets", I, "Client packets resending CRYPTO/STREAM bytes it had sent before (client-side capture)."),
        Column("client_spurious_retransmissions", I, "Of those, packets whose resent bytes had all been delivered already (seen at the server-side capture)."),
        Column("client_pto_expiries", I, "Client PTO expiries inferred from the capture: bursts of ack-eliciting packets without new data sent >= 2 ms after the last server datagram arrived and after the client's previous datagram."),
        Column(
            "client_pto_expiries_logged",
            I,
            "Increments of the pto_count the client logged (qlog recovery:metrics_updated), where logged (ngtcp2, quinn, quic-go); "
            "quic-go logs pto_count only occasionally, so this undercounts for it.",
        ),
        Column("client_first_probe_ms", F, "Client-side capture time of the client's first such probe packet."),
        Column("server_retransmitted_packets", I, "Server packets resending CRYPTO/STREAM bytes (server-side capture)."),
        Column("server_spurious_retransmissions", I, "Of those, packets whose resent bytes had all reached the client-side capture already."),
        Column("server_pto_expiries", I, "Server PTO expiries inferred from the server-side capture, as for the client."),
        Column("server_first_probe_ms", F, "Server-side capture time (ms since the first client Initial there) of the server's first probe packet."),
    ),
    derived=True,
)

SCAN_CONNECTIONS = Table(
    "scan_connections",
    "One row per connection a scanner attempted (QScanner output in the imc24 authors' layout, or an emulated scan): "
    "who it was for, whether it succeeded, and what the first server datagrams were (quicack.scan).",
    (
        Column("scan_id", S, "Measurement: '<vantage_point>/<measurement folder name>' (the authors' layout <root>/<vantage_point>/data/<ISO timestamp>/)."),
        Column("vantage_point", S, "Where the scan ran: the <vantage_point> folder of the layout."),
        Column("measurement_time", S, "Start of the measurement from its folder name (date -Ins), as ISO 8601 in UTC with nanoseconds; null when the folder name is not a timestamp."),
        Column("measurement_time_ns", I, "The same instant as Unix epoch nanoseconds."),
        Column("scan_date", S, "UTC date of the measurement (YYYY-MM-DD); the paper's 'day' (it speaks of local time, SCAN.md point 7)."),
        Column("target_id", I, "QScanner's targetid: 0-based line of the target in the scanner input (null: a captured connection no input or QScanner file names)."),
        Column("scid", S, "The client's Source Connection ID in hex: QScanner's scid ({targetid:016x}), the key joining captured packets to targets."),
        Column("sni", S, "Server name: from targets, else from the captured ClientHello, else QScanner's hostname."),
        Column("client_hello_sni", S, "Server name in the captured ClientHello (null: no ClientHello captured or readable)."),
        Column("server_address", S, "Target address (targets' ip, else the captured server address, else QScanner's address)."),
        Column("server_port", I, "Target UDP port."),
        Column("origin_asn", I, "Origin AS of server_address by longest prefix match in the prefix→AS file given (pyasn ipasn or prefix,asn CSV); null without one or when unrouted."),
        Column("cdn", S, "CDN of origin_asn by data/reference/cdn_asn.csv (imc24 Table 5), 'Others' for any other or unrouted AS; null without a prefix→AS file."),
        Column("success", B, "QScanner completed the handshake without error (handshakeTime set, errorMessage empty); null when quic_connection_info.csv has no row for it."),
        Column("error_message", S, "QScanner's errorMessage (null when none)."),
        Column("handshake_duration_ms", F, "QScanner's handshakeDuration (ms, whole milliseconds)."),
        Column("captured", B, "The capture (or pcap.csv) holds datagrams of this connection."),
        Column("classified_from", S, "'capture' (decoded by quicack.pcap), 'pcap_csv' (the authors' tshark export) or null (no packet data)."),
        Column("client_datagrams", I, "Client datagrams of the connection in the capture."),
        Column("server_datagrams", I, "Server datagrams of the connection in the capture (0: the target never answered)."),
        Column("first_datagram_class", S, "'iack' (an Initial ACK in a server datagram before the one with the ServerHello), 'coalesced' (first Initial ACK and ServerHello in one datagram), 'sh_first' (ServerHello before any Initial ACK; the authors count these as IACK), 'no_sh' (no ServerHello captured); null without packet data."),
        Column("ack_time_ms", F, "Capture time of the first server datagram with an Initial ACK, ms after the client's first Initial."),
        Column("sh_time_ms", F, "Capture time of the first server datagram with the ServerHello, ms after the client's first Initial."),
        Column("ack_to_sh_ms", F, "sh_time_ms - ack_time_ms: the IACK-to-ServerHello delay (0 when coalesced, negative when the ServerHello came first)."),
        Column("first_ack_delay_ms", F, "ACK Delay field of the first server Initial ACK, decoded with exponent 3 (first_ack_delay_exponent): the client cannot know the server's exponent yet (it comes in EncryptedExtensions), quic-go decodes it so, and so did the imc24 authors."),
        Column("first_ack_delay_exponent", I, "Exponent applied to first_ack_delay_ms (3)."),
        Column("first_ack_delay_advertised_ms", F, "The same field decoded with the server's advertised ack_delay_exponent (RFC 9000 §19.3 reading); equals first_ack_delay_ms when that is 3."),
        Column("server_ack_delay_exponent", I, "ack_delay_exponent the server advertised (quic_shared_config.csv)."),
        Column("server_max_ack_delay_ms", F, "max_ack_delay the server advertised (quic_shared_config.csv)."),
        Column("first_ack_largest_acked", I, "Largest Acknowledged of the first server Initial ACK (client Initial packet number)."),
        Column("first_ack_range", I, "First ACK Range of that ACK (0: it covers one packet; the authors' filter, SCAN.md point 5)."),
        Column("ack_datagram_bytes", I, "UDP payload bytes of the datagram with the first Initial ACK."),
        Column("iack_padded", B, "For class 'iack': the instant ACK's datagram is padded (PADDING frames or trailing zeros); null for other classes."),
        Column("rtt_estimate_ms", F, "Path RTT estimate: first Initial ACK's capture time minus that of the client Initial it acknowledges as largest, minus first_ack_delay_ms."),
        Column("cf_ray", S, "Cf-Ray response header (http_header.csv), if any."),
        Column("cf_ray_pop", S, "Cloudflare PoP: the IATA code ending cf_ray (e.g. 'HAM')."),
    ),
)

SCAN_TRUTH = Table(
    "scan_truth",
    "What an emulated scan configured for each target (truth.csv beside every measurement of quicack.testbed.scan): "
    "join scan_connections on (scan_id, target_id) to compare measured with configured. Empty for real scans.",
    (
        Column("scan_id", S, "Measurement, as in scan_connections."),
        Column("target_id", I, "QScanner's targetid (0-based line of the scanner input)."),
        Column("measurement_kind", S, "'toplist' or 'cloudflare_series' (the two scans of imc24 §4.3)."),
        Column("emulated_time", S, "The emulated time of the measurement (ISO 8601, UTC): the folder's name; packet times are the recording's wall clock."),
        Column("sni", S, "Domain the target was configured for."),
        Column("site", S, "Frontend site that answers the target from this vantage point."),
        Column("server_kind", S, "'aioquic-cdn-frontend' (instant ACK on a certificate-cache miss), 'quic-go', 'ngtcp2' or 'quinn' (unmodified servers)."),
        Column("cdn", S, "CDN the frontend plays."),
        Column("asn", I, "AS the emulated address plan gives the target's prefix."),
        Column("pop_iata", S, "IATA code of the frontend's PoP (its cf-ray suffix), null for sites without one."),
        Column("path_rtt_ms", F, "Configured RTT between the vantage point and the site."),
        Column("store_rtt_ms", F, "Configured RTT between the frontend and the certificate store (CDN frontends)."),
        Column("store_delay_ms", F, "Configured certificate-store processing delay at that emulated time."),
        Column("padded", B, "The frontend pads its instant ACK to a full datagram."),
        Column("cache_state", S, "The frontend's own decision for this connection: 'hit', 'miss_started', 'miss_joined', 'none' (not a caching frontend), 'no_decision'."),
        Column("warmed_by_load", B, "The emulated user load connected to this domain just before the measurement."),
        Column("expected_class", S, "The first-datagram class the configuration implies: 'iack', 'coalesced', 'no_sh' ('unknown' without a decision)."),
    ),
)

ACK_BREAKDOWN = Table(
    "ack_breakdown",
    "Bytes of each direction of a capture by component (ackfreq22 Fig. 3, rethink Fig. 2): per run, capture point, direction and "
    "phase; the components of a (run, vantage, direction, after_first_rtt) add up exactly to its IP bytes (direction_bytes).",
    (
        RUN_ID,
        Column("vantage", S, "Capture point (sim_left = client side of the emulated link, sim_right = server side)."),
        Column("protocol", S, "'quic' (rows from datagrams/packets/frames) or 'tcp' (rows from tcp_segments)."),
        DIRECTION,
        Column(
            "after_first_rtt",
            B,
            "False for datagrams (TCP: segments) before the end of the first round trip at this capture point (the first c2s "
            "datagram/segment after the first s2c one), true from there on (rethink counts the return path after the first RTT).",
        ),
        Column(
            "component",
            S,
            "QUIC: ip_header, udp_header, quic_header, aead_tag, frame:<frame_type> (frame:ack, frame:stream, frame:padding, ...), "
            "datagram_padding (zeros after a datagram's last packet) or undecrypted (whole packets that could not be read). "
            "TCP: ip_header, tcp_header (the 20-byte fixed part), tcp_timestamp_option, tcp_sack_option, tcp_other_options "
            "(each with its NOP padding, tcp_segments) and tcp_payload.",
        ),
        Column("bytes", I, "Bytes of this component."),
        Column("packets", I, "Datagrams (IP/UDP headers) or QUIC packets that carried this component; TCP: segments that carried it (bytes > 0)."),
        Column("direction_bytes", I, "IP bytes of this run, vantage, direction and phase: the sum of its components' bytes."),
    ),
    derived=True,
)

ACK_RUNS = Table(
    "ack_runs",
    "One row per download of the ACK-ratio study (ackfreq22, rethink, tcpquic; the client is the receiver), read at one capture "
    "point: what the receiver sent back, why it sent its ACKs and how long the download took (quicack.metrics.ack_runs; TCP rows "
    "from tcp_segments by quicack.metrics.tcp_ack_runs).",
    (
        RUN_ID,
        Column("vantage", S, "Capture point the row is read at: the client side of the emulated link (sim_left) where captured, else the first other. TCP runs captured at both sides: their return path at the server side (after the router's ACK thinning), on the client side's clock (quicack.metrics.return_path.tcp_link_segments)."),
        Column("protocol", S, "'quic' or 'tcp'."),
        Column("forward_ip_bytes", I, "IP bytes the server sent (s2c), whole connection."),
        Column("return_ip_bytes", I, "IP bytes the client sent (c2s), whole connection."),
        Column("return_percent_of_forward", F, "100 · return_ip_bytes / forward_ip_bytes (ackfreq22 Fig. 4's client bytes as % of server bytes)."),
        Column("return_ip_bytes_after_first_rtt", I, "c2s IP bytes from the end of the first round trip on (as ack_breakdown.after_first_rtt): rethink's return path without the handshake."),
        Column("forward_data_packets", I, "s2c packets carrying data: QUIC server datagrams after the first round trip up to the end of the download (the server's 1-RTT packets are cut to a snap length, so frames are not read), TCP segments with payload."),
        Column("ack_packets", I, "c2s packets that carry an ACK and nothing ack-eliciting (QUIC, every packet number space) / TCP pure ACKs."),
        Column("ack_packet_bytes_median", F, "Median IP size of those ACK packets (QUIC: of the datagrams holding one alone)."),
        Column("measured_ack_ratio_median", F, "Median over the client's ACKs of the forward packets each newly acknowledged: how far its largest acknowledged packet number moved (QUIC application data; exact while nothing is lost), over ACKs that moved it. TCP: the forward data segments each ACK newly covered."),
        Column("measured_ack_ratio_p25", F, "25th percentile of the same (lower value)."),
        Column("measured_ack_ratio_p75", F, "75th percentile of the same (higher value)."),
        Column("acks_by_packet_threshold", I, "ACKs sent because ack_ratio ack-eliciting packets had arrived."),
        Column("acks_by_delay_timer", I, "ACKs sent because the ACK-delay timer fired first (ackfreq22 Table 5, Eq. 3's A_del)."),
        Column("acks_by_reordering", I, "ACKs sent at once on an out-of-order packet (policies D, 3A); null when inferred (a capture cannot tell)."),
        Column("acks_by_other", I, "Other ACKs: the handshake's (Initial/Handshake) and ACKs the implementation scheduled itself; inferred: ACKs that newly acknowledged nothing."),
        Column("ack_trigger_source", S, "'qlog' (the receiver logged why: frames.ack_reason) or 'inferred' (from the capture: an ACK whose advance reached the configured ratio, 2 by default, is the packet threshold's, a smaller advance the timer's); null for TCP, whose ACKs do not say why (the acks_by_* columns are null then too)."),
        Column("download_time_ms", F, "From the client's first datagram (SYN) to the last forward data packet at the capture point (QUIC: the last server datagram before the client's CONNECTION_CLOSE)."),
        Column("forward_data_packets_per_s", F, "forward_data_packets over the time from the first to the last of them (mean rate of the transfer)."),
        Column("loss_clusters", I, "Runs of consecutive lost forward packets (Eq. 5's L): the distinct gaps the client reported in its ACK ranges; null where the server may skip packet numbers (only aioquic servers are counted)."),
    ),
    derived=True,
)

INGEST_ISSUES = Table(
    "ingest_issues",
    "One row per input problem found while ingesting; nothing is dropped silently.",
    (
        Column("path", S, "Input file or folder, relative to the dataset's raw folder where possible."),
        RUN_ID,
        Column("stage", S, "Stage that found the problem: discover, qlog, pcap, keylog, scan, recovery, ..."),
        Column("severity", S, "'error' (input skipped) or 'warning' (input used, partly)."),
        Column("message", S, "What is wrong, in words a user can act on."),
    ),
)

ENDPOINTS = Table(
    "endpoints",
    "One row per (connection, vantage, source): what a log or capture says about the endpoint and how it was read.",
    (
        RUN_ID,
        SOURCE,
        Column("vantage", S, "'client' or 'server' (qlog), capture point (pcap)."),
        Column("path", S, "Input file, relative to the dataset's raw folder where possible."),
        Column("implementation", S, "Implementation that wrote the log, detected from its header (aioquic, quic-go, ngtcp2, ...)."),
        Column("dialect", S, "qlog dialect detected: e.g. 'json-0.3', 'json-seq-0.3', 'ndjson-draft-02', 'json-draft-00', 'json-seq-main-schema'."),
        Column("qlog_version", S, "qlog_version / file_schema string from the header."),
        Column("group_id", S, "Connection identifier in the file (group_id or original destination connection ID)."),
        Column("time_origin_abs_ns", I, "Absolute time of time_ms = 0 (the first client Initial), Unix epoch ns, where the log has absolute times."),
        Column("local_max_ack_delay_ms", F, "max_ack_delay this endpoint advertised (ms)."),
        Column("peer_max_ack_delay_ms", F, "max_ack_delay the peer advertised (ms); used for the appdata PTO."),
        Column("peer_ack_delay_exponent", I, "ack_delay_exponent the peer advertised (default 3)."),
        Column("handshake_confirmed_ms", F, "When this endpoint considered the handshake confirmed (client: HANDSHAKE_DONE received; server: HANDSHAKE_DONE sent)."),
        Column("events", I, "Events read for this connection."),
    ),
)

ESTIMATOR_AGREEMENT = Table(
    "estimator_agreement",
    "One row per recomputed RTT sample beside what the implementation logged right after it: how far it deviates from RFC 9002.",
    (
        RUN_ID,
        Column("vantage", S, "'client' or 'server'."),
        Column("implementation", S, "Implementation that wrote the qlog."),
        Column("sample_index", I, "Index of the recomputed sample (rtt_samples.sample_index)."),
        Column("time_ms", F, "Time of the sample."),
        Column("smoothed_rtt_ms", F, "smoothed_rtt recomputed per RFC 9002."),
        Column("smoothed_rtt_logged_ms", F, "smoothed_rtt the implementation logged at or after the sample (carried forward)."),
        Column("rttvar_ms", F, "rttvar recomputed per RFC 9002."),
        Column("rttvar_logged_ms", F, "rtt_variance the implementation logged at or after the sample (null if it never logs it)."),
        Column("smoothed_delta_ms", F, "smoothed_rtt_logged_ms - smoothed_rtt_ms."),
        Column("rttvar_delta_ms", F, "rttvar_logged_ms - rttvar_ms."),
        Column("pto_delta_ms", F, "Logged-state PTO minus recomputed PTO (smoothed + max(4*rttvar, 1 ms), no max_ack_delay)."),
    ),
    derived=True,
)

TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        RUNS,
        DATAGRAMS,
        TCP_SEGMENTS,
        PACKETS,
        FRAMES,
        METRICS_LOGGED,
        RTT_SAMPLES,
        CONNECTIONS,
        HANDSHAKE_RUNS,
        ESTIMATOR_AGREEMENT,
        ACK_BREAKDOWN,
        ACK_RUNS,
        SCAN_CONNECTIONS,
        SCAN_TRUTH,
        ENDPOINTS,
        INGEST_ISSUES,
    )
}

# Not a Parquet view either: what ``python -m quicack.testbed.path_check`` measured of the emulated paths the
# dataset's runs used (``path_check.csv`` beside the raw folder), stored by ``quicack build-db --path-checks``.
PATH_CHECKS = Table(
    "path_checks",
    "One row per path profile (data/reference/path_profiles.csv) as the testbed emulated it, measured with plain UDP probes "
    "by quicack.testbed.path_check on the machine that recorded the dataset: RTT, delivered rate and random loss per "
    "direction, and how late the user-space impairment released packets. ackfreq22-tab01 sets them beside the profile.",
    (
        Column("profile", S, "Path profile name (data/reference/path_profiles.csv)."),
        Column("rtt_min_ms", F, "Smallest RTT of 40 small echo probes, ms."),
        Column("rtt_median_ms", F, "Median RTT of the same probes, ms."),
        Column("s2c_rate_mbit", F, "Delivered server-to-client rate (IP bytes) under a sender 25 % above the profile's rate, Mbit/s."),
        Column("c2s_rate_mbit", F, "Delivered client-to-server rate, measured the same way, Mbit/s."),
        Column("s2c_packets_per_s", F, "Delivered server-to-client 1,228-byte IP packets per second in that probe."),
        Column("c2s_packets_per_s", F, "Delivered client-to-server packets per second in that probe."),
        Column("s2c_loss_percent", F, "Random loss server to client: 1 − received / sent of a probe at half the rate (no queue drops), %."),
        Column("c2s_loss_percent", F, "Random loss client to server, measured the same way, %."),
        Column("s2c_loss_probes", I, "Probes sent server to client for the loss measurement (its resolution: 100 / probes %)."),
        Column("c2s_loss_probes", I, "Probes sent client to server for the loss measurement."),
        Column("impairment_max_lateness_ms", F, "Largest delay by which the impairment program released a packet after its due time, ms."),
        Column("note", S, "What could not be measured, or empty."),
    ),
)

# Not a Parquet view like the tables above: a one-row table that ``quicack build-db --description``
# stores inside the DuckDB file (quicack.provenance), so that every footnote names the data's origin.
DATASET_DESCRIPTION = Table(
    "dataset_description",
    "Where this dataset comes from, from its description file (dataset.yaml beside the raw folder): one row per part of "
    "the dataset ('runs': the testbed or QIR runs; 'scan': the scan measurements); kind 'unknown' when a part has none.",
    (
        Column("part", S, "Which tables the row describes: 'runs' (runs and every table keyed by run_id) or 'scan' (scan_connections, scan_truth)."),
        Column("name", S, "Name of the dataset (the runs' dataset column when it has no description)."),
        Column("kind", S, "'emulated', 'public-captures', 'scan', 'emulated-scan', 'other', or 'unknown' (no description)."),
        Column("title", S, "One line on what the data is; every footnote quotes it."),
        Column("description", S, "Longer description: how it was recorded or obtained."),
        Column(
            "recorded_with",
            pl.List(pl.Struct({"component": S, "version": S})),
            "Software it was recorded with, in the file's order: component (testbed, kernel, implementation) and version.",
        ),
        Column("source", S, "Who published or recorded it."),
        Column("url", S, "Where it can be obtained."),
        Column("license", S, "Licence of the data."),
        Column("description_file", S, "Path of the description file the row was read from (null: none)."),
    ),
)
