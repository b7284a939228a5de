"""ACK Delay of the server's first ACK per packet number space (imc24 Table 3), from captures.

Works on any capture with keys in the QUIC Interop Runner layout: the server side of the link
(sim_right) is preferred, else whatever vantage the run has, because the field is the same at
every point of the path; only the ACK frames the server sent (s2c) count.
"""

from __future__ import annotations

import polars as pl

from quicack.layout.vantage import SIM_LEFT, SIM_RIGHT
from quicack.storage.run_batches import RunRows, per_run_batches

VANTAGE_PREFERENCE = (SIM_RIGHT, SIM_LEFT)
SPACES = ("initial", "handshake")


def first_server_acks(frames: pl.DataFrame) -> pl.DataFrame:
    """Per run and packet number space (initial, handshake): the ACK Delay (ms) of the first ACK
    frame the server sent, the vantage it was read at and when."""
    acks = frames.filter(
        (pl.col("source") == "pcap")
        & (pl.col("direction") == "s2c")
        & pl.col("frame_type").is_in(["ack", "ack_ecn"])
        & pl.col("pn_space").is_in(SPACES)
    ).with_columns(
        pl.col("vantage")
        .replace_strict({v: i for i, v in enumerate(VANTAGE_PREFERENCE)}, default=len(VANTAGE_PREFERENCE))
        .alias("preference")
    )
    return (
        acks.sort("run_id", "pn_space", "preference", "time_ms", "packet_number", "frame_index")
        .group_by("run_id", "pn_space", maintain_order=True)
        .agg(pl.col("vantage").first(), pl.col("time_ms").first(), pl.col("ack_delay_ms").first())
    )


def first_server_acks_of_runs(runs: pl.DataFrame, frames: RunRows) -> pl.DataFrame:
    """``first_server_acks`` of these runs, their frames read a batch of runs at a time."""
    return per_run_batches(first_server_acks, runs["run_id"], frames)


def server_ack_delay_table(runs: pl.DataFrame, frames: RunRows, by: tuple[str, ...] = ("server_impl",)) -> pl.DataFrame:
    """imc24 Table 3's layout: one row per server implementation (``by``; add "mode" for the
    testbed's IACK/WFC server), one column per packet number space and repetition
    (``initial_1``, ...; the median if several runs share one); null = no ACK in that space
    (imc24's '-')."""
    keys = list(by)
    # A QIR log folder has no repetition level (<server>_<client>/<testcase>/): one repetition.
    per_run = runs.select("run_id", *keys, pl.col("repetition").fill_null(1)).join(
        first_server_acks_of_runs(runs, frames), on="run_id", how="inner"
    )
    per_repetition = per_run.group_by(*keys, "pn_space", "repetition").agg(pl.col("ack_delay_ms").median())
    wide = per_repetition.with_columns(
        (pl.col("pn_space") + "_" + pl.col("repetition").cast(pl.Utf8)).alias("column")
    ).pivot(on="column", index=keys, values="ack_delay_ms", sort_columns=True)
    # Servers that never sent an ACK in either space stay in the table, as all-null rows.
    return runs.select(keys).unique().join(wide, on=keys, how="left", nulls_equal=True).sort(keys)
