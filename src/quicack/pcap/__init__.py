"""Packet captures to the `datagrams`, `packets`, `frames` and `ingest_issues` tables.

    from quicack.pcap import decode_capture, write_capture_parquet
    batches = decode_capture(path, keylog, run_id, vantage)      # iterator of CaptureBatch (polars frames)
    write_capture_parquet(batches, out_dir)                       # out_dir/<table>.parquet

Modules, one job each: `reader` (pcap/pcapng, gzip/zstd, link layers, IP, UDP), `keylog` (NSS key logs),
`quic` (headers, header protection and AEAD through aioquic, key phases), `tls` (handshake message names,
client random, cipher suite, transport parameters), `frames` (the frame walker), `connection` (per-connection
state and keys), `decode` (datagrams to columnar batches), `cli` (`quicack pcap`).
"""

from __future__ import annotations

from .decode import CaptureBatch, decode_capture, vantage_from_path

_CLI_NAMES = ("add_subparser", "pcap_command", "write_capture_parquet")


def __getattr__(name: str):
    # The CLI module is imported on first use, so that `python -m quicack.pcap.cli` does not import it twice.
    if name in _CLI_NAMES:
        from . import cli

        return getattr(cli, name)
    raise AttributeError(name)


__all__ = ["CaptureBatch", "decode_capture", "vantage_from_path", *_CLI_NAMES]
