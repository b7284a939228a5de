"""QScanner's CSV files and the scanner input (`targets`), zstd or plain, with their headers checked.

Every reader returns the rows it could read and issue rows for what it could not: a file whose header is not
the one QScanner writes is skipped as a whole (an ``error`` issue naming the expected header), because its
columns cannot be trusted by position or by name; a row whose field count is not the header's is skipped alone
(a ``warning`` naming its line; a last line without its line end is one the scanner was still writing); a file
with no rows says so; a value that does not parse becomes null (one ``warning`` per column); rows repeated in
QScanner's per-target files are read once and counted. Columns are read as text and cast here, so a malformed
value never stops a file.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from quicack.pcap.capture_file import open_capture
from quicack.reading.issues import issue_row, issues_frame

STAGE = "scan"

# QScanner v0.27 (tumi8/QScanner) as the imc24 authors ran it; the order is part of the format.
CONNECTION_INFO_COLUMNS = (
    "targetid", "address", "port", "hostname", "scid", "dcid", "hasRetry", "startTime", "handshakeTime",
    "closeTime", "handshakeDuration", "connectionDuration", "quicVersion", "errorMessage",
)  # fmt: skip
HTTP_HEADER_COLUMNS = ("targetid", "address", "port", "hostname", "Header", "Value")
# quic_shared_config.csv lists the transport parameters QScanner knows, which depends on its version: only the
# leading key columns and the ones read here are required.
SHARED_CONFIG_KEY_COLUMNS = ("targetid", "address", "port", "hostname")
SHARED_CONFIG_READ_COLUMNS = ("ack_delay_exponent", "max_ack_delay")
# The scanner input: QScanner reads ip, hostname, port, scid (and an optional dcid) by position; the authors'
# files have this header row.
TARGETS_COLUMNS = ("ip", "sni", "port", "scid")
# truth.csv of an emulated scan (quicack.testbed.scan_truth.TRUTH_COLUMNS; the analysis does not import the testbed).
TRUTH_KEY_COLUMNS = ("vantage_point", "measurement", "timestamp", "emulated_time")


@dataclass
class Issues:
    """Issue rows of one measurement, in the ingest_issues contract."""

    run_id: str
    rows: list[dict[str, str | None]] = field(default_factory=list)

    def add(self, path: Path | str, severity: str, message: str) -> None:
        self.rows.append(issue_row(str(path), self.run_id, STAGE, severity, message))

    def frame(self) -> pl.DataFrame:
        return issues_frame(self.rows)


def read_text_bytes(path: Path) -> bytes:
    """A file's bytes, zstd or gzip decompressed by its magic number (as the capture reader opens captures)."""
    with open_capture(path) as stream:
        return stream.read()


def _read_csv(path: Path, issues: Issues, has_header: bool = True) -> pl.DataFrame | None:
    try:
        data = read_text_bytes(path)
    except Exception as error:  # noqa: BLE001 - OSError, EOFError, zstandard.ZstdError: one bad file, not the scan
        issues.add(path, "error", f"cannot read ({type(error).__name__}: {error}); file skipped")
        return None
    if not data.strip():
        issues.add(path, "warning", f"empty file ({len(data)} bytes{', whitespace only' if data else ''}): no rows")
        return pl.DataFrame()
    data = _without_ragged_rows(data, path, issues)
    try:
        return pl.read_csv(io.BytesIO(data), has_header=has_header, infer_schema=False, quote_char='"')
    except pl.exceptions.PolarsError as error:
        issues.add(path, "error", f"not a readable CSV ({error}); file skipped")
        return None


# At most this many line numbers are named in one issue message.
MAX_NAMED_LINES = 10
# The field count of a record the csv module cannot read (a quote in the wrong place, or never closed).
NOT_CSV = -1


def _without_ragged_rows(data: bytes, path: Path, issues: Issues) -> bytes:
    """``data`` without the rows whose field count is not the first line's, each kind of them one warning naming
    their lines. A last line without its line end that is short or long is a row the scanner was still writing
    when the file was cut (Go's csv.Writer, QScanner's, ends every row with one); it would read as data with its
    last field cut (144 -> 14) and the fields after it null."""
    text = data.decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    records = _records(text, lines)
    expected = records["fields"][0]
    ragged = records.filter(pl.col("fields") != expected)
    if ragged.is_empty():
        return data
    last = ragged.row(-1, named=True)
    cut = lines[-1] != "" and last["first"] + last["lines"] == len(lines)  # the last line, without a line end
    if cut:
        issues.add(
            path,
            "warning",
            f"last line (line {last['first'] + 1}) cut while being written: no line end and "
            f"{_fields(last['fields'])} where the header has {expected}; row dropped",
        )
    skipped = ragged.head(-1) if cut else ragged
    for kind, rows in (
        (f"with more fields than the header's {expected}", skipped.filter(pl.col("fields") > expected)),
        (f"with fewer fields than the header's {expected}", skipped.filter(pl.col("fields").is_between(0, expected))),
        ("that are not CSV", skipped.filter(pl.col("fields") == NOT_CSV)),
    ):
        if not rows.is_empty():
            named = ", ".join(
                f"{first + 1} ({_fields(count)})"
                for first, count in rows.head(MAX_NAMED_LINES).select("first", "fields").iter_rows()
            )
            more = ", ..." if rows.height > MAX_NAMED_LINES else ""
            issues.add(path, "warning", f"{rows.height} row(s) {kind} skipped: line {named}{more}")
    dropped = ragged.select(line=pl.int_ranges("first", pl.col("first") + pl.col("lines"))).explode("line")["line"]
    kept = pl.Series(lines, dtype=pl.Utf8).filter(~pl.int_range(len(lines), eager=True).is_in(dropped.implode()))
    return "\n".join(kept).encode("utf-8", "surrogateescape")


def _fields(count: int) -> str:
    return "a quote in the wrong place or never closed" if count == NOT_CSV else f"{count} fields"


def _records(text: str, lines: list[str]) -> pl.DataFrame:
    """``first`` line (0-based), ``lines`` and ``fields`` of each CSV record of ``text`` split into ``lines``
    (blank lines are none). Without a quote in the file a record is a line and its fields are its commas plus one;
    a quoted field may hold commas and line ends, so then Python's csv reader counts."""
    if '"' not in text:
        line = pl.Series("line", lines, dtype=pl.Utf8)
        return (
            pl.DataFrame(line)
            .with_row_index("first")
            .filter(pl.col("line").str.strip_chars() != "")
            .select(
                pl.col("first").cast(pl.Int64),
                lines=pl.lit(1, pl.Int64),
                fields=pl.col("line").str.count_matches(",", literal=True).cast(pl.Int64) + 1,
            )
        )
    spans: dict[str, list[int]] = {"first": [], "lines": [], "fields": []}

    def add(first: int, count: int, fields: int) -> None:
        for name, value in zip(spans, (first, count, fields), strict=True):
            spans[name].append(value)

    start = 0  # reading (re)starts at this line
    while start < len(lines):
        reader = csv.reader((line + "\n" for line in itertools.islice(lines, start, None)), strict=True)
        before = 0  # lines read before the record being read
        try:
            for record in reader:
                if record:  # [] is a blank line
                    add(start + before, reader.line_num - before, len(record))
                before = reader.line_num
            break
        except csv.Error:
            # A quote in the wrong place, or one never closed (which would take every line after it): the line
            # where the record starts is not a row; reading goes on at the next.
            add(start + before, 1, NOT_CSV)
            start += before + 1
    return pl.DataFrame(spans, schema={"first": pl.Int64, "lines": pl.Int64, "fields": pl.Int64})


def _check_header(frame: pl.DataFrame, path: Path, expected: tuple[str, ...], issues: Issues, exact: bool) -> bool:
    columns = tuple(frame.columns)
    if not columns:  # an empty file: nothing to check, nothing to read
        return True
    ok = columns == expected if exact else columns[: len(expected)] == expected
    if not ok:
        issues.add(
            path, "error", f"{_header_mismatch(columns, expected)}; expected {','.join(expected)!r}; file skipped"
        )
    return ok


def _header_mismatch(columns: tuple[str, ...], expected: tuple[str, ...]) -> str:
    """How a first line differs from the expected header, in the expected names only: the line itself is not
    repeated (a rejected file may be anything, a link to a secret)."""
    missing = [name for name in expected if name not in columns]
    if missing:
        return f"unexpected header: no column {', '.join(missing)} (content not shown)"
    return "unexpected header: the expected columns in another order or with others between them"


def _has_rows(frame: pl.DataFrame, path: Path, issues: Issues) -> bool:
    """Whether a file read with its header has rows; a header alone is reported (an empty file is, when read)."""
    if frame.columns and frame.is_empty():
        issues.add(path, "warning", "header only: no rows")
    return not frame.is_empty()


def _once_per_target(frame: pl.DataFrame, path: Path, issues: Issues) -> pl.DataFrame:
    """The rows of a file QScanner writes one row per target into, each target once: rows identical to an earlier
    one are dropped and counted (a scan written twice into one folder), and of rows that differ for one targetid the
    first is kept and the targets named (a join by targetid would make each of them several connections)."""
    unique = frame.unique(maintain_order=True)
    if unique.height < frame.height:
        issues.add(
            path, "warning", f"{frame.height - unique.height} duplicate row(s) (identical to an earlier row) dropped"
        )
    conflicting = unique.filter(pl.col("targetid").is_not_null() & pl.col("targetid").is_duplicated())[
        "targetid"
    ].unique(maintain_order=True)
    if conflicting.is_empty():
        return unique
    named = ", ".join(map(str, conflicting.head(MAX_NAMED_LINES).to_list())) + (
        ", ..." if conflicting.len() > MAX_NAMED_LINES else ""
    )
    issues.add(
        path,
        "warning",
        f"{conflicting.len()} target(s) with rows that differ: targetid {named}; the first row of each kept",
    )
    first = pl.col("targetid").is_null() | pl.col("targetid").is_first_distinct()
    return unique.filter(first)


def _cast(
    frame: pl.DataFrame, types: Mapping[str, pl.DataType | type[pl.DataType]], path: Path, issues: Issues
) -> pl.DataFrame:
    """Cast text columns; values that do not parse become null, one warning per column saying how many."""
    cast = frame.with_columns(pl.col(name).str.strip_chars().cast(dtype, strict=False) for name, dtype in types.items())
    for name in types:
        lost = cast.select(
            (pl.col(name).is_null() & frame[name].is_not_null() & (frame[name].str.strip_chars() != "")).sum()
        ).item()
        if lost:
            issues.add(path, "warning", f"column {name}: {lost} value(s) not understood; recorded as null")
    return cast


def read_connection_info(path: Path, issues: Issues) -> pl.DataFrame | None:
    """quic_connection_info.csv: one row per connection QScanner attempted (times Unix seconds, durations ms)."""
    frame = _read_csv(path, issues)
    if frame is None or not _check_header(frame, path, CONNECTION_INFO_COLUMNS, issues, exact=True):
        return None
    if not _has_rows(frame, path, issues):
        return None
    frame = _cast(
        frame,
        {
            "targetid": pl.Int64,
            "port": pl.Int64,
            "startTime": pl.Int64,
            "handshakeTime": pl.Int64,
            "handshakeDuration": pl.Float64,
        },
        path,
        issues,
    )
    frame = _once_per_target(frame, path, issues)
    error = pl.col("errorMessage").fill_null("").str.strip_chars()
    return frame.select(
        target_id=pl.col("targetid"),
        scid=pl.col("scid").str.to_lowercase(),
        info_address=pl.col("address"),
        info_port=pl.col("port"),
        info_hostname=pl.col("hostname"),
        # QScanner writes a handshake time only after the TLS handshake completed, and an error message
        # whenever the connection or the HTTP request failed.
        success=(pl.col("handshakeTime").fill_null(0) > 0) & (error == ""),
        error_message=pl.when(error != "").then(error),
        handshake_duration_ms=pl.col("handshakeDuration"),
        had_retry=pl.col("hasRetry").str.to_lowercase() == "true",
    )


def read_shared_config(path: Path, issues: Issues) -> pl.DataFrame | None:
    """quic_shared_config.csv: the server's transport parameters, of which the ACK ones are kept."""
    frame = _read_csv(path, issues)
    if frame is None or not _check_header(frame, path, SHARED_CONFIG_KEY_COLUMNS, issues, exact=False):
        return None
    missing = [name for name in SHARED_CONFIG_READ_COLUMNS if name not in frame.columns]
    if missing:
        issues.add(path, "error", f"no column {', '.join(missing)}; file skipped")
        return None
    if not _has_rows(frame, path, issues):
        return None
    frame = _cast(
        frame, {"targetid": pl.Int64, "ack_delay_exponent": pl.Int64, "max_ack_delay": pl.Float64}, path, issues
    )
    return _once_per_target(frame, path, issues).select(
        target_id=pl.col("targetid"),
        server_ack_delay_exponent=pl.col("ack_delay_exponent"),
        server_max_ack_delay_ms=pl.col("max_ack_delay"),
    )


def read_http_headers(path: Path, issues: Issues) -> pl.DataFrame | None:
    """http_header.csv → the Cf-Ray header per target: its value and the PoP (IATA code after the last '-')."""
    frame = _read_csv(path, issues)
    if frame is None or not _check_header(frame, path, HTTP_HEADER_COLUMNS, issues, exact=True):
        return None
    if not _has_rows(frame, path, issues):
        return None
    frame = _cast(frame, {"targetid": pl.Int64}, path, issues)
    # Values are written as Go prints a []string: {v1 v2} (one value per header here); names are Go-canonical.
    value = pl.col("Value").str.strip_chars().str.strip_prefix("{").str.strip_suffix("}")
    ray = frame.filter(pl.col("Header").str.to_lowercase() == "cf-ray").select(
        target_id=pl.col("targetid"), cf_ray=value
    )
    pop = pl.col("cf_ray").str.extract(r"-([A-Za-z]{3})$", 1).str.to_uppercase()
    return ray.unique("target_id", keep="first", maintain_order=True).with_columns(cf_ray_pop=pop)


def read_targets(path: Path, issues: Issues) -> pl.DataFrame | None:
    """The scanner input: one row per target, numbered from 0 in file order as QScanner numbers `targetid`."""
    frame = _read_csv(path, issues)
    if frame is None:
        return None
    columns = tuple(frame.columns)
    if columns and columns[:4] != TARGETS_COLUMNS:
        issues.add(
            path,
            "error",
            f"{_header_mismatch(columns[:4], TARGETS_COLUMNS)}; expected {','.join(TARGETS_COLUMNS)!r} (QScanner's "
            "input with a header row); file skipped",
        )
        return None
    if not _has_rows(frame, path, issues):
        return None
    frame = _cast(frame, {"port": pl.Int64}, path, issues)
    return frame.select(
        target_id=pl.int_range(pl.len(), dtype=pl.Int64),
        scid=pl.col("scid").str.strip_chars().str.to_lowercase(),
        target_sni=pl.col("sni").str.strip_chars(),
        target_address=pl.col("ip").str.strip_chars(),
        target_port=pl.col("port"),
    )


def read_truth(path: Path, issues: Issues) -> pl.DataFrame | None:
    """truth.csv of an emulated scan: what each target was configured to do (contract table scan_truth)."""
    frame = _read_csv(path, issues)
    if frame is None or not _check_header(frame, path, TRUTH_KEY_COLUMNS, issues, exact=False):
        return None
    if not _has_rows(frame, path, issues):
        return None
    types = {
        "targetid": pl.Int64,
        "asn": pl.Int64,
        "path_rtt_ms": pl.Float64,
        "store_rtt_ms": pl.Float64,
        "store_delay_ms": pl.Float64,
    }
    missing = [
        name
        for name in [*types, "sni", "site", "server_kind", "cdn", "padded", "cache_state", "expected_class"]
        if name not in frame.columns
    ]
    if missing:
        issues.add(path, "error", f"no column {', '.join(missing)}; file skipped")
        return None
    frame = _cast(frame, types, path, issues)
    flag = {"true": True, "false": False}
    return frame.select(
        target_id=pl.col("targetid"),
        measurement_kind=pl.col("measurement"),
        emulated_time=pl.col("emulated_time"),
        sni=pl.col("sni"),
        site=pl.col("site"),
        server_kind=pl.col("server_kind"),
        cdn=pl.col("cdn"),
        asn=pl.col("asn"),
        pop_iata=pl.col("pop_iata").replace("", None) if "pop_iata" in frame.columns else pl.lit(None, pl.Utf8),
        path_rtt_ms=pl.col("path_rtt_ms"),
        store_rtt_ms=pl.col("store_rtt_ms"),
        store_delay_ms=pl.col("store_delay_ms"),
        padded=pl.col("padded").str.to_lowercase().replace_strict(flag, default=None, return_dtype=pl.Boolean),
        cache_state=pl.col("cache_state"),
        warmed_by_load=pl.col("warmed_by_load")
        .str.to_lowercase()
        .replace_strict(flag, default=None, return_dtype=pl.Boolean)
        if "warmed_by_load" in frame.columns
        else pl.lit(None, pl.Boolean),
        expected_class=pl.col("expected_class"),
    )
