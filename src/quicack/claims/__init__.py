"""Claims tables: each in-text number of a paper beside the value our data gives, and a verdict.

A paper's claims are curated in ``data/reference/<paper>_claims.csv`` (what the paper says, its
value as a range, the tolerance that comes from the paper — its rounding, its stated range or
spread — and, where ours differs, why; read by ``quicack.reference.paper_claims``). Our values are
computed from the database by one function per claim (``quicack.claims.<paper>``); this module puts
the two side by side and gives every claim one verdict, the same way for every paper
(``verdict``; the rules in its docstring and in README.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import polars as pl

from quicack.provenance import DatasetDescription
from quicack.rendered import Rendered
from quicack.storage.run_batches import RunRows

# The verdicts of claims.csv's ``verdict`` column.
AGREE, DIFFER, UNRESOLVED, CALIBRATED, NOT_APPLICABLE = "agree", "differ", "unresolved", "calibrated", "n/a"
VERDICTS = (AGREE, DIFFER, UNRESOLVED, CALIBRATED, NOT_APPLICABLE)
# How the explanation of a difference we cannot explain starts (followed by what was ruled out).
UNEXPLAINED = "unexplained:"
NO_EXPLANATION = f"{UNEXPLAINED} the reference file gives no reason for this difference; nothing has been ruled out."


@dataclass(frozen=True)
class Measured:
    """Our value of one claim: a range (``low == high`` for a single number), how it reads, and
    how many runs it rests on. ``low``/``high`` are None when the data cannot speak to it; ``high``
    is +inf for a lower bound only."""

    low: float | None
    high: float | None
    text: str
    runs: int
    # For claims that are not numbers (e.g. datagram indices): decided by the claim function.
    matches: bool | None = None
    # The run-to-run spread of our value (same unit): how far the 95 % bootstrap interval of each number behind it
    # reaches from that number (the larger side; for a range, the larger of its two ends'). It widens our interval
    # (``interval``), never the tolerance.
    spread: float | None = None

    @staticmethod
    def unmeasured(why: str) -> Measured:
        return Measured(None, None, f"not measured: {why}", 0)

    def interval(self) -> tuple[float, float] | None:
        """Our 95 % interval: the range widened on each side by the spread (symmetric by the bootstrap interval's
        larger side, so it holds the bootstrap interval of each end); the range itself without a spread. None
        without a number."""
        if self.low is None or self.high is None:
            return None
        spread = self.spread or 0.0
        return self.low - spread, self.high + spread


# The database's views by name: packet-sized ones as handles read a batch of runs at a time
# (quicack.storage.run_batches).
ClaimFunction = Callable[[Mapping[str, RunRows]], Measured]


@dataclass(frozen=True)
class Verdict:
    verdict: str
    # For ``unresolved``: how many runs in all (ours has ``Measured.runs``) would decide it if the run-to-run variance
    # stays as observed; None where more runs of the same kind cannot decide it.
    runs_to_resolve: int | None = None


def verdict(
    paper_low: float | None, paper_high: float | None, tolerance: float | None, ours: Measured, calibrated: bool = False
) -> Verdict:
    """One claim's verdict. The paper's range [``paper_low``, ``paper_high``] (a missing bound is open: "at least 8"
    has no upper one) is widened by ``tolerance``, which comes from the paper (its rounding, its stated range or
    spread: the reference file's ``tolerance_reason``); our interval is ``ours.interval()``. Our spread never widens
    agreement: it can only leave a claim unresolved.

    - ``n/a``: either side has no number (and no ``matches`` decision).
    - ``calibrated``: a condition of ours was fitted to this number — reported, never counted as agreement.
    - ``agree``: our interval lies inside the widened range (a ``matches`` claim: the claim function's decision).
    - ``differ``: some number of ours lies outside the widened range even at the near end of its interval (for a
      single number: the whole interval lies outside); for a lower bound of ours, the bound lies above the range.
    - ``unresolved``: neither — our interval reaches both the widened range and values outside it, which the paper's
      statement excludes. ``runs_to_resolve`` estimates the runs that would decide it: the interval's half-width
      ``h`` (the spread) shrinks as 1/sqrt(runs), so with ``n`` runs now, ``ceil(n * (h / h_needed)**2)`` runs give
      the half-width ``h_needed`` = the distance from our number to the nearest boundary of the widened range (for a
      range of ours inside the widened range, its ends' nearest distance: then it agrees; else the larger overshoot
      of an end: then it differs). None when that distance is zero or ours is a lower bound only.
    """
    if ours.matches is not None:
        return Verdict(CALIBRATED if calibrated else AGREE if ours.matches else DIFFER)
    interval = ours.interval()
    if interval is None or (paper_low is None and paper_high is None):
        return Verdict(NOT_APPLICABLE)
    if calibrated:
        return Verdict(CALIBRATED)
    tolerance = tolerance or 0.0
    wide_low = (-math.inf if paper_low is None else paper_low) - tolerance
    wide_high = (math.inf if paper_high is None else paper_high) + tolerance
    spread = ours.spread or 0.0
    low, high = interval[0] + spread, interval[1] - spread  # ours.low, ours.high: not None, as there is an interval
    if math.isinf(high):  # a lower bound only: it excludes the paper's range or cannot decide
        return Verdict(DIFFER if low > wide_high else UNRESOLVED)
    if wide_low <= interval[0] and interval[1] <= wide_high:
        return Verdict(AGREE)
    if low + spread < wide_low or high - spread > wide_high:
        return Verdict(DIFFER)
    if wide_low <= low and high <= wide_high:
        needed = min(low - wide_low, wide_high - high)
    else:
        needed = max(wide_low - low, high - wide_high)
    runs = math.ceil(ours.runs * (spread / needed) ** 2) if needed > 0 and ours.runs > 0 else None
    return Verdict(UNRESOLVED, runs)


def _flag(value: object) -> bool:
    """A reference file's Boolean cell (``calibrated``): True, or its text 'true'; empty and absent are False."""
    return value is True or str(value).strip().lower() == "true"


def _explanation(decided: Verdict, ours: Measured, wide: tuple[float, float], given: str) -> str:
    """The reference file's explanation, preceded for ``unresolved`` by what it would take to decide; a difference
    without one says that it is unexplained."""
    if decided.verdict == DIFFER and not given.strip():
        return NO_EXPLANATION
    if decided.verdict != UNRESOLVED:
        return given
    interval = ours.interval()
    assert interval is not None
    if math.isinf(interval[1]):
        why = (
            f"Unresolved: ours is a lower bound ({interval[0]:g}) that does not exclude the paper's range; no number "
            "of such runs decides it."
        )
    else:
        runs = "no number of runs decides it (our value lies on its boundary)" if decided.runs_to_resolve is None else (
            f"about {decided.runs_to_resolve} runs (now {ours.runs}) would decide it if the run-to-run variance stays "
            "as observed")  # fmt: skip
        why = (f"Unresolved: our 95 % interval {interval[0]:.4g} to {interval[1]:.4g} reaches both the paper's range "
               "widened by "
               f"its tolerance ({wide[0]:.4g} to {wide[1]:.4g}) and values outside it; {runs}.")  # fmt: skip
    return f"{why} {given}".strip()


# A claims table's columns (``claims_table``) and their headers as a paper prints them (the CSV keeps the names;
# the numbers are in the row's unit).
CLAIMS_HEADERS = {
    "paper": "Paper", "claim_id": "Claim", "section": "Section", "artefact": "Artefact", "statement": "Statement",
    "paper_value": "Paper's value", "unit": "Unit", "ours": "Ours", "ours_low": "Ours, low", "ours_high": "Ours, high",
    "ours_interval_low": "Ours, 95 % interval low", "ours_interval_high": "Ours, 95 % interval high", "runs": "Runs",
    "tolerance": "Tolerance", "tolerance_reason": "Tolerance from", "verdict": "Verdict",
    "runs_to_resolve": "Runs to resolve", "explanation": "Explanation", "our_source": "Our source",
}  # fmt: skip


def claims_table(
    paper: str,
    reference: pl.DataFrame,
    functions: Mapping[str, ClaimFunction],
    tables: Mapping[str, RunRows],
    decide: bool = True,
) -> pl.DataFrame:
    """One row per claim of the reference file: the paper's value, ours with its 95 % interval, the tolerance and its
    reason from the reference file, the verdict (``verdict``; ``n/a`` throughout when not ``decide``: our numbers
    cannot confirm the paper's, e.g. an emulated scan) with the runs that would resolve an unresolved one, and the
    explanation. A claim without a function, or a function without a reference row, is an error: the two lists
    must stay in step."""
    missing = set(reference["claim_id"]) ^ set(functions)
    if missing:
        raise ValueError(f"claims without both a reference row and a function: {sorted(missing)}")
    rows = []
    for claim in reference.iter_rows(named=True):
        ours = functions[claim["claim_id"]](tables)
        tolerance = claim["tolerance"] or 0.0
        # tolerance_reason and calibrated are read where the reference file has them (data/reference/README.md).
        calibrated = _flag(claim.get("calibrated"))
        decided = (
            verdict(claim["paper_low"], claim["paper_high"], tolerance, ours, calibrated)
            if decide
            else Verdict(NOT_APPLICABLE)
        )
        low, high = claim["paper_low"], claim["paper_high"]
        wide = (-math.inf if low is None else low - tolerance, math.inf if high is None else high + tolerance)
        interval = ours.interval() or (None, None)
        rows.append(
            {
                "paper": paper,
                **{k: claim[k] for k in ("claim_id", "section", "artefact", "statement", "paper_value", "unit")},
                "ours": ours.text,
                "ours_low": ours.low,
                "ours_high": ours.high,
                "ours_interval_low": interval[0],
                "ours_interval_high": interval[1],
                "runs": ours.runs,
                "tolerance": tolerance,
                "tolerance_reason": claim.get("tolerance_reason") or "",
                "verdict": decided.verdict,
                "runs_to_resolve": decided.runs_to_resolve,
                "explanation": _explanation(decided, ours, wide, claim["explanation"] or ""),
            }
        )
    floats = ("ours_low", "ours_high", "ours_interval_low", "ours_interval_high", "tolerance")
    return pl.DataFrame(rows, schema_overrides={**dict.fromkeys(floats, pl.Float64), "runs_to_resolve": pl.Int64})


def claims_rendered(table: pl.DataFrame, description: DatasetDescription) -> Rendered:
    """A paper's claims table (``claims_table``) as its notebook saves it: with our data's source, and what
    rendering.txt counts: the claims measured from the dataset (ours rests on runs > 0, whatever the verdict: an
    emulated scan's are n/a by design) or, where none is, those that formulas or the paper's tables decide."""
    measured = table.filter(pl.col("runs") > 0).height
    by_formulas = table.filter((pl.col("verdict") != NOT_APPLICABLE) & (pl.col("runs") == 0)).height
    return Rendered(
        table.with_columns(pl.lit(description.source_label()).alias("our_source")),
        drawn_from=(measured, "measured claim"),
        headers=CLAIMS_HEADERS,
        formula_part=f"{by_formulas} of {table.height} claims decided by formulas or the paper's tables, none measured"
        if by_formulas else "",
    )
