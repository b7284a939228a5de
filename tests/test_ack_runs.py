"""The ``ack_runs`` table (quicack.metrics.ack_runs) on the nine real 1 MB downloads of tests/data/ack_policy: the
aioquic receiver with a set ACK policy (AR 1, 2, 10, 20 at 25 ms; AR 100 with a 10 ms and an RTT/4 delay; D, NR, 3A at
AR 10 under 2 % forward loss), captured at the client side of the emulated link, with the client's qlog."""

from __future__ import annotations

import polars as pl
import pytest

from quicack.metrics.ack_breakdown import ack_breakdown
from quicack.metrics.ack_runs import quic_ack_runs, with_tcp_rows
from quicack.schema import ACK_RUNS


@pytest.fixture(scope="module")
def tables(ack_policy_tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    return ack_policy_tables


@pytest.fixture(scope="module")
def rows(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    computed = quic_ack_runs(tables["runs"], tables["datagrams"], tables["packets"], tables["frames"])
    return computed.join(
        tables["runs"].select("run_id", "scenario", "ack_ratio", "ack_delay_ms", "rtt_ms"), on="run_id"
    )


def test_one_row_per_run_at_the_client_side_of_the_link(rows: pl.DataFrame, tables) -> None:
    assert rows.height == tables["runs"].height == 9
    assert set(rows["vantage"]) == {"sim_left"} and set(rows["protocol"]) == {"quic"}
    assert quic_ack_runs(
        tables["runs"], tables["datagrams"].clear(), tables["packets"], tables["frames"]
    ).columns == list(ACK_RUNS.schema)


def test_the_measured_ack_ratio_is_the_configured_one_without_loss(rows: pl.DataFrame) -> None:
    swept = rows.filter((pl.col("scenario") == "ack_ratio") & (pl.col("ack_delay_ms") == 25.0)).sort("ack_ratio")
    assert swept["ack_ratio"].to_list() == [1, 2, 10, 20]
    assert (swept["measured_ack_ratio_median"] == swept["ack_ratio"].cast(pl.Float64)).all()
    assert (swept["measured_ack_ratio_p25"] <= swept["measured_ack_ratio_median"]).all()
    # fewer ACKs, fewer return bytes at a larger ratio
    assert swept["ack_packets"].is_sorted(descending=True) and swept["return_ip_bytes"].is_sorted(descending=True)


def test_ack_triggers_from_the_qlog_add_up_to_the_acks_on_the_wire(rows: pl.DataFrame, tables) -> None:
    captured_acks = (
        tables["frames"]
        .filter((pl.col("source") == "pcap") & (pl.col("direction") == "c2s") & (pl.col("frame_type") == "ack"))
        .group_by("run_id")
        .len("captured")
    )
    joined = rows.join(captured_acks, on="run_id")
    assert (joined["ack_trigger_source"] == "qlog").all()
    triggered = (
        joined["acks_by_packet_threshold"]
        + joined["acks_by_delay_timer"]
        + joined["acks_by_reordering"]
        + joined["acks_by_other"]
    )
    assert (triggered == joined["captured"]).all()
    # ACK-only packets are all of them but the few that ride with the client's own frames (request, flow control;
    # under loss also its probes)
    carried_along = joined["captured"] - joined["ack_packets"]
    assert (carried_along.filter(joined["scenario"] == "ack_ratio").is_between(0, 5)).all()
    assert (carried_along.is_between(0, 0.1 * joined["captured"])).all()


def test_the_delay_timer_sends_the_acks_when_the_ratio_is_never_reached(rows: pl.DataFrame) -> None:
    """AR 100 over a 1 MB download: the window never lets 100 packets arrive within the delay, the timer sends them
    all."""
    large = rows.filter(pl.col("ack_ratio") == 100)
    assert (
        large.height == 2
        and (large["acks_by_packet_threshold"] == 0).all()
        and (large["acks_by_delay_timer"] > 30).all()
    )
    assert (rows.filter(pl.col("ack_ratio") == 1)["acks_by_delay_timer"] == 0).all()


def test_return_share_is_what_ack_breakdown_counts(rows: pl.DataFrame, tables) -> None:
    breakdown = ack_breakdown(tables["datagrams"], tables["packets"], tables["frames"]).filter(
        pl.col("vantage") == "sim_left"
    )
    per_direction = breakdown.group_by("run_id").agg(
        pl.col("bytes").filter(pl.col("direction") == "c2s").sum().alias("c2s"),
        pl.col("bytes").filter(pl.col("direction") == "s2c").sum().alias("s2c"),
        pl.col("bytes").filter((pl.col("direction") == "c2s") & pl.col("after_first_rtt")).sum().alias("c2s_after"),
    )
    joined = rows.join(per_direction, on="run_id")
    assert (joined["return_ip_bytes"] == joined["c2s"]).all() and (joined["forward_ip_bytes"] == joined["s2c"]).all()
    assert (joined["return_ip_bytes_after_first_rtt"] == joined["c2s_after"]).all()
    assert ((joined["return_percent_of_forward"] - 100 * joined["c2s"] / joined["s2c"]).abs() < 1e-9).all()
    # AR 2 returns about 2.8 % of the forward bytes (ackfreq22: ≈ 3 %), AR 10 about a third of that (not a fifth:
    # handshake and flow-control bytes are fixed)
    ar2 = rows.filter(pl.col("ack_ratio") == 2)["return_percent_of_forward"].item()
    ar10 = rows.filter((pl.col("ack_ratio") == 10) & (pl.col("scenario") == "ack_ratio"))[
        "return_percent_of_forward"
    ].item()
    assert 2.5 < ar2 < 3.2 and 3.0 < ar2 / ar10 < 4.0


def test_forward_data_packets_are_the_packets_the_client_received(rows: pl.DataFrame, tables) -> None:
    """The server's 1-RTT packets are cut to a snap length on the wire; the client's qlog counts what it received."""
    received = (
        tables["packets"]
        .filter((pl.col("source") == "qlog") & (pl.col("event") == "received") & (pl.col("pn_space") == "appdata")
                & pl.col("ack_eliciting"))  # fmt: skip
        .group_by("run_id")
        .len("received")
    )
    joined = rows.join(received, on="run_id")
    assert ((joined["forward_data_packets"] - joined["received"]).abs() <= 5).all()


def test_download_time_lies_inside_the_capture_and_loss_slows_it(rows: pl.DataFrame, tables) -> None:
    capture_end = tables["datagrams"].group_by("run_id").agg(pl.col("time_ms").max().alias("capture_end_ms"))
    joined = rows.join(capture_end, on="run_id")
    # at least the handshake and the request (2 RTTs) plus 1 MB at 10 Mbit/s (≈ 840 ms)
    assert (joined["download_time_ms"] > 2 * joined["rtt_ms"] + 800).all()
    assert (joined["download_time_ms"] < joined["capture_end_ms"]).all()
    no_loss = rows.filter(pl.col("scenario") == "ack_ratio")["download_time_ms"].max()
    assert rows.filter(pl.col("scenario") == "ack_ratio_loss")["download_time_ms"].min() > 2 * no_loss
    assert (rows["forward_data_packets_per_s"] * rows["download_time_ms"] / 1000 >= rows["forward_data_packets"]).all()


def test_loss_clusters_are_the_gaps_in_what_the_client_received(rows: pl.DataFrame, tables) -> None:
    """Runs of consecutive application packet numbers missing from the client's received packets (its qlog)."""
    received = tables["packets"].filter(
        (pl.col("source") == "qlog") & (pl.col("event") == "received") & (pl.col("pn_space") == "appdata")
    )
    gaps = (
        received.select("run_id", "packet_number")
        .unique()
        .sort("run_id", "packet_number")
        .with_columns((pl.col("packet_number").diff().over("run_id") > 1).alias("gap"))
        .group_by("run_id")
        .agg(pl.col("gap").sum().alias("gaps"))
    )
    joined = rows.join(gaps, on="run_id")
    assert (joined["loss_clusters"] == joined["gaps"]).all()
    assert rows.filter(pl.col("scenario") == "ack_ratio_loss")["loss_clusters"].min() >= 5


def test_tcp_rows_join_the_quic_rows(rows: pl.DataFrame) -> None:
    quic = rows.select(ACK_RUNS.schema.keys())
    tcp = quic.head(1).with_columns(pl.lit("tcp").alias("protocol"), pl.lit("tcp/run").alias("run_id"))
    assert with_tcp_rows(quic, None).equals(quic)
    assert with_tcp_rows(quic, tcp)["protocol"].value_counts().sort("protocol")["count"].to_list() == [9, 1]


def test_triggers_inferred_from_the_capture_match_the_receivers_log_without_loss(rows: pl.DataFrame, tables) -> None:
    """The same downloads with the receiver's reasons removed from its log (as for an implementation that does not
    log them): the capture's rule (advance ≥ AR: threshold, less: timer) agrees with the log within one ACK per run
    while nothing is lost (the first ACK has no earlier one to advance from and counts as 'other')."""
    unlogged = tables["frames"].with_columns(pl.lit(None, pl.Utf8).alias("ack_reason"))
    inferred = quic_ack_runs(tables["runs"], tables["datagrams"], tables["packets"], unlogged)
    assert set(inferred["ack_trigger_source"]) == {"inferred"} and inferred["acks_by_reordering"].is_null().all()
    both = rows.filter(pl.col("scenario") == "ack_ratio").join(inferred, on="run_id", suffix="_inferred")
    for trigger in ("acks_by_packet_threshold", "acks_by_delay_timer"):
        assert ((both[trigger] - both[f"{trigger}_inferred"]).abs() <= 1).all(), trigger
