"""imc24 Table 2's full matrix and the measured sweet spot (Fig. 4) on the embedded dataset (data/sample/raw):
every Table 2 cell measured by every client, the Δt sweep's cells, and the loss runs that drop the client's
Finished flight by content. The tables are built once with the pipeline's own stage functions on the five
client groups against imc24's IACK/WFC server (quic-go with quicack's iack.patch)."""

from __future__ import annotations

import itertools
import json

import polars as pl
import pytest

from quicack.claims.imc24_claims import sweet_spot_reduction_ratio, sweet_spot_spurious_agreement
from quicack.metrics import guidelines, sweet_spot
from quicack.metrics.selection import delay_sweep_runs
from quicack.models import recovery
from quicack.pcap.capture_file import LinkRecord, open_capture, read_link_records
from quicack.pcap.decode import decode_capture
from quicack.reference import paper_table
from quicack.testbed.impair import carries_short_header
from tests.conftest import SAMPLE_RAW

CLIENTS = ("aioquic", "quic-go", "go-x-net", "ngtcp2", "quinn", "quiche")
SERVER = "quic-go"  # imc24's server serves every imc24 run
SWEEP_DELAYS_MS = (0.0, 5.0, 20.0, 50.0, 100.0, 200.0, 400.0)
SWEEP_RTTS_MS = (1.0, 9.0, 20.0, 100.0)
LINKTYPE_ETHERNET = 1


@pytest.fixture(scope="module")
def tables(sample_tables) -> dict[str, pl.DataFrame]:
    return sample_tables(
        [f"{SERVER}_{client}" for client in CLIENTS], ("runs", "frames", "datagrams", "handshake_runs")
    )


def test_every_table2_cell_is_measured_by_every_client(tables):
    compared = guidelines.compared_configurations(tables["handshake_runs"], tables["runs"], tables["datagrams"])
    clients = compared.group_by("certificate", "condition").agg(pl.col("client_impl").unique().sort())
    assert clients.height == len(guidelines.CERTIFICATE_ROWS) * len(guidelines.CONDITION_COLUMNS)
    assert all(sorted(row) == sorted(CLIENTS) for row in clients["client_impl"].to_list()), clients
    table = guidelines.guidelines_beside_paper(
        tables["handshake_runs"], tables["runs"], paper_table("imc24", "tab02"), tables["datagrams"]
    )
    assert "not measured" not in table["ours"].to_list() and table["agrees"].is_in(["yes", "no"]).all()


def test_one_datagram_client_hellos_put_the_large_certificate_above_every_limit(tables):
    """Every client offers X25519 alone (runs.client_key_share, as the paper's 2024 clients), so its ClientHello
    fits one datagram and its amplification limit (3 × that first flight) is 3,600–3,840 B: the 5,113 B
    certificate of the `*_large` runs is above it for all six."""
    classified = guidelines.classify_configurations(tables["runs"], tables["datagrams"])
    large = classified.filter(pl.col("scenario") == "drop_server_flight_large")
    assert sorted(large["client_impl"].unique().to_list()) == sorted(CLIENTS)
    assert (large["certificate"] == guidelines.ABOVE).all()
    assert large["amplification_limit_bytes"].is_between(3 * 1200, 5113, closed="left").all()


def test_short_header_detection_matches_the_decoder_on_a_recorded_capture():
    """impair.carries_short_header (the content rule's test, no keys) agrees with the capture decoder's packet
    types on every datagram of a recorded run, including go-x-net's zero-padded ClientHello datagrams."""
    run = SAMPLE_RAW / f"{SERVER}_go-x-net" / "noloss-iack-rtt9ms-10KB-hq" / "1"
    capture = run / "sim" / "trace_node_left.pcap.gz"
    kinds: dict[tuple[int, int], set[str]] = {}
    for batch in decode_capture(capture, [run / "client" / "keys.log"], "x"):
        for time_ns, packet_type in batch.packets.join(batch.datagrams, on=["direction", "datagram_index"]).select(
            "time_abs_ns", "packet_type"
        ).iter_rows():
            kinds.setdefault(time_ns, set()).add(packet_type)
    with open_capture(capture) as stream:
        records = [r for r in read_link_records(stream) if isinstance(r, LinkRecord)]
    assert records and all(r.linktype == LINKTYPE_ETHERNET for r in records)
    checked = [
        (carries_short_header(r.data[14:]), "1rtt" in kinds[r.time_abs_ns]) for r in records if r.time_abs_ns in kinds
    ]
    assert len(checked) == len(records) and all(ours == decoder for ours, decoder in checked)
    assert any(decoder for _, decoder in checked) and not all(decoder for _, decoder in checked)


def test_sweet_spot_has_a_measured_cell_per_delay_and_rtt(tables):
    cells = sweet_spot.sweet_spot_cells(delay_sweep_runs(tables["handshake_runs"], tables["runs"]))
    assert set(cells.select("cert_delay_ms", "rtt_ms").iter_rows()) == set(
        itertools.product(SWEEP_DELAYS_MS, SWEEP_RTTS_MS)
    )
    assert (cells["iack_runs"] >= 2).all() and (cells["wfc_runs"] >= 2).all()
    assert cells["measured_reduction_ms"].is_not_null().all() and cells["spurious_agrees"].is_not_null().all()
    # The model's prediction beside each cell, from quicack.models.recovery.
    row = cells.filter((pl.col("cert_delay_ms") == 50.0) & (pl.col("rtt_ms") == 9.0)).row(0, named=True)
    assert row["model_reduction_ms"] == pytest.approx(recovery.first_pto_reduction_ms(9.0, 50.0))
    assert row["model_spurious"] == recovery.instant_ack_is_spurious(9.0, 50.0)


def test_sweet_spot_follows_the_model_where_the_default_pto_does_not_interfere(tables):
    """Every IACK run probes at Δt ≥ 3·RTT for RTT ≥ 9 ms and none at Δt < 3·RTT; where RTT + Δt stays below
    both clients' default PTO (≥ 200 ms) the measured reduction is the model's 3·Δt within 10 %, or within 3 ms
    where 10 % is less: ngtcp2 logs its PTO in whole milliseconds (at Δt 5 ms, 9 ms RTT: 12.9 ms for 15)."""
    cells = sweet_spot.sweet_spot_cells(delay_sweep_runs(tables["handshake_runs"], tables["runs"]))
    rtt9_up = cells.filter(pl.col("rtt_ms") >= 9.0)
    assert (rtt9_up["spurious_agrees"]).all()
    below_default_pto = cells.filter(
        (pl.col("cert_delay_ms") > 0) & (pl.col("cert_delay_ms") + pl.col("rtt_ms") < 150.0)
    )
    error_ms = (below_default_pto["measured_reduction_ms"] - below_default_pto["model_reduction_ms"]).abs()
    allowed_ms = (0.1 * below_default_pto["model_reduction_ms"]).clip(lower_bound=3.0)
    assert below_default_pto.height >= 10 and (error_ms <= allowed_ms).all(), below_default_pto


def test_sweet_spot_claims_are_measured(tables):
    spurious = sweet_spot_spurious_agreement(tables)
    ratio = sweet_spot_reduction_ratio(tables)
    assert spurious.runs > 100 and 0.9 <= spurious.low <= 1.0
    assert ratio.runs == spurious.runs and 0.9 <= ratio.low <= 1.2


def test_run_json_records_what_the_client_side_only_runs_kept():
    run = SAMPLE_RAW / f"{SERVER}_quic-go" / "noloss_delay_50ms-iack-rtt9ms-10KB-h3" / "1"
    meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
    assert meta["testbed"]["server_side_capture"] is False and meta["cert_delay_ms"] == 50.0
    assert (run / "sim" / "trace_node_left.pcap.gz").exists() and not (
        run / "sim" / "trace_node_right.pcap.gz"
    ).exists()
    assert not (run / "server").exists()  # no server qlog, and its keylog duplicated the client's


# imc24 Figs. 5-7 and 16 at 9 ms: repetitions 4-10 were added to the recorded groups (config `kept_repetitions`) and
# left the embedded dataset when the dataset 'paper''s part M recorded these cells at 100 repetitions
# (tools/repack_sample_34.py trim): three remain, each with the client-side capture.
MAIN_SCENARIOS = ("noloss", "amplification", "drop_server_flight", "drop_client_flight")
KEPT_AT_9MS = 3


def test_the_9ms_cells_keep_the_three_repetitions_recorded_with_both_captures(tables):
    runs = tables["handshake_runs"].filter(pl.col("scenario").is_in(MAIN_SCENARIOS) & (pl.col("rtt_ms") == 9.0))
    per_configuration = runs.group_by("client_impl", "mode", "scenario").agg(
        (pl.col("status") == "ok").sum().alias("ok"),
        pl.col("ttfb_capture_ms").is_not_null().sum().alias("with_capture_ttfb"),
        pl.col("first_rtt_ms").is_not_null().sum().alias("with_first_sample"),
    )
    assert per_configuration.height == len(CLIENTS) * 2 * len(MAIN_SCENARIOS)
    assert (per_configuration["ok"] == KEPT_AT_9MS).all(), per_configuration
    assert (per_configuration["with_capture_ttfb"] == KEPT_AT_9MS).all(), per_configuration
    # Every client but quinn (no frames in its qlog) has its first RTT sample in all three.
    sampled = per_configuration.filter(pl.col("client_impl") != "quinn")
    assert (sampled["with_first_sample"] == KEPT_AT_9MS).all(), sampled


@pytest.mark.parametrize("client", CLIENTS)
def test_trimmed_groups_list_the_kept_repetitions_and_say_where_the_others_went(client):
    for group in sorted((SAMPLE_RAW / f"{SERVER}_{client}").glob("*-rtt9ms-*")):
        if group.name.split("-", 1)[0] not in MAIN_SCENARIOS:
            continue
        summary = json.loads((group / "group.json").read_text(encoding="utf-8"))
        assert [r["repetition"] for r in summary["runs"]] == list(range(1, KEPT_AT_9MS + 1))
        assert "part M" in summary["trimmed"]
        assert sorted(int(p.name) for p in group.iterdir() if p.is_dir()) == list(range(1, KEPT_AT_9MS + 1))
        metas = {rep: json.loads((group / str(rep) / "run.json").read_text(encoding="utf-8"))
                 for rep in range(1, KEPT_AT_9MS + 1)}  # fmt: skip
        # What the impairment program really dropped in each run is the group's list.
        assert len({tuple(meta["drop_to_server"]) for meta in metas.values()}) == 1
        assert all(meta["impairment"]["c2s"]["dropped_indices"] == meta["drop_to_server"] for meta in metas.values())
        for rep, meta in metas.items():
            # Recorded with both captures; the embedded dataset's first repacking (issue 34) kept the server side of
            # the first alone, and run.json says so.
            assert (group / str(rep) / "sim" / "trace_node_right.pcap.gz").exists() is (rep == 1)
            assert (group / str(rep) / "sim" / "trace_node_left.pcap.gz").exists()
            cut = meta["testbed"].get("cut_after_recording", [])
            assert (len(cut) == 1 and "server-side capture removed" in cut[0]) is (rep > 1), (rep, cut)


def test_fig07_spread_is_a_bootstrap_interval_of_the_median_difference(tables):
    from quicack.claims.imc24_claims import ttfb_difference
    from quicack.metrics import summary

    runs = tables["handshake_runs"].filter((pl.col("scenario") == "drop_client_flight") & (pl.col("rtt_ms") == 9.0))
    intervals = summary.mode_difference_interval(runs, "ttfb_capture_ms", ["client_impl"])
    ranges = runs.group_by("client_impl", "mode").agg(
        (pl.col("ttfb_capture_ms").max() - pl.col("ttfb_capture_ms").min()).alias("range")
    )
    widest = ranges.group_by("client_impl").agg(pl.col("range").sum())
    checked = intervals.join(widest, on="client_impl")
    assert checked.height == len(CLIENTS)
    for row in checked.iter_rows(named=True):
        assert row["wfc_minus_iack_low"] <= row["wfc_minus_iack"] <= row["wfc_minus_iack_high"]
        # A resampled median lies within its mode's runs, so the interval is never wider than both modes' ranges.
        assert row["wfc_minus_iack_high"] - row["wfc_minus_iack_low"] <= row["range"] + 1e-9
    reach = dict(ttfb_difference(tables, "drop_client_flight").select("client_impl", "reach_ms").iter_rows())
    # aioquic's runs are bimodal under the static datagram mapping (the mapping drops its first probe in some runs,
    # and a second PTO follows): its median difference is uncertain by tens of milliseconds, the widest of all.
    assert max(reach, key=lambda client: reach[client]) == "aioquic" and reach["aioquic"] > 20.0, reach
