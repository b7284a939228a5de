"""Packet captures to the `datagrams`, `packets`, `frames` and `ingest_issues` tables.

    from quicack.pcap import decode_capture, write_capture_parquet
    batches = decode_capture(path, keylog, run_id, vantage)      # iterator of CaptureBatch (polars frames)
    write_capture_parquet(batches, out_dir)                       # out_dir/<table>.parquet

Modules, one job each: `capture_file` (pcap/pcapng, gzip/zstd, link layers, IP, UDP) yielding `capture_records`,
with its parts `pcapng` (pcapng blocks) and `ip_fragments` (IPv4/IPv6 fragments reassembled), `keylog` (NSS key logs),
`quic` (headers, header protection and AEAD with `cryptography`, key schedule, key phases), `tls` (handshake message
names,
client random, cipher suite, transport parameters), `frames` (the frame walker), `connection` (per-connection
state and keys), `decode` (datagrams to columnar batches) with its parts `flows` (which connection a datagram
belongs to) and `lane_bridge` (what the compiled lane decodes itself), `decoder_engine` (compiled or Python parts),
`pcap_command` (`quicack pcap`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from quicack.lazy_names import lazy_names

# Names are imported on first use (quicack.lazy_names): `python -m quicack.pcap.pcap_command --help` must not pay
# for polars and the decoder, and a job importing one of these reaches that module only.
_MODULES = {
    "decode": ("CaptureBatch", "decode_capture"),
    "pcap_command": ("write_capture_parquet",),
}
__getattr__ = lazy_names(__name__, _MODULES)

if TYPE_CHECKING:  # the same names for the type checker (quicack.jobs.code_graph does not follow these imports)
    from quicack.pcap.decode import CaptureBatch as CaptureBatch
    from quicack.pcap.decode import decode_capture as decode_capture
    from quicack.pcap.pcap_command import write_capture_parquet as write_capture_parquet

__all__ = [name for names in _MODULES.values() for name in names]
