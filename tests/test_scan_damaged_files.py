"""QScanner files damaged after the scan wrote them: each is the real quic_connection_info.csv of
tests/data/qscanner (recorded with QScanner) modified here as the test's name says. Nothing damaged is read as data
and nothing is dropped without an ingest_issues row."""

from __future__ import annotations

import polars as pl
import zstandard

from tests.test_scan_reading import FIRST, QSCANNER, copy_measurement, read_all, zstd_text

INFO = "quic_connection_info.csv.zst"


def info_text() -> str:
    return zstandard.ZstdDecompressor().decompress((QSCANNER / "vp-a" / "data" / FIRST / INFO).read_bytes()).decode()


def read_with_info(tmp_path, data: bytes) -> tuple[pl.DataFrame, pl.DataFrame]:
    folder = copy_measurement(tmp_path)
    (folder / INFO).write_bytes(zstandard.ZstdCompressor().compress(data))
    rows, issues = read_all(tmp_path / "root")
    return rows, issues.filter(pl.col("path").str.ends_with(INFO))


def test_recorded_connection_info_reads_whole():
    """The unmodified file: the reference the damaged copies are compared with."""
    rows, issues = read_all(QSCANNER / "vp-a" / "data" / FIRST)
    assert issues.is_empty()
    assert rows.height == 6 and rows["success"].to_list() == [True] * 6
    assert rows.filter(pl.col("target_id") == 4)["handshake_duration_ms"].to_list() == [52.0]


def test_connection_info_duplicated_rows(tmp_path):
    """Every row written twice (a scan restarted into the same folder): six connections, not twelve."""
    header, *body = info_text().splitlines(keepends=True)
    rows, issues = read_with_info(tmp_path, "".join([header, *body, *body]).encode())
    assert rows.height == 6 and rows["target_id"].n_unique() == 6 and rows["success"].to_list() == [True] * 6
    [problem] = issues.rows(named=True)
    assert problem["severity"] == "warning" and "6 duplicate row(s)" in problem["message"]


def test_connection_info_conflicting_rows_for_one_target(tmp_path):
    """Target 2's row again with another handshake duration: one connection, the first row, and the conflict named."""
    text = info_text()
    second = next(line for line in text.splitlines() if line.startswith("2,"))
    rows, issues = read_with_info(tmp_path, (text + second.replace(",24,51,", ",99,51,") + "\n").encode())
    assert rows.height == 6
    assert rows.filter(pl.col("target_id") == 2)["handshake_duration_ms"].to_list() == [24.0]
    [problem] = issues.rows(named=True)
    assert "targetid 2" in problem["message"] and "differ" in problem["message"]


def test_connection_info_emptied_to_0_bytes(tmp_path):
    rows, issues = read_with_info(tmp_path, b"")
    assert rows.height == 6 and rows["success"].is_null().all()
    [problem] = issues.rows(named=True)
    assert problem["severity"] == "warning" and "empty file (0 bytes)" in problem["message"]


def test_connection_info_cut_to_its_header(tmp_path):
    rows, issues = read_with_info(tmp_path, info_text().splitlines(keepends=True)[0].encode())
    assert rows.height == 6 and rows["success"].is_null().all()
    [problem] = issues.rows(named=True)
    assert problem["severity"] == "warning" and "header only" in problem["message"]


def test_connection_info_cut_last_line(tmp_path):
    """The file cut while QScanner was writing its last row, inside handshakeDuration (52 -> 5): that row is not
    data; the five before it are."""
    text = info_text()
    cut = text.rindex(",52,78,") + 2
    rows, issues = read_with_info(tmp_path, text[:cut].encode())
    assert rows.height == 6
    assert rows.filter(pl.col("target_id") == 4).row(0, named=True)["handshake_duration_ms"] is None
    assert rows.filter(pl.col("target_id") != 4)["success"].to_list() == [True] * 5
    [problem] = issues.rows(named=True)
    assert problem["severity"] == "warning"
    assert "line 7" in problem["message"] and "cut while being written" in problem["message"]


def test_connection_info_row_with_an_extra_field(tmp_path):
    """One row with a 15th field (hand-edited): that row is skipped and named, the other five are read."""
    lines = info_text().splitlines(keepends=True)
    lines[2] = lines[2].rstrip("\n") + ",extra\n"
    rows, issues = read_with_info(tmp_path, "".join(lines).encode())
    target = int(lines[2].split(",")[0])
    assert rows.filter(pl.col("target_id") == target)["success"].to_list() == [None]
    assert rows.filter(pl.col("target_id") != target)["success"].to_list() == [True] * 5
    [problem] = issues.rows(named=True)
    assert problem["severity"] == "warning" and "line 3 (15 fields)" in problem["message"]


def test_connection_info_quoted_error_message_with_a_comma_is_one_field(tmp_path):
    """QScanner (Go's csv.Writer) quotes an error message holding a comma: not an extra field."""
    lines = info_text().splitlines(keepends=True)
    lines[1] = lines[1].rstrip("\n")[:-1] + ',"timeout: no recent network activity, closed"\n'
    rows, issues = read_with_info(tmp_path, "".join(lines).encode())
    assert issues.is_empty(), issues
    assert rows["error_message"].drop_nulls().to_list() == ["timeout: no recent network activity, closed"]


def test_shared_config_duplicated_rows(tmp_path):
    """quic_shared_config.csv with every row twice: counted, not silent."""
    folder = copy_measurement(tmp_path)
    path = folder / "quic_shared_config.csv.zst"
    header, *body = zstandard.ZstdDecompressor().decompress(path.read_bytes()).decode().splitlines(keepends=True)
    path.write_bytes(zstd_text("".join([header, *body, *body])))
    rows, issues = read_all(tmp_path / "root")
    assert rows.height == 6 and rows["server_ack_delay_exponent"].is_not_null().all()
    [problem] = issues.filter(pl.col("path").str.ends_with("quic_shared_config.csv.zst")).rows(named=True)
    assert f"{len(body)} duplicate row(s)" in problem["message"]


def test_connection_info_row_with_an_unclosed_quote_and_a_short_row(tmp_path):
    """Two rows damaged in the middle (hand-edited): a quote opened and never closed, a row missing its last fields;
    each is skipped and named, the rest read."""
    lines = info_text().splitlines(keepends=True)
    lines[2] = lines[2].rstrip("\n")[:-1] + ',"timeout\n'
    lines[4] = ",".join(lines[4].split(",")[:12]) + "\n"
    rows, issues = read_with_info(tmp_path, "".join(lines).encode())
    damaged = [int(lines[2].split(",")[0]), int(lines[4].split(",")[0])]
    assert rows.filter(pl.col("target_id").is_in(damaged))["success"].to_list() == [None, None]
    assert rows.filter(~pl.col("target_id").is_in(damaged))["success"].to_list() == [True] * 4
    assert sorted(issues["message"].to_list()) == [
        "1 row(s) that are not CSV skipped: line 3 (a quote in the wrong place or never closed)",
        "1 row(s) with fewer fields than the header's 14 skipped: line 5 (12 fields)",
    ]


def test_scan_part_issues_are_the_same_wherever_the_scan_folder_sits(tmp_path):
    """The pipeline's scan stage (``quicack scan-part``) on the recorded measurement cut to its header, copied to two
    places (one with a space and a non-ASCII letter in its path): the ingest_issues rows are identical and name the
    file relative to the scan folder. Before, they named its absolute path."""
    import subprocess

    from quicack.layout.scan_folders import scan_parts

    written = []
    for place in ("here", "dossier é x"):
        folder = copy_measurement(tmp_path / place)
        (folder / INFO).write_bytes(
            zstandard.ZstdCompressor().compress(info_text().splitlines(keepends=True)[0].encode())
        )
        root = tmp_path / place / "root"
        [part] = scan_parts(root)
        out = tmp_path / place / "parquet"
        done = subprocess.run(["quicack", "scan-part", "--root", str(root), "--part", part, "--parquet", str(out)],
                              capture_output=True, text=True, encoding="utf-8", timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr
        written.append(pl.read_parquet(out / "ingest_issues" / "*.parquet").sort("path", "message"))
    assert written[0].height > 0 and written[0].equals(written[1])
    assert not written[0]["path"].str.starts_with("/").any()
    assert not written[0]["message"].str.contains(str(tmp_path), literal=True).any()
