"""The papers' conditions in real runs through the testbed (issue 34): the ServerHello held so that the client sees
imc24's stack delay for it, and the implementations set as the papers' runs had them (ngtcp2's initial RTT, the
quic-go server's datagram size), read back from the client-side capture."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from quicack.models import recovery
from quicack.stages.derive_stage import DERIVE_INPUTS, derive_tables
from quicack.stages.ingest import ingest_group
from quicack.testbed.clients import client_executable
from quicack.testbed.conditions import paper_stack_delay
from quicack.testbed.run import run_group
from quicack.testbed.scenarios import expand
from quicack.testbed.server_programs import server_executable

pytestmark = [
    pytest.mark.testbed,
    pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root (network namespaces, NFQUEUE, tc)"),
    pytest.mark.skipif(
        server_executable("quic-go") is None, reason="quic-go server not built (src/implementations/build.sh)"
    ),
]


def _record(tmp_path: Path, client: str, **block: Any) -> tuple[dict[str, Any], dict[str, pl.DataFrame]]:
    """One run of ``client`` against imc24's server at 9 ms: its run.json and its ingest and derived tables."""
    if client_executable(client) is None:
        pytest.skip(f"{client} client not available")
    cfg = {"dataset": "t", "server": "quic-go", "clients": [client], "modes": ["iack"], "scenarios": ["noloss"],
           "rtts_ms": [9], "repetitions": 1, "timeout_s": 15, "client_key_share": "x25519",
           "server_qlog": False} | block  # fmt: skip
    (group,) = expand(cfg)
    raw = tmp_path / "raw"
    (res,) = run_group(group, raw, log=lambda _msg: None)
    assert res.status == "ok", res.failure_reason
    tables = ingest_group(raw, group.key.split("/")[0], "t")
    derived = derive_tables({name: tables[name] for name in DERIVE_INPUTS}, recovery.RecoveryParams())
    return res.run_json, tables | derived


def test_the_client_sees_the_papers_stack_delay(tmp_path: Path) -> None:
    run_json, tables = _record(tmp_path, "quic-go", server_stack_delay="paper")
    paper_ms = float(paper_stack_delay("quic-go")["paper_median_ms"])
    assert run_json["scenario"] == "noloss_paper_stack"
    assert run_json["server_stack"]["condition"] == "paper" and run_json["server_stack"]["paper_delay_ms"] == paper_ms
    gap = tables["handshake_runs"]["ack_to_server_hello_ms"][0]
    # The instant ACK to the ServerHello at the client-side capture: the paper's delay, not this machine's ~0.8 ms
    # (a loaded machine adds to it, never takes away: the hold is a lower bound).
    assert paper_ms - 0.3 <= gap < paper_ms + 2.0, gap


def test_ngtcp2_under_the_papers_conditions_probes_after_imc24s_default_pto(tmp_path: Path) -> None:
    """imc24 Table 4: ngtcp2's default PTO was 300 ms (a 100 ms initial RTT); Debian's 0.12 starts from 333 ms
    (999 ms) unless the testbed sets --initial-rtt, as `implementation_conditions: paper` does. The quic-go server
    sends its datagrams no larger than quic-go's of then (1,252 B)."""
    run_json, tables = _record(
        tmp_path, "ngtcp2", modes=["wfc"], scenarios=["default_pto"], implementation_conditions="paper"
    )
    assert run_json["implementation_conditions"] == "paper"
    assert run_json["implementation_conditions_set"]["client"]["options"] == ["--initial-rtt=100ms"]
    pto = tables["handshake_runs"]["default_pto_ms"][0]
    # 286.8 ms in the first run here (a loaded 2-core machine; Table 4 prints 300), against 999 ms as built.
    assert 250.0 <= pto < 350.0, pto
    s2c = tables["datagrams"].filter((pl.col("vantage") == "sim_left") & (pl.col("direction") == "s2c"))
    assert not s2c.is_empty() and s2c["udp_payload_bytes"].max() <= 1252


def test_quinn_under_the_papers_conditions_keeps_quiclys_datagram_size(tmp_path: Path) -> None:
    """The ACK-ratio study's quinn pair stands in for quicly, whose datagrams stayed at 1,280 B (no path-MTU
    discovery): with `implementation_conditions: paper` neither end sends a larger one (as built: up to 1,452 B)."""
    if server_executable("quinn") is None:
        pytest.skip("quinn server not built")
    run_json, tables = _record(tmp_path, "quinn", server="quinn", modes=["none"], scenarios=["ack_ratio"],
                               path_profile=["ackfreq22-vdsl"], implementation_conditions="paper",
                               captures=True)  # fmt: skip
    assert run_json["implementation_conditions_set"]["server"]["options"] == ["--initial-mtu", "1280", "--no-pmtud"]
    sizes = (
        tables["datagrams"]
        .filter(pl.col("vantage") == "sim_left")
        .group_by("direction")
        .agg(pl.col("udp_payload_bytes").max())
    )
    assert run_json["implementation_conditions_set"]["client"]["options"] == ["--initial-mtu", "1280", "--no-pmtud"]
    largest = dict(sizes.iter_rows())
    # The server's data fills 1,280 B datagrams; the client sends ACKs after its 1,200 B Initial.
    assert largest["s2c"] == 1280 and largest["c2s"] <= 1280, largest


def test_quic_go_under_the_papers_conditions_sends_the_datagrams_of_its_2024_version(tmp_path: Path) -> None:
    """quic-go before v0.47 (imc24's, 2024) sized its datagrams 1,252 B before path-MTU discovery; v0.65 1,280 B. Under
    `implementation_conditions: paper` the client's padded Initial and the server's datagrams are 1,252 B (the
    option goes before the URL: Go's flag parsing stops at the first argument that is not a flag)."""
    run_json, tables = _record(tmp_path, "quic-go", implementation_conditions="paper")
    assert run_json["implementation_conditions_set"]["client"]["options"] == ["--initial-packet-size", "1252"]
    sizes = (
        tables["datagrams"]
        .filter(pl.col("vantage") == "sim_left")
        .group_by("direction")
        .agg(pl.col("udp_payload_bytes").max())
    )
    assert dict(sizes.iter_rows()) == {"c2s": 1252, "s2c": 1252}
