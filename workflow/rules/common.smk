# Shared configuration, paths and input functions of the quicack workflow.

import functools
import json
import os
import shlex
import time
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import min_version, validate

from quicack.compiled_core import engine_identity, stale_core_warning
from quicack.config_check import config_problems
from quicack.jobs.job_inputs import WorkflowInputs
from quicack.layout import group_from_key, group_key, run_groups
from quicack.layout.archive import check_raw
from quicack.layout.archive import dataset_archives
from quicack.layout.group_stamp import write_group_stamp
from quicack.layout.scan_folders import scan_parts
from quicack.reading.limits import limit_arguments, limits_from_mapping
from quicack.schema import DERIVE, INGEST, SCAN, tables_written_by

min_version("9.0")


# Before the schema: what it cannot refuse, and a configuration its error message would print without end.
if _config_problems := config_problems(config):
    raise WorkflowError("configuration: " + "; ".join(_config_problems))
validate(config, "../schemas/config.schema.yaml")


def config_flag(name):
    """A yes/no setting as the schema accepts it (a boolean, 1/0, or true/false/yes/no/on/off as typed on the
    command line) -> bool."""
    value = config[name]
    return value if isinstance(value, bool) else str(value).lower() in ("true", "yes", "on", "1")


STRICT = config_flag("strict")
FOLLOW_EXTERNAL_SYMLINKS = config_flag("follow_external_symlinks")
# The option of the ingest commands that says so (a change re-runs ingest: it is a params value).
FOLLOW_OPTION = "--follow-external-symlinks" if FOLLOW_EXTERNAL_SYMLINKS else ""

# With --use-conda every job runs in the environment made from environment.yml, into which
# environment.post-deploy.sh installs quicack itself: every rule calls the quicack command, so there is one
# environment for all, not one per rule.
CONDA_ENV = "../../environment.yml"

DATASET = config["dataset"]
RAW = Path(config["raw_dir"])
if not RAW.is_dir() and RAW.parent.is_dir() and dataset_archives(RAW.parent):
    raise WorkflowError(
        f"raw_dir {RAW} is not unpacked yet: bash install.sh, or "
        f"python -m quicack.layout.archive unpack --cached {RAW.parent} {RAW}"
    )
# An unpack that did not finish is never read as the dataset (quicack.layout.archive: its marker lists every file).
if RAW.is_dir() and (unfinished := check_raw(RAW)):
    raise WorkflowError(f"raw_dir: {unfinished}: bash install.sh, or python -m quicack.layout.archive unpack --cached {RAW.parent} {RAW}")
RESULTS = Path(config["results_dir"]) / DATASET
PARQUET = RESULTS / "parquet"
# The database readers open, and its receipt: the database rule declares the receipt as its output, never the
# database, because Snakemake removes a job's outputs before running it and the old database must answer queries
# until the new one is renamed over it (quicack.storage.publish). Rules that read the database take the receipt as input.
DATABASE = RESULTS / "quicack.duckdb"
DATABASE_RECEIPT = RESULTS / "quicack.duckdb.published"
LOGS = RESULTS / "logs"
# Snakemake's benchmark files: per job its wall time, peak RSS (max_rss, MB) and I/O, in a folder per rule named by
# the wildcards; bench/pipeline_scale.py tabulates them.
BENCHMARKS = RESULTS / "benchmarks"
FIGURE_FORMATS = config["figures"]["formats"]
# The input limits as ingest-group options (only those that differ from the defaults); a change reruns ingest.
LIMIT_OPTIONS = " ".join(shlex.quote(option) for option in limit_arguments(limits_from_mapping(config.get("limits"))))


def dataset_description():
    """The dataset's description file: the configured one (which must exist), else dataset.yaml beside the
    raw folder when there is one, else none (footnotes then say the origin is not described)."""
    configured = config.get("dataset_description")
    if configured:
        if not Path(configured).is_file():
            raise WorkflowError(f"dataset_description: {configured} does not exist")
        return [configured]
    default = RAW.parent / "dataset.yaml"
    return [str(default)] if default.is_file() else []


DESCRIPTION = dataset_description()
# What quicack.testbed.path_check measured of the dataset's emulated paths, when it sits beside the raw folder.
PATH_CHECKS = [str(RAW.parent / "path_check.csv")] if (RAW.parent / "path_check.csv").is_file() else []

# The scan (imc24 §4.3), if configured: parts of one vantage point and UTC day (quicack.layout.scan_folders).
SCAN_ROOT = Path(config["scan_dir"]) if config.get("scan_dir") else None
SCAN_PREFIXES = [config["scan_prefix_to_asn"]] if config.get("scan_prefix_to_asn") else []
if SCAN_ROOT is not None and not SCAN_ROOT.is_dir():
    raise WorkflowError(f"scan_dir: {SCAN_ROOT} is not a folder (set scan_dir: '' for no scan)")
for _prefix_file in SCAN_PREFIXES:
    if not Path(_prefix_file).is_file():
        raise WorkflowError(f"scan_prefix_to_asn: {_prefix_file} does not exist")
SCAN_PARTS = scan_parts(SCAN_ROOT) if SCAN_ROOT is not None else {}


def scan_description():
    """The scan's description file: the configured one (which must exist), else dataset.yaml beside the scan root."""
    configured = config.get("scan_description")
    if configured:
        if not Path(configured).is_file():
            raise WorkflowError(f"scan_description: {configured} does not exist")
        return [configured]
    default = SCAN_ROOT.parent / "dataset.yaml" if SCAN_ROOT is not None else None
    return [str(default)] if default is not None and default.is_file() else []


SCAN_DESCRIPTION = scan_description() if SCAN_PARTS else []


def scan_part_inputs(wildcards):
    """Every file of the part's measurement folders (a changed or added file re-runs the part); paths with braces
    cannot be inputs, as for run groups."""
    return sorted(
        str(p)
        for folder in SCAN_PARTS[wildcards.part]
        for p in folder.path.iterdir()
        if p.is_file() and "{" not in str(p) and "}" not in str(p)
    )


# The repository (where the main Snakefile is), relative to the working directory: "." from the repository root,
# and still right when Snakemake runs from elsewhere (-s <repo>/Snakefile), where cwd-relative paths would find nothing.
REPO = Path(os.path.relpath(workflow.basedir))

# What each job runs and reads, computed when the DAG is built (quicack.jobs.code_graph, quicack.jobs.reference_use): a job
# calling `quicack <command>` depends on the modules that subcommand's module reaches through every import, a
# notebook on those its imports reach, each on the package data those modules name and the data/reference files its
# functions read; a job that may use the compiled core (rust/quicack_core) on the core's build identity (a params
# value). So editing a module or a reference file re-runs exactly the jobs that run or read it. The answers are kept
# in .snakemake/ under the SHA-256 of every package file (quicack.jobs.job_inputs); the Snakefile saves them once every
# rule is defined.
JOB_INPUTS = WorkflowInputs(REPO / "src", REPO / "data" / "reference", Path(".snakemake") / "quicack" / "job_inputs.json")
# What the capture decoder and the qlog reader run here: a rebuilt core (or another engine) re-runs their jobs.
ENGINE_IDENTITY = engine_identity()
_stale_core = stale_core_warning(REPO / "rust" / "quicack_core")
if _stale_core:
    logger.warning(f"quicack: {_stale_core}")


def _engine(inputs):
    return ENGINE_IDENTITY if inputs.uses_core else "not used"


def command_code(command):
    """The source files `quicack <command>` runs, and the package data they name."""
    return JOB_INPUTS.command(command).code


def command_reference(command):
    """The data/reference files `quicack <command>` reads."""
    return JOB_INPUTS.command(command).reference


def command_engine(command):
    """The compiled core's identity for a command whose modules may use it, else a constant."""
    return _engine(JOB_INPUTS.command(command))


def notebook_code(notebook):
    """The source files a notebook runs (its imports, followed through), and the package data they name."""
    return JOB_INPUTS.script(notebook).code


def notebook_reference(notebook):
    """The data/reference files a notebook's code and the functions it calls read."""
    return JOB_INPUTS.script(notebook).reference


def notebook_engine(notebook):
    return _engine(JOB_INPUTS.script(notebook))


# Run groups by key (quicack.layout.group_key): any folder name becomes a safe file name and wildcard value.
GROUPS = [group_key(group) for group in run_groups(RAW, FOLLOW_EXTERNAL_SYMLINKS)]


# Each run group's raw files as one input (quicack.layout.group_stamp): a stamp whose content is the digest of
# their paths, sizes and modification times, rewritten (also by a dry run) only when a file changed, was added or
# was removed. Snakemake's cost is per input file at every start and in every scheduling pass (at 100x the
# embedded data, 533,100 files); the stamp costs one listing per start. Paths with braces need no stand-in.
GROUP_STAMPS = RESULTS / "raw_stamps"


@functools.cache
def group_stamp(group_key_value):
    return write_group_stamp(RAW / group_from_key(group_key_value), GROUP_STAMPS / f"{group_key_value}.sha256")


def group_inputs(wildcards):
    """The run group's stamp, so that a changed or added file re-runs its group. The testbed's group.json markers
    are left out of it: they are outputs of testbed rules, and the analysis must never ask to re-run the testbed.
    No input for a name that is no group (Snakemake asks while it finds which rule writes ingest_issues/_dataset)."""
    if not (RAW / group_from_key(wildcards.group)).is_dir():
        return []
    return [str(group_stamp(wildcards.group))]


def table_parts(tables, groups):
    return [str(PARQUET / table / f"{group}.parquet") for table in tables for group in groups]


# Which stage writes which table: the data contract says it (quicack.schema), the rules' outputs follow it.
INGEST_TABLES = tables_written_by(INGEST)
DERIVED_TABLES = tables_written_by(DERIVE)
SCAN_TABLES = tables_written_by(SCAN)


# Run-group keys never start with '@' (quicack.layout.group_key escapes it); scan part keys always do: both
# write ingest_issues/<key>.parquet, and these keep the rules apart.
wildcard_constraints:
    group=r"[^@/][^/]*",
    part=r"@scan@[^/]+",


def all_parquet():
    return (
        table_parts(INGEST_TABLES, GROUPS)
        + table_parts(DERIVED_TABLES, GROUPS)
        + table_parts(SCAN_TABLES, SCAN_PARTS)
        + [str(PARQUET / "ingest_issues" / "_dataset.parquet")]
    )


FIGURES = RESULTS / "figures"
TABLES = RESULTS / "tables"
# The report's landing page and captions as `snakemake --report` shows them (written by report_pages): the hand-written
# captions of workflow/report/ with each artefact's claims appended. Absolute, because Snakemake joins a caption's
# path to the folder of the rule file that names it.
REPORT_PAGES = RESULTS / "report"
REPORT_PAGES_ABSOLUTE = Path(os.path.abspath(REPORT_PAGES))
CAPTION_SOURCES = sorted(str(p) for p in (REPO / "workflow" / "report").glob("*.rst"))
NOTEBOOKS_OUT = RESULTS / "notebooks"
NOTEBOOKS = REPO / "notebooks"


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
    caption = caption_page(artefact_id)
    category = artefact_id.split("-")[0]
    if is_figure(artefact_id):
        paths = [FIGURES / f"{artefact_id}.{fmt}" for fmt in FIGURE_FORMATS]
        in_report = ".png"
    else:
        paths = [TABLES / f"{artefact_id}.{fmt}" for fmt in ("csv", "md", "tex")]
        in_report = ".csv"
    # (`report` must not start a line here: the Snakefile parser reads that as the directive.)
    return [(report(p, caption=caption, category=category) if p.suffix == in_report else p) for p in paths] + [
        render_status(artefact_id)
    ]


def caption_page(name):
    """The caption `snakemake --report` shows for a result: workflow/report/<name>.rst with its claims (report_pages)."""
    return str(REPORT_PAGES_ABSOLUTE / f"{name}.rst")


def render_status(artefact_id):
    """Whether the notebook could draw its artefact, and if not why (quicack.figures.common.save)."""
    return (FIGURES if is_figure(artefact_id) else TABLES) / f"{artefact_id}.status.json"


def rendered_notebooks():
    return [NOTEBOOKS_OUT / f"{artefact_id}.ipynb" for artefact_id in RENDERED]


# When this run started: the end of the run prints rendering.txt only when this run wrote it (print_rendering).
STARTED = time.time()


def print_rendering():
    """At the end of a successful run, rendering.txt as the run left it (what was drawn from the dataset, from models
    or formulas, and what not, with why), as summary.txt is printed by the database job; only when this run wrote
    it (a run that only built the database has nothing new to say about the figures)."""
    out = RESULTS / "rendering.txt"
    if out.is_file() and out.stat().st_mtime >= STARTED:
        print(f"\n{out}:\n{out.read_text(encoding='utf-8')}")


def rendering_after_a_failure():
    """rendering.txt when the run failed, so that it still says what was drawn and what not: render_summary needs
    every artefact's status and does not run once one notebook failed (a failed job's outputs are removed, its
    status with them). Written only when some artefact's job ran; the next successful run replaces it."""
    from quicack.figures.common import rendering_summary

    logs = {artefact_id: LOGS / "render" / f"{artefact_id}.log" for artefact_id in RENDERED}
    present = [render_status(a) for a in RENDERED if render_status(a).is_file()]
    if not present and not any(log.is_file() for log in logs.values()):
        return
    failed = {a: log for a, log in logs.items() if not render_status(a).is_file()}
    text, _ = rendering_summary(present, failed)
    out = RESULTS / "rendering.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"{out} (written after the failure):\n{text}")

