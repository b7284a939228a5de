"""The runs of rethink's and tcpquic's measurements as a table of configurations: their labels ('aioquic AR 1:2',
'linux-tcp AR 1:10'), their wire packets, and Table III's return volume per configuration — shared by the rethink
and tcpquic figures and by the claims, which set the paper's numbers beside these."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import polars as pl

from quicack.metrics.return_path import return_volume, wire_packets
from quicack.metrics.selection import (
    BROWSER_RECEIVERS,
    RETHINK_FILE_BYTES,
    RETHINK_LOSS_PROFILE,
    RETHINK_PROFILE,
    MissingData,
    require_runs,
    rethink_runs,
)
from quicack.storage.run_batches import RunRows, in_memory, per_run_batches, rows_in

WHERE = "10 MB downloads over the emulated 8.5/1.5 Mbit/s, 600 ms satellite path (rethink-satellite)"
LOSS_LABELS = {False: "no loss", True: "1 % forward loss"}


def configuration_label() -> pl.Expr:
    """'aioquic AR 1:2', 'linux-tcp AR 1:10', 'chromium (own policy)': what a line or bar of these figures is."""
    return (
        pl.when(pl.col("receiver_ack_ratio").is_null())
        .then(pl.format("{} (own policy)", pl.col("client_impl")))
        .otherwise(pl.format("{} AR 1:{}", pl.col("client_impl"), pl.col("receiver_ack_ratio")))
        .alias("configuration")
    )


def ok_with_labels(selected: pl.DataFrame) -> pl.DataFrame:
    return selected.filter(pl.col("status") == "ok").with_columns(
        configuration_label(), pl.col("path_profile").str.contains("loss").alias("lossy")
    )


@dataclass(frozen=True)
class WireReduction:
    """A per-run function of wire packets applied to the wire packets of a batch of runs."""

    reduce: Callable[[pl.DataFrame], pl.DataFrame]

    def __call__(self, datagrams: pl.DataFrame, tcp_segments: pl.DataFrame | None) -> pl.DataFrame:
        return self.reduce(wire_packets(datagrams, tcp_segments))


def reduced_wire(
    ok: pl.DataFrame,
    datagrams: RunRows,
    tcp_segments: RunRows | None,
    reduce: Callable[[pl.DataFrame], pl.DataFrame],
    what: str,
) -> pl.DataFrame:
    """``reduce`` — a per-run function of wire packets (their sizes, volumes, rates) — over the wire packets of the
    ``ok`` runs, read a batch of runs at a time (``quicack.storage.run_batches``); MissingData when they have no
    packet."""
    # every run with a datagram or a TCP segment has wire packets (one capture point is chosen per run)
    if rows_in(ok["run_id"], datagrams, tcp_segments) == 0:
        raise MissingData(f"no captured packets of the {what}")
    return per_run_batches(WireReduction(reduce), ok["run_id"], datagrams, tcp_segments)


def claims_volume_table(tables: Mapping[str, RunRows]) -> pl.DataFrame:
    """The per-configuration volume table of a claims run's tables (rethink Table III's claims, the browsers' and the
    stacks'); MissingData without a datagrams table or without the runs."""
    if "datagrams" not in tables:
        raise MissingData("no datagrams table")
    return volume_per_configuration(in_memory(tables["runs"]), tables["datagrams"], tables.get("tcp_segments"))[1]


def scaled_from(file_bytes: pl.Expr) -> pl.Expr:
    """How a run of ``file_bytes`` reaches rethink's 10 MB: measured, or its return bytes scaled up (a 10 MB download
    at 1 % loss over 600 ms takes minutes, so the embedded dataset has 2 MB ones; the papers' conditions record
    10 MB)."""
    scale = RETHINK_FILE_BYTES / file_bytes
    return (
        pl.when(scale != 1)
        .then(pl.format("scaled ×{} from {} MB", scale.round(1), (file_bytes / 2**20).round(1)))
        .otherwise(pl.lit("measured at 10 MB"))
    )


def loss_transfer_sizes(labelled: pl.DataFrame) -> str:
    """``scaled_from`` of the 1 % loss runs of ``labelled`` (``ok_with_labels``: ``lossy``, ``file_bytes``)."""
    sizes = labelled.filter(pl.col("lossy")).select(scaled_from(pl.col("file_bytes")).unique().sort()).to_series()
    return "; ".join(sizes.drop_nulls().to_list()) or "no run"


def volume_per_configuration(
    runs: pl.DataFrame, datagrams: RunRows, tcp_segments: RunRows | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the runs drawn, per loss × protocol × configuration the median return volume): forward MB and return KB as
    measured, the return as % of the forward, and the return KB per 10 MB forward — a 2 MB loss run scaled ×5,
    ``scaled_from`` says so."""
    what = f"{WHERE} (1 % loss: rethink-satellite-loss1) at AR 1:2 or 1:10"
    selected = require_runs(
        rethink_runs(runs, (RETHINK_PROFILE, RETHINK_LOSS_PROFILE), default_policy_receivers=BROWSER_RECEIVERS), what
    )
    ok = ok_with_labels(selected)
    per_run = reduced_wire(ok, datagrams, tcp_segments, return_volume, what).join(
        ok.select("run_id", "configuration", "client_impl", "receiver_ack_ratio", "lossy", "file_bytes"), on="run_id"
    )
    scale = RETHINK_FILE_BYTES / pl.col("file_bytes")
    table = (
        per_run.group_by("lossy", "protocol", "configuration", "receiver_ack_ratio", "file_bytes")
        .agg(
            pl.len().alias("runs"),
            (pl.col("forward_ip_bytes").median() / 1e6).alias("forward_mb"),
            (pl.col("return_ip_bytes").median() / 1e3).alias("return_kb"),
            pl.col("return_percent_of_forward").median().alias("return_percent_of_forward"),
        )
        .with_columns(
            (pl.col("return_kb") * scale).alias("return_kb_per_10mb"),
            scaled_from(pl.col("file_bytes")).alias("scaled_from"),
            pl.col("lossy").replace_strict(LOSS_LABELS, return_dtype=pl.Utf8).alias("loss"),
        )
        .sort("lossy", "protocol", "receiver_ack_ratio", "configuration")
    )
    return selected, table
