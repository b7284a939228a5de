"""The ``rtt_samples`` table: RFC 9002 recomputed from the packets and frames tables.

For a qlog vantage (client/server) the endpoint's own sent packets and the ACK frames it
received are replayed through ``quicack.models.recovery``; nothing the implementation logged about
its estimator is used. The selection is polars; the recurrence itself is the pure
``recovery.recompute_connection``.
"""

from __future__ import annotations

import polars as pl

from quicack.layout.vantage import CLIENT, SIM_LEFT
from quicack.models import recovery
from quicack.schema import RTT_SAMPLES

ACK_FRAME_TYPES = ("ack", "ack_ecn")


KEY = ["run_id", "vantage"]


def _own_direction() -> pl.Expr:
    """The direction an endpoint (or a capture point beside it) sends in."""
    return pl.when(pl.col("vantage").is_in([CLIENT, SIM_LEFT])).then(pl.lit("c2s")).otherwise(pl.lit("s2c"))


def endpoints_inputs(
    packets: pl.DataFrame, frames: pl.DataFrame, source: str = "qlog"
) -> dict[tuple[str, str], tuple[list[recovery.SentPacket], list[recovery.AckReceived]]]:
    """Per (run, vantage) of ``source``: its sent packets and received ACK frames, as the recovery module wants
    them. One pass over each table, and only the columns needed are gathered (a filter of the whole frames table
    per endpoint cost time in proportion to endpoints x rows)."""
    sent_event, received_event = ("sent", "received") if source == "qlog" else ("captured", "captured")
    sent_rows = (
        packets.lazy()
        .filter(
            (pl.col("source") == source)
            & (pl.col("event") == sent_event)
            & (pl.col("direction") == _own_direction())
            & pl.col("packet_number").is_not_null()
        )
        .select(*KEY, "time_ms", "pn_space", "packet_number", pl.col("ack_eliciting").fill_null(True))
        .collect()
    )
    ack_rows = (
        frames.lazy()
        .filter(
            (pl.col("source") == source)
            & (pl.col("event") == received_event)
            & (pl.col("direction") != _own_direction())
            & pl.col("frame_type").is_in(ACK_FRAME_TYPES)
            & pl.col("ack_ranges").is_not_null()
        )
        .select(*KEY, "time_ms", "pn_space", "ack_ranges", pl.col("ack_delay_ms").fill_null(0.0))
        .collect()
    )
    inputs: dict[tuple[str, str], tuple[list[recovery.SentPacket], list[recovery.AckReceived]]] = {}
    for key, rows in sent_rows.partition_by(KEY, as_dict=True, include_key=False, maintain_order=True).items():
        inputs.setdefault(key, ([], []))[0].extend(recovery.SentPacket(*row) for row in rows.iter_rows())
    for key, rows in ack_rows.partition_by(KEY, as_dict=True, include_key=False, maintain_order=True).items():
        inputs.setdefault(key, ([], []))[1].extend(
            # a range whose bound did not fit 64 bits is null (reported by the reader): it acknowledges nothing we know
            recovery.AckReceived(
                time_ms, space, tuple((r["low"], r["high"]) for r in ranges if None not in (r["low"], r["high"])), delay
            )
            for time_ms, space, ranges, delay in rows.iter_rows()
        )
    return inputs


def recompute_rtt_samples(
    packets: pl.DataFrame,
    frames: pl.DataFrame,
    endpoints: pl.DataFrame,
    params: recovery.RecoveryParams = recovery.RecoveryParams(),
) -> pl.DataFrame:
    """``rtt_samples`` rows for every qlog endpoint in ``endpoints``."""
    rows: list[dict] = []
    qlog_endpoints = endpoints.filter(pl.col("source") == "qlog").unique(KEY, keep="first", maintain_order=True)
    inputs = endpoints_inputs(packets, frames) if qlog_endpoints.height else {}
    for endpoint in qlog_endpoints.iter_rows(named=True):
        # (a null run or vantage matches no row, as a filter on it would not)
        key = (endpoint["run_id"], endpoint["vantage"])
        sent, acks = inputs.get(key, ([], [])) if None not in key else ([], [])
        endpoint_params = recovery.with_max_ack_delay(params, endpoint["peer_max_ack_delay_ms"])
        samples = recovery.rtt_samples(
            sent, acks, handshake_confirmed_ms=endpoint["handshake_confirmed_ms"], params=endpoint_params
        )
        rows.extend(
            {"run_id": endpoint["run_id"], "vantage": endpoint["vantage"], "source": "qlog", **sample.__dict__}
            for sample in samples
        )
    return RTT_SAMPLES.conform(pl.DataFrame(rows, infer_schema_length=None)) if rows else RTT_SAMPLES.empty()


def no_rtt_sample_reasons(packets: pl.DataFrame, frames: pl.DataFrame, rtt_samples: pl.DataFrame) -> pl.DataFrame:
    """(run_id, vantage, no_rtt_sample_reason) of each qlog endpoint that received ACK frames but yields no RTT
    sample: why, from what its log holds (the reasons RFC 9002 §5.1's sampling needs, in the order checked)."""
    key = ["run_id", "vantage"]
    qlog_packets = packets.filter(pl.col("source") == "qlog")
    own = pl.when(pl.col("vantage").is_in([CLIENT, SIM_LEFT])).then(pl.lit("c2s")).otherwise(pl.lit("s2c"))
    acks = (
        frames.filter((pl.col("source") == "qlog") & (pl.col("event") == "received")
                      & pl.col("frame_type").is_in(ACK_FRAME_TYPES) & (pl.col("direction") != own))
        .group_by(key)
        .agg(pl.len().alias("acks"), pl.col("ack_ranges").list.len().fill_null(0).gt(0).sum().alias("with_ranges"),
             pl.col("largest_acked").drop_nulls().unique().alias("largest"))
    )
    if acks.is_empty():
        return pl.DataFrame(schema={"run_id": pl.Utf8, "vantage": pl.Utf8, "no_rtt_sample_reason": pl.Utf8})
    sent = qlog_packets.filter((pl.col("event") == "sent") & (pl.col("direction") == own))
    sent_summary = sent.group_by(key).agg(
        pl.len().alias("sent"),
        pl.col("packet_number").is_not_null().sum().alias("numbered"),
        pl.col("ack_eliciting").fill_null(True).sum().alias("eliciting"),
        (pl.col("frames_logged") & ~pl.col("ack_eliciting").fill_null(False)).sum().alias("empty_or_not_eliciting"),
        pl.col("packet_number").drop_nulls().alias("numbers"),
    )
    sampled = rtt_samples.filter(pl.col("source") == "qlog").group_by(key).agg(pl.len().alias("samples"))
    rows = acks.join(sent_summary, on=key, how="left").join(sampled, on=key, how="left").filter(
        pl.col("samples").fill_null(0) == 0)
    out = []
    for row in rows.iter_rows(named=True):
        sent_count, numbers = row["sent"] or 0, set(row["numbers"] or ())
        if not sent_count:
            reason = f"{row['acks']} ACK frames received, but the log holds no packet this endpoint sent"
        elif not row["numbered"]:
            reason = f"{row['acks']} ACK frames received, but its sent packets are logged without packet numbers"
        elif not row["with_ranges"]:
            reason = f"{row['acks']} ACK frames received, none with acknowledged ranges logged"
        elif not row["eliciting"]:
            reason = (f"{row['acks']} ACK frames received, but none of its {sent_count} sent packets is known to be "
                      "ack-eliciting (their frames lists are empty)" if row["empty_or_not_eliciting"] == sent_count
                      else f"{row['acks']} ACK frames received, but none of its {sent_count} sent packets is "
                      "ack-eliciting")
        elif not numbers & set(row["largest"] or ()):
            reason = (f"{row['acks']} ACK frames received, but none acknowledges a logged sent packet as its largest "
                      "(packets sent before the log started, or numbered otherwise)")
        else:
            reason = (f"{row['acks']} ACK frames received, but none newly acknowledges an ack-eliciting logged packet "
                      "as its largest (RFC 9002 §5.1)")
        out.append({"run_id": row["run_id"], "vantage": row["vantage"], "no_rtt_sample_reason": reason})
    return pl.DataFrame(out, schema={"run_id": pl.Utf8, "vantage": pl.Utf8, "no_rtt_sample_reason": pl.Utf8})
