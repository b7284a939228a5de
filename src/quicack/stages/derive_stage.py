"""The derive stage: a run group's ingest tables -> its derived tables (`quicack derive-group`): rtt_samples
recomputed per RFC 9002, connections, handshake_runs, estimator_agreement, ack_breakdown, ack_runs."""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl

from quicack.layout import group_key
from quicack.metrics.ack_breakdown import ack_breakdown
from quicack.metrics.ack_runs import quic_ack_runs, with_tcp_rows
from quicack.metrics.agreement import estimator_agreement
from quicack.metrics.connections import connections_table
from quicack.metrics.handshake import handshake_runs
from quicack.metrics.rtt import recompute_rtt_samples
from quicack.metrics.tcp_ack_runs import tcp_ack_runs
from quicack.models import recovery
from quicack.schema import DERIVE, tables_written_by
from quicack.stages.group_arguments import add_group_arguments, group_of
from quicack.storage import parquet_store, table_writer
from quicack.storage.run_batches import batches_by_rows, parquet_rows_per_run

# The tables the derive stage writes (the schema says which); `derive_tables` returns them.
DERIVED_TABLES = tables_written_by(DERIVE)


# Every derived table is per run (keyed by run_id, and vantage), so a group is derived in batches of runs of at
# most this many input rows (quicack.storage.run_batches: by each run's own row count, so a batch of 10 MB downloads is
# as
# heavy as one of handshakes) and the memory is a batch's, not the group's. And of at most this many runs: the
# derive's cost grows faster than linearly with the runs of a batch (1,200 handshake runs of 400,000 rows: 45 s;
# the same rows 64 runs at a time: a few seconds).
DERIVE_BATCH_ROWS = 400_000
DERIVE_BATCH_RUNS = 64
DERIVE_INPUTS = ("runs", "packets", "frames", "metrics_logged", "endpoints", "datagrams", "tcp_segments")


def derive_group_stage(
    parquet_root: Path, group: str, params: recovery.RecoveryParams, key: str | None = None
) -> dict[str, int]:
    """``key``: the group's part name as the caller has it (the workflow's --group-key); None = `group_key`."""
    part = key if key is not None else group_key(group)
    run_ids = parquet_store.read_table(parquet_root, "runs", [part])["run_id"].to_list()
    rows_per_run = parquet_rows_per_run(parquet_root, DERIVE_INPUTS, part, run_ids)
    with table_writer.TableWriter.part(parquet_root, DERIVED_TABLES, part) as writer:
        # At least one batch, so that a group without runs still derives (empty) tables as before.
        for batch in batches_by_rows(rows_per_run, DERIVE_BATCH_ROWS, DERIVE_BATCH_RUNS):
            read = {name: parquet_store.read_table_runs(parquet_root, name, part, batch) for name in DERIVE_INPUTS}
            for name, frame in derive_tables(read, params).items():
                writer.write(name, frame)
    return dict(writer.rows)


def derive_tables(read: dict[str, pl.DataFrame], params: recovery.RecoveryParams) -> dict[str, pl.DataFrame]:
    """The derived tables of some runs from their ingest tables (`DERIVE_INPUTS`)."""
    rtt, connections, handshakes = _connections(read, params)
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


def _connections(
    read: dict[str, pl.DataFrame], params: recovery.RecoveryParams
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(rtt_samples, connections, handshake_runs): the derived tables the per-connection summary needs."""
    rtt = recompute_rtt_samples(read["packets"], read["frames"], read["endpoints"], params)
    connections = connections_table(
        read["packets"], read["frames"], read["metrics_logged"], read["endpoints"], rtt, read["runs"]
    )
    handshakes = handshake_runs(read["runs"], read["frames"], read["datagrams"], connections, read["metrics_logged"])
    return rtt, with_capture_retransmissions(connections, handshakes), handshakes


def write_folder_connections(out_dir: Path, params: recovery.RecoveryParams = recovery.RecoveryParams()) -> int:
    """``<out_dir>/connections.parquet``, the per-connection summary as `derive_tables` computes it, from the
    ``<table>.parquet`` files the one-file commands (``quicack qlog``, ``quicack pcap``) wrote there (a table they do
    not write is empty); its row count."""
    from quicack.schema import TABLES

    read = {
        name: TABLES[name].conform(pl.read_parquet(path))
        if (path := out_dir / f"{name}.parquet").is_file()
        else TABLES[name].empty()
        for name in DERIVE_INPUTS
    }
    with table_writer.TableWriter.in_folder(out_dir, ["connections"]) as writer:
        # only the summary and what it is made of (the other derived tables cost more than the decoding)
        writer.write("connections", _connections(read, params)[1])
    return writer.rows["connections"]


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


def add_derive_group_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parquet", type=Path, required=True)
    add_group_arguments(parser)
    parser.add_argument("--initial-rtt-ms", type=float, default=recovery.K_INITIAL_RTT_MS)
    parser.add_argument("--rttvar-order", choices=[o.value for o in recovery.RttOrder], default="appendix_a")
    parser.set_defaults(handler=_derive_group)


def _derive_group(args: argparse.Namespace) -> int:
    params = recovery.RecoveryParams(initial_rtt_ms=args.initial_rtt_ms, order=recovery.RttOrder(args.rttvar_order))
    group, key = group_of(args)
    counts = derive_group_stage(args.parquet, group, params, key)
    print(f"{group!r}: " + ", ".join(f"{name} {rows}" for name, rows in counts.items()))
    return 0
