"""The aioquic receiver with a set ACK policy (quicack.testbed.ack_policy_receiver), on real testbed runs.

tests/data/ack_policy/raw holds nine 1 MB downloads through the testbed (tests/data/ack_policy/testbed.yaml,
recorded by tests/tools/record_ack_policy.py): ACK ratios 1, 2, 10, 20 (25 ms, NR); the delay timer at AR 100
(10 ms, and a quarter of the smoothed RTT); and D, NR, 3A at AR 10 under 2 % random loss server → client. The
packets each ACK covers are measured twice: from the client's qlog (its received packets, not its own count) and
on the wire (the client-side capture: how far each ACK's largest acknowledged packet moves).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import polars as pl
import pytest
import yaml
from aioquic.quic.configuration import QuicConfiguration

from quicack.layout import parse_run_folder
from quicack.metrics.ack_policy import (
    ack_policy_per_run,
    ack_reason_counts,
    ack_reasons,
    captured_ack_ratio_per_run,
    receiver_acks,
)
from quicack.reference import path_profile, path_profiles
from quicack.testbed.ack_policy_receiver import AckPolicy, AckPolicyConnection
from quicack.testbed.clients import ClientRequest, client_command
from quicack.testbed.scenarios import expand, group_from_json, group_to_json

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "data" / "ack_policy"
RAW = FIXTURE / "raw"
TESTBED_SCHEMA = REPO / "workflow" / "schemas" / "testbed.schema.yaml"
# How much later than its configured delay a timer ACK may leave: the recording machine's event-loop latency
# (a shared 2-core VM; the recorded waits exceed d by 0.1-3 ms). The lower bound needs no slack beyond the
# qlog's own event timing: the timer starts when the packet is processed, which the qlog logs just before.
TIMER_LATENESS_MS = 3.0
TIMER_EARLINESS_MS = 0.5


@pytest.fixture(scope="module")
def tables(ack_policy_tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    return ack_policy_tables


@pytest.fixture(scope="module")
def runs(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    runs = tables["runs"]
    assert runs.height == 9 and set(runs["status"]) == {"ok"}
    return runs


def _runs_where(runs: pl.DataFrame, **values: object) -> list[dict]:
    return runs.filter(**values).sort("run_id").to_dicts()  # type: ignore[arg-type]


def _received_application_packets(packets: pl.DataFrame) -> pl.DataFrame:
    """The client's received 1-RTT packets in the order its qlog logged them, with ``out_of_order`` as RFC 9000
    §13.2.1 defines it: an ack-eliciting packet below the largest received, or above it with a gap (the space's
    first packet excepted)."""
    received = (
        packets.with_row_index("log_order")
        .filter((pl.col("source") == "qlog") & (pl.col("vantage") == "client") & (pl.col("event") == "received")
                & (pl.col("pn_space") == "appdata"))  # fmt: skip
        .sort("run_id", "log_order")
    )
    largest_before = pl.col("packet_number").cum_max().shift(1).over("run_id")
    return received.with_columns(
        (
            pl.col("ack_eliciting")
            & largest_before.is_not_null()
            & ((pl.col("packet_number") < largest_before) | (pl.col("packet_number") > largest_before + 1))
        ).alias("out_of_order")
    )


def _reordering_acks(frames: pl.DataFrame) -> pl.DataFrame:
    return ack_reasons(frames).filter(pl.col("ack_reason") == "reordering").group_by("run_id").len("reordering_acks")


# -- ACK ratio ------------------------------------------------------------------------------------------------------


def test_the_configured_ack_ratio_is_the_median_measured_in_the_qlog_and_on_the_wire(tables, runs) -> None:
    swept = _runs_where(runs, scenario="ack_ratio", rtt_ms=40.0)
    assert [r["ack_ratio"] for r in swept] == [1, 10, 2, 20]  # run_id order
    in_qlog = ack_policy_per_run(tables["packets"], tables["frames"])
    on_wire = captured_ack_ratio_per_run(tables["frames"])
    for run in swept:
        ratio = run["ack_ratio"]
        (qlog,) = in_qlog.filter(run_id=run["run_id"]).to_dicts()
        (wire,) = on_wire.filter(run_id=run["run_id"]).to_dicts()
        assert qlog["ack_ratio_median"] == ratio and wire["ack_ratio_median"] == ratio, run["run_id"]
        # Spread: only the delay timer (fewer packets) and the end of the transfer make an ACK cover less than N.
        assert 1 <= qlog["ack_ratio_p10"] <= ratio and qlog["ack_ratio_p90"] == ratio, run["run_id"]
        assert wire["acks_captured"] == qlog["acks_sent"], run["run_id"]  # every ACK the client logged, on the wire
        assert qlog["packets_received"] / qlog["acks_sent"] <= ratio + 0.5


def test_fewer_acks_at_a_larger_ratio(tables, runs) -> None:
    swept = pl.DataFrame(_runs_where(runs, scenario="ack_ratio", rtt_ms=40.0)).select("run_id", "ack_ratio")
    acks = swept.join(ack_policy_per_run(tables["packets"], tables["frames"]), on="run_id").sort("ack_ratio")
    assert acks["acks_sent"].is_sorted(descending=True) and acks["acks_sent"].n_unique() == 4
    # AR 1: an ACK for every ack-eliciting packet (ackfreq22 Eq. 3 with no timer ACKs: Serv_p / AR).
    assert acks["acks_sent"][0] == acks["packets_received"][0]


# -- why each ACK was sent ------------------------------------------------------------------------------------------


def test_every_ack_says_why_and_its_count_is_the_packets_received_since_the_previous_one(tables, runs) -> None:
    reasons = ack_reasons(tables["frames"])
    assert set(reasons["ack_reason"]) <= {"packet_threshold", "delay_timer", "reordering", "other"}
    measured = receiver_acks(tables["packets"], tables["frames"])
    joined = measured.join(reasons, on=["run_id", "packet_number"], how="left")
    assert joined["ack_reason"].null_count() == 0  # every application ACK in the qlog has its reason
    assert reasons.height == measured.height  # ... and there is no reason without an ACK
    assert (joined["packets_acknowledged"] == joined["ack_eliciting_since_previous_ack"]).all()
    on_wire = captured_ack_ratio_per_run(tables["frames"]).join(
        reasons.group_by("run_id").len("acks_with_reason"), on="run_id"
    )
    assert (on_wire["acks_captured"] == on_wire["acks_with_reason"]).all()


def test_threshold_acks_cover_n_packets_and_timer_acks_fewer(tables, runs) -> None:
    reasons = ack_reasons(tables["frames"]).join(runs.select("run_id", "ack_ratio"), on="run_id")
    by_threshold = reasons.filter(pl.col("ack_reason") == "packet_threshold")
    by_timer = reasons.filter(pl.col("ack_reason") == "delay_timer")
    assert by_threshold.height > 0 and by_timer.height > 0
    assert (by_threshold["ack_eliciting_since_previous_ack"] == by_threshold["ack_ratio"]).all()
    assert by_timer["ack_eliciting_since_previous_ack"].min() >= 1
    assert (by_timer["ack_eliciting_since_previous_ack"] < by_timer["ack_ratio"]).all()


def test_handshake_acks_keep_aioquics_schedule_and_are_logged_as_other(tables) -> None:
    frames = tables["frames"].filter(
        (pl.col("source") == "qlog") & (pl.col("vantage") == "client") & (pl.col("event") == "sent")
        & (pl.col("frame_type") == "ack") & (pl.col("pn_space") != "appdata")
    )  # fmt: skip
    assert frames.height >= 9 and set(frames["ack_reason"]) == {"other"}
    assert frames["ack_eliciting_since_previous_ack"].null_count() == frames.height


def test_reason_counts_per_run(tables, runs) -> None:
    counts = ack_reason_counts(tables["frames"])
    shares = counts.group_by("run_id").agg(pl.col("share").sum())
    assert ((shares["share"] - 1).abs() < 1e-9).all()
    # AR 100 is never reached in a 1 MB transfer: the timer sends every ACK (ackfreq22 §5.4: AR 100 with d = 25 ms
    # "acts like AR 40"; here d = 10 ms acts like AR 11).
    for run in _runs_where(runs, ack_ratio=100):
        (only,) = counts.filter(run_id=run["run_id"]).to_dicts()
        assert only["ack_reason"] == "delay_timer" and only["packets_per_ack_median"] < 100


# -- ACK delay ------------------------------------------------------------------------------------------------------


def _timer_acks(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    return receiver_acks(tables["packets"], tables["frames"]).join(
        ack_reasons(tables["frames"]).filter(pl.col("ack_reason") == "delay_timer").select("run_id", "packet_number"),
        on=["run_id", "packet_number"],
    )


def test_timer_acks_leave_the_configured_delay_after_the_first_unacknowledged_packet(tables, runs) -> None:
    timer_acks = _timer_acks(tables).join(runs.select("run_id", "ack_delay_ms"), on="run_id").filter(
        pl.col("ack_delay_ms").is_not_null()
    )
    assert set(timer_acks["ack_delay_ms"]) == {10.0, 25.0}
    excess = timer_acks["wait_since_first_unacknowledged_ms"] - timer_acks["ack_delay_ms"]
    assert excess.min() >= -TIMER_EARLINESS_MS
    assert excess.median() <= TIMER_LATENESS_MS


def test_a_delay_as_a_fraction_of_the_rtt_follows_the_receivers_smoothed_rtt(tables, runs) -> None:
    (run,) = _runs_where(runs, ack_delay_rtt_fraction=0.25)
    smoothed = (
        tables["metrics_logged"]
        .filter((pl.col("run_id") == run["run_id"]) & (pl.col("vantage") == "client")
                & pl.col("smoothed_rtt_ms").is_not_null())  # fmt: skip
        .select(pl.col("time_ms").alias("rtt_logged_ms"), "smoothed_rtt_ms")
        .sort("rtt_logged_ms")
    )
    timer_acks = (
        _timer_acks(tables)
        .filter(run_id=run["run_id"])
        .with_columns((pl.col("time_ms") - pl.col("wait_since_first_unacknowledged_ms")).alias("first_arrival_ms"))
        .sort("first_arrival_ms")
        .join_asof(smoothed, left_on="first_arrival_ms", right_on="rtt_logged_ms", strategy="backward")
    )
    assert timer_acks.height > 10 and timer_acks["smoothed_rtt_ms"].null_count() == 0
    excess = timer_acks["wait_since_first_unacknowledged_ms"] - 0.25 * timer_acks["smoothed_rtt_ms"]
    assert excess.min() >= -TIMER_EARLINESS_MS and excess.median() <= TIMER_LATENESS_MS
    # the path's RTT is 100 ms: a quarter of it is not the 25 ms default, and not aioquic's 1 ms
    assert timer_acks["wait_since_first_unacknowledged_ms"].min() > 25.0


# -- reordering: D, NR, 3A (ackfreq22 §5.6) -------------------------------------------------------------------------


def test_loss_shows_as_reordering_to_the_receiver(tables, runs) -> None:
    received = _received_application_packets(tables["packets"])
    lossy = [r["run_id"] for r in _runs_where(runs, scenario="ack_ratio_loss")]
    per_run = received.filter(pl.col("run_id").is_in(lossy)).group_by("run_id").agg(pl.col("out_of_order").sum())
    assert per_run.height == 3 and per_run["out_of_order"].min() >= 5


def test_policy_d_sends_one_immediate_ack_per_out_of_order_packet(tables, runs) -> None:
    (run,) = _runs_where(runs, scenario="ack_ratio_loss", ack_reordering="D")
    out_of_order = _received_application_packets(tables["packets"]).filter(run_id=run["run_id"])["out_of_order"].sum()
    (acks,) = _reordering_acks(tables["frames"]).filter(run_id=run["run_id"])["reordering_acks"]
    assert acks == out_of_order > 0


def test_policy_nr_does_not_react_to_reordering(tables, runs) -> None:
    for run in _runs_where(runs, ack_reordering="NR"):
        assert _reordering_acks(tables["frames"]).filter(run_id=run["run_id"]).height == 0, run["run_id"]
    (lossy,) = _runs_where(runs, scenario="ack_ratio_loss", ack_reordering="NR")
    assert _received_application_packets(tables["packets"]).filter(run_id=lossy["run_id"])["out_of_order"].any()


def test_policy_3a_acknowledges_the_next_three_packets_at_once_after_reordering(tables, runs) -> None:
    (run,) = _runs_where(runs, scenario="ack_ratio_loss", ack_reordering="3A")
    eliciting = (
        _received_application_packets(tables["packets"])
        .filter((pl.col("run_id") == run["run_id"]) & pl.col("ack_eliciting"))
        .with_row_index("eliciting_index")
        .with_columns(
            pl.when(pl.col("out_of_order")).then(pl.col("eliciting_index")).forward_fill().alias("window_start")
        )
    )
    # AR 1 for k = 3 packets from each out-of-order one (a new one restarts the window).
    in_window = (eliciting["eliciting_index"] - eliciting["window_start"] < 3).sum()
    (acks,) = _reordering_acks(tables["frames"]).filter(run_id=run["run_id"])["reordering_acks"]
    assert acks == in_window > eliciting["out_of_order"].sum()
    immediate = ack_reasons(tables["frames"]).filter(
        (pl.col("run_id") == run["run_id"]) & (pl.col("ack_reason") == "reordering")
    )
    assert (immediate["ack_eliciting_since_previous_ack"] <= 10).all()
    assert immediate["ack_delay_ms"].max() < 1.0  # sent as the packet is processed, no timer


# -- runs table, run folders, configuration --------------------------------------------------------------------------


def test_the_runs_table_and_the_run_folder_name_say_the_same_policy(runs) -> None:
    for run in runs.to_dicts():
        from_folder = parse_run_folder(RAW / run["raw_path"])
        for column in ("ack_ratio", "ack_delay_ms", "ack_delay_rtt_fraction", "ack_reordering"):
            assert from_folder[column] == run[column], (run["run_id"], column)
        recorded = json.loads((RAW / run["raw_path"] / "run.json").read_text(encoding="utf-8"))["receiver_ack_policy"]
        assert recorded["ack_ratio"] == run["ack_ratio"] and recorded["reordering"] == run["ack_reordering"]


def test_the_fixture_config_is_valid_and_expands_into_one_labelled_group_per_policy() -> None:
    schema = yaml.safe_load(TESTBED_SCHEMA.read_text(encoding="utf-8"))
    cfg = yaml.safe_load((FIXTURE / "testbed.yaml").read_text(encoding="utf-8"))["testbed"]
    jsonschema.validate(cfg, schema)
    groups = expand(cfg)
    assert len({g.key for g in groups}) == 9
    assert all(g.key.endswith(g.ack_policy_label) for g in groups)
    for group in groups:
        assert group_from_json(group_to_json(group)) == group


def test_configs_without_a_policy_keep_their_groups(tmp_path: Path) -> None:
    for name in ("testbed.yaml", "testbed_ci.yaml"):
        cfg = yaml.safe_load((REPO / "config" / name).read_text(encoding="utf-8"))["testbed"]
        groups = expand(cfg)
        unset = [g for g in groups if not g.scenario.startswith("ack_ratio")]
        assert len(unset) >= 5  # the imc24 matrix (CI: its five groups)
        for group in unset:  # blocks without a policy: the client's default, folder names as before
            assert group.receiver_ack_policy is None and group.ack_policy_label is None
            assert "-ar" not in group.key
        for group in groups:
            assert (group.receiver_ack_policy is None) == ("-ar" not in group.key)
    argv, _env = client_command(ClientRequest(
        impl="aioquic", url="https://198.18.0.1:443/1MB", app_protocol="h3", download_dir=tmp_path,
        keylog_path=tmp_path / "keys.log", qlog_dir=tmp_path / "qlog",
    ))  # fmt: skip
    assert not any(a.startswith(("--ack", "--reordering")) for a in argv)  # aioquic as released


def test_schema_rejects_two_delays_and_unknown_policies() -> None:
    schema = yaml.safe_load(TESTBED_SCHEMA.read_text(encoding="utf-8"))
    base = {"dataset": "x", "clients": ["aioquic"], "modes": ["iack"], "scenarios": ["ack_ratio"], "rtts_ms": [40]}
    jsonschema.validate(base | {"receiver_ack_policy": {"ack_ratio": 10, "ack_delay_rtt_fraction": 0.25}}, schema)
    for bad in ({"ack_ratio": 10, "ack_delay_ms": 25, "ack_delay_rtt_fraction": 0.25}, {"ack_ratio": 0},
                {"ack_ratio": 2, "reordering": "X"}, {"ack_delay_ms": 25}):  # fmt: skip
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(base | {"receiver_ack_policy": bad}, schema)


def test_only_the_aioquic_client_takes_a_policy(tmp_path: Path) -> None:
    cfg = {"dataset": "x", "clients": ["quic-go"], "modes": ["iack"], "scenarios": ["ack_ratio"], "rtts_ms": [40],
           "receiver_ack_policy": {"ack_ratio": 10}}  # fmt: skip
    with pytest.raises(ValueError, match="quic-go"):
        expand(cfg)
    argv, _env = client_command(ClientRequest(
        impl="aioquic", url="https://198.18.0.1:443/1MB", app_protocol="h3", download_dir=tmp_path,
        keylog_path=tmp_path / "keys.log", qlog_dir=tmp_path / "qlog",
        ack_policy=AckPolicy(ack_ratio=10, ack_delay_ms=None, ack_delay_rtt_fraction=0.25, reordering="3A"),
    ))  # fmt: skip
    assert argv[argv.index("--ack-ratio") + 1] == "10" and argv[argv.index("--reordering") + 1] == "3A"
    assert argv[argv.index("--ack-delay-rtt-fraction") + 1] == "0.25" and "--ack-delay-ms" not in argv


def test_malformed_policies_are_refused_by_hand_made_values() -> None:
    for bad in ({"ack_ratio": 0}, {"ack_delay_ms": -1.0}, {"ack_delay_rtt_fraction": 0.25}, {"reordering": "2A"}):
        with pytest.raises(ValueError):
            AckPolicy(**bad)  # type: ignore[arg-type]
    # No delay at all = the receiver implementation's own (ngtcp2's); this receiver needs one.
    own_delay = AckPolicy(ack_delay_ms=None)
    assert not own_delay.sets_ack_delay
    with pytest.raises(ValueError, match="needs an ACK delay"):
        AckPolicyConnection(ack_policy=own_delay, configuration=QuicConfiguration(is_client=True))
    assert AckPolicy(ack_delay_ms=125.0).advertised_max_ack_delay_ms == 125
    assert AckPolicy(ack_delay_ms=10.0).advertised_max_ack_delay_ms == 25


# -- path profiles --------------------------------------------------------------------------------------------------


def test_path_profiles_are_consistent_per_direction() -> None:
    profiles = path_profiles()
    # rethink has no Table 1; a note only where needed
    nullable = ("paper_ack_delay_vs_rtt", "table1_loss_percent", "table1_rtt_ms", "note")
    assert profiles["profile"].is_unique().all() and profiles.null_count().drop(nullable).sum_horizontal()[0] == 0
    assert ((profiles["s2c_delay_ms"] + profiles["c2s_delay_ms"]) == profiles["rtt_ms"]).all()
    bdp_bytes = profiles["s2c_rate_mbit"] * 1e6 * profiles["rtt_ms"] / 1000 / 8
    assert (profiles["s2c_queue_bytes"] == bdp_bytes.round()).all()
    assert (profiles["c2s_queue_packets"] == (profiles["s2c_queue_bytes"] / 1500).ceil()).all()
    satellite = path_profile("ackfreq22-satellite")
    assert (satellite["s2c_rate_mbit"], satellite["c2s_rate_mbit"], satellite["rtt_ms"]) == (10.0, 2.0, 638.0)
    assert satellite["paper_ack_delay_vs_rtt"] == "RTT/25" and math.isclose(satellite["rtt_ms"] / 25, 25.52)
    assert path_profile("rethink-satellite-return100k")["c2s_rate_mbit"] == 0.1
    # ackfreq22 Table 1's measured loss is kept for the record, not emulated; §5.6 adds 1 % each way (loss_model)
    ackfreq22 = profiles.filter(pl.col("paper") == "ackfreq22")
    lossy = pl.col("profile").str.ends_with("-loss1")
    assert (ackfreq22.filter(~lossy).select("s2c_loss_percent", "c2s_loss_percent").to_numpy() == 0).all()
    assert (ackfreq22.filter(lossy).select("s2c_loss_percent", "c2s_loss_percent").to_numpy() == 1).all()
    assert sorted(ackfreq22.filter(~lossy)["table1_loss_percent"]) == [0.001, 0.1, 0.5]
    # Table 1's median RTT is emulated as the base RTT, but for 4G: its base RTT is fitted to Table 4's loss-free times,
    # and a full forward queue (1 BDP of the base path) brings it to Table 1's median.
    assert sorted(ackfreq22.filter(~lossy)["table1_rtt_ms"]) == [30, 95, 638]
    four_g = ackfreq22.filter(pl.col("profile").str.starts_with("ackfreq22-4g"))
    assert (four_g["rtt_ms"] == 48).all() and ackfreq22.join(four_g, on="profile", how="anti").select(
        (pl.col("rtt_ms") == pl.col("table1_rtt_ms")).all()).item()
    full_queue_rtt_ms = four_g["rtt_ms"] + four_g["s2c_queue_bytes"] * 8 / (four_g["s2c_rate_mbit"] * 1e3)
    assert ((full_queue_rtt_ms - four_g["table1_rtt_ms"]).abs() <= 1.0).all()
    assert four_g["note"].str.contains("fitted to the paper's own loss-free 1 MB times").all()
    assert (
        ackfreq22["loss_model"].str.contains("§5.6").all()
        and ackfreq22.filter(~lossy)["loss_model"].str.contains("§5.5").all()
    )
    with pytest.raises(KeyError, match="ackfreq22-4g"):
        path_profile("no-such-path")
