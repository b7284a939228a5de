"""The claims overview (report landing page, captions, Markdown) and the reviewer's zip, on claims computed from
recorded transfers (the ACK-ratio papers' claims over loopback runs of real implementations: agreeing, differing
and unmeasured claims)."""

from __future__ import annotations

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
    caption_rst,
    claims_markdown,
    counts_sentence,
    generated_section,
    landing_rst,
    read_claims,
    replace_generated,
    status_counts,
)
from quicack.claims import NO_EXPLANATION, VERDICTS
from quicack.claims.ackratio_claims import CLAIMS, ackratio_claims
from tests.test_claims_ackratio import DESCRIPTION, loopback_tables

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def claims_csv(tmp_path_factory) -> Path:
    """claims.csv as `quicack merge-claims` writes it, from the three ACK-ratio papers' claims tables."""
    tables = loopback_tables("quic-go_quic-go/transfer_1MB/1", "ngtcp2_ngtcp2/transfer_1MB/1")
    merged = pl.concat([ackratio_claims(paper, tables, DESCRIPTION).artefact for paper in sorted(CLAIMS)], how="diagonal_relaxed")
    path = tmp_path_factory.mktemp("claims") / "claims.csv"
    merged.write_csv(path)
    return path


def rendered_html(rst: str, targets: list[str]) -> str:
    """As Snakemake's report renders a caption: Jinja first, then reStructuredText with a link target per entry."""
    links = "\n".join(f".. _{t}: javascript:app.showResultInfo('{t}')" for t in targets)
    text = jinja2.Environment().from_string(rst + "\n\n" + links + "\n").render()
    return publish_parts(text, writer="html", settings_overrides={"report_level": 2, "halt_level": 5})["body"]


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


def test_landing_page_renders_every_claim_with_its_status_and_links(claims_csv):
    claims = read_claims(claims_csv)
    targets = {a: f"{a}.png" for a in claims["artefact"].unique().to_list()}
    rst = landing_rst(claims, "EMULATED DATA — dataset 'loopback': a *test* | with markup_", targets)
    html = rendered_html(rst, list(targets.values()))
    assert "system-message" not in html, html[html.find("system-message") - 500 :][:1500]
    for row in claims.iter_rows(named=True):
        assert row["claim_id"] in html
    # Each link names a report entry; markup characters of the texts stay literal.
    assert html.count("javascript:app.showResultInfo") == claims.height
    assert "a *test* | with markup_" in html
    assert "Reducing the acknowledgement frequency in IETF QUIC" in html  # the paper's title from papers.csv


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


def test_markdown_has_a_row_per_claim_and_replaces_only_its_section(claims_csv):
    claims = read_claims(claims_csv)
    markdown = claims_markdown(claims, {a: f"results/sample/tables/{a}.csv" for a in claims["artefact"].unique().to_list()})
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
            "quicack-sample/repository/ARTIFACT.md", "quicack-sample/repository/LICENSE"} <= set(names)  # fmt: skip
