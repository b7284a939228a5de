"""What the fixture recorders (record_ack_policy.py, record_ack_receivers.py, record_tcp.py) share: record a
fixture's matrix afresh, and cut its captures to what the fixture needs. Needs root."""

from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path

from quicack.testbed import router
from quicack.testbed.reduce import cut_frames_not_from
from quicack.testbed.run import load_config, run_group
from quicack.testbed.scenarios import expand

SERVER_DATAGRAM_SNAPLEN = 96  # bytes kept of every datagram the client did not send


def record_fixture(fixture: Path) -> tuple[Path, int]:
    """Record ``fixture``/testbed.yaml into ``fixture``/raw (the old raw folder replaced); the raw folder and the
    number of failed runs. The impairment runs without real-time priority and without spinning: the fixtures are
    about which packets the receiver acknowledges and their bytes, not sub-millisecond timing, and the machine is
    shared."""
    raw = fixture / "raw"
    shutil.rmtree(raw, ignore_errors=True)
    router.PathImpairment = partial(router.PathImpairment, rt_priority=0, spin_ms=0.0)  # type: ignore[misc]
    failed = 0
    for group in expand(load_config(fixture / "testbed.yaml")):
        failed += sum(result.status != "ok" for result in run_group(group, raw))
    return raw, failed


def keep_client_side_cut(raw: Path) -> None:
    """Only the client-side capture, every datagram in it not sent by the client cut to SERVER_DATAGRAM_SNAPLEN."""
    for server_side in raw.glob("*/*/*/sim/trace_node_right.pcap*"):
        server_side.unlink()
    for client_side in raw.glob("*/*/*/sim/trace_node_left.pcap.gz"):
        run = json.loads((client_side.parents[1] / "run.json").read_text(encoding="utf-8"))
        cut_frames_not_from(client_side, run["testbed"]["addresses"]["client"], SERVER_DATAGRAM_SNAPLEN)
