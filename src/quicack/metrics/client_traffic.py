"""ackfreq22 §5.4 measured: the inputs of Eq. (1)–(5) per download and the model's estimates of the client's traffic
beside the measured one (the formulas themselves live in ``quicack.models.ackfreq22_equations``).

Per run (from ``ack_runs`` and the captures at the same capture point): Serv_p = the forward data packets; A_del = the
ACKs the delay timer sent (the receiver's qlog; for a receiver that does not log why, ``ack_runs``' inference from the
capture); S_bm = the median ACK-only packet (IP bytes); V_crypt = the client's handshake bytes (its datagrams carrying
Initial or Handshake packets); L = the loss clusters; k = the packets a reordering policy acknowledges at once (D 1,
3A 3, NR 0). α is fitted per group of runs as the paper defines it: the packets the timer ACKs covered divided by AR —
the receiver's own count where it logs it, else the captured ACK's advance (an ACK that moved its largest
acknowledged packet by fewer than AR packets was the timer's; exact while nothing is lost).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl
from polars.datatypes import DataTypeClass

from quicack.metrics.ack_policy import ack_reasons, captured_acks
from quicack.metrics.selection import ack_policy_label
from quicack.models import ackfreq22_equations as model
from quicack.storage.run_batches import RunRows, per_run_batches

# Eq. (5)'s k: packets acknowledged at once after a reordering, by the receiver's policy (ackfreq22 §5.6).
PACKETS_ACKED_AFTER_REORDERING = {"D": 1, "3A": 3, "NR": 0}
# Eq. (4) as the paper applies it to Chrome: AR 2 for the first 100 packets
# (models.ackfreq22_equations.CHROME_INITIAL_PACKETS).
CHROME_INITIAL_ACK_RATIO = 2


def handshake_bytes(datagrams: pl.DataFrame, packets: pl.DataFrame) -> pl.DataFrame:
    """Per (run_id, vantage): IP bytes of the client's datagrams that carry an Initial or Handshake packet (V_crypt)."""
    key = ["run_id", "vantage", "datagram_index"]
    handshake = (
        packets.filter(
            (pl.col("source") == "pcap")
            & (pl.col("direction") == "c2s")
            & pl.col("pn_space").is_in(["initial", "handshake"])
        )
        .select(key)
        .unique()
    )
    return (
        datagrams.filter(pl.col("direction") == "c2s")
        .join(handshake, on=key, how="semi")
        .group_by("run_id", "vantage")
        .agg(
            (pl.col("ip_header_bytes") + pl.col("udp_header_bytes") + pl.col("udp_payload_bytes"))
            .sum()
            .alias("handshake_bytes")
        )
    )


def model_inputs(selected: pl.DataFrame, ack_runs: pl.DataFrame, datagrams: RunRows, packets: RunRows) -> pl.DataFrame:
    """One row per selected ok run with an ``ack_runs`` row: its configuration columns and Eq. (2)–(5)'s inputs."""
    rows = selected.filter(pl.col("status") == "ok").join(ack_runs, on="run_id")
    in_runs = rows.select("run_id").unique()
    handshakes = per_run_batches(handshake_bytes, in_runs["run_id"], datagrams, packets)
    return rows.join(handshakes, on=["run_id", "vantage"], how="left").with_columns(
        pl.col("forward_data_packets").alias("server_packets"),
        pl.col("acks_by_delay_timer").alias("timer_acks"),
        (
            pl.col("acks_by_packet_threshold")
            + pl.col("acks_by_delay_timer")
            + pl.col("acks_by_reordering").fill_null(0)
        ).alias("application_acks"),
        pl.col("ack_packet_bytes_median").alias("ack_bytes"),
        pl.col("ack_reordering")
        .replace_strict(PACKETS_ACKED_AFTER_REORDERING, default=0, return_dtype=pl.Int64)
        .alias("k"),
        pl.col("return_ip_bytes").alias("client_bytes"),
        pl.col("forward_ip_bytes").alias("server_bytes"),
    )


def timer_ack_coverage(frames: pl.DataFrame) -> pl.DataFrame:
    """Per ACK the receiver's delay timer sent: its run and the ack-eliciting packets it covered (its own count)."""
    return (
        ack_reasons(frames)
        .filter(pl.col("ack_reason") == "delay_timer")
        .select("run_id", "ack_eliciting_since_previous_ack")
    )


def captured_ack_advances(frames: pl.DataFrame) -> pl.DataFrame:
    """Per captured client ACK that moved its largest acknowledged packet: its run and how far (``captured_acks``)."""
    return (
        captured_acks(frames)
        .filter(pl.col("largest_acked_advance") > 0)
        .select("run_id", pl.col("largest_acked_advance").alias("ack_eliciting_since_previous_ack"))
    )


def timer_coverage(ok: pl.DataFrame, frames: RunRows) -> pl.DataFrame:
    """Per timer ACK of the ``ok`` runs (run_id, ack_ratio): the packets it covered — the receiver's own count where its
    qlog logs why it sent each ACK, else the captured ACKs that advanced by fewer than the run's AR."""
    logged = per_run_batches(timer_ack_coverage, ok["run_id"], frames)
    unlogged = ok.join(logged.select("run_id").unique(), on="run_id", how="anti")
    if unlogged.is_empty():
        return logged
    inferred = (
        per_run_batches(captured_ack_advances, unlogged["run_id"], frames)
        .join(unlogged.select("run_id", "ack_ratio"), on="run_id")
        .filter(pl.col("ack_eliciting_since_previous_ack") < pl.col("ack_ratio"))
        .select(logged.columns)
    )
    return pl.concat([logged, inferred.cast(logged.schema)], how="vertical")


def fitted_alpha(selected: pl.DataFrame, frames: RunRows, groups: Sequence[str]) -> pl.DataFrame:
    """Per group of ``selected`` runs (``groups`` columns, which must include ack_ratio): α fitted over every timer
    ACK of its ok runs (``models.ackfreq22_equations.fit_alpha``) and the number of timer ACKs it rests on."""
    ok = selected.filter(pl.col("status") == "ok").select("run_id", *groups)
    timer = timer_coverage(ok, frames)
    covered = (
        ok.join(timer, on="run_id")
        .group_by(groups)
        .agg(pl.col("ack_eliciting_since_previous_ack").drop_nulls().alias("covered"))
    )
    fits = [
        {
            **{g: row[g] for g in groups},
            "alpha": model.fit_alpha(row["covered"], row["ack_ratio"]),
            "timer_acks_fitted": len(row["covered"]),
        }
        for row in covered.iter_rows(named=True)  # one row per group of runs, not per packet
    ]
    schema: dict[str, pl.DataType | DataTypeClass] = {
        **{g: ok.schema[g] for g in groups}, "alpha": pl.Float64, "timer_acks_fitted": pl.Int64
    }
    return pl.DataFrame(fits, schema=schema)


def estimates(inputs: pl.DataFrame, alphas: pl.DataFrame, groups: Sequence[str]) -> pl.DataFrame:
    """Per run: Eq. (3)'s ACKs (``eq3_acks``), Eq. (5)'s loss ACKs, Eq. (2)'s client bytes and both as % of the
    server's bytes beside the measured ``client_percent``; Eq. (4) with Chrome's two phases (AR 2 for the first 100
    packets, then the run's AR) as ``eq4_acks`` / ``eq4_client_percent``."""
    rows = inputs.join(
        alphas, on=list(groups), how="left", nulls_equal=True
    )  # a null delay (d as an RTT fraction) is a group too
    alpha = pl.col("alpha").fill_null(model.PAPER_ALPHA)
    eq3 = model.acks_in_sequence(pl.col("server_packets"), pl.col("ack_ratio"), pl.col("timer_acks"), alpha)
    # Eq. (4) takes a minimum of numbers: evaluated per run (one call per download, not per packet)
    eq4 = pl.struct(pl.col("server_packets"), pl.col("ack_ratio"), pl.col("timer_acks"), alpha.alias("a")).map_elements(
        lambda r: model.acks_in_sequence_two_phase(
            r["server_packets"], CHROME_INITIAL_ACK_RATIO, r["ack_ratio"], r["timer_acks"], r["a"]
        ),
        return_dtype=pl.Float64,
    )
    loss = model.acks_after_loss(pl.col("loss_clusters").fill_null(0), pl.col("k"))
    return rows.with_columns(
        eq3.alias("eq3_acks"),
        eq4.alias("eq4_acks"),
        loss.alias("eq5_loss_acks"),
        (100.0 * pl.col("client_bytes") / pl.col("server_bytes")).alias("client_percent"),
        (
            100.0
            * model.client_bytes(eq3, loss, pl.col("ack_bytes"), pl.col("handshake_bytes"))
            / pl.col("server_bytes")
        ).alias("eq3_client_percent"),
        (
            100.0
            * model.client_bytes(eq4, loss, pl.col("ack_bytes"), pl.col("handshake_bytes"))
            / pl.col("server_bytes")
        ).alias("eq4_client_percent"),
    )


EQ_GROUPS = ["path", "lossy", "policy", "ack_ratio", "ack_reordering"]


def client_traffic_estimates(
    selected: pl.DataFrame, ack_runs: pl.DataFrame, datagrams: RunRows, packets: RunRows, frames: RunRows
) -> pl.DataFrame:
    """Per ok run of ``selected``: Eq. (2)–(5)'s inputs and estimates, α fitted per (path, loss, policy, reordering)."""
    labelled = selected.with_columns(ack_policy_label())
    inputs = model_inputs(labelled, ack_runs, datagrams, packets)
    alphas = fitted_alpha(labelled, frames, EQ_GROUPS)
    return estimates(inputs, alphas, EQ_GROUPS)


def eq3_summary(per_run: pl.DataFrame) -> pl.DataFrame:
    """Per (path, loss, policy, reordering): medians of the measured and estimated client traffic, α, the relative
    error of each estimate against the measured median ((estimate − measured) / measured) and its difference in
    percentage points (the paper's 0.19 % / 0.07 %)."""
    return (
        per_run.group_by(EQ_GROUPS)
        .agg(
            pl.len().alias("runs"),
            pl.col("alpha").first(),
            pl.col("server_packets").median().alias("serv_p"),
            pl.col("application_acks").median().alias("a_total_measured"),
            pl.col("timer_acks").median().alias("a_del"),
            pl.col("eq3_acks").median().alias("a_total_eq3"),
            pl.col("eq4_acks").median().alias("a_total_eq4"),
            pl.col("loss_clusters").median().alias("loss_clusters_l"),
            pl.col("eq5_loss_acks").median().alias("a_loss_eq5"),
            pl.col("ack_bytes").median().alias("s_bm"),
            pl.col("handshake_bytes").median().alias("v_crypt"),
            pl.col("client_percent").median().alias("measured_percent"),
            pl.col("eq3_client_percent").median().alias("eq3_percent"),
            pl.col("eq4_client_percent").median().alias("eq4_percent"),
        )
        .with_columns(
            (pl.col("eq3_percent") - pl.col("measured_percent")).alias("eq3_difference_pp"),
            ((pl.col("eq3_percent") - pl.col("measured_percent")) / pl.col("measured_percent")).alias(
                "eq3_relative_error"
            ),
            ((pl.col("eq4_percent") - pl.col("measured_percent")) / pl.col("measured_percent")).alias(
                "eq4_relative_error"
            ),
        )
        .sort("path", "lossy", "ack_ratio", "policy", "ack_reordering")
    )
