"""The shape of the rendering code: a notebook is parameters, loading the database, ONE render
function, saving; claims and metrics never depend on the figures; paper values live in
data/reference, not in code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.py"))
PACKAGE = REPO / "src" / "quicack"
# What a notebook may call besides its one render function.
PLUMBING = {"read_views", "read_view_if_present", "read_description", "save"}


def calls(tree: ast.AST) -> list[str]:
    return [node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_a_notebook_calls_exactly_one_render_function(notebook):
    tree = ast.parse(notebook.read_text(encoding="utf-8"))
    imported = {
        alias.asname or alias.name: node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    render_calls = [name for name in calls(tree) if name not in PLUMBING]
    assert len(render_calls) == 1, render_calls
    (function,) = render_calls
    # Named after the artefact it renders (imc24-fig05 -> imc24_fig05_…), from the figures or claims.
    assert function.startswith(notebook.stem.replace("-", "_"))
    assert imported[function].startswith(("quicack.figures.", "quicack.claims."))
    assert calls(tree).count("save") == 1


@pytest.mark.parametrize("package", ["claims", "metrics"])
def test_claims_and_metrics_do_not_import_the_figures(package):
    paths = sorted((PACKAGE / package).rglob("*.py"))
    assert paths, f"no module under {PACKAGE / package}"
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in getattr(node, "names", [])]
                if isinstance(node, ast.Import)
                else []
            )
            assert not any(m.startswith("quicack.figures") for m in modules), (
                f"{path.relative_to(REPO)} imports {modules}"
            )


def test_no_paper_table_is_typed_into_the_code():
    """The papers' values are read from data/reference (quicack.reference); a PAPER_* constant in
    the figures, claims or metrics would be a second home for them."""
    for package in ("figures", "claims", "metrics"):
        paths = sorted((PACKAGE / package).rglob("*.py"))
        assert paths, f"no module under {PACKAGE / package}"
        for path in paths:
            found = re.findall(r"^PAPER_[A-Z0-9_]+\s*[:=].*\d", path.read_text(encoding="utf-8"), flags=re.M)
            assert not found, f"{path.relative_to(REPO)}: {found}"


def _parameters_cell(source: str) -> tuple[str, str]:
    """A jupytext notebook's parameters cell (papermill's) and the rest of the notebook."""
    cells = re.split(r"^# %%.*$", source, flags=re.M)
    markers = re.findall(r"^# %%.*$", source, flags=re.M)
    index = next(i for i, marker in enumerate(markers) if 'tags=["parameters"]' in marker)
    return cells[index + 1], "".join(cells[: index + 1] + cells[index + 2:])


RENDER_RULE = (REPO / "workflow" / "rules" / "render.smk").read_text(encoding="utf-8")
PASSED_PARAMETERS = re.findall(r"-p (\w+) \{params\.", RENDER_RULE)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_a_notebook_uses_every_parameter_and_declares_every_one_it_is_passed(notebook):
    """A parameter nothing reads (a `dataset` every notebook was passed, once) is a knob that turns nothing; one the
    render rule passes (papermill -p) that the notebook does not declare is injected unseen."""
    parameters, rest = _parameters_cell(notebook.read_text(encoding="utf-8"))
    declared = {
        target.id
        for node in ast.parse(parameters).body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    read = {
        node.id for node in ast.walk(ast.parse(rest)) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    assert declared and declared <= read, f"parameters never read: {sorted(declared - read)}"
    assert PASSED_PARAMETERS and set(PASSED_PARAMETERS) <= declared
