"""One Linux TCP run end to end through the testbed (root): the router delays TCP as it delays QUIC, the receiver ACK
policy is applied, and the run's namespaces are gone afterwards."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

from quicack.pcap.decode import decode_capture
from quicack.testbed import netns
from quicack.testbed.run import execute_run
from quicack.testbed.scenarios import expand

pytestmark = [
    pytest.mark.testbed,
    pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root (network namespaces, NFQUEUE, tc)"),
]
RTT_MS = 40.0


def _group(ack_ratio: int):  # type: ignore[no-untyped-def]
    (group,) = expand({
        "dataset": "tcp_test", "server": "linux-tcp", "clients": ["linux-tcp"], "modes": ["none"],
        "scenarios": ["ack_ratio"], "file": "200KB", "rtts_ms": [RTT_MS], "capture_snaplen": 128, "compress": False,
        "receiver_ack_policy": {"ack_ratio": ack_ratio},
    })  # fmt: skip
    return group


@pytest.mark.parametrize("ack_ratio", [1, 10])
def test_tcp_run_is_delayed_and_acknowledged_by_the_policy(tmp_path: Path, ack_ratio: int) -> None:
    group = _group(ack_ratio)
    assert group.key == f"linux-tcp_linux-tcp/ack_ratio-none-rtt40ms-200KB-tcp-ar{ack_ratio}"
    result = execute_run(group, 1, tmp_path)
    assert result.status == "ok", result.failure_reason
    meta = result.run_json
    assert meta["transport"] == "tcp" and meta["downloaded"]["bytes"] == 200 * 1024
    job = meta["testbed"]["job"]
    assert not [ns for ns in netns.list_namespaces() if f"-{job}-" in ns], "the run's namespaces are left"

    left = pl.concat([b.tcp_segments for b in decode_capture(result.run_dir / "sim" / "trace_node_left.pcap")])
    right = pl.concat([b.tcp_segments for b in decode_capture(result.run_dir / "sim" / "trace_node_right.pcap")])
    # The handshake's RTT at the client side: SYN out, SYN-ACK back through both delays (20 ms each way).
    syn, syn_ack = (left.filter(pl.col("flags") == flags)["time_ms"][0] for flags in (0x02, 0x12))
    assert RTT_MS <= syn_ack - syn < RTT_MS + 10
    data = right.filter((pl.col("direction") == "s2c") & (pl.col("payload_bytes") > 0)).height
    acks = right.filter((pl.col("direction") == "c2s") & pl.col("pure_ack")).height
    if ack_ratio == 1:
        assert 0.95 <= data / acks <= 1.0  # quickack route: one ACK per segment
    else:
        assert meta["impairment"]["c2s"]["thinned_tcp_acks"] > 0 and data / acks > 5  # thinned 1:5 in the router
