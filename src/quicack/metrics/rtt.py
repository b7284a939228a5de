"""The ``rtt_samples`` table: RFC 9002 recomputed from the packets and frames tables.

For a qlog vantage (client/server) the endpoint's own sent packets and the ACK frames it
received are replayed through ``quicack.recovery``; nothing the implementation logged about
its estimator is used. The selection is polars; the recurrence itself is the pure
``recovery.recompute_connection``.
"""

from __future__ import annotations

import polars as pl

from quicack import recovery
from quicack.layout.vantage import CLIENT, SIM_LEFT
from quicack.schema import RTT_SAMPLES

ACK_FRAME_TYPES = ("ack", "ack_ecn")


def endpoint_inputs(
    packets: pl.DataFrame, frames: pl.DataFrame, run_id: str, vantage: str, source: str = "qlog"
) -> tuple[list[recovery.SentPacket], list[recovery.AckReceived]]:
    """Sent packets and received ACK frames of one endpoint, as the recovery module wants them."""
    sent_event, received_event = ("sent", "received") if source == "qlog" else ("captured", "captured")
    own_direction = "c2s" if vantage in (CLIENT, SIM_LEFT) else "s2c"
    key = (pl.col("run_id") == run_id) & (pl.col("vantage") == vantage) & (pl.col("source") == source)
    sent_rows = packets.filter(
        key & (pl.col("event") == sent_event) & (pl.col("direction") == own_direction) & pl.col("packet_number").is_not_null()
    ).select("time_ms", "pn_space", "packet_number", pl.col("ack_eliciting").fill_null(True))
    ack_rows = frames.filter(
        key
        & (pl.col("event") == received_event)
        & (pl.col("direction") != own_direction)
        & pl.col("frame_type").is_in(ACK_FRAME_TYPES)
        & pl.col("ack_ranges").is_not_null()
    ).select("time_ms", "pn_space", "ack_ranges", pl.col("ack_delay_ms").fill_null(0.0))
    sent = [recovery.SentPacket(*row) for row in sent_rows.iter_rows()]
    acks = [
        # a range whose bound did not fit 64 bits is null (reported by the reader): it acknowledges nothing we know
        recovery.AckReceived(
            time_ms, space, tuple((r["low"], r["high"]) for r in ranges if None not in (r["low"], r["high"])), delay
        )
        for time_ms, space, ranges, delay in ack_rows.iter_rows()
    ]
    return sent, acks


def recompute_rtt_samples(
    packets: pl.DataFrame,
    frames: pl.DataFrame,
    endpoints: pl.DataFrame,
    params: recovery.RecoveryParams = recovery.RecoveryParams(),
) -> pl.DataFrame:
    """``rtt_samples`` rows for every qlog endpoint in ``endpoints``."""
    rows: list[dict] = []
    qlog_endpoints = endpoints.filter(pl.col("source") == "qlog").unique(["run_id", "vantage"], keep="first", maintain_order=True)
    for endpoint in qlog_endpoints.iter_rows(named=True):
        sent, acks = endpoint_inputs(packets, frames, endpoint["run_id"], endpoint["vantage"])
        endpoint_params = recovery.with_max_ack_delay(params, endpoint["peer_max_ack_delay_ms"])
        samples = recovery.rtt_samples(
            sent, acks, handshake_confirmed_ms=endpoint["handshake_confirmed_ms"], params=endpoint_params
        )
        rows.extend(
            {"run_id": endpoint["run_id"], "vantage": endpoint["vantage"], "source": "qlog", **sample.__dict__}
            for sample in samples
        )
    return RTT_SAMPLES.conform(pl.DataFrame(rows, infer_schema_length=None)) if rows else RTT_SAMPLES.empty()
