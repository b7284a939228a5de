"""What the first server datagrams of each scanned connection were: instant ACK, coalesced, ServerHello first.

Pure functions on frames (no I/O). Input: per connection, the server datagrams holding an Initial ACK or a
ServerHello (`quicack.scan.scan_capture.SERVER_DATAGRAM_SCHEMA`, in capture order by ``datagram_index``) and the
client's Initial packets. Classes (``first_datagram_class``):

* ``iack``      an Initial ACK arrived in a server datagram *before* the one with the ServerHello (instant ACK);
* ``coalesced`` the first Initial ACK and the ServerHello came in the same datagram;
* ``sh_first``  the ServerHello came before any Initial ACK (or without one). The imc24 authors count these as
                IACK ("ACK and SH in different datagrams", SCAN.md point 3); here they are their own class;
* ``no_sh``     no ServerHello was captured (no answer, a Version Negotiation or Retry only, or an instant ACK
                that was never followed by a ServerHello).

ACK Delay of the first Initial ACK: decoded with exponent **3** (``first_ack_delay_exponent``), because that is
what its receiver can do: the server's ack_delay_exponent travels in EncryptedExtensions, in Handshake packets
sent after the Initial ACK, so a client (quic-go, the scanner) decodes Initial and Handshake ACK Delays with
the default 3 (RFC 9000 §18.2), and so did the imc24 authors' numbers (their exponent fill-in had no effect,
SCAN.md point 4). RFC 9000 §19.3 scales by the exponent the ACK's *sender* advertised; that reading is kept
beside it as ``first_ack_delay_advertised_ms`` (equal unless the server advertised an exponent other than 3).

RTT estimate: capture time of the first Initial ACK minus capture time of the client Initial it acknowledges
as largest (RFC 9002 §5.1 takes the largest acknowledged packet), minus its ACK Delay (exponent 3): the path
RTT as the vantage point saw it, for comparing an ACK Delay with an RTT (imc24 Fig. 10, SCAN.md point 1). A
server that waits for its certificate without counting the wait in its ACK Delay inflates it — which is the
point of that figure.
"""

from __future__ import annotations

import polars as pl

CLASSES = ("iack", "coalesced", "sh_first", "no_sh")
DEFAULT_ACK_DELAY_EXPONENT = 3

CLASSIFICATION_SCHEMA = {
    "connection": pl.Int64,
    "first_datagram_class": pl.Utf8,
    "ack_time_ms": pl.Float64,
    "sh_time_ms": pl.Float64,
    "ack_to_sh_ms": pl.Float64,
    "first_ack_delay_ms": pl.Float64,
    "first_ack_delay_exponent": pl.Int64,
    "first_ack_delay_advertised_ms": pl.Float64,
    "first_ack_largest_acked": pl.Int64,
    "first_ack_range": pl.Int64,
    "ack_datagram_bytes": pl.Int64,
    "iack_padded": pl.Boolean,
    "rtt_estimate_ms": pl.Float64,
}


def classify_connections(
    connections: pl.DataFrame,
    server_datagrams: pl.DataFrame,
    client_initials: pl.DataFrame,
    decoder_exponents: pl.DataFrame,
) -> pl.DataFrame:
    """One row per connection of ``connections`` (columns ``connection``, ``first_time_abs_ns``,
    ``server_ack_delay_exponent``) with the columns of CLASSIFICATION_SCHEMA.

    ``decoder_exponents`` (``connection``, ``decoder_exponent``) says which exponent the capture decoder used
    for each connection's first ACK, so that the raw field can be recovered from its ``ack_delay_ms``."""
    ordered = server_datagrams.sort("connection", "datagram_index")
    first_ack = (
        ordered.filter(pl.col("has_initial_ack"))
        .group_by("connection", maintain_order=True)
        .first()
        .select(
            "connection",
            ack_index="datagram_index",
            ack_abs_ns="time_abs_ns",
            ack_delay_decoded_ms="ack_delay_ms",
            first_ack_largest_acked="largest_acked",
            first_ack_range="first_ack_range",
            ack_datagram_bytes="udp_payload_bytes",
            ack_padded="padded",
        )
    )
    first_sh = (
        ordered.filter(pl.col("has_server_hello"))
        .group_by("connection", maintain_order=True)
        .first()
        .select("connection", sh_index="datagram_index", sh_abs_ns="time_abs_ns")
    )
    acknowledged = client_initials.group_by("connection", "packet_number").agg(acked_abs_ns=pl.col("time_abs_ns").min())
    ack, sh = pl.col("ack_index"), pl.col("sh_index")
    kind = (
        pl.when(sh.is_null())
        .then(pl.lit("no_sh"))
        .when(ack.is_not_null() & (ack < sh))
        .then(pl.lit("iack"))
        .when(ack == sh)
        .then(pl.lit("coalesced"))
        .otherwise(pl.lit("sh_first"))
    )
    raw_us = pl.col("ack_delay_decoded_ms") * 1000.0 / (2.0 ** pl.col("decoder_exponent"))
    origin = pl.col("first_time_abs_ns")
    return (
        connections.select("connection", "first_time_abs_ns", "server_ack_delay_exponent")
        .join(first_ack, on="connection", how="left")
        .join(first_sh, on="connection", how="left")
        .join(decoder_exponents, on="connection", how="left")
        .join(
            acknowledged,
            left_on=["connection", "first_ack_largest_acked"],
            right_on=["connection", "packet_number"],
            how="left",
        )
        .with_columns(
            first_datagram_class=kind,
            first_ack_delay_ms=raw_us * 2.0**DEFAULT_ACK_DELAY_EXPONENT / 1000.0,
            first_ack_delay_advertised_ms=raw_us
            * (2.0 ** pl.col("server_ack_delay_exponent").fill_null(DEFAULT_ACK_DELAY_EXPONENT))
            / 1000.0,
        )
        .select(
            "connection",
            "first_datagram_class",
            ack_time_ms=(pl.col("ack_abs_ns") - origin) / 1e6,
            sh_time_ms=(pl.col("sh_abs_ns") - origin) / 1e6,
            # Signed: negative when the ServerHello came first (the authors' max − min would be positive).
            ack_to_sh_ms=(pl.col("sh_abs_ns") - pl.col("ack_abs_ns")) / 1e6,
            first_ack_delay_ms="first_ack_delay_ms",
            first_ack_delay_exponent=pl.when(pl.col("first_ack_delay_ms").is_not_null()).then(
                pl.lit(DEFAULT_ACK_DELAY_EXPONENT, pl.Int64)
            ),
            first_ack_delay_advertised_ms="first_ack_delay_advertised_ms",
            first_ack_largest_acked="first_ack_largest_acked",
            first_ack_range="first_ack_range",
            ack_datagram_bytes="ack_datagram_bytes",
            iack_padded=pl.when(pl.col("first_datagram_class") == "iack").then(pl.col("ack_padded")),
            rtt_estimate_ms=(pl.col("ack_abs_ns") - pl.col("acked_abs_ns")) / 1e6 - pl.col("first_ack_delay_ms"),
        )
        .cast(CLASSIFICATION_SCHEMA)  # type: ignore[arg-type]  # cast()'s Mapping keys: str | Selector | dtype
    )


def decoder_exponents(
    ack_batches: pl.DataFrame, encrypted_extensions: pl.DataFrame, server_exponents: pl.DataFrame
) -> pl.DataFrame:
    """The exponent the capture decoder applied to each connection's first Initial ACK: the server's advertised
    one if the decoder had read the server's EncryptedExtensions by the batch holding that ACK, else 3.

    ``ack_batches``: connection, batch (of the first ACK); ``encrypted_extensions``: connection, batch (first seen);
    ``server_exponents``: connection, server_ack_delay_exponent (null: unknown — then the ACK Delay stays unknown
    when the decoder did read the server's parameters)."""
    # contract v2: a raw ack_delay column (or the exponent used) in frames would make this unnecessary.
    return (
        ack_batches.join(encrypted_extensions.rename({"batch": "ee_batch"}), on="connection", how="left")
        .join(server_exponents, on="connection", how="left")
        .select(
            "connection",
            decoder_exponent=pl.when(pl.col("ee_batch").is_null() | (pl.col("ee_batch") > pl.col("batch")))
            .then(pl.lit(DEFAULT_ACK_DELAY_EXPONENT, pl.Int64))
            .otherwise(pl.col("server_ack_delay_exponent")),
        )
    )
