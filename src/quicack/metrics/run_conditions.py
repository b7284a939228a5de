"""The runs' conditions in a footnote: the server's stack delay (the paper's or this machine's) and each drawn
implementation's datagram size, path-MTU discovery, connection-ID length, ACK delay and initial RTT, from the runs'
scenario names and data/reference/implementation_conditions.csv (what the testbed sets: quicack.testbed.conditions)."""

from __future__ import annotations

import re
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
    # eq_missing: runs recorded as built have null here, and a comparison with null is null, which all() would skip
    as_paper = "implementation_conditions" in runs.columns and bool(
        runs["implementation_conditions"].eq_missing("paper").all()
    )
    table = implementation_conditions()
    studies = sorted({study_of(s) for s in scenarios.unique()})
    described = []
    for role, column in (("server", "server_impl"), ("client", "client_impl")):
        for implementation in sorted(runs[column].drop_nulls().unique()):
            rows = table.filter(pl.col("study").is_in(studies) & (pl.col("implementation") == implementation)
                                & (pl.col("role") == role))  # fmt: skip
            line = implementation_line(rows.to_dicts(), as_paper, "the paper" if studies == [IMC24] else "the papers")
            if line:
                described.append(f"{implementation} {role}: {line}")
    if described:
        recorded = "set as the papers' where the testbed can" if as_paper else "as built"
        parts.append(
            f"implementations {recorded} (data/reference/implementation_conditions.csv): " + "; ".join(described)
        )
    return ("Conditions — " + "; ".join(parts) + ".") if parts else ""


# The parameters in a footnote's order, each as a phrase of its value (``_phrase``).
PARAMETER_ORDER = (
    "max_udp_payload_bytes", "pmtu_discovery", "connection_id_bytes", "max_ack_delay_ms", "initial_rtt_ms",
)  # fmt: skip


def implementation_line(rows: list[dict[str, Any]], as_paper: bool, paper: str = "the papers") -> str:
    """One implementation's conditions as its runs had them, from its rows of implementation_conditions.csv (one per
    parameter; the first row of a parameter counts): e.g. "1,252-B datagrams, PMTUD on, 4-B CIDs, max_ack_delay
    26 ms, initial RTT 100 ms (as the paper's)". The runs had the papers' value where they were recorded with
    ``implementation_conditions: paper`` (``as_paper``) and the testbed sets it or the build already has it, else the
    build's own (``here_default``: its first word); in parentheses the papers' values that differ, and what the papers
    do not say (basis ``default_here``: the build's value stands in). A parameter another config key sets per run
    (``elsewhere``: the ACK-ratio receivers' ACK delay) says so."""
    first: dict[str, dict[str, Any]] = {}
    for row in rows:
        first.setdefault(row["parameter"], row)
    shown, differing, silent = [], [], []
    for parameter in (p for p in PARAMETER_ORDER if p in first):
        row = first[parameter]
        if row["applied"] == "elsewhere":
            shown.append(f"{_NAMES[parameter]} per run")
            continue
        here = (row["here_default"] or "").split(" ")[0] or row["value"]
        value = row["value"] if as_paper and row["applied"] in ("set", "default") else here
        reach = ""
        if parameter == "pmtu_discovery" and value == "on" and not as_paper:  # what the as-built captures showed
            largest = _observed_bytes("largest", row["here_default"])
            initial = _observed_bytes("Initial datagrams", row["here_default"])
            if largest and initial and largest > initial:
                reach = f" (up to {largest:,} B)"
        shown.append(_phrase(parameter, value) + reach)
        if value != row["value"]:
            differing.append(_phrase(parameter, row["value"]))
        elif row["basis"] == "default_here":
            silent.append(_NAMES[parameter])
    if not shown:
        return ""
    possessive = paper + ("'" if paper.endswith("s") else "'s")
    said = ([f"{possessive}: {', '.join(differing)}"] if differing else []) + (
        [f"not in {paper}: {', '.join(silent)}"] if silent else []
    )
    return ", ".join(shown) + f" ({' — '.join(said) if said else 'as ' + possessive})"


_NAMES = {"max_udp_payload_bytes": "datagram size", "pmtu_discovery": "PMTUD", "connection_id_bytes": "CID length",
          "max_ack_delay_ms": "max_ack_delay", "initial_rtt_ms": "initial RTT"}  # fmt: skip


def _observed_bytes(label: str, here_default: str | None) -> int | None:
    """A size here_default says the embedded dataset showed ("largest 1444 B"), or None."""
    found = re.search(label + r" ([\d,]+) B", here_default or "")
    return int(found.group(1).replace(",", "")) if found else None


def _phrase(parameter: str, value: str) -> str:
    """A parameter's value as the footnote says it: "1,252-B datagrams", "PMTUD off", "zero-length CIDs"."""
    number = int(value) if value.isdigit() else None
    if parameter == "max_udp_payload_bytes" and number is not None:
        return f"{number:,}-B datagrams"
    if parameter == "connection_id_bytes" and number is not None:
        return "zero-length CIDs" if number == 0 else f"{number}-B CIDs"
    if parameter in ("max_ack_delay_ms", "initial_rtt_ms") and number is not None:
        return f"{_NAMES[parameter]} {number:,} ms"
    return f"{_NAMES[parameter]} {value}"
