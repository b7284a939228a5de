"""The tables the ingest stage writes per run group: the runs, what the captures and qlogs hold (datagrams, TCP
segments, packets, frames, metrics the implementations logged, endpoints) and every input problem."""

from __future__ import annotations

import polars as pl

from .contract import (
    ACK_RANGES,
    CONNECTION_ODCID,
    DIRECTION,
    INGEST,
    PACKET_NUMBER,
    PN_SPACE,
    RUN_ID,
    SCAN,
    SOURCE,
    TIME_MS,
    VANTAGE_PKT,
    B,
    Column,
    F,
    I,
    S,
    Table,
)

RUNS = Table(
    "runs",
    "One row per measured (or attempted) connection, with the parameters of the run.",
    (
        RUN_ID,
        Column("dataset", S, "Dataset name (folder under data/)."),
        Column("client_impl", S, "Client implementation (aioquic, quic-go, go-x-net, ngtcp2, quinn, ...)."),
        Column("server_impl", S, "Server implementation."),
        Column("mode", S, "Server handshake mode: 'iack' (instant ACK), 'wfc' (wait for certificate) or null."),
        Column(
            "scenario", S, "Test case: noloss, amplification, drop_server_flight, drop_client_flight, transfer, ..."
        ),
        Column("rtt_ms", F, "Configured round-trip time of the emulated path (twice the one-way delay)."),
        Column(
            "cert_delay_ms",
            F,
            "Emulated certificate-store delay Δt before the server processes the ClientHello / sends its ServerHello.",
        ),
        Column(
            "server_hello_hold_ms",
            F,
            "Emulated server stack delay: the IACK/WFC server's first flight (ServerHello) left no earlier than this "
            "after its TLS stack got the ClientHello (cert_delay_ms after the client's first Initial arrived; in IACK "
            "right after the instant ACK left) (the *_paper scenarios: the delay imc24 §4.1 gives each client, less "
            "what the hold leaves to this machine, run.json server_stack; *_paper_stack: 2.9 ms for every client); 0 = "
            "the server's own processing; null = not recorded (a server without handshake modes, or runs recorded "
            "before).",
        ),
        Column(
            "implementation_conditions",
            S,
            "How the implementations were configured: 'paper' = set as data/reference/implementation_conditions.csv "
            "gives the papers' runs wherever the testbed can (its rows marked 'set'; run.json "
            "implementation_conditions has the options); null = every implementation's defaults as built.",
        ),
        Column(
            "client_key_share",
            S,
            "Key share the client was set to offer: 'x25519' = X25519 alone, a one-datagram ClientHello like the "
            "paper's 2024 clients (quic-go, go-x-net, quiche; run.json client_key_share); null = the client's default "
            "(Go >= 1.24 and quiche 0.30 add X25519MLKEM768, a two-datagram ClientHello).",
        ),
        Column("cert_bytes", I, "Size of the server certificate chain in bytes."),
        Column("file_bytes", I, "Size of the requested file in bytes."),
        Column(
            "app_protocol",
            S,
            "'h3' (HTTP/3), 'hq' (hq-interop, HTTP/0.9) or 'tcp' (a plain TCP byte stream: the linux-tcp runs).",
        ),
        Column(
            "transport",
            S,
            "'quic', or 'tcp' for the Linux TCP runs of the ACK-ratio study (client/server linux-tcp: no keylog, no "
            "qlog; their captures fill tcp_segments). From run.json; 'quic' when it does not say (every run recorded "
            "before TCP).",
        ),
        Column(
            "ack_ratio",
            I,
            "Configured ACK ratio of the receiver (the client): an ACK after this many ack-eliciting packets (null = "
            "implementation default). TCP runs: 1 = quickack route, 2 = the kernel's delayed ACKs, N > 2 = the "
            "kernel's ACKs thinned by the router to every (N/2)-th pure ACK (run.json receiver_ack_policy.mechanism).",
        ),
        Column(
            "ack_delay_ms",
            F,
            "Configured ACK delay of the receiver: an ACK this long after the first unacknowledged ack-eliciting "
            "packet when fewer than ack_ratio arrive (null = implementation default — also when only ack_ratio was "
            "set, as for ngtcp2, whose delay is its own min(25 ms, smoothed RTT / 8), and for TCP — or set as "
            "ack_delay_rtt_fraction). With ack_policy_control 'sender_ack_frequency' it is the Request Max Ack Delay, "
            "which quinn clamps to at most max(RTT, 25 ms).",
        ),
        Column(
            "ack_delay_rtt_fraction",
            F,
            "Configured ACK delay as a fraction of the receiver's smoothed RTT (e.g. 0.25 = RTT/4; null = not set so).",
        ),
        Column(
            "ack_reordering",
            S,
            "Configured reaction of the receiver to reordering (ackfreq22 §5.6): 'D' (an ACK at once, RFC 9000), 'NR' "
            "(none), '3A' (AR 1 for the next 3 packets); null = implementation default.",
        ),
        Column(
            "ack_policy_control",
            S,
            "Who applied the configured ACK policy (quicack.testbed.receiver_ack_control): 'receiver' (the aioquic "
            "client itself), 'receiver_ack_threshold' (ngtcp2 --ack-thresh: the ratio only), 'sender_ack_frequency' "
            "(the quinn server's ACK_FREQUENCY frames to the quinn client: Ack-Eliciting Threshold ack_ratio − 1, "
            "Reordering Threshold 1 = D / 0 = NR), 'linux_tcp_kernel_or_router' (Linux TCP: quickack route, the "
            "kernel's delayed ACKs, or router ACK thinning); null = no policy set.",
        ),
        Column(
            "congestion_control",
            S,
            "The server's congestion controller: as the aioquic server reports it, or as the testbed configured a "
            "native server (quicack.testbed.server_programs.SENDER_SETTINGS: quiche 'reno' (HyStart++ off: RFC 9002 "
            "NewReno) or 'cubic', quinn 'newreno', 'cubic', 'bbr'); null = not recorded (older runs, servers without "
            "sender settings).",
        ),
        Column(
            "pacing",
            B,
            "Whether the server paced its packets: the aioquic server's pacer on/off (server_pacing), quinn always, "
            "quiche never with reno or cubic; null = not recorded.",
        ),
        Column("path_profile", S, "Named path profile (data/reference/path_profiles.csv) or null."),
        Column(
            "bandwidth_c2s_mbit",
            F,
            "Configured bottleneck rate client to server (the return path of a download), Mbit/s (tbf at the router); "
            "null = unlimited or unknown.",
        ),
        Column(
            "bandwidth_s2c_mbit",
            F,
            "Configured bottleneck rate server to client (the forward path of a download), Mbit/s.",
        ),
        Column(
            "loss_c2s",
            F,
            "Configured random loss probability per client-to-server packet (0.01 = 1 %; seeded per run), beyond "
            "drop_to_server.",
        ),
        Column("loss_s2c", F, "Configured random loss probability per server-to-client packet."),
        Column(
            "queue_s2c_bytes",
            I,
            "Bottleneck queue of the server-to-client direction in bytes (tbf limit; a path profile's ≈ 1 BDP); null = "
            "the testbed's default of 100 full-size packets.",
        ),
        Column(
            "queue_c2s_packets",
            I,
            "Bottleneck queue of the client-to-server direction in packets (a packet-limited child queue under tbf, so "
            "that small ACKs cannot pile up for seconds); null = the default of 100 full-size packets in bytes.",
        ),
        Column(
            "s2c_random_losses",
            I,
            "Server-to-client datagrams the impairment program dropped at random (loss_s2c; run.json "
            "impairment.s2c.lost_indices); null = not recorded. Queue overflows at the bottleneck are not among them.",
        ),
        Column(
            "s2c_random_loss_clusters",
            I,
            "Runs of consecutive datagram indices among those random drops (Eq. 5's loss clusters as the emulation "
            "made them).",
        ),
        Column(
            "client_cpu_s",
            F,
            "CPU seconds (user + system) the client process used (run.json testbed.host.cpu_seconds); null = not "
            "recorded (runs before it was).",
        ),
        Column("server_cpu_s", F, "CPU seconds the server process had used when the client ended."),
        Column("impairment_cpu_s", F, "CPU seconds the router's impairment program had used when the client ended."),
        Column(
            "host_load_1min",
            F,
            "The machine's 1-minute load average when the run started (2 cores; other jobs' load included).",
        ),
        Column("repetition", I, "Repetition index of this configuration."),
        Column("status", S, "'ok' when the transfer completed and the bytes matched, else 'failed'."),
        Column("failure_reason", S, "Why the run failed (null when status = 'ok')."),
        Column(
            "series",
            S,
            "The folder above <server>_<client> when a dataset keeps one QIR run per folder (the imc24 artifact's "
            "all-interop-servers/<day>/): repetition numbers these folders in name order. Null otherwise.",
        ),
        Column(
            "status_source",
            S,
            "Where status comes from: 'run.json' (the recorder said so) or 'inferred from capture' (a run without "
            "run.json: 'ok' when the client-side capture shows the server's HANDSHAKE_DONE, else 'failed'); null when "
            "unknown.",
        ),
        Column("raw_path", S, "Folder of the raw run, relative to the dataset's raw folder."),
        Column(
            "drop_to_client",
            S,
            "1-based s2c datagram indices the emulator dropped, in the QIR droplist notation '2_3' (run.json "
            "drop_to_client; '' = none, null = unknown).",
        ),
        Column(
            "drop_to_server",
            S,
            "1-based c2s datagram indices the emulator dropped, as '3_4_5' (run.json drop_to_server).",
        ),
        Column(
            "drop_to_server_rule",
            S,
            "How the c2s drops were chosen when not by a fixed index list: 'finished_flight:N' = the client's first "
            "datagram with a 1-RTT packet and the N − 1 after it (the testbed's *_large / *_xlarge client-flight "
            "scenarios; run.json drop_to_server_rule); null = the fixed list drop_to_server.",
        ),
        Column(
            "calibrated_first_server_flight",
            S,
            "s2c datagram indices ('1_2') of the first server flight in the no-loss calibration baseline of this "
            "client, mode and RTT (run.json drop_calibration).",
        ),
        Column(
            "calibrated_second_client_flight",
            S,
            "c2s datagram indices ('2_3_4') of the second client flight in the calibration baseline (imc24 Table 4 "
            "'second flight datagram(s)').",
        ),
    ),
    written_by=(INGEST,),
)

DATAGRAMS = Table(
    "datagrams",
    "One row per UDP datagram seen in a capture.",
    (
        RUN_ID,
        VANTAGE_PKT,
        CONNECTION_ODCID,
        DIRECTION,
        Column(
            "datagram_index",
            I,
            "1-based index of the datagram per direction in this capture, as the QUIC Interop Runner droplist counts.",
        ),
        TIME_MS,
        Column("time_abs_ns", I, "Capture timestamp, Unix epoch nanoseconds."),
        Column(
            "ip_header_bytes",
            I,
            "IP header bytes (20 for IPv4 without options, 40 for IPv6; a fragmented datagram: those of all its "
            "fragments).",
        ),
        Column("udp_header_bytes", I, "UDP header bytes (8)."),
        Column("udp_payload_bytes", I, "UDP payload bytes."),
        Column("quic_packets", I, "Number of (coalesced) QUIC packets in the datagram."),
    ),
    written_by=(INGEST,),
)

TCP_SEGMENTS = Table(
    "tcp_segments",
    "One row per TCP segment seen in a capture (the Linux TCP runs of the ACK-ratio study: client linux-tcp). Byte "
    "identity (tested on every TCP capture): ip_header_bytes + tcp_header_bytes + timestamp_option_bytes + "
    "sack_option_bytes + other_option_bytes + payload_bytes = ip_bytes. Sizes come from the IP total length and the "
    "TCP data offset, so a capture cut by its snap length still gives them.",
    (
        RUN_ID,
        VANTAGE_PKT,
        Column(
            "connection",
            S,
            "The TCP connection: '<client address>:<client port>' (the side that sent the SYN; without a SYN in the "
            "capture, the side with the higher port).",
        ),
        DIRECTION,
        Column(
            "segment_index",
            I,
            "1-based index of the segment per direction and connection in this capture (as datagrams.datagram_index "
            "counts).",
        ),
        Column("time_ms", F, "Milliseconds since the connection's first segment (its SYN) at this vantage point."),
        Column("time_abs_ns", I, "Capture timestamp, Unix epoch nanoseconds."),
        Column("ip_bytes", I, "IP packet bytes on the wire (IPv4 total length; IPv6 40 + payload length)."),
        Column(
            "ip_header_bytes", I, "IP header bytes (20 for IPv4 without options, 40 for IPv6 plus extension headers)."
        ),
        Column(
            "tcp_header_bytes",
            I,
            "Fixed part of the TCP header: 20 bytes (options are in the three *_option_bytes columns).",
        ),
        Column(
            "timestamp_option_bytes",
            I,
            "TCP Timestamps option (RFC 7323, kind 8, 10 bytes) with the NOP/EOL bytes that pad it: every NOP (kind 1) "
            "is counted with the option after it, trailing NOP/EOL bytes after the last option with that last option. "
            "Linux sends NOP NOP TS = 12 bytes; 0 when absent.",
        ),
        Column(
            "sack_option_bytes",
            I,
            "SACK option (RFC 2018, kind 5: 2 + 8 × blocks) with its NOP padding, by the same rule (Linux: NOP NOP "
            "SACK = 4 + 8 × blocks); 0 when absent.",
        ),
        Column(
            "other_option_bytes",
            I,
            "Every other TCP option (MSS, window scale, SACK-permitted, ...) with its padding, by the same rule.",
        ),
        Column(
            "payload_bytes",
            I,
            "TCP payload bytes (IP bytes minus IP and TCP headers: the wire size even if the capture cut the record).",
        ),
        Column("seq", I, "Sequence number (raw, not relative)."),
        Column("ack", I, "Acknowledgment number (raw; meaningful when the ACK flag is set)."),
        Column(
            "flags",
            I,
            "TCP flag bits of header byte 13: FIN 1, SYN 2, RST 4, PSH 8, ACK 16, URG 32, ECE 64, CWR 128 (SQL: flags "
            "& 16 <> 0).",
        ),
        Column(
            "pure_ack",
            B,
            "ACK flag set, no payload, no SYN/FIN/RST: an acknowledgement only (what the ACK ratio counts).",
        ),
        Column("sack_blocks", I, "SACK blocks in the segment's SACK option (0 without one)."),
        Column("window", I, "Window field as sent (not scaled by the window scale option)."),
    ),
    written_by=(INGEST,),
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
        Column(
            "datagram_index",
            I,
            "Index of the carrying datagram (pcap: per direction, 1-based; qlog: null unless logged).",
        ),
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
        Column(
            "decrypted",
            B,
            "True if the payload was decrypted (pcap) or its frames were logged (qlog); null for datagram_padding rows "
            "(nothing to decrypt).",
        ),
        Column(
            "frames_logged",
            B,
            "False when the source logs packet headers without frames (e.g. quinn): ack_eliciting is then unknown.",
        ),
        Column(
            "frames_complete",
            B,
            "pcap: False when frame decoding stopped at an unknown frame type (the rest of the packet is one 'unknown' "
            "frame).",
        ),
    ),
    written_by=(INGEST,),
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
        Column(
            "datagram_index",
            I,
            "Index of the carrying datagram, as packets.datagram_index (pcap: per direction, 1-based; qlog: null).",
        ),
        PN_SPACE,
        PACKET_NUMBER,
        Column("frame_index", I, "0-based position of the frame in its packet."),
        Column(
            "frame_type",
            S,
            "RFC 9000 / extension frame name in lower snake case (ack, crypto, stream, padding, ping, ack_frequency, "
            "immediate_ack, ..., unknown).",
        ),
        Column(
            "raw_frame_type",
            S,
            "Frames of a type the reader does not know (frame_type 'unknown'): the frame's name as the qlog wrote it "
            "(path_ack, bdp, ...) or its type number ('0x42'); null otherwise and in captures (whose issue row names "
            "an unknown type number). Each file with such frames has one ingest_issues row counting them.",
        ),
        Column("frame_bytes", I, "Encoded frame size in bytes, where known."),
        Column(
            "ack_delay_ms", F, "ACK frames: ACK Delay field in milliseconds (already scaled by the ack_delay_exponent)."
        ),
        Column("largest_acked", I, "ACK frames: largest acknowledged packet number."),
        Column("first_ack_range", I, "ACK frames: length of the first ACK range (packets below largest_acked)."),
        Column(
            "ack_ranges",
            ACK_RANGES,
            "ACK frames: all acknowledged ranges, highest first, as a list of {low, high} (packet numbers, inclusive): "
            "unnest(ack_ranges) gives one row per range.",
        ),
        Column("ecn_ect0", I, "ACK_ECN frames: ECT(0) count (null for ACK frames without ECN counts)."),
        Column("ecn_ect1", I, "ACK_ECN frames: ECT(1) count."),
        Column("ecn_ce", I, "ACK_ECN frames: ECN-CE count."),
        Column("stream_id", I, "STREAM / RESET_STREAM / ... frames: stream id."),
        Column("offset", I, "STREAM / CRYPTO frames: byte offset."),
        Column("length", I, "STREAM / CRYPTO / DATAGRAM frames: payload length in bytes."),
        Column("fin", B, "STREAM frames: FIN bit."),
        Column(
            "tls_messages",
            pl.List(S),
            "CRYPTO frames: the TLS handshake messages starting inside, in order (client_hello, server_hello, ...): "
            "list_contains(tls_messages, 'server_hello').",
        ),
        Column("ack_frequency_sequence", I, "ACK_FREQUENCY frames (draft-ietf-quic-ack-frequency): Sequence Number."),
        Column(
            "ack_eliciting_threshold",
            I,
            "ACK_FREQUENCY frames: Ack-Eliciting Threshold (ack-eliciting packets the peer may receive without "
            "acknowledging; 1 = ACK every other one).",
        ),
        Column(
            "request_max_ack_delay_ms", F, "ACK_FREQUENCY frames: Request Max Ack Delay, in ms (the frame carries µs)."
        ),
        Column(
            "reordering_threshold",
            I,
            "ACK_FREQUENCY frames: Reordering Threshold (0 = no immediate ACK on reordering). IMMEDIATE_ACK has no "
            "fields: frame_type 'immediate_ack'.",
        ),
        Column(
            "ack_reason",
            S,
            "ACK frames a receiver sent, where its qlog says why (quicack's ACK-policy receiver, event "
            "quicack:ack_sent): 'packet_threshold' (ack_ratio packets arrived), 'delay_timer' (the ACK delay expired "
            "first), 'reordering' (an out-of-order packet, policy D or 3A) or 'other' (Initial/Handshake ACKs; an ACK "
            "the implementation scheduled itself). Null elsewhere.",
        ),
        Column(
            "ack_eliciting_since_previous_ack",
            I,
            "ACK frames with ack_reason: ack-eliciting packets of that packet number space the receiver counted since "
            "its previous ACK (what its ACK ratio counts; null for Initial/Handshake ACKs).",
        ),
    ),
    written_by=(INGEST,),
)

METRICS_LOGGED = Table(
    "metrics_logged",
    "One row per recovery metrics update as the implementation logged it (qlog recovery:metrics_updated), normalized "
    "to ms.",
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
    written_by=(INGEST,),
)

INGEST_ISSUES = Table(
    "ingest_issues",
    "One row per input problem found while ingesting; nothing is dropped silently.",
    (
        Column("path", S, "Input file or folder, relative to the dataset's raw folder where possible."),
        RUN_ID,
        Column("stage", S, "Stage that found the problem: discover, qlog, pcap, keylog, scan, recovery, ..."),
        Column("severity", S, "'error' (input skipped), 'warning' (input used, partly) or 'info' (what the input does "
               "not say, e.g. a run.json key left out)."),
        Column("message", S, "What is wrong, in words a user can act on."),
    ),
    # Every stage that reads input: each run group's ingest, the dataset-level check, each scan part.
    written_by=(INGEST, SCAN),
)

ENDPOINTS = Table(
    "endpoints",
    "One row per (connection, vantage, source): what a log or capture says about the endpoint and how it was read.",
    (
        RUN_ID,
        SOURCE,
        Column("vantage", S, "'client' or 'server' (qlog), capture point (pcap)."),
        Column("path", S, "Input file, relative to the dataset's raw folder where possible."),
        Column(
            "implementation",
            S,
            "Implementation that wrote the log, detected from its header (aioquic, quic-go, ngtcp2, ...).",
        ),
        Column(
            "dialect",
            S,
            "qlog dialect detected: e.g. 'json-0.3', 'json-seq-0.3', 'ndjson-draft-02', 'json-draft-00', "
            "'json-seq-main-schema'.",
        ),
        Column("qlog_version", S, "qlog_version / file_schema string from the header."),
        Column("group_id", S, "Connection identifier in the file (group_id or original destination connection ID)."),
        Column(
            "time_origin_abs_ns",
            I,
            "Absolute time of time_ms = 0 (the first client Initial), Unix epoch ns, where the log has absolute times.",
        ),
        Column("local_max_ack_delay_ms", F, "max_ack_delay this endpoint advertised (ms)."),
        Column("peer_max_ack_delay_ms", F, "max_ack_delay the peer advertised (ms); used for the appdata PTO."),
        Column("peer_ack_delay_exponent", I, "ack_delay_exponent the peer advertised (default 3)."),
        Column(
            "handshake_confirmed_ms",
            F,
            "When this endpoint considered the handshake confirmed (client: HANDSHAKE_DONE received; server: "
            "HANDSHAKE_DONE sent).",
        ),
        Column("events", I, "Events read for this connection."),
        Column(
            "vantage_point_type",
            S,
            "qlog: vantage_point.type as the file wrote it ('client', 'SERVER', 'network', ...); a 'network' trace (a "
            "converted capture, pcap2qlog) takes the vantage of its 'flow'.",
        ),
        Column(
            "plausibility_flags",
            pl.List(S),
            "qlog: the plausibility checks this connection fails, one ingest_issues row each with the numbers "
            "(rtt_sample_longer_than_trace, rtt_longer_than_trace, ack_delay_above_100x_max_ack_delay, time_backwards; "
            "quicack.qlog.plausibility); empty when it passes them all. Leave flagged traces out with "
            "WHERE len(plausibility_flags) = 0.",
        ),
    ),
    written_by=(INGEST,),
)
