"""Check that two versions of ``quicack.qlog`` write identical Parquet (not a test: run by hand).

Used when the reader is optimised: copy the old package somewhere first (``cp -r src/quicack/qlog /tmp/qlog_old``)
and compare it with the working tree on every qlog under ``tests/data`` and ``data/sample/raw``, on damaged
copies of some of them (cut mid-record, a garbage record, a garbage line), and with a tiny batch size so that
batch boundaries fall everywhere:

    python bench/qlog_equivalence.py /tmp/qlog_old [--extra big.sqlog ...]

The old package is imported as ``quicack.qlog_old`` from that folder (its relative imports resolve there; its
``quicack.schema`` import is the working tree's). Exits 1 and lists the differing tables on any difference.

Both sides of that comparison use the same compiled core (``quicack_core``). To compare builds of the core too, run
the cases in two processes, each with its own PYTHONPATH (package and core; the script then imports ``quicack``
from PYTHONPATH instead of this tree's ``src``), the old one writing every case's tables, the new one comparing::

    PYTHONPATH=/tmp/old/src:/tmp/old_core python bench/qlog_equivalence.py --dump /tmp/qlog_dump
    PYTHONPATH=src:.pycore python bench/qlog_equivalence.py --against /tmp/qlog_dump

The cases also take the qlogs of ``data/paper/raw`` when it is there.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import polars as pl

REPO = Path(__file__).resolve().parent.parent
if not {"--dump", "--against"} & set(sys.argv):  # those compare two PYTHONPATHs: quicack comes from them
    sys.path.insert(0, str(REPO / "src"))

from quicack.layout import is_qlog_name  # noqa: E402
from quicack.qlog import write_qlog_parquet  # noqa: E402

TABLES = ("packets", "frames", "metrics_logged", "endpoints", "ingest_issues")


def load_old(folder: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("quicack.qlog_old", folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["quicack.qlog_old"] = mod
    spec.loader.exec_module(mod)
    return mod


def qlog_files() -> list[Path]:
    out = []
    for root in (REPO / "tests" / "data", REPO / "data" / "sample" / "raw", REPO / "data" / "paper" / "raw"):
        out += [p for p in sorted(root.rglob("*")) if p.is_file() and is_qlog_name(p)]
    return out


def damaged_copies(files: list[Path], folder: Path) -> list[Path]:
    """Cut, garbage-record, garbage-line and odd-number variants of a few plain (uncompressed) files of each kind."""
    out = []
    plain = [p for suffix in (".qlog", ".sqlog", ".json") for p in [q for q in files if q.suffix == suffix][:5]]
    for i, p in enumerate(plain):
        data = p.read_bytes()
        variants = {
            "cut": data[: len(data) * 2 // 3],
            "cut_early": data[: min(len(data), 900)],
            "garbage_rec": data[: len(data) // 2] + b"\x1e{\"time\": oops}\n" + data[len(data) // 2 :],
            "garbage_line": data.replace(b"\n", b"\n[1,2]\n", 3),
            "junk_number": data.replace(b'"packet_number":1,', b'"packet_number":"x1",')
                                .replace(b'"packet_number":1}', b'"packet_number":"x1"}'),
            "string_numbers": re.sub(rb'"(smoothed_rtt|packet_number|offset)":\s*(\d+(?:\.\d+)?)', rb'"\1":"\2"', data),
        }
        for tag, blob in variants.items():
            q = folder / f"{i:02d}_{tag}_{p.name}"
            q.write_bytes(blob)
            out.append(q)
    return out


def compare(a: Path, b: Path) -> list[str]:
    bad = []
    for t in TABLES:
        da, db = pl.read_parquet(a / f"{t}.parquet"), pl.read_parquet(b / f"{t}.parquet")
        if da.schema != db.schema or not da.equals(db, null_equal=True):
            bad.append(t)
    return bad


def cases(work: Path, extra: list[Path]) -> tuple[list[Path], list[tuple[Path, int]]]:
    """The qlog files and the (file, batch_events) cases: every file, those of tests/data in tiny batches, damaged
    copies (written into ``work``) in large and tiny batches, the extra files."""
    files = qlog_files()
    out: list[tuple[Path, int]] = [(p, 50_000) for p in files]
    out += [(p, 7) for p in files if "tests/data" in str(p)]  # batch boundaries everywhere
    out += [(p, 50_000) for p in damaged_copies(files, work)]
    out += [(p, 5) for p in damaged_copies(files, work)]
    out += [(p, 50_000) for p in extra]
    return files, out


def across_builds(dump: Path | None, against: Path | None, extra: list[Path]) -> int:
    """--dump: every case's tables into ``dump``/<case>; --against: this PYTHONPATH's tables compared with them.
    The damaged copies go to the same folder both times (endpoints.path and the issues' messages name the file),
    so the two runs must not overlap."""
    work = Path(tempfile.gettempdir()) / "qlog_equiv_cases"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        files, todo = cases(work, extra)
        failures = 0
        for n, (path, batch) in enumerate(todo):
            out = (dump / str(n)) if dump else work / "new"
            write_qlog_parquet([path], out, run_id_for=lambda p: p.stem, batch_events=batch)
            if against:
                bad = compare(against / str(n), out)
                if bad:
                    failures += 1
                    print(f"DIFFERENT {path} (batch_events={batch}): {', '.join(bad)}", flush=True)
                shutil.rmtree(out)
        verb = "written" if dump else f"compared, {failures} with different output"
        print(f"{len(todo)} cases ({len(files)} qlog files) {verb}")
        return 1 if failures else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old", type=Path, nargs="?", help="folder holding a copy of the old quicack/qlog package")
    ap.add_argument("--extra", type=Path, nargs="*", default=[], help="more qlog files (e.g. the bench input)")
    ap.add_argument("--dump", type=Path, help="write every case's tables here (this PYTHONPATH's package and core)")
    ap.add_argument("--against", type=Path, help="compare this PYTHONPATH's tables with those of a --dump")
    args = ap.parse_args()
    if args.dump or args.against:
        sys.exit(across_builds(args.dump, args.against, args.extra))
    if args.old is None:
        ap.error("name the old package's folder, or use --dump / --against")
    old = load_old(args.old)
    work = Path(tempfile.mkdtemp(prefix="qlog_equiv_"))
    try:
        files, todo = cases(work, args.extra)
        failures = 0
        for n, (path, batch) in enumerate(todo):
            outs = []
            for tag, fn in (("old", old.write_qlog_parquet), ("new", write_qlog_parquet)):
                out = work / f"{n}_{tag}"
                fn([path], out, run_id_for=lambda p: p.stem, batch_events=batch)
                outs.append(out)
            bad = compare(*outs)
            if bad:
                failures += 1
                print(f"DIFFERENT {path} (batch_events={batch}): {', '.join(bad)}")
            for o in outs:
                shutil.rmtree(o)
        print(f"{len(todo)} cases ({len(files)} qlog files), {failures} with different output")
        sys.exit(1 if failures else 0)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
