"""One measurement folder → ``scan_connections`` rows and ``ingest_issues`` rows.

Attempted connections are the union of the scanner input (``targets``), QScanner's ``quic_connection_info.csv``
and the connections found in the capture, joined by the client's Source Connection ID (QScanner's ``scid``).
Anything missing or malformed costs the columns it would have filled, never the measurement: a missing capture
leaves the classification null, a CSV with a wrong header its columns, an unparseable folder name the time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from quicack.layout.scan_folders import (
    CAPTURE,
    CONNECTION_INFO,
    HTTP_HEADER,
    KEYLOG,
    PCAP_CSV,
    SHARED_CONFIG,
    TARGETS,
    TRUTH,
    MeasurementFolder,
)
from quicack.pcap import CaptureBatch
from quicack.reference import OTHERS, cdn_asn
from quicack.schema import INGEST_ISSUES, SCAN_CONNECTIONS, SCAN_TRUTH

from . import qscanner_files
from .asn import PrefixTable
from .classify import classify_connections, decoder_exponents
from .pcap_csv import read_pcap_csv_facts
from .scan_capture import CaptureFacts, read_capture_facts

# At most this many target ids are named in one issue message.
MAX_NAMED_TARGETS = 10


@dataclass
class MeasurementTables:
    scan_connections: pl.DataFrame
    ingest_issues: pl.DataFrame
    # What an emulated scan configured per target (empty for a real scan, which has no truth.csv).
    scan_truth: pl.DataFrame


def read_measurement(
    folder: MeasurementFolder,
    prefixes: PrefixTable | None = None,
    on_batch: Callable[[CaptureBatch], None] | None = None,
) -> MeasurementTables:
    """Read one measurement folder; ``on_batch`` receives the capture decoder's tables (``quicack scan --out``)."""
    issues = qscanner_files.Issues(folder.scan_id)
    if folder.time is None:
        issues.add(
            folder.path,
            "warning",
            "folder name is not a timestamp (date -Ins, e.g. 2024-08-07T06:00:01,123456789+00:00); measurement_time is "
            "null",
        )
    targets = _optional(folder, TARGETS, qscanner_files.read_targets, issues, missing=None)
    info = _optional(folder, CONNECTION_INFO, qscanner_files.read_connection_info, issues, missing="warning")
    shared = _optional(folder, SHARED_CONFIG, qscanner_files.read_shared_config, issues, missing=None)
    headers = _optional(folder, HTTP_HEADER, qscanner_files.read_http_headers, issues, missing=None)
    truth = _optional(folder, TRUTH, qscanner_files.read_truth, issues, missing=None)

    facts, source = _packet_facts(folder, issues, on_batch)
    attempted = _attempted(targets, info)
    if facts is not None:
        attempted = _with_classification(attempted, facts, shared, source)
    else:
        attempted = attempted.with_columns(captured=pl.lit(False))
    if shared is not None:
        attempted = attempted.drop("server_ack_delay_exponent", strict=False).join(shared, on="target_id", how="left")
    if headers is not None:
        attempted = attempted.join(headers, on="target_id", how="left")
    attempted = _with_origin(attempted, prefixes)
    _report_silent_targets(attempted, folder, issues, have_packets=facts is not None)

    time = folder.time
    rows = attempted.with_columns(
        scan_id=pl.lit(folder.scan_id),
        vantage_point=pl.lit(folder.vantage_point),
        measurement_time=pl.lit(time.iso if time else None, pl.Utf8),
        measurement_time_ns=pl.lit(time.unix_ns if time else None, pl.Int64),
        scan_date=pl.lit(time.date if time else None, pl.Utf8),
    )
    sort_keys = [k for k in ("target_id", "connection") if k in rows.columns]
    rows = rows.sort(sort_keys, nulls_last=True)
    keep = [c for c in rows.columns if c in SCAN_CONNECTIONS.schema]
    issue_frames = [issues.frame(), *([facts.issues] if facts is not None else [])]
    return MeasurementTables(
        SCAN_CONNECTIONS.conform(rows.select(keep)),
        INGEST_ISSUES.conform(pl.concat([f for f in issue_frames if not f.is_empty()] or [INGEST_ISSUES.empty()])),
        SCAN_TRUTH.empty() if truth is None else SCAN_TRUTH.conform(truth.with_columns(scan_id=pl.lit(folder.scan_id))),
    )


def _optional(folder: MeasurementFolder, name: str, reader, issues: qscanner_files.Issues, missing: str | None):
    path = folder.file(name)
    if path is None:
        if missing:
            issues.add(folder.path / name, missing, f"no {name}[.zst] in the measurement folder; its columns are null")
        return None
    return reader(path, issues)


def _packet_facts(
    folder: MeasurementFolder, issues: qscanner_files.Issues, on_batch
) -> tuple[CaptureFacts | None, str | None]:
    capture = folder.file(CAPTURE) or folder.file("capture.pcapng")
    if capture is not None:
        keylog = folder.file(KEYLOG)
        return read_capture_facts(
            capture, [keylog] if keylog else [], folder.scan_id, folder.vantage_point, on_batch
        ), "capture"
    pcap_csv = folder.file(PCAP_CSV)
    if pcap_csv is not None:
        return read_pcap_csv_facts(pcap_csv, issues), "pcap_csv"
    issues.add(
        folder.path / CAPTURE,
        "error",
        "no capture.pcap[.zst] and no pcap.csv[.zst]: connections are listed from QScanner's files without "
        "classification (QScanner logs no per-packet times)",
    )
    return None, None


def _attempted(targets: pl.DataFrame | None, info: pl.DataFrame | None) -> pl.DataFrame:
    """Targets and QScanner's per-connection rows, joined by target id (QScanner numbers its input lines)."""
    if targets is None:
        if info is None:
            return pl.DataFrame(schema={"target_id": pl.Int64, "scid": pl.Utf8})
        return info.rename({"info_hostname": "sni", "info_address": "server_address", "info_port": "server_port"})
    if info is None:
        return targets.rename({"target_sni": "sni", "target_address": "server_address", "target_port": "server_port"})
    joined = targets.join(info.drop("scid"), on="target_id", how="full", coalesce=True)
    return joined.select(
        pl.exclude("target_sni", "target_address", "target_port", "info_hostname", "info_address", "info_port"),
        sni=pl.coalesce("target_sni", "info_hostname"),
        server_address=pl.coalesce("target_address", "info_address"),
        server_port=pl.coalesce("target_port", "info_port"),
    )


def _with_classification(
    attempted: pl.DataFrame, facts: CaptureFacts, shared: pl.DataFrame | None, source: str | None
) -> pl.DataFrame:
    captured = facts.connections.join(facts.counts, on="connection", how="left").with_columns(
        pl.col("client_datagrams", "server_datagrams").fill_null(0)
    )
    # The server's advertised exponent, by the target the connection was for (its scid names it).
    by_scid = attempted.select("scid", "target_id").drop_nulls("scid").unique("scid")
    captured = captured.join(by_scid, left_on="client_scid", right_on="scid", how="left")
    if shared is not None:
        captured = captured.join(shared.select("target_id", "server_ack_delay_exponent"), on="target_id", how="left")
    else:
        captured = captured.with_columns(server_ack_delay_exponent=pl.lit(None, pl.Int64))
    first_ack_batches = (
        facts.server_datagrams.filter(pl.col("has_initial_ack"))
        .sort("connection", "datagram_index")
        .group_by("connection", maintain_order=True)
        .agg(pl.col("batch").first())
    )
    exponents = decoder_exponents(
        first_ack_batches, facts.encrypted_extensions, captured.select("connection", "server_ack_delay_exponent")
    )
    classes = classify_connections(captured, facts.server_datagrams, facts.client_initials, exponents)
    captured = captured.drop("target_id").join(classes, on="connection", how="left").with_columns(
        captured=pl.lit(True), classified_from=pl.lit(source)
    )
    merged = attempted.join(captured, left_on="scid", right_on="client_scid", how="full", coalesce=False)
    return merged.with_columns(
        scid=pl.coalesce("scid", "client_scid"),
        sni=pl.coalesce("sni", "client_hello_sni"),
        server_address=pl.coalesce("server_address", "server_address_right"),
        server_port=pl.coalesce("server_port", "server_port_right"),
        captured=pl.col("captured").fill_null(False),
    )


def _with_origin(attempted: pl.DataFrame, prefixes: PrefixTable | None) -> pl.DataFrame:
    if prefixes is None:
        return attempted.with_columns(origin_asn=pl.lit(None, pl.Int64), cdn=pl.lit(None, pl.Utf8))
    origins = prefixes.origin_asns(attempted["server_address"])
    cdn = cdn_asn().select("asn", "cdn").rename({"asn": "origin_asn"})
    return (
        attempted.join(origins, left_on="server_address", right_on="address", how="left")
        .join(cdn, on="origin_asn", how="left")
        .with_columns(cdn=pl.col("cdn").fill_null(OTHERS))
    )


def _report_silent_targets(
    attempted: pl.DataFrame, folder: MeasurementFolder, issues: qscanner_files.Issues, have_packets: bool
) -> None:
    """Targets that never answered are data (rows with server_datagrams = 0), and also counted as an issue."""
    if not have_packets or attempted.is_empty():
        return
    for condition, what in (
        (~pl.col("captured"), "have no datagram in the capture (not sent, or the capture missed them)"),
        (pl.col("captured") & (pl.col("server_datagrams") == 0), "never answered (client datagrams only)"),
    ):
        silent = attempted.filter(condition)
        if silent.is_empty():
            continue
        named = silent["target_id"].drop_nulls().head(MAX_NAMED_TARGETS).to_list()
        more = ", ..." if silent.height > len(named) else ""
        issues.add(
            folder.path, "warning", f"{silent.height} target(s) {what}: targetid {', '.join(map(str, named))}{more}"
        )
