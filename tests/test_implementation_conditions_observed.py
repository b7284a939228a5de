"""Issue 34's "each implementation's datagram size, PMTU setting, CID length and ACK delay are in the config":
every implementation the testbed configs run has its row per parameter in data/reference/implementation_conditions.csv,
and what a row says was observed (``here_default``) is what the embedded dataset's captures show
(quicack.testbed.conditions_observed reads them: a few seconds)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
import yaml

from quicack.metrics.run_conditions import conditions_note, implementation_line, study_of
from quicack.reference import implementation_conditions
from quicack.testbed.conditions_observed import observe, observe_run
from quicack.testbed.scenarios import expand

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_RAW = ROOT / "data" / "sample" / "raw"
PAPER_RAW = ROOT / "data" / "paper" / "raw"
# The configs of the recordings the claims read: the embedded dataset, its browser runs, the papers' conditions.
CONFIGS = ("testbed.yaml", "testbed_browsers.yaml", "testbed_paper_conditions.yaml")
FOUR = {"max_udp_payload_bytes", "pmtu_discovery", "connection_id_bytes", "max_ack_delay_ms"}
OBSERVED = "observed in data/sample"


def _implementations_run() -> set[tuple[str, str, str]]:
    """(study, role, implementation) of every QUIC run group of the configs. Left out: Linux TCP (no QUIC datagram,
    connection ID or max_ack_delay) and imc24 Table 3's handshakes (scenario 'handshake': each server as released,
    as the public QUIC Interop Runner runs the paper read)."""
    seen = set()
    for name in CONFIGS:
        for group in expand(yaml.safe_load((ROOT / "config" / name).read_text(encoding="utf-8"))["testbed"]):
            if group.scenario == "handshake":
                continue
            study = study_of(group.scenario)
            seen |= {(study, "server", group.server), (study, "client", group.client)}
    return {entry for entry in seen if entry[2] != "linux-tcp"}


def test_every_implementation_the_configs_run_has_the_four_parameters() -> None:
    table = implementation_conditions()
    have = {
        (r["study"], r["role"], r["implementation"]): set(r["parameter"])
        for r in table.group_by("study", "role", "implementation").agg("parameter").iter_rows(named=True)
    }
    run = _implementations_run()
    assert ("imc24", "server", "quic-go") in run and ("ackratio", "server", "quiche") in run, sorted(run)
    missing = {}
    for entry in sorted(run):
        wanted = FOUR | ({"initial_rtt_ms"} if entry[:2] == ("imc24", "client") else set())
        if wanted - have.get(entry, set()):
            missing[entry] = sorted(wanted - have.get(entry, set()))
    assert not missing, f"implementation_conditions.csv lacks: {missing}"


@pytest.fixture(scope="module")
def observed() -> pl.DataFrame:
    return observe(SAMPLE_RAW)


def test_the_observation_reads_both_ends_of_a_recorded_handshake() -> None:
    # quic-go's server and Firefox (neqo) in one no-loss run: lengths from the long headers, max_ack_delay from the
    # ClientHello and the EncryptedExtensions (decrypted with the run's keylog).
    (run,) = sorted((SAMPLE_RAW / "quic-go_firefox").glob("noloss-iack-rtt9ms-*/1"))
    rows = {r["role"]: r for r in observe_run(run)}
    assert rows["server"] | {"run_id": None} == {
        "study": "imc24", "implementation": "quic-go", "role": "server", "run_id": None,
        "initial_datagram_bytes": 1280, "largest_datagram_bytes": 1280, "connection_id_bytes": 4,
        "max_ack_delay_ms": 26.0,
    }  # fmt: skip
    assert (rows["client"]["connection_id_bytes"], rows["client"]["max_ack_delay_ms"]) == (3, 20.0)
    assert rows["client"]["initial_datagram_bytes"] == 1252


def _number(pattern: str, text: str) -> int | None:
    found = re.search(pattern, text)
    return None if found is None else int(found.group(1).replace(",", ""))


def test_what_the_table_says_was_observed_is_what_the_embedded_dataset_shows(observed: pl.DataFrame) -> None:
    rows = implementation_conditions().filter(pl.col("here_default").str.contains("observed", literal=True))
    seen = {(r["study"], r["implementation"], r["role"]): r for r in observed.iter_rows(named=True)}
    wrong = []
    for row in rows.iter_rows(named=True):
        where = (row["study"], row["implementation"], row["role"])
        assert where in seen, f"{where}: no run of it in the observed groups of data/sample"
        facts, text = seen[where], row["here_default"]
        first = text.split(" ")[0]
        checks = [
            ("Initial datagrams", _number(r"Initial datagrams ([\d,]+) B", text), facts["initial_datagram_bytes"],
             lambda stated, seen_: [stated] == seen_),
            ("largest", _number(r"largest ([\d,]+) B", text), facts["largest_datagram_bytes"],
             lambda stated, seen_: stated == seen_),
        ]  # fmt: skip
        if row["parameter"] == "connection_id_bytes":
            checks.append(("CID", int(first), facts["connection_id_bytes"], lambda s, o: [s] == o))
        if row["parameter"] == "max_ack_delay_ms":
            checks.append(("max_ack_delay", float(first), facts["max_ack_delay_ms"], lambda s, o: [s] == o))
        for name, stated, seen_value, agrees in checks:
            if stated is not None and not agrees(stated, seen_value):
                wrong.append(f"{where} {row['parameter']}: {name} {stated} stated, {seen_value} observed")
    assert not wrong, "\n".join(wrong)
    # every implementation and parameter the captures can show, in the form read here
    assert rows.filter(pl.col("here_default").str.contains(OBSERVED, literal=True)).height >= 50


def test_every_footnote_names_each_drawn_implementations_datagrams_pmtud_cids_and_ack_delay() -> None:
    # The footnote of any figure or table drawing an implementation's runs (quicack.rendered: conditions_note),
    # for each implementation the configs run, as built and under the papers' conditions.
    implementations = sorted(_implementations_run())
    assert len(implementations) >= 15  # the imc24 server and clients, the ACK-ratio senders and receivers
    for study, role, implementation in implementations:
        peer = "quinn" if study == "ackratio" else "quic-go"
        runs = pl.DataFrame({
            "client_impl": [implementation if role == "client" else peer],
            "server_impl": [implementation if role == "server" else peer],
            "scenario": ["ack_ratio" if study == "ackratio" else "noloss"],
        })  # fmt: skip
        for conditions in (None, "paper"):
            note = conditions_note(runs.with_columns(pl.lit(conditions, pl.String).alias("implementation_conditions")))
            segment = note.split(f"{implementation} {role}: ")[1].split(";")[0].removesuffix(".")
            assert re.search(r"^[\d,]+-B datagrams, PMTUD (on|off)", segment), (study, role, segment)
            assert re.search(r"(\d+-B|zero-length) CIDs", segment), (study, role, segment)
            assert re.search(r"max_ack_delay (\d+ ms|per run)", segment), (study, role, segment)
            assert segment.endswith(")"), segment  # what the papers had beside it
            # runs recorded as built carry null (the embedded dataset's runs table): never "set as the papers'"
            assert ("set as the papers'" in note) == (conditions == "paper"), note


def test_an_implementation_line_says_where_the_papers_differ_and_where_they_are_silent() -> None:
    table = implementation_conditions()

    def rows(study: str, implementation: str, role: str) -> list[dict]:
        return table.filter((pl.col("study") == study) & (pl.col("implementation") == implementation)
                            & (pl.col("role") == role)).to_dicts()  # fmt: skip

    quiche = rows("ackratio", "quiche", "server")
    assert implementation_line(quiche, as_paper=True) == (
        "1,350-B datagrams, PMTUD off, 20-B CIDs, max_ack_delay 25 ms (the papers': 1,280-B datagrams, 8-B CIDs)"
    )
    assert implementation_line(rows("ackratio", "quinn", "server"), as_paper=True) == (
        "1,280-B datagrams, PMTUD off, 8-B CIDs, max_ack_delay 25 ms (as the papers')"
    )
    assert implementation_line(rows("imc24", "chromium", "client"), as_paper=False, paper="the paper").endswith(
        "(not in the paper: datagram size, PMTUD, CID length, max_ack_delay, initial RTT)"
    )
    assert "max_ack_delay per run" in implementation_line(rows("ackratio", "quinn", "client"), as_paper=False)
    assert implementation_line([], as_paper=False) == ""


def test_what_the_testbed_sets_is_what_the_dataset_paper_shows() -> None:
    # The quic-go server's --initial-packet-size and --connection-id-length (applied 'set') under
    # implementation_conditions: paper, as imc24's aioquic client logged the server's datagrams and long headers
    # (the dataset 'paper' keeps the client's qlog alone); as built it sent 1,280 B (the table's here_default).
    table = implementation_conditions().filter(
        (pl.col("study") == "imc24") & (pl.col("implementation") == "quic-go") & (pl.col("role") == "server")
    )
    value = {r["parameter"]: r for r in table.iter_rows(named=True)}
    assert value["max_udp_payload_bytes"]["applied"] == value["connection_id_bytes"]["applied"] == "set"
    qlogs = sorted(PAPER_RAW.glob("quic-go_aioquic/noloss_paper-*/*/client/qlog/*.qlog"))[:20]
    assert len(qlogs) == 20, f"the dataset 'paper' is not unpacked at {PAPER_RAW}"
    full, cids = set(), set()
    for path in qlogs:
        events = json.loads(path.read_text(encoding="utf-8"))["traces"][0]["events"]
        full |= {raw["payload_length"] for e in events if e["name"] == "transport:datagrams_received"
                 for raw in e["data"]["raw"] if raw["payload_length"] >= 1200}  # fmt: skip
        cids |= {len(e["data"]["header"]["scid"]) // 2 for e in events
                 if e["name"] == "transport:packet_received" and e["data"]["header"].get("scid")}  # fmt: skip
    assert full == {int(value["max_udp_payload_bytes"]["value"])}, full
    assert cids == {int(value["connection_id_bytes"]["value"])}, cids
