"""The ACK-ratio study's senders per scenario: who sent, what each run reached on its path, and what CPU it took.

One row per (sender, receiver, path profile, file size): the runs, the download's goodput (file bytes over the
download time), the forward rate once the download was under way (``ack_runs.forward_mbit_second_half``) beside
what the path itself delivered to UDP probes (``path_checks``) and the profile's rate, and the median CPU seconds
of the sender, the receiver and the router's impairment program with the machine's load. This is what says whether a
run was limited by the path, by loss, by the sender's window or by CPU: a sender that fills the path reaches the
probed rate on a long download; a 1 MB download over a long path ends in slow start (ackfreq22 §4.1: "dominated by
the effects of slow-start" above 5.3 Mbit/s at 600 ms) and its second half shows the window, not the path.
"""

from __future__ import annotations

import polars as pl

from quicack.metrics.selection import require_runs
from quicack.reference import path_profiles
from quicack.rendered import Rendered, placeholder_when_missing

WHERE = "the ACK-ratio study's downloads (runs over a path profile)"


def _sender() -> pl.Expr:
    """'quiche (reno, unpaced)': the server and, where recorded, its congestion control and pacing."""
    pacing = pl.when(pl.col("pacing")).then(pl.lit("paced")).when(~pl.col("pacing")).then(pl.lit("unpaced"))
    settings = pl.concat_str([pl.col("congestion_control"), pacing], separator=", ", ignore_nulls=True)
    return (
        pl.when(settings.fill_null("") != "")
        .then(pl.format("{} ({})", pl.col("server_impl"), settings))
        .otherwise(pl.col("server_impl"))
        .alias("sender")
    )


def sender_rows(
    runs: pl.DataFrame, ack_runs: pl.DataFrame, path_checks: pl.DataFrame | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the runs drawn, one row per sender × receiver × path profile × file size)."""
    for column in (
        "pacing",
        "congestion_control",
        "client_cpu_s",
        "server_cpu_s",
        "impairment_cpu_s",
        "host_load_1min",
    ):
        if column not in runs.columns:
            runs = runs.with_columns(pl.lit(None).alias(column))
    selected = require_runs(runs.filter(pl.col("path_profile").is_not_null()), f"of {WHERE}")
    ok = selected.filter(pl.col("status") == "ok").join(
        ack_runs.select("run_id", "download_time_ms", "forward_mbit_second_half"), on="run_id", how="left"
    )
    profiles = path_profiles().select(
        pl.col("profile").alias("path_profile"), pl.col("s2c_rate_mbit").alias("profile_s2c_mbit")
    )
    probes = (
        path_checks.select(pl.col("profile").alias("path_profile"), pl.col("s2c_rate_mbit").alias("probed_s2c_mbit"))
        if path_checks is not None and not path_checks.is_empty()
        else profiles.select("path_profile", pl.lit(None, pl.Float64).alias("probed_s2c_mbit"))
    )
    table = (
        ok.with_columns(
            _sender(), (pl.col("file_bytes") * 8 / 1000.0 / pl.col("download_time_ms")).alias("goodput_mbit")
        )
        .group_by("sender", pl.col("client_impl").alias("receiver"), "path_profile", "file_bytes")
        .agg(
            pl.len().alias("runs"),
            pl.col("goodput_mbit").median(),
            pl.col("forward_mbit_second_half").median(),
            pl.col("server_cpu_s").median().alias("sender_cpu_s"),
            pl.col("client_cpu_s").median().alias("receiver_cpu_s"),
            pl.col("impairment_cpu_s").median(),
            (pl.col("download_time_ms").median() / 1000.0).alias("download_s"),
            pl.col("host_load_1min").max().alias("max_load_1min"),
        )
        .join(profiles, on="path_profile", how="left")
        .join(probes, on="path_profile", how="left")
        .with_columns(
            (100.0 * pl.col("forward_mbit_second_half") / pl.coalesce("probed_s2c_mbit", "profile_s2c_mbit")).alias(
                "second_half_percent_of_path"
            ),
            (pl.col("sender_cpu_s") / pl.col("download_s")).alias("sender_cpu_share"),
            (pl.col("receiver_cpu_s") / pl.col("download_s")).alias("receiver_cpu_share"),
        )
        .sort("path_profile", "file_bytes", "sender", "receiver")
        .with_columns(pl.selectors.float().round(3))
    )
    return selected, table


# The senders table's columns as a paper prints them (the CSV keeps the names).
SENDERS_HEADERS = {
    "sender": "Sender", "receiver": "Receiver", "path_profile": "Path profile", "file_bytes": "File (bytes)",
    "runs": "Runs", "goodput_mbit": "Goodput (Mbit/s)", "forward_mbit_second_half": "Rate, second half (Mbit/s)",
    "sender_cpu_s": "Sender CPU (s)", "receiver_cpu_s": "Receiver CPU (s)", "impairment_cpu_s": "Impairment CPU (s)",
    "download_s": "Download (s)", "max_load_1min": "Highest 1-min load",
    "profile_s2c_mbit": "Profile rate s→c (Mbit/s)",
    "probed_s2c_mbit": "Probed rate s→c (Mbit/s)", "second_half_percent_of_path": "Second half of path rate (%)",
    "sender_cpu_share": "Sender CPU per second", "receiver_cpu_share": "Receiver CPU per second",
}  # fmt: skip


@placeholder_when_missing
def ackratio_senders(runs: pl.DataFrame, ack_runs: pl.DataFrame, path_checks: pl.DataFrame | None = None) -> Rendered:
    """The ACK-ratio study's senders per scenario: goodput, the rate once under way against the path's, CPU."""
    selected, table = sender_rows(runs, ack_runs, path_checks)
    note = (
        "Per sender (server, with the congestion control and pacing its run.json records), receiver, path profile and "
        "file size, over the ok runs: goodput = file bytes / download time (the client's first datagram to the "
        "server's last before the client closes); forward_mbit_second_half = the server's IP bits from the moment half "
        "of the download's forward bytes had arrived to its end, over that time, against the path's own rate as "
        "quicack.testbed.path_check's UDP probes measured it (path_checks; the profile's rate where not probed). A 1 "
        "MB download over a long path is still in slow start in its second half (its window, not the path, sets that "
        "rate); a 10 MB one shows whether the sender fills the path. CPU: median seconds of the sender, the receiver "
        "and the impairment program over the run (*_cpu_share: per second of download; 1.0 = a whole core), and the "
        "machine's highest 1-minute load at the runs' start (2 cores, other jobs included)."
    )
    return Rendered(table, runs=selected, note=note, headers=SENDERS_HEADERS)
