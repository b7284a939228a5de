# Shared configuration, paths and input functions of the quicack workflow.

from pathlib import Path

from snakemake.utils import min_version, validate

from quicack.ingest import INGEST_TABLES
from quicack.pipeline import DERIVED_TABLES

min_version("9.0")


validate(config, "../schemas/config.schema.yaml")

DATASET = config["dataset"]
RAW = Path(config["raw_dir"])
RESULTS = Path(config["results_dir"]) / DATASET
PARQUET = RESULTS / "parquet"
LOGS = RESULTS / "logs"
FIGURE_FORMATS = config["figures"]["formats"]


def run_groups():
    """Run groups (<server>_<client> folders) of the raw dataset, read when the DAG is built."""
    if not RAW.is_dir():
        return []
    return sorted(p.name for p in RAW.iterdir() if p.is_dir() and not p.name.startswith("."))


GROUPS = run_groups()


def group_inputs(wildcards):
    """Every raw file of a run group, so that a changed or added file re-runs its group. The
    testbed's group.json markers are left out: they are outputs of testbed rules, and the
    analysis must never ask to re-run the testbed."""
    return sorted(str(p) for p in (RAW / wildcards.group).rglob("*") if p.is_file() and p.name != "group.json")


def table_parts(tables, groups):
    return [str(PARQUET / table / f"{group}.parquet") for table in tables for group in groups]


def all_parquet():
    return (
        table_parts(INGEST_TABLES, GROUPS)
        + table_parts(DERIVED_TABLES, GROUPS)
        + [str(PARQUET / "ingest_issues" / "_dataset.parquet")]
    )


FIGURES = RESULTS / "figures"
NOTEBOOKS_OUT = RESULTS / "notebooks"


def figure_outputs(figure_id):
    """The figure's files; the PNG goes into the report with the figure's caption."""
    paths = [FIGURES / f"{figure_id}.{fmt}" for fmt in FIGURE_FORMATS]
    caption = f"../report/{figure_id}.rst"
    # (`report` must not start a line here: the Snakefile parser reads that as the directive.)
    return [(report(p, caption=caption, category="imc24") if p.suffix == ".png" else p) for p in paths]
