"""The papers' conditions as testbed settings (issue 34): imc24's server stack delay per client
(data/reference/imc24_stack_delay.csv), each implementation's datagram size, PMTUD, connection-ID length, ACK delay
and initial RTT (data/reference/implementation_conditions.csv), how a testbed config turns them into run groups, and
what the footnotes say. No root needed: config expansion and the reference files only."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml
from test_reference_quotes import _paper_text

from quicack.metrics.run_conditions import conditions_note
from quicack.provenance import DatasetDescription
from quicack.reference import comparable_text, implementation_conditions
from quicack.rendered import Rendered
from quicack.testbed.clients import KNOWN_IMPLS
from quicack.testbed.conditions import (
    APPLIED,
    HOLD_RESIDUAL_MS,
    condition_options,
    conditions_record,
    stack_delay_table,
    stack_record,
)
from quicack.testbed.scenarios import expand, group_to_json

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_RAW = ROOT / "data" / "sample" / "raw"
# imc24's clients (§3) and this testbed's QUIC clients of imc24's runs (quic-go-old only reads an old qlog dialect).
IMC24_PAPER_CLIENTS = ("aioquic", "go-x-net", "mvfst", "neqo", "ngtcp2", "picoquic", "quic-go", "quiche")
TESTBED_IMC24_CLIENTS = tuple(c for c in KNOWN_IMPLS if c != "quic-go-old")
PARAMETERS = {"max_udp_payload_bytes", "pmtu_discovery", "connection_id_bytes", "max_ack_delay_ms", "initial_rtt_ms"}


def _cfg(**overrides: object) -> dict[str, object]:
    cfg: dict[str, object] = {"dataset": "t", "server": "quic-go", "clients": ["aioquic", "firefox"], "modes": ["iack"],
                              "scenarios": ["noloss"], "rtts_ms": [9], "repetitions": 1}  # fmt: skip
    return cfg | overrides


def test_every_client_has_a_stack_delay_row_with_the_papers_value_and_basis() -> None:
    table = stack_delay_table()
    assert set(IMC24_PAPER_CLIENTS) | set(TESTBED_IMC24_CLIENTS) <= set(table["client"]), table["client"].to_list()
    assert set(table["basis"]) <= {"per_client", "paper_median"}
    text = _paper_text("imc24")
    per_client = table.filter(pl.col("basis") == "per_client")
    for row in per_client.iter_rows(named=True):
        # The paper's sentence names the value beside its client: "2.9 ms (neqo)".
        assert f"{row['paper_median_ms']:g} ms ({row['paper_client']})" in comparable_text(row["quote"]), row
        assert comparable_text(row["quote"]) in text
    assert set(per_client["paper_client"]) == {"neqo", "mvfst"}
    # The paper's median for the clients it gives no value: the middle of the per-client medians it states.
    paper_values = per_client.unique("paper_client")["paper_median_ms"]
    median = table.filter(pl.col("basis") == "paper_median")["paper_median_ms"].unique().to_list()
    assert median == [pytest.approx(float(paper_values.median()))]
    assert table.filter(pl.col("client") == "firefox")["paper_median_ms"].to_list() == [2.9]


def test_paper_stack_delay_holds_each_client_to_its_row_and_names_the_scenario() -> None:
    groups = {g.client: g for g in expand(_cfg(clients=["aioquic", "firefox", "go-x-net"], server_stack_delay="paper"))}
    assert {g.scenario for g in groups.values()} == {"noloss_paper_stack"}
    assert groups["firefox"].server_hello_hold_ms == pytest.approx(2.9 - HOLD_RESIDUAL_MS)
    assert groups["aioquic"].server_hello_hold_ms == pytest.approx(5.35 - HOLD_RESIDUAL_MS)
    assert all(g.server_stack_delay == "paper" for g in groups.values())
    record = stack_record(groups["firefox"].scenario, "firefox", groups["firefox"].server_hello_hold_ms, "paper")
    assert record == {"condition": "paper", "hold_ms": 2.6, "paper_delay_ms": 2.9, "paper_client": "neqo",
                      "basis": "per_client", "residual_ms": HOLD_RESIDUAL_MS}  # fmt: skip
    # With every implementation set as the paper's too: the paper's conditions as a whole, named apart.
    (whole,) = expand(_cfg(clients=["ngtcp2"], server_stack_delay="paper", implementation_conditions="paper"))
    assert whole.scenario == "noloss_paper" and whole.server_hello_hold_ms == pytest.approx(5.35 - HOLD_RESIDUAL_MS)
    assert stack_record(whole.scenario, "ngtcp2", whole.server_hello_hold_ms, "paper")["paper_delay_ms"] == 5.35


def test_both_stack_conditions_in_one_block_are_two_labelled_sets() -> None:
    groups = expand(_cfg(clients=["ngtcp2"], modes=["iack", "wfc"], server_stack_delay=["machine", "paper"]))
    by_scenario = {(g.scenario, g.mode): g.server_hello_hold_ms for g in groups}
    assert by_scenario == {("noloss", "iack"): 0.0, ("noloss", "wfc"): 0.0,
                           ("noloss_paper_stack", "iack"): 5.05, ("noloss_paper_stack", "wfc"): 5.05}  # fmt: skip
    assert stack_record("noloss", "ngtcp2", 0.0, None) == {"condition": "machine", "hold_ms": 0.0}
    with pytest.raises(ValueError, match="neither machine nor paper"):
        expand(_cfg(server_stack_delay="fast"))


def test_implementation_conditions_rows_are_complete() -> None:
    table = implementation_conditions()
    assert set(table["parameter"]) <= PARAMETERS
    assert set(table["applied"]) <= set(APPLIED)
    assert set(table["study"]) == {"imc24", "ackratio"}
    assert table.filter(pl.col("applied") == "set")["option"].null_count() == 0, (
        "a value the testbed sets names its option"
    )
    assert table.filter(pl.col("applied") == "cannot")["note"].null_count() == 0, "a value that cannot be set says why"
    assert table.filter(pl.col("source").is_null()).is_empty(), "every value names its source"
    assert table.unique(["study", "implementation", "role", "parameter"]).height == table.height
    # Each of imc24's testbed clients and imc24's server has its conditions written down.
    imc24 = table.filter(pl.col("study") == "imc24")
    assert set(TESTBED_IMC24_CLIENTS) <= set(imc24.filter(pl.col("role") == "client")["implementation"])
    assert set(PARAMETERS) <= set(imc24.filter(pl.col("implementation") == "quic-go")["parameter"])


def test_implementation_conditions_quotes_are_the_papers_words() -> None:
    table = implementation_conditions().filter((pl.col("basis") == "paper") & pl.col("quote").is_not_null())
    assert not table.is_empty()
    for study, paper in (("imc24", "imc24"), ("ackratio", "ackfreq22")):
        text = _paper_text(paper)
        missing = [r["quote"] for r in table.filter(pl.col("study") == study).iter_rows(named=True)
                   if comparable_text(r["quote"]) not in text]  # fmt: skip
        assert not missing, missing


def test_paper_conditions_reach_the_command_lines_and_run_json() -> None:
    assert condition_options("imc24", "quic-go", "server") == [
        "--initial-packet-size",
        "1252",
        "--connection-id-length",
        "4",
    ]
    assert condition_options("imc24", "ngtcp2", "client") == ["--initial-rtt=100ms"]
    assert condition_options("ackratio", "ngtcp2", "client") == ["--max-udp-payload-size=1280", "--no-pmtud"]
    assert condition_options("imc24", "go-x-net", "client") == []
    (group,) = expand(_cfg(clients=["ngtcp2"], implementation_conditions="paper"))
    assert group.implementation_conditions == "paper" and '"implementation_conditions":"paper"' in group_to_json(group)
    record = conditions_record(group.implementation_conditions, group.scenario, group.client, group.server)
    assert record is not None and record["client"]["options"] == ["--initial-rtt=100ms"]
    assert record["server"]["parameters"]["max_udp_payload_bytes"] == {"value": "1252", "applied": "set"}
    assert conditions_record(None, "noloss", "ngtcp2", "quic-go") is None
    with pytest.raises(ValueError, match="implementation_conditions"):
        expand(_cfg(implementation_conditions="ours"))


def test_footnotes_name_the_stack_delay_and_the_implementations_conditions() -> None:
    runs = pl.DataFrame({"run_id": ["a", "b"], "status": ["ok", "ok"], "client_impl": ["ngtcp2", "ngtcp2"],
                         "server_impl": ["quic-go", "quic-go"],
                         "scenario": ["noloss", "noloss_paper_stack"]})  # fmt: skip
    as_built = conditions_note(runs)
    assert "the paper's (ServerHello held" in as_built and "and this machine's" in as_built
    # One segment per implementation: its datagram size, PMTUD, CID length, max_ack_delay and initial RTT as the runs
    # had them, and where the paper's differ.
    assert ("ngtcp2 client: 1,200-B datagrams, PMTUD on (up to 1,444 B), 17-B CIDs, max_ack_delay 25 ms, "
            "initial RTT 333 ms (the paper's: initial RTT 100 ms)") in as_built
    assert ("quic-go server: 1,280-B datagrams, PMTUD on (up to 1,366 B), 4-B CIDs, max_ack_delay 26 ms, "
            "initial RTT 100 ms (the paper's: 1,252-B datagrams)") in as_built
    as_paper = conditions_note(runs.with_columns(pl.lit("paper").alias("implementation_conditions")))
    assert "set as the papers'" in as_paper
    # The as-built captures' largest datagram is not said of runs recorded otherwise.
    assert "ngtcp2 client: 1,200-B datagrams, PMTUD on, 17-B CIDs, max_ack_delay 25 ms, " \
           "initial RTT 100 ms (as the paper's)" in as_paper
    assert "quic-go server: 1,252-B datagrams, PMTUD on, 4-B CIDs" in as_paper
    footnote = Rendered(None, runs=runs).footnote(DatasetDescription.undescribed("t"))
    assert footnote.endswith(as_built)
    assert conditions_note(runs.select("run_id", "status")) == ""
    # Under the paper's conditions as a whole (each client's own delay): named apart from the fixed 2.9 ms hold.
    paper = conditions_note(runs.with_columns(pl.Series("scenario", ["noloss_paper", "noloss_paper"])))
    assert "per client as imc24 gives it" in paper and "2.9 ms for every client" not in paper
    assert "this machine's" not in paper


def test_the_paper_conditions_recording_holds_imc24_to_the_papers_stack_delay_in_session_sized_parts() -> None:
    cfg = yaml.safe_load((ROOT / "config" / "testbed_paper_conditions.yaml").read_text(encoding="utf-8"))["testbed"]
    groups = expand(cfg)
    assert all(g.implementation_conditions == "paper" for g in groups)
    parts = {g.extra.get("part") for g in groups}
    assert None not in parts and {"A1", "A2", "B1", "D", "E1", "E2", "M", "R"} <= parts
    held = [g for g in groups if g.mode in ("iack", "wfc") and g.scenario.endswith("_paper")]
    # §4.1/§4.2 and App. F: 100 repetitions per client, mode, scenario and RTT, each client held to its own delay.
    assert {g.repetitions for g in held if g.client not in ("firefox", "chromium")} == {100}
    assert {(g.client, g.server_hello_hold_ms) for g in held if g.client in ("firefox", "aioquic")} == {
        ("firefox", 2.6),
        ("aioquic", 5.05),
    }
    assert {g.rtt_ms for g in held if g.scenario == "drop_client_flight_paper"} == {1.0, 9.0, 20.0, 100.0, 300.0}
    # The library runs keep the client's qlog alone, uncompressed (the part's archive compresses across runs); the
    # browsers, which write no qlog, and Table 4's second flights keep the client-side capture.
    library = [g for g in held if g.client not in ("firefox", "chromium")]
    assert not any(g.captures or g.compress or g.server_qlog for g in library)
    assert all(g.captures for g in groups if g.client in ("firefox", "chromium") or g.scenario == "default_pto")
    # rethink's lossy downloads at the paper's 10 MB; Table 4 and Fig. 11 under the names their claims read.
    assert {g.file_name for g in groups if g.scenario == "ack_ratio_loss"} == {"10MB"}
    assert {g.scenario for g in groups if g.extra.get("part") == "E1"} == {"default_pto"}
    assert {g.scenario for g in groups if g.extra.get("part") == "E2"} == {"transfer"}
