"""The papers' own numbers, read from ``data/reference/<paper>_<name>.csv``: one home per paper for
every value we print beside ours (tables, figure bands, in-text claims). Code never types them in.

Column types follow the data contract's unit suffixes: ``*_ms`` and ``paper_low``/``paper_high``/
``tolerance`` are float64, ``repetition`` int64, everything else text; an empty cell is null (e.g. no
ACK in that packet number space).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Any

import polars as pl

# The repository's data/reference (src/quicack/reference.py → ../../data/reference); the package
# is used from its checkout (pip install -e), as the pipeline is.
REFERENCE_DIR = Path(__file__).resolve().parents[2] / "data" / "reference"

# Which file of REFERENCE_DIR each reader reads, from its arguments: quicack.jobs.reference_use reads this table to give
# each job (a notebook, the scan) the reference files its functions read, so that editing one re-runs exactly those
# jobs. A reader whose file depends on its arguments must be called with them as literals
# (`paper_table("imc24", "tab02")`); tests/test_results_follow_code.py checks every reader is listed here.
READS = {
    "reference_path": "{paper}_{name}.csv",
    "paper_table": "{paper}_{name}.csv",
    "paper_claims": "{paper}_claims.csv",
    "paper_claim_range": "{paper}_claims.csv",
    "cdn_asn": "cdn_asn.csv",
    "cdn_names": "cdn_asn.csv",
    "path_profiles": "path_profiles.csv",
    "path_profile": "path_profiles.csv",
    "papers": "papers.csv",
    "implementation_conditions": "implementation_conditions.csv",
}

CLAIM_COLUMNS = {
    "claim_id": pl.Utf8,
    "section": pl.Utf8,
    "artefact": pl.Utf8,
    "statement": pl.Utf8,
    "paper_value": pl.Utf8,
    "paper_low": pl.Float64,
    "paper_high": pl.Float64,
    "unit": pl.Utf8,
    "tolerance": pl.Float64,
    "explanation": pl.Utf8,
    "quote": pl.Utf8,
    "tolerance_reason": pl.Utf8,
    "calibrated": pl.Boolean,
}

# The column of every reference file (claims and paper tables) that holds the paper's own words or printed table row
# the value comes from, verbatim from the paper's text (tests/test_reference_quotes.py finds each in it).
QUOTE = "quote"


# data/reference/path_profiles.csv: the papers' network paths, one row per profile (see data/reference/README.md).
PATH_PROFILE_COLUMNS = {
    "profile": pl.Utf8,
    "paper": pl.Utf8,
    "source": pl.Utf8,
    "path": pl.Utf8,
    "s2c_rate_mbit": pl.Float64,
    "c2s_rate_mbit": pl.Float64,
    "rtt_ms": pl.Float64,
    "table1_rtt_ms": pl.Float64,
    "s2c_delay_ms": pl.Float64,
    "c2s_delay_ms": pl.Float64,
    "s2c_loss_percent": pl.Float64,
    "c2s_loss_percent": pl.Float64,
    "table1_loss_percent": pl.Float64,
    "loss_model": pl.Utf8,
    "ack_delay_ms": pl.Float64,
    "paper_ack_delay_vs_rtt": pl.Utf8,
    "s2c_queue_bytes": pl.Int64,
    "c2s_queue_packets": pl.Int64,
    "note": pl.Utf8,
}


def reference_path(paper: str, name: str, directory: Path | None = None) -> Path:
    return (directory or REFERENCE_DIR) / f"{paper}_{name}.csv"


def _column_type(name: str) -> type[pl.DataType]:
    if name.endswith("_ms") or name in ("paper_low", "paper_high", "tolerance"):
        return pl.Float64
    if name == "repetition":
        return pl.Int64
    return pl.Utf8


def paper_table(paper: str, name: str, directory: Path | None = None, with_quote: bool = False) -> pl.DataFrame:
    """``data/reference/<paper>_<name>.csv`` as printed in the paper, typed by column name. The ``quote`` column
    (where the row comes from in the paper's text) is provenance, not a cell of the table: left out unless asked."""
    frame = pl.read_csv(reference_path(paper, name, directory), infer_schema=False)
    if not with_quote and QUOTE in frame.columns:
        frame = frame.drop(QUOTE)
    return frame.with_columns(pl.col(c).cast(_column_type(c)) for c in frame.columns)


def comparable_text(text: str) -> str:
    """Text as a quote is matched against a paper's text (both sides alike): Unicode compatibility forms folded
    (NFKC: the ligature "ﬁ" is "fi", a no-break space a space) and every run of whitespace (line breaks, tabs) one
    space. Nothing else: case, hyphenation ("acknowl- edgement") and extraction slips stay as the text file has them,
    so a quote is the text file's words."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()


def read_claims(path: Path) -> pl.DataFrame:
    """A claims reference file: the paper's in-text statements, their values as text and as a
    range, our tolerance and, where ours differs, why."""
    return pl.read_csv(path, schema_overrides=CLAIM_COLUMNS).select(list(CLAIM_COLUMNS))


def paper_claims(paper: str, directory: Path | None = None) -> pl.DataFrame:
    return read_claims(reference_path(paper, "claims", directory))


def paper_claim_range(paper: str, claim_id: str, directory: Path | None = None) -> tuple[float, float]:
    """The paper's value of one claim as (low, high), e.g. a band drawn behind our values."""
    row = paper_claims(paper, directory).filter(pl.col("claim_id") == claim_id)
    if row.height != 1 or row["paper_low"][0] is None or row["paper_high"][0] is None:
        raise KeyError(f"{reference_path(paper, 'claims', directory)}: no numeric range for claim '{claim_id}'")
    return float(row["paper_low"][0]), float(row["paper_high"][0])


def papers(directory: Path | None = None) -> pl.DataFrame:
    """``data/reference/papers.csv``: each paper's short name (the ``paper`` of claims.csv), title, authors, venue,
    year and DOI as the papers' texts give them (empty where they give none)."""
    return pl.read_csv((directory or REFERENCE_DIR) / "papers.csv", infer_schema=False)


# Any AS not in data/reference/cdn_asn.csv, and an unrouted address (imc24 Table 5's "Others").
OTHERS = "Others"


def cdn_asn(directory: Path | None = None) -> pl.DataFrame:
    """``data/reference/cdn_asn.csv``: the CDN of each origin AS as imc24 Table 5 prints it (cdn, asn, source). The
    scan reader names each connection's CDN by it, Table 5 prints it, the scan's figures and claims take their CDNs
    from it (`cdn_names`)."""
    return pl.read_csv((directory or REFERENCE_DIR) / "cdn_asn.csv", schema_overrides={"asn": pl.Int64})


def cdn_names(directory: Path | None = None) -> tuple[str, ...]:
    """The CDNs of `cdn_asn` in the file's order, then OTHERS: the rows of imc24 Table 1, the order of every CDN
    axis."""
    return (*cdn_asn(directory)["cdn"].unique(maintain_order=True).to_list(), OTHERS)


def path_profiles(directory: Path | None = None) -> pl.DataFrame:
    """``data/reference/path_profiles.csv``: the network paths of ackfreq22 (Table 1, and §5.6's 1 % loss) and
    rethink (8.5/1.5 Mbit/s, 600 ms, and the 100 kbit/s return), per direction: rate, one-way delay, loss, and the
    queue each direction's bottleneck gets (s2c ≈ 1 BDP in bytes, c2s limited in packets)."""
    path = (directory or REFERENCE_DIR) / "path_profiles.csv"
    return pl.read_csv(path, schema_overrides=PATH_PROFILE_COLUMNS).select(list(PATH_PROFILE_COLUMNS))


def path_profile(name: str, directory: Path | None = None) -> dict[str, Any]:
    """One profile of ``path_profiles`` as a dict; KeyError names the known ones."""
    table = path_profiles(directory)
    row = table.filter(pl.col("profile") == name)
    if row.height != 1:
        raise KeyError(f"unknown path profile {name!r}; known: {', '.join(table['profile'])}")
    return row.row(0, named=True)


def implementation_conditions(directory: Path | None = None) -> pl.DataFrame:
    """``data/reference/implementation_conditions.csv``: per study (imc24, ackratio), implementation, role and
    parameter (datagram size, path-MTU discovery, connection-ID length, ACK delay, initial RTT) the value of the
    papers' runs, its basis and source, the testbed's option that sets it and whether it is applied (``set``,
    ``default``, ``elsewhere``, ``cannot``); read by quicack.testbed.conditions. All text."""
    return pl.read_csv((directory or REFERENCE_DIR) / "implementation_conditions.csv", infer_schema=False)
