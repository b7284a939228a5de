"""Our values of ackfreq22's measured claims (§5.4–5.6: α, the client's share of the bytes, Eq. (3)'s error, AR 100,
Tables 4 and 5, the reordering policies), from the ACK-ratio matrix over the emulated ackfreq22 paths (``ack_runs``,
``quicack.metrics.client_traffic``); and the paper's own §5.5 numbers recomputed from its Table 4. Claims without
their tables (``ack_runs``, ``datagrams``) in the mapping say "not measured". Collected into
``quicack.claims.ackratio_claims.ACKFREQ22``."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import polars as pl

from quicack.claims import ClaimFunction, Measured
from quicack.metrics.client_traffic import client_traffic_estimates, eq3_summary
from quicack.metrics.scalars import number
from quicack.metrics.selection import (
    ACKFREQ22_SATELLITE,
    ackfreq22_fig4_runs,
    ackfreq22_matrix_runs,
)
from quicack.reference import paper_table
from quicack.storage.run_batches import RunRows, in_memory

Tables = Mapping[str, RunRows]
NEEDED = ("runs", "ack_runs", "datagrams", "packets", "frames")
SATELLITE_NO_LOSS = "the satellite path without added loss"


def _missing(tables: Tables) -> str | None:
    absent = [name for name in NEEDED if name not in tables]
    return f"the tables {', '.join(absent)} are not given" if absent else None


def _fig4_summary(tables: Tables) -> pl.DataFrame:
    """Eq. (3) against the measurement per policy on the satellite path without loss (Fig. 4's runs)."""
    selected = ackfreq22_fig4_runs(in_memory(tables["runs"]))
    per_run = client_traffic_estimates(
        selected, in_memory(tables["ack_runs"]), tables["datagrams"], tables["packets"], tables["frames"]
    )
    if per_run.is_empty():
        return pl.DataFrame()
    without_handshake = per_run.group_by("policy").agg(
        (100.0 * (pl.col("client_bytes") - pl.col("handshake_bytes")) / pl.col("server_bytes"))
        .median()
        .alias("acks_percent"),
        pl.col("measured_ack_ratio_median").median().alias("effective_ar"),
    )
    return eq3_summary(per_run).join(without_handshake, on="policy")


def _policy_row(tables: Tables, policy: str) -> dict | None:
    if _missing(tables):
        return None
    summary = _fig4_summary(tables)
    if summary.is_empty():
        return None
    rows = summary.filter(pl.col("policy") == policy)
    return rows.row(0, named=True) if rows.height else None


def fitted_alpha_range(tables: Tables) -> Measured:
    """α fitted per policy (AR ≥ 10, d = 25 ms, no added loss) over every path: the range."""
    if why := _missing(tables):
        return Measured.unmeasured(why)
    selected = ackfreq22_matrix_runs(in_memory(tables["runs"])).filter(~pl.col("lossy") & (pl.col("ack_ratio") >= 10))
    per_run = client_traffic_estimates(
        selected, in_memory(tables["ack_runs"]), tables["datagrams"], tables["packets"], tables["frames"]
    )
    alphas = eq3_summary(per_run).drop_nulls("alpha") if not per_run.is_empty() else pl.DataFrame()
    if alphas.is_empty():
        return Measured.unmeasured("no timer ACK of the aioquic receiver at AR 10 or 20 over an ackfreq22 path")
    low, high = number(alphas["alpha"].min()), number(alphas["alpha"].max())
    cells = ", ".join(
        f"{p.removeprefix('ackfreq22-')} AR {ar} {a:.2f}"
        for p, ar, a in alphas.select("path", "ack_ratio", "alpha").iter_rows()
    )
    return Measured(low, high, f"{low:.2f}–{high:.2f} ({cells})", int(alphas["runs"].sum()))


def client_share(tables: Tables, policy: str) -> Measured:
    """Median client bytes as % of the server's for one policy on the satellite path (Fig. 4)."""
    row = _policy_row(tables, policy)
    if row is None:
        return Measured.unmeasured(f"no {policy} run over {SATELLITE_NO_LOSS}")
    value = row["measured_percent"]
    text = (
        f"{value:.2f} % ({row['acks_percent']:.2f} % without the client's handshake datagrams; Eq. (3) "
        f"{row['eq3_percent']:.2f} %)"
    )
    return Measured(value, value, text, row["runs"])


def effective_ack_ratio(tables: Tables, policy: str) -> Measured:
    row = _policy_row(tables, policy)
    if row is None:
        return Measured.unmeasured(f"no {policy} run over {SATELLITE_NO_LOSS}")
    value = row["effective_ar"]
    return Measured(
        value, value, f"{value:g} packets per ACK (median over runs of each run's median, on the wire)", row["runs"]
    )


def eq3_error(tables: Tables) -> Measured:
    """Largest |Eq. (3) − measured median| (percentage points) over Fig. 4's policies."""
    if why := _missing(tables):
        return Measured.unmeasured(why)
    summary = _fig4_summary(tables)
    if summary.is_empty():
        return Measured.unmeasured(f"no run over {SATELLITE_NO_LOSS}")
    errors = summary.select("policy", pl.col("eq3_difference_pp").abs().alias("error")).sort("error")
    high = number(errors["error"].max())
    cells = ", ".join(f"{p} {e:.3f}" for p, e in errors.iter_rows())
    return Measured(0.0, high, f"≤ {high:.3f} percentage points ({cells})", int(summary["runs"].sum()))


def return_cut(tables: Tables) -> Measured:
    """AR 2's return bytes over AR 10's on the satellite path (whole connections; and the ACK bytes alone)."""
    two, ten = _policy_row(tables, "AR 2"), _policy_row(tables, "AR 10")
    if two is None or ten is None:
        return Measured.unmeasured(f"no AR 2 and AR 10 runs over {SATELLITE_NO_LOSS}")
    value = two["measured_percent"] / ten["measured_percent"]
    acks_only = two["acks_percent"] / ten["acks_percent"]
    text = (
        f"{value:.1f}× fewer return bytes ({acks_only:.1f}× without the handshake datagrams; ACKs "
        f"{two['a_total_measured']:.0f} vs {ten['a_total_measured']:.0f})"
    )
    return Measured(value, value, text, two["runs"] + ten["runs"])


def _median_download_s(tables: Tables) -> pl.DataFrame:
    runs = ackfreq22_matrix_runs(in_memory(tables["runs"])).filter(pl.col("status") == "ok")
    return (
        runs.join(in_memory(tables["ack_runs"]), on="run_id")
        .group_by("path", "lossy", "ack_reordering", "ack_ratio")
        .agg((pl.col("download_time_ms").median() / 1000.0).alias("download_s"), pl.len().alias("runs"))
    )


def download_time(tables: Tables, path: str, ack_ratio: int, lossy: bool) -> Measured:
    """Table 4: median 1 MB download time (s) of one cell (with loss: policy D)."""
    if why := _missing(tables):
        return Measured.unmeasured(why)
    cell = _median_download_s(tables).filter(
        (pl.col("path") == path) & (pl.col("ack_ratio") == ack_ratio) & (pl.col("lossy") == lossy)
        & (~pl.col("lossy") | (pl.col("ack_reordering") == "D"))
    )  # fmt: skip
    if cell.is_empty():
        return Measured.unmeasured(f"no AR {ack_ratio} run over {path}{' with 1 % loss (D)' if lossy else ''}")
    if cell.height > 1:  # no loss: every reordering policy recorded behaves alike without reordering
        cell = cell.select(pl.col("download_s").median(), pl.col("runs").sum())
    value, runs = cell["download_s"][0], int(cell["runs"][0])
    return Measured(value, value, f"{value:.2f} s (median of {runs})", runs)


def ar10_faster_ms(tables: Tables, path: str) -> Measured:
    """§5.5: how much sooner AR 10 finishes than AR 2 without loss (ms; negative = later)."""
    if why := _missing(tables):
        return Measured.unmeasured(why)
    cells = _median_download_s(tables).filter((pl.col("path") == path) & ~pl.col("lossy"))
    times = dict(cells.group_by("ack_ratio").agg(pl.col("download_s").median()).iter_rows())
    if 2 not in times or 10 not in times:
        return Measured.unmeasured(f"no AR 2 and AR 10 runs over {path} without loss")
    value = 1000.0 * (times[2] - times[10])
    return Measured(
        value, value, f"{value:.0f} ms (AR 2 {times[2]:.2f} s, AR 10 {times[10]:.2f} s)", int(cells["runs"].sum())
    )


def paper_table4_difference_ms(tables: Tables, path: str) -> Measured:
    """§5.5's numbers recomputed from the paper's own Table 4: AR 2's minus AR 10's median download time (ms)."""
    table = paper_table("ackfreq22", "tab04").filter((pl.col("path") == path) & (pl.col("condition") == "no loss"))
    times = {int(ar): float(s) for ar, s in table.select("ack_ratio", "download_s").iter_rows()}
    value = round(1000.0 * (times[2] - times[10]), 3)
    return Measured(value, value, f"{value:.0f} ms (the paper's Table 4: {times[2]:.2f} − {times[10]:.2f} s)", 0)


def timer_share(tables: Tables, path: str, ack_ratio: int, lossy: bool) -> Measured:
    """Table 5: median per-connection % of application-data ACKs the delay timer sent (with loss: policy D)."""
    if why := _missing(tables):
        return Measured.unmeasured(why)
    runs = ackfreq22_matrix_runs(in_memory(tables["runs"])).filter(
        (pl.col("status") == "ok") & (pl.col("path") == path) & (pl.col("ack_ratio") == ack_ratio)
        & (pl.col("lossy") == lossy)
        & (~pl.col("lossy") | (pl.col("ack_reordering") == "D"))
    )  # fmt: skip
    application = (
        pl.col("acks_by_packet_threshold") + pl.col("acks_by_delay_timer") + pl.col("acks_by_reordering").fill_null(0)
    )
    shares = (
        runs.join(in_memory(tables["ack_runs"]), on="run_id")
        .select((100.0 * pl.col("acks_by_delay_timer") / application).alias("share"))
        .drop_nulls()
    )
    if shares.is_empty():
        return Measured.unmeasured(f"no AR {ack_ratio} run over {path}{' with 1 % loss (D)' if lossy else ''}")
    value = number(shares["share"].median())
    return Measured(value, value, f"{value:.0f} % (median of {shares.height})", shares.height)


def reordering_policies_differ(tables: Tables) -> Measured:
    """§5.6: no reordering policy is consistently fastest: per (path, AR) with loss, the policy with the shortest median
    download time; 'no consistent difference' holds when no policy is fastest in every cell."""
    if why := _missing(tables):
        return Measured.unmeasured(why)
    cells = _median_download_s(tables).filter(pl.col("lossy"))
    if cells.select("ack_reordering").n_unique() < 2:
        return Measured.unmeasured("fewer than two reordering policies recorded with loss")
    fastest = (
        cells.sort("download_s").group_by("path", "ack_ratio").agg(pl.col("ack_reordering").first().alias("fastest"))
    )
    counts = fastest.group_by("fastest").len().sort("len", descending=True)
    spread = cells.group_by("path", "ack_ratio").agg(
        ((pl.col("download_s").max() - pl.col("download_s").min()) / pl.col("download_s").median()).alias("spread")
    )
    text = (
        "fastest policy per (path, AR): " + ", ".join(f"{p} in {n}" for p, n in counts.iter_rows())
        + f" of {fastest.height} cells; spread of the medians up to {100 * number(spread['spread'].max()):.0f} %"
    )
    consistent = counts["len"][0] == fastest.height
    return Measured(None, None, text, int(cells["runs"].sum()), matches=not consistent)


PATH_NAMES = {"satellite": ACKFREQ22_SATELLITE, "4g": "ackfreq22-4g", "vdsl": "ackfreq22-vdsl"}
ACKFREQ22_MEASURED: dict[str, ClaimFunction] = {
    "ackfreq22-5.4-alpha": fitted_alpha_range,
    "ackfreq22-5.4-ar2-share": partial(client_share, policy="AR 2"),
    "ackfreq22-5.4-eq3-error": eq3_error,
    "ackfreq22-5.4-ar100-d25-share": partial(client_share, policy="AR 100"),
    "ackfreq22-5.4-ar100-d25-effective-ar": partial(effective_ack_ratio, policy="AR 100"),
    "ackfreq22-5.4-ar100-rtt4-share": partial(client_share, policy="AR 100, d 125 ms"),
    "ackfreq22-5.4-ar10-return-cut": return_cut,
    **{
        f"ackfreq22-tab04-satellite-ar{ar}-{'loss-d' if lossy else 'noloss'}": partial(
            download_time, path=ACKFREQ22_SATELLITE, ack_ratio=ar, lossy=lossy
        )
        for ar in (2, 10, 20)
        for lossy in (False, True)
    },
    # The calibration of the loss-free paths (ackfreq22-tab04 shows every cell): 4G and VDSL without loss.
    **{
        f"ackfreq22-tab04-{name}-ar{ar}-noloss": partial(
            download_time, path=PATH_NAMES[name], ack_ratio=ar, lossy=False
        )
        for name in ("4g", "vdsl")
        for ar in (2, 10, 20)
    },
    **{
        f"ackfreq22-5.5-ar10-faster-{name}": partial(ar10_faster_ms, path=PATH_NAMES[name])
        for name in ("satellite", "4g", "vdsl")
    },
    **{
        f"ackfreq22-5.5-table4-difference-{name}": partial(paper_table4_difference_ms, path=PATH_NAMES[name])
        for name in ("satellite", "4g", "vdsl")
    },
    **{
        f"ackfreq22-tab05-{name}-loss-ar{ar}": partial(timer_share, path=PATH_NAMES[name], ack_ratio=ar, lossy=True)
        for name in ("satellite", "vdsl")
        for ar in (10, 20)
    },
    "ackfreq22-5.6-reordering-policies": reordering_policies_differ,
}
