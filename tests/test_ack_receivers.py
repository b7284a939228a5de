"""Receivers other than quicack's aioquic one, and the aioquic server as a sender, on real testbed runs.

tests/data/ack_receivers/raw holds ten 1 MB downloads through the testbed at 40 ms RTT and 10 Mbit/s
(tests/data/ack_receivers/testbed.yaml, recorded by tests/tools/record_ack_receivers.py): quinn <-> quinn with the
policy requested by the server's ACK_FREQUENCY frames (AR 2 and 10 with NR; D vs NR at AR 10 under 2 % loss), ngtcp2
with --ack-thresh 2 and 10, the fixed policies of quic-go and go-x-net (all three from the aioquic server), and the
aioquic server with reno unpaced vs cubic paced. The ACK ratio is measured on the wire: how far each of the client's
ACKs moves the largest acknowledged packet number (``captured_ack_ratio_per_run``).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import polars as pl
import pytest
import yaml

from quicack.layout import parse_run_folder, run_groups
from quicack.metrics.ack_policy import captured_ack_ratio_per_run, captured_acks
from quicack.stages.ingest import ingest_group
from quicack.testbed.ack_policy_receiver import AckPolicy
from quicack.testbed.clients import ClientRequest, client_command
from quicack.testbed.iack_wfc_server import (
    DeferredHandshakeConnection,
    HandshakeMode,
    ServerSettings,
    UnpacedPacer,
    build_configuration,
)
from quicack.testbed.receiver_ack_control import SENDER_ACK_FREQUENCY, quinn_server_options
from quicack.testbed.scenarios import expand, group_from_json, group_to_json

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "data" / "ack_receivers"
RAW = FIXTURE / "raw"
TESTBED_SCHEMA = REPO / "workflow" / "schemas" / "testbed.schema.yaml"
BASE = {"dataset": "x", "modes": ["iack"], "scenarios": ["ack_ratio"], "rtts_ms": [40]}


@pytest.fixture(scope="module")
def tables() -> dict[str, pl.DataFrame]:
    parts: dict[str, list[pl.DataFrame]] = {}
    for group in run_groups(RAW):
        for name, frame in ingest_group(RAW, group, "ack_receivers_fixture").items():
            parts.setdefault(name, []).append(frame)
    return {name: pl.concat(frames, how="vertical_relaxed") for name, frames in parts.items()}


@pytest.fixture(scope="module")
def on_wire(tables: dict[str, pl.DataFrame]) -> dict[str, dict]:
    """run_id (without the dataset) -> the captured ACK ratio of the run, joined to its runs row."""
    runs = tables["runs"]
    assert runs.height == 10 and set(runs["status"]) == {"ok"}
    joined = captured_ack_ratio_per_run(tables["frames"]).join(runs, on="run_id")
    return {row["raw_path"]: row for row in joined.to_dicts()}


def _one(on_wire: dict[str, dict], folder_part: str) -> dict:
    (row,) = [row for path, row in on_wire.items() if folder_part in path]
    return row


@pytest.mark.parametrize("ratio", [2, 10])
def test_quinn_acknowledges_as_its_server_asks_with_ack_frequency(on_wire, ratio) -> None:
    run = _one(on_wire, f"quinn_quinn/ack_ratio-none-rtt40ms-1MB-hq-ar{ratio}-d25ms-NR")
    assert run["ack_policy_control"] == SENDER_ACK_FREQUENCY and run["ack_ratio"] == ratio
    # Without loss the median ACK advances by exactly the requested ratio (quinn's own default would be 2). The
    # spread is upward only (p25 = N): quinn reads datagrams in batches and acknowledges after the batch.
    assert run["ack_ratio_median"] == ratio and run["ack_ratio_p25"] == ratio


def test_quinn_with_d_sends_an_immediate_ack_per_loss_and_with_nr_none(tables, on_wire) -> None:
    d = _one(on_wire, "ack_ratio_loss-none-rtt40ms-1MB-hq-ar10-d25ms-D")
    nr = _one(on_wire, "ack_ratio_loss-none-rtt40ms-1MB-hq-ar10-d25ms-NR")
    lost = [json.loads((RAW / run["raw_path"] / "run.json").read_text(encoding="utf-8"))["impairment"]["s2c"]
            ["lost_indices"] for run in (d, nr)]  # fmt: skip
    assert lost[0] == lost[1] and lost[0]  # the same seeded losses in both runs
    # Reordering Threshold 1 (D) adds at most one ACK per out-of-order arrival, 0 (NR) none; some of D's immediate
    # ACKs fall where a threshold or timer ACK was due anyway, so the difference is positive but below the losses.
    assert 0 < d["acks_captured"] - nr["acks_captured"] <= len(lost[0])
    # Both still acknowledge most packets at the requested ratio.
    assert d["ack_ratio_p75"] == nr["ack_ratio_p75"] == 10


def test_ngtcp2_takes_its_ack_ratio_from_ack_thresh(on_wire) -> None:
    ar2 = _one(on_wire, "aioquic_ngtcp2/ack_ratio-iack-rtt40ms-1MB-h3-ar2-dimpl-D")
    ar10 = _one(on_wire, "aioquic_ngtcp2/ack_ratio-iack-rtt40ms-1MB-h3-ar10-dimpl-D")
    for run, ratio in ((ar2, 2), (ar10, 10)):
        assert run["ack_ratio"] == ratio and run["ack_delay_ms"] is None and run["ack_reordering"] == "D"
    assert ar2["ack_ratio_median"] == 2 and ar2["ack_ratio_p75"] == 2
    # ngtcp2's own delay is min(25 ms, smoothed RTT / 8) ≈ 5 ms here, shorter than ten 1.2 ms packet times at
    # 10 Mbit/s: its timer fires before the 10th packet of a flight arrives often enough to pull the median to 9.
    assert 8 <= ar10["ack_ratio_median"] <= 10 and ar10["ack_ratio_p75"] == 10
    assert ar10["acks_captured"] < ar2["acks_captured"] / 3


def test_quic_go_acknowledges_every_second_packet(on_wire) -> None:
    run = _one(on_wire, "aioquic_quic-go/")
    assert run["ack_ratio"] is None and run["ack_policy_control"] is None
    assert run["ack_ratio_median"] == 2 and run["ack_ratio_p90"] == 2


def test_go_x_net_acknowledges_every_second_packet_for_the_first_hundred_then_every_tenth(tables) -> None:
    acks = captured_acks(tables["frames"]).filter(pl.col("run_id").str.contains("aioquic_go-x-net/"))
    advancing = acks.filter(pl.col("largest_acked_advance") > 0)
    early = advancing.filter(pl.col("largest_acked") < 100)["largest_acked_advance"]
    # From packet 150 on: past the switch, with room for the ACKs in flight around it.
    late = advancing.filter(pl.col("largest_acked") >= 150)["largest_acked_advance"]
    assert early.len() > 30 and early.median() == 2
    assert late.len() > 50 and late.median() == 10


def test_the_unpaced_reno_servers_congestion_window_is_read_from_its_qlog(tables) -> None:
    runs = tables["runs"].filter(pl.col("server_impl") == "aioquic", pl.col("client_impl") == "aioquic")
    settings = {row["raw_path"].split("-h3-")[1].split("/")[0]: row for row in runs.to_dicts()}
    assert {k: (v["congestion_control"], v["pacing"]) for k, v in settings.items()} == {
        "ccreno-unpaced": ("reno", False), "cccubic-paced": ("cubic", True)}  # fmt: skip
    cwnd = tables["metrics_logged"].filter(
        pl.col("run_id").str.contains("ccreno-unpaced"), pl.col("vantage") == "server",
        pl.col("cwnd_bytes").is_not_null()
    ).sort("time_ms")["cwnd_bytes"]  # fmt: skip
    assert cwnd.len() > 100
    # Slow start without loss at first: the window grows from aioquic's initial 10 packets to many times that.
    assert cwnd[0] <= 10 * 1280 and cwnd.max() > 8 * cwnd[0]
    for row in settings.values():
        assert parse_run_folder(RAW / row["raw_path"])["pacing"] == row["pacing"]


def test_an_unpaced_server_connection_never_waits_for_its_pacer(tmp_path: Path) -> None:
    settings = ServerSettings(host="127.0.0.1", port=0, cert_size="small", mode=HandshakeMode.NONE, cert_delay_ms=0.0,
                              www=tmp_path, qlog_dir=None, keylog=None, congestion_control="reno",
                              pacing=False)  # fmt: skip
    configuration, _cert_bytes = build_configuration(settings)
    assert configuration.congestion_control_algorithm == "reno"
    connection = DeferredHandshakeConnection(
        mode=HandshakeMode.NONE, cert_delay_s=0.0, pacing=settings.pacing, configuration=configuration,
        original_destination_connection_id=b"\x00" * 8,
    )  # fmt: skip
    pacer = connection._loss._pacer
    assert isinstance(pacer, UnpacedPacer)
    pacer.update_rate(congestion_window=12_800, smoothed_rtt=0.04)
    assert pacer.next_send_time(now=1.0) is None


def test_the_fixture_config_is_valid_and_every_group_round_trips() -> None:
    raw_cfg = yaml.safe_load((FIXTURE / "testbed.yaml").read_text(encoding="utf-8"))["testbed"]
    jsonschema.validate(raw_cfg, yaml.safe_load(TESTBED_SCHEMA.read_text(encoding="utf-8")))
    groups = expand(raw_cfg)
    assert len({g.key for g in groups}) == 10
    for group in groups:
        assert group_from_json(group_to_json(group)) == group
        assert (RAW / group.key).is_dir(), group.key


def test_receivers_that_cannot_take_a_part_of_a_policy_are_refused_with_the_reason() -> None:
    refused = [
        ("quinn", "aioquic", {"ack_ratio": 10}, "cannot be set"),
        ("quinn", "quinn", {"ack_ratio": 10, "reordering": "3A"}, "3A"),
        ("quinn", "quinn", {"ack_ratio": 10, "ack_delay_rtt_fraction": 0.25}, "fixed delay"),
        ("ngtcp2", "aioquic", {"ack_ratio": 10, "ack_delay_ms": 25}, "ngtcp2's ACK delay"),
        ("ngtcp2", "aioquic", {"ack_ratio": 10, "reordering": "NR"}, "at once"),
        ("quic-go", "aioquic", {"ack_ratio": 2}, "quic-go"),
    ]
    for client, server, policy, reason in refused:
        with pytest.raises(ValueError, match=reason):
            expand(BASE | {"clients": [client], "server": server, "receiver_ack_policy": policy})
    with pytest.raises(ValueError, match="always paces"):  # quinn-proto's pacer has no switch
        expand(BASE | {"clients": ["quinn"], "server": "quinn", "server_pacing": False})


def test_the_policy_reaches_the_quinn_server_and_the_ngtcp2_client(tmp_path: Path) -> None:
    assert quinn_server_options(AckPolicy(ack_ratio=10, ack_delay_ms=25.0, reordering="NR")) == [
        "--ack-eliciting-threshold", "9", "--max-ack-delay-ms", "25", "--reordering-threshold", "0"]  # fmt: skip
    (group,) = expand(BASE | {"clients": ["ngtcp2"], "receiver_ack_policy": {"ack_ratio": 10}})
    argv, _env = client_command(ClientRequest(
        impl="ngtcp2", url="https://198.18.0.1:443/1MB", app_protocol="h3", download_dir=tmp_path,
        keylog_path=tmp_path / "keys.log", qlog_dir=tmp_path / "qlog", ack_policy=group.receiver_ack_policy,
    ))  # fmt: skip
    assert "--ack-thresh=10" in argv and argv.index("--ack-thresh=10") < argv.index("198.18.0.1")


def test_the_quinn_client_at_1280_bytes_holds_its_first_ack_until_its_pto_unless_a_packet_number_was_skipped(
    paper_tables,
):
    """Parts P and Q of the dataset 'paper' (the quinn pair at 1,280-byte datagrams without path-MTU discovery, 1 MB
    over the satellite path; over 4G and VDSL): the stall of ackfreq22-tab04-satellite-ar20-noloss, as its explanation
    traces it. quinn-proto
    0.11.19 stops the client's ACK timer when its Handshake ACK leaves, and arms it again only once a 1-RTT ACK has
    cleared the 1-RTT space, so at AR 20 and 100 (thresholds 19 and 99, above the 12 packets of the server's first
    flight) the first 1-RTT ACK rides the client's PTO probe, 1.6 s late, in one range; a packet number the server
    skipped (quinn's guard against optimistic ACKs) makes the first ACK leave at once as out of order (two ranges);
    at AR 2 and 10 the flight itself exceeds the threshold."""
    frames = paper_tables(["quinn_quinn"], ["frames"])["frames"]
    first_acks = (
        frames.filter((pl.col("source") == "pcap") & (pl.col("direction") == "c2s") & (pl.col("frame_type") == "ack")
                      & (pl.col("pn_space") == "appdata"))
        .sort("time_ms")
        .group_by("run_id", maintain_order=True)
        .first()
        .select(
            path=pl.col("run_id").str.extract(r"-ackfreq22-(\w+)-1MB-"),
            ack_ratio=pl.col("run_id").str.extract(r"-ar(\d+)-").cast(pl.Int64),
            first_ack_delay_ms=pl.col("ack_delay_ms"),
            ranges=pl.col("ack_ranges").list.len(),
        )
        .filter(pl.col("path").is_not_null())
    )
    # Part P: the satellite path; part Q: 4G and VDSL at AR 2, 10 and 20.
    assert first_acks.group_by("path").len().sort("path").rows() == [("4g", 15), ("satellite", 25), ("vdsl", 15)]
    low, high = first_acks.filter(pl.col("ack_ratio") <= 10), first_acks.filter(pl.col("ack_ratio") >= 20)
    assert low["first_ack_delay_ms"].max() < 2.0
    # The same hold over the shorter paths, until the client's PTO there (ackfreq22-tab04-4g-ar20-noloss): all five
    # 4G runs at AR 20, two of the five VDSL ones; the three others had a skipped packet number (two ranges).
    for path, held_runs, low_ms, high_ms in (("4g", 5, 140, 150), ("vdsl", 2, 95, 110)):
        at_20 = high.filter(pl.col("path") == path)
        held_here = at_20.filter(pl.col("first_ack_delay_ms") > 50)
        assert held_here.height == held_runs and set(held_here["ranges"]) == {1}
        assert low_ms < held_here["first_ack_delay_ms"].min() and held_here["first_ack_delay_ms"].max() < high_ms
        assert set(at_20.filter(pl.col("first_ack_delay_ms") <= 50)["ranges"]) <= {2}
    high = high.filter(pl.col("path") == "satellite")
    held = high.filter(pl.col("first_ack_delay_ms") > 1_500)
    assert held.height == 12 and held["first_ack_delay_ms"].max() < 1_620 and set(held["ranges"]) == {1}
    prompt = high.filter(pl.col("first_ack_delay_ms") <= 1_500)
    assert prompt.height == 3 and prompt["first_ack_delay_ms"].max() < 1.0 and set(prompt["ranges"]) == {2}
