"""After the notebooks (`quicack render-summary`, `quicack merge-claims`): which artefacts could not be drawn and why
(results/<dataset>/rendering.txt), and every paper's claims table in one claims.csv."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from quicack.claims import VERDICTS


def add_render_summary_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("statuses", nargs="*", type=Path, help="<artefact>.status.json files written by the notebooks")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--strict", action="store_true", help="fail when an artefact could not be drawn")
    parser.set_defaults(handler=_render_summary)


def add_merge_claims_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tables", nargs="+", type=Path, help="<paper>-claims.csv files")
    parser.add_argument("--out", type=Path, required=True)
    parser.set_defaults(handler=_merge_claims)


def _render_summary(args: argparse.Namespace) -> int:
    from quicack.figures.common import rendering_summary

    text, not_drawn = rendering_summary(args.statuses)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    if args.strict and not_drawn:
        print(f"strict mode: {not_drawn} artefact(s) could not be drawn; failing", file=sys.stderr)
        return 2
    return 0


def _merge_claims(args: argparse.Namespace) -> int:
    merged = pl.concat([pl.read_csv(path, infer_schema_length=None) for path in args.tables], how="diagonal_relaxed")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    merged.write_csv(args.out)
    counts = merged["verdict"].value_counts()
    by_verdict = dict(zip(counts["verdict"].to_list(), counts["count"].to_list(), strict=True))
    print(
        f"{merged.height} claims: "
        + ", ".join(f"{by_verdict.get(v, 0)} {v}" for v in VERDICTS)
        + " (see the explanation column)"
    )
    return 0
