"""Compare two pipeline outputs of one dataset: every Parquet table's content, every rendered table, claims.csv.

    python bench/compare_results.py OLD_RESULTS/<dataset> NEW_RESULTS/<dataset> [--contract-v1-to-v2]

Rows are compared in the order the tables give them (the pipeline writes deterministically). With
``--contract-v1-to-v2`` the old side is read as data contract v1 and mapped onto v2 first, so that only
unintended differences remain: ``ack_ranges`` JSON text -> list of {low, high}, ``tls_messages`` comma text ->
list, ``decrypted`` false -> null on ``datagram_padding`` rows (and ``frames_logged``, which copies it for
captures); columns new in v2 are listed, not compared. Exit status 1 when anything else differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from quicack.schema import ack_ranges_from_json


def read_table(folder: Path) -> pl.DataFrame:
    files = sorted(folder.glob("*.parquet"))
    return pl.concat([pl.read_parquet(f) for f in files], how="vertical") if files else pl.DataFrame()


def v1_to_v2(table: str, frame: pl.DataFrame) -> pl.DataFrame:
    """The contract-v1 table as v2 would hold it (the changes named in the README's migration note)."""
    if table == "frames" and frame.schema.get("ack_ranges") == pl.Utf8:
        frame = frame.with_columns(
            ack_ranges_from_json("ack_ranges"),
            tls_messages=pl.col("tls_messages").str.split(","),
        )
    if table == "packets":
        padding = pl.col("packet_type") == "datagram_padding"
        frame = frame.with_columns(
            decrypted=pl.when(padding).then(None).otherwise(pl.col("decrypted")),
            frames_logged=pl.when(padding & (pl.col("source") == "pcap")).then(None).otherwise(pl.col("frames_logged")),
        )
    return frame


def compare_parquet(old_root: Path, new_root: Path, migrate: bool) -> list[str]:
    problems = []
    names = sorted({p.name for p in old_root.iterdir()} | {p.name for p in new_root.iterdir()})
    for name in names:
        if not (old_root / name).exists():
            print(f"{name:22} rows={read_table(new_root / name).height:>8}  new table")
            continue
        old, new = read_table(old_root / name), read_table(new_root / name)
        if migrate:
            old = v1_to_v2(name, old)
        added = [c for c in new.columns if c not in old.columns]
        removed = [c for c in old.columns if c not in new.columns]
        differ = []
        if old.height != new.height:
            differ.append(f"rows {old.height} -> {new.height}")
        else:
            differ += [c for c in old.columns if c in new.columns and not old[c].equals(new[c])]
        print(
            f"{name:22} rows={new.height:>8}  new columns={added or '-'}  removed={removed or '-'}  "
            f"differ={differ or '-'}"
        )
        if removed or differ:
            problems.append(name)
    return problems


def compare_files(old_root: Path, new_root: Path, pattern: str) -> list[str]:
    problems = []
    for old in sorted(old_root.glob(pattern)):
        new = new_root / old.relative_to(old_root)
        same = new.exists() and new.read_bytes() == old.read_bytes()
        print(f"{str(old.relative_to(old_root)):40} {'identical' if same else 'DIFFERS'}")
        if not same:
            problems.append(str(old.relative_to(old_root)))
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="results/<dataset> of the reference version")
    parser.add_argument("new", type=Path, help="results/<dataset> of the version under test")
    parser.add_argument("--contract-v1-to-v2", action="store_true", help="map the old side from contract v1 to v2")
    args = parser.parse_args(argv)
    problems = compare_parquet(args.old / "parquet", args.new / "parquet", args.contract_v1_to_v2)
    problems += compare_files(args.old, args.new, "tables/*.csv")
    problems += compare_files(args.old, args.new, "claims.csv")
    print("identical except the intended changes" if not problems else f"unexplained differences: {problems}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
