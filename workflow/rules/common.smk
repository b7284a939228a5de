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


SOURCE = Path("src/quicack")


def package_code(*left_out):
    """The package's modules, as inputs of the stages: Snakemake re-runs a stage when the code that made
    its outputs changed, not only its data (imported modules are otherwise invisible to it)."""
    return sorted(str(p) for p in SOURCE.rglob("*.py") if p.relative_to(SOURCE).parts[0] not in left_out)


# The testbed only records data; the figures only read the database.
ANALYSIS_CODE = package_code("testbed", "figures")
RENDER_CODE = package_code("testbed")
# Curated paper values (claims, reference tables) that the figures and tables print beside ours.
REFERENCE_DATA = sorted(str(p) for p in Path("data/reference").glob("*.csv"))


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
TABLES = RESULTS / "tables"
NOTEBOOKS_OUT = RESULTS / "notebooks"
NOTEBOOKS = Path("notebooks")


def rendered_ids():
    """One thin notebook per paper artefact: notebooks/<paper>-<fig|tab>NN.py (or <paper>-claims.py)
    renders the artefact of that id; adding a notebook adds it to the DAG."""
    return sorted(p.stem for p in NOTEBOOKS.glob("*.py"))


RENDERED = rendered_ids()


def is_figure(artefact_id):
    return "-fig" in artefact_id


def rendered_outputs(artefact_id):
    """The artefact's files. Figures: one file per configured format; the PNG goes into the
    report. Tables: CSV (in the report), Markdown and LaTeX. The caption is
    workflow/report/<id>.rst."""
    caption = f"../report/{artefact_id}.rst"
    category = artefact_id.split("-")[0]
    if is_figure(artefact_id):
        paths = [FIGURES / f"{artefact_id}.{fmt}" for fmt in FIGURE_FORMATS]
        in_report = ".png"
    else:
        paths = [TABLES / f"{artefact_id}.{fmt}" for fmt in ("csv", "md", "tex")]
        in_report = ".csv"
    # (`report` must not start a line here: the Snakefile parser reads that as the directive.)
    return [(report(p, caption=caption, category=category) if p.suffix == in_report else p) for p in paths]


def rendered_notebooks():
    return [NOTEBOOKS_OUT / f"{artefact_id}.ipynb" for artefact_id in RENDERED]
