"""The claims overview (report landing page, captions, Markdown) and the reviewer's zip, on claims computed from
recorded transfers (the ACK-ratio papers' claims over loopback runs of real implementations: agreeing, differing
and unmeasured claims)."""

from __future__ import annotations

import html as html_module
import re
import zipfile
from pathlib import Path

import jinja2
import polars as pl
import pytest
from docutils.core import publish_parts

from quicack.artifact.bundle import bundle_members, write_bundle
from quicack.artifact.overview import (
    BEGIN_MARKER,
    END_MARKER,
    PAPER_BEGIN_MARKER,
    PAPER_END_MARKER,
    caption_rst,
    claims_markdown,
    counts_sentence,
    generated_section,
    landing_rst,
    paper_conditions_markdown,
    paper_page_caption,
    paper_page_html,
    read_claims,
    replace_generated,
    sha256_prefix,
    status_counts,
)
from quicack.artifact.pages import write_report_pages
from quicack.claims import NO_EXPLANATION, VERDICTS
from quicack.claims.ackratio_claims import CLAIMS, ackratio_claims
from tests.test_claims_ackratio import DESCRIPTION, loopback_tables

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def claims_csv(tmp_path_factory) -> Path:
    """claims.csv as `quicack merge-claims` writes it, from the three ACK-ratio papers' claims tables."""
    tables = loopback_tables("quic-go_quic-go/transfer_1MB/1", "ngtcp2_ngtcp2/transfer_1MB/1")
    merged = pl.concat(
        [ackratio_claims(paper, tables, DESCRIPTION).artefact for paper in sorted(CLAIMS)], how="diagonal_relaxed"
    )
    path = tmp_path_factory.mktemp("claims") / "claims.csv"
    merged.write_csv(path)
    return path


def rendered_html(rst: str, targets: list[str]) -> str:
    """As Snakemake's report renders a caption or its landing page (snakemake.report): Jinja first (its environment's
    settings), then reStructuredText with docutils' defaults (``raw`` and ``include`` on) and a link target per
    entry."""
    links = "\n".join(f".. _{t}: javascript:app.showResultInfo('{t}')" for t in targets)
    text = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(rst + "\n\n" + links + "\n").render()
    return publish_parts(text, writer="html")["body"]


def test_counts_per_paper_add_up_to_every_claim(claims_csv):
    claims = read_claims(claims_csv)
    counts = status_counts(claims)
    assert counts["paper"].to_list() == ["ackfreq22", "rethink", "tcpquic", "all"]
    assert counts.columns == ["paper", "claims", "agree", "differ", "unresolved", "calibrated", "n/a", "unexplained"]
    by_paper = counts.filter(pl.col("paper") != "all")
    assert by_paper.height == 3
    for row in by_paper.iter_rows(named=True):
        assert sum(row[v] for v in VERDICTS) == row["claims"] == claims.filter(pl.col("paper") == row["paper"]).height
        assert row["unexplained"] <= row["differ"]
    total = counts.filter(pl.col("paper") == "all").row(0, named=True)
    assert total["claims"] == claims.height
    # The recorded transfers give agree, differ and n/a (no spread: nothing unresolved; nothing calibrated yet).
    assert total["agree"] > 0 and total["differ"] > 0 and total["n/a"] > 0
    assert total["agree"] == claims.filter(pl.col("verdict") == "agree").height


def test_handmade_verdicts_unresolved_calibrated_and_unexplained_are_counted(claims_csv, tmp_path):
    """claims.csv's verdicts as a run may give them (three rows of the recorded transfers' file set to the verdicts
    those transfers do not give): each is counted, and a difference whose explanation starts with ``unexplained:``
    (or has none) is counted as unexplained."""
    claims = pl.read_csv(claims_csv, infer_schema_length=None)
    ids = claims.filter(pl.col("verdict") == "agree")["claim_id"].head(2).to_list()
    differing = claims.filter(pl.col("verdict") == "differ")["claim_id"].head(1).to_list()
    edited = claims.with_columns(
        verdict=pl.when(pl.col("claim_id") == ids[0]).then(pl.lit("unresolved"))
        .when(pl.col("claim_id") == ids[1]).then(pl.lit("calibrated")).otherwise("verdict"),
        explanation=pl.when(pl.col("claim_id").is_in(differing)).then(pl.lit(NO_EXPLANATION)).otherwise("explanation"),
    )  # fmt: skip
    path = tmp_path / "claims.csv"
    edited.write_csv(path)
    before = status_counts(read_claims(claims_csv)).filter(pl.col("paper") == "all").row(0, named=True)
    after = status_counts(read_claims(path)).filter(pl.col("paper") == "all").row(0, named=True)
    assert (after["agree"], after["unresolved"], after["calibrated"]) == (before["agree"] - 2, 1, 1)
    assert after["unexplained"] == before["unexplained"] + 1 and after["differ"] == before["differ"]
    assert "1 unresolved, 1 calibrated" in counts_sentence(after)


def test_landing_page_is_short_and_links_each_paper_to_its_claims_page(claims_csv):
    claims = read_claims(claims_csv)
    pages = [f"claims-{paper}.html" for paper in ("ackfreq22", "rethink", "tcpquic")]
    html = rendered_html(landing_rst(claims, "EMULATED DATA — dataset 'loopback': a *test* | with markup_"), pages)
    assert "system-message" not in html, html[html.find("system-message") - 500 :][:1500]
    # The counts, each paper linked to its page's entry; no claim row (they are on the papers' pages).
    for page in pages:
        assert html.count(f"javascript:app.showResultInfo('{page}')") == 1
    counts = status_counts(claims).filter(pl.col("paper") == "all").row(0, named=True)
    assert f"<td>{counts['claims']}</td>" in html
    assert not [claim_id for claim_id in claims["claim_id"].to_list() if claim_id in html]
    assert "a *test* | with markup_" in html
    assert len(html) < 6000


def test_a_papers_page_lists_each_of_its_claims_as_text(claims_csv):
    claims = read_claims(claims_csv)
    for paper in ("ackfreq22", "rethink", "tcpquic"):
        page = paper_page_html(paper, claims, "EMULATED DATA — <b>dataset</b> & co")
        own = claims.filter(pl.col("paper") == paper)
        assert page.count("<tr id=") == own.height
        for row in own.iter_rows(named=True):
            assert f'<tr id="{row["claim_id"]}">' in page
        assert "EMULATED DATA — &lt;b&gt;dataset&lt;/b&gt; &amp; co" in page and "<b>dataset" not in page
        assert "Reducing the acknowledgement frequency in IETF QUIC" in paper_page_html("ackfreq22", claims, "")
        caption = rendered_html(paper_page_caption(paper, claims), [])
        assert "system-message" not in caption and f"{own.height} claims:" in caption
    # A paper without claims in this dataset gets a page that says so.
    assert "This dataset gives no claim of this paper" in paper_page_html("imc24", claims, "")


# Hand-made: what a hostile dataset.yaml or folder name would carry. Each payload, if live, leaves a trace that the
# rendered page must not hold: a product of a Jinja expression, an element, a file's text, a javascript: link.
PAYLOADS = {
    "jinja endraw": ("{% endraw %}{{ 7*191 }}{% raw %}", "1337"),
    "jinja expression": ("{{ 7*191 }}", "1337"),
    "jinja endraw evaluated": ("{% endraw %}{{ 7000+337 }}{% raw %}", "7337"),
    "jinja whitespace control": ("{{- 7*191 -}} {%- if true -%}1338{%- endif -%}", "1337"),
    "jinja comment": ("a {# comment #} b", "a  b"),
    "rst raw html": (".. raw:: html\n\n   <script>alert(1)</script>", "<script>"),
    "rst include": (".. include:: {marker}", "MARKER-5b1e0c"),
    "rst raw after endraw": ("{% endraw %}\n\n.. raw:: html\n\n   <b>live</b>\n\n{% raw %}", "<b>live</b>"),
    "rst role": (":raw:`<b>r</b>` :math:`x^2`", "<math"),
    "rst substitution": ("|sub| and [1]_ and name_", 'href="#'),
    "rst uri": ("javascript:alert(1)", 'href="javascript:alert'),
    "html": ('<img src=x onerror="alert(1)">', "<img"),
    "section underline": ("=====", "<hr"),
}


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_no_payload_is_live_on_the_landing_page_a_caption_or_a_papers_page(claims_csv, payload, tmp_path):
    marker = tmp_path / "marker.txt"
    marker.write_text("MARKER-5b1e0c\n", encoding="utf-8")
    text, trace = PAYLOADS[payload]
    text = text.replace("{marker}", str(marker))
    claims = read_claims(claims_csv)
    # The text as the dataset's title (the footnote) and as every text column of one claim (a cell starts with it).
    hostile = claims.with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(pl.lit(text)).otherwise(pl.col(c)).alias(c)
        for c in ("statement", "paper_value", "ours", "explanation")
    )
    artefact = hostile["artefact"][0]
    pages = [f"claims-{paper}.html" for paper in ("ackfreq22", "rethink", "tcpquic")]
    for where, html in (
        ("landing", rendered_html(landing_rst(hostile, text), pages)),
        ("caption", rendered_html(caption_rst("Caption.\n", artefact,
                                              hostile.with_columns(pl.lit("differs").alias("status"))), [])),
        ("page", paper_page_html(hostile["paper"][0], hostile, text)),
    ):  # fmt: skip
        assert trace not in html, (where, html[:2000])
        assert "system-message" not in html, (where, html[:2000])
        # The text is shown as it was written (one line).
        shown = " ".join(html_module.unescape(re.sub(r"<[^>]+>", "", html)).split())
        assert " ".join(text.split()) in shown, (where, shown[:2000])


def test_a_caption_lists_its_artefacts_claims_and_explains_the_differing(claims_csv):
    claims = read_claims(claims_csv)
    artefact = claims.filter(pl.col("status") == "differ")["artefact"][0]
    own = claims.filter(pl.col("artefact") == artefact)
    caption = caption_rst("The hand-written caption.\n", artefact, claims)
    assert caption.startswith("The hand-written caption.")
    html = rendered_html(caption, [])
    assert "system-message" not in html
    for row in own.iter_rows(named=True):
        assert row["claim_id"] in html
    assert f"{own.height} claims:" in html
    differing = own.filter(pl.col("status") == "differ").row(0, named=True)
    assert " ".join(differing["explanation"].split())[:40].replace("&", "&amp;") in html
    # An artefact without claims keeps its caption as it is.
    assert caption_rst("Only this.\n", "no-such-artefact", claims) == "Only this.\n"


def test_report_pages_refuse_claims_of_a_paper_without_a_page(claims_csv, tmp_path):
    """Each paper's page is named before the claims are known (data/reference/papers.csv): a claim of another paper
    would have no page; it is an error that names the paper, not a claim left out."""
    claims = pl.read_csv(claims_csv, infer_schema_length=None)
    other = tmp_path / "claims.csv"
    claims.with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("nosuchpaper")).otherwise(pl.col("paper")).alias("paper")
    ).write_csv(other)
    with pytest.raises(ValueError, match="nosuchpaper"):
        write_report_pages(other, tmp_path / "no.duckdb", REPO / "workflow" / "report", tmp_path, tmp_path / "report")


def test_markdown_has_a_row_per_claim_and_replaces_only_its_section(claims_csv):
    claims = read_claims(claims_csv)
    markdown = claims_markdown(
        claims, {a: f"results/sample/tables/{a}.csv" for a in claims["artefact"].unique().to_list()}
    )
    rows = [line for line in markdown.splitlines() if line.startswith("| `")]
    assert len(rows) == claims.height
    document = f"# Guide\n\nbefore\n{BEGIN_MARKER}\nold\n{END_MARKER}\nafter\n"
    updated = replace_generated(document, markdown)
    assert updated.startswith("# Guide\n\nbefore\n") and updated.endswith(f"{END_MARKER}\nafter\n")
    assert generated_section(updated) == markdown
    with pytest.raises(ValueError, match="BEGIN claims"):
        replace_generated("no markers", markdown)


def test_the_zip_holds_the_report_and_the_results_and_is_the_same_twice(claims_csv, tmp_path):
    results = tmp_path / "results"
    (results / "figures").mkdir(parents=True)
    (results / "tables").mkdir()
    (results / "claims.csv").write_bytes(claims_csv.read_bytes())
    # Real files stand in for a run's outputs: the zip's contents are files, whatever they hold.
    (results / "figures" / "a-fig01.png").write_bytes((REPO / "README.md").read_bytes())
    (results / "tables" / "a-tab01.csv").write_bytes(claims_csv.read_bytes())
    (results / "report").mkdir()
    (results / "report" / "claims-ackfreq22.html").write_text(
        paper_page_html("ackfreq22", read_claims(claims_csv), ""), encoding="utf-8"
    )
    report = tmp_path / "report.html"
    report.write_text("<html>report</html>", encoding="utf-8")
    members = bundle_members(report, results, REPO)
    first, second = tmp_path / "one.zip", tmp_path / "two.zip"
    assert write_bundle(first, members, "quicack-sample") == len(members)
    write_bundle(second, bundle_members(report, results, REPO), "quicack-sample")
    assert first.read_bytes() == second.read_bytes()
    names = zipfile.ZipFile(first).namelist()
    assert names[0] == "quicack-sample/report.html"
    assert {"quicack-sample/claims.csv", "quicack-sample/figures/a-fig01.png", "quicack-sample/tables/a-tab01.csv",
            "quicack-sample/repository/ARTIFACT.md", "quicack-sample/repository/LICENSE",
            "quicack-sample/report/claims-ackfreq22.html"} <= set(names)  # fmt: skip


def test_the_paper_conditions_section_lists_what_the_paper_dataset_measures_beside_the_embedded_status(
        claims_csv, tmp_path):
    """The second generated section: only the claims with a number on the dataset 'paper', each with its status there
    and the embedded dataset's; the archives it was read from, each with its size and sha256 prefix. The paper side
    here is the loopback claims with every claim but two made n/a by hand (no paper-dataset claims.csv in CI)."""
    sample = read_claims(claims_csv)
    kept = sample["claim_id"].to_list()[:2]
    paper = sample.with_columns(
        pl.when(pl.col("claim_id").is_in(kept)).then(pl.col("status")).otherwise(pl.lit("n/a")).alias("status"))
    archive = tmp_path / "part-X.tar.xz"
    archive.write_bytes(b"not an archive, only hashed")
    markdown = paper_conditions_markdown(paper, sample.with_columns(pl.lit("agree").alias("status")), [archive], {})
    rows = [line for line in markdown.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == kept
    assert all("| **agree** |" in row or "| agree |" in row for row in rows)
    assert f"2 of {sample.height} claims" in markdown and f"sha256 {sha256_prefix(archive)}" in markdown
    document = f"a\n{PAPER_BEGIN_MARKER}\nold\n{PAPER_END_MARKER}\nb\n"
    assert generated_section(replace_generated(document, markdown, (PAPER_BEGIN_MARKER, PAPER_END_MARKER)),
                             (PAPER_BEGIN_MARKER, PAPER_END_MARKER)) == markdown


def test_artifact_md_names_the_paper_datasets_archives_as_they_are_in_git():
    """ARTIFACT.md's paper-conditions section was generated from the archives data/paper holds now: a part added or
    packed again without `quicack artifact-claims ... --paper-claims results/paper/claims.csv` leaves it naming
    archives that are not there (CI cannot run the dataset 'paper''s pipeline: ~10 minutes more)."""
    from quicack.layout.archive import dataset_archives

    section = generated_section((REPO / "ARTIFACT.md").read_text(encoding="utf-8"),
                                (PAPER_BEGIN_MARKER, PAPER_END_MARKER))  # fmt: skip
    named = re.findall(r"`(part-[^`]+\.tar\.xz)` \(([\d,]+) B, sha256 ([0-9a-f]{12})\)", section)
    archives = dataset_archives(REPO / "data" / "paper")
    assert named == [(a.name, f"{a.stat().st_size:,}", sha256_prefix(a)) for a in archives]
