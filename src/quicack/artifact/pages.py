"""The texts ``snakemake --report`` shows, written after the claims are known (``quicack report-pages``): its landing
page (the counts per paper and where each paper's claims are), one HTML page per paper with its claims (an entry of
the report) with its caption, and every artefact's caption, the hand-written one (workflow/report/<id>.rst) with
that artefact's claims appended; and the same overview as Markdown beside claims.csv."""

from __future__ import annotations

from pathlib import Path

from quicack.artifact.overview import (
    artefact_paths,
    caption_rst,
    claims_markdown,
    landing_rst,
    paper_page_caption,
    paper_page_html,
    paper_page_name,
    read_claims,
)
from quicack.markup import md_paragraph
from quicack.provenance import read_description
from quicack.reference import papers

LANDING = "landing.rst"
MARKDOWN = "claims_overview.md"


def dataset_footnote(db: Path) -> str:
    """What the data is, as every footnote says it: the runs' description, and the scan's when there is one."""
    runs = read_description(db, "runs")
    scan = read_description(db, "scan")
    return runs.footnote() + ("" if scan.kind == "unknown" else " Scan: " + scan.footnote())


def report_papers() -> list[str]:
    """The papers with a claims page in the report: those of data/reference/papers.csv (the workflow names the pages
    before any claim is computed)."""
    return papers()["paper"].to_list()


def write_report_pages(claims_csv: Path, db: Path, captions: Path, results: Path, out: Path) -> list[Path]:
    """``out/landing.rst``, ``out/claims-<paper>.html`` with its caption ``out/claims-<paper>.rst`` for every paper,
    ``out/<id>.rst`` for every caption in ``captions`` and ``results/claims_overview.md``; returns the files
    written."""
    claims = read_claims(claims_csv)
    known = report_papers()
    unknown = sorted(set(claims["paper"].to_list()) - set(known))
    if unknown:
        raise ValueError(
            f"{claims_csv}: claims of papers that data/reference/papers.csv does not list: {', '.join(unknown)}"
        )
    footnote = dataset_footnote(db)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    texts = {out / LANDING: landing_rst(claims, footnote)}
    for paper in known:
        page = out / paper_page_name(paper)
        texts[page] = paper_page_html(paper, claims, footnote)
        texts[page.with_suffix(".rst")] = paper_page_caption(paper, claims)
    for source in sorted(captions.glob("*.rst")):
        texts[out / source.name] = caption_rst(source.read_text(encoding="utf-8"), source.stem, claims)
    texts[results / MARKDOWN] = f"# Claims overview\n\n{md_paragraph(footnote)}\n\n" + claims_markdown(
        claims, artefact_paths(claims, ""), heading="##"
    )
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
