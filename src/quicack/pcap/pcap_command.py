"""`quicack pcap CAPTURE [--keylog FILE ...] --out DIR [--print]`: one capture to Parquet, optionally a tshark-like
listing.

The `quicack` command adds its arguments through `add_arguments(parser)` (quicack.cli.COMMANDS); `pcap_command(argv)`
runs it alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

# polars, pyarrow and the decoder are imported where they are used, not here: `--help` and the
# `quicack` command (which only registers this subcommand) then start in milliseconds.
from quicack.reading.limits import add_limit_arguments, limits_from_args

if TYPE_CHECKING:
    from .decode import CaptureBatch

OUTPUT_TABLES = ("datagrams", "packets", "frames", "tcp_segments", "ingest_issues")
GC_YOUNG_THRESHOLD = 50_000  # allocations between collections of the youngest generation (Python's default: 700)


def write_capture_parquet(batches: Iterable[CaptureBatch], out_dir: Path) -> dict[str, int]:
    """Stream batches into DIR/<table>.parquet (one row group per batch, see
    `quicack.storage.table_writer.TableWriter`);
    return the rows written per table."""
    from quicack.storage.table_writer import TableWriter

    with TableWriter.in_folder(out_dir, OUTPUT_TABLES) as writer:
        for batch in batches:
            for name in OUTPUT_TABLES:
                writer.write(name, getattr(batch, name))
    return writer.rows


def format_packets(batch: CaptureBatch) -> Iterator[str]:
    """One line per QUIC packet, like tshark's summary: time, direction, type, packet number, frames."""
    # Frames follow their packet in order and frame_index restarts at 0 for each packet: that pairs them with the
    # decrypted packets even when two connections in one capture reuse packet numbers and times.
    import polars as pl

    summaries = []
    for types, delays, largest in (
        batch.frames.with_columns(packet=(pl.col("frame_index") == 0).cum_sum())
        .group_by("packet", maintain_order=True)
        .agg(pl.col("frame_type"), pl.col("ack_delay_ms"), pl.col("largest_acked"))
        .drop("packet")
        .iter_rows()
    ):
        parts = []
        for frame_type, delay, acked in zip(types, delays, largest, strict=True):
            parts.append(f"ACK({acked}, delay {delay:.3f} ms)" if frame_type == "ack" else frame_type.upper())
        summaries.append(", ".join(parts))
    summary_iter = iter(summaries)
    columns = ["time_ms", "direction", "datagram_index", "packet_type", "packet_number", "packet_bytes", "decrypted"]
    for time_ms, direction, datagram_index, packet_type, packet_number, packet_bytes, decrypted in batch.packets.select(
        columns
    ).iter_rows():
        arrow = "->" if direction == "c2s" else "<-"
        time_text = f"{time_ms:10.3f}" if time_ms is not None else " " * 10
        number = "" if packet_number is None else str(packet_number)
        if packet_type == "datagram_padding":
            content = "(zeros after the last packet)"
        elif not decrypted:
            content = "(not decrypted)"
        elif packet_number is None:
            content = ""  # Retry, Version Negotiation: no frames
        else:
            content = next(summary_iter, "")
        yield (
            f"{time_text} {direction} {arrow} dg {datagram_index:<5} {packet_type:<10} pn={number:<7} "
            f"{packet_bytes:>5} B  {content}"
        )


def _print_batches(batches: Iterable[CaptureBatch], stream: TextIO) -> Iterator[CaptureBatch]:
    for batch in batches:
        for line in format_packets(batch):
            stream.write(line + "\n")
        yield batch


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("capture", type=Path, help="pcap or pcapng file, optionally .gz / .zst")
    parser.add_argument(
        "--keylog", type=Path, action="append", default=[], help="NSS keylog (SSLKEYLOGFILE); repeatable"
    )
    parser.add_argument("--out", type=Path, required=True, help="output folder for <table>.parquet")
    parser.add_argument("--run-id", default="", help="run_id of the rows (default: the capture's stem)")
    parser.add_argument("--vantage", default=None, help="capture point (default: sim_left/sim_right/the file stem)")
    parser.add_argument("--print", dest="print_packets", action="store_true", help="print one line per QUIC packet")
    add_limit_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import gc
    import os

    # The decoder runs on one thread; the thread pools of polars (batches of 32,768 rows) and of numpy's OpenBLAS
    # (pulled in by pyarrow, never used here) only add threads that spin between tiny tasks: 2-4 % of the CPU time
    # on a large capture (bench/README.md). Set before their import, so only in a process that has not imported
    # polars yet (the command's own), and not over the caller's choice.
    if "polars" not in sys.modules:
        os.environ.setdefault("POLARS_MAX_THREADS", "1")
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # A keylog named but not there (a typo) would leave every packet undecrypted with exit 0: refused instead.
    if missing := [str(path) for path in args.keylog if not path.is_file()]:
        print(f"error: keylog {', '.join(missing)} does not exist", file=sys.stderr)
        return 2
    from quicack.reading.issues import ERROR
    from quicack.stages.derive_stage import write_folder_connections

    from .decode import decode_capture  # and polars

    # The decoder keeps the state of every open connection (tens of thousands of long-lived objects in a large
    # capture) and the cyclic collector's passes over them took ~5 % of the CPU time: leave the objects that exist
    # now (the imported modules) out of them and collect the youngest generation less often. Process-wide, so set
    # here in the command, not in the library, and undone at its end for a caller that runs it in its process.
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD)
    try:
        batches: Iterable[CaptureBatch] = decode_capture(
            args.capture, args.keylog or None, args.run_id, args.vantage, limits=limits_from_args(args)
        )
        if args.print_packets:
            batches = _print_batches(batches, sys.stdout)
        issues: list[tuple[str, str]] = []  # (severity, message) as written, for the summary below
        counts = write_capture_parquet(_remember_issues(batches, issues), args.out)
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
    counts["connections"] = write_folder_connections(args.out)  # the per-connection summary, as the pipeline's
    summary = ", ".join(f"{count} {name}" for name, count in counts.items())
    print(f"{args.capture}: {summary} -> {args.out}/<table>.parquet; query: quicack sql --db {args.out} "
          '"SELECT * FROM connections"', file=sys.stderr)
    for severity, message in issues:
        print(f"  {severity}: {message}", file=sys.stderr)
    return 1 if counts["packets"] == 0 and any(severity == ERROR for severity, _ in issues) else 0


def _remember_issues(batches: Iterable[CaptureBatch], issues: list[tuple[str, str]]) -> Iterator[CaptureBatch]:
    """The batches, noting their ingest_issues rows (reading them back from the Parquet file cost more)."""
    for batch in batches:
        issues.extend(batch.ingest_issues.select("severity", "message").iter_rows())
        yield batch


def pcap_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="quicack pcap", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def exit_at_once(code: int) -> None:
    """Leave the process without tearing the interpreter down: the Parquet files are closed and renamed by then,
    and the teardown (polars' modules, the decoder's objects) took ~35 ms of CPU, more than decoding and writing a
    small capture (bench/README.md). For a process that only ran this command (`python -m
    quicack.pcap.pcap_command`)."""
    import os

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_at_once(pcap_command(sys.argv[1:]))
