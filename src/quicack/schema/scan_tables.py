"""The tables the scan stage writes per scan part: the connections a scanner attempted and, for an emulated scan,
the configured truth."""

from __future__ import annotations

from .contract import SCAN, B, Column, F, I, S, Table

SCAN_CONNECTIONS = Table(
    "scan_connections",
    "One row per connection a scanner attempted (QScanner output in the imc24 authors' layout, or an emulated scan): "
    "who it was for, whether it succeeded, and what the first server datagrams were (quicack.scan).",
    (
        Column(
            "scan_id",
            S,
            "Measurement: '<vantage_point>/<measurement folder name>' (the authors' layout "
            "<root>/<vantage_point>/data/<ISO timestamp>/).",
        ),
        Column("vantage_point", S, "Where the scan ran: the <vantage_point> folder of the layout."),
        Column(
            "measurement_time",
            S,
            "Start of the measurement from its folder name (date -Ins), as ISO 8601 in UTC with nanoseconds; null when "
            "the folder name is not a timestamp.",
        ),
        Column("measurement_time_ns", I, "The same instant as Unix epoch nanoseconds."),
        Column(
            "scan_date",
            S,
            "UTC date of the measurement (YYYY-MM-DD); the paper's 'day' (it speaks of local time, SCAN.md point 7).",
        ),
        Column(
            "target_id",
            I,
            "QScanner's targetid: 0-based line of the target in the scanner input (null: a captured connection no "
            "input or QScanner file names).",
        ),
        Column(
            "scid",
            S,
            "The client's Source Connection ID in hex: QScanner's scid ({targetid:016x}), the key joining captured "
            "packets to targets.",
        ),
        Column("sni", S, "Server name: from targets, else from the captured ClientHello, else QScanner's hostname."),
        Column(
            "client_hello_sni",
            S,
            "Server name in the captured ClientHello (null: no ClientHello captured or readable).",
        ),
        Column(
            "server_address",
            S,
            "Target address (targets' ip, else the captured server address, else QScanner's address).",
        ),
        Column("server_port", I, "Target UDP port."),
        Column(
            "origin_asn",
            I,
            "Origin AS of server_address by longest prefix match in the prefix→AS file given (pyasn ipasn or "
            "prefix,asn CSV); null without one or when unrouted.",
        ),
        Column(
            "cdn",
            S,
            "CDN of origin_asn by data/reference/cdn_asn.csv (imc24 Table 5), 'Others' for any other or unrouted AS; "
            "null without a prefix→AS file.",
        ),
        Column(
            "success",
            B,
            "QScanner completed the handshake without error (handshakeTime set, errorMessage empty); null when "
            "quic_connection_info.csv has no row for it.",
        ),
        Column("error_message", S, "QScanner's errorMessage (null when none)."),
        Column("handshake_duration_ms", F, "QScanner's handshakeDuration (ms, whole milliseconds)."),
        Column("captured", B, "The capture (or pcap.csv) holds datagrams of this connection."),
        Column(
            "classified_from",
            S,
            "'capture' (decoded by quicack.pcap), 'pcap_csv' (the authors' tshark export) or null (no packet data).",
        ),
        Column("client_datagrams", I, "Client datagrams of the connection in the capture."),
        Column(
            "server_datagrams", I, "Server datagrams of the connection in the capture (0: the target never answered)."
        ),
        Column(
            "first_datagram_class",
            S,
            "'iack' (an Initial ACK in a server datagram before the one with the ServerHello), 'coalesced' (first "
            "Initial ACK and ServerHello in one datagram), 'sh_first' (ServerHello before any Initial ACK; the authors "
            "count these as IACK), 'no_sh' (no ServerHello captured); null without packet data.",
        ),
        Column(
            "ack_time_ms",
            F,
            "Capture time of the first server datagram with an Initial ACK, ms after the client's first Initial.",
        ),
        Column(
            "sh_time_ms",
            F,
            "Capture time of the first server datagram with the ServerHello, ms after the client's first Initial.",
        ),
        Column(
            "ack_to_sh_ms",
            F,
            "sh_time_ms - ack_time_ms: the IACK-to-ServerHello delay (0 when coalesced, negative when the ServerHello "
            "came first).",
        ),
        Column(
            "first_ack_delay_ms",
            F,
            "ACK Delay field of the first server Initial ACK, decoded with exponent 3 (first_ack_delay_exponent): the "
            "client cannot know the server's exponent yet (it comes in EncryptedExtensions), quic-go decodes it so, "
            "and so did the imc24 authors.",
        ),
        Column("first_ack_delay_exponent", I, "Exponent applied to first_ack_delay_ms (3)."),
        Column(
            "first_ack_delay_advertised_ms",
            F,
            "The same field decoded with the server's advertised ack_delay_exponent (RFC 9000 §19.3 reading); equals "
            "first_ack_delay_ms when that is 3.",
        ),
        Column("server_ack_delay_exponent", I, "ack_delay_exponent the server advertised (quic_shared_config.csv)."),
        Column("server_max_ack_delay_ms", F, "max_ack_delay the server advertised (quic_shared_config.csv)."),
        Column(
            "first_ack_largest_acked",
            I,
            "Largest Acknowledged of the first server Initial ACK (client Initial packet number).",
        ),
        Column(
            "first_ack_range",
            I,
            "First ACK Range of that ACK (0: it covers one packet; the authors' filter, SCAN.md point 5).",
        ),
        Column("ack_datagram_bytes", I, "UDP payload bytes of the datagram with the first Initial ACK."),
        Column(
            "iack_padded",
            B,
            "For class 'iack': the instant ACK's datagram is padded (PADDING frames or trailing zeros); null for other "
            "classes.",
        ),
        Column(
            "rtt_estimate_ms",
            F,
            "Path RTT estimate: first Initial ACK's capture time minus that of the client Initial it acknowledges as "
            "largest, minus first_ack_delay_ms.",
        ),
        Column("cf_ray", S, "Cf-Ray response header (http_header.csv), if any."),
        Column("cf_ray_pop", S, "Cloudflare PoP: the IATA code ending cf_ray (e.g. 'HAM')."),
    ),
    written_by=(SCAN,),
)

SCAN_TRUTH = Table(
    "scan_truth",
    "What an emulated scan configured for each target (truth.csv beside every measurement of quicack.testbed.scan): "
    "join scan_connections on (scan_id, target_id) to compare measured with configured. Empty for real scans.",
    (
        Column("scan_id", S, "Measurement, as in scan_connections."),
        Column("target_id", I, "QScanner's targetid (0-based line of the scanner input)."),
        Column("measurement_kind", S, "'toplist' or 'cloudflare_series' (the two scans of imc24 §4.3)."),
        Column(
            "emulated_time",
            S,
            "The emulated time of the measurement (ISO 8601, UTC): the folder's name; packet times are the recording's "
            "wall clock.",
        ),
        Column("sni", S, "Domain the target was configured for."),
        Column("site", S, "Frontend site that answers the target from this vantage point."),
        Column(
            "server_kind",
            S,
            "'aioquic-cdn-frontend' (instant ACK on a certificate-cache miss), 'quic-go', 'ngtcp2' or 'quinn' "
            "(unmodified servers).",
        ),
        Column("cdn", S, "CDN the frontend plays."),
        Column("asn", I, "AS the emulated address plan gives the target's prefix."),
        Column("pop_iata", S, "IATA code of the frontend's PoP (its cf-ray suffix), null for sites without one."),
        Column("path_rtt_ms", F, "Configured RTT between the vantage point and the site."),
        Column("store_rtt_ms", F, "Configured RTT between the frontend and the certificate store (CDN frontends)."),
        Column("store_delay_ms", F, "Configured certificate-store processing delay at that emulated time."),
        Column("padded", B, "The frontend pads its instant ACK to a full datagram."),
        Column(
            "cache_state",
            S,
            "The frontend's own decision for this connection: 'hit', 'miss_started', 'miss_joined', 'none' (not a "
            "caching frontend), 'no_decision'.",
        ),
        Column("warmed_by_load", B, "The emulated user load connected to this domain just before the measurement."),
        Column(
            "expected_class",
            S,
            "The first-datagram class the configuration implies: 'iack', 'coalesced', 'no_sh' ('unknown' without a "
            "decision).",
        ),
    ),
    written_by=(SCAN,),
)
