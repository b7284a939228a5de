"""The runs' conditions in a footnote: the server's stack delay (the paper's or this machine's) and each drawn
implementation's datagram size, path-MTU discovery, connection-ID length, ACK delay and initial RTT, from the runs'
scenario names and data/reference/implementation_conditions.csv (what the testbed sets: quicack.testbed.conditions)."""

from __future__ import annotations

from typing import Any

import polars as pl

from quicack.layout.naming import PAPER_CONDITIONS_SUFFIX, PAPER_STACK_SUFFIX
from quicack.reference import implementation_conditions

# The studies of implementation_conditions.csv: imc24's handshakes and the ACK-ratio study's downloads.
IMC24 = "imc24"
ACK_RATIO = "ackratio"


def study_of(scenario: str) -> str:
    """The study of implementation_conditions.csv a scenario belongs to: the ACK-ratio downloads or imc24."""
    return ACK_RATIO if scenario.startswith("ack_ratio") else IMC24


def conditions_note(runs: pl.DataFrame) -> str:
    """The footnote's sentence on the implementations' conditions of the runs drawn: the server's stack delay (the
    paper's or this machine's, from the scenario names) and, per implementation of the runs, the datagram size,
    path-MTU discovery, connection-ID length, ACK delay and initial RTT — the papers' where the runs were recorded
    with ``implementation_conditions: paper`` and the testbed could set them, else each as built."""
    if runs.is_empty() or not {"client_impl", "server_impl", "scenario"} <= set(runs.columns):
        return ""
    parts = []
    scenarios = runs["scenario"].drop_nulls()
    per_client = scenarios.str.ends_with(PAPER_CONDITIONS_SUFFIX)
    fixed = scenarios.str.ends_with(PAPER_STACK_SUFFIX)
    held = per_client | fixed
    if held.any():
        kinds = [kind for kind, present in (
            ("per client as imc24 gives it, data/reference/imc24_stack_delay.csv: runs *_paper", per_client.any()),
            ("2.9 ms for every client: runs *_paper_stack", fixed.any()),
        ) if present]  # fmt: skip
        parts.append(
            f"server stack delay: the paper's (ServerHello held, {'; '.join(kinds)})"
            + ("" if held.all() else " and this machine's (the other runs)")
        )
    as_paper = "implementation_conditions" in runs.columns and bool(
        (runs["implementation_conditions"] == "paper").all()
    )
    table = implementation_conditions()
    studies = sorted({study_of(s) for s in scenarios.unique()})
    described = []
    for role, column in (("server", "server_impl"), ("client", "client_impl")):
        for implementation in sorted(runs[column].drop_nulls().unique()):
            rows = table.filter(pl.col("study").is_in(studies) & (pl.col("implementation") == implementation)
                                & (pl.col("role") == role) & (pl.col("applied") != "elsewhere"))  # fmt: skip
            rows = rows.unique(subset=["parameter"], keep="first", maintain_order=True)
            values = [_shown(r, as_paper) for r in rows.iter_rows(named=True)]
            if values:
                described.append(f"{implementation} {role}: {', '.join(values)}")
    if described:
        recorded = "set as the papers' where the testbed can" if as_paper else "as built"
        parts.append(
            f"implementations {recorded} (data/reference/implementation_conditions.csv): " + "; ".join(described)
        )
    return ("Conditions — " + "; ".join(parts) + ".") if parts else ""


_SHORT = {"max_udp_payload_bytes": "max UDP payload", "pmtu_discovery": "PMTUD", "connection_id_bytes": "CID",
          "max_ack_delay_ms": "max ACK delay", "initial_rtt_ms": "initial RTT"}  # fmt: skip
_UNIT = {"max_udp_payload_bytes": " B", "pmtu_discovery": "", "connection_id_bytes": " B", "max_ack_delay_ms": " ms",
         "initial_rtt_ms": " ms"}  # fmt: skip


def _shown(row: dict[str, Any], as_paper: bool) -> str:
    """One parameter of one implementation as the runs had it, with the papers' value beside it where it differs."""
    here = (row["here_default"] or "").split(" ")[0]
    value = row["value"] if as_paper and row["applied"] in ("set", "default") else here or row["value"]
    unit = _UNIT[row["parameter"]]
    differs = "" if value == row["value"] else f" (papers' {row['value']}{unit})"
    return f"{_SHORT[row['parameter']]} {value}{unit}{differs}"
