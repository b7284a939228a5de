"""What every render function returns: the artefact together with the runs it used, so that a
footnote's counts are computed from exactly what was drawn. Shared by ``quicack.figures`` and
``quicack.claims`` (which must not depend on the figures); written by ``quicack.figures.common.save``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ParamSpec

import polars as pl

from quicack.markup import plural
from quicack.metrics.run_conditions import conditions_note
from quicack.metrics.selection import MissingData
from quicack.provenance import DatasetDescription

P = ParamSpec("P")

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MODEL_FOOTNOTE = "Computed from the RFC 9002 formulas in quicack.models.recovery (no measurement)."

# What an artefact was drawn from (rendering.txt's three groups, ``Rendered.source``): the dataset's measurements
# (its runs, their qlogs, its scan), models / formulas / the paper's own tables, or nothing (why, beside it).
FROM_DATASET, FROM_MODELS, NOT_DRAWN = "dataset", "models", "not drawn"


@dataclass(frozen=True)
class Rendered:
    """What a render function returns: the figure or table together with what its footnote
    counts, so that the counts come from exactly the runs that were drawn.

    ``runs``: every run the artefact draws from, failed ones included (None: no runs behind it,
    e.g. a model figure); ``metric``: the column whose nulls were left out; ``note``: how to
    read it; ``model``: drawn from formulas, not from the dataset (``model_note`` says which)."""

    artefact: Figure | pl.DataFrame | None
    runs: pl.DataFrame | None = None
    metric: str | None = None
    note: str = ""
    model: bool = False
    model_note: str = MODEL_FOOTNOTE
    # Why nothing was drawn (the dataset lacks the artefact's inputs): ``save`` writes a placeholder.
    missing: str = ""
    # What it drew from the dataset other than ``runs``: how many of what, e.g. (936, "scan connection"); a count of 0
    # means none of the dataset's data is in it (a table of the paper's side only).
    drawn_from: tuple[int, str] | None = None
    # What of it comes from formulas or the paper's own tables when nothing comes from the dataset (a claims table's
    # formula claims): it then counts among the models, not among the artefacts not drawn.
    formula_part: str = ""
    # A table's column -> its header in the Markdown and LaTeX (human words, unit in parentheses): the table's own
    # mapping, beside the function that makes its columns (the CSV keeps the column names, for programs).
    headers: Mapping[str, str] | None = None

    def footnote(self, description: DatasetDescription) -> str:
        """Origin (the model, or the dataset's own description), how to read it, the runs used."""
        parts = [self.model_note if self.model else description.footnote(), self.note]
        if self.runs is not None:
            parts.append("Runs used: " + run_accounting(self.runs, self.metric))
            parts.append(conditions_note(self.runs))
        return " ".join(p.strip() for p in parts if p.strip())

    def source(self) -> tuple[str, str]:
        """Where it came from (``FROM_DATASET``, ``FROM_MODELS`` or ``NOT_DRAWN``) and, in words, how much of the
        dataset it drew (the ok runs, the scan connections) or, for a model, which, or why it holds nothing drawn.
        A table that reads runs but found none (0 ok runs) is not drawn from the runs: it holds the paper's side."""
        if self.missing:
            return NOT_DRAWN, f"the dataset has {self.missing}"
        if self.model:
            return FROM_MODELS, self.model_note
        drawn = []
        if self.runs is not None:
            ok = self.runs.filter(pl.col("status") == "ok").height
            if ok:
                failed = self.runs.height - ok
                drawn.append(plural(ok, "ok run") + (f" ({failed} failed, excluded)" if failed else ""))
        if self.drawn_from is not None and self.drawn_from[0]:
            drawn.append(plural(*self.drawn_from))
        if drawn:
            return FROM_DATASET, ", ".join(drawn)
        if self.formula_part:
            return FROM_MODELS, self.formula_part
        if self.runs is None and self.drawn_from is None:
            # A render function that does not say what it reads: counted as drawn, and said so (tests forbid it).
            return FROM_DATASET, "what it drew from is not declared"
        read = []
        if self.runs is not None:
            runs = self.runs.height
            read.append(f"{plural(runs, 'run')} it reads, none ok" if runs else "no run it reads")
        if self.drawn_from is not None:
            read.append(plural(0, self.drawn_from[1]))
        holds = ": the table holds the paper's side only" if isinstance(self.artefact, pl.DataFrame) else ""
        return NOT_DRAWN, f"nothing of the dataset's in it ({', '.join(read)}){holds}"


def placeholder_when_missing(render: Callable[P, Rendered]) -> Callable[P, Rendered]:
    """A render function that returns a placeholder saying what is missing when the dataset lacks its
    inputs (MissingData), instead of failing the pipeline."""

    @functools.wraps(render)
    def rendered_or_placeholder(*args: P.args, **kwargs: P.kwargs) -> Rendered:
        try:
            return render(*args, **kwargs)
        except MissingData as missing:
            return Rendered(None, missing=str(missing))

    return rendered_or_placeholder


def run_accounting(runs: pl.DataFrame, metric: str | None = None) -> str:
    """'N runs: A ok, F failed (excluded)[, M without <metric> (excluded)]' over the runs a figure
    draws from, so that nothing is dropped silently."""
    ok = runs.filter(pl.col("status") == "ok")
    text = f"{plural(runs.height, 'run')}: {ok.height} ok, {runs.height - ok.height} failed (excluded)"
    if metric is not None:
        missing = ok.filter(pl.col(metric).is_null()).height
        text += f", {missing} ok without {metric} (excluded)"
    return text + "."
