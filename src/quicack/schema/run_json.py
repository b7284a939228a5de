"""What a run's ``run.json`` says, and which of the papers' studies need each key: the one schema the README's
"Your own runs" table is generated from (`markdown_table`) and ingest checks run.json against (`missing_keys`).

A run.json is optional (QIR logs and the imc24 artifact have none): whatever it lacks is read from the folder names
when they follow the testbed's naming (``<server>_<client>/<scenario>-<mode>-rtt<N>ms-<size>-<alpn>/<repetition>/``),
and the status is inferred from the run's data. The keys below are those the folder names cannot always give and
that an analysis selects runs by; every other ``runs`` column may be in run.json too (`quicack.schema.RUNS`).
"""

from __future__ import annotations

from dataclasses import dataclass

from quicack.schema.ingest_tables import RUNS

# The studies, as the README names them, with the artefacts that read the runs of each.
IMC24 = "imc24 handshake (Tables 3-4, Figs. 5-7, 11-16, claims)"
IMC24_SWEEP = "imc24 Δt sweep (Fig. 4 measured, sweet-spot claims)"
ACK_RATIO = "ACK-ratio study (ackfreq22, rethink, tcpquic figures and tables)"


@dataclass(frozen=True)
class RunJsonKey:
    name: str
    json_type: str  # as JSON says it: string, number, integer, list of integers
    from_folder: bool  # the testbed's folder names say it (a run without run.json still has it)
    needed_by: tuple[str, ...]
    example: object
    null_means: str | None = None  # what a null (or absent) value stands for, when it is not "unknown"
    # The scenarios whose runs need the key (by name or name prefix); None: every run's.
    scenarios: tuple[str, ...] | None = None

    def needed_for(self, scenario: str | None) -> bool:
        return self.scenarios is None or (scenario is not None and scenario.startswith(self.scenarios))

    @property
    def description(self) -> str:
        """The runs column's description (`quicack.schema.RUNS`): the key fills that column."""
        return next(c.comment for c in RUNS.columns if c.name == self.name)


RUN_JSON_KEYS: tuple[RunJsonKey, ...] = (
    RunJsonKey("status", "string", False, (IMC24, IMC24_SWEEP, ACK_RATIO), "ok"),
    RunJsonKey("server_impl", "string", True, (IMC24, IMC24_SWEEP, ACK_RATIO), "quic-go"),
    RunJsonKey("client_impl", "string", True, (IMC24, IMC24_SWEEP, ACK_RATIO), "ngtcp2"),
    RunJsonKey("scenario", "string", True, (IMC24, IMC24_SWEEP, ACK_RATIO), "noloss"),
    RunJsonKey("mode", "string", True, (IMC24, IMC24_SWEEP), "wfc"),
    RunJsonKey("rtt_ms", "number", True, (IMC24, IMC24_SWEEP, ACK_RATIO), 9.0),
    # Only the Δt sweep's runs (quicack.metrics.selection.delay_sweep_runs) are selected by it.
    RunJsonKey("cert_delay_ms", "number", False, (IMC24_SWEEP,), 0.0, scenarios=("noloss",)),
    RunJsonKey("file_bytes", "integer", True, (ACK_RATIO,), 10240),
    RunJsonKey("path_profile", "string", True, (ACK_RATIO,), None, "no emulated path profile"),
    RunJsonKey("ack_ratio", "integer", False, (ACK_RATIO,), None, "the client's default ACK policy"),
    RunJsonKey("pacing", "string", False, (ACK_RATIO,), None, "the sender's default pacing"),
)  # fmt: skip

KEYS_BY_NAME = {key.name: key for key in RUN_JSON_KEYS}


def missing_keys(meta: dict, study: str | None = None) -> list[RunJsonKey]:
    """The keys (of ``study``, or of any study) that neither run.json nor the folder name gave a value: ``meta`` is
    the run's description with the folder name's values filled in. ``status`` is never missing (it is inferred), nor
    a key whose null has a meaning of its own (the default ACK policy)."""
    return [
        key
        for key in RUN_JSON_KEYS
        if key.name != "status"
        and key.null_means is None
        and meta.get(key.name) is None
        and key.needed_for(meta.get("scenario"))
        and (study is None or study in key.needed_by)
    ]


def markdown_table() -> str:
    """The README's table of run.json keys (tests/test_own_runs.py checks the README holds it as generated)."""
    lines = ["| key | JSON type | when run.json lacks it | needed by | meaning |", "|---|---|---|---|---|"]
    for key in RUN_JSON_KEYS:
        if key.name == "status":
            fallback = "inferred from the data (HANDSHAKE_DONE seen)"
        elif key.null_means is not None:
            fallback = f"null: {key.null_means}"
        else:
            fallback = "from the folder name" if key.from_folder else "null: the run is left out where needed"
        if key.scenarios is not None:
            fallback += f" (needed for scenarios {', '.join(key.scenarios)}*)"
        lines.append(
            f"| `{key.name}` | {key.json_type} | {fallback} | {'; '.join(key.needed_by)} | {key.description} |"
        )
    return "\n".join(lines)
