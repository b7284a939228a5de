"""The shape of the package: no import cycles among quicack's modules (lazy imports inside functions included: a
cycle hidden in a function is still two modules that cannot be understood, tested or changed one without the
other), modules small enough to have one job, and no two modules of the same name doing different things.
Read from the source with `ast` (quicack.jobs.code_graph); nothing is imported."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

from quicack.jobs.code_graph import CodeGraph
from quicack.jobs.code_graph import module_name as code_graph_module_name

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "src"
PACKAGE = SOURCE / "quicack"
MAX_LINES = 600
# Modules allowed over MAX_LINES: none (testbed/run.py, the last, is 590 lines). To stay empty.
OVER_LENGTH: set[str] = set()


# The package's import graph (quicack.jobs.code_graph: top-level and lazy imports, names a package imports on first
# use), the one the workflow follows to each job's code inputs.
GRAPH = CodeGraph(SOURCE)
MODULES = GRAPH.paths


def module_name(path: Path) -> str:
    return code_graph_module_name(path, SOURCE)


def imports_of(name: str) -> set[str]:
    """The quicack modules `name` imports anywhere in its body (top level and inside functions): for `from a import
    b` the submodule a.b when there is one, else a. Importing a.b runs a's __init__ too, but that is the package's
    own business: an edge to the parent package would make every package that re-exports a submodule a cycle."""
    return GRAPH.imports(name)


def import_graph() -> dict[str, set[str]]:
    return GRAPH.graph()


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan), each listed sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_import_graph_is_read_right():
    """The graph this file checks sees every kind of import it must: a top-level relative one, one inside a function
    (the ingest imports the capture decoder when it reads a capture), and a name a package imports on first use
    (quicack.layout's group_from_key is quicack.layout.runs', not the package's other modules)."""
    graph = import_graph()
    assert "quicack.qlog.records" in graph["quicack.qlog.detect"] | graph["quicack.qlog.batch"] | graph[
        "quicack.qlog.lane"
    ]
    assert "quicack.pcap.decode" in graph["quicack.stages.ingest"]
    assert graph["quicack.stages.group_arguments"] == {"quicack.layout.runs"}


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_a_cycle_is_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# At most this many modules directly under src/quicack (__init__ aside): a module that belongs to a family (the storage
# layer, what every reader shares, a stage, the job-input code) lives in its family's package.
MAX_LOOSE_MODULES = 12

# The package's layers, lowest first: a module imports its own layer or a lower one, never a higher one (an upward
# import), so that each layer can be understood and tested with the ones below it only. Each unit is a package or a
# loose module directly under quicack. The entry point of a `quicack` subcommand (a module quicack.cli.COMMANDS
# names: `quicack pcap` and `quicack qlog` recompute the derived tables of their output) and quicack's own
# __init__ are above and below every layer.
LAYERS: tuple[set[str], ...] = (
    {"schema", "layout", "lazy_names", "frame_types", "reference", "markup", "config_check"},
    {"storage", "reading", "models"},
    {"pcap", "qlog", "scan", "metrics", "provenance"},
    {"rendered", "compiled_core"},
    {"figures", "claims"},
    {"stages", "artifact", "fuzz", "testbed", "jobs"},
    {"doctor", "cli"},
)


def _unit(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def _layer(unit: str) -> int:
    return next(rank for rank, layer in enumerate(LAYERS) if unit in layer)


def upward_imports(graph: dict[str, set[str]], entry_points: set[str]) -> list[tuple[str, str]]:
    """Every (importer, imported) pair whose imported module is in a higher layer than its importer."""
    return sorted(
        (name, target)
        for name, targets in graph.items()
        if name not in entry_points and _unit(name)
        for target in targets
        if _unit(target) and _layer(_unit(target)) > _layer(_unit(name))
    )


def test_few_loose_modules():
    loose = sorted(path.name for path in PACKAGE.glob("*.py") if path.name != "__init__.py")
    assert loose and len(loose) <= MAX_LOOSE_MODULES, loose


def test_every_package_and_loose_module_has_a_layer():
    units = {_unit(name) for name in MODULES} - {""}
    assert units == set().union(*LAYERS), (units - set().union(*LAYERS), set().union(*LAYERS) - units)


def test_no_upward_imports():
    entry_points = {module for module, _ in GRAPH.commands.values()}
    assert "quicack.pcap.pcap_command" in entry_points and "quicack.storage.sql_command" in entry_points
    assert upward_imports(import_graph(), entry_points) == []


def test_an_upward_import_is_found():
    graph = {"quicack.storage.database": {"quicack.schema", "quicack.metrics.rtt"}, "quicack.figures.common": set()}
    assert upward_imports(graph, set()) == [("quicack.storage.database", "quicack.metrics.rtt")]
    assert upward_imports(graph, {"quicack.storage.database"}) == []


def test_family_packages_import_nothing_themselves():
    """A family package's __init__ imports none of its modules, so that a job that uses one of them depends on that one
    only (its code inputs, quicack.jobs.code_graph)."""
    for package in ("jobs", "storage", "reading", "stages"):
        assert (PACKAGE / package / "__init__.py").is_file() and GRAPH.imports(f"quicack.{package}") == set(), package


def test_no_module_is_longer_than_it_should_be():
    long = {
        str(path.relative_to(PACKAGE)): length
        for path in MODULES.values()
        if (length := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert set(long) <= OVER_LENGTH, {k: v for k, v in long.items() if k not in OVER_LENGTH}


def test_no_two_modules_share_a_name():
    """A name says what a module holds; the same file name in two packages (cli.py, reader.py, ...) would say it of
    two different things."""
    names = Counter(path.name for path in MODULES.values() if path.name != "__init__.py")
    assert [name for name, count in names.items() if count > 1] == []


def _modules_mentioning(pattern: str) -> set[str]:
    found = re.compile(pattern)
    return {
        str(path.relative_to(PACKAGE))
        for path in MODULES.values()
        if not str(path.relative_to(PACKAGE)).startswith("testbed/") and found.search(path.read_text(encoding="utf-8"))
    }


def test_one_home_per_concept():
    """Each of these is written in one module and read from there by the rest (the testbed, which records and does
    not analyse, is left out): the row of an input problem and its counting (quicack.reading.issues), the CDN -> AS map
    (quicack.reference), and which stage writes which table (quicack.schema: the rules and the stages ask it)."""
    assert _modules_mentioning(r"[\"']severity[\"']\s*:") == {"reading/issues.py"}
    assert _modules_mentioning(r"cdn_asn\.csv[\"']") == {"reference.py"}
    assert _modules_mentioning(r"\bwritten_by=") <= {
        f"schema/{name}.py" for name in ("ingest_tables", "derived_tables", "scan_tables", "database_tables")
    }
    smk = (REPO / "workflow" / "rules" / "common.smk").read_text(encoding="utf-8")
    assert (
        "tables_written_by(INGEST)" in smk and "tables_written_by(DERIVE)" in smk and "tables_written_by(SCAN)" in smk
    )


def _body_without_docstring(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    body = function.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[1:]
    return body


def test_no_function_is_written_twice():
    """One home per helper: no two functions of the package have the same body (docstring aside; bodies of fewer than
    min_nodes syntax nodes, a one-line delegation, are not counted). Found: the testbed's namespace removal, command
    runner and MAC lookup, copied into quicack.testbed.scan_net from quicack.testbed.netns."""
    min_nodes = 20
    homes: dict[str, list[str]] = {}
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = ast.Module(body=_body_without_docstring(node), type_ignores=[])
                if sum(1 for _ in ast.walk(body)) >= min_nodes:
                    homes.setdefault(ast.dump(body), []).append(f"{path.relative_to(PACKAGE)}:{node.name}")
    assert [names for names in homes.values() if len(names) > 1] == []
