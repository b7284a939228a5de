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
    parser.add_argument("--paper-claims", type=Path,
                        help="claims.csv of the dataset recorded under the papers' conditions "
                             "(results/paper/claims.csv): writes the document's second section, the claims measured "
                             "there")  # fmt: skip
    parser.add_argument("--paper-data", type=Path, default=Path("data/paper"),
                        help="that dataset's folder, whose archives the section names")  # fmt: skip
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
        BEGIN_MARKER,
        END_MARKER,
        PAPER_BEGIN_MARKER,
        PAPER_END_MARKER,
        artefact_paths,
        claims_markdown,
        generated_section,
        paper_conditions_markdown,
        read_claims,
        replace_generated,
    )
    from quicack.layout.archive import dataset_archives

    claims = read_claims(args.claims)
    sections = [((BEGIN_MARKER, END_MARKER), claims_markdown(claims, artefact_paths(claims)), args.claims)]
    if args.paper_claims is not None:
        paper_claims = read_claims(args.paper_claims)
        sections.append(((PAPER_BEGIN_MARKER, PAPER_END_MARKER),
                         paper_conditions_markdown(paper_claims, claims, dataset_archives(args.paper_data),
                                                   artefact_paths(paper_claims, "results/paper")),
                         args.paper_claims))  # fmt: skip
    document = args.document.read_text(encoding="utf-8")
    if args.check:
        stale = [source for markers, generated, source in sections if generated_section(document, markers) != generated]
        rerun = f"quicack artifact-claims {args.claims}" + (
            f" --paper-claims {args.paper_claims}" if args.paper_claims else "")
        for source in stale:
            print(f"{args.document}: its section generated from {source} is out of date: run {rerun}",
                  file=sys.stderr)
        return 1 if stale else 0
    for markers, generated, source in sections:
        document = replace_generated(document, generated, markers)
        print(f"{args.document}: section written from {source}")
    args.document.write_text(document, encoding="utf-8")
    return 0
