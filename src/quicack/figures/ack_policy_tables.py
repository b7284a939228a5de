"""ackfreq22 Table 2: the paper's implementation survey (cited) beside the ACK policy we measure for each
implementation we run as a receiver: from its own qlog (measured ACK ratio and ACK-only packet size), or, for a client
whose qlog logs no frames or that writes none (Chromium), from the client-side capture."""

from __future__ import annotations

import polars as pl

from quicack.metrics.ack_policy import default_ack_policies
from quicack.metrics.selection import PAPER_IMPLEMENTATION, default_ack_policy_runs, require_runs
from quicack.reference import paper_table
from quicack.rendered import Rendered, placeholder_when_missing
from quicack.storage.run_batches import RunRows

NOT_SURVEYED = "not in the paper's survey"


# ackfreq22 Table 2's columns as a paper prints them (the CSV keeps the names).
TAB02_HEADERS = {
    "implementation": "Implementation", "default_cc": "Default CC", "parses_af": "Parses ACK_FREQUENCY",
    "uses_af": "Uses ACK_FREQUENCY", "default_ar": "Default AR", "ack_bytes": "ACK size (bytes)",
    "measured_client": "Measured client", "measured_ar": "Measured AR", "measured_ar_p10": "Measured AR p10",
    "measured_ar_p90": "Measured AR p90", "measured_ack_bytes": "Measured ACK size (bytes)", "measured_runs": "Runs",
    "measured_from": "Measured from", "measurement_note": "Note",
}  # fmt: skip


@placeholder_when_missing
def ackfreq22_tab02_ack_policies(
    runs: pl.DataFrame, packets: RunRows, frames: RunRows, ack_runs: pl.DataFrame | None = None
) -> Rendered:
    """ackfreq22 Table 2 with measured columns: per implementation the paper's default CC, ACK_FREQUENCY support,
    default AR and median ACK size, and ours as a client downloading ≥ 1 MB with its default policy: the median
    over runs of each run's median ACK ratio (p10–p90 of the ACKs), the median ACK-only packet on the wire — from the
    client's qlog, else (no frames in it, or no qlog: Chromium) from the client-side capture (``measured_from``)."""
    selected = require_runs(
        default_ack_policy_runs(runs), "transferring at least 1 MB with the client's default ACK policy"
    )
    per_run = default_ack_policies(selected, packets, frames, ack_runs)
    drawn = selected.join(per_run, on="run_id", how="left")
    survey_name = pl.col("client_impl").replace(PAPER_IMPLEMENTATION).alias("implementation")
    measured = (
        drawn.filter((pl.col("status") == "ok") & pl.col("ack_ratio_median").is_not_null())
        .group_by(survey_name)
        .agg(
            pl.col("client_impl").first().alias("measured_client"),
            pl.col("ack_ratio_median").median().alias("measured_ar"),
            pl.col("ack_ratio_p10").min().alias("measured_ar_p10"),
            pl.col("ack_ratio_p90").max().alias("measured_ar_p90"),
            pl.col("ack_bytes_median").median().alias("measured_ack_bytes"),
            pl.len().alias("measured_runs"),
            pl.col("measured_from").unique().sort().str.join(", ").alias("measured_from"),
        )
    )
    unmeasured = (
        drawn.filter(pl.col("status") == "ok")
        .group_by(survey_name)
        .agg(pl.col("ack_ratio_median").is_null().all().alias("no_frames_logged"))
        .filter(pl.col("no_frames_logged"))
    )
    survey = paper_table("ackfreq22", "tab02")
    table = (
        survey.join(measured, on="implementation", how="full", coalesce=True)
        .join(unmeasured, on="implementation", how="full", coalesce=True)
        .with_columns(
            pl.col("default_ar").fill_null(NOT_SURVEYED),
            pl.when(pl.col("no_frames_logged").fill_null(False))
            .then(pl.lit("neither its qlog nor a client-side capture shows its ACKs: ACK ratio not measurable"))
            .otherwise(pl.lit(""))
            .alias("measurement_note"),
        )
        .drop("no_frames_logged")
    )
    # the surveyed implementations first, in the paper's order, then ours that it did not survey
    order = {name: i for i, name in enumerate(survey["implementation"].to_list())}
    table = table.with_columns(
        pl.col("implementation").replace_strict(order, default=len(order), return_dtype=pl.Int64).alias("paper_order")
    ).sort("paper_order", "implementation").drop("paper_order")
    note = (
        "Paper columns cited (ackfreq22 Table 2, source survey, median ACK size measured by its authors); measured "
        "columns: each run's median number of ack-eliciting packets received per ACK sent (ACKs that acknowledged "
        "something new), p10-p90 over the runs' ACKs, and the median ACK-only packet incl. IPv4/UDP headers, from the "
        "client's qlog; for a client without frames in its qlog (Chromium writes none) from the client-side capture "
        "instead: how far each ACK moved the largest acknowledged packet number, and the median ACK-only datagram "
        "(measured_from). The paper's chrome row is measured with Debian's Chromium, its neqo row with Firefox ESR, "
        "whose QUIC is neqo (measured_client; quicack.testbed.browsers)."
    )
    return Rendered(table, runs=drawn, metric="ack_ratio_median", note=note, headers=TAB02_HEADERS)
