"""Tables stored inside the DuckDB file by the database stage (``quicack build-db``), not Parquet views."""

from __future__ import annotations

import polars as pl

from .contract import DATABASE, B, Column, F, I, S, Table

# Not a Parquet view either: what ``python -m quicack.testbed.path_check`` measured of the emulated paths the
# dataset's runs used (``path_check.csv`` beside the raw folder), stored by ``quicack build-db --path-checks``.
PATH_CHECKS = Table(
    "path_checks",
    "One row per path profile (data/reference/path_profiles.csv) as the testbed emulated it, measured with plain UDP "
    "probes by quicack.testbed.path_check on the machine that recorded the dataset: RTT, delivered rate and random "
    "loss per direction, and how late the user-space impairment released packets. ackfreq22-tab01 sets them beside the "
    "profile.",
    (
        Column("profile", S, "Path profile name (data/reference/path_profiles.csv)."),
        Column("rtt_min_ms", F, "Smallest RTT of 40 small echo probes, ms."),
        Column("rtt_median_ms", F, "Median RTT of the same probes, ms."),
        Column(
            "s2c_rate_mbit",
            F,
            "Delivered server-to-client rate (IP bytes) under a sender 25 % above the profile's rate, Mbit/s.",
        ),
        Column("c2s_rate_mbit", F, "Delivered client-to-server rate, measured the same way, Mbit/s."),
        Column("s2c_packets_per_s", F, "Delivered server-to-client 1,228-byte IP packets per second in that probe."),
        Column("c2s_packets_per_s", F, "Delivered client-to-server packets per second in that probe."),
        Column(
            "s2c_loss_percent",
            F,
            "Random loss server to client: 1 − received / sent of a probe at half the rate (no queue drops), %.",
        ),
        Column("c2s_loss_percent", F, "Random loss client to server, measured the same way, %."),
        Column(
            "s2c_loss_probes",
            I,
            "Probes sent server to client for the loss measurement (its resolution: 100 / probes %).",
        ),
        Column("c2s_loss_probes", I, "Probes sent client to server for the loss measurement."),
        Column(
            "impairment_max_lateness_ms",
            F,
            "Largest delay by which the impairment program released a packet after its due time, ms.",
        ),
        Column("note", S, "What could not be measured, or empty."),
    ),
    written_by=(DATABASE,),
)

# Not a Parquet view like the tables above: a one-row table that ``quicack build-db --description``
# stores inside the DuckDB file (quicack.provenance), so that every footnote names the data's origin.
DATASET_DESCRIPTION = Table(
    "dataset_description",
    "Where this dataset comes from, from its description file (dataset.yaml beside the raw folder): one row per part "
    "of the dataset ('runs': the testbed or QIR runs; 'scan': the scan measurements); kind 'unknown' when a part has "
    "none.",
    (
        Column(
            "part",
            S,
            "Which tables the row describes: 'runs' (runs and every table keyed by run_id) or 'scan' "
            "(scan_connections, scan_truth).",
        ),
        Column("name", S, "Name of the dataset (the runs' dataset column when it has no description)."),
        Column(
            "kind", S, "'emulated', 'public-captures', 'scan', 'emulated-scan', 'other', or 'unknown' (no description)."
        ),
        Column("title", S, "One line on what the data is; every footnote quotes it."),
        Column("description", S, "Longer description: how it was recorded or obtained."),
        Column(
            "recorded_with",
            pl.List(pl.Struct({"component": S, "version": S})),
            "Software it was recorded with, in the file's order: component (testbed, kernel, implementation) and "
            "version.",
        ),
        Column("source", S, "Who published or recorded it."),
        Column("url", S, "Where it can be obtained."),
        Column("license", S, "Licence of the data."),
        Column("description_file", S, "Path of the description file the row was read from (null: none)."),
    ),
    written_by=(DATABASE,),
)


# Not a Parquet view: ``quicack build-db`` aggregates the dataset's estimator_agreement over every run group and joins
# the recorded causes of the deviations (quicack.metrics.agreement, src/quicack/metrics/rfc9002_deviations.csv).
RFC9002_AGREEMENT = Table(
    "rfc9002_agreement",
    "One row per implementation and vantage: how far the estimator state the implementation logged (qlog "
    "recovery:metrics_updated) deviates from RFC 9002 recomputed from the same qlog's packets, over every RTT sample "
    "of the dataset (estimator_agreement), the logging resolution, and the cause of the deviations beyond it.",
    (
        Column("implementation", S, "Implementation that wrote the qlogs."),
        Column("vantage", S, "'client' or 'server'."),
        Column("endpoints", I, "Connections (run and vantage) with a qlog of this implementation at this vantage."),
        Column(
            "endpoints_with_samples",
            I,
            "Of them, those with at least one recomputed RTT sample (0: nothing to compare, the explanation says why).",
        ),
        Column("samples", I, "Recomputed RTT samples."),
        Column(
            "samples_compared",
            I,
            "Samples paired with a logged smoothed_rtt (the rest: the implementation logged no change near them).",
        ),
        *(
            Column(
                f"{quantity}_abs_dev_{stat}_ms",
                F,
                f"{stat.capitalize()} of |logged - recomputed| {label}, ms (over the compared samples).",
            )
            for quantity, label in (
                ("smoothed_rtt", "smoothed_rtt"),
                ("rttvar", "rttvar"),
                ("pto", "PTO (smoothed + max(4*rttvar, 1 ms))"),
            )
            for stat in ("median", "p99", "max")
        ),
        Column(
            "logging_resolution_ms",
            F,
            "Resolution of the logged values: 1 when every logged smoothed_rtt is a whole millisecond, else 0.001.",
        ),
        Column(
            "within_resolution",
            B,
            "True when every deviation is within the resolution's bound (smoothed_rtt and rttvar: 2 x resolution; PTO: "
            "10 x).",
        ),
        Column(
            "explanation",
            S,
            "'within logging resolution', or the cause(s) of the larger deviations with their evidence (qlog lines, "
            "the implementation's source); from src/quicack/metrics/rfc9002_deviations.csv.",
        ),
    ),
    written_by=(DATABASE,),
)
