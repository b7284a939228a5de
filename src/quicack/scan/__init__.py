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

from typing import TYPE_CHECKING

from quicack.lazy_names import lazy_names

# Imported on first use (quicack.lazy_names): `quicack scan --help` does not pay for polars and the decoder.
_MODULES = {"measurement": ("MeasurementTables", "read_measurement")}
__getattr__ = lazy_names(__name__, _MODULES)

if TYPE_CHECKING:  # the same names for the type checker (quicack.jobs.code_graph does not follow these imports)
    from quicack.scan.measurement import MeasurementTables as MeasurementTables
    from quicack.scan.measurement import read_measurement as read_measurement

__all__ = [name for names in _MODULES.values() for name in names]
