"""Claims for every cell of a paper's table, built from the table's own reference file.

A table's printed numbers have one home, ``data/reference/<paper>_tab*.csv`` (the table notebooks compare with it).
Its cells become claims here without copying a number into ``<paper>_claims.csv``: each row of the table file gives
a reference row (``CLAIM_COLUMNS``: claim id, statement, the paper's value as its range, the tolerance of the paper's
printed precision with its reason, the printed row as the quote) and a claim function. A cell that the curated claims
file already claims under the same id keeps its curated row (its explanation, quote and calibration) — the cell's
generated row is dropped (``with_cells``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from quicack.claims import ClaimFunction, Measured
from quicack.metrics.summary import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CONFIDENCE, median_difference_interval
from quicack.reference import CLAIM_COLUMNS

# A row of a table's reference file (polars' iter_rows(named=True): its values are typed Any).
Row = Mapping[str, Any]


@dataclass(frozen=True)
class CellClaims:
    """Reference rows (``CLAIM_COLUMNS``) and one claim function per row, in step."""

    reference: pl.DataFrame
    functions: dict[str, ClaimFunction]


@dataclass(frozen=True)
class CellSpec:
    """How one table file's rows become claims: the id, statement and function of a row, the column that holds the
    paper's number, and what the paper's printing gives as tolerance."""

    section: str
    artefact: str
    value_column: str
    unit: str
    tolerance: float
    tolerance_reason: str
    claim_id: Callable[[Row], str]
    statement: Callable[[Row], str]
    function: Callable[[Row], ClaimFunction]
    # Why ours differs, where it does (the same reason holds for a group of cells); empty: nothing said.
    explanation: Callable[[Row], str] = lambda row: ""


def cell_claims(table: pl.DataFrame, spec: CellSpec) -> CellClaims:
    """One claim per row of a paper table file (``reference.paper_table``): its printed value as a point, the quote the
    file gives for the row (its printed row) where it has one."""
    rows, functions = [], {}
    for row in table.iter_rows(named=True):
        claim_id = spec.claim_id(row)
        value = float(row[spec.value_column])
        rows.append({
            "claim_id": claim_id, "section": spec.section, "artefact": spec.artefact, "statement": spec.statement(row),
            "paper_value": str(row[spec.value_column]), "paper_low": value, "paper_high": value, "unit": spec.unit,
            "tolerance": spec.tolerance, "explanation": spec.explanation(row), "quote": row.get("quote"),
            "tolerance_reason": spec.tolerance_reason, "calibrated": False,
        })  # fmt: skip
        functions[claim_id] = spec.function(row)
    return CellClaims(pl.DataFrame(rows, schema=CLAIM_COLUMNS), functions)


def with_cells(curated: pl.DataFrame, functions: Mapping[str, ClaimFunction], *cells: CellClaims) -> CellClaims:
    """The curated claims (a ``<paper>_claims.csv`` and its functions) and the table cells' claims; a cell the curated
    file claims under the same id keeps the curated row and function."""
    reference, merged = curated, dict(functions)
    for part in cells:
        new = part.reference.filter(~pl.col("claim_id").is_in(reference["claim_id"].implode()))
        reference = pl.concat([reference, new.select(reference.columns).cast(reference.schema)])
        merged |= {claim_id: part.functions[claim_id] for claim_id in new["claim_id"]}
    return CellClaims(reference, merged)


def median_spread(values: np.ndarray) -> float:
    """How far the 95 % percentile-bootstrap interval of the median of ``values`` reaches from their median (the larger
    side): ``Measured.spread`` of a median over runs (0 for one run)."""
    if values.size < 2:
        return 0.0
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    medians = np.median(rng.choice(values, (BOOTSTRAP_RESAMPLES, values.size)), axis=1)
    low, high = np.quantile(medians, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    centre = float(np.median(values))
    return float(max(centre - low, high - centre))


def median_of_runs(values: pl.Series, unit: str, fmt: str = "{:.2f}") -> Measured:
    """A median over runs with its bootstrap spread."""
    array = values.drop_nulls().to_numpy().astype(float)
    if array.size == 0:
        return Measured.unmeasured("no run with a value")
    value, spread = float(np.median(array)), median_spread(array)
    text = f"{fmt.format(value)} {unit} (median of {array.size}, 95 % interval ±{fmt.format(spread)})"
    return Measured(value, value, text, int(array.size), spread=spread)


def median_difference(first: pl.Series, second: pl.Series, unit: str, what: str, fmt: str = "{:.2f}") -> Measured:
    """median(``first``) − median(``second``) over runs with the reach of its bootstrap interval (each side's runs
    resampled on their own): the size and sign of a directional finding."""
    a, b = (s.drop_nulls().to_numpy().astype(float) for s in (first, second))
    if a.size == 0 or b.size == 0:
        return Measured.unmeasured(f"no runs on both sides of {what}")
    value = float(np.median(a) - np.median(b))
    # median_difference_interval gives median(wfc) − median(iack): here first − second.
    low, high = median_difference_interval(b, a)
    spread = max(value - low, high - value, 0.0)
    text = (f"{fmt.format(value)} {unit} ({what}: {fmt.format(float(np.median(a)))} − "
            f"{fmt.format(float(np.median(b)))}; "
            f"{a.size} and {b.size} runs; 95 % interval {fmt.format(low)} to {fmt.format(high)})")  # fmt: skip
    return Measured(value, value, text, int(a.size + b.size), spread=spread)
