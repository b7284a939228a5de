"""What recorded runs show of each implementation's conditions (the ``here_default`` column of
data/reference/implementation_conditions.csv): per implementation and role, the size of its Initial datagrams, its
largest datagram, the length of the connection IDs it chose and the max_ack_delay it advertised.

Read from the captures of a few small runs per pairing (imc24: the no-loss handshakes at 9 ms; the ACK-ratio study:
its 1–2 MB downloads), with the Python decoder's connection state: the connection IDs from the long headers, the
transport parameters from the ClientHello (Initial keys) and the EncryptedExtensions (the run's keylogs). A capture
is one run's wire, so that a number here is what the implementation did, whatever it was configured with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from quicack.metrics.run_conditions import study_of
from quicack.pcap.capture_file import read_udp
from quicack.pcap.capture_records import UdpDatagram
from quicack.pcap.decode import CaptureDecoder
from quicack.pcap.decoder_engine import python_engine
from quicack.pcap.keylog import load_keylogs

# The run groups read per study: small runs whose captures hold both directions whole at the start.
OBSERVED_GROUPS = {
    "imc24": re.compile(r"^noloss-(iack|wfc)-rtt9ms-"),
    "ackratio": re.compile(r"^ack_ratio(_loss)?-.*-(1|2)MB-"),
}
# What each observation is called where here_default states it ("observed in data/sample, ...: <words> N B").
OBSERVATION_COLUMNS = ("initial_datagram_bytes", "largest_datagram_bytes", "connection_id_bytes", "max_ack_delay_ms")


def _is_initial(payload: bytes) -> bool:
    """A datagram that starts with a QUIC v1 long-header Initial packet (type bits 00)."""
    return bool(payload) and payload[0] & 0xB0 == 0x80 and payload[0] & 0x30 == 0


def observe_run(run_dir: Path) -> list[dict[str, Any]]:
    """One row per role of one run's first QUIC connection in its capture (none without a capture)."""
    facts = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    captures = sorted((run_dir / "sim").glob("*.pcap*")) if (run_dir / "sim").is_dir() else []
    if not captures:
        return []
    decoder = CaptureDecoder(load_keylogs(sorted(run_dir.glob("*/keys.log"))), facts["run_id"], "observed",
                             str(captures[0]), python_engine())  # fmt: skip
    sizes: list[tuple[tuple[str, int], int, bool]] = []
    for item in read_udp(captures[0]):
        if type(item) is UdpDatagram:
            decoder.add_counted(item)
            sizes.append(((item.src, item.src_port), item.udp_payload_bytes, _is_initial(item.payload)))
    connections = sorted(decoder.connections_by_odcid.values(), key=lambda c: c.number)
    if not connections:
        return []
    connection = connections[0]
    rows = []
    for role, endpoint, implementation in (("client", connection.client, facts["client_impl"]),
                                           ("server", connection.server, facts["server_impl"])):  # fmt: skip
        sent = [(size, initial) for address, size, initial in sizes if address == endpoint.address]
        initial_sizes = [size for size, initial in sent if initial]
        parameters = endpoint.transport_parameters
        rows.append({
            "study": study_of(facts["scenario"]),
            "implementation": implementation,
            "role": role,
            "run_id": facts["run_id"],
            "initial_datagram_bytes": max(initial_sizes) if initial_sizes else None,
            "largest_datagram_bytes": max((size for size, _ in sent), default=None),
            "connection_id_bytes": endpoint.cid_length,
            "max_ack_delay_ms": parameters.max_ack_delay_ms if parameters is not None else None,
        })  # fmt: skip
    return rows


def observed_runs(raw: Path, repetitions: Iterable[int] = (1,)) -> list[Path]:
    """The run folders of a raw dataset that ``observe`` reads: per pairing the groups of OBSERVED_GROUPS."""
    wanted = {str(r) for r in repetitions}
    return sorted(
        run for run in raw.glob("*/*/*")
        if run.name in wanted and (run / "run.json").is_file()
        and any(pattern.match(run.parent.name) for pattern in OBSERVED_GROUPS.values())
    )  # fmt: skip


def observe(raw: Path, repetitions: Iterable[int] = (1,)) -> pl.DataFrame:
    """Per study, implementation and role what the observed runs show: the distinct Initial datagram sizes,
    connection-ID lengths and advertised max_ack_delay values (sorted lists: one value when the runs agree), the
    largest datagram over all of them, and how many runs were read."""
    rows = [row for run in observed_runs(raw, repetitions) for row in observe_run(run)]
    if not rows:
        return pl.DataFrame()
    frame = pl.DataFrame(rows, infer_schema_length=None)
    return (
        frame.group_by("study", "implementation", "role")
        .agg(
            pl.col("initial_datagram_bytes").drop_nulls().unique().sort(),
            pl.col("largest_datagram_bytes").max(),
            pl.col("connection_id_bytes").drop_nulls().unique().sort(),
            pl.col("max_ack_delay_ms").drop_nulls().unique().sort(),
            pl.col("run_id").n_unique().alias("runs"),
        )
        .sort("study", "implementation", "role")
    )
