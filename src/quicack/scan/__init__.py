"""Scanner output (QScanner in the imc24 authors' layout) to the ``scan_connections`` table.

    from quicack.scan import read_measurement
    from quicack.layout import find_measurements
    for folder in find_measurements([root]):
        tables = read_measurement(folder, prefixes)          # .scan_connections, .ingest_issues

Modules, one job each: `qscanner_files` (QScanner's CSVs and `targets`, headers checked), `identify` (which connection a
captured datagram belongs to, the ClientHello's SNI), `scan_capture` (the capture decoder's tables reduced to the
server datagrams that matter), `pcap_csv` (the authors' tshark export, when the capture is absent), `classify`
(iack / coalesced / sh_first / no_sh, ACK Delay, RTT estimate; pure), `asn` (prefix → origin AS → CDN),
`measurement` (one measurement folder → rows), `scan_command` (`quicack scan`, `quicack scan-part`). The folder
layout is `quicack.layout.scan_folders`.
"""

from __future__ import annotations


def __getattr__(name: str):
    # Imported on first use: `quicack --help` registers `scan` without paying for polars and the decoder.
    if name in ("read_measurement", "MeasurementTables"):
        from . import measurement

        return getattr(measurement, name)
    raise AttributeError(name)


__all__ = ["MeasurementTables", "read_measurement"]
