"""The stages the Snakemake rules run, as functions: ingest a group, derive a group, build the
database, summarise. Each reads only what the stage before it wrote."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from quicack import ingest, parquet_store, recovery
from quicack.issues import count_errors, issue_lines, write_issue_list
from quicack.layout import group_key
from quicack.limits import DEFAULT_LIMITS, Limits
from quicack.metrics.ack_breakdown import ack_breakdown
from quicack.metrics.ack_runs import quic_ack_runs, with_tcp_rows
from quicack.metrics.agreement import estimator_agreement
from quicack.metrics.connections import connections_table
from quicack.metrics.handshake import handshake_runs
from quicack.metrics.rtt import recompute_rtt_samples
from quicack.metrics.tcp_ack_runs import tcp_ack_runs
from quicack.run_batches import batches_by_rows, parquet_rows_per_run
from quicack.schema import DERIVE, tables_written_by

# The tables the derive stage writes (the schema says which); `derive_tables` returns them.
DERIVED_TABLES = tables_written_by(DERIVE)


class StrictModeError(RuntimeError):
    """Raised when ``strict`` is set and the input had problems."""


def ingest_group_stage(
    raw_root: Path, group: str, dataset: str, parquet_root: Path, limits: Limits = DEFAULT_LIMITS,
    follow_external_symlinks: bool = False,
) -> dict[str, int]:
    # Streamed into the Parquet files run by run: a group's tables never sit in memory whole.
    with parquet_store.TableWriter.part(parquet_root, ingest.INGEST_TABLES, group_key(group)) as writer:
        for name, frame in ingest.ingest_group_frames(raw_root, group, dataset, limits, follow_external_symlinks):
            writer.write(name, frame)
    return dict(writer.rows)


def dataset_issues_stage(raw_root: Path, parquet_root: Path, follow_external_symlinks: bool = False) -> int:
    frame = ingest.dataset_issues(raw_root, follow_external_symlinks)
    parquet_store.write_tables({"ingest_issues": frame}, parquet_root, "_dataset")
    return frame.height


# Every derived table is per run (keyed by run_id, and vantage), so a group is derived in batches of runs of at
# most this many input rows (quicack.run_batches: by each run's own row count, so a batch of 10 MB downloads is as
# heavy as one of handshakes) and the memory is a batch's, not the group's. And of at most this many runs: the
# derive's cost grows faster than linearly with the runs of a batch (1,200 handshake runs of 400,000 rows: 45 s;
# the same rows 64 runs at a time: a few seconds).
DERIVE_BATCH_ROWS = 400_000
DERIVE_BATCH_RUNS = 64
DERIVE_INPUTS = ("runs", "packets", "frames", "metrics_logged", "endpoints", "datagrams", "tcp_segments")


def derive_group_stage(parquet_root: Path, group: str, params: recovery.RecoveryParams) -> dict[str, int]:
    part = group_key(group)
    run_ids = parquet_store.read_table(parquet_root, "runs", [part])["run_id"].to_list()
    rows_per_run = parquet_rows_per_run(parquet_root, DERIVE_INPUTS, part, run_ids)
    with parquet_store.TableWriter.part(parquet_root, DERIVED_TABLES, part) as writer:
        # At least one batch, so that a group without runs still derives (empty) tables as before.
        for batch in batches_by_rows(rows_per_run, DERIVE_BATCH_ROWS, DERIVE_BATCH_RUNS):
            read = {name: parquet_store.read_table_runs(parquet_root, name, part, batch) for name in DERIVE_INPUTS}
            for name, frame in derive_tables(read, params).items():
                writer.write(name, frame)
    return dict(writer.rows)


def derive_tables(read: dict[str, pl.DataFrame], params: recovery.RecoveryParams) -> dict[str, pl.DataFrame]:
    """The derived tables of some runs from their ingest tables (`DERIVE_INPUTS`)."""
    rtt = recompute_rtt_samples(read["packets"], read["frames"], read["endpoints"], params)
    connections = connections_table(read["packets"], read["frames"], read["metrics_logged"], read["endpoints"], rtt, read["runs"])
    handshakes = handshake_runs(read["runs"], read["frames"], read["datagrams"], connections, read["metrics_logged"])
    connections = with_capture_retransmissions(connections, handshakes)
    agreement = estimator_agreement(rtt, read["metrics_logged"], read["endpoints"])
    breakdown = ack_breakdown(read["datagrams"], read["packets"], read["frames"], read["tcp_segments"])
    per_download = with_tcp_rows(
        quic_ack_runs(read["runs"], read["datagrams"], read["packets"], read["frames"]),
        tcp_ack_runs(read["runs"], read["tcp_segments"]),
    )
    return {
        "rtt_samples": rtt,
        "connections": connections,
        "handshake_runs": handshakes,
        "estimator_agreement": agreement,
        "ack_breakdown": breakdown,
        "ack_runs": per_download,
    }


def with_capture_retransmissions(connections: pl.DataFrame, handshakes: pl.DataFrame) -> pl.DataFrame:
    """Fill connections.pto_expiries / spurious_retransmissions of each endpoint from the
    capture-derived counts in handshake_runs (client_* for the client row, server_* for the server)."""
    per_vantage = pl.concat(
        [
            handshakes.select(
                "run_id",
                pl.lit(who).alias("vantage"),
                pl.col(f"{who}_pto_expiries").alias("pto_expiries_capture"),
                pl.col(f"{who}_spurious_retransmissions").alias("spurious_capture"),
            )
            for who in ("client", "server")
        ]
    )
    return (
        connections.join(per_vantage, on=["run_id", "vantage"], how="left")
        .with_columns(
            pl.col("pto_expiries_capture").alias("pto_expiries"),
            pl.col("spurious_capture").alias("spurious_retransmissions"),
        )
        .drop("pto_expiries_capture", "spurious_capture")
    )


@dataclass(frozen=True)
class Summary:
    text: str
    errors: int
    warnings: int


def summarize(files: dict[str, list[Path]], counts: dict[str, int], issue_list: Path | None = None) -> Summary:
    """What was read and what was skipped, for the terminal and results/<dataset>/summary.txt: over exactly
    the Parquet files the database was built on. The issues are grouped by cause (``quicack.issues.issue_lines``);
    with ``issue_list`` every row is written there (CSV) and the summary points to it."""
    issues = parquet_store.read_files("ingest_issues", files.get("ingest_issues", []))
    runs = parquet_store.read_files("runs", files.get("runs", []))
    lines = ["quicack ingest summary", ""]
    lines += [f"  {name:<18} {rows:>10,} rows" for name, rows in counts.items()]
    ok = runs.filter(pl.col("status") == "ok").height
    failed = runs.filter(pl.col("status") == "failed").height
    lines += ["", f"  runs: {runs.height} ({ok} ok, {failed} failed, {runs.height - ok - failed} without status)"]
    errors = count_errors(issues)
    warnings = issues.height - errors
    lines += [f"  ingest issues: {errors} errors (input skipped), {warnings} warnings (input used in part)"]
    where = f"{issue_list.name} beside this summary (or SELECT * FROM ingest_issues)" if issue_list else "SELECT * FROM ingest_issues"
    lines += issue_lines(issues, where)
    if issue_list is not None:
        write_issue_list(issues, issue_list)
    return Summary("\n".join(lines) + "\n", errors, warnings)
