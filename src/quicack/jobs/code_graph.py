"""The package's import graph, read from the source with `ast` (nothing is imported), and what a job's entry point
reaches through it: the modules a `quicack` subcommand or a notebook runs, and the package data files they name.
workflow/rules/common.smk gives each job these as its code inputs, so that a job re-runs when code it runs changed
and only then; tests/test_module_structure.py checks the same graph for cycles; quicack.jobs.reference_use follows the
functions a job calls to the data/reference files they read.

An edge is everything Python may import when a module runs, so that the graph is complete:
* `import a.b` and `from a import b` anywhere in a module, at its top or inside a function (a lazy import runs when
  its function does): the submodule a.b when there is one, else a;
* a name a package imports on first use (quicack.lazy_names), listed in its literal `_MODULES` table: `from
  quicack.layout import group_key` is an edge to quicack.layout.runs, not to the package's other modules;
* not an import under `if TYPE_CHECKING:` (read by the type checker only, e.g. a lazy package's names);
* an entry point written as text, "quicack.<module>:<function>" (the fuzz target);
* quicack.cli imports only the module that implements the subcommand called (its `COMMANDS` table): a subcommand
  reaches the command module and that module, not the other subcommands.
Importing a.b runs a/__init__.py first: what a module reaches includes its packages and what they import.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

PACKAGE = "quicack"
COMMAND_MODULE = "quicack.cli"
# "quicack.<module>:<function>": how an entry point named as text is written (quicack.cli.COMMANDS, the fuzz target).
ENTRY_POINT = re.compile(r"^(quicack(?:\.\w+)*):(\w+)$")
# A string that may name a package data file beside its module ("frame_types.csv").
FILE_NAME = re.compile(r"^[\w-]+(?:\.[\w-]+)*\.\w+$")


def module_name(path: Path, source: Path) -> str:
    """quicack.a.b of <source>/quicack/a/b.py (or of <source>/quicack/a/b/__init__.py)."""
    parts = path.relative_to(source).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _assignment(tree: ast.Module, name: str) -> ast.expr | None:
    """The value of a top-level `name = ...` (or `name: T = ...`), None when there is none."""
    value: ast.expr | None
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(target, ast.Name) and target.id == name for target in targets) and value is not None:
            return value
    return None


def _type_checking_blocks(tree: ast.Module) -> list[ast.If]:
    """The module's `if TYPE_CHECKING:` blocks: the imports in their bodies are read by the type checker only."""
    return [
        node for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    ]


def _literal_assignment(tree: ast.Module, name: str) -> object | None:
    value = _assignment(tree, name)
    return ast.literal_eval(value) if value is not None else None


class CodeGraph:
    """The import graph of the package under `source` (the folder holding quicack/, e.g. <repo>/src)."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.paths = {module_name(path, source): path for path in sorted((source / PACKAGE).rglob("*.py"))}
        self._trees: dict[Path, ast.Module] = {}
        self._imports: dict[str, set[str]] = {}
        # Per module, walked once: the workflow asks for every job's files (50 notebooks reaching mostly the same
        # modules), and walking each module's tree once per job took 8 of `snakemake -n`'s 12 s.
        self._data_files: dict[str, set[Path]] = {}
        self._external_imports: dict[str, set[str]] = {}

    def tree(self, path: Path) -> ast.Module:
        if path not in self._trees:
            self._trees[path] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        return self._trees[path]

    def module_tree(self, name: str) -> ast.Module:
        return self.tree(self.paths[name])

    def is_package(self, name: str) -> bool:
        return self.paths[name].name == "__init__.py"

    def lazy_names(self, name: str) -> dict[str, str]:
        """{name: submodule} of a package that imports names on first use (its `_MODULES` table), else {}."""
        if name not in self.paths or not self.is_package(name):
            return {}
        table = _literal_assignment(self.module_tree(name), "_MODULES")
        if not isinstance(table, dict):
            return {}
        return {attribute: f"{name}.{module}" for module, attributes in table.items() for attribute in attributes}

    @cached_property
    def commands(self) -> dict[str, tuple[str, str]]:
        """{subcommand: (module, function)} of quicack.cli's COMMANDS table: the function that adds the subcommand's
        arguments and handler, in the module that implements it."""
        table = _literal_assignment(self.module_tree(COMMAND_MODULE), "COMMANDS")
        if not isinstance(table, dict):
            raise ValueError(f"{self.paths[COMMAND_MODULE]}: no literal COMMANDS table")
        commands = {}
        for command, (entry, _help) in table.items():
            match = ENTRY_POINT.match(entry)
            if match is None or match[1] not in self.paths:
                raise ValueError(f"{self.paths[COMMAND_MODULE]}: COMMANDS[{command!r}] = {entry!r} is not "
                                 "'quicack.<module>:<function>' of a module of the package")
            commands[command] = (match[1], match[2])
        return commands

    def _imports_in(self, tree: ast.Module, package: str, skip: ast.AST | None = None) -> set[str]:
        """The quicack modules `tree` imports (see the module's docstring); `package`: the one relative imports
        start from; `skip`: a node whose text entry points are not edges (quicack.cli's COMMANDS)."""
        skipped = {id(node) for node in ast.walk(skip)} if skip is not None else set()
        type_only = {
            id(node) for block in _type_checking_blocks(tree) for stmt in block.body for node in ast.walk(stmt)
        }
        found: set[str] = set()

        def whole(name: str) -> set[str]:
            # A package imported as an object: any of its lazy names may be used through it.
            return {name, *self.lazy_names(name).values()}

        for node in ast.walk(tree):
            if id(node) in type_only:
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found |= whole(alias.name) if alias.name in self.paths else {alias.name}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                lazy = self.lazy_names(base)
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    if submodule in self.paths:
                        found |= whole(submodule)
                    elif alias.name in lazy:
                        found.add(lazy[alias.name])
                    elif alias.name == "*":
                        found |= whole(base)
                    else:
                        found.add(base)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
                match = ENTRY_POINT.match(node.value)
                if match is not None:
                    found.add(match[1])
        return {module for module in found if module in self.paths}

    def imports(self, name: str) -> set[str]:
        """The quicack modules module `name` may import when it runs (not counting its own packages' __init__)."""
        if name not in self._imports:
            path = self.paths[name]
            package = name if self.is_package(name) else name.rpartition(".")[0]
            tree = self.tree(path)
            # quicack.cli's COMMANDS names every subcommand's module: a command reaches only its own (command_modules).
            skip = _assignment(tree, "COMMANDS") if name == COMMAND_MODULE else None
            self._imports[name] = self._imports_in(tree, package, skip) - {name}
        return self._imports[name]

    def graph(self) -> dict[str, set[str]]:
        return {name: self.imports(name) for name in self.paths}

    def reach(self, roots: Iterable[str]) -> set[str]:
        """The modules that run when `roots` are imported: followed through every import, with their packages."""
        todo, seen = list(roots), set()
        while todo:
            name = todo.pop()
            if name in seen or name not in self.paths:
                continue
            seen.add(name)
            parent = name.rpartition(".")[0]
            todo.extend(self.imports(name) | ({parent} if parent else set()))
        return seen

    def script_imports(self, script: Path) -> set[str]:
        """The quicack modules a script outside the package imports (a notebook: notebooks/<id>.py)."""
        return self._imports_in(self.tree(script), "")

    def command_modules(self, command: str) -> set[str]:
        """What `quicack <command>` runs: quicack.cli and the module implementing the subcommand, followed through."""
        if command not in self.commands:
            raise KeyError(f"quicack has no subcommand {command!r} (quicack.cli.COMMANDS)")
        return self.reach([COMMAND_MODULE, self.commands[command][0]])

    def script_modules(self, script: Path) -> set[str]:
        return self.reach(self.script_imports(script))

    def data_files(self, modules: Iterable[str]) -> set[Path]:
        """Package data the modules name: a string literal that is the name of a file beside the module (not a
        Python file), as `Path(__file__).with_name("frame_types.csv")` reads it."""
        return set().union(*(self._module_data_files(name) for name in modules))

    def _module_data_files(self, name: str) -> set[Path]:
        if name not in self._data_files:
            folder = self.paths[name].parent
            found = set()
            for node in ast.walk(self.module_tree(name)):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and FILE_NAME.match(node.value):
                    candidate = folder / node.value
                    if candidate.suffix != ".py" and candidate.is_file():
                        found.add(candidate)
            self._data_files[name] = found
        return self._data_files[name]

    def files(self, modules: Iterable[str]) -> list[Path]:
        """The source files of `modules` and the package data they name, sorted."""
        modules = set(modules)
        return sorted({self.paths[name] for name in modules} | self.data_files(modules))

    def external_imports(self, modules: Iterable[str]) -> set[str]:
        """The top-level names of what `modules` import from outside the package (e.g. quicack_core)."""
        return set().union(*(self._module_external_imports(name) for name in modules))

    def _module_external_imports(self, name: str) -> set[str]:
        if name not in self._external_imports:
            found: set[str] = set()
            for node in ast.walk(self.module_tree(name)):
                if isinstance(node, ast.Import):
                    found.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    found.add(node.module.split(".")[0])
            self._external_imports[name] = found - {PACKAGE}
        return self._external_imports[name]
