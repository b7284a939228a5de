"""Observation points: the two endpoints, and the two capture points of the emulated link.

The QUIC Interop Runner's simulator captures on both sides of its link: ``sim/trace_node_left.pcap`` faces the
client, ``sim/trace_node_right.pcap`` the server. quicack calls those points ``sim_left`` and ``sim_right``;
qlogs are written by an endpoint, ``client`` or ``server``.
"""

from __future__ import annotations

import re
from pathlib import Path

CLIENT = "client"
SERVER = "server"
ENDPOINTS = (CLIENT, SERVER)
SIM_LEFT = "sim_left"
SIM_RIGHT = "sim_right"

# The capture file names of the QIR simulator and of the testbed's router, by capture point.
CAPTURE_FILE_NAMES = {SIM_LEFT: "trace_node_left.pcap", SIM_RIGHT: "trace_node_right.pcap"}
_CAPTURE_STEM = re.compile(r"trace_node_(left|right)")


def capture_point(path: Path) -> str:
    """The capture point a capture file was taken at: ``sim_left`` / ``sim_right`` for the simulator's
    ``trace_node_{left,right}.pcap[.gz]``, else the file's stem (``loopback.pcap`` → ``loopback``)."""
    stem = path.name.split(".")[0]
    match = _CAPTURE_STEM.fullmatch(stem)
    return f"sim_{match.group(1)}" if match else stem


def endpoint_from_path(path: Path) -> str | None:
    """The endpoint that wrote a qlog, from where it lies: the QIR keeps them in ``…/client/qlog/`` and
    ``…/server/qlog/``; failing that, a file name that says one of the two (``x_client.sqlog``); else None."""
    parts = [p.lower() for p in path.parts]
    for part in reversed(parts[:-1]):
        if part in ENDPOINTS:
            return part
    name = parts[-1] if parts else ""
    says_client, says_server = CLIENT in name, SERVER in name
    if says_client != says_server:
        return CLIENT if says_client else SERVER
    return None
