"""Every paper number of data/reference is traced to its sentence: each row of the claims files and of the paper
tables carries `quote`, the paper's own words or printed table row, and this test finds it in the paper's text.

Reads the papers' texts from ../shared/papers (the shared folder beside the project, as in CI; QUICACK_SHARED names
another place). The quotes are matched by quicack.reference.comparable_text on both sides: whitespace and Unicode
compatibility forms (ligatures) only, so a quote is the text file's words, extraction slips included.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from quicack.reference import QUOTE, REFERENCE_DIR, comparable_text
from tests.conftest import SHARED

PAPERS = SHARED / "papers"

# Each paper's text files (../shared/README.md): imc24's paper and its talk slides, the others one file each.
PAPER_TEXTS = {
    "imc24": ("000_dc0336a65bc70008.txt", "001_0672909de95098da.txt"),
    "ackfreq22": ("002_787dc47801cac959.txt",),
    "rethink": ("003_c8a4fd97649f956d.txt",),
    "tcpquic": ("004_3b3912302924c67b.txt",),
}

# data/reference files that are not a paper's numbers: our lookup tables and the papers' bibliography (and the
# implementations' conditions, whose rows cite the implementations' sources as much as the papers: their quotes are
# checked by tests/test_testbed_conditions_config.py).
NOT_PAPER_VALUES = {"cdn_asn.csv", "papers.csv", "path_profiles.csv", "implementation_conditions.csv"}

# Per paper table: the columns that hold printed cells; a numeric cell must appear in its row's quote.
TABLE_VALUE_COLUMNS = {
    "imc24_tab01.csv": ("paper_domains", "paper_iack_share_percent", "paper_variation_percent"),
    "imc24_tab03.csv": ("ack_delay_ms",),
    "imc24_tab04.csv": ("default_pto_ms", "second_flight"),
    "ackfreq22_tab02.csv": ("default_ar", "ack_bytes"),
    "ackfreq22_tab03.csv": ("paper_value",),
    "ackfreq22_tab04.csv": ("download_s",),
    "ackfreq22_tab05.csv": ("timer_percent",),
    "rethink_tab02.csv": ("paper_value",),
    "rethink_tab03.csv": ("return_kb", "return_percent"),
    "tcpquic_anatomy.csv": ("paper_size", "paper_share"),
    "tcpquic_rate.csv": ("paper_kbps",),
}


def _reference_files() -> list[Path]:
    return sorted(p for p in REFERENCE_DIR.glob("*.csv") if p.name not in NOT_PAPER_VALUES)


def _paper_of(path: Path) -> str:
    return path.name.split("_")[0]


def _rows(path: Path) -> pl.DataFrame:
    return pl.read_csv(path, infer_schema=False)


def _row_name(path: Path, row: dict[str, str | None], index: int) -> str:
    if "claim_id" in row:
        return f"{path.name}: {row['claim_id']}"
    keys = [str(v) for k, v in row.items() if k not in (QUOTE, "explanation")][:3]
    return f"{path.name} row {index + 1} ({', '.join(keys)})"


def _paper_text(paper: str) -> str:
    missing = [name for name in PAPER_TEXTS[paper] if not (PAPERS / name).is_file()]
    if missing:
        pytest.skip(f"the papers' texts are not at {PAPERS} (set QUICACK_SHARED to the shared folder): {missing}")
    return "\n".join(comparable_text((PAPERS / name).read_text(encoding="utf-8")) for name in PAPER_TEXTS[paper])


def quotes_not_in_paper(path: Path, paper_text: str) -> list[str]:
    """The rows of one reference file whose quote does not occur in the paper's text."""
    return [
        _row_name(path, row, i)
        for i, row in enumerate(_rows(path).iter_rows(named=True))
        if comparable_text(row[QUOTE] or "") not in paper_text or not (row[QUOTE] or "").strip()
    ]


def test_every_reference_file_is_tied_to_a_paper_and_has_quotes() -> None:
    files = _reference_files()
    assert len(files) >= 18, [p.name for p in files]
    for path in files:
        assert _paper_of(path) in PAPER_TEXTS, f"{path.name}: no paper text for '{_paper_of(path)}'"
        assert QUOTE in _rows(path).columns, f"{path.name}: no '{QUOTE}' column"


def test_no_quote_is_empty() -> None:
    empty = [
        _row_name(path, row, i)
        for path in _reference_files()
        for i, row in enumerate(_rows(path).iter_rows(named=True))
        if not (row[QUOTE] or "").strip()
    ]
    assert not empty, f"rows without a quote: {empty}"


@pytest.mark.parametrize("path", _reference_files(), ids=lambda p: p.name)
def test_every_quote_occurs_in_the_paper_text(path: Path) -> None:
    missing = quotes_not_in_paper(path, _paper_text(_paper_of(path)))
    assert not missing, f"quotes not found in the text of {_paper_of(path)}: {missing}"


def _numbers(text: str) -> set[float]:
    return {float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)}


def test_every_printed_table_cell_is_in_its_rows_quote() -> None:
    """A paper table's quote is the printed row that holds the cell: a cell with a number must show in it, as
    printed (text) or as the same number (200.0 for a printed 200)."""
    absent = []
    for name, columns in TABLE_VALUE_COLUMNS.items():
        path = REFERENCE_DIR / name
        for i, row in enumerate(_rows(path).iter_rows(named=True)):
            quote = comparable_text(row[QUOTE] or "")
            for column in columns:
                cell = row[column]
                if cell is None or not re.search(r"\d", cell):
                    continue  # no ACK ("-"), "unlimited", "N/A": nothing numeric to find
                if comparable_text(cell) not in quote and not _numbers(cell) <= _numbers(quote):
                    absent.append(f"{_row_name(path, row, i)}: {column} = {cell!r}")
    assert not absent, absent


# Claims whose range is not a number the paper prints, with why: a share for "all"/"every" (1 or 100 %), a bound the
# words imply ("under 1%" → 0, "a smaller fraction" → below 1), or a value the claim derives from the quoted words.
DERIVED_RANGES = {
    **dict.fromkeys(
        (
            "imc24-4.1-fig04-spurious",
            "imc24-4.1-fig05-client-probes",
            "imc24-E-fig11-aioquic",
            "imc24-E-fig11-go-x-net",
            "imc24-E-fig11-quiche",
            "imc24-F-fig12-wfc-below-100ms",
            "imc24-F-fig12-iack-at-300ms",
            "imc24-F-fig13-iack-all-rtts",
            "imc24-4.3-cf-no-sh-udemy",
        ),
        "every cell, run, client or connection: a share of 1 (100 %)",
    ),
    "imc24-4.1-fig04-pto-reduction": "the RFC 9002 model: measured / model = 1",
    "imc24-E-fig11-ngtcp2": "'a smaller fraction': below 1",
    "imc24-E-fig11-quic-go": "'a smaller fraction': below 1",
    "ackfreq22-5.4-eq3-error": "errors of at most 0.19 %: from 0",
    "ackfreq22-5.2-fig3-chromium-share": "'under 1%': from 0",
    "ackfreq22-5.4-ar10-return-cut": "10 / 2 from Eq. (3), not printed",
    "rethink-VI-fig5-ar10-return100k": "'full advantage of the 8.5Mbps capacity': the unconstrained 'about 800'",
    # Directional findings (claims on the sign of a difference, tests/test_claims_findings.py): 0 is the boundary the
    # words imply ("larger ARs ... an increase in throughput", "increasing with the AR", "larger than", "worse").
    **dict.fromkeys(
        (
            "ackfreq22-tab04-satellite-noloss-larger-ar-faster",
            "ackfreq22-tab04-satellite-loss-d-larger-ar-faster",
            "ackfreq22-5.6-tab05-noloss-timer-grows-with-ar-4g",
            "ackfreq22-5.6-tab05-noloss-timer-grows-with-ar-vdsl",
            "ackfreq22-5.6-tab05-noloss-timer-grows-with-ar-satellite",
            "ackfreq22-5.6-tab05-noloss-timer-larger-long-rtt",
            "rethink-V-tab3-quic-more-than-tcp",
            "rethink-VII-fig2b-ar10-less-with-loss",
            "rethink-V-tab3-loss-adds-quic",
            "rethink-V-tab3-loss-adds-tcp",
            "tcpquic-conclusion-quic-more-ack-volume",
            "imc24-4.1-fig05-quiche-iack-loses",
            "imc24-4.1-fig05-go-x-net-iack-loses",
            "imc24-4.1-fig05-quiche-iack-loses-this-machine",
            "imc24-4.1-fig05-go-x-net-iack-loses-this-machine",
        ),
        "a direction: the sign of a difference, bounded by 0",
    ),
    "rethink-VII-fig4-cwnd-alike-across-ar": "'the similarity in sender behaviour': a difference of 0",
    **dict.fromkeys(
        (
            "imc24-D-fig10-iack-majority-above-Amazon",
            "imc24-D-fig10-iack-majority-above-Cloudflare",
            "imc24-D-fig10-iack-majority-above-Google",
        ),
        "'the majority': above 50 %",
    ),
}


def test_every_claims_range_is_a_number_its_quote_prints() -> None:
    """A transcription check: the paper's range of a claim (`paper_low`, `paper_high`; a sign for "later"/"slower")
    is printed in the claim's quote, unless the claim says why not (DERIVED_RANGES)."""
    absent = []
    for path in sorted(REFERENCE_DIR.glob("*_claims.csv")):
        for row in _rows(path).iter_rows(named=True):
            if row["claim_id"] in DERIVED_RANGES:
                continue
            printed = _numbers(comparable_text(row[QUOTE] or ""))
            for bound in ("paper_low", "paper_high"):
                if row[bound] not in (None, "", "inf") and abs(float(row[bound])) not in printed:
                    absent.append(f"{path.name}: {row['claim_id']}: {bound} = {row[bound]}")
    assert not absent, absent
    claim_ids = {c for path in REFERENCE_DIR.glob("*_claims.csv") for c in _rows(path)["claim_id"]}
    assert set(DERIVED_RANGES) <= claim_ids, set(DERIVED_RANGES) - claim_ids


def test_a_changed_number_is_not_found_handmade_quote(tmp_path: Path) -> None:
    """The match is exact apart from whitespace: a quote with one digit changed is reported with its claim id;
    the same quote broken over lines and tabs, as the text files print tables, is found."""
    text = comparable_text(_paper_text("imc24"))
    claims = tmp_path / "imc24_claims.csv"
    pl.DataFrame(
        {
            "claim_id": ["exact", "rewrapped", "changed"],
            QUOTE: [
                "on median 2.9 ms (neqo) to 7.8 ms (mvfst)",
                "on median\n2.9 ms (neqo)\tto 7.8 ms\n (mvfst)",
                "on median 2.9 ms (neqo) to 7.9 ms (mvfst)",
            ],
        }
    ).write_csv(claims)
    assert quotes_not_in_paper(claims, text) == ["imc24_claims.csv: changed"]


def test_comparable_text_folds_ligatures_and_whitespace_only_handmade() -> None:
    assert comparable_text("ﬁrst\u00a0ACK\n\n  delay\t") == "first ACK delay"
    assert comparable_text("Acknowl- edgement") != comparable_text("acknowledgement")
