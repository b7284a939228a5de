"""Saving figures and tables the same way everywhere, with their provenance on them."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # figures are files; never open a window (CI has no display)
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

# At 6 pt, an average character is about 3 pt wide: 24 per inch, a little less to be safe.
FOOTNOTE_CHARS_PER_INCH = 22

# Fixed so that two renders of the same data give the same PNG/PDF bytes.
_SAVE_METADATA = {
    "pdf": {"CreationDate": None, "Producer": None, "Creator": "quicack"},
    "png": {"Software": None},
    "svg": {"Date": None},
}


@dataclass(frozen=True)
class Provenance:
    """Where a figure's numbers come from; printed in small type under the figure."""

    source: str  # e.g. "RFC 9002 model (quicack.recovery)" or "testbed emulation"
    emulated: bool
    note: str = ""  # e.g. how many runs were excluded and why

    def footnote(self) -> str:
        text = f"EMULATED DATA — {self.source}; not the paper's measurement." if self.emulated else f"Computed from {self.source}."
        return f"{text} {self.note}".strip()

    def with_note(self, note: str) -> Provenance:
        return Provenance(self.source, self.emulated, f"{self.note} {note}".strip())


MODEL = Provenance("the RFC 9002 formulas in quicack.recovery (no measurement)", emulated=False)


def testbed_provenance(dataset: str) -> Provenance:
    """Every testbed figure says it is emulated: real QUIC implementations, emulated paths."""
    return Provenance(f"dataset '{dataset}', real QUIC implementations over emulated paths (quicack testbed)", emulated=True)


def run_accounting(runs: pl.DataFrame, metric: str | None = None) -> str:
    """'N runs: A ok, F failed (excluded)[, M without <metric> (excluded)]' over the runs a figure
    draws from, so that nothing is dropped silently."""
    ok = runs.filter(pl.col("status") == "ok")
    text = f"{runs.height} runs: {ok.height} ok, {runs.height - ok.height} failed (excluded)"
    if metric is not None:
        missing = ok.filter(pl.col(metric).is_null()).height
        text += f", {missing} ok without {metric} (excluded)"
    return text + "."


def setup_style() -> None:
    plt.rcParams.update(
        {
            "figure.dpi": 100,
            "savefig.dpi": 200,
            "font.size": 9,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "svg.hashsalt": "quicack",
        }
    )


def save_figure(fig: plt.Figure, figures_dir: Path, figure_id: str, formats: Sequence[str], provenance: Provenance) -> list[Path]:
    figures_dir = Path(figures_dir)
    figures_dir.mkdir(parents=True, exist_ok=True)
    # Wrapped to the figure's width, under the axes: the footnote must never widen a
    # single-column figure (bbox_inches="tight" grows the canvas to whatever text there is).
    width_in = fig.get_size_inches()[0]
    footnote = textwrap.fill(provenance.footnote(), width=max(40, int(width_in * FOOTNOTE_CHARS_PER_INCH)))
    fig.text(0.01, 0.0, footnote, fontsize=6, color="dimgray", ha="left", va="top")
    paths = []
    for fmt in formats:
        path = figures_dir / f"{figure_id}.{fmt}"
        fig.savefig(path, format=fmt, bbox_inches="tight", metadata=_SAVE_METADATA.get(fmt))
        paths.append(path)
    plt.close(fig)
    return paths


def save_table(frame: pl.DataFrame, tables_dir: Path, table_id: str, provenance: Provenance) -> list[Path]:
    """A table as CSV, Markdown and LaTeX, each with the provenance line."""
    tables_dir = Path(tables_dir)
    tables_dir.mkdir(parents=True, exist_ok=True)
    csv_path = tables_dir / f"{table_id}.csv"
    frame.write_csv(csv_path)
    pandas_frame = frame.to_pandas()
    md_path = tables_dir / f"{table_id}.md"
    md_path.write_text(pandas_frame.to_markdown(index=False) + f"\n\n{provenance.footnote()}\n")
    tex_path = tables_dir / f"{table_id}.tex"
    tex_path.write_text(pandas_frame.to_latex(index=False) + f"% {provenance.footnote()}\n")
    return [csv_path, md_path, tex_path]
