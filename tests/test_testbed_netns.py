"""End-to-end testbed runs (root): outcome recorded, drops applied, and nothing left behind on any exit path."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quicack.testbed import netns
from quicack.testbed.calibrate import calibrate
from quicack.testbed.clients import client_executable
from quicack.testbed.run import execute_run
from quicack.testbed.scenarios import expand

pytestmark = [
    pytest.mark.testbed,
    pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root (network namespaces, NFQUEUE, tc)"),
]


def _net_namespaces_in_use() -> set[str]:
    """Network namespace inodes that any process is in (a leaked process keeps its namespace alive)."""
    out = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                out.add(os.readlink(f"/proc/{pid}/ns/net"))
            except OSError:
                pass
    return out


def _root_state() -> dict[str, object]:
    def run(argv: list[str]) -> str:
        return subprocess.run(argv, capture_output=True, text=True, encoding="utf-8").stdout

    return {
        "netns": sorted(n for n in netns.list_namespaces() if n.startswith(netns.NS_PREFIX)),
        "links": run(["ip", "-o", "link", "show"]).count("\n"),
        "qdisc": run(["tc", "qdisc", "show"]),
        "iptables": run(["iptables", "-S"]),
    }


@pytest.fixture
def leak_check():  # type: ignore[no-untyped-def]
    before_state, before_ns = _root_state(), _net_namespaces_in_use()
    yield
    time.sleep(0.2)
    after_state = _root_state()
    assert after_state == before_state | {"netns": after_state["netns"]}
    assert after_state["netns"] == before_state["netns"], "leaked namespaces"
    assert _net_namespaces_in_use() <= before_ns, "a process of the run is still alive"


def _group(client: str = "aioquic", **kw: object):  # type: ignore[no-untyped-def]
    cfg = {"dataset": "t", "clients": [client], "modes": ["iack"], "scenarios": ["noloss"], "rtts_ms": [20],
           "repetitions": 1, "compress": False, "timeout_s": 15} | kw  # fmt: skip
    return expand(cfg)[0]


def test_successful_run_leaves_nothing(tmp_path: Path, leak_check: None) -> None:
    res = execute_run(_group(), 1, tmp_path)
    assert res.status == "ok", res.failure_reason
    rj = json.loads((res.run_dir / "run.json").read_text(encoding="utf-8"))
    assert rj["downloaded"]["sha256"] == rj["file_sha256"]
    assert rj["cert_bytes"] == 1212 and rj["server_initial_pto_ms"] == 200.0
    for f in ("client/keys.log", "sim/trace_node_left.pcap", "sim/trace_node_right.pcap"):
        assert (res.run_dir / f).stat().st_size > 0, f
    # The server's secrets: its own keylog, or none because the client's holds every line (tidy drops it).
    server_keylog = res.run_dir / "server" / "keys.log"
    secrets = (server_keylog if server_keylog.exists() else res.run_dir / "client" / "keys.log").read_text(
        encoding="utf-8"
    )
    assert secrets.count("SERVER_HANDSHAKE_TRAFFIC_SECRET") == 1
    assert list((res.run_dir / "client" / "qlog").iterdir()) and list((res.run_dir / "server" / "qlog").iterdir())
    # The router applied the configured one-way delay (10 ms) to the client's first datagram.
    from quicack.pcap.capture_file import UdpDatagram, read_udp

    def datagrams(name: str) -> list[UdpDatagram]:
        return [d for d in read_udp(res.run_dir / "sim" / name) if isinstance(d, UdpDatagram)]

    left = next(d for d in datagrams("trace_node_left.pcap") if d.src == "198.18.0.2")
    right = next(d for d in datagrams("trace_node_right.pcap") if d.payload == left.payload)
    assert abs((right.time_abs_ns - left.time_abs_ns) / 1e6 - 10.0) < 1.0


def test_failed_run_is_data_and_leaves_nothing(tmp_path: Path, leak_check: None) -> None:
    # Every server datagram is dropped: the client cannot finish; the run must say so.
    g = _group(timeout_s=3)
    from dataclasses import replace

    g = replace(g, drop_to_client=tuple(range(1, 200)))
    res = execute_run(g, 1, tmp_path)
    assert res.status == "failed" and res.failure_reason
    assert res.run_json["impairment"]["s2c"]["dropped_indices"][:3] == [1, 2, 3]


def test_sigint_during_run_cleans_up(tmp_path: Path, leak_check: None) -> None:
    cfg = tmp_path / "tb.yaml"
    cfg.write_text("testbed:\n  dataset: t\n  clients: [aioquic]\n  modes: [wfc]\n  scenarios: [amplification]\n"
                   "  rtts_ms: [300]\n  repetitions: 3\n  compress: false\n", encoding="utf-8")  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "quicack.testbed.run", "--config", str(cfg), "--out",
                             str(tmp_path / "raw")], start_new_session=True)  # fmt: skip
    deadline = time.time() + 20
    while time.time() < deadline and not any(n.startswith(netns.NS_PREFIX) for n in netns.list_namespaces()):
        time.sleep(0.05)
    time.sleep(1.5)  # mid-run: server and client are up
    os.kill(proc.pid, signal.SIGINT)
    proc.wait(timeout=30)
    assert proc.returncode != 0


def test_drop_list_is_applied_and_calibration_finds_flights(tmp_path: Path, leak_check: None) -> None:
    if client_executable("quic-go") is None:
        pytest.skip("quic-go client not built")
    base = execute_run(_group("quic-go", modes=["wfc"]), 1, tmp_path / "base")
    assert base.status == "ok", base.failure_reason
    sim = base.run_dir / "sim"
    cal = calibrate(sim / "trace_node_left.pcap", sim / "trace_node_right.pcap")
    assert cal.drop_to_server and cal.drop_to_server[0] >= 2 and cal.drop_to_client
    from dataclasses import replace

    g = replace(_group("quic-go", modes=["wfc"], scenarios=["drop_client_flight"]), drop_to_server=cal.drop_to_server)
    res = execute_run(g, 1, tmp_path / "loss")
    assert res.status == "ok", res.failure_reason
    assert res.run_json["impairment"]["c2s"]["dropped_indices"] == list(cal.drop_to_server)
