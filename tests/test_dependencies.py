"""Every pinned dependency is used — imported by the package, its tests or benchmarks, or run as a command by the
workflow or install.sh — and environment.yml mirrors pyproject.toml's pins."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
# Distributions whose import name differs from their name.
IMPORT_NAMES = {"pyyaml": "yaml", "duckdb-cli": None, "pytest-xdist": None, "snakemake-executor-plugin-slurm": None,
                "snakemake-executor-plugin-slurm-jobstep": None, "maturin": None}  # fmt: skip
# Used without an import of their own: the command or the package that uses them, and where.
USED_OTHERWISE = {
    "snakemake": ("snakemake --lint", "tests/run_all.sh"),
    "jupytext": ("jupytext --to ipynb", "workflow/rules/render.smk"),
    "papermill": ("papermill --kernel", "workflow/rules/render.smk"),
    "nbclient": ("papermill", "workflow/rules/render.smk"),  # papermill's executor
    "ipykernel": ("ipykernel install", "install.sh"),
    "pandas": (".to_pandas()", "src/quicack/figures/common.py"),
    "tabulate": ("to_markdown", "src/quicack/figures/common.py"),  # pandas' Markdown writer
    "ruff": ("ruff check", "tests/run_all.sh"),
    "mypy": ("mypy", "tests/run_all.sh"),
    # The typed stubs mypy reads for the imports they type.
    "types-pyyaml": ("import yaml", "src/quicack/provenance.py"),
    "types-jsonschema": ("import jsonschema", "src/quicack/testbed/scan_plan.py"),
    "types-seaborn": ("import seaborn", "src/quicack/figures/common.py"),
    "pandas-stubs": (".to_pandas()", "src/quicack/figures/common.py"),
    "pytest": ("pytest", "tests/run_all.sh"),
    "pytest-xdist": ("--numprocesses", "tests/run_all.sh"),
    "duckdb-cli": (
        "duckdb",
        "src/quicack/storage/sql_command.py",
    ),  # `quicack sql --unrestricted` without a query opens its shell
    "maturin": ("maturin", "rust/quicack_core/pyproject.toml"),
    "snakemake-executor-plugin-slurm": ("executor: slurm", "profiles/slurm/config.yaml"),
    "snakemake-executor-plugin-slurm-jobstep": ("slurm", "profiles/slurm/config.yaml"),
}


def pinned() -> dict[str, str]:
    """Every requirement of pyproject.toml (dependencies and extras): name → version specifier."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = [
        *project["dependencies"],
        *(r for extra in project["optional-dependencies"].values() for r in extra),
    ]
    return {m.group(1).lower(): m.group(2) for m in (re.match(r"([A-Za-z0-9_.-]+)\s*(.*)", r) for r in requirements)}


def imported_top_level_modules() -> set[str]:
    modules: set[str] = set()
    for folder in ("src", "tests", "bench", "notebooks"):
        for path in (REPO / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, ast.Import):
                    modules.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    modules.add(node.module.split(".")[0])
    return modules


def test_every_pinned_dependency_is_imported_or_run() -> None:
    modules = imported_top_level_modules()
    unused = []
    for name in pinned():
        module = IMPORT_NAMES.get(name, name.replace("-", "_"))
        if module is not None and module in modules:
            continue
        if name in USED_OTHERWISE:
            needle, where = USED_OTHERWISE[name]
            assert needle in (REPO / where).read_text(encoding="utf-8"), f"{name}: {needle!r} is no longer in {where}"
            continue
        unused.append(name)
    assert not unused, f"pinned in pyproject.toml but neither imported nor run: {unused}"


def test_environment_yml_mirrors_the_pins() -> None:
    environment = yaml.safe_load((REPO / "environment.yml").read_text(encoding="utf-8"))["dependencies"]
    conda = {}
    for entry in environment:
        if isinstance(entry, dict):
            conda.update(
                {
                    m.group(1).lower(): "==" + m.group(2)
                    for m in (re.match(r"([A-Za-z0-9_.-]+)==(.*)", p) for p in entry["pip"])
                }
            )
        else:
            name, _, version = entry.partition("=")
            conda[{"python-duckdb": "duckdb"}.get(name, name)] = (
                "==" + version if version and not version.startswith(">") else version
            )
    pins = pinned()
    assert "polars" in pins and "duckdb" in conda
    for name, specifier in pins.items():
        if name == "maturin" or not specifier.startswith("=="):
            continue  # maturin: in both, with conda's single '='; ranges (pyyaml, zstandard) are mirrored as ranges
        assert conda.get(name) == specifier, f"{name}: pyproject.toml {specifier}, environment.yml {conda.get(name)}"
