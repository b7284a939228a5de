"""Claims tables: each in-text number of a paper beside the value our data gives.

A paper's claims are curated in ``data/reference/<paper>_claims.csv`` (what the paper says, its
value as a range, the tolerance we accept and, where ours differs, why; read by
``quicack.reference.paper_claims``). Where our value comes with its run-to-run spread
(``Measured.spread``), that spread is the tolerance instead of the file's. Our values are computed
from the database by one function per claim (``quicack.claims.<paper>``); this module puts the two
side by side and decides agreement the same way for every paper.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class Measured:
    """Our value of one claim: a range (``low == high`` for a single number), how it reads, and
    how many runs it rests on. ``low``/``high`` are None when the data cannot speak to it."""

    low: float | None
    high: float | None
    text: str
    runs: int
    # For claims that are not numbers (e.g. datagram indices): decided by the claim function.
    matches: bool | None = None
    # The run-to-run spread of our value (same unit): how far the bootstrap interval of each number behind it
    # reaches from that number. When given it is the claim's tolerance, in place of the reference file's.
    spread: float | None = None

    @staticmethod
    def unmeasured(why: str) -> Measured:
        return Measured(None, None, f"not measured: {why}", 0)


ClaimFunction = Callable[[Mapping[str, pl.DataFrame]], Measured]


def agreement(paper_low: float | None, paper_high: float | None, ours: Measured, tolerance: float) -> bool | None:
    """Ours agrees when it lies inside the paper's range widened by ``tolerance`` (same unit); an
    open range (a lower bound only) agrees when it does not exclude the paper's value. None when
    either side has no number."""
    if ours.matches is not None:
        return ours.matches
    if paper_low is None or paper_high is None or ours.low is None or ours.high is None:
        return None
    if math.isinf(ours.high):
        return ours.low <= paper_high + tolerance
    return paper_low - tolerance <= ours.low and ours.high <= paper_high + tolerance


def claims_table(paper: str, reference: pl.DataFrame, functions: Mapping[str, ClaimFunction], tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per claim of the reference file: the paper's value, ours, agreement and the
    explanation. A claim without a function, or a function without a reference row, is an error:
    the two lists must stay in step."""
    missing = set(reference["claim_id"]) ^ set(functions)
    if missing:
        raise ValueError(f"claims without both a reference row and a function: {sorted(missing)}")
    rows = []
    for claim in reference.iter_rows(named=True):
        ours = functions[claim["claim_id"]](tables)
        tolerance = ours.spread if ours.spread is not None else claim["tolerance"] or 0.0
        rows.append(
            {
                "paper": paper,
                **{k: claim[k] for k in ("claim_id", "section", "artefact", "statement", "paper_value", "unit")},
                "ours": ours.text,
                "ours_low": ours.low,
                "ours_high": ours.high,
                "runs": ours.runs,
                "tolerance": tolerance,
                "tolerance_from": "measured spread" if ours.spread is not None else "reference",
                "agrees": agreement(claim["paper_low"], claim["paper_high"], ours, tolerance),
                "explanation": claim["explanation"] or "",
            }
        )
    return pl.DataFrame(rows, schema_overrides={"ours_low": pl.Float64, "ours_high": pl.Float64, "tolerance": pl.Float64, "agrees": pl.Boolean})
