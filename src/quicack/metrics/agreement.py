"""Recomputed RFC 9002 estimator beside the implementation's own logged values.

Each recomputed sample is paired, in order, with a *change* of the logged (smoothed_rtt,
rtt_variance) close to it in time (most implementations log only the fields that changed, so
fields are carried forward; see ``pair_in_order``). A sample the implementation did not take
pairs with no change or with a later one: the comparison is then conservative. A state logged before the
implementation had any sample (its initial RTT, e.g. ngtcp2's 333 ms logged with latest_rtt 0 when it sends its first
Initial) is no sample's result and is never paired (``without_pre_sample_states``).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from quicack.metrics.connections import logged_estimates, logged_pto
from quicack.schema import ESTIMATOR_AGREEMENT, RFC9002_AGREEMENT

KEY = ["run_id", "vantage"]
# A logged change more than this after the sample belongs to a later event: the sample then
# counts as not taken by the implementation (quic-go skips some, imc24 App. E).
MATCH_TOLERANCE_MS = 1.0
# quic-go logs the metrics update before the packet_received event of the ACK that caused it.
LOOK_BACK_MS = 1.0


def pair_in_order(
    sample_times: list[float], change_times: list[float], back_ms: float, forward_ms: float
) -> list[int | None]:
    """Pair each sample with the earliest not yet paired logged change within
    [sample - back_ms, sample + forward_ms], in time order.

    In order, because several samples may share one timestamp (integer-ms logs); with a
    small look-back, because some implementations log the metrics update while processing
    the ACK and the packet_received event only after it (quic-go).
    """
    pairs: list[int | None] = []
    next_change = 0
    for time in sample_times:
        while next_change < len(change_times) and change_times[next_change] < time - back_ms:
            next_change += 1
        if next_change < len(change_times) and change_times[next_change] <= time + forward_ms:
            pairs.append(next_change)
            next_change += 1
        else:
            pairs.append(None)
    return pairs


def without_pre_sample_states(metrics: pl.DataFrame) -> pl.DataFrame:
    """``metrics`` without the updates an endpoint logged before its first RTT sample that carry its initial
    estimator state: latest_rtt logged as 0 with a positive smoothed_rtt (no sample has been taken yet; a first
    sample below the clock's resolution would log smoothed_rtt 0 too). On a whole-millisecond clock such a default
    (ngtcp2: smoothed_rtt 333, rtt_variance 166 at the first Initial) lies within the pairing window of the first
    sample on a fast path, and pairing it made a 332 ms "deviation" of sample 0."""
    ordered = metrics.sort([*KEY, "time_ms"], maintain_order=True)
    sampled = pl.col("latest_rtt_ms").fill_null(0.0) > 0
    before_first_sample = (sampled.cum_sum().over(KEY) == 0)
    default_state = (pl.col("latest_rtt_ms") == 0) & (pl.col("smoothed_rtt_ms") > 0)
    return ordered.filter(~(before_first_sample & default_state).fill_null(False))


def estimator_agreement(rtt_samples: pl.DataFrame, metrics: pl.DataFrame, endpoints: pl.DataFrame) -> pl.DataFrame:
    samples = rtt_samples.filter(pl.col("source") == "qlog").sort([*KEY, "sample_index"])
    changes = (
        logged_estimates(without_pre_sample_states(metrics))
        .with_columns(pl.int_range(pl.len()).over(KEY).alias("logged_index"))
        .rename({
            "time_ms": "logged_time_ms",
            "smoothed_rtt_ms": "smoothed_rtt_logged_ms",
            "rtt_variance_ms": "rttvar_logged_ms",
            "latest_rtt_ms": "latest_rtt_logged_ms",
        })
    )
    pairs = []
    for (run_id, vantage), endpoint_samples in samples.group_by(KEY, maintain_order=True):
        change_times = changes.filter((pl.col("run_id") == run_id) & (pl.col("vantage") == vantage))[
            "logged_time_ms"
        ].to_list()
        indices = pair_in_order(endpoint_samples["time_ms"].to_list(), change_times, LOOK_BACK_MS, MATCH_TOLERANCE_MS)
        pairs.append(
            endpoint_samples.select(*KEY, "sample_index").with_columns(
                pl.Series("logged_index", indices, dtype=pl.Int64)
            )
        )
    matched = (
        pl.concat(pairs)
        if pairs
        else samples.select(*KEY, "sample_index").with_columns(pl.lit(None, pl.Int64).alias("logged_index"))
    )
    implementations = (
        endpoints.filter(pl.col("source") == "qlog").unique(KEY, keep="first").select(*KEY, "implementation")
    )
    return ESTIMATOR_AGREEMENT.conform(
        samples.join(matched, on=[*KEY, "sample_index"], how="left")
        .join(changes.drop("logged_time_ms"), on=[*KEY, "logged_index"], how="left")
        .join(implementations, on=KEY, how="left")
        .with_columns(
            (pl.col("smoothed_rtt_logged_ms") - pl.col("smoothed_rtt_ms")).alias("smoothed_delta_ms"),
            (pl.col("rttvar_logged_ms") - pl.col("rttvar_ms")).alias("rttvar_delta_ms"),
            (
                logged_pto(pl.col("smoothed_rtt_logged_ms"), pl.col("rttvar_logged_ms"))
                - logged_pto(pl.col("smoothed_rtt_ms"), pl.col("rttvar_ms"))
            ).alias("pto_delta_ms"),
        )
        .select([c.name for c in ESTIMATOR_AGREEMENT.columns])
        .sort([*KEY, "sample_index"])
    )


# The causes of the deviations beyond the logging resolution, per implementation and vantage (one home for them):
# implementation, vantage, cause, explanation, evidence.
DEVIATIONS_CSV = Path(__file__).with_name("rfc9002_deviations.csv")
WITHIN_RESOLUTION = "within logging resolution"
# How many logging resolutions a deviation may reach from truncation alone: smoothed_rtt and rttvar, one for the
# two event times of the sample and one for the logged value; the PTO adds 4 x rttvar's.
RESOLUTION_FACTOR = {"smoothed_rtt": 2.0, "rttvar": 2.0, "pto": 10.0}
DELTA_COLUMNS = {"smoothed_rtt": "smoothed_delta_ms", "rttvar": "rttvar_delta_ms", "pto": "pto_delta_ms"}
WHOLE_MS_RESOLUTION, SUB_MS_RESOLUTION = 1.0, 0.001


def deviation_explanations() -> pl.DataFrame:
    """The recorded causes (``DEVIATIONS_CSV``)."""
    text_columns = dict.fromkeys(("implementation", "vantage"), pl.Utf8)
    return pl.read_csv(DEVIATIONS_CSV, encoding="utf8", schema_overrides=text_columns)


def logging_resolution() -> pl.Expr:
    """Per group: 1 ms when every logged smoothed_rtt is a whole millisecond, else 1 µs."""
    logged = pl.col("smoothed_rtt_logged_ms").drop_nulls()
    return pl.when((logged % 1 == 0).all()).then(WHOLE_MS_RESOLUTION).otherwise(SUB_MS_RESOLUTION)


def within_resolution() -> pl.Expr:
    """Per group: every compared deviation within ``RESOLUTION_FACTOR`` logging resolutions."""
    resolution = logging_resolution()
    return pl.all_horizontal(
        (pl.col(column).abs().max().fill_null(0.0) <= RESOLUTION_FACTOR[quantity] * resolution)
        for quantity, column in DELTA_COLUMNS.items()
    )


NOT_COMPARABLE = "not_comparable"


def rfc9002_agreement(
    agreement: pl.DataFrame, endpoints: pl.DataFrame | None = None, explanations: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The ``rfc9002_agreement`` table: per implementation and vantage of ``agreement`` (estimator_agreement rows),
    the samples, the median / p99 / max absolute deviation of each quantity, the logging resolution, and the
    explanation: "within logging resolution", else the recorded causes (``DEVIATIONS_CSV``), else says none is
    recorded. With ``endpoints`` (the endpoints table), also a row for each implementation and vantage whose qlogs
    yield no sample to compare, explained by its recorded ``not_comparable`` cause."""
    explanations = deviation_explanations() if explanations is None else explanations
    cause_text = pl.concat_str(
        pl.col("cause"), pl.lit(": "), pl.col("explanation"), pl.lit(" [evidence: "), pl.col("evidence"), pl.lit("]")
    )
    causes = explanations.group_by("implementation", "vantage").agg(
        cause_text.filter(pl.col("cause") != NOT_COMPARABLE).sort().str.join("; ").alias("causes"),
        cause_text.filter(pl.col("cause") == NOT_COMPARABLE).sort().str.join("; ").alias("not_comparable"),
    )
    stats = [
        stat(pl.col(column).abs()).alias(f"{quantity}_abs_dev_{name}_ms")
        for quantity, column in DELTA_COLUMNS.items()
        for name, stat in (
            ("median", pl.Expr.median), ("p99", lambda e: e.quantile(0.99, "linear")), ("max", pl.Expr.max)
        )
    ]
    compared = (
        agreement.filter(pl.col("implementation").is_not_null())
        .group_by("implementation", "vantage")
        .agg(
            pl.struct(KEY).n_unique().alias("endpoints_with_samples"),
            pl.len().alias("samples"),
            pl.col("smoothed_rtt_logged_ms").is_not_null().sum().alias("samples_compared"),
            *stats,
            logging_resolution().alias("logging_resolution_ms"),
            within_resolution().alias("within_resolution"),
        )
    )
    recorded = (
        endpoints.filter((pl.col("source") == "qlog") & pl.col("implementation").is_not_null())
        .unique([*KEY, "implementation"])
        .group_by("implementation", "vantage")
        .agg(pl.len().alias("endpoints"))
        if endpoints is not None
        else compared.select("implementation", "vantage", pl.col("endpoints_with_samples").alias("endpoints"))
    )
    summary = (
        recorded.join(compared, on=["implementation", "vantage"], how="full", coalesce=True)
        .join(causes, on=["implementation", "vantage"], how="left")
        .with_columns(
            pl.col("endpoints").fill_null(pl.col("endpoints_with_samples")),
            pl.col("endpoints_with_samples", "samples", "samples_compared").fill_null(0),
        )
        .with_columns(
            pl.when(pl.col("samples") == 0)
            .then(pl.col("not_comparable").fill_null("no RTT sample recomputed and no cause recorded"))
            .when(pl.col("within_resolution"))
            .then(pl.lit(WITHIN_RESOLUTION))
            .otherwise(pl.col("causes").fill_null("no cause recorded for deviations beyond the logging resolution"))
            .alias("explanation")
        )
        .sort("implementation", "vantage")
    )
    return RFC9002_AGREEMENT.conform(summary.drop("causes", "not_comparable"))
