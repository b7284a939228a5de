"""Detect a qlog file's dialect from its first KiB, as qvis does.

qvis decides how to parse a file from the header fields `qlog_format`, `qlog_version` and (for the final
qlog drafts) `file_schema` / `serialization_format`. We do the same, and additionally name the implementation
(aioquic, quic-go, ngtcp2, ...) because units and quirks differ per implementation, not per qlog version.
Only the first KiB is read so that detection of a multi-GB file costs nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from quicack.reading.compressed import compression_of, open_input

HEAD_BYTES = 1024
RS = 0x1E  # JSON-SEQ record separator (RFC 7464)
# The UTF-8 byte order mark: some writers (and editors) start a text file with it; JSON readers ignore it there
# (RFC 8259 §8.1), and so do the qlog readers.
UTF8_BOM = b"\xef\xbb\xbf"

# Containers: how records are delimited in the file.
JSON_SEQ = "json-seq"
NDJSON = "ndjson"
JSON = "json"
UNKNOWN = "unknown"

_STR_FIELD = {
    name: re.compile(rb'"' + name.encode() + rb'"\s*:\s*"([^"]{0,200})"')
    for name in (
        "qlog_version",
        "qlog_format",
        "file_schema",
        "serialization_format",
        "title",
        "code_version",
        "time_units",
    )
}
_VANTAGE = re.compile(rb'"vantage_point"\s*:\s*\{([^}]{0,300})\}')
_VP_TYPE = re.compile(rb'"type"\s*:\s*"([^"]*)"')
_VP_NAME = re.compile(rb'"name"\s*:\s*"([^"]*)"')
_VP_FLOW = re.compile(rb'"flow"\s*:\s*"([^"]*)"')
_EVENT_SCHEMAS = re.compile(rb'"event_schemas"\s*:\s*\[([^\]]{0,400})\]')
_AIOQUIC_HEAD = re.compile(
    rb'\{\s*"qlog_format"\s*:\s*"JSON"\s*,\s*"qlog_version"\s*:\s*"0\.3"\s*,\s*"traces"\s*:\s*\[\s*\{\s*'
    rb'"common_fields"\s*:\s*\{\s*"ODCID"'
)

# qlog versions this reader understands. Anything else is reported as an issue but still attempted when the
# container is recognisable, because the event names are what matter and those are matched loosely.
KNOWN_VERSIONS = ("draft-00", "draft-01", "draft-02", "0.3", "0.4")
KNOWN_FILE_SCHEMAS = ("urn:ietf:params:qlog:file:sequential", "urn:ietf:params:qlog:file:contained")


@dataclass(frozen=True)
class Dialect:
    """What the header says about a qlog file.

    ``name`` is the value stored in ``endpoints.dialect``: container plus schema generation, e.g.
    ``json-0.3`` (aioquic), ``json-seq-0.3`` (ngtcp2, quic-go 0.3, go-x-net), ``ndjson-draft-02`` (old quic-go),
    ``json-draft-00`` (picoquic, mvfst), ``json-seq-main-schema`` (quic:* event names, file_schema header).
    """

    container: str  # json-seq | ndjson | json | unknown
    qlog_version: str | None  # qlog_version or file_schema from the header
    implementation: str | None  # aioquic, quic-go, ngtcp2, go-x-net, quiche, neqo, quinn, picoquic, mvfst, ...
    vantage: str | None  # vantage_point.type (any case; a network one's flow) when inside the first KiB
    compression: str | None  # gzip | zstd | xz | None
    main_schema: bool  # final-draft header (file_schema) / quic-NN event schemas
    known_version: bool

    @property
    def name(self) -> str:
        if self.main_schema:
            return f"{self.container}-main-schema"
        return f"{self.container}-{self.qlog_version or 'unknown'}"


def open_binary(path: Path) -> IO[bytes]:
    """Open ``path`` for binary reading, decompressing gzip/zstd/xz transparently (decided by magic bytes)."""
    return open_input(path)


def read_head(path: Path, n: int = HEAD_BYTES) -> tuple[bytes, str | None]:
    """First ``n`` decompressed bytes of ``path`` (after a byte order mark, if it starts with one) and the
    compression used."""
    with open(path, "rb") as raw:
        kind = compression_of(raw.read(8))
    with open_binary(path) as f:
        return f.read(n).removeprefix(UTF8_BOM), kind


def _field(head: bytes, name: str) -> str | None:
    m = _STR_FIELD[name].search(head)
    return m.group(1).decode("utf-8", "replace") if m else None


def implementation_from_text(text: bytes) -> str | None:
    """Implementation named anywhere in ``text`` (a header, a title, a vantage point name)."""
    text = text.lower()
    for needle, impl in (
        (b"aioquic", "aioquic"),
        (b"quic-go", "quic-go"),
        (b"ngtcp2", "ngtcp2"),
        (b"picoquic", "picoquic"),
        (b"mvfst", "mvfst"),
        (b"quiche", "quiche"),
        (b"neqo", "neqo"),
        (b"quinn", "quinn"),
        (b"lsquic", "lsquic"),
        (b"msquic", "msquic"),
        (b"kwik", "kwik"),
        (b'"go quic"', "go-x-net"),  # golang.org/x/net/quic names its vantage point "go quic"
        (b"pcap2qlog", "pcap2qlog"),  # a capture converted by quiclog/pcap2qlog (reader.is_converted_capture)
        (b"quicx", "quicx"),  # caozhiyi/quicX ("title":"QuicX client")
        (b"quictrace-to-qlog", "quic-trace"),  # quiclog/quictrace2qlog: a quic-trace file converted
    ):
        if needle in text:
            return impl
    return None


def _implementation(head: bytes, title: str | None, vp_name: str | None) -> str | None:
    impl = implementation_from_text(head)
    if impl:
        return impl
    # golang.org/x/net/quic writes no title and no vantage name; its header is JSON-SEQ 0.3 with
    # protocol_type ["QUIC"] and a float reference_time (ms since the epoch).
    if b'"protocol_type":["QUIC"]' in head and title is None and vp_name is None:
        return "go-x-net"
    # aioquic's QuicFileLogger writes vantage_point (with its name) after the events; its file starts with
    # {"qlog_format": "JSON", "qlog_version": "0.3", "traces": [{"common_fields": {"ODCID": ... (with or without the
    # spaces: json.dump's default separators, or compact ones as quicack's ACK-policy receiver writes it).
    if _AIOQUIC_HEAD.match(head):
        return "aioquic"
    return None


def sniff_container(head: bytes) -> str:
    stripped = head.lstrip(b" \t\r\n")
    if not stripped:
        return UNKNOWN
    if stripped[0] == RS:
        return JSON_SEQ
    if stripped[:1] != b"{":
        return UNKNOWN
    fmt = _field(head, "qlog_format")
    if fmt and fmt.upper() == "NDJSON":
        return NDJSON
    if fmt and fmt.upper() == "JSON-SEQ":
        return JSON_SEQ  # JSON-SEQ written without the leading RS: records are still one per line
    # A single JSON document holds "traces": [...]; a line-delimited file starts with a header that holds
    # "trace": {...} and ends at the first newline.
    if re.search(rb'"traces"\s*:', head):
        return JSON
    if re.search(rb'"trace"\s*:', head):
        return NDJSON
    return JSON


def detect_dialect(path: Path) -> Dialect:
    """Detect the dialect of the qlog at ``path`` from its first KiB (gzip / zstd read transparently)."""
    head, compression = read_head(Path(path))
    container = sniff_container(head)
    version = _field(head, "qlog_version")
    file_schema = _field(head, "file_schema")
    schemas = _EVENT_SCHEMAS.search(head)
    main_schema = file_schema is not None or bool(schemas and b"quic-" in schemas.group(1))
    title = _field(head, "title")
    vp_type = vp_name = vp_flow = None
    vm = _VANTAGE.search(head)
    if vm:
        t = _VP_TYPE.search(vm.group(1))
        n = _VP_NAME.search(vm.group(1))
        f = _VP_FLOW.search(vm.group(1))
        vp_type = t.group(1).decode(errors="replace").lower() if t else None
        vp_name = n.group(1).decode(errors="replace") if n else None
        vp_flow = f.group(1).decode(errors="replace").lower() if f else None
    if vp_type == "network":  # a converted capture: its flow is whose packets are 'sent' (traces.side_of_vantage_point)
        vp_type = vp_flow
    known = (version in KNOWN_VERSIONS) or (file_schema in KNOWN_FILE_SCHEMAS)
    return Dialect(
        container=container,
        qlog_version=version or file_schema,
        implementation=_implementation(head, title, vp_name),
        vantage=vp_type if vp_type in ("client", "server") else None,
        compression=compression,
        main_schema=main_schema,
        known_version=known,
    )
