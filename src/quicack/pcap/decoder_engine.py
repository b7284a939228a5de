"""The capture decoder's hot parts: compiled (`quicack_core`, built from rust/quicack_core by install.sh) or Python.

Both write the same rows; the compiled one is used when installed. `QUICACK_PCAP_ENGINE=python` (or
`decode_capture(..., engine="python")`) forces the pure-Python parts, `=compiled` requires the compiled ones.
tests/test_pcap_engines.py decodes every capture with both and compares the tables.

    PacketKeys      packet protection of one sender and space (quic.PacketKeys / quicack_core.PacketKeys)
    RowBuffers      the rows of a batch and the frame walker (columns.RowBuffers / quicack_core.RowBuffers)
    PacketNumbers   largest packet number per direction and space (connection.PacketNumbers / quicack_core's)
    CryptoStream    a CRYPTO stream's TLS messages and handshake facts (tls.CryptoStream / quicack_core.CryptoStream)
    PcapLane        compiled only: reads a classic pcap or pcapng and decodes the datagrams of registered flows itself
    TcpRows         the TCP segments' rows (tcp.TcpRows / tcp.CompiledTcpRows, which the lane fills too)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .columns import RowBuffers
    from .connection import PacketNumbers
    from .quic import PacketKeys
    from .tcp import CompiledTcpRows, TcpRows
    from .tls import CryptoStream

ENVIRONMENT_VARIABLE = "QUICACK_PCAP_ENGINE"
ENGINES = ("compiled", "python")


@dataclass(frozen=True)
class Engine:
    # Each part typed as its Python twin: the compiled one has the same interface (tests/test_pcap_engines.py).
    name: str
    packet_keys: type[PacketKeys]
    row_buffers: type[RowBuffers]
    packet_numbers: type[PacketNumbers]
    pcap_lane: Any  # quicack_core.PcapLane (compiled only: no Python twin), or None
    crypto_stream: type[CryptoStream]
    tcp_rows: Callable[[], TcpRows | CompiledTcpRows]


def python_engine() -> Engine:
    from .columns import RowBuffers
    from .connection import PacketNumbers
    from .quic import PacketKeys
    from .tcp import TcpRows
    from .tls import CryptoStream

    return Engine("python", PacketKeys, RowBuffers, PacketNumbers, None, CryptoStream, TcpRows)


def compiled_engine() -> Engine | None:
    """The compiled parts, or None when `quicack_core` is not installed."""
    try:
        import quicack_core
    except ImportError:
        return None
    # A core built before CryptoStream moved into it still works, with the Python twin of that part.
    crypto_stream = getattr(quicack_core, "CryptoStream", None)
    if crypto_stream is None:
        from .tls import CryptoStream

        crypto_stream = CryptoStream
    from .tcp import CompiledTcpRows, TcpRows

    # likewise the TCP rows (a core before quicack_core.TcpRows: the Python ones)
    core_tcp_rows = hasattr(quicack_core, "TcpRows")
    tcp_rows: Callable[[], TcpRows | CompiledTcpRows] = CompiledTcpRows if core_tcp_rows else TcpRows
    return Engine(
        "compiled", quicack_core.PacketKeys, quicack_core.RowBuffers, quicack_core.PacketNumbers,
        quicack_core.PcapLane, crypto_stream, tcp_rows,
    )  # fmt: skip


def select_engine(name: str | None = None) -> Engine:
    """The engine named (or by QUICACK_PCAP_ENGINE), by default the compiled one when it is installed."""
    name = name or os.environ.get(ENVIRONMENT_VARIABLE) or None
    if name not in (None, *ENGINES):
        raise ValueError(f"unknown capture decoder engine {name!r} (choose from {', '.join(ENGINES)})")
    if name == "python":
        return python_engine()
    engine = compiled_engine()
    if engine is None:
        if name == "compiled":
            raise ImportError("quicack_core is not installed: run install.sh (it builds rust/quicack_core)")
        return python_engine()
    return engine
