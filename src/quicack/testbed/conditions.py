"""The papers' conditions the testbed sets, beside the path: the server's stack delay per client (imc24 §4.1) and
each implementation's datagram size, path-MTU discovery, connection-ID length, ACK delay and initial RTT.

Both are reference tables (data/reference/imc24_stack_delay.csv, data/reference/implementation_conditions.csv); this
module turns them into what a run group sets (the ServerHello hold, command-line options) and what run.json records.

The stack delay is a condition with two values, like a path: ``machine`` (the server answers with this machine's own
processing, ~0.8 ms) and ``paper`` (the ServerHello held so that each client sees the delay imc24's testbed showed
it). Runs under ``paper`` carry it in their scenario name (``<scenario>_paper_stack``: quicack.layout's
PAPER_STACK_SUFFIX), so that claims select them by scenario, and in run.json (``server_stack``).
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

import polars as pl

from quicack.layout.naming import PAPER_CONDITIONS_SUFFIX, PAPER_STACK_SUFFIX
from quicack.metrics.run_conditions import study_of
from quicack.reference import implementation_conditions, paper_table

# The testbed config's `implementation_conditions`: 'paper' sets every implementation as the papers' runs had it,
# where the testbed can (None: each as built).
IMPLEMENTATION_CONDITIONS = ("paper",)
# How a row of implementation_conditions.csv is applied: the testbed passes `option` (set), the implementation's
# default already is the value (default), another config key sets it (elsewhere), or no knob can (cannot).
APPLIED = ("set", "default", "elsewhere", "cannot")

STACK_MACHINE = "machine"
STACK_PAPER = "paper"
STACK_CONDITIONS = (STACK_MACHINE, STACK_PAPER)

# What the hold does not cover of the gap a client sees between the instant ACK and the ServerHello: after the
# run-loop timer fires, quic-go packs and sends the flight, and the impairment program forwards it. Measured on the
# embedded dataset (data/sample): with 2.9 ms held, the client-side captures of drop_client_flight_paper_stack (IACK,
# 9 ms, ten runs per client) show 3.17–3.27 ms (median per client), i.e. 0.27–0.37 ms more. The hold is the paper's
# delay minus this, so that the clients see the paper's (testbed config `server_stack_residual_ms` overrides it).
HOLD_RESIDUAL_MS = 0.3


@functools.cache
def stack_delay_table() -> pl.DataFrame:
    """data/reference/imc24_stack_delay.csv: per client the stack delay imc24's testbed showed it (median, ms), and
    whether that is the paper's value for that client (``per_client``) or the middle of the paper's range, our
    choice where the paper names no value (``paper_median``)."""
    return paper_table("imc24", "stack_delay", with_quote=True)


def paper_stack_delay(client: str) -> dict[str, Any]:
    """The row of ``client`` in imc24_stack_delay.csv; ValueError names the clients it has."""
    table = stack_delay_table()
    row = table.filter(pl.col("client") == client)
    if row.height != 1:
        raise ValueError(f"no imc24 stack delay for client {client!r} in data/reference/imc24_stack_delay.csv "
                         f"(clients: {', '.join(table['client'])})")
    return row.row(0, named=True)


def server_hello_hold_ms(condition: str | float | int, client: str, residual_ms: float = HOLD_RESIDUAL_MS) -> float:
    """The ServerHello hold that gives ``client`` the stack delay of ``condition``: ``machine`` none (the server's
    own), ``paper`` the paper's delay for this client less what the hold does not cover (``residual_ms``), a number
    that hold for every client (the embedded dataset's 2.9 ms: imc24's smallest per-client value)."""
    if isinstance(condition, bool):
        raise ValueError(f"server_stack_delay: {condition!r} is neither {' nor '.join(STACK_CONDITIONS)} nor ms")
    if isinstance(condition, int | float):
        if condition < 0:
            raise ValueError(f"server_stack_delay: {condition} ms is negative")
        return float(condition)
    if condition == STACK_MACHINE:
        return 0.0
    if condition == STACK_PAPER:
        return round(max(0.0, float(paper_stack_delay(client)["paper_median_ms"]) - residual_ms), 3)
    raise ValueError(
        f"server_stack_delay: {condition!r} is neither {' nor '.join(STACK_CONDITIONS)} nor a number of ms"
    )


def stack_scenario(scenario: str, condition: str | float | int, implementation: str | None = None) -> str:
    """The scenario name a run group records under the stack-delay ``condition`` and the ``implementation``
    conditions: ``<scenario>_paper`` under the paper's per-client delay with every implementation set as the paper's
    (the paper's conditions as a whole), ``<scenario>_paper_stack`` under a held delay alone, the scenario itself under
    this machine's own delay."""
    if condition == STACK_MACHINE:
        return scenario
    if condition == STACK_PAPER and implementation == "paper":
        return scenario + PAPER_CONDITIONS_SUFFIX
    return scenario + PAPER_STACK_SUFFIX


def stack_record(scenario: str, client: str, hold_ms: float | None, condition: str | None) -> dict[str, Any]:
    """run.json's ``server_stack``: the condition (``machine`` or ``paper``) and the hold set; under ``paper`` the
    delay the paper gives for this client, on what basis (``per_client``, ``paper_median``, or a hold fixed for every
    client: ``condition`` None with a _paper_stack scenario) and the part the hold leaves to this machine."""
    if hold_ms is None:
        return {"condition": None, "hold_ms": None}  # a server without handshake modes: no imc24 run
    if not scenario.endswith((PAPER_STACK_SUFFIX, PAPER_CONDITIONS_SUFFIX)):
        return {"condition": STACK_MACHINE, "hold_ms": hold_ms}
    if condition != STACK_PAPER:
        return {"condition": STACK_PAPER, "hold_ms": hold_ms, "basis": "fixed hold for every client"}
    row = paper_stack_delay(client)
    paper_ms = float(row["paper_median_ms"])
    return {
        "condition": STACK_PAPER,
        "hold_ms": hold_ms,
        "paper_delay_ms": paper_ms,
        "paper_client": row["paper_client"],
        "basis": row["basis"],
        "residual_ms": round(paper_ms - hold_ms, 3),
    }


def conditions_of(study: str, implementation: str, role: str) -> pl.DataFrame:
    """The rows of implementation_conditions.csv for one implementation in one role of one study."""
    table = implementation_conditions()
    return table.filter(
        (pl.col("study") == study) & (pl.col("implementation") == implementation) & (pl.col("role") == role)
    )


def condition_options(study: str, implementation: str, role: str) -> list[str]:
    """The command-line options that set ``implementation`` (as ``role``) to the papers' conditions: the ``option``
    of its rows marked ``set``, in the file's order."""
    rows = conditions_of(study, implementation, role).filter(pl.col("applied") == "set")
    return [word for option in rows["option"] for word in option.split()]


class ConditionedGroup(Protocol):
    """What of a run group (quicack.testbed.scenarios.RunGroup, which imports this module) its conditions need."""

    @property
    def implementation_conditions(self) -> str | None: ...
    @property
    def scenario(self) -> str: ...
    @property
    def client(self) -> str: ...
    @property
    def server(self) -> str: ...


def group_condition_options(group: ConditionedGroup, role: str) -> list[str]:
    """The options that set a run group's client or server to the papers' conditions (none unless the group asks)."""
    if group.implementation_conditions is None:
        return []
    return condition_options(study_of(group.scenario), group.server if role == "server" else group.client, role)


def conditions_record(conditions: str | None, scenario: str, client: str, server: str) -> dict[str, Any] | None:
    """run.json's ``implementation_conditions_set``: under ``paper``, per role the parameters the papers' runs had
    and how each was applied (the options passed), so that a run says what it was recorded with; None = defaults."""
    if conditions is None:
        return None
    study = study_of(scenario)
    record: dict[str, Any] = {"study": study}
    for role, implementation in (("client", client), ("server", server)):
        rows = conditions_of(study, implementation, role)
        record[role] = {
            "implementation": implementation,
            "parameters": {
                r["parameter"]: {"value": r["value"], "applied": r["applied"]} for r in rows.iter_rows(named=True)
            },
            "options": condition_options(study, implementation, role),
        }
    return record
