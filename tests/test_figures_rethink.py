"""rethink's and tcpquic's measured artefacts (quicack.figures.rethink / tcpquic) and the wire-packet metrics under them
(quicack.metrics.return_path, quicack.metrics.cwnd), on real testbed runs: tests/data/ack_policy (nine 1 MB aioquic
downloads with a set ACK policy, client-side capture; no path profile, so the figures' own selections find nothing
and must say so) and, where it exists, the ACK-ratio preview dataset with the rethink runs."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from quicack.figures import rethink, tcpquic
from quicack.figures.data import read_view_if_present, read_views
from quicack.ingest import ingest_group
from quicack.layout import run_groups
from quicack.metrics.cwnd import cwnd_over_time
from quicack.metrics.return_path import packets_per_second, return_packet_sizes, return_volume, wire_packets
from quicack.metrics.selection import rethink_runs

RAW = Path(__file__).parent / "data" / "ack_policy" / "raw"
PREVIEW_DB = Path("/work/ackratio-preview/results/preview/quicack.duckdb")
# Every QUIC datagram the aioquic client sends in the handshake's first flight is padded to 1,200 B of UDP payload.
PADDED_INITIAL_IP_BYTES = 1228


@pytest.fixture(scope="module")
def tables() -> dict[str, pl.DataFrame]:
    parts: dict[str, list[pl.DataFrame]] = {}
    for group in run_groups(RAW):
        for name, frame in ingest_group(RAW, group, "ack_policy_fixture").items():
            parts.setdefault(name, []).append(frame)
    return {name: pl.concat(frames, how="vertical_relaxed") for name, frames in parts.items()}


@pytest.fixture(scope="module")
def wire(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    return wire_packets(tables["datagrams"])


def _loss_free_by_ratio(tables: dict[str, pl.DataFrame], frame: pl.DataFrame) -> dict[int, dict]:
    runs = tables["runs"].filter((pl.col("scenario") == "ack_ratio") & pl.col("ack_delay_ms").eq(25.0))
    return {row["ack_ratio"]: row for row in frame.join(runs.select("run_id", "ack_ratio"), on="run_id").to_dicts()}


def test_return_volume_falls_with_the_ack_ratio(tables: dict[str, pl.DataFrame], wire: pl.DataFrame) -> None:
    volume = _loss_free_by_ratio(tables, return_volume(wire))
    assert set(volume) == {1, 2, 10, 20}
    returned = {ratio: row["return_ip_bytes"] for ratio, row in volume.items()}
    # each ACK covers AR packets: halving the ACKs (1 → 2) about halves the bytes, AR 10 cuts more than 2 again
    assert 1.6 < returned[1] / returned[2] < 2.4
    assert returned[2] / returned[10] > 2.5 and returned[10] > returned[20]
    for row in volume.values():
        assert row["vantage"] == "sim_left" and row["protocol"] == "quic"
        assert row["forward_ip_bytes"] > 1_048_576  # the file plus headers, at the client side
        assert row["return_percent_of_forward"] == pytest.approx(100 * row["return_ip_bytes"] / row["forward_ip_bytes"])


def test_forward_data_packets_are_the_server_datagrams_after_the_first_rtt(tables: dict[str, pl.DataFrame], wire: pl.DataFrame) -> None:
    volume = return_volume(wire)
    # 1 MB in datagrams of at most 1,200 B of UDP payload: at least 874; a few server ACKs / control packets beside
    assert volume["forward_data_packets"].min() >= 874 and volume["forward_data_packets"].max() < 1000
    server = wire.filter(pl.col("direction") == "s2c")
    assert server.filter(~pl.col("after_first_rtt"))["carries_data"].any() is False


def test_return_sizes_leave_out_the_padded_handshake(wire: pl.DataFrame) -> None:
    sizes = return_packet_sizes(wire)
    handshake = wire.filter((pl.col("direction") == "c2s") & ~pl.col("after_first_rtt"))
    assert handshake["ip_bytes"].max() == PADDED_INITIAL_IP_BYTES
    # the boundary is ack_breakdown's: the client's answer to the server's first flight (an Initial, so padded) is the
    # first packet after it; at most that one is full-sized, the rest are the ACKs the figure is about
    padded = sizes.filter(pl.col("ip_bytes") == PADDED_INITIAL_IP_BYTES).group_by("run_id").len()
    assert padded["len"].max() == 1 and sizes.height > 2000
    # ACK-only packets of the aioquic client: 20 IP + 8 UDP + short header + ACK frame + 16 tag, at least 51 B
    assert sizes["ip_bytes"].min() >= 51 and 55 <= sizes["ip_bytes"].median() <= 70


def test_packets_per_second_count_every_packet_once(tables: dict[str, pl.DataFrame], wire: pl.DataFrame) -> None:
    rates = packets_per_second(wire, "c2s")
    per_run = rates.group_by("run_id").agg(pl.col("packets").sum())
    counted = wire.filter(pl.col("direction") == "c2s").group_by("run_id").len()
    assert per_run.join(counted, on="run_id").filter(pl.col("packets") != pl.col("len")).is_empty()
    # bins are consecutive from 0 (a silent second counts 0)
    assert rates.group_by("run_id").agg((pl.col("second").max() + 1 == pl.len()).alias("dense"))["dense"].all()
    busiest = _loss_free_by_ratio(tables, rates.group_by("run_id").agg(pl.col("packets").max()))
    assert 1.6 < busiest[1]["packets"] / busiest[2]["packets"] < 2.4


def test_cwnd_over_time_reads_the_logged_window(tables: dict[str, pl.DataFrame]) -> None:
    client = cwnd_over_time(tables["metrics_logged"], vantage="client")
    assert client["run_id"].n_unique() == 9 and (client["cwnd_bytes"] > 0).all()
    assert client.group_by("run_id").agg(pl.col("time_s").min())["time_s"].max() >= 0.0
    # the fixture keeps no server qlog: no window of the sender
    assert cwnd_over_time(tables["metrics_logged"]).is_empty()


def test_return_size_cdf_draws_one_line_per_configuration(tables: dict[str, pl.DataFrame], wire: pl.DataFrame) -> None:
    runs = tables["runs"].with_columns(pl.format("aioquic AR 1:{}", pl.col("ack_ratio")).alias("configuration"))
    sizes = return_packet_sizes(wire).join(runs.select("run_id", "configuration"), on="run_id")
    fig = rethink.return_size_cdf(sizes, "test")
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert len(labels) == sizes["configuration"].n_unique() and all("median" in label for label in labels)


RENDERS = {
    "rethink-fig1": lambda t: rethink.rethink_fig1_return_packet_sizes(t["runs"], t["datagrams"]),
    "rethink-tab3": lambda t: rethink.rethink_tab3_return_volume(t["runs"], t["datagrams"]),
    "rethink-fig2": lambda t: rethink.rethink_fig2_return_overhead(t["runs"], t["ack_breakdown"]),
    "rethink-fig3": lambda t: rethink.rethink_fig3_return_packet_rate(t["runs"], t["datagrams"]),
    "rethink-fig4": lambda t: rethink.rethink_fig4_cwnd(t["runs"], t["metrics_logged"]),
    "rethink-fig5": lambda t: rethink.rethink_fig5_forward_rate(t["runs"], t["datagrams"]),
    "tcpquic-fig-cdf": lambda t: tcpquic.tcpquic_fig_cdf_ack_sizes(t["runs"], t["datagrams"]),
    "tcpquic-fig-volume": lambda t: tcpquic.tcpquic_fig_volume_acks(t["runs"], t["datagrams"]),
}


@pytest.mark.parametrize("artefact", sorted(RENDERS))
def test_without_rethink_runs_each_artefact_is_a_placeholder_naming_them(tables: dict[str, pl.DataFrame], artefact: str) -> None:
    assert rethink_runs(tables["runs"]).is_empty()
    rendered = RENDERS[artefact]({**tables, "ack_breakdown": pl.DataFrame()})
    assert rendered.artefact is None and "rethink-satellite" in rendered.missing


def _preview_tables() -> dict[str, pl.DataFrame] | None:
    if not PREVIEW_DB.exists():
        return None
    views = read_views(PREVIEW_DB, "runs", "datagrams", "ack_breakdown", "metrics_logged")
    if rethink_runs(views["runs"]).filter(pl.col("status") == "ok").is_empty():
        return None
    return views | {"tcp_segments": read_view_if_present(PREVIEW_DB, "tcp_segments")}


@pytest.mark.parametrize("artefact", sorted(RENDERS))
def test_on_the_rethink_runs_each_artefact_is_drawn(artefact: str) -> None:
    preview = _preview_tables()
    if preview is None:
        pytest.skip("the ACK-ratio preview dataset has no rethink-satellite runs yet")
    rendered = RENDERS[artefact](preview)
    assert not rendered.missing and rendered.artefact is not None
