"""rethink's and tcpquic's measured artefacts (quicack.figures.rethink / tcpquic) and the wire-packet metrics under them
(quicack.metrics.return_path, quicack.metrics.cwnd), on real testbed runs: tests/data/ack_policy (nine 1 MB aioquic
downloads with a set ACK policy, client-side capture; no path profile, so the figures' own selections find nothing
and must say so) and, where it exists, the ACK-ratio preview dataset with the rethink runs."""

from __future__ import annotations

import shutil

import polars as pl
import pytest

from quicack.figures import rethink, tcpquic
from quicack.layout import run_groups
from quicack.metrics.ack_breakdown import ack_breakdown
from quicack.metrics.cwnd import cwnd_over_time
from quicack.metrics.return_path import (
    counted_median,
    packets_per_second,
    return_packet_sizes,
    return_volume,
    wire_packets,
)
from quicack.metrics.selection import rethink_runs
from quicack.stages.ingest import ingest_group
from tests.conftest import SAMPLE_RAW

# Every QUIC datagram the aioquic client sends in the handshake's first flight is padded to 1,200 B of UDP payload.
PADDED_INITIAL_IP_BYTES = 1228


@pytest.fixture(scope="module")
def tables(ack_policy_tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    return ack_policy_tables


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


def test_forward_data_packets_are_the_server_datagrams_after_the_first_rtt(
    tables: dict[str, pl.DataFrame], wire: pl.DataFrame
) -> None:
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
    padded = sizes.filter(pl.col("ip_bytes") == PADDED_INITIAL_IP_BYTES)
    assert padded["packets"].max() == 1 and sizes["packets"].sum() > 2000
    # ACK-only packets of the aioquic client: 20 IP + 8 UDP + short header + ACK frame + 16 tag, at least 51 B
    assert sizes["ip_bytes"].min() >= 51 and 55 <= counted_median(sizes, "ip_bytes") <= 70
    # counted, not listed: the median of the counts is the median of the packets written out one by one
    written_out = wire.filter((pl.col("direction") == "c2s") & pl.col("after_first_rtt"))["ip_bytes"]
    assert sizes["packets"].sum() == written_out.len()
    assert counted_median(sizes, "ip_bytes") == written_out.median()
    for run_id, run in sizes.group_by("run_id"):
        packets = wire.filter(
            (pl.col("run_id") == run_id[0]) & (pl.col("direction") == "c2s") & pl.col("after_first_rtt")
        )
        assert counted_median(run, "ip_bytes") == packets["ip_bytes"].median()


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
    "rethink-fig1": lambda t: rethink.rethink_fig1_return_packet_sizes(
        t["runs"], t["datagrams"], t.get("tcp_segments")
    ),
    "rethink-tab3": lambda t: rethink.rethink_tab3_return_volume(t["runs"], t["datagrams"], t.get("tcp_segments")),
    "rethink-fig2": lambda t: rethink.rethink_fig2_return_overhead(t["runs"], t["ack_breakdown"]),
    "rethink-fig3": lambda t: rethink.rethink_fig3_return_packet_rate(t["runs"], t["datagrams"], t.get("tcp_segments")),
    "rethink-fig4": lambda t: rethink.rethink_fig4_cwnd(t["runs"], t["metrics_logged"]),
    "rethink-fig5": lambda t: rethink.rethink_fig5_forward_rate(t["runs"], t["datagrams"]),
    "tcpquic-fig-cdf": lambda t: tcpquic.tcpquic_fig_cdf_ack_sizes(t["runs"], t["datagrams"], t.get("tcp_segments")),
    "tcpquic-fig-volume": lambda t: tcpquic.tcpquic_fig_volume_acks(t["runs"], t["datagrams"], t.get("tcp_segments")),
}


@pytest.mark.parametrize("artefact", sorted(RENDERS))
def test_without_rethink_runs_each_artefact_is_a_placeholder_naming_them(
    tables: dict[str, pl.DataFrame], artefact: str
) -> None:
    assert rethink_runs(tables["runs"]).is_empty()
    rendered = RENDERS[artefact]({**tables, "ack_breakdown": pl.DataFrame()})
    assert rendered.artefact is None and "rethink-satellite" in rendered.missing


@pytest.fixture(scope="module")
def embedded_rethink(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pl.DataFrame]:
    """The embedded dataset's rethink runs (data/sample/raw): the quinn pair, ngtcp2 from quiche and the Linux TCP
    receivers, every rethink path profile (recorded; QUIC client side cut to headers, TCP both sides), copied into a
    raw folder of their own."""
    raw = tmp_path_factory.mktemp("rethink") / "raw"
    for pair in ("quinn_quinn", "quiche_ngtcp2", "linux-tcp_linux-tcp"):
        for testcase in (SAMPLE_RAW / pair).glob("*-rethink-satellite*"):
            shutil.copytree(testcase, raw / pair / testcase.name)
    parts: dict[str, list[pl.DataFrame]] = {}
    for group in run_groups(raw):
        for name, frame in ingest_group(raw, group, "sample").items():
            parts.setdefault(name, []).append(frame)
    tables = {name: pl.concat(frames, how="diagonal_relaxed") for name, frames in parts.items()}
    tables["ack_breakdown"] = ack_breakdown(
        tables["datagrams"], tables["packets"], tables["frames"], tables["tcp_segments"]
    )
    return tables


@pytest.mark.parametrize("artefact", sorted(RENDERS))
def test_on_the_embedded_rethink_runs_each_artefact_is_drawn(
    embedded_rethink: dict[str, pl.DataFrame], artefact: str
) -> None:
    assert set(rethink_runs(embedded_rethink["runs"])["protocol"]) == {"quic", "tcp"}
    rendered = RENDERS[artefact](embedded_rethink)
    assert not rendered.missing and rendered.artefact is not None


def test_table3_sets_tcp_after_the_router_beside_quic(embedded_rethink: dict[str, pl.DataFrame]) -> None:
    table = RENDERS["rethink-tab3"](embedded_rethink).artefact
    no_loss = {row["configuration"]: row for row in table.filter(pl.col("loss") == "no loss").iter_rows(named=True)}
    # AR 1:10 cuts the QUIC receiver's return bytes about 4×; the router's thinning cuts Linux TCP's less (its ACKs
    # are ≈ 1 per segment before the router, so 1:5 thinning leaves about 1 per 4)
    assert 3.5 < no_loss["quinn AR 1:2"]["return_kb"] / no_loss["quinn AR 1:10"]["return_kb"] < 5
    assert no_loss["linux-tcp AR 1:10"]["return_kb"] < 0.8 * no_loss["linux-tcp AR 1:2"]["return_kb"]
    assert all(row["paper"] for row in no_loss.values())


def test_counted_median_hand_made_counts() -> None:
    """Hand-made counts (an even total whose middle values differ, an odd one, none): the written-out median."""
    counts = pl.DataFrame({"ip_bytes": [60, 52, 80], "packets": [2, 2, 0]})
    assert counted_median(counts, "ip_bytes") == pl.Series([52, 52, 60, 60]).median() == 56.0
    assert counted_median(counts.with_columns(pl.Series("packets", [2, 3, 0])), "ip_bytes") == 52.0
    assert counted_median(counts.with_columns(pl.lit(0).alias("packets")), "ip_bytes") is None
