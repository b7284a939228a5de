"""Write the SYNTHETIC qlog fixtures of this folder (hand-made from documented schemas, not recorded).

picoquic, mvfst and neqo cannot be built here, so these files follow each implementation's logging code:

* picoquic_client.qlog — private-octopus/picoquic loglib/qlog.c (draft-00 header printed by
  qlog_connection_start, events as arrays per "event_fields", times and RTTs in µs, ACK ack_delay printed as
  the undecoded wire value by qlog_ack_frame, STREAM frames with "id").
* mvfst_client.qlog — facebook/mvfst quic/logging/FileQLogger.cpp + QLoggerTypes.cpp (draft-00,
  relative_time as a string of µs, CRYPTO "len", stream ids as strings, "metric_update" RTTs and ACK delays in µs,
  "congestion_metric_update" with current_cwnd).
* neqo_client.sqlog — the qlog crate's main-schema JSON-SEQ as neqo/quiche write it (file_schema header,
  quic:* names, reference_time object with wall_clock_time, RawInfo frame sizes, "initiator" in parameters_set,
  acked_ranges with [n] singletons in ascending order).
* quic_go_draft02_client.qlog — NDJSON draft-02 as quic-go v0.2x and QScanner's quic-go fork wrote it.
(quinn is recorded here: tests/data/loopback/aioquic_quinn/, read by tests/test_qlog_loopback.py; the hand-made
quinn_client.sqlog that stood here is gone.)

Each file is one client connection over a path with a 20 ms RTT: client Initial at t=0, server Initial with
ACK + CRYPTO at 20 ms, ... Run `python make_synthetic.py` in this folder to regenerate.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
DCID = "0a1b2c3d4e5f6071"


def picoquic() -> str:
    ev = [
        [0, 0, "transport", "parameters_set", {"owner": "local", "sni": "localhost", "proposed_alpn": ["hq-interop"],
                                               "ack_delay_exponent": 3, "max_ack_delay": 10}],
        [40, 0, "transport", "packet_sent", {"packet_type": "initial", "header": {
            "packet_size": 1252, "packet_number": 0, "version": "00000001", "payload_length": 1206,
            "scid": "1122334455667788", "dcid": DCID}, "frames": [
            {"frame_type": "crypto", "offset": 0, "length": 286}, {"frame_type": "padding"}]}],
        [40, 0, "transport", "datagram_sent", {"byte_length": 1252}],
        [20100, 0, "transport", "datagram_received", {"byte_length": 1252}],
        [20110, 0, "transport", "packet_received", {"packet_type": "initial", "header": {
            "packet_size": 181, "packet_number": 0, "payload_length": 136, "scid": "99aabbccddeeff00",
            "dcid": "1122334455667788"}, "frames": [
            {"frame_type": "ack", "ack_delay": 125, "acked_ranges": [[0, 0]]},
            {"frame_type": "crypto", "offset": 0, "length": 90}]}],
        [20120, 0, "recovery", "metrics_updated", {"cwnd": 15360, "bytes_in_flight": 0, "smoothed_rtt": 20070,
                                                    "min_rtt": 20070, "latest_rtt": 20070}],
        [20200, 0, "transport", "packet_received", {"packet_type": "handshake", "header": {
            "packet_size": 1000, "packet_number": 0}, "frames": [{"frame_type": "crypto", "offset": 0,
                                                                   "length": 950}]}],
        [20210, 0, "transport", "parameters_set", {"owner": "remote", "ack_delay_exponent": 4,
                                                   "max_ack_delay": 25}],
        [20300, 0, "transport", "packet_sent", {"packet_type": "handshake", "header": {
            "packet_size": 80, "packet_number": 0}, "frames": [
            {"frame_type": "ack", "ack_delay": 10, "acked_ranges": [[0, 0]]},
            {"frame_type": "crypto", "offset": 0, "length": 36}]}],
        [20310, 0, "transport", "packet_sent", {"packet_type": "1rtt_protected", "header": {
            "packet_size": 60, "packet_number": 0, "dcid": "99aabbccddeeff00"}, "frames": [
            {"frame_type": "stream", "id": 0, "offset": 0, "length": 11, "fin": True}]}],
        [40500, 0, "transport", "packet_received", {"packet_type": "1rtt_protected", "header": {
            "packet_size": 1200, "packet_number": 1}, "frames": [
            {"frame_type": "handshake_done"},
            {"frame_type": "ack", "ack_delay": 250, "acked_ranges": [[0, 0]]},
            {"frame_type": "stream", "id": 0, "offset": 0, "length": 1000, "fin": True}]}],
        [40510, 0, "recovery", "metrics_updated", {"smoothed_rtt": 20080, "latest_rtt": 20190}],
    ]
    lines = [json.dumps(e) for e in ev]
    return (
        '{ "qlog_version": "draft-00", "title": "picoquic", "traces": [\n'
        '{ "vantage_point": { "name": "backend-67", "type": "client" },\n'
        f'"title": "picoquic", "description": "{DCID}",'
        '"event_fields": ["relative_time", "path_id", "category", "event", "data"],\n'
        '"configuration": {"time_units": "us"},\n'
        '"common_fields": { "protocol_type": "QUIC_HTTP3", "reference_time": "1763700000000000"},\n'
        '"events": [' + ",\n".join(lines) + "]}]}\n"
    )


def mvfst() -> str:
    events = [
        ["0", "transport", "packet_sent", {"header": {"packet_size": 1252, "packet_number": 0}, "frames": [
            {"frame_type": "crypto_frame", "offset": 0, "len": 300}, {"frame_type": "padding", "num_frames": 900}],
            "packet_type": "initial"}],
        ["20500", "transport", "packet_received", {"header": {"packet_size": 200, "packet_number": 0}, "frames": [
            {"acked_ranges": [[0, 0]], "frame_type": "ack", "ack_delay": 1500},
            {"frame_type": "crypto_frame", "offset": 0, "len": 90}], "packet_type": "initial"}],
        ["20510", "recovery", "metric_update", {"latest_rtt": 20500, "min_rtt": 20500, "smoothed_rtt": 20500,
                                                "ack_delay": 1500}],
        ["20520", "metric_update", "congestion_metric_update", {
            "bytes_in_flight": 0, "current_cwnd": 12320, "congestion_event": "packet_ack", "state": "Steady",
            "recovery_state": ""}],
        ["20600", "transport", "packet_received", {"header": {"packet_size": 1100, "packet_number": 0},
                                                   "frames": [{"frame_type": "crypto_frame", "offset": 0,
                                                               "len": 1000}], "packet_type": "handshake"}],
        ["20700", "transport", "packet_sent", {"header": {"packet_size": 90, "packet_number": 0}, "frames": [
            {"acked_ranges": [[0, 0]], "frame_type": "ack", "ack_delay": 100},
            {"frame_type": "crypto_frame", "offset": 0, "len": 36}], "packet_type": "handshake"}],
        ["20800", "transport", "packet_sent", {"header": {"packet_size": 70, "packet_number": 1}, "frames": [
            {"offset": 0, "length": 11, "fin": True, "stream_id": "0", "frame_type": "stream"}],
            "packet_type": "1RTT"}],
        ["41000", "transport", "packet_received", {"header": {"packet_size": 1200, "packet_number": 1}, "frames": [
            {"frame_type": "handshake_done"},
            {"acked_ranges": [[1, 1]], "frame_type": "ack", "ack_delay": 2000},
            {"offset": 0, "length": 1000, "fin": True, "stream_id": "0", "frame_type": "stream"}],
            "packet_type": "1RTT"}],
        ["41010", "recovery", "metric_update", {"latest_rtt": 20200, "min_rtt": 20200, "smoothed_rtt": 20462,
                                                "ack_delay": 2000}],
    ]
    doc = {
        "description": "Converted from file",
        "qlog_version": "draft-00",
        "title": "mvfst",
        "traces": [{
            "common_fields": {"dcid": DCID, "protocol_type": "QUIC_HTTP3", "reference_time": "0",
                              "scid": "1122334455667788"},
            "configuration": {"time_offset": 0, "time_units": "us"},
            "description": "Generated qlog from connection",
            "event_fields": ["relative_time", "category", "event", "data"],
            "events": events,
            "title": "mvfst qlog from single connection",
            "vantage_point": {"name": "client", "type": "client"},
        }],
        "summary": {"max_duration": 41010, "total_event_count": len(events), "trace_count": 1},
    }
    return json.dumps(doc) + "\n"


def neqo() -> str:
    header = {
        "file_schema": "urn:ietf:params:qlog:file:sequential",
        "serialization_format": "application/qlog+json-seq",
        "title": "neqo-client qlog",
        "description": "neqo-client qlog",
        "trace": {
            "vantage_point": {"name": "neqo-client", "type": "client"},
            "title": "neqo-client qlog",
            "common_fields": {
                "reference_time": {"clock_type": "monotonic", "epoch": "unknown",
                                   "wall_clock_time": "2025-11-21T13:00:00.000Z"},
                "time_format": "relative_to_epoch", "group_id": DCID},
            "event_schemas": ["urn:ietf:params:qlog:events:quic-12"],
        },
    }
    events = [
        {"time": 0.0, "name": "quic:parameters_set", "data": {"initiator": "local", "max_ack_delay": 20,
                                                              "ack_delay_exponent": 3}},
        {"time": 0.25, "name": "quic:packet_sent", "data": {
            "header": {"packet_type": "initial", "packet_number": 0, "dcid": DCID},
            "raw": {"length": 1252, "payload_length": 1206},
            "frames": [{"frame_type": "crypto", "offset": 0, "raw": {"length": 290, "payload_length": 286}},
                       {"frame_type": "padding", "raw": {"length": 916, "payload_length": 916}}]}},
        {"time": 20.5, "name": "quic:packet_received", "data": {
            "header": {"packet_type": "initial", "packet_number": 0},
            "raw": {"length": 181},
            "frames": [{"frame_type": "ack", "ack_delay": 0.125, "acked_ranges": [[0]],
                        "raw": {"length": 5}},
                       {"frame_type": "crypto", "offset": 0, "raw": {"length": 94, "payload_length": 90}}]}},
        {"time": 20.6, "name": "quic:recovery_metrics_updated", "data": {
            "smoothed_rtt": 20.25, "rtt_variance": 10.125, "latest_rtt": 20.25, "min_rtt": 20.25,
            "congestion_window": 13500, "bytes_in_flight": 0}},
        {"time": 20.7, "name": "quic:parameters_set", "data": {"initiator": "remote", "max_ack_delay": 25}},
        {"time": 20.9, "name": "quic:packet_sent", "data": {
            "header": {"packet_type": "1RTT", "packet_number": 0}, "raw": {"length": 60},
            "frames": [{"frame_type": "stream", "stream_id": 0, "offset": 0, "fin": True,
                        "raw": {"length": 14, "payload_length": 11}}]}},
        {"time": 41.0, "name": "quic:packet_received", "data": {
            "header": {"packet_type": "1RTT", "packet_number": 3}, "raw": {"length": 1200},
            "frames": [{"frame_type": "handshake_done"},
                       {"frame_type": "ack", "ack_delay": 1.5, "acked_ranges": [[4], [0, 2]]},
                       {"frame_type": "stream", "stream_id": 0, "offset": 0, "length": 1000, "fin": True}]}},
        {"time": 41.1, "name": "quic:recovery_metrics_updated", "data": {"latest_rtt": 20.1, "smoothed_rtt": 20.23}},
    ]
    return "".join("\x1e" + json.dumps(r) + "\n" for r in [header, *events])


def quic_go_draft02() -> str:
    """NDJSON draft-02 as quic-go v0.2x (and QScanner's fork) wrote it (qlog/trace.go topLevel: qlog_format NDJSON,
    newline-delimited records without RS, reference_time in Unix-epoch ms, header.packet_size)."""
    header = {"qlog_format": "NDJSON", "qlog_version": "draft-02", "title": "quic-go qlog",
              "configuration": {"code_version": "v0.24.0"},
              "trace": {"vantage_point": {"type": "client"},
                        "common_fields": {"ODCID": DCID, "group_id": DCID, "reference_time": 1763700000000.5,
                                          "time_format": "relative"}}}
    events = [
        {
            "time": 0.031,
            "name": "transport:packet_sent",
            "data": {
                "header": {"packet_type": "initial", "packet_number": 0, "packet_size": 1252, "payload_length": 1206},
                "frames": [
                    {"frame_type": "crypto", "offset": 0, "length": 286},
                    {"frame_type": "padding", "length": 916},
                ],
            },
        },
        {
            "time": 20.531,
            "name": "transport:packet_received",
            "data": {
                "header": {"packet_type": "initial", "packet_number": 0, "packet_size": 181},
                "frames": [
                    {"frame_type": "ack", "acked_ranges": [[0, 0]]},
                    {"frame_type": "crypto", "offset": 0, "length": 90},
                ],
            },
        },
        {
            "time": 20.6,
            "name": "recovery:metrics_updated",
            "data": {
                "min_rtt": 20.5,
                "smoothed_rtt": 20.5,
                "latest_rtt": 20.5,
                "rtt_variance": 10.25,
                "congestion_window": 32000,
                "bytes_in_flight": 0,
            },
        },
        {
            "time": 41.0,
            "name": "transport:packet_received",
            "data": {
                "header": {"packet_type": "1RTT", "packet_number": 1, "packet_size": 60},
                "frames": [
                    {"frame_type": "handshake_done"},
                    {"frame_type": "ack", "ack_delay": 0.5, "acked_ranges": [[0, 1]]},
                ],
            },
        },
    ]
    return "".join(json.dumps(r) + "\n" for r in [header, *events])


def main() -> None:
    (HERE / "picoquic_client.qlog").write_text(picoquic(), encoding="utf-8")
    (HERE / "mvfst_client.qlog").write_text(mvfst(), encoding="utf-8")
    (HERE / "neqo_client.sqlog").write_text(neqo(), encoding="utf-8")
    (HERE / "quic_go_draft02_client.qlog").write_text(quic_go_draft02(), encoding="utf-8")


if __name__ == "__main__":
    main()
