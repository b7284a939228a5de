"""imc24 aggregates the figures call: medians and quartiles over repetitions per configuration,
with failed runs counted beside them, never silently dropped."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

CONFIGURATION = ["client_impl", "mode", "scenario", "rtt_ms"]

# Time to first byte: the client-side capture's (it exists for every client, also quinn, whose qlog has no frames),
# or the client qlog's for the runs under the paper's conditions, which keep the client's qlog alone, as imc24 analysed.
TTFB_CAPTURE = "ttfb_capture_ms"
TTFB_QLOG = "ttfb_ms"
TTFB_LABEL = {TTFB_CAPTURE: "client capture", TTFB_QLOG: "client qlog"}


def ttfb_column(handshakes: pl.DataFrame) -> str:
    """The TTFB column ``handshakes`` are compared on: the client qlog's where none of them has a capture's (the dataset
    'paper' keeps the client's qlog alone, what imc24 analysed), else the client-side capture's (the embedded
    dataset's). No runs keep the capture's column, so that what is missing is named as before."""
    none_captured = handshakes.height and handshakes[TTFB_CAPTURE].null_count() == handshakes.height
    return TTFB_QLOG if none_captured else TTFB_CAPTURE


# Handshake modes of an IACK/WFC server (the testbed's, or the imc24 artifact's quic-go); runs
# against servers without that knob have mode null and take no part in a comparison.
MODES = ("iack", "wfc")


def iack_wfc_runs(handshakes: pl.DataFrame) -> pl.DataFrame:
    """The runs that compare instant ACK with wait-for-certificate (mode 'iack' or 'wfc')."""
    return handshakes.filter(pl.col("mode").is_in(MODES))


def _held(runs: pl.DataFrame) -> pl.Expr:
    if "server_hello_hold_ms" not in runs.columns:
        return pl.lit(False)
    return pl.col("server_hello_hold_ms").fill_null(0.0) > 0.0


def stack_delay_runs(runs: pl.DataFrame, held: bool | None = None) -> pl.DataFrame:
    """The IACK/WFC ``runs`` of one server stack delay: those whose ServerHello was held to the paper's (``held``),
    those of this machine's own delay (not ``held``), or, with None, as the dataset holds them: the held runs where it
    has any, else its own (as ``selection.as_recorded`` picks a scenario's runs under the paper's conditions)."""
    if held is None:
        held = holds_paper_delay(runs)
    return runs.filter(_held(runs) if held else ~_held(runs))


def holds_paper_delay(runs: pl.DataFrame) -> bool:
    """Whether any IACK/WFC run of ``runs`` had its ServerHello held to the paper's stack delay
    (``runs.server_hello_hold_ms`` > 0): the stack delay ``stack_delay_runs`` takes when none is asked for."""
    return not iack_wfc_runs(runs).filter(_held(runs)).is_empty()


def summarize(handshakes: pl.DataFrame, metric: str, by: list[str] | None = None) -> pl.DataFrame:
    """Per configuration: median, quartiles, min/max and count of ``metric`` over ok runs, plus
    ``failed_runs`` (status != 'ok', excluded) and ``missing_runs`` (ok but metric null)."""
    by = by or CONFIGURATION
    ok = pl.col("status") == "ok"
    value = pl.col(metric).filter(ok & pl.col(metric).is_not_null())
    return (
        handshakes.group_by(by)
        .agg(
            value.median().alias("median"),
            value.quantile(0.25, "linear").alias("q25"),
            value.quantile(0.75, "linear").alias("q75"),
            value.min().alias("min"),
            value.max().alias("max"),
            value.len().cast(pl.Int64).alias("runs"),
            (~ok.fill_null(False)).sum().cast(pl.Int64).alias("failed_runs"),
            (ok & pl.col(metric).is_null()).sum().cast(pl.Int64).alias("missing_runs"),
        )
        .with_columns(pl.lit(metric).alias("metric"))
        .sort(by)
    )


def mode_difference(handshakes: pl.DataFrame, metric: str, by: Sequence[str]) -> pl.DataFrame:
    """Per ``by``: the median of ``metric`` with IACK and with WFC (ok runs), the ok runs with a
    value behind each (``iack_runs``, ``wfc_runs``) and ``wfc_minus_iack`` (positive: IACK lower;
    null when one mode is missing)."""
    keys = list(by)
    medians = summarize(iack_wfc_runs(handshakes), metric, [*keys, "mode"])
    by_mode = {
        mode: medians.filter(pl.col("mode") == mode).select(
            *keys, pl.col("median").alias(f"{mode}_median"), pl.col("runs").alias(f"{mode}_runs")
        )
        for mode in MODES
    }
    return (
        by_mode["iack"]
        .join(by_mode["wfc"], on=keys, how="full", coalesce=True)
        .with_columns(
            pl.col("iack_runs", "wfc_runs").fill_null(0),
            (pl.col("wfc_median") - pl.col("iack_median")).alias("wfc_minus_iack"),
        )
        .sort(keys)
    )


# The bootstrap's fixed seed and size: the interval is the same on every rendering of the same runs.
BOOTSTRAP_SEED = 1
BOOTSTRAP_RESAMPLES = 4000
CONFIDENCE = 0.95


def median_difference_interval(
    iack: np.ndarray,
    wfc: np.ndarray,
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of median(wfc) − median(iack): each mode's runs are resampled
    with replacement on their own (they are independent connections), ``resamples`` times. With a
    handful of runs the interval is as wide as their spread allows, never narrower."""
    rng = np.random.default_rng(seed)
    medians = {
        name: np.median(rng.choice(values, (resamples, values.size)), axis=1)
        for name, values in (("iack", iack), ("wfc", wfc))
    }
    low, high = np.quantile(medians["wfc"] - medians["iack"], [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


def mode_difference_interval(
    handshakes: pl.DataFrame, metric: str, by: Sequence[str], confidence: float = CONFIDENCE
) -> pl.DataFrame:
    """``mode_difference`` plus the run-to-run spread of ``wfc_minus_iack``: its ``confidence``
    percentile-bootstrap interval (``wfc_minus_iack_low``/``_high``; null when a mode has no run)."""
    keys = list(by)
    ok = iack_wfc_runs(handshakes).filter((pl.col("status") == "ok") & pl.col(metric).is_not_null())
    values = ok.group_by([*keys, "mode"]).agg(pl.col(metric).alias("values"))
    paired = values.filter(pl.col("mode") == "iack").drop("mode").join(
        values.filter(pl.col("mode") == "wfc").drop("mode"), on=keys, how="inner", suffix="_wfc"
    )
    # One bootstrap per configuration (a few dozen), each vectorised over its runs.
    intervals = [
        median_difference_interval(np.asarray(iack, float), np.asarray(wfc, float), confidence)
        for iack, wfc in paired.select("values", "values_wfc").iter_rows()
    ]
    bounds = paired.select(keys).with_columns(
        pl.Series("wfc_minus_iack_low", [low for low, _ in intervals], pl.Float64),
        pl.Series("wfc_minus_iack_high", [high for _, high in intervals], pl.Float64),
    )
    return mode_difference(handshakes, metric, keys).join(bounds, on=keys, how="left").sort(keys)


def interval_reach(value: str, low: str, high: str) -> pl.Expr:
    """How far the bootstrap interval [low, high] of a median difference reaches from the value
    (the larger side): the run-to-run spread that widens our interval of a claim (``quicack.claims.Measured``)."""
    return pl.max_horizontal(pl.col(value) - pl.col(low), pl.col(high) - pl.col(value))


def pto_improvement(
    handshakes: pl.DataFrame, pto_column: str = "first_pto_logged_ms", scenarios: Sequence[str] = ("noloss",)
) -> pl.DataFrame:
    """imc24 Fig. 16: median first PTO in WFC minus median first PTO in IACK, per client and RTT,
    over the runs of ``scenarios`` pooled (positive = IACK's first PTO is shorter). Only
    scenarios in which the emulated loss comes after the client's first RTT sample belong here
    (no loss; the second client flight lost). ``iack_runs``/``wfc_runs`` count the ok runs with
    a value behind each median; ``pto_improvement_low_ms``/``_high_ms`` its 95 % bootstrap
    interval over the runs (``mode_difference_interval``)."""
    selected = handshakes.filter(pl.col("scenario").is_in(list(scenarios)))
    return mode_difference_interval(selected, pto_column, ["client_impl", "rtt_ms"]).select(
        "client_impl",
        "rtt_ms",
        pl.col("iack_median").alias("iack_median_ms"),
        pl.col("wfc_median").alias("wfc_median_ms"),
        pl.col("wfc_minus_iack").alias("pto_improvement_ms"),
        pl.col("wfc_minus_iack_low").alias("pto_improvement_low_ms"),
        pl.col("wfc_minus_iack_high").alias("pto_improvement_high_ms"),
        "iack_runs",
        "wfc_runs",
    )


def stack_delay(handshakes: pl.DataFrame, scenario: str = "noloss") -> pl.DataFrame:
    """imc24 §4.1 'QUIC stack delays', two ways per client and RTT over the no-loss runs of ``scenario``
    (``noloss_paper``: the ServerHello held to the paper's server stack delay for each client): the server's
    ACK→ServerHello gap at the client-side capture in IACK, and the difference of the clients' median
    first RTT samples between WFC and IACK (what the client reports)."""
    noloss = handshakes.filter(pl.col("scenario") == scenario)
    gap = summarize(
        noloss.filter(pl.col("mode") == "iack"), "ack_to_server_hello_ms", ["client_impl", "rtt_ms"]
    ).select("client_impl", "rtt_ms", pl.col("median").alias("iack_ack_to_server_hello_ms"))
    first_rtt = mode_difference(noloss, "first_rtt_ms", ["client_impl", "rtt_ms"])
    return gap.join(
        first_rtt.select("client_impl", "rtt_ms", pl.col("wfc_minus_iack").alias("first_rtt_wfc_minus_iack_ms")),
        on=["client_impl", "rtt_ms"],
        how="left",
    ).sort("client_impl", "rtt_ms")


def default_pto_by_client(handshakes: pl.DataFrame) -> pl.DataFrame:
    """Per client: the default PTO observed as a probe before any server datagram (median over
    such runs), else the largest lower bound seen (imc24 Table 4's values:
    reference.paper_table('imc24', 'tab04'))."""
    ok = handshakes.filter(pl.col("status") == "ok")
    return (
        ok.group_by("client_impl")
        .agg(
            pl.col("default_pto_ms").median().alias("default_pto_ms"),
            pl.col("default_pto_ms").is_not_null().sum().cast(pl.Int64).alias("runs_with_probe"),
            pl.col("default_pto_lower_bound_ms").max().alias("default_pto_lower_bound_ms"),
        )
        .sort("client_impl")
    )


def second_flight_by_client(handshakes: pl.DataFrame, rtt_ms: float = 9.0) -> pl.DataFrame:
    """imc24 Table 4's second column: per client and mode, the calibrated second-client-flight
    datagram indices seen most often over the loss runs at ``rtt_ms`` (and in how many). The
    lowest RTT by default: at 300 ms the default PTO fires first and probes join the flight."""
    calibrated = handshakes.filter(
        pl.col("calibrated_second_client_flight").is_not_null() & (pl.col("rtt_ms") == rtt_ms)
    )
    counted = calibrated.group_by("client_impl", "mode", "calibrated_second_client_flight").agg(
        pl.len().alias("runs_with_indices")
    )
    return (
        counted.sort("runs_with_indices", "calibrated_second_client_flight", descending=[True, False])
        .group_by("client_impl", "mode", maintain_order=True)
        .agg(
            pl.col("calibrated_second_client_flight").first().alias("second_flight_datagrams"),
            pl.col("runs_with_indices").first(),
            pl.col("runs_with_indices").sum().alias("runs"),
        )
        .sort("client_impl", "mode")
    )


def rtt_sample_exposure(handshakes: pl.DataFrame, scenario: str = "transfer") -> pl.DataFrame:
    """imc24 Fig. 11 / Appendix E per client: RTT samples RFC 9002 allows (newly acknowledging
    ACKs of ack-eliciting packets, recomputed from the client qlog) beside the samples the
    implementation exposed in its qlog (distinct smoothed RTT / rttvar, consecutive duplicates
    removed), medians over the ok runs of ``scenario``."""
    runs = handshakes.filter((pl.col("scenario") == scenario) & (pl.col("status") == "ok"))
    return (
        runs.group_by("client_impl")
        .agg(
            pl.col("rtt_samples").median().alias("rtt_samples_rfc9002"),
            pl.col("rtt_samples_logged").median().alias("rtt_samples_logged"),
            pl.len().cast(pl.Int64).alias("runs"),
        )
        .with_columns((pl.col("rtt_samples_logged") / pl.col("rtt_samples_rfc9002")).alias("exposed_share"))
        .sort("client_impl")
    )
