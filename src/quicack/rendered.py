"""What every render function returns: the artefact together with the runs it used, so that a
footnote's counts are computed from exactly what was drawn. Shared by ``quicack.figures`` and
``quicack.claims`` (which must not depend on the figures); written by ``quicack.figures.common.save``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ParamSpec

import polars as pl

from quicack.metrics.run_conditions import conditions_note
from quicack.metrics.selection import MissingData
from quicack.provenance import DatasetDescription

P = ParamSpec("P")

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MODEL_FOOTNOTE = "Computed from the RFC 9002 formulas in quicack.models.recovery (no measurement)."


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

    def footnote(self, description: DatasetDescription) -> str:
        """Origin (the model, or the dataset's own description), how to read it, the runs used."""
        parts = [self.model_note if self.model else description.footnote(), self.note]
        if self.runs is not None:
            parts.append("Runs used: " + run_accounting(self.runs, self.metric))
            parts.append(conditions_note(self.runs))
        return " ".join(p.strip() for p in parts if p.strip())


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
    text = f"{runs.height} runs: {ok.height} ok, {runs.height - ok.height} failed (excluded)"
    if metric is not None:
        missing = ok.filter(pl.col(metric).is_null()).height
        text += f", {missing} ok without {metric} (excluded)"
    return text + "."
