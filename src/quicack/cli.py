"""The ``quicack`` command.

User commands: ``qlog`` (ingest qlog files to Parquet), ``pcap`` (decode a capture), ``scan`` (scanner
output in the imc24 authors' layout to scan_connections), ``sql`` (query the database), ``fuzz`` (mutated
inputs through the readers). Pipeline commands, run by the Snakemake rules: ``ingest-group``,
``dataset-issues``, ``derive-group``, ``build-db``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

import polars as pl

from quicack import database, recovery, stages
from quicack.layout import group_from_key
from quicack.limits import add_limit_arguments, limits_from_args
from quicack.pcap import pcap_command
from quicack.qlog import qlog_command
from quicack.scan import scan_command
from quicack.schema import TABLES

DEFAULT_DB = Path("results/sample/quicack.duckdb")
FOLLOW_HELP = "read files and run groups that are symbolic links leading outside the raw folder (default: refused)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="quicack", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action=_VersionAction, help="the version and the engines in use, then exit")
    commands = parser.add_subparsers(dest="command", required=True)

    doctor = commands.add_parser("doctor", help="the engines, the compiled core, tshark, Rust and the testbed's programs found")
    doctor.set_defaults(handler=_doctor)

    qlog_command.add_subparser(commands)

    sql = commands.add_parser("sql", help="run a query on the database, or open a shell without one")
    sql.add_argument("query", nargs="?")
    sql.add_argument("--db", type=Path, default=DEFAULT_DB)
    sql.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    sql.set_defaults(handler=_sql)

    pcap_command.add_subparser(commands).set_defaults(handler=lambda args: args.func(args))
    scan_command.add_subparser(commands)

    fuzz = commands.add_parser("fuzz", help="mutated copies of real captures and qlogs through pcap and qlog; "
                               "counts crashes and hangs")
    fuzz.add_argument("--reader", choices=["pcap", "qlog", "both"], default="both")
    fuzz.add_argument("--inputs", type=int, default=2000, help="inputs per reader (default 2000)")
    fuzz.add_argument("--seed", type=int, default=0, help="the run is a function of the seed (default 0)")
    fuzz.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    fuzz.add_argument("--timeout", type=float, default=20.0, help="seconds per input before it counts as a hang")
    fuzz.add_argument("--corpus", type=Path, default=None, help="folder of seed files (default: tests/data)")
    fuzz.add_argument("--findings", type=Path, default=None, help="save the inputs that crash or hang here")
    fuzz.set_defaults(handler=_fuzz)

    group = commands.add_parser("ingest-group", help="(pipeline) ingest one run group")
    group.add_argument("--raw", type=Path, required=True)
    _add_group_arguments(group)
    group.add_argument("--dataset", required=True)
    group.add_argument("--parquet", type=Path, required=True)
    group.add_argument("--follow-external-symlinks", action="store_true", help=FOLLOW_HELP)
    add_limit_arguments(group)
    group.set_defaults(handler=_ingest_group)

    dataset = commands.add_parser("dataset-issues", help="(pipeline) dataset-level input problems")
    dataset.add_argument("--raw", type=Path, required=True)
    dataset.add_argument("--parquet", type=Path, required=True)
    dataset.add_argument("--follow-external-symlinks", action="store_true", help=FOLLOW_HELP)
    dataset.set_defaults(handler=_dataset_issues)

    derive = commands.add_parser("derive-group", help="(pipeline) rtt_samples and connections of one run group")
    derive.add_argument("--parquet", type=Path, required=True)
    _add_group_arguments(derive)
    derive.add_argument("--initial-rtt-ms", type=float, default=recovery.K_INITIAL_RTT_MS)
    derive.add_argument("--rttvar-order", choices=[o.value for o in recovery.RttOrder], default="appendix_a")
    derive.set_defaults(handler=_derive_group)

    build_db = commands.add_parser("build-db", help="(pipeline) DuckDB views over the Parquet files + summary")
    build_db.add_argument("--parquet", type=Path, required=True)
    build_db.add_argument("--db", type=Path, required=True)
    build_db.add_argument(
        "--receipt", type=Path, help="written after the database is published: its sha256 (the workflow's declared "
        "output, so that Snakemake never removes the database itself)"
    )
    build_db.add_argument("--summary", type=Path, required=True)
    build_db.add_argument("--issues", type=Path, help="write every ingest issue here (CSV, with its cause); the summary groups them")
    build_db.add_argument("--strict", action="store_true", help="fail when the input had any issue")
    build_db.add_argument(
        "--parts", nargs="*", help="the Parquet parts of the dataset (run-group keys and _dataset); parts of others "
        "are deleted. Default: every part found"
    )
    build_db.add_argument(
        "--description", type=Path, help="the dataset's description (dataset.yaml), stored as table dataset_description; without: origin unknown"
    )
    build_db.add_argument(
        "--scan-description", type=Path, help="the description of the scan measurements (their dataset.yaml), when the database has any"
    )
    build_db.add_argument(
        "--path-checks", type=Path, help="what quicack.testbed.path_check measured of the dataset's paths (path_check.csv), stored as table path_checks"
    )
    build_db.set_defaults(handler=_build_db)

    rendering = commands.add_parser("render-summary", help="(pipeline) which artefacts could not be drawn, and why")
    rendering.add_argument("statuses", nargs="*", type=Path, help="<artefact>.status.json files written by the notebooks")
    rendering.add_argument("--out", type=Path, required=True)
    rendering.add_argument("--strict", action="store_true", help="fail when an artefact could not be drawn")
    rendering.set_defaults(handler=_render_summary)

    claims = commands.add_parser("merge-claims", help="(pipeline) every paper's claims table in one claims.csv")
    claims.add_argument("tables", nargs="+", type=Path, help="<paper>-claims.csv files")
    claims.add_argument("--out", type=Path, required=True)
    claims.set_defaults(handler=_merge_claims)

    pages = commands.add_parser("report-pages", help="(pipeline) the report's landing page (claims overview) and captions")
    pages.add_argument("--claims", type=Path, required=True, help="claims.csv")
    pages.add_argument("--db", type=Path, required=True, help="the database (for the dataset's description)")
    pages.add_argument("--captions", type=Path, required=True, help="the hand-written captions (workflow/report)")
    pages.add_argument("--results", type=Path, required=True, help="the dataset's results folder")
    pages.add_argument("--out", type=Path, required=True, help="folder for the landing page and the captions")
    pages.set_defaults(handler=_report_pages)

    bundle = commands.add_parser("artifact-zip", help="(pipeline) the report, claims, figures, tables and docs in one zip")
    bundle.add_argument("--report", type=Path, required=True, help="the HTML report")
    bundle.add_argument("--results", type=Path, required=True, help="the dataset's results folder")
    bundle.add_argument("--out", type=Path, required=True, help="the zip to write")
    bundle.set_defaults(handler=_artifact_zip)

    artifact_claims = commands.add_parser("artifact-claims", help="ARTIFACT.md's claims section from a run's claims.csv")
    artifact_claims.add_argument("claims", type=Path, help="claims.csv of the run (results/sample/claims.csv)")
    artifact_claims.add_argument("--document", type=Path, default=Path("ARTIFACT.md"))
    artifact_claims.add_argument("--check", action="store_true", help="fail if the document's section differs, change nothing")
    artifact_claims.set_defaults(handler=_artifact_claims)

    args = parser.parse_args(argv)
    return args.handler(args)


class _VersionAction(argparse.Action):
    """``--version``: computed when asked (it imports the engines), not when the parser is built."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object, option_string: str | None = None) -> None:
        from quicack.doctor import version_line

        print(version_line())
        parser.exit()


def _doctor(args: argparse.Namespace) -> int:
    from quicack.doctor import main as doctor

    return doctor()


def _fuzz(args: argparse.Namespace) -> int:
    from quicack.fuzz import run_fuzz
    from quicack.fuzz.runner import DEFAULT_CORPUS

    failed = 0
    for reader in ("pcap", "qlog") if args.reader == "both" else (args.reader,):
        report = run_fuzz(reader, args.inputs, args.seed, args.jobs, args.timeout, args.corpus or DEFAULT_CORPUS,
                          args.findings)
        print(report.summary())
        for finding in report.findings:
            print(f"  input {finding.number} ({'+'.join(finding.mutations)}): {finding.kind}: {finding.what}"
                  + (f" -> {finding.saved_as}" if finding.saved_as else ""))
        failed += report.crashes + report.hangs
    return 1 if failed else 0


def _sql(args: argparse.Namespace) -> int:
    if not args.db.exists():
        print(f"no database at {args.db}: run `snakemake --cores all` first, or pass --db", file=sys.stderr)
        return 1
    if args.query is None:
        shell = shutil.which("duckdb")
        if shell is None:
            print("the DuckDB CLI is not installed: pip install duckdb-cli", file=sys.stderr)
            return 1
        os.execv(shell, [shell, "-readonly", str(args.db)])
    import duckdb

    with database.connect(args.db) as con:
        try:
            frame = con.execute(args.query).pl()
        except duckdb.Error as error:
            print(f"query failed: {error}", file=sys.stderr)
            return 1
    if args.csv:
        sys.stdout.write(frame.write_csv())
    else:
        with pl.Config(tbl_rows=50, tbl_cols=20, fmt_str_lengths=60):
            print(frame)
    return 0


def _add_group_arguments(parser: argparse.ArgumentParser) -> None:
    names = parser.add_mutually_exclusive_group(required=True)
    names.add_argument("--group", help="the run group's folder name")
    # What the Snakemake rules pass: any folder name survives the shell, wildcards and option parsing.
    names.add_argument("--group-key", help="the run group's name as quicack.layout.group_key encodes it")


def _group_of(args: argparse.Namespace) -> str:
    return args.group if args.group is not None else group_from_key(args.group_key)


def _ingest_group(args: argparse.Namespace) -> int:
    group = _group_of(args)
    counts = stages.ingest_group_stage(args.raw, group, args.dataset, args.parquet, limits_from_args(args),
                                       args.follow_external_symlinks)
    print(f"{group!r}: " + ", ".join(f"{name} {rows}" for name, rows in counts.items()))
    return 0


def _dataset_issues(args: argparse.Namespace) -> int:
    stages.dataset_issues_stage(args.raw, args.parquet, args.follow_external_symlinks)
    return 0


def _derive_group(args: argparse.Namespace) -> int:
    params = recovery.RecoveryParams(initial_rtt_ms=args.initial_rtt_ms, order=recovery.RttOrder(args.rttvar_order))
    group = _group_of(args)
    counts = stages.derive_group_stage(args.parquet, group, params)
    print(f"{group!r}: " + ", ".join(f"{name} {rows}" for name, rows in counts.items()))
    return 0


def _build_db(args: argparse.Namespace) -> int:
    from quicack import publish
    from quicack.provenance import DescriptionError, write_description

    repo_root = Path.cwd()
    files = publish.current_parts(args.parquet, list(TABLES), args.parts)
    snapshot = publish.snapshot(args.parquet, files)
    # Built aside and renamed over the published database at the end: a reader sees the old dataset or the
    # new one, never a mix, and a failed build leaves no half-made database behind.
    building = args.db.with_name(args.db.name + ".building")
    counts = database.build_database(building, snapshot, repo_root)
    try:
        for given in (args.description, args.scan_description):
            if given is not None and not given.is_file():
                raise DescriptionError(f"{given}: no such file")
        described = write_description(building, args.description, args.scan_description, with_scan=bool(snapshot.get("scan_connections")))
    except DescriptionError as error:
        building.unlink(missing_ok=True)
        print(f"dataset description: {error}", file=sys.stderr)
        return 2
    for description in described:
        print(f"dataset description ({description.part}): {description.kind} ({description.description_file or 'none'})")
    if args.path_checks is not None:
        from quicack.path_checks import PathChecksError, write_path_checks

        try:
            print(f"path checks: {write_path_checks(building, args.path_checks)} profile(s) ({args.path_checks})")
        except PathChecksError as error:
            building.unlink(missing_ok=True)
            print(f"path checks: {error}", file=sys.stderr)
            return 2
    summary = stages.summarize(snapshot, counts, args.issues)
    if args.strict and (summary.errors or summary.warnings):
        print(summary.text)
        print(f"strict mode: {summary.errors + summary.warnings} ingest issue(s); failing", file=sys.stderr)
        building.unlink(missing_ok=True)
        return 2
    publish.write_atomically(args.summary, summary.text)
    # Last: nothing can fail after the new database is in place (a failure would leave it without its receipt).
    publish.publish(building, args.db, args.receipt)
    publish.prune_snapshots(args.parquet)
    print(summary.text)
    return 0


def _render_summary(args: argparse.Namespace) -> int:
    from quicack.figures.common import rendering_summary

    text, not_drawn = rendering_summary(args.statuses)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    if args.strict and not_drawn:
        print(f"strict mode: {not_drawn} artefact(s) could not be drawn; failing", file=sys.stderr)
        return 2
    return 0


def _report_pages(args: argparse.Namespace) -> int:
    from quicack.artifact.pages import write_report_pages

    written = write_report_pages(args.claims, args.db, args.captions, args.results, args.out)
    print(f"report pages: {len(written)} files ({args.out}, {args.results / 'claims_overview.md'})")
    return 0


def _artifact_zip(args: argparse.Namespace) -> int:
    from quicack.artifact.bundle import bundle_members, write_bundle

    count = write_bundle(args.out, bundle_members(args.report, args.results, Path.cwd()), args.out.stem)
    print(f"{args.out}: {count} files")
    return 0


def _artifact_claims(args: argparse.Namespace) -> int:
    from quicack.artifact.overview import (
        artefact_paths,
        claims_markdown,
        generated_section,
        read_claims,
        replace_generated,
    )

    claims = read_claims(args.claims)
    generated = claims_markdown(claims, artefact_paths(claims))
    document = args.document.read_text()
    if args.check:
        if generated_section(document) != generated:
            print(f"{args.document}: its claims section is not what {args.claims} gives: run "
                  f"quicack artifact-claims {args.claims}", file=sys.stderr)  # fmt: skip
            return 1
        return 0
    args.document.write_text(replace_generated(document, generated))
    print(f"{args.document}: claims section written from {args.claims}")
    return 0


def _merge_claims(args: argparse.Namespace) -> int:
    merged = pl.concat([pl.read_csv(path, infer_schema_length=None) for path in args.tables], how="diagonal_relaxed")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    merged.write_csv(args.out)
    disagree = merged.filter(pl.col("agrees") == False).height  # noqa: E712 (null = no number)
    print(f"{merged.height} claims, {disagree} differ from the paper (see the explanation column)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
