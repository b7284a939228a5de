"""Packet captures to the `datagrams`, `packets`, `frames` and `ingest_issues` tables.

    from quicack.pcap import decode_capture, write_capture_parquet
    batches = decode_capture(path, keylog, run_id, vantage)      # iterator of CaptureBatch (polars frames)
    write_capture_parquet(batches, out_dir)                       # out_dir/<table>.parquet

Modules, one job each: `capture_file` (pcap/pcapng, gzip/zstd, link layers, IP, UDP) yielding `capture_records`,
`keylog` (NSS key logs),
`quic` (headers, header protection and AEAD with `cryptography`, key schedule, key phases), `tls` (handshake message names,
client random, cipher suite, transport parameters), `frames` (the frame walker), `connection` (per-connection
state and keys), `decode` (datagrams to columnar batches) with its parts `flows` (which connection a datagram
belongs to) and `lane_bridge` (what the compiled lane decodes itself), `decoder_engine` (compiled or Python parts),
`pcap_command` (`quicack pcap`).
"""

from __future__ import annotations

# Names are imported on first use: `quicack --help` (which registers this subcommand) and
# `python -m quicack.pcap.pcap_command --help` must not pay for polars and the decoder.
_DECODE_NAMES = ("CaptureBatch", "decode_capture")
# (`pcap_command` names the module here, not its function of that name.)
_COMMAND_NAMES = ("add_subparser", "write_capture_parquet")


def __getattr__(name: str):
    if name in _DECODE_NAMES:
        from . import decode

        return getattr(decode, name)
    if name in _COMMAND_NAMES:
        from . import pcap_command

        return getattr(pcap_command, name)
    raise AttributeError(name)


__all__ = [*_DECODE_NAMES, *_COMMAND_NAMES]
