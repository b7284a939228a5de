"""Packet captures to the `datagrams`, `packets`, `frames` and `ingest_issues` tables.

    from quicack.pcap import decode_capture, write_capture_parquet
    batches = decode_capture(path, keylog, run_id, vantage)      # iterator of CaptureBatch (polars frames)
    write_capture_parquet(batches, out_dir)                       # out_dir/<table>.parquet

Modules, one job each: `reader` (pcap/pcapng, gzip/zstd, link layers, IP, UDP), `keylog` (NSS key logs),
`quic` (headers, header protection and AEAD with `cryptography`, key schedule, key phases), `tls` (handshake message names,
client random, cipher suite, transport parameters), `frames` (the frame walker), `connection` (per-connection
state and keys), `decode` (datagrams to columnar batches), `cli` (`quicack pcap`).
"""

from __future__ import annotations

# Names are imported on first use: `quicack --help` (which registers this subcommand) and
# `python -m quicack.pcap.cli --help` must not pay for polars and the decoder.
_DECODE_NAMES = ("CaptureBatch", "decode_capture")
_CLI_NAMES = ("add_subparser", "pcap_command", "write_capture_parquet")


def __getattr__(name: str):
    if name in _DECODE_NAMES:
        from . import decode

        return getattr(decode, name)
    if name in _CLI_NAMES:
        from . import cli

        return getattr(cli, name)
    raise AttributeError(name)


__all__ = [*_DECODE_NAMES, *_CLI_NAMES]
