"""The identify pass (`quicack.scan.identify`) and the datagram matching (`scan_capture._Matcher`) in the compiled
core: `quicack_core.ScanIdentifier`, fed by a `PcapLane` of its own that gives it every plain UDP datagram without
handing it to Python; the datagrams the Python reader makes of the other records (IP fragments, ...) are given to
it from here. Same connections, numbers, SNIs and matches as the Python pass, which stays the twin (no core, or
QUICACK_PCAP_ENGINE=python); tests/test_scan_identify_core.py compares both on the recorded scan captures.

On the 100,000-connection bench scan the Python pass took ~30 % of `quicack scan`'s CPU (each datagram a Python
object, each ClientHello decrypted with the pure-Python keys); see bench/README.md, "Scan ingest".
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from quicack.pcap.capture_file import LinkRecord, UdpDatagram, link_to_udp
from quicack.pcap.decoder_engine import Engine, select_engine
from quicack.pcap.ip_fragments import FragmentReassembly
from quicack.pcap.lane_bridge import open_lane
from quicack.reading.limits import DEFAULT_LIMITS

from .identify import CONNECTION_SCHEMA

# Datagrams the lane gives the identifier per call, at most (how far it reads ahead of the decoder's batches).
READ_AHEAD_DATAGRAMS = 4096


class CompiledIdentify:
    """`_Matcher` and `ConnectionIdentifier` in one: `connections_of` ties the decoder's datagram rows to connections,
    `connection_frame` lists the connections; `unmatched` counts the rows tied to none."""

    def __init__(self, stream, lane, identifier, rows) -> None:
        self.stream, self.lane, self.identifier = stream, lane, identifier
        self.rows = rows  # the lane's row buffers, which stay empty: it decodes no flow here
        self.finished = False
        self.fragments = FragmentReassembly()
        self.names: dict[bytes, str] = {}

    @property
    def unmatched(self) -> int:
        return self.identifier.unmatched

    def connections_of(self, times: list[int], sizes: list[int]) -> list[int | None]:
        found: list[int | None] = []
        while True:
            found += self.identifier.match_rows(times, sizes, len(found), self.finished)
            if len(found) == len(times):
                return found
            self._read_more()

    def connection_frame(self) -> pl.DataFrame:
        columns = dict(zip(CONNECTION_SCHEMA, self.identifier.columns(), strict=True))
        return pl.DataFrame(columns, schema=CONNECTION_SCHEMA)

    def close(self) -> None:
        self.finished = True
        self.stream.close()

    def _read_more(self) -> None:
        """Read on until the identifier has more datagrams or the capture ends (as `read_udp_through_lane` reads:
        a read error ends the pass, problems are the decoder's to report)."""
        if self.finished:
            return
        try:
            _, item = self.lane.next(self.rows, READ_AHEAD_DATAGRAMS)
            if item is None or item[0] == "error":
                self.close()
            elif item[0] == "record":
                converted = link_to_udp(LinkRecord(*item[1:]), self.names, self.fragments)
                if self.fragments.issues:
                    self.fragments.take_issues()
                if type(converted) is UdpDatagram:
                    self.identifier.add(
                        converted.time_abs_ns, converted.src, converted.dst, converted.src_port, converted.dst_port,
                        converted.udp_payload_bytes, converted.payload,
                    )  # fmt: skip
        except Exception:  # noqa: BLE001 - as read_udp_through_lane: reading stops, the datagrams before are kept
            self.close()


def compiled_identify(path: Path, engine: Engine | None = None) -> CompiledIdentify | None:
    """The compiled pass over `path`, or None where the Python pass reads it (no core or one without
    ScanIdentifier, QUICACK_PCAP_ENGINE=python, or a file the lane does not open)."""
    engine = engine or select_engine()
    if engine.pcap_lane is None:
        return None
    import quicack_core

    identifier_class = getattr(quicack_core, "ScanIdentifier", None)
    if identifier_class is None:
        return None
    opened = open_lane(path, engine, DEFAULT_LIMITS)
    if opened is None:
        return None
    stream, lane = opened
    identify = CompiledIdentify(stream, lane, identifier_class(), engine.row_buffers())
    lane.identifier = identify.identifier
    return identify
