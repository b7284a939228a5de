"""The imc24 scan quantities, figures and claims on the embedded emulated scan (data/scan: recorded by the scan
testbed with real quic-go / ngtcp2 / aioquic frontends and the package's QScanner-compatible scanner), where
truth.csv says what every frontend was configured to do."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from quicack.claims.imc24_scan_claims import CLAIMS, imc24_scan_claims
from quicack.figures import imc24_scan as figures
from quicack.layout.scan_folders import find_measurements, scan_part_key, scan_parts
from quicack.metrics import scan_quantities as metric
from quicack.provenance import load_description
from quicack.reference import paper_claims
from quicack.scan import read_measurement
from quicack.scan.asn import read_prefix_table
from quicack.scan.qscanner_files import Issues

REPO = Path(__file__).resolve().parents[1]
SCAN = REPO / "data" / "scan"


@pytest.fixture(scope="module")
def tables() -> dict[str, pl.DataFrame]:
    prefixes = read_prefix_table(SCAN / "prefix_asn.csv", Issues(""))
    read = [read_measurement(folder, prefixes) for folder in find_measurements([SCAN / "raw"])]
    return {
        "scan_connections": pl.concat([r.scan_connections for r in read]),
        "scan_truth": pl.concat([r.scan_truth for r in read]),
        "ingest_issues": pl.concat([r.ingest_issues for r in read]),
    }


def test_parts_are_one_vantage_point_and_day_each():
    parts = scan_parts(SCAN / "raw")
    assert len(parts) == 12  # 3 vantage points × (3 top-list days + the series day)
    for key, folders in parts.items():
        assert key.startswith("@scan@") and {scan_part_key(f) for f in folders} == {key}
    assert sorted(len(f) for f in parts.values()) == [1] * 9 + [24] * 3


def test_every_connection_is_classified_as_configured(tables):
    scan, truth = tables["scan_connections"], tables["scan_truth"]
    assert scan.height == truth.height == 936 and tables["ingest_issues"].is_empty()
    joined = scan.join(truth, on=["scan_id", "target_id"], suffix="_configured")
    assert joined.height == 936
    assert (joined["first_datagram_class"] == joined["expected_class"]).all()
    # The configured CDN (the emulation's address plan) is the one the prefix → AS → CDN lookup finds.
    assert (joined["cdn"] == joined["cdn_configured"]).all()


def test_measurement_kinds_and_home_pops_follow_from_the_data(tables):
    scan, truth = tables["scan_connections"], tables["scan_truth"]
    kinds = metric.measurement_kinds(scan).join(
        truth.select("scan_id", "measurement_kind").unique(), on="scan_id", suffix="_configured"
    )
    assert kinds.height == 81
    assert (
        kinds["measurement_kind"] == kinds["measurement_kind_configured"].replace({"cloudflare_series": "series"})
    ).all()
    configured_pops = (
        metric.series(scan)
        .join(truth, on=["scan_id", "target_id"])
        .group_by("vantage_point")
        .agg(pl.col("pop_iata").drop_nulls().mode().first())
    )
    assert (
        dict(metric.home_pops(scan).iter_rows())
        == dict(configured_pops.iter_rows())
        == {"hamburg": "HAM", "los-angeles": "LAX", "sao-paulo": "GRU"}
    )


def test_table1_measured_equals_configured_and_the_authors_code_differs_where_the_paper_says(tables):
    scan, truth = tables["scan_connections"], tables["scan_truth"]
    ours = metric.iack_deployment(scan).join(metric.configured_iack_share(scan, truth), on="cdn")
    assert ours.height == 5 and (ours["iack_share_percent"] == ours["configured_iack_share_percent"]).all()
    # Amazon-like instant ACKs are padded: the authors' row choice drops them from the medians (SCAN.md point 2).
    assert "Amazon" in metric.median_iack_ahead(scan)["cdn"].to_list()
    assert "Amazon" not in metric.median_iack_ahead(scan, "authors")["cdn"].to_list()


def test_fig10_authors_quantity_is_ack_delay_above_zero_for_coalesced(tables):
    """SCAN.md point 1: for a coalesced ACK+SH the authors' difference is −ACK Delay."""
    rows = metric.ack_delay_vs_rtt(tables["scan_connections"]).filter(pl.col("first_datagram_class") == "coalesced")
    assert rows.height > 0
    assert (rows["authors_gap_minus_ack_delay_ms"] == -rows["first_ack_delay_ms"]).all()
    authors = metric.ack_delay_exceeds_rtt(tables["scan_connections"], "authors").filter(
        pl.col("first_datagram_class") == "coalesced"
    )
    above_zero = rows.group_by("cdn").agg(share_percent=100.0 * (pl.col("first_ack_delay_ms") > 0).mean())
    assert dict(authors.select("cdn", "share_percent").iter_rows()) == dict(above_zero.iter_rows())


def test_series_lines_and_per_domain_shares(tables):
    lines = metric.series_latency(tables["scan_connections"])
    assert set(lines["line"]) == {"ACK", "SH", "ACK,SH"} and lines["hour"].n_unique() == 24
    assert (lines["p25_ms"] <= lines["median_ms"]).all() and (lines["median_ms"] <= lines["p75_ms"]).all()
    domains = metric.coalesced_share_per_domain(tables["scan_connections"])
    udemy = domains.filter(pl.col("sni") == "udemy.test").row(0, named=True)
    assert udemy["with_sh"] == 0 and udemy["iack_without_sh"] == udemy["connections"] == 72


def test_every_scan_artefact_renders_with_the_configured_truth(tables):
    scan, truth = tables["scan_connections"], tables["scan_truth"]
    drawn = [
        figures.imc24_fig08_iack_sh_cdf(scan, truth),
        figures.imc24_fig09_cloudflare_series(scan, truth),
        figures.imc24_fig10_ack_delay_vs_rtt(scan),
        figures.imc24_fig14_iack_sh_cdf_per_vantage_point(scan, truth),
        figures.imc24_fig15_cloudflare_series_per_vantage_point(scan, truth),
        figures.imc24_tab01_iack_deployment(scan, truth),
        figures.imc24_tab05_cdn_asn(scan),
    ]
    assert all(r.artefact is not None and not r.missing for r in drawn)
    fig08 = drawn[0].artefact
    legend = [t.get_text() for t in fig08.axes[0].get_legend().get_texts()]
    assert legend[0] == "Akamai (IACK 0 %, configured 0 %)" and all("configured" in entry for entry in legend)
    assert "sao-paulo, 2024-08-07" == fig08.axes[0].get_title()
    table1 = drawn[5].artefact
    assert (
        table1["cdn"].to_list()[:3] == ["Akamai", "Amazon", "Cloudflare"] and table1.height == 8
    )  # the paper's 8 rows
    assert table1.filter(pl.col("cdn") == "Cloudflare")["paper_iack_share_percent"].item() == 99.9
    assert "15169" in drawn[6].artefact["asn"].cast(pl.Utf8).to_list()


def test_without_a_scan_every_scan_artefact_says_so():
    empty = {"scan_connections": pl.DataFrame(schema=metric_schema()), "scan_truth": pl.DataFrame()}
    rendered = figures.imc24_fig08_iack_sh_cdf(empty["scan_connections"], empty["scan_truth"])
    assert rendered.artefact is None and rendered.missing == figures.NO_SCAN


def metric_schema():
    from quicack.schema import SCAN_CONNECTIONS

    return SCAN_CONNECTIONS.schema


def test_scan_claims_cover_the_reference_and_emulated_agreement_is_not_decided(tables):
    assert set(CLAIMS) == set(paper_claims("imc24_scan")["claim_id"])
    description = load_description(SCAN / "dataset.yaml", "scan", "scan")
    claims = imc24_scan_claims(tables, description).artefact
    assert (claims["verdict"] == "n/a").all() and claims["explanation"].str.starts_with("Emulated scan").all()
    assert (claims["our_source"] == "emulated scan, dataset 'scan'").all()
    measured = claims.filter(~pl.col("ours").str.starts_with("not measured"))
    assert measured.height >= 25
    # The same functions decide agreement on a real scan.
    real = imc24_scan_claims(tables, description.__class__(name="x", kind="scan", title="t", part="scan")).artefact
    assert real["verdict"].is_in(["agree", "differ"]).sum() > 0
