"""imc24's server (quic-go + quicack's iack.patch) in real handshakes through the testbed: what its first datagrams
carry at the server-side capture, decrypted with the run's keylog, in each mode, and when the ServerHello leaves."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from quicack.stages.ingest import ingest_group
from quicack.testbed.clients import client_executable
from quicack.testbed.run import run_group
from quicack.testbed.scenarios import expand
from quicack.testbed.server_programs import server_executable

pytestmark = [
    pytest.mark.testbed,
    pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root (network namespaces, NFQUEUE, tc)"),
    pytest.mark.skipif(
        server_executable("quic-go") is None, reason="quic-go server not built (src/implementations/build.sh)"
    ),
    pytest.mark.skipif(
        client_executable("quic-go") is None, reason="quic-go client not built (src/implementations/build.sh)"
    ),
]
SERVER_SIDE = "sim_right"


def _record(tmp_path: Path, mode: str, scenario: str = "noloss", key_share: str | None = "x25519",
            cert_delay_ms: float | None = None,
            stack: str | float = "machine") -> tuple[dict[str, Any], pl.DataFrame, pl.DataFrame]:  # fmt: skip
    """One run of the quic-go client against the quic-go server: its run.json, and the server-side capture's
    s2c datagrams and frames (with the first client Initial's arrival at time 0)."""
    cfg = {"dataset": "t", "server": "quic-go", "clients": ["quic-go"], "modes": [mode], "scenarios": [scenario],
           "rtts_ms": [10], "repetitions": 1, "timeout_s": 15, "client_key_share": key_share,
           "cert_delay_ms": cert_delay_ms, "server_stack_delay": stack}  # fmt: skip
    (group,) = expand(cfg)
    raw = tmp_path / "raw"
    (res,) = run_group(group, raw, log=lambda _msg: None)
    assert res.status == "ok", res.failure_reason
    tables = ingest_group(raw, "quic-go_quic-go", "t")
    assert tables["ingest_issues"].filter(pl.col("severity") == "error").height == 0
    at_server = (pl.col("vantage") == SERVER_SIDE) & (pl.col("direction") == "s2c")
    datagrams = tables["datagrams"].filter(at_server).sort("datagram_index")
    frames = tables["frames"].filter(at_server & (pl.col("source") == "pcap"))
    return res.run_json, datagrams, frames


def _frames_of(frames: pl.DataFrame, datagram: int) -> list[tuple[str, str]]:
    rows = frames.filter(pl.col("datagram_index") == datagram).sort("frame_index")
    return [(space, kind) for space, kind in rows.select("pn_space", "frame_type").iter_rows() if kind != "padding"]


def _server_hello_datagram(frames: pl.DataFrame) -> int:
    hello = frames.filter(pl.col("tls_messages").list.contains("server_hello"))
    return int(hello["datagram_index"].min())


def _client_initial_datagrams(tmp_path: Path) -> int:
    tables = ingest_group(tmp_path / "raw", "quic-go_quic-go", "t")
    c2s = tables["packets"].filter((pl.col("source") == "pcap") & (pl.col("vantage") == SERVER_SIDE)
                                   & (pl.col("direction") == "c2s") & (pl.col("packet_type") == "initial"))  # fmt: skip
    return c2s.select("datagram_index").unique().height


def test_iack_sends_an_ack_only_initial_first_and_a_serverhello_without_ack(tmp_path: Path) -> None:
    run_json, datagrams, frames = _record(tmp_path, "iack")
    assert run_json["mode"] == "iack" and run_json["server_version"].startswith("quic-go v0.65.0+quicack-iack.patch")
    assert _frames_of(frames, 1) == [("initial", "ack")], "IACK: the first server datagram is an ACK-only Initial"
    hello = _server_hello_datagram(frames)
    assert hello == 2
    assert ("initial", "ack") not in _frames_of(frames, hello), "IACK: the ServerHello's Initial carries no ACK"
    assert datagrams["udp_payload_bytes"][0] < 60


def test_wfc_coalesces_the_ack_with_the_serverhello(tmp_path: Path) -> None:
    run_json, _, frames = _record(tmp_path, "wfc")
    assert run_json["mode"] == "wfc"
    assert _server_hello_datagram(frames) == 1
    first = _frames_of(frames, 1)
    assert ("initial", "ack") in first and ("initial", "crypto") in first, "WFC: ACK and ServerHello in one Initial"


def test_mode_none_is_quic_go_as_released(tmp_path: Path) -> None:
    run_json, _, frames = _record(tmp_path, "none", scenario="handshake")
    assert run_json["mode"] is None and run_json["server_hello_hold_ms"] is None
    assert _server_hello_datagram(frames) == 1 and ("initial", "ack") in _frames_of(frames, 1)


@pytest.mark.parametrize("mode", ["iack", "wfc"])
def test_certificate_delay_holds_the_serverhello_and_not_the_instant_ack(tmp_path: Path, mode: str) -> None:
    delta = 80.0
    run_json, datagrams, frames = _record(tmp_path, mode, cert_delay_ms=delta)
    assert run_json["cert_delay_ms"] == delta
    hello_at = datagrams.filter(pl.col("datagram_index") == _server_hello_datagram(frames))["time_ms"][0]
    assert hello_at >= delta, "the ServerHello leaves Δt after the first Initial arrived, not earlier"
    if mode == "iack":
        assert datagrams["time_ms"][0] < delta / 2, "the instant ACK does not wait for the certificate"
    else:
        assert _server_hello_datagram(frames) == 1, "WFC sends nothing before the ServerHello"


def test_paper_stack_delay_holds_the_first_flight(tmp_path: Path) -> None:
    run_json, datagrams, frames = _record(tmp_path, "wfc", stack=2.9)
    assert run_json["scenario"] == "noloss_paper_stack" and run_json["server_stack"]["condition"] == "paper"
    hold = run_json["server_hello_hold_ms"]
    assert hold == 2.9 and run_json["cert_delay_ms"] == 0.0
    assert datagrams.filter(pl.col("datagram_index") == _server_hello_datagram(frames))["time_ms"][0] >= hold


@pytest.mark.parametrize("mode", ["iack", "wfc"])
def test_a_two_datagram_client_hello_keeps_the_modes_apart(tmp_path: Path, mode: str) -> None:
    """The quic-go client with its default key shares (X25519MLKEM768 too) sends its ClientHello in two Initial
    datagrams. IACK acknowledges the first at once and the second with the ServerHello; WFC sends nothing before
    the ServerHello, however late the second datagram is (quic-go as released may send an ACK-only Initial)."""
    run_json, _, frames = _record(tmp_path, mode, key_share=None)
    assert run_json["client_key_share"] is None
    assert _client_initial_datagrams(tmp_path) >= 2
    hello = _server_hello_datagram(frames)
    before = [_frames_of(frames, d) for d in range(1, hello)]
    assert before == ([[("initial", "ack")]] if mode == "iack" else [])
