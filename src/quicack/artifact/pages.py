"""The texts ``snakemake --report`` shows, written after the claims are known (``quicack report-pages``): its landing
page (the claims overview) and every artefact's caption, the hand-written one (workflow/report/<id>.rst) with that
artefact's claims appended; and the same overview as Markdown beside claims.csv."""

from __future__ import annotations

from pathlib import Path

from quicack.artifact.overview import artefact_files, caption_rst, claims_markdown, landing_rst, read_claims
from quicack.provenance import read_description

LANDING = "landing.rst"
MARKDOWN = "claims_overview.md"


def dataset_footnote(db: Path) -> str:
    """What the data is, as every footnote says it: the runs' description, and the scan's when there is one."""
    runs = read_description(db, "runs")
    scan = read_description(db, "scan")
    return runs.footnote() + ("" if scan.kind == "unknown" else " Scan: " + scan.footnote())


def write_report_pages(claims_csv: Path, db: Path, captions: Path, results: Path, out: Path) -> list[Path]:
    """``out/landing.rst``, ``out/<id>.rst`` for every caption in ``captions`` and ``results/claims_overview.md``;
    returns the files written."""
    claims = read_claims(claims_csv)
    ids = sorted(p.stem for p in captions.glob("*.rst"))
    files = artefact_files(results, ids)
    targets = {artefact: path.name for artefact, path in files.items()}
    out.mkdir(parents=True, exist_ok=True)
    written = []
    landing = out / LANDING
    landing.write_text(landing_rst(claims, dataset_footnote(db), targets), encoding="utf-8")
    written.append(landing)
    for artefact in ids:
        path = out / f"{artefact}.rst"
        path.write_text(caption_rst((captions / f"{artefact}.rst").read_text(encoding="utf-8"), artefact, claims), encoding="utf-8")
        written.append(path)
    overview = results / MARKDOWN
    relative = {artefact: path.relative_to(results).as_posix() for artefact, path in files.items()}
    overview.write_text(f"# Claims overview\n\n{dataset_footnote(db)}\n\n" + claims_markdown(claims, relative, heading="##"), encoding="utf-8")
    written.append(overview)
    return written
