"""``handshake_runs``: one row per run with the handshake facts imc24 §4 and Appendices E–F use.

Everything timed here comes from the client-side capture (sim_left), so it exists for every
client, including those whose qlogs carry no frames (quinn); the RFC 9002 estimator values come
from ``connections`` (client qlog).
"""

from __future__ import annotations

import polars as pl

from quicack.layout.vantage import SIM_LEFT
from quicack.metrics.pto import client_pto_expiries_from_qlog, pto_counts_logged, retransmission_summary
from quicack.schema import HANDSHAKE_RUNS

CLIENT_SIDE = SIM_LEFT
# The client's first flight (one or two datagrams: a ClientHello beyond 1200 bytes is split) leaves
# in one burst; anything the client sends later without having heard from the server is a probe.
FIRST_FLIGHT_BURST_MS = 1.0


def server_ack_and_hello(frames: pl.DataFrame) -> pl.DataFrame:
    """Per run at the client-side capture: when the first server ACK and the ServerHello arrived,
    and whether the first server packet was an instant ACK (ACK without CRYPTO)."""
    s2c = frames.filter(
        (pl.col("source") == "pcap") & (pl.col("vantage") == CLIENT_SIDE) & (pl.col("direction") == "s2c")
    )
    first_initial = (
        s2c.filter(pl.col("pn_space") == "initial")
        .group_by("run_id", "packet_number")
        .agg(
            pl.col("time_ms").min(),
            pl.col("frame_type").is_in(["ack", "ack_ecn"]).any().alias("has_ack"),
            (pl.col("frame_type") == "crypto").any().alias("has_crypto"),
        )
        .sort("run_id", "time_ms", "packet_number")
        .group_by("run_id", maintain_order=True)
        .agg((pl.col("has_ack") & ~pl.col("has_crypto")).first().alias("iack"))
    )
    timings = s2c.group_by("run_id").agg(
        pl.col("time_ms")
        .filter(pl.col("frame_type").is_in(["ack", "ack_ecn"]) & (pl.col("pn_space") == "initial"))
        .min()
        .alias("server_ack_ms"),
        pl.col("time_ms").filter(pl.col("tls_messages").list.contains("server_hello")).min().alias("server_hello_ms"),
    )
    return first_initial.join(timings, on="run_id", how="full", coalesce=True).with_columns(
        # IACK: the server's stack delay between sending the ACK and the ServerHello (Δt = 0 in
        # the no-loss scenario); WFC: 0 when ACK and ServerHello share the packet.
        (pl.col("server_hello_ms") - pl.col("server_ack_ms")).alias("ack_to_server_hello_ms")
    )


def first_flight_end(datagrams: pl.DataFrame, frames: pl.DataFrame) -> pl.DataFrame:
    """Per run: when the client's first flight ended at the client-side capture. The flight is its leading datagrams
    that each carry ClientHello bytes for the first time (Initial CRYPTO at offsets no earlier datagram carried); a
    probe re-sends offsets already sent, or only a PING. Where the capture shows no Initial CRYPTO (not decrypted),
    the datagrams of the first burst (``FIRST_FLIGHT_BURST_MS``) stand in. Chromium sends the second of its two
    ClientHello datagrams up to ~15 ms after the first on a busy machine: a burst rule took it for a probe."""
    c2s = datagrams.filter((pl.col("vantage") == CLIENT_SIDE) & (pl.col("direction") == "c2s"))
    crypto = frames.filter(
        (pl.col("source") == "pcap") & (pl.col("vantage") == CLIENT_SIDE) & (pl.col("direction") == "c2s")
        & (pl.col("pn_space") == "initial") & (pl.col("frame_type") == "crypto")
    ).select("run_id", "datagram_index", "offset")  # fmt: skip
    first_sent = crypto.group_by("run_id", "offset").agg(pl.col("datagram_index").min().alias("first_datagram"))
    per_datagram = (
        crypto.join(first_sent, on=["run_id", "offset"])
        .group_by("run_id", "datagram_index")
        .agg((pl.col("datagram_index") == pl.col("first_datagram")).all().alias("all_new"))
    )
    new_data = (
        c2s.select("run_id", "datagram_index", "time_ms")
        .join(per_datagram, on=["run_id", "datagram_index"], how="left")
        .sort("run_id", "datagram_index")
        .with_columns((~pl.col("all_new").fill_null(False)).cum_sum().over("run_id").alias("breaks"))
    )
    by_content = (
        new_data.filter(pl.col("breaks") == 0)
        .group_by("run_id")
        .agg(pl.col("time_ms").max().alias("first_flight_end_ms"))
    )
    by_burst = (
        c2s.filter(pl.col("time_ms") <= FIRST_FLIGHT_BURST_MS)
        .group_by("run_id")
        .agg(pl.col("time_ms").max().alias("burst_end_ms"))
    )
    return by_burst.join(by_content, on="run_id", how="left").select(
        "run_id", pl.coalesce("first_flight_end_ms", "burst_end_ms").alias("first_flight_end_ms")
    )


def default_pto_probe(datagrams: pl.DataFrame, frames: pl.DataFrame) -> pl.DataFrame:
    """Per run: the client's first probe if it came before any server datagram arrived — then the
    client had no RTT sample and its timer ran on the default PTO (imc24 Table 4) — else a lower
    bound for that default PTO (the client was still waiting when the server answered)."""
    left = datagrams.filter(pl.col("vantage") == CLIENT_SIDE)
    c2s = left.filter(pl.col("direction") == "c2s").join(first_flight_end(datagrams, frames), on="run_id", how="left")
    per_run = (
        c2s.group_by("run_id")
        .agg(
            pl.col("first_flight_end_ms").first(),
            pl.col("time_ms")
            .filter(pl.col("time_ms") > pl.col("first_flight_end_ms"))
            .min()
            .alias("first_later_datagram_ms"),
        )
        .join(
            left.filter(pl.col("direction") == "s2c")
            .group_by("run_id")
            .agg(pl.col("time_ms").min().alias("first_server_datagram_ms")),
            on="run_id",
            how="left",
        )
    )
    probe_first = pl.col("first_later_datagram_ms") < pl.col("first_server_datagram_ms").fill_null(float("inf"))
    return per_run.select(
        "run_id",
        "first_server_datagram_ms",
        pl.when(probe_first)
        .then(pl.col("first_later_datagram_ms") - pl.col("first_flight_end_ms"))
        .alias("default_pto_ms"),
        # No bound when the server answered before the client had sent all of its first flight (Chromium's second
        # ClientHello datagram can leave after the server's instant ACK on a busy machine).
        pl.when(~probe_first.fill_null(False) & (pl.col("first_server_datagram_ms") >= pl.col("first_flight_end_ms")))
        .then(pl.col("first_server_datagram_ms") - pl.col("first_flight_end_ms"))
        .alias("default_pto_lower_bound_ms"),
    )


def per_endpoint(summary: pl.DataFrame) -> pl.DataFrame:
    """Retransmission summary per direction → one row per run with client_/server_ columns."""
    columns = ("retransmitted_packets", "spurious_retransmissions", "pto_expiries", "first_probe_ms")
    wide = summary.pivot(on="direction", index="run_id", values=list(columns))
    renames = {f"{c}_{d}": f"{who}_{c}" for c in columns for d, who in (("c2s", "client"), ("s2c", "server"))}
    wide = wide.rename({k: v for k, v in renames.items() if k in wide.columns})
    return wide.with_columns([pl.lit(None).alias(v) for v in renames.values() if v not in wide.columns])


def handshake_runs(
    runs: pl.DataFrame, frames: pl.DataFrame, datagrams: pl.DataFrame, connections: pl.DataFrame, metrics: pl.DataFrame
) -> pl.DataFrame:
    client = connections.filter(pl.col("vantage") == "client").select(
        "run_id",
        "ttfb_ms",
        "ttfb_capture_ms",
        "first_rtt_ms",
        "first_pto_ms",
        "first_pto_logged_ms",
        "rtt_samples",
        "rtt_samples_logged",
    )
    return HANDSHAKE_RUNS.conform(
        runs.select(
            "run_id", "client_impl", "server_impl", "mode", "scenario", "rtt_ms", "repetition", "status",
            "calibrated_second_client_flight", "implementation_conditions",
        )
        .join(server_ack_and_hello(frames), on="run_id", how="left")
        .join(default_pto_probe(datagrams, frames), on="run_id", how="left")
        .join(client, on="run_id", how="left")
        .join(per_endpoint(retransmission_summary(frames, datagrams)), on="run_id", how="left")
        .join(
            pto_counts_logged(metrics.filter(pl.col("vantage") == "client")).select(
                "run_id", pl.col("pto_expiries_logged").alias("client_pto_expiries_logged")
            ),
            on="run_id",
            how="left",
        )
        .join(client_pto_expiries_from_qlog(frames), on="run_id", how="left")
        .sort("run_id")
    )
