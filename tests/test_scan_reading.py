"""Reading scans: real QScanner output in the imc24 authors' layout (tests/data/qscanner, recorded against an
instant-ACK and a wait-for-certificate aioquic server and an unmodified quic-go server; truth.csv says what each
server was configured to do). Hand-made inputs are only the malformed ones, and their tests say so."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import zstandard

from quicack.layout import find_measurements, parse_measurement_time
from quicack.scan import read_measurement
from quicack.scan.asn import read_prefix_table
from quicack.scan.identify import client_hello_sni
from quicack.scan.qscanner_files import Issues
from quicack.schema import SCAN_CONNECTIONS
from tests.conftest import REPO

QSCANNER = REPO / "tests" / "data" / "qscanner"
FIRST = "2026-11-22T19:45:06,814209789+00:00"
SECOND = "2026-11-22T19:45:34,033078863+00:00"
PCAP_CSV = REPO / "tests" / "data" / "qscanner_pcap_csv" / "pcap.csv.zst"


def truth() -> pl.DataFrame:
    """The configured behaviour as the class it must produce: an instant-ACK server answers with an ACK datagram
    before the ServerHello; the others (waiting for the certificate, quic-go) with ACK and ServerHello together."""
    return pl.read_csv(QSCANNER / "truth.csv", schema_overrides={"scid": pl.Utf8}).select(
        "timestamp",
        target_id="targetid",
        expected_sni="sni",
        expected=pl.when(pl.col("instant_ack")).then(pl.lit("iack")).otherwise(pl.lit("coalesced")),
    )


def read_all(root: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    tables = [read_measurement(folder) for folder in find_measurements([root])]
    return pl.concat([t.scan_connections for t in tables]), pl.concat([t.ingest_issues for t in tables])


@pytest.fixture(scope="module")
def fixture_rows() -> tuple[pl.DataFrame, pl.DataFrame]:
    return read_all(QSCANNER)


def copy_measurement(tmp_path: Path, name: str = FIRST, vantage_point: str = "vp-a") -> Path:
    target = tmp_path / "root" / vantage_point / "data" / name
    shutil.copytree(QSCANNER / "vp-a" / "data" / FIRST, target)
    return target


def zstd_text(text: str) -> bytes:
    return zstandard.ZstdCompressor().compress(text.encode())


def test_every_connection_is_classified_as_the_server_was_configured(fixture_rows):
    rows, _ = fixture_rows
    measured = rows.with_columns(timestamp=pl.col("scan_id").str.split("/").list.last())
    compared = truth().join(measured, on=["timestamp", "target_id"], how="left")
    assert compared.height == 12
    wrong = compared.filter(pl.col("first_datagram_class").ne_missing(pl.col("expected")))
    assert wrong.is_empty(), wrong.select("timestamp", "target_id", "expected", "first_datagram_class")
    counts = dict(compared.group_by("first_datagram_class").len().iter_rows())
    assert counts == {"iack": 4, "coalesced": 8}


def test_iack_timing_follows_the_configured_certificate_delay(fixture_rows):
    rows, _ = fixture_rows
    iack = rows.filter(pl.col("first_datagram_class") == "iack")
    # The instant-ACK server sends its ServerHello after a 20 ms certificate delay.
    assert iack["ack_to_sh_ms"].min() > 20.0
    assert iack["iack_padded"].to_list() == [False] * 4  # aioquic's instant ACK is a bare 50-byte datagram
    assert (iack["ack_datagram_bytes"] < 1200).all()
    coalesced = rows.filter(pl.col("first_datagram_class") == "coalesced")
    assert (coalesced["ack_to_sh_ms"] == 0.0).all() and coalesced["iack_padded"].is_null().all()
    # Path RTT 20 ms: the instant ACK and quic-go's immediate ACK measure it; the WFC server's ACK waits for the
    # certificate without counting the wait in its ACK Delay (imc24 App. D), so its estimate is inflated.
    prompt = rows.filter(pl.col("sni").str.contains("iack|quic-go"))
    assert prompt["rtt_estimate_ms"].is_between(20.0, 30.0).all()
    waiting = rows.filter(pl.col("sni").str.contains("wfc"))
    assert (waiting["rtt_estimate_ms"] > 40.0).all()
    assert (rows["first_ack_delay_exponent"] == 3).all()
    assert rows["first_ack_delay_ms"].equals(rows["first_ack_delay_advertised_ms"])  # every server advertised 3


def test_sni_from_the_client_hello_equals_the_targets(fixture_rows):
    rows, _ = fixture_rows
    compared = rows.with_columns(timestamp=pl.col("scan_id").str.split("/").list.last()).join(
        truth(), on=["timestamp", "target_id"]
    )
    assert compared.height == 12
    assert compared["client_hello_sni"].to_list() == compared["expected_sni"].to_list()
    assert compared["sni"].to_list() == compared["expected_sni"].to_list()


def test_both_measurements_are_found_with_their_times():
    folders = find_measurements([QSCANNER])
    assert [(f.vantage_point, f.path.name) for f in folders] == [("vp-a", FIRST), ("vp-a", SECOND)]
    assert [f.time.iso for f in folders] == [
        "2026-11-22T19:45:06.814209789+00:00",
        "2026-11-22T19:45:34.033078863+00:00",
    ]
    assert folders[0].time.unix_ns == 1795376706814209789
    # The same folders whichever level is named.
    assert find_measurements([QSCANNER / "vp-a"]) == folders == find_measurements([QSCANNER / "vp-a" / "data"])
    assert find_measurements([folders[1].path]) == folders[1:]


def test_rows_carry_the_measurement_and_qscanner_results(fixture_rows):
    rows, issues = fixture_rows
    assert rows.columns == [c.name for c in SCAN_CONNECTIONS.columns]
    assert issues.is_empty(), issues
    assert rows["scan_date"].unique().to_list() == ["2026-11-22"]
    assert rows["success"].all() and rows["captured"].all() and (rows["server_datagrams"] > 0).all()
    assert rows["scid"].to_list()[:3] == ["0000000000000000", "0000000000000001", "0000000000000002"]
    assert rows["classified_from"].unique().to_list() == ["capture"]


def test_offset_timestamps_are_converted_to_utc():
    assert parse_measurement_time("2024-08-07T08:00:01,5+02:00").iso == "2024-08-07T06:00:01.500000000+00:00"
    assert parse_measurement_time("2024-08-07T06:00:01Z").unix_ns == 1723010401 * 10**9
    assert parse_measurement_time("capture-of-tuesday") is None


def test_a_scan_without_targets_takes_the_sni_from_the_client_hello(tmp_path):
    folder = copy_measurement(tmp_path)
    (folder / "targets.zst").unlink()
    rows, issues = read_all(tmp_path / "root")
    assert issues.is_empty()
    assert (
        rows.sort("target_id")["sni"].to_list()
        == truth().filter(pl.col("timestamp") == FIRST)["expected_sni"].to_list()
    )


def test_the_authors_pcap_csv_stands_in_for_an_absent_capture(tmp_path):
    folder = copy_measurement(tmp_path)
    (folder / "capture.pcap.zst").unlink()
    shutil.copy(PCAP_CSV, folder / "pcap.csv.zst")
    rows, issues = read_all(tmp_path / "root")
    assert issues.is_empty(), issues
    expected = truth().filter(pl.col("timestamp") == FIRST)
    assert rows["first_datagram_class"].to_list() == expected["expected"].to_list()
    assert rows["client_hello_sni"].to_list() == expected["expected_sni"].to_list()
    assert rows["classified_from"].unique().to_list() == ["pcap_csv"]
    # The same ACK Delays as the decoded capture (tshark exports the raw field).
    from_capture = read_measurement(find_measurements([QSCANNER / "vp-a" / "data" / FIRST])[0]).scan_connections
    assert rows["first_ack_delay_ms"].to_list() == from_capture["first_ack_delay_ms"].to_list()
    assert rows["ack_to_sh_ms"].round(6).to_list() == from_capture["ack_to_sh_ms"].round(6).to_list()


def test_handmade_wrong_csv_header(tmp_path):
    folder = copy_measurement(tmp_path)
    (folder / "quic_connection_info.csv.zst").write_bytes(zstd_text("target,ip,port\n0,198.19.0.11,443\n"))
    rows, issues = read_all(tmp_path / "root")
    assert rows.height == 6 and rows["first_datagram_class"].is_not_null().all()  # nothing else lost
    assert rows["success"].is_null().all()
    [problem] = issues.filter(pl.col("path").str.ends_with("quic_connection_info.csv.zst")).rows(named=True)
    assert problem["severity"] == "error" and "unexpected header" in problem["message"]


def test_handmade_unparseable_timestamp_folder(tmp_path):
    copy_measurement(tmp_path, name="tuesday-morning")
    rows, issues = read_all(tmp_path / "root")
    assert rows.height == 6 and rows["measurement_time"].is_null().all()
    assert rows["scan_id"].unique().to_list() == ["vp-a/tuesday-morning"]
    assert issues.filter(pl.col("message").str.contains("not a timestamp")).height == 1


def test_missing_capture_keeps_the_rows_and_says_why(tmp_path):
    folder = copy_measurement(tmp_path)
    (folder / "capture.pcap.zst").unlink()
    rows, issues = read_all(tmp_path / "root")
    assert rows.height == 6 and rows["success"].all() and rows["first_datagram_class"].is_null().all()
    assert not rows["captured"].any()
    [problem] = issues.filter(pl.col("severity") == "error").rows(named=True)
    assert "no capture.pcap" in problem["message"]


def test_handmade_capture_cut_mid_packet(tmp_path):
    folder = copy_measurement(tmp_path)
    capture = zstandard.ZstdDecompressor().decompress((folder / "capture.pcap.zst").read_bytes())
    (folder / "capture.pcap.zst").unlink()
    (folder / "capture.pcap").write_bytes(capture[: len(capture) * 2 // 3 + 7])
    rows, issues = read_all(tmp_path / "root")
    assert rows.height == 6
    pcap_issues = issues.filter(pl.col("stage") == "pcap")
    assert pcap_issues["message"].str.contains("(?i)truncat|cut|incomplete").any(), pcap_issues
    # The connections whose handshake is in the first two thirds are still classified.
    assert rows["first_datagram_class"].is_not_null().sum() >= 4


def test_handmade_target_that_never_answered(tmp_path):
    folder = copy_measurement(tmp_path)
    targets = zstandard.ZstdDecompressor().decompress((folder / "targets.zst").read_bytes()).decode()
    (folder / "targets.zst").write_bytes(zstd_text(targets + "198.19.0.99,silent.test,443,0000000000000006\n"))
    rows, issues = read_all(tmp_path / "root")
    silent = rows.filter(pl.col("target_id") == 6).row(0, named=True)
    assert silent["sni"] == "silent.test" and silent["captured"] is False and silent["first_datagram_class"] is None
    assert issues.filter(pl.col("message").str.contains("1 target.*targetid 6")).height == 1


def test_handmade_prefix_files_give_origin_as_and_cdn(tmp_path):
    pyasn = tmp_path / "ipasn.dat"
    pyasn.write_text(
        "; IP-ASN32-DAT file\n198.19.0.0/16\t64500\n198.19.0.12/32\t13335\n10.0.0.0/8\t{1,2}\n", encoding="utf-8"
    )
    issues = Issues("")
    table = read_prefix_table(pyasn, issues)
    assert len(issues.rows) == 1  # the AS set
    found = dict(table.origin_asns(pl.Series(["198.19.0.12", "198.19.0.11", "192.0.2.1"])).iter_rows())
    assert found == {"198.19.0.12": 13335, "198.19.0.11": 64500}
    csv = tmp_path / "prefixes.csv"
    csv.write_text("prefix,asn\n198.19.0.12/32,13335\n", encoding="utf-8")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "quicack.cli", "scan", str(QSCANNER), "--out", str(out), "--prefix-to-asn", str(csv)],
        capture_output=True,
        text=True, encoding="utf-8",
    )
    assert done.returncode == 0, done.stderr
    rows = pl.read_parquet(out / "scan_connections.parquet")
    assert dict(rows.group_by("cdn").len().iter_rows()) == {"Cloudflare": 4, "Others": 8}
    assert pl.read_parquet(out / "datagrams.parquet")["run_id"].unique().sort().to_list() == [
        f"vp-a/{FIRST}",
        f"vp-a/{SECOND}",
    ]


def test_client_hello_without_server_name_has_no_sni():
    body = bytes(2 + 32) + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00" + b"\x00\x00"
    assert client_hello_sni(body) is None
    assert client_hello_sni(body[:10]) is None
