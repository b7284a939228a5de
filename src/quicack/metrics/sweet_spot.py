"""imc24 Fig. 4 measured: the instant ACK's sweet spot from the Δt sweep, per (Δt, RTT) cell beside the
RFC 9002 model of the paper's Fig. 4 (``quicack.models.recovery``).

* First-PTO reduction: per client, the median first PTO the client logged with WFC minus that with IACK
  (``first_pto_logged_ms``, as Fig. 16); per cell the median over the clients. The model: 3·Δt (when
  4·rttvar > kGranularity), because WFC's first RTT sample is RTT + Δt and IACK's is RTT.
* Spurious retransmissions: in these runs nothing is lost, so every client PTO probe is spurious. Measured:
  the share of IACK runs with at least one client PTO expiry (``client_pto_expiries``, inferred from the
  client-side capture). The model: the PTO the instant ACK arms (3·RTT) expires before the ServerHello
  arrives, i.e. Δt ≥ 3·RTT; a cell agrees when the majority of its IACK runs probed exactly where the model
  says they would.
"""

from __future__ import annotations

from typing import TypedDict

import polars as pl

from quicack.metrics.scalars import optional_number
from quicack.models import recovery

PTO_COLUMN = "first_pto_logged_ms"
PROBES = "client_pto_expiries"
CELL = ["cert_delay_ms", "rtt_ms"]


def _model(cells: pl.DataFrame) -> pl.DataFrame:
    """The model's first-PTO reduction and spurious-probe prediction for each (Δt, RTT) of ``cells``."""
    pair = pl.struct("rtt_ms", "cert_delay_ms")
    return cells.with_columns(
        pair.map_elements(
            lambda c: recovery.first_pto_reduction_ms(c["rtt_ms"], c["cert_delay_ms"]), return_dtype=pl.Float64
        ).alias("model_reduction_ms"),
        pair.map_elements(
            lambda c: recovery.instant_ack_is_spurious(c["rtt_ms"], c["cert_delay_ms"]), return_dtype=pl.Boolean
        ).alias("model_spurious"),
    )


def per_client(sweep_runs: pl.DataFrame, pto_column: str = PTO_COLUMN) -> pl.DataFrame:
    """Per (Δt, RTT, client): median first PTO per mode over the ok runs, its WFC − IACK difference, and
    the IACK / WFC runs with a client probe."""
    # A run that does not say its Δt or RTT (run.json without cert_delay_ms) has no cell.
    ok = sweep_runs.filter((pl.col("status") == "ok") & pl.all_horizontal(pl.col(CELL).is_not_null()))
    iack, wfc = pl.col("mode") == "iack", pl.col("mode") == "wfc"
    probed = pl.col(PROBES) > 0
    return (
        ok.group_by(*CELL, "client_impl")
        .agg(
            pl.col(pto_column).filter(iack).median().alias("iack_first_pto_ms"),
            pl.col(pto_column).filter(wfc).median().alias("wfc_first_pto_ms"),
            iack.sum().cast(pl.Int64).alias("iack_runs"),
            wfc.sum().cast(pl.Int64).alias("wfc_runs"),
            (iack & probed).sum().cast(pl.Int64).alias("iack_runs_probed"),
            (wfc & probed).sum().cast(pl.Int64).alias("wfc_runs_probed"),
        )
        .with_columns((pl.col("wfc_first_pto_ms") - pl.col("iack_first_pto_ms")).alias("reduction_ms"))
        .sort(*CELL, "client_impl")
    )


def sweet_spot_cells(sweep_runs: pl.DataFrame, pto_column: str = PTO_COLUMN) -> pl.DataFrame:
    """One row per measured (Δt, RTT): measured first-PTO reduction (median over clients, and its range),
    relative to the RTT, the share of IACK (and WFC) runs with a client probe, the model's values, and
    whether they agree (``spurious_agrees``; ``reduction_ratio`` = measured / model where the model is > 0)."""
    clients = per_client(sweep_runs, pto_column)
    cells = (
        clients.group_by(CELL)
        .agg(
            pl.col("reduction_ms").median().alias("measured_reduction_ms"),
            pl.col("reduction_ms").min().alias("measured_reduction_min_ms"),
            pl.col("reduction_ms").max().alias("measured_reduction_max_ms"),
            pl.col("client_impl")
            .filter(pl.col("reduction_ms").is_not_null())
            .sort()
            .str.join(",")
            .alias("clients_with_pto"),
            pl.col("client_impl").sort().str.join(",").alias("clients"),
            pl.col("iack_runs").sum(),
            pl.col("wfc_runs").sum(),
            pl.col("iack_runs_probed").sum(),
            pl.col("wfc_runs_probed").sum(),
        )
        .with_columns(
            (pl.col("iack_runs_probed") / pl.col("iack_runs")).alias("iack_probe_share"),
            (pl.col("wfc_runs_probed") / pl.col("wfc_runs")).alias("wfc_probe_share"),
            (pl.col("measured_reduction_ms") / pl.col("rtt_ms")).alias("measured_reduction_per_rtt"),
        )
    )
    return (
        _model(cells)
        .with_columns(
            (pl.col("model_reduction_ms") / pl.col("rtt_ms")).alias("model_reduction_per_rtt"),
            pl.when(pl.col("model_reduction_ms") > 0)
            .then(pl.col("measured_reduction_ms") / pl.col("model_reduction_ms"))
            .alias("reduction_ratio"),
            pl.when(pl.col("iack_runs") > 0).then(pl.col("iack_probe_share") > 0.5).alias("measured_spurious"),
        )
        .with_columns((pl.col("measured_spurious") == pl.col("model_spurious")).alias("spurious_agrees"))
        .sort(CELL)
    )


class AgreementSummary(TypedDict):
    cells: int
    spurious_cells: int
    spurious_agree: int
    ratio_cells: int
    ratio_median: float | None
    ratio_q25: float | None
    ratio_q75: float | None


def agreement_summary(cells: pl.DataFrame) -> AgreementSummary:
    """How well the measurement follows the model over the cells: cells whose spurious probes agree (of
    those with IACK runs), and the median / quartiles of measured ÷ model first-PTO reduction (Δt > 0)."""
    spurious = cells.filter(pl.col("measured_spurious").is_not_null())
    ratios = cells.filter(pl.col("reduction_ratio").is_not_null())["reduction_ratio"]
    return {
        "cells": cells.height,
        "spurious_cells": spurious.height,
        "spurious_agree": int(spurious["spurious_agrees"].sum()),
        "ratio_cells": ratios.len(),
        "ratio_median": optional_number(ratios.median()),
        "ratio_q25": ratios.quantile(0.25, "linear"),
        "ratio_q75": ratios.quantile(0.75, "linear"),
    }
