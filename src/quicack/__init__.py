"""quicack: QUIC acknowledgement measurements, from raw captures and qlogs to every figure of the papers."""

__version__ = "0.1.0"
