"""What a render function returns (``Rendered``) and ``save``: every figure and table written the same
way, with a footnote that names the data's origin (from the dataset's description) and counts the
runs that were drawn."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # figures are files; never open a window (CI has no display)
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
import seaborn as sns  # noqa: E402

from quicack.markup import md_paragraph, md_text, md_text_expr, one_line, tex_comment  # noqa: E402
from quicack.provenance import DatasetDescription  # noqa: E402
from quicack.rendered import FROM_DATASET, FROM_MODELS, NOT_DRAWN, Rendered, run_accounting  # noqa: E402

__all__ = ["Rendered", "run_accounting", "save", "setup_style"]

# At 6 pt, an average character is about 3 pt wide: 24 per inch, a little less to be safe.
FOOTNOTE_CHARS_PER_INCH = 22
# The footnote starts this far below the lowest thing drawn (tick labels, axis labels, legends), whatever that is.
FOOTNOTE_GAP_IN = 0.06

# Fixed so that two renders of the same data give the same PNG/PDF bytes.
_SAVE_METADATA = {
    "pdf": {"CreationDate": None, "Producer": None, "Creator": "quicack"},
    "png": {"Software": None},
    "svg": {"Date": None},
}


def palette(name: str) -> list[tuple[float, float, float, float]]:
    """The colours of a qualitative colormap ("tab10", "tab20"), in order."""
    colormap = plt.get_cmap(name)
    return [colormap(i) for i in range(colormap.N)]


def setup_style() -> None:
    """The one style of every figure: seaborn's (its statistical plots — ECDFs, boxes — draw most figures) on
    matplotlib's tab10 colours, which figures also name directly ("tab:blue")."""
    sns.set_theme(context="paper", style="whitegrid", palette="tab10", font_scale=0.95)
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


def cwnd_figure(cwnd: pl.DataFrame, configurations: pl.DataFrame) -> plt.Figure:
    """Every run's congestion window over time (``metrics.cwnd.cwnd_over_time``) as a step line, one colour and one
    legend entry per configuration (``configurations``: run_id, configuration)."""
    setup_style()
    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    colours = dict(zip(sorted(configurations["configuration"].unique().to_list()), palette("tab10"), strict=False))
    drawn = cwnd.join(configurations.select("run_id", "configuration"), on="run_id").sort("configuration", "run_id")
    labelled: set[str] = set()
    for (_run, configuration), group in drawn.group_by("run_id", "configuration", maintain_order=True):
        ax.step(group["time_s"].to_list(), (group["cwnd_bytes"] / 1e3).to_list(), where="post",
                color=colours[configuration],
                alpha=0.6, linewidth=0.8, label=None if configuration in labelled else configuration)  # fmt: skip
        labelled.add(configuration)
    ax.set_xlabel("time since the server's first metrics update (s)")
    ax.set_ylabel("congestion window (KB)")
    ax.legend(fontsize=7)
    return fig


def save(
    rendered: Rendered, out_dir: Path, artefact_id: str, formats: str | Sequence[str], description: DatasetDescription
) -> list[Path]:
    """Write a rendered figure (one file per format) or table (CSV, Markdown, LaTeX) with its
    footnote; ``formats`` as the notebooks get it ("pdf,png") or as a list; tables ignore it."""
    footnote = rendered.footnote(description)
    out_dir = Path(out_dir)
    _write_status(rendered, out_dir, artefact_id)
    wanted = formats.split(",") if isinstance(formats, str) else list(formats)
    if rendered.missing:
        # The rule's outputs must exist: a placeholder of the same kind says what was missing.
        # the workflow's rule (common.smk is_figure): anything not "-fig" is a table (-tab, -claims, ackfreq22-eq)
        if "-fig" not in artefact_id:
            placeholder = pl.DataFrame({"artefact": [artefact_id], "not_rendered": [rendered.missing]})
            return _save_table(placeholder, out_dir, artefact_id, footnote, PLACEHOLDER_HEADERS)
        return _save_figure(_placeholder_figure(artefact_id, rendered.missing), out_dir, artefact_id, wanted, footnote)
    if rendered.artefact is None:
        raise ValueError(f"{artefact_id}: nothing rendered and no reason given (Rendered.missing)")
    if isinstance(rendered.artefact, pl.DataFrame):
        return _save_table(rendered.artefact, out_dir, artefact_id, footnote, rendered.headers)
    return _save_figure(rendered.artefact, out_dir, artefact_id, wanted, footnote)


# The columns of a table's placeholder (``save``).
PLACEHOLDER_HEADERS = {"artefact": "Artefact", "not_rendered": "Not drawn: the dataset has"}


def status_path(out_dir: Path, artefact_id: str) -> Path:
    """Where ``save`` records whether an artefact was drawn, and why not (read by ``quicack render-summary``)."""
    return Path(out_dir) / f"{artefact_id}.status.json"


def _write_status(rendered: Rendered, out_dir: Path, artefact_id: str) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = None if rendered.runs is None else rendered.runs.height
    source, detail = rendered.source()
    status = {"artefact": artefact_id, "rendered": not rendered.missing, "missing": rendered.missing or None,
              "runs": runs, "source": source, "detail": detail}  # fmt: skip
    status_path(out_dir, artefact_id).write_text(json.dumps(status, indent=1) + "\n", encoding="utf-8")


def _placeholder_figure(artefact_id: str, missing: str) -> plt.Figure:
    fig = plt.figure(figsize=(6.0, 1.6))
    text = textwrap.fill(f"{artefact_id} not drawn: the dataset has {missing}.", width=90)
    fig.text(0.5, 0.55, text, ha="center", va="center", fontsize=8, parse_math=False)
    return fig


# Text that comes from the dataset (its description's title, source, name; folder names) is written into each
# format as text, never as markup of that format: a '$...$' in a title is not mathtext in a figure, a line break
# followed by '\input{...}' is not a LaTeX command in a .tex table, nor a new line of a Markdown table's note.


def _save_figure(
    fig: plt.Figure, figures_dir: Path, figure_id: str, formats: Sequence[str], footnote: str
) -> list[Path]:
    figures_dir.mkdir(parents=True, exist_ok=True)
    # Wrapped to the figure's width, under the axes: the footnote must never widen a
    # single-column figure (bbox_inches="tight" grows the canvas to whatever text there is).
    width_in, height_in = fig.get_size_inches()
    wrapped = textwrap.fill(one_line(footnote), width=max(40, int(width_in * FOOTNOTE_CHARS_PER_INCH)))
    fig.text(0.01, _footnote_top(fig) / height_in, wrapped, fontsize=6, color="dimgray", ha="left", va="top",
             parse_math=False)
    paths = []
    for fmt in formats:
        path = figures_dir / f"{figure_id}.{fmt}"
        fig.savefig(path, format=fmt, bbox_inches="tight", metadata=_SAVE_METADATA.get(fmt))
        paths.append(path)
    plt.close(fig)
    return paths


def _footnote_top(fig: plt.Figure) -> float:
    """Where the footnote's first line starts, in inches above the figure's lower edge: below everything drawn, so that
    no rotated tick label, axis label or legend under the axes runs into it (they may reach below the edge)."""
    bottom = fig.get_tightbbox().y0  # with the figure's own renderer
    return min(bottom, 0.0) - FOOTNOTE_GAP_IN


def _save_table(frame: pl.DataFrame, tables_dir: Path, table_id: str, footnote: str,
                headers: Mapping[str, str] | None = None) -> list[Path]:
    """A table as CSV (its column names and values, for programs), Markdown and LaTeX (for a paper: each column under
    its human header from ``headers``, the table's own mapping of column -> label with unit; numbers in one format per
    column), each with the footnote. The Markdown and LaTeX cells and headers are escaped (a run's folder name or a
    claim's explanation is text, and '_' or '%' in it would break the table)."""
    tables_dir.mkdir(parents=True, exist_ok=True)
    csv_path = tables_dir / f"{table_id}.csv"
    frame.write_csv(csv_path)
    labels = [(headers or {}).get(name, name) for name in frame.columns]
    cells = _cells(frame)
    right = [frame.schema[name].is_numeric() for name in frame.columns]
    md_path = tables_dir / f"{table_id}.md"
    # Markdown: every cell, header and the note as text (a '<', '|' or '[' in a folder name or a title would be raw
    # HTML, a cell's end or a link); cells as written (tabulate would parse "0.0" back into the number 0).
    md_frame = cells.with_columns(md_text_expr(pl.all())).to_pandas()
    # (tabulate fails on alignments for a table without rows.)
    align = ["right" if r else "left" for r in right] if frame.height else None
    md_table = md_frame.to_markdown(index=False, headers=[md_text(label) for label in labels], disable_numparse=True,
                                    colalign=align)  # fmt: skip
    md_path.write_text(md_table + f"\n\n{md_paragraph(footnote)}\n", encoding="utf-8")
    tex_path = tables_dir / f"{table_id}.tex"
    tex_frame = cells.to_pandas()
    tex_frame.columns = labels
    tex = tex_frame.to_latex(index=False, escape=True, column_format="".join("r" if r else "l" for r in right))
    tex_path.write_text(tex + tex_comment(footnote), encoding="utf-8")
    return [csv_path, md_path, tex_path]


# A float column is shown with as many decimals as its values have (after the table's own rounding), at most this many.
MAX_DECIMALS = 4


def _cells(frame: pl.DataFrame) -> pl.DataFrame:
    """Every cell as the text a paper prints: a float column in one fixed number of decimals (0.5 and 0.0, never 0.5
    and 0), yes/no for a flag, an empty cell for a missing value."""
    shown = []
    for name, dtype in frame.schema.items():
        column = frame[name]
        if dtype.is_float():
            decimals = _decimals(column)
            # Python's format: polars has no fixed-decimals formatting; a table has tens of cells, not millions.
            column = pl.Series(name, [None if v is None else f"{v:.{decimals}f}" for v in column.to_list()], pl.String)
        elif dtype == pl.Boolean:
            column = column.replace_strict({True: "yes", False: "no"}, return_dtype=pl.String)
        elif dtype.is_nested():  # a list or struct cell as Python writes it (polars casts no nested value to text)
            column = pl.Series(name, [None if v is None else str(v) for v in column.to_list()], pl.String)
        else:
            column = column.cast(pl.String)
        shown.append(column.fill_null(""))
    return pl.DataFrame(shown)


def _decimals(column: pl.Series) -> int:
    """The fewest decimals (up to ``MAX_DECIMALS``) that show every value of ``column`` as it is."""
    values = column.drop_nulls().drop_nans().to_list()
    for decimals in range(MAX_DECIMALS):
        if all(abs(round(v, decimals) - v) <= 1e-9 * max(1.0, abs(v)) for v in values):
            return decimals
    return MAX_DECIMALS


def rendering_summary(status_files: Sequence[Path], failed: dict[str, Path] | None = None) -> tuple[str, int]:
    """The text of results/<dataset>/rendering.txt: the artefacts drawn from the dataset (with how many runs, scan
    connections...), those computed from models, formulas or the paper's own tables, and those not drawn, with why;
    and how many were not drawn. ``failed``: artefacts without a status because their job failed or did not run
    (id -> its log), when the summary is written after a failed run (workflow/rules/render.smk, onerror)."""
    statuses = sorted(
        (json.loads(Path(f).read_text(encoding="utf-8")) for f in status_files), key=lambda s: s["artefact"]
    )
    groups: dict[str, list[dict]] = {FROM_DATASET: [], FROM_MODELS: [], NOT_DRAWN: []}
    for status in statuses:
        groups[status.get("source") or _source_of_an_older_status(status)].append(status)
    failed = dict(sorted((failed or {}).items()))
    not_drawn = len(groups[NOT_DRAWN]) + len(failed)
    total = len(statuses) + len(failed)
    counts = (f"{len(groups[FROM_DATASET])} drawn from the dataset, {len(groups[FROM_MODELS])} from models or "
              f"formulas, {not_drawn} not drawn" + (f" ({len(failed)} failed)" if failed else ""))  # fmt: skip
    lines = ["quicack rendering summary", "", f"  artefacts: {total} ({counts})"]
    for group, title in _GROUP_TITLES.items():
        lines += ["", f"  {title}: {len(groups[group]) + (len(failed) if group == NOT_DRAWN else 0)}"]
        lines += [f"    {s['artefact']}: {s.get('detail') or _detail_of_an_older_status(s)}" for s in groups[group]]
    lines += [f"    {artefact}: its job failed or did not run in this run (log: {log})"
              for artefact, log in failed.items()]  # fmt: skip
    return "\n".join(lines) + "\n", not_drawn


_GROUP_TITLES = {
    FROM_DATASET: "drawn from the dataset (its runs, their qlogs or its scan)",
    FROM_MODELS: "from models, formulas or the paper's own tables (not from the dataset)",
    NOT_DRAWN: "not drawn (why)",
}


def _source_of_an_older_status(status: dict) -> str:
    """A status file written before statuses said their source (a run's results kept from an older version)."""
    return FROM_DATASET if status["rendered"] else NOT_DRAWN


def _detail_of_an_older_status(status: dict) -> str:
    if not status["rendered"]:
        return f"the dataset has {status['missing']}"
    return "what it drew from is not recorded (a status of an older version)"
