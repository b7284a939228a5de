"""The reviewer kit's subcommands: `quicack report-pages` (the report's landing page and captions, run by the
workflow), `quicack artifact-zip` (the report and the results in one zip) and `quicack artifact-claims`
(ARTIFACT.md's claims section from a run's claims.csv)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_report_pages_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--claims", type=Path, required=True, help="claims.csv")
    parser.add_argument("--db", type=Path, required=True, help="the database (for the dataset's description)")
    parser.add_argument("--captions", type=Path, required=True, help="the hand-written captions (workflow/report)")
    parser.add_argument("--results", type=Path, required=True, help="the dataset's results folder")
    parser.add_argument("--out", type=Path, required=True, help="folder for the landing page and the captions")
    parser.set_defaults(handler=_report_pages)


def add_artifact_zip_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--report", type=Path, required=True, help="the HTML report")
    parser.add_argument("--results", type=Path, required=True, help="the dataset's results folder")
    parser.add_argument("--out", type=Path, required=True, help="the zip to write")
    parser.set_defaults(handler=_artifact_zip)


def add_artifact_claims_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("claims", type=Path, help="claims.csv of the run (results/sample/claims.csv)")
    parser.add_argument("--document", type=Path, default=Path("ARTIFACT.md"))
    parser.add_argument("--check", action="store_true", help="fail if the document's section differs, change nothing")
    parser.set_defaults(handler=_artifact_claims)


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
    document = args.document.read_text(encoding="utf-8")
    if args.check:
        if generated_section(document) != generated:
            print(f"{args.document}: its claims section is not what {args.claims} gives: run "
                  f"quicack artifact-claims {args.claims}", file=sys.stderr)  # fmt: skip
            return 1
        return 0
    args.document.write_text(replace_generated(document, generated), encoding="utf-8")
    print(f"{args.document}: claims section written from {args.claims}")
    return 0
